#!/usr/bin/env bash
# Installs the real MCP servers the integration tests run as downstream
# servers: @modelcontextprotocol/server-everything and server-memory at the
# versions pinned in tests/servers/package-lock.json, plus the official SDK the
# fixture server (tests/servers/fixture.mjs) is built on.
#
# Idempotent: skips the install when node_modules matches the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../tests/servers"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-test-servers: node and npm are required (Node.js 18 or later)" >&2
  exit 1
fi
stamp=node_modules/.quickforge-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >&2
cp package-lock.json "$stamp"
