"""A client on the official MCP Python SDK with every client-side callback
(elicitation, sampling, roots, logging, progress), driven by
tests/all/relay.rs against the real quickforge binary, at protocol
2025-11-25 (the initialize handshake and a session).

Usage: relay_client.py (URL | -- COMMAND ARGS...) < plan.json

The plan is one JSON object:

  "capabilities": {"elicitation": B, "sampling": B, "roots": B}
                       which callbacks the client installs (and so declares)
  "elicit": {"action": "accept"|"decline"|"cancel", "content": {...},
             "delay_ms": N}
                       how every elicitation is answered
  "roots": [{"uri": ..., "name": ...}]
  "log_level": LEVEL   logging/setLevel before the steps
  "steps": [{"execute": CODE, "progress": B, "cancel_after_ms": N,
             "roots_changed_to": [...]}
            | {"list_prompts": true} | {"get_prompt": NAME, "args": {...}}
            | {"list_resources": true} | {"list_templates": true}
            | {"read": URI} | {"complete": {"prompt": NAME | "template": URI,
                                             "argument": {"name": .., "value": ..}}}]

One JSON line per step is printed (the result, the progress notifications
it got, whether it was cancelled), then one line with everything the
callbacks saw.
"""

import asyncio
import json
import os
import sys
import time

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


async def main(target: list[str], plan: dict) -> None:
    if target[0] == "--":
        server = StdioServerParameters(command=target[1], args=target[2:], env=dict(os.environ))
    else:
        server = target[0]
    caps = plan.get("capabilities", {})
    events: dict = {"elicitations": [], "samplings": [], "roots_asked": 0, "logs": []}
    roots = list(plan.get("roots", []))

    async def on_elicit(context, params):
        answer = plan.get("elicit", {"action": "accept", "content": {}})
        events["elicitations"].append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        await anyio.sleep(answer.get("delay_ms", 0) / 1000)
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

    async def on_sample(context, params):
        events["samplings"].append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        prompt = params.messages[0].content.text if params.messages else ""
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"sampled: {prompt}"),
            model="test-model",
        )

    async def on_roots(context):
        events["roots_asked"] += 1
        return types.ListRootsResult(roots=[types.Root(**r) for r in roots])

    async def on_log(params):
        events["logs"].append(params.model_dump(mode="json", by_alias=True, exclude_none=True))

    kwargs = {"logging_callback": on_log}
    if caps.get("elicitation"):
        kwargs["elicitation_callback"] = on_elicit
    if caps.get("sampling"):
        kwargs["sampling_callback"] = on_sample
    if caps.get("roots"):
        kwargs["list_roots_callback"] = on_roots
    async with Client(server, mode="legacy", **kwargs) as client:
        if "log_level" in plan:
            await client.set_logging_level(plan["log_level"])
        for step in plan["steps"]:
            if "roots_changed_to" in step:
                roots[:] = step["roots_changed_to"]
                await client.send_roots_list_changed()
            surface = await run_surface(client, step)
            if surface is not None:
                print(json.dumps(surface), flush=True)
                continue
            progress: list = []

            async def on_progress(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            out: dict = {"progress": progress, "cancelled": False}
            started = time.monotonic()
            call = client.call_tool(
                "execute",
                {"code": step["execute"]},
                progress_callback=on_progress if step.get("progress") else None,
            )
            if "cancel_after_ms" in step:
                with anyio.move_on_after(step["cancel_after_ms"] / 1000) as scope:
                    r = await call
                out["cancelled"] = scope.cancelled_caught
                if scope.cancelled_caught:
                    r = None
            else:
                r = await call
            out["elapsed_ms"] = round((time.monotonic() - started) * 1000)
            if r is not None:
                out["isError"] = r.is_error
                out["text"] = [c.text for c in r.content if c.type == "text"]
                out["structuredContent"] = r.structured_content
            print(json.dumps(out), flush=True)
            if step.get("sleep_after_ms"):
                await anyio.sleep(step["sleep_after_ms"] / 1000)
        # Notifications may still be on their way.
        await anyio.sleep(plan.get("linger_ms", 300) / 1000)
    print(json.dumps({"events": events}), flush=True)


async def run_surface(client: Client, step: dict) -> dict | None:
    """A step on quickforge's own prompts, resources or completions, or
    None for an `execute` step. A protocol error is reported, not raised."""
    try:
        if step.get("list_prompts"):
            return {"prompts": [p.name for p in (await client.list_prompts()).prompts]}
        if "get_prompt" in step:
            r = await client.get_prompt(step["get_prompt"], step.get("args"))
            return {"messages": [m.content.text for m in r.messages]}
        if step.get("list_resources"):
            return {"resources": [str(r.uri) for r in (await client.list_resources()).resources]}
        if step.get("list_templates"):
            listed = await client.list_resource_templates()
            return {"templates": [t.uri_template for t in listed.resource_templates]}
        if "read" in step:
            r = await client.read_resource(step["read"])
            return {"contents": [c.text for c in r.contents], "uris": [str(c.uri) for c in r.contents]}
        if "complete" in step:
            c = step["complete"]
            if "prompt" in c:
                ref = types.PromptReference(type="ref/prompt", name=c["prompt"])
            else:
                ref = types.ResourceTemplateReference(type="ref/resource", uri=c["template"])
            r = await client.complete(ref, c["argument"])
            return {"values": r.completion.values}
    except Exception as e:  # noqa: BLE001 - the test reads the message
        return {"error": str(e)}
    return None


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:], json.load(sys.stdin)))
