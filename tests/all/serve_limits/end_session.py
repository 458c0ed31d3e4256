"""Open a 2025-11-25 session with the official MCP Python SDK client over
streamable HTTP, list the tools, call one, and leave: the client ends the
session with DELETE as it exits. Prints JSON: the tools listed, the call's
text, and every warning or error the SDK logged (a DELETE answered with a
status it does not accept logs "Session termination failed: ...").

Usage: end_session.py URL
"""

import asyncio
import json
import logging
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


class Captured(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(f"{record.name}: {record.getMessage()}")


async def main(url):
    captured = Captured()
    logging.getLogger().addHandler(captured)
    logging.getLogger().setLevel(logging.WARNING)
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool("calc_eval", {"expression": "6*7"})
            text = result.content[0].text
    print(json.dumps({"tools": tools, "text": text, "logged": captured.lines}))


asyncio.run(main(sys.argv[1]))
