"""A real MCP client for the `toolhost serve` tests: the official Python SDK.

    python client.py stdio '["toolhost", "serve", "--plugins", "DIR"]' STEPS
    python client.py http  http://127.0.0.1:PORT/mcp                   STEPS

STEPS is a JSON list run in order; each step names the session it runs in
(default "a"). A session is opened on first use: a new server process for
stdio, a new MCP session (Mcp-Session-Id) for HTTP. Steps:

    {"op": "list"}                              tools/list
    {"op": "call", "tool": NAME, "args": {...}} tools/call

Prints one JSON object on stdout: {"sessions": {NAME: {"protocol_version",
"server_name"}}, "results": [one per step]}. A call's result is
{"is_error", "text", "structured"}, or {"error": {"code", "message"}} when
the server answered with a JSON-RPC error.
"""

import asyncio
import contextlib
import json
import sys

from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


async def open_session(stack, transport, target):
    if transport == "stdio":
        argv = json.loads(target)
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        read, write = await stack.enter_async_context(stdio_client(params))
    elif transport == "http":
        read, write = await stack.enter_async_context(streamable_http_client(target))
    else:
        raise SystemExit(f"unknown transport {transport!r}; use stdio or http")
    session = await stack.enter_async_context(ClientSession(read, write))
    init = await session.initialize()
    info = {
        "protocol_version": init.protocol_version,
        "server_name": init.server_info.name,
    }
    return session, info


async def run_step(session, step):
    op = step["op"]
    if op == "list":
        listed = await session.list_tools()
        return {
            "tools": [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in listed.tools
            ]
        }
    if op == "call":
        try:
            result = await session.call_tool(step["tool"], step.get("args", {}))
        except MCPError as e:
            return {"error": {"code": e.code, "message": e.message}}
        return {
            "is_error": bool(result.is_error),
            "text": [c.text for c in result.content if c.type == "text"],
            "structured": result.structured_content,
        }
    raise SystemExit(f"unknown op {op!r}")


async def main(transport, target, steps):
    sessions = {}
    infos = {}
    results = []
    async with contextlib.AsyncExitStack() as stack:
        for step in steps:
            name = step.get("session", "a")
            if name not in sessions:
                sessions[name], infos[name] = await open_session(stack, transport, target)
            results.append(await run_step(sessions[name], step))
    print(json.dumps({"sessions": infos, "results": results}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
