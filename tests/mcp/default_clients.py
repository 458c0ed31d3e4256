"""MCP clients as their users make them, with each SDK's defaults: the
official Python SDK's `mcp.Client` (its default `mode="auto"` probes
`server/discover` and speaks the sessionless 2026-07-28 revision when the
server has it; `mode="legacy"` pins the 2025-11-25 handshake) and
fastmcp's `Client` (the same negotiation).

    python default_clients.py CLIENT TRANSPORT TARGET STEPS

CLIENT is `mcp` (mode auto), `mcp-legacy` or `fastmcp`; TRANSPORT is
`stdio` (TARGET: the server's argv as a JSON list) or `http` (TARGET: the
URL). STEPS is a JSON list of calls made in order on one connection:

    {"tool": NAME, "args": {...}, "progress": BOOL}

("progress": true sends a progress token, which makes the server answer the
call through its full MCP service rather than its direct path). Prints one
JSON object on stdout: {"protocol_version", "results": [{"is_error",
"structured", "text"} or {"error": MESSAGE}, ...]}.
"""

import asyncio
import json
import sys


def describe(result):
    return {
        "is_error": bool(result.is_error),
        "structured": result.structured_content,
        "text": [getattr(block, "text", None) for block in result.content],
    }


async def progress(done, total, message):
    pass


async def run_mcp(mode, transport, target, steps):
    from mcp import Client, StdioServerParameters

    if transport == "stdio":
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    else:
        server = target
    results = []
    async with Client(server, mode=mode) as client:
        for step in steps:
            callback = progress if step.get("progress") else None
            try:
                result = await client.call_tool(
                    step["tool"], step.get("args", {}), progress_callback=callback
                )
                results.append(describe(result))
            except Exception as e:  # a JSON-RPC error from the server
                results.append({"error": str(e)})
        version = client.protocol_version
    return {"protocol_version": version, "results": results}


async def run_fastmcp(transport, target, steps):
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    if transport == "stdio":
        argv = json.loads(target)
        server = StdioTransport(command=argv[0], args=argv[1:])
    else:
        server = target
    results = []
    async with Client(server) as client:
        for step in steps:
            handler = progress if step.get("progress") else None
            try:
                result = await client.call_tool(
                    step["tool"], step.get("args", {}), progress_handler=handler, raise_on_error=False
                )
                results.append(describe(result))
            except Exception as e:  # a JSON-RPC error from the server
                results.append({"error": str(e)})
        version = getattr(client, "protocol_version", None)
        if version is None:
            session = getattr(client, "session", None)
            version = getattr(session, "protocol_version", None)
    return {"protocol_version": version, "results": results}


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    client, transport, target, steps = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    if client == "mcp":
        report = asyncio.run(run_mcp("auto", transport, target, steps))
    elif client == "mcp-legacy":
        report = asyncio.run(run_mcp("legacy", transport, target, steps))
    elif client == "fastmcp":
        report = asyncio.run(run_fastmcp(transport, target, steps))
    else:
        raise SystemExit(f"unknown client {client!r}; use mcp, mcp-legacy or fastmcp")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
