"""The official Python SDK's client against `toolhost serve` (stdio), calling
one tool that asks its user; the elicitation callback gives one answer to
every question.

    python mcp_answer.py MODE TOOL ARGUMENTS_JSON ANSWER_JSON ARGV_JSON

MODE: "legacy" (2025-11-25: elicitation/create) or "modern" (2026-07-28: an
input_required result the SDK fulfils and retries). ANSWER_JSON:
{"action": "accept", "content": {...}}, {"action": "decline"} or
{"action": "cancel"}. Prints {"protocol_version", "asked": [{"message",
"schema"}, ...], "is_error", "text"}.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def main(mode, tool, arguments, answer, argv):
    asked = []

    async def on_elicit(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        return types.ElicitResult(**answer)

    server = StdioServerParameters(command=argv[0], args=argv[1:])
    mode = "auto" if mode == "modern" else "legacy"
    async with Client(server, mode=mode, elicitation_callback=on_elicit) as client:
        result = await client.call_tool(tool, arguments)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        version = client.protocol_version
    print(json.dumps({
        "protocol_version": version,
        "asked": asked,
        "is_error": bool(result.is_error),
        "text": text,
    }))


asyncio.run(main(sys.argv[1], sys.argv[2], *(json.loads(a) for a in sys.argv[3:])))
