"""A downstream MCP server that speaks 2026-07-28 only, on the official Python SDK.

It serves stdio through the SDK's modern per-request-envelope loop alone, so
the 2025 `initialize` handshake is refused (UNSUPPORTED_PROTOCOL_VERSION):
a client that only knows `initialize` cannot reach it. With `--http PORT` it
serves streamable HTTP the same way, through the SDK's single-exchange
2026-07-28 entry alone. Its tools exercise the
result kinds a 2026-07-28 server may give to `tools/call`:

- `echo`: a plain result.
- `slow_task`: a task (SEP-2663, `resultType: "task"`) that completes after
  `ms` milliseconds; `tasks/get` reports it, `tasks/cancel` cancels it.
- `ask`: an `input_required` result (MRTR) with an elicitation request;
  retried with `inputResponses` and its `requestState`, it returns the
  answer as `answered:{json}`.

Every task id it cancels is appended, one per line, to the file named by the
environment variable `MODERN_CANCEL_LOG`, so a test can see that the gateway
sent `tasks/cancel`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from typing import Any

import anyio
import mcp_types as types
from pydantic import Field
from mcp.server.lowlevel import Server
from mcp.server.runner import _serve_modern_stream
from mcp.server.stdio import stdio_server

# task id -> (monotonic time it completes, result, cancelled)
TASKS: dict[str, dict[str, Any]] = {}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    obj = {"type": "object"}
    return types.ListToolsResult(
        tools=[
            types.Tool(name="echo", description="Echoes its text.", input_schema=obj),
            types.Tool(name="slow_task", description="A task that completes after ms milliseconds.", input_schema=obj),
            types.Tool(name="ask", description="Asks the client a question (input_required).", input_schema=obj),
        ]
    )


def _task(task_id: str) -> dict[str, Any]:
    t = TASKS[task_id]
    if t["cancelled"]:
        status = "cancelled"
    elif time.monotonic() >= t["done_at"]:
        status = "completed"
    else:
        status = "working"
    out: dict[str, Any] = {
        "taskId": task_id,
        "status": status,
        "createdAt": t["created"],
        "lastUpdatedAt": _now(),
        "ttlMs": 60000,
        "pollIntervalMs": 50,
    }
    if status == "completed":
        out["result"] = {"content": [{"type": "text", "text": t["text"]}], "isError": False}
    return out


async def call_tool(ctx: Any, params: Any) -> Any:
    args = params.arguments or {}
    if params.name == "echo":
        return {"resultType": "complete", "content": [{"type": "text", "text": "modern:" + str(args.get("text", ""))}]}
    if params.name == "slow_task":
        task_id = f"task-{len(TASKS) + 1}"
        TASKS[task_id] = {
            "done_at": time.monotonic() + float(args.get("ms", 0)) / 1000.0,
            "text": "task done:" + str(args.get("text", "")),
            "cancelled": False,
            "created": _now(),
        }
        return {"resultType": "task", **_task(task_id)}
    if params.name == "ask":
        responses = getattr(params, "input_responses", None)
        if responses and getattr(params, "request_state", None) == "opaque-state":
            answer = responses.get("confirm")
            if hasattr(answer, "model_dump"):
                answer = answer.model_dump(by_alias=True, exclude_none=True, mode="json")
            text = "answered:" + json.dumps(answer, sort_keys=True)
            return {"resultType": "complete", "content": [{"type": "text", "text": text}]}
        return {
            "resultType": "input_required",
            "inputRequests": {
                "confirm": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Proceed?",
                        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                    },
                }
            },
            "requestState": "opaque-state",
        }
    raise ValueError(f"unknown tool {params.name}")


async def get_task(ctx: Any, params: Any) -> dict[str, Any]:
    return {"resultType": "complete", **_task(_task_id(params))}


async def cancel_task(ctx: Any, params: Any) -> dict[str, Any]:
    task_id = _task_id(params)
    TASKS[task_id]["cancelled"] = True
    log = os.environ.get("MODERN_CANCEL_LOG")
    if log:
        with open(log, "a") as f:
            f.write(task_id + "\n")
    return {"resultType": "complete"}


class TaskParams(types.RequestParams):
    """The params of `tasks/get` and `tasks/cancel`."""

    task_id: str = Field(alias="taskId")


def _task_id(params: TaskParams) -> str:
    return params.task_id


def build() -> Server:
    server = Server("modern-only", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_request_handler("tasks/get", TaskParams, get_task)
    server.add_request_handler("tasks/cancel", TaskParams, cancel_task)
    return server


async def serve_stdio() -> None:
    server = build()
    async with server.lifespan(server) as state, stdio_server() as (read, write):
        await _serve_modern_stream(server, read, write, lifespan_state=state, raise_exceptions=False)


async def serve_http(port: int) -> None:
    """Streamable HTTP at http://127.0.0.1:PORT/mcp through the SDK's
    single-exchange 2026-07-28 entry alone (the one its session manager uses
    for requests whose MCP-Protocol-Version header is modern), so a 2025
    `initialize` POST is refused as on stdio. Announces
    "modern: listening on PORT" on stderr (PORT 0: any free one)."""
    import socket

    import uvicorn
    from mcp.server._streamable_http_modern import handle_modern_request

    server = build()
    async with server.lifespan(server) as state:

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == "/mcp":
                await handle_modern_request(server, None, False, state, scope, receive, send)
            elif scope["type"] == "http":
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b""})

        sock = socket.socket()
        sock.bind(("127.0.0.1", port))
        print(f"modern: listening on {sock.getsockname()[1]}", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        await uvicorn.Server(config).serve(sockets=[sock])


async def main() -> None:
    if "--http" in sys.argv:
        await serve_http(int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        await serve_stdio()


if __name__ == "__main__":
    anyio.run(main)
