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

MODE "switch" (2026-07-28) drives the rounds itself: it answers the first
question of {"times": 2}, then sends the answer to the second with that
round's requestState but {"times": 3}, then the same with {"times": 2}.
Prints {"protocol_version", "rounds": [...]}: a round that asks is
{"answers_kept": how many answers its requestState carries}, the last
{"is_error", "text"}.
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


QUESTION = "toolhost.dev/question"


async def switch(argv):
    """Answer a call's first question, then retry it with other arguments."""
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    rounds = []

    def answer(n):
        return types.ElicitResult(action="accept", content={"name": f"Ada {n}", "size": "S"})

    async def round_(arguments, responses=None, state=None):
        result = await client.session.call_tool(
            "hostile_ask",
            arguments,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
        if isinstance(result, types.InputRequiredResult):
            kept = json.loads(result.request_state)["answers"]
            rounds.append({"answers_kept": len(kept)})
            return result.request_state
        text = " ".join(getattr(c, "text", "") for c in result.content)
        rounds.append({"is_error": bool(result.is_error), "text": text})
        return None

    async def on_elicit(context, params):
        # Declares the capability; this mode answers the rounds itself.
        return answer(0)

    async with Client(server, mode="auto", elicitation_callback=on_elicit) as client:
        first = await round_({"times": 2})
        second = await round_({"times": 2}, {QUESTION: answer(1)}, first)
        # Other arguments: the answers given for {"times": 2} do not count.
        await round_({"times": 3}, {QUESTION: answer(2)}, second)
        # The same arguments: both answers count, and the call completes.
        await round_({"times": 2}, {QUESTION: answer(2)}, second)
        version = client.protocol_version
    print(json.dumps({"protocol_version": version, "rounds": rounds}))


if sys.argv[1] == "switch":
    asyncio.run(switch(json.loads(sys.argv[3])))
else:
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
