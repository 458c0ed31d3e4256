"""The official Python SDK's client against `toolhost serve` (stdio) with a
tool that needs approval: its elicitation callback answers as told.

    python mcp_approve.py MODE ANSWER ARGV_JSON

MODE: "legacy" (the 2025-11-25 handshake: elicitation/create), "modern"
(2026-07-28, found through server/discover: an input_required result the
SDK fulfils and retries) or "none" (legacy, no elicitation callback, so no
elicitation capability declared). ANSWER: accept, decline or cancel.

Calls calc_eval (needs approval) then text_stats (does not). Prints
{"protocol_version", "asked": [message, ...], "results": [{"is_error",
"text"}, ...]}.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def main(mode, answer, argv):
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        if answer == "accept":
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action=answer)

    options = {"mode": "auto" if mode == "modern" else "legacy"}
    if mode != "none":
        options["elicitation_callback"] = on_elicit
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    results = []
    async with Client(server, **options) as client:
        for name, arguments in [
            ("calc_eval", {"expression": "6*7"}),
            ("text_stats", {"text": "one two"}),
        ]:
            result = await client.call_tool(name, arguments)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            results.append({"is_error": bool(result.is_error), "text": text})
        version = client.protocol_version
    print(json.dumps({"protocol_version": version, "asked": asked, "results": results}))


asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
