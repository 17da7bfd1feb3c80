#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need when it is
# missing (redis-server from Debian's packages; the official MCP Python SDK in .venv-mcp for the
# ingestion tests' real MCP server; nx-27017, a MongoDB wire-protocol server, in .venv-mongo for
# the MongoDB store tests; the official MCP SDK clients for the /mcp tests, by
# scripts/mcp_clients.sh; Chromium from Debian's packages and Playwright for Python in
# .venv-console for the admin console's browser tests; Helm into .tools/helm by scripts/helm.sh
# for the Helm chart's tests), then runs every test target, then builds the release binary
# exactly as the container image does (scripts/docker-build.sh) and checks it as the image runs
# it.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# The console's browser tests drive Debian's Chromium (Playwright never downloads one here).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing: ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The MCP fixture server (tests/fixtures/mcp_server.py) uses FastMCP, i.e. the 1.x SDK.
if [ ! -x .venv-mcp/bin/python ] || ! .venv-mcp/bin/python -c 'import mcp.server.fastmcp, uvicorn' 2>/dev/null; then
  echo "creating .venv-mcp with the MCP Python SDK"
  python3 -m venv .venv-mcp
  .venv-mcp/bin/pip install --quiet --disable-pip-version-check 'mcp>=1.10,<2' uvicorn
fi

# The MongoDB store tests start nx-27017 themselves (tests/support/mongo.rs), unless
# TOOLGATE_TEST_MONGODB_URI names another server.
if [ ! -x .venv-mongo/bin/nx-27017 ]; then
  echo "creating .venv-mongo with nx-27017 (a MongoDB wire-protocol server for the tests)"
  python3 -m venv .venv-mongo
  .venv-mongo/bin/pip install --quiet --disable-pip-version-check \
    nx-27017==0.8.1 neosqlite==1.17.2 pymongo==4.20.0
fi

# Playwright for Python (tests/console/requirements.txt), pointed at /usr/bin/chromium.
if [ ! -x .venv-console/bin/python ] || ! .venv-console/bin/python -c 'import playwright.sync_api' 2>/dev/null; then
  echo "creating .venv-console with Playwright for Python (the console's browser tests)"
  python3 -m venv .venv-console
  .venv-console/bin/pip install --quiet --disable-pip-version-check -r tests/console/requirements.txt
fi

# The official MCP SDK clients (Python, TypeScript v1 and v2) that the /mcp tests drive
# (tests/mcp_clients/README.md); prints nothing when they are already installed.
scripts/mcp_clients.sh

# Helm, for the chart's lint and rendering tests (tests/it/deploy_files.rs).
scripts/helm.sh

cargo test --locked "$@"

# The release binary exactly as the container image builds it (the Dockerfile's build stage runs
# this script), then run as the image runs it. Skipped when only some tests were asked for.
if [ $# -eq 0 ]; then
  scripts/docker-build.sh target/image
  scripts/image-check.sh target/image/toolgate
fi
