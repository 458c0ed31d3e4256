"""The official Python SDK's client against `toolhost serve` (stdio) with a
tool that asks its user a question: its elicitation callback answers as
told.

    python mcp_ask.py MODE ANSWER ARGV_JSON

MODE: "legacy" (the 2025-11-25 handshake: elicitation/create), "modern"
(2026-07-28, found through server/discover: an input_required result the
SDK fulfils and retries) or "none" (legacy, no elicitation callback, so no
elicitation capability declared). ANSWER: accept, decline or cancel.

Calls hostile_ask twice in one call ({"times": 2}). Prints
{"protocol_version", "asked": [{"message", "schema"}, ...], "is_error",
"text"}.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def main(mode, answer, argv):
    asked = []

    async def on_elicit(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        if answer == "accept":
            n = len(asked)
            return types.ElicitResult(action="accept", content={"name": f"Ada {n}", "size": "S"})
        return types.ElicitResult(action=answer)

    options = {"mode": "auto" if mode == "modern" else "legacy"}
    if mode != "none":
        options["elicitation_callback"] = on_elicit
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(server, **options) as client:
        result = await client.call_tool("hostile_ask", {"times": 2})
        text = " ".join(getattr(c, "text", "") for c in result.content)
        version = client.protocol_version
    print(json.dumps({
        "protocol_version": version,
        "asked": asked,
        "is_error": bool(result.is_error),
        "text": text,
    }))


asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
