"""The official Python SDK's client against `toolhost serve` (stdio) with a
tool that needs approval: its elicitation callback answers as told.

    python mcp_approve.py MODE ANSWER ARGV_JSON

MODE: "legacy" (the 2025-11-25 handshake: elicitation/create), "modern"
(2026-07-28, found through server/discover: an input_required result the
SDK fulfils and retries) or "none" (legacy, no elicitation callback, so no
elicitation capability declared). ANSWER: accept, decline or cancel.

MODE "switch" (2026-07-28) drives the rounds of calc_eval itself: it is
asked about {"expression": "6*7"}, accepts, and sends the accept with the
round's requestState but other arguments, {"expression": "6*9"}; then
accepts what it is asked next. Prints {"protocol_version", "rounds": [...]},
each round {"asked": the approval's message or null, "is_error", "text"}.

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


APPROVAL = "toolhost.dev/approval"


async def switch(argv):
    """Accept a call, then retry it with other arguments."""
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    accept = types.ElicitResult(action="accept", content={})
    rounds = []

    async def round_(arguments, responses=None, state=None):
        result = await client.session.call_tool(
            "calc_eval",
            arguments,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
        if isinstance(result, types.InputRequiredResult):
            request = result.input_requests[APPROVAL]
            rounds.append({"asked": request.params.message, "is_error": None, "text": None})
            return result.request_state
        text = " ".join(getattr(c, "text", "") for c in result.content)
        rounds.append({"asked": None, "is_error": bool(result.is_error), "text": text})
        return None

    async def on_elicit(context, params):
        # Declares the capability; this mode answers the rounds itself.
        return accept

    async with Client(server, mode="auto", elicitation_callback=on_elicit) as client:
        shown = await round_({"expression": "6*7"})
        # The user accepted 6*7; the retry carries other arguments.
        state = await round_({"expression": "6*9"}, {APPROVAL: accept}, shown)
        # Asked again, about 6*9 this time: accept that.
        await round_({"expression": "6*9"}, {APPROVAL: accept}, state)
        # The accept of 6*7 still holds for 6*7, with its own state.
        await round_({"expression": "6*7"}, {APPROVAL: accept}, shown)
        version = client.protocol_version
    print(json.dumps({"protocol_version": version, "rounds": rounds}))


if sys.argv[1] == "switch":
    asyncio.run(switch(json.loads(sys.argv[3])))
else:
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
