"""Generic MCP clients against `toolhost serve --http`: fastmcp and the OpenAI
Agents SDK, which speak the sessionless 2026-07-28 revision by default and
send no toolhost-specific `_meta`. They keep a stateful plugin's state only
through the session handle the tools take as an argument.

    python generic_clients.py fastmcp http://127.0.0.1:PORT/mcp
    python generic_clients.py agents  http://127.0.0.1:PORT/mcp

Prints one JSON object on stdout.

fastmcp: five `scratchpad_increment` calls: one without a handle (a new
session, whose handle the result names in `_meta` and in its text), three
passing that handle back, one without (another new session). Prints
{"protocol_version", "values": [...], "handles": [...], "texts": [...]}.

agents: an Agent whose model is a scripted OpenAI-compatible server on
loopback (this script's own, standing in for an LLM that reads tool results
and follows their instructions): it asks for `scratchpad_increment` without
a handle, then three times with the handle it reads in the last tool
result's text, then answers with the last value. Prints {"final",
"tool_results": [...], "requests": N}.
"""

import asyncio
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# As the model reads it in the result's text, whether or not the SDK hands
# the content over JSON-encoded (quotes escaped).
HANDLE = re.compile(r'\\?"session\\?": \\?"([A-Za-z0-9._-]+)')


async def fastmcp_client(url):
    from fastmcp import Client

    values, handles, texts = [], [], []
    async with Client(url) as client:
        handle = None
        for step in range(5):
            args = {} if step in (0, 4) else {"session": handle}
            result = await client.call_tool("scratchpad_increment", args)
            values.append((result.structured_content or {}).get("value"))
            meta = result.meta or {}
            got = meta.get("toolhost.dev/session")
            handles.append(got)
            texts.append(" | ".join(getattr(c, "text", "") for c in result.content))
            if step == 0:
                handle = got
        version = getattr(client, "protocol_version", None)
    return {"protocol_version": version, "values": values, "handles": handles, "texts": texts}


class ScriptedModel(BaseHTTPRequestHandler):
    """`POST /v1/chat/completions`, OpenAI's wire format: tool calls until
    four results are in, then a text answer."""

    requests = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ScriptedModel.requests += 1
        results = [m for m in body["messages"] if m.get("role") == "tool"]
        if len(results) < 4:
            args = {}
            for m in reversed(results):
                content = m["content"]
                if not isinstance(content, str):
                    content = json.dumps(content)
                found = HANDLE.search(content)
                if found:
                    args = {"session": found.group(1)}
                    break
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(results)}",
                        "type": "function",
                        "function": {
                            "name": "scratchpad_increment",
                            "arguments": json.dumps(args),
                        },
                    }
                ],
            }
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"done: {results[-1]['content']}"}
            finish = "stop"
        answer = {
            "id": f"chatcmpl-{ScriptedModel.requests}",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


async def agents_client(url):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStreamableHttp
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    model_server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedModel)
    threading.Thread(target=model_server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{model_server.server_address[1]}/v1"
    model = OpenAIChatCompletionsModel(
        model="scripted", openai_client=AsyncOpenAI(base_url=base, api_key="unused")
    )
    try:
        async with MCPServerStreamableHttp({"url": url}, cache_tools_list=True) as server:
            agent = Agent(name="counter", instructions="Count.", model=model, mcp_servers=[server])
            run = await Runner.run(agent, "Increment the counter four times.", max_turns=10)
    finally:
        model_server.shutdown()
    outputs = [
        item.output if isinstance(item.output, str) else json.dumps(item.output)
        for item in run.new_items
        if type(item).__name__ == "ToolCallOutputItem"
    ]
    return {"final": run.final_output, "tool_results": outputs, "requests": ScriptedModel.requests}


def main():
    which, url = sys.argv[1], sys.argv[2]
    run = {"fastmcp": fastmcp_client, "agents": agents_client}[which]
    print(json.dumps(asyncio.run(run(url))))


if __name__ == "__main__":
    main()
