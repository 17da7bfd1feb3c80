#!/usr/bin/env bash
# Installs the official MCP SDK clients that the /mcp integration tests drive through
# tests/mcp_clients/ (see tests/mcp_clients/README.md):
# - .venv-mcp-client: the Python SDK (mcp==2.3.0 and its dependencies, pinned in
#   tests/mcp_clients/python/requirements.txt) for python/driver.py;
# - tests/mcp_clients/ts/node_modules: the TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2)
#   for ts/driver.mjs, by `npm ci` from its committed package-lock.json;
# - tests/mcp_clients/ts2/node_modules: the TypeScript SDK v2 client (@modelcontextprotocol/client
#   2.4.0) for ts2/driver.mjs, likewise.
# Idempotent: each part is (re)installed only when it is missing or its pin file changed, so a run on
# a machine that is already set up prints nothing.
#
# Why a venv of its own rather than .venv-mcp (scripts/test.sh): .venv-mcp holds the 1.x SDK
# ('mcp>=1.10,<2') because the ingestion fixture (tests/fixtures/mcp_server.py) is written against
# FastMCP, which the 2.x SDK removed (it is MCPServer there). The clients are pinned to the newest
# stable SDK, 2.3.0, so the two cannot share one environment. tests/mcp_clients/selfcheck.sh uses
# both: .venv-mcp for a 1.x server (and the 1.x client), .venv-mcp-client for a 2.x server.
set -euo pipefail
cd "$(dirname "$0")/.."

hash_of() { sha256sum "$1" | cut -d' ' -f1; }

# Python: the stamp inside the venv records which requirements.txt it was built from.
req=tests/mcp_clients/python/requirements.txt
venv=.venv-mcp-client
want=$(hash_of "$req")
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  echo "creating $venv with the MCP Python SDK ($(grep -E '^mcp==' "$req"))"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # --no-deps installs exactly the pinned set; pip check then fails loudly if the set is incomplete.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req"
  check=$("$venv/bin/pip" check --disable-pip-version-check) || { echo "$check" >&2; exit 1; }
  echo "$want" >"$venv/.requirements.sha256"
fi

# TypeScript: npm ci installs exactly the lockfile; the stamp records which lockfile that was.
command -v npm >/dev/null 2>&1 || { echo "mcp_clients.sh: npm (Node.js >= 20) is required" >&2; exit 1; }
for dir in tests/mcp_clients/ts tests/mcp_clients/ts2; do
  want=$(hash_of "$dir/package-lock.json")
  if [ ! -d "$dir/node_modules" ] || [ "$(cat "$dir/node_modules/.lock.sha256" 2>/dev/null)" != "$want" ]; then
    echo "installing the MCP TypeScript SDK in $dir (npm ci)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$dir/node_modules/.lock.sha256"
  fi
done
