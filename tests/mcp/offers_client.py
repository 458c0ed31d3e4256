"""The official Python SDK's client on `toolhost serve`'s resources,
resource templates, prompts and completions (tests/all/mcp/offers.rs).

    python offers_client.py stdio '["toolhost", "serve", ...]'
    python offers_client.py http  http://127.0.0.1:PORT/mcp

Lists resources, templates and prompts; reads a listed text resource and a
template's text and blob; reads an unknown URI; gets a prompt with its
arguments and without a required one; completes an argument; subscribes
to a resource and waits (at most 12 s) for notifications/resources/updated.
Prints one JSON object with what it saw.
"""

import asyncio
import base64
import contextlib
import json
import sys

from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client


class Updates:
    def __init__(self):
        self.uris = []
        self.arrived = asyncio.Event()

    async def __call__(self, message):
        # A ServerNotification wraps the notification (`root`) in some
        # versions of the SDK.
        message = getattr(message, "root", message)
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.arrived.set()


async def error_of(call):
    try:
        await call
    except MCPError as e:
        return {"code": e.error.code, "message": e.error.message, "data": e.error.data}
    return None


async def main(transport, target):
    async with contextlib.AsyncExitStack() as stack:
        if transport == "stdio":
            argv = json.loads(target)
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            read, write = await stack.enter_async_context(streamable_http_client(target))
        updates = Updates()
        session = await stack.enter_async_context(ClientSession(read, write, message_handler=updates))
        init = await session.initialize()
        caps = init.capabilities
        out = {
            "capabilities": {
                "resources": caps.resources.model_dump(by_alias=True) if caps.resources else None,
                "prompts": caps.prompts.model_dump(by_alias=True) if caps.prompts else None,
                "completions": caps.completions is not None,
            }
        }
        resources = []
        cursor = None
        pages = 0
        while True:
            page = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
            pages += 1
            resources += [{"uri": str(r.uri), "name": r.name, "mimeType": r.mime_type} for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        out["resources"] = resources
        templates = await session.list_resource_templates()
        out["templates"] = [t.uri_template for t in templates.resource_templates]
        prompts = await session.list_prompts()
        out["prompts"] = [
            {"name": p.name, "arguments": [[a.name, bool(a.required)] for a in (p.arguments or [])]}
            for p in prompts.prompts
        ]

        def contents(result):
            parts = []
            for c in result.contents:
                if isinstance(c, types.TextResourceContents):
                    parts.append({"uri": str(c.uri), "text": c.text, "mimeType": c.mime_type})
                else:
                    parts.append({"uri": str(c.uri), "blob": base64.b64decode(c.blob).decode("utf-8", "replace")})
            return parts

        text_uri = next(r["uri"] for r in resources if r["uri"].endswith(".md"))
        out["read_text"] = contents(await session.read_resource(text_uri))
        out["read_template_text"] = contents(await session.read_resource("demo://resource/dynamic/text/3"))
        out["read_blob"] = contents(await session.read_resource("demo://resource/dynamic/blob/4"))
        out["unknown"] = await error_of(session.read_resource("demo://no/such/thing"))
        prompt = await session.get_prompt("everything_args-prompt", {"city": "Warsaw", "state": "Mazovia"})
        out["prompt"] = [
            {"role": m.role, "text": getattr(m.content, "text", None), "type": m.content.type}
            for m in prompt.messages
        ]
        out["prompt_missing"] = await error_of(session.get_prompt("everything_args-prompt", {}))
        completion = await session.complete(
            types.PromptReference(type="ref/prompt", name="everything_completable-prompt"),
            {"name": "department", "value": "E"},
        )
        out["completion"] = completion.completion.values
        template_completion = await session.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}"),
            {"name": "resourceId", "value": "7"},
        )
        out["template_completion"] = template_completion.completion.values
        await session.subscribe_resource(text_uri)
        out["subscribed"] = text_uri
        # server-everything sends its subscribers updates (at once, then
        # every 5 s) once this tool of its turns them on.
        await session.call_tool("everything_toggle-subscriber-updates", {})
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(updates.arrived.wait(), 12)
        out["updated"] = updates.uris
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
