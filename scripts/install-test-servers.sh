#!/usr/bin/env bash
# Installs the real MCP peers the integration tests run: as downstream
# servers, @modelcontextprotocol/server-everything and server-memory at the
# versions pinned in tests/servers/package-lock.json, plus the official SDK the
# fixture server (tests/servers/fixture.mjs) is built on; as a client, the
# official MCP Python SDK pinned in tests/servers/requirements.txt, in a venv
# at tests/servers/.venv (tests/clients/sdk_client.py runs on it).
#
# Idempotent: each part is skipped when its stamp matches its lockfile.
set -euo pipefail
cd "$(dirname "$0")/../tests/servers"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-test-servers: node and npm are required (Node.js 18 or later)" >&2
  exit 1
fi
# Debian's redis-server and haproxy: the Redis tests and the replica suite
# start their own. Installed here when missing and this runs as root (as on
# CI and a fresh machine); otherwise those tests say how to get them.
if { ! command -v redis-server >/dev/null || ! [ -x /usr/sbin/haproxy ]; } \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server haproxy >/dev/null
fi

stamp=node_modules/.quickforge-lock
if ! { [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; }; then
  npm ci --no-audit --no-fund --loglevel=error >&2
  cp package-lock.json "$stamp"
fi

python=${PYTHON:-python3}
stamp=.venv/.quickforge-requirements
if [ -f "$stamp" ] && cmp -s requirements.txt "$stamp"; then
  exit 0
fi
if ! "$python" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "install-test-servers: Python 3.10 or later with venv and pip is required (set PYTHON to pick one)" >&2
  exit 1
fi
rm -rf .venv
"$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt >&2
cp requirements.txt "$stamp"
