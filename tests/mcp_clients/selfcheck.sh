#!/usr/bin/env bash
# Self-check of the MCP client drivers, without toolgate: runs python/driver.py (on the 2.x SDK
# and on the 1.x SDK), ts/driver.mjs and ts2/driver.mjs against a small server built on the
# official Python SDK (selfcheck_server.py, once on 1.x FastMCP and once on 2.x MCPServer), each
# through a scripted command sequence, and checks every answer and what the server saw on the
# wire (bearer token on every request, GET stream or subscriptions/listen, DELETE at close).
# Usage: tests/mcp_clients/selfcheck.sh [CASE-SUBSTRING...]   (see CASES in selfcheck.py)
set -euo pipefail
cd "$(dirname "$0")/../.."

scripts/mcp_clients.sh

# The 1.x SDK (FastMCP) for the legacy-only server and the 1.x client, as scripts/test.sh makes it.
if [ ! -x .venv-mcp/bin/python ] || ! .venv-mcp/bin/python -c 'import mcp.server.fastmcp, uvicorn' 2>/dev/null; then
  echo "creating .venv-mcp with the MCP Python SDK"
  python3 -m venv .venv-mcp
  .venv-mcp/bin/pip install --quiet --disable-pip-version-check 'mcp>=1.10,<2' uvicorn
fi

exec python3 tests/mcp_clients/selfcheck.py "$@"
