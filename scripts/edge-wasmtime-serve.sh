#!/usr/bin/env bash
# Serves the committed edge component with the Wasmtime CLI itself
# (`wasmtime serve -Scli -Shttp`), the runtime README's "Run it at the edge"
# gives a recipe for, and drives it with the official MCP Python SDK against
# the fixture server over HTTP: tools/list, a search, five 300 ms calls under
# Promise.all, a spinning script answered as a typed timeout, and the figures
# of a trivial request. Exits non-zero when an answer is not the expected one.
#
# Not part of `cargo test`: CI has no Wasmtime CLI (there is no prebuilt one
# on its package registries, and building it costs half an hour), and the
# same component is served in-process by `wasmtime-wasi-http` there
# (tests/all/edge/). Run it where a `wasmtime` 48 is installed:
#
#   cargo install wasmtime-cli@48.0.8 --locked
#   ./scripts/install-test-servers.sh
#   WASMTIME=wasmtime ./scripts/edge-wasmtime-serve.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
wasmtime=${WASMTIME:-wasmtime}
python="$root/tests/servers/.venv/bin/python"
client="$root/tests/clients/sdk_client.py"
"$wasmtime" --version >&2
[ -x "$python" ] || { echo "run ./scripts/install-test-servers.sh first" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port (the kernel picks it; released before use).
port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

fixture_port=$(port)
node "$root/tests/servers/fixture.mjs" --http "$fixture_port" >"$work/fixture.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$fixture_port/mcp"
for _ in $(seq 50); do grep -q "listening" "$work/fixture.log" && break; sleep 0.2; done
grep -q "listening" "$work/fixture.log" || { cat "$work/fixture.log" >&2; exit 1; }

# The deploy-time step: the manifest snapshot of the configured servers.
printf '[servers.fixture]\nurl = "%s"\n' "$url" >"$work/forge.toml"
(cd "$root" && cargo run --quiet --release -- --config "$work/forge.toml" manifest --json) >"$work/manifest.json"

edge_port=$(port)
"$wasmtime" serve -Scli -Shttp --addr "127.0.0.1:$edge_port" \
  --env QUICKFORGE_EDGE_SERVERS="{\"fixture\":{\"url\":\"$url\"}}" \
  --env QUICKFORGE_EDGE_MANIFEST="$(cat "$work/manifest.json")" \
  --env QUICKFORGE_EDGE_TIMEOUT_MS=2000 \
  "$root/edge/dist/quickforge_edge.wasm" >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "Serving HTTP" "$work/serve.log" && break; sleep 0.2; done
grep -q "Serving HTTP" "$work/serve.log" || { cat "$work/serve.log" >&2; exit 1; }
edge="http://127.0.0.1:$edge_port/mcp"

steps='[
  {"list": true},
  {"execute": "async () => manifest.search(\"answer after a delay\")[0].tool"},
  {"execute": "async () => { const t = Date.now(); await Promise.all([1,2,3,4,5].map(() => forge.callTool(\"fixture\", \"slow\", {ms: 300}))); return Date.now() - t; }"},
  {"execute": "async () => { const t = Date.now(); for (let i = 0; i < 5; i++) await forge.callTool(\"fixture\", \"slow\", {ms: 300}); return Date.now() - t; }"},
  {"execute": "async () => { for (;;) {} }"},
  {"execute": "async () => 1 + 1"}
]'
echo "$steps" | "$python" "$client" 2025-11-25 "$edge" >"$work/answers.jsonl"
"$python" - "$work/answers.jsonl" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
assert a[0]["tools"] == ["search", "execute"], a[0]
assert a[1]["structuredContent"]["result"] == "slow", a[1]
overlapped, sequential = a[2]["structuredContent"]["result"], a[3]["structuredContent"]["result"]
assert overlapped < 600 <= sequential, (overlapped, sequential)
assert a[4]["isError"] and a[4]["structuredContent"]["error"]["kind"] == "timeout", a[4]
assert a[5]["structuredContent"]["result"] == 2, a[5]
print(f"wasmtime serve: tools/list, search, Promise.all of five 300 ms calls {overlapped} ms "
      f"(sequential {sequential} ms), a spinning script a typed timeout, the next request served")
EOF

# A trivial request's round trip, median of 20 (the mean of the middle two),
# over plain HTTP (curl, one connection per request; initialize is stateless
# on the edge). Only answers that carry the script's result are timed.
body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"async () => 1"}}}'
times=()
for _ in $(seq 20); do
  out=$(curl -s -w '\n%{http_code} %{time_total}' -X POST "$edge" \
    -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -d "$body")
  case "$out" in
    *'"structuredContent":{"result":1}'*$'\n200 '*) times+=("${out##* }") ;;
    *) echo "unexpected answer: $out" >&2; exit 1 ;;
  esac
done
printf '%s\n' "${times[@]}" | sort -n | sed -n 10,11p |
  awk '{s += $1} END {printf "wasmtime serve: a trivial execute, median of 20: %.2f ms\n", s / 2 * 1000}'
