"""A client on the official MCP Python SDK, driven by tests/all/eras.rs.

Usage: sdk_client.py ERA (URL | -- COMMAND ARGS...) < steps.json

ERA is 2026-07-28 (the SDK's default "auto" mode: `server/discover`, then
every request carries its own `_meta`) or 2025-11-25 (the SDK's "legacy"
mode: the `initialize` handshake and a session). The server is a streamable
HTTP URL, or a command spawned and spoken to over stdio. Steps are a JSON
list read from stdin, each one of:

  {"list": true}                          tools/list
  {"execute": CODE}                       execute with code
  {"execute": CODE, "stash_from": N}      ... and the stash handle step N returned
  {"call": NAME, "args": {...}}           any tool (a direct tool) with arguments

One JSON line per step is printed, with the negotiated protocol version.

Instead of the list, stdin may hold {"bearer": TOKEN, "steps": [...]}: the
client then sends `Authorization: Bearer TOKEN` on every HTTP request
(tests/all/auth.rs; the token travels on stdin, not on the command line).
"""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

MODES = {"2026-07-28": "auto", "2025-11-25": "legacy"}


async def main(era: str, target: list[str], steps: list[dict] | dict) -> None:
    bearer = None
    if isinstance(steps, dict):
        bearer, steps = steps["bearer"], steps["steps"]
    if target[0] == "--":
        # The whole environment goes to the server: the test sets its cache
        # dir and log level there.
        server = StdioServerParameters(command=target[1], args=target[2:], env=dict(os.environ))
    elif bearer is not None:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
        server = streamable_http_client(target[0], http_client=http)
    else:
        server = target[0]
    results: list[dict] = []
    async with Client(server, mode=MODES[era]) as client:
        for step in steps:
            out: dict = {"protocolVersion": client.protocol_version}
            if step.get("list"):
                listed = await client.list_tools()
                out["tools"] = [t.name for t in listed.tools]
                out["listed"] = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
                out["ttlMs"] = listed.ttl_ms
                out["cacheScope"] = listed.cache_scope
            else:
                if "call" in step:
                    name, args = step["call"], step.get("args", {})
                else:
                    name, args = "execute", {"code": step["execute"]}
                if "stash_from" in step:
                    args["stash"] = results[step["stash_from"]]["structuredContent"]["stash"]
                r = await client.call_tool(name, args)
                out["structuredContent"] = r.structured_content
                out["isError"] = r.is_error
                out["text"] = [c.text for c in r.content if c.type == "text"]
            results.append(out)
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:], json.load(sys.stdin)))
