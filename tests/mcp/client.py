"""A real MCP client for the `toolhost serve` tests: the official Python SDK.

    python client.py stdio '["toolhost", "serve", "--plugins", "DIR"]' STEPS
    python client.py http  http://127.0.0.1:PORT/mcp                   STEPS

STEPS is a JSON list run in order; each step names the session it runs in
(default "a"). A session is opened on first use: a new server process for
stdio, a new MCP session (Mcp-Session-Id) for HTTP; a session whose name
starts with "modern" speaks the sessionless 2026-07-28 revision instead
(`server/discover`, no handshake). Steps:

    {"op": "list"}                              tools/list
    {"op": "call", "tool": NAME, "args": {...}} tools/call ("progress": true
        sends a progress token and reports the notifications received
        before the result; "log_level": LEVEL puts
        io.modelcontextprotocol/logLevel in the request's `_meta`; the
        result's "logs" are the log notifications received before it)
    {"op": "set_level", "level": LEVEL}         logging/setLevel
    {"op": "logs"}                              the log notifications the
        session received since the last "logs" step or call
    {"op": "wait_logs", "count": N, "timeout": SECONDS}
        wait until the session has received N log notifications since it
        opened (rmcp sends a 2025-11-25 session's on its GET stream, not
        ordered with the results); {"received"}
    {"op": "cancel", "tool": NAME, "args": {...}, "after": SECONDS}
        tools/call, abandoned after SECONDS: the SDK sends
        notifications/cancelled; with "when_busy": PID | "child" instead
        of "after", abandoned once that process has burnt 30 ms of CPU
        since the call was sent (a spinning guest is in flight; at most
        30 s)
    {"op": "copy", "files": [[SRC, DEST], ...]}  copy files (no session)
    {"op": "read", "files": [PATH, ...]}        read files whole, like `cat`
    {"op": "touch", "files": [PATH, ...]}       open for writing, close,
        set the times, like `touch` (no session)
    {"op": "run", "argv": [PROGRAM, ARG, ...]}  run a program, stdin empty,
        to its end; {"code"} (no session)
    {"op": "wait_list_changed", "timeout": SECONDS}
        wait for notifications/tools/list_changed on the session (one
        received since the last wait counts)
    {"op": "sleep", "seconds": SECONDS}         (no session)
    {"op": "cpu", "pid": PID | "child"}          CPU time of a process in
        clock ticks (utime + stime, /proc/PID/stat); "child": the stdio
        server this client started (no session)

Prints one JSON object on stdout: {"sessions": {NAME: {"protocol_version",
"server_name"}}, "results": [one per step]}. A call's result is
{"is_error", "text", "structured", "blocks", "seconds"} ("blocks": every
content block, media as type, mimeType, size and first bytes), or
{"error": {"code",
"message"}} when the server answered with a JSON-RPC error.
"""

import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import warnings

from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client


class Notifications:
    """Server notifications a session received: tool list changes, for
    wait_list_changed, and log messages, in the order they arrived."""

    def __init__(self):
        self.list_changed = asyncio.Event()
        self.logs = []
        self.logs_received = 0
        self.log_arrived = asyncio.Event()

    async def __call__(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed.set()

    async def on_log(self, params):
        self.logs.append({"level": params.level, "logger": params.logger, "data": params.data})
        self.logs_received += 1
        self.log_arrived.set()

    async def wait_logs(self, count, timeout):
        deadline = time.monotonic() + timeout
        while self.logs_received < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.log_arrived.wait(), left)
            self.log_arrived.clear()
        return self.logs_received

    def take_logs(self):
        logs, self.logs = self.logs, []
        return logs


async def open_session(stack, transport, target, modern=False):
    if transport == "stdio":
        argv = json.loads(target)
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        read, write = await stack.enter_async_context(stdio_client(params))
    elif transport == "http":
        read, write = await stack.enter_async_context(streamable_http_client(target))
    else:
        raise SystemExit(f"unknown transport {transport!r}; use stdio or http")
    notifications = Notifications()
    session = await stack.enter_async_context(
        ClientSession(read, write, message_handler=notifications, logging_callback=notifications.on_log)
    )
    session.notifications = notifications
    await (session.discover() if modern else session.initialize())
    info = {
        "protocol_version": session.protocol_version,
        "server_name": session.server_info.name if session.server_info else None,
    }
    return session, info


def cpu_ticks(pid):
    if pid == "child":
        children = []
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                children += f.read().split()
        pid = children[0]
    with open(f"/proc/{pid}/stat") as f:
        # The command may hold spaces: fields count from the last ")".
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def run_local(step):
    """Steps that need no MCP session; None if `step` is not one."""
    op = step["op"]
    if op == "copy":
        for src, dest in step["files"]:
            shutil.copy(src, dest)
        return {}
    if op == "cpu":
        return {"ticks": cpu_ticks(step["pid"])}
    if op == "read":
        for path in step["files"]:
            with open(path, "rb") as f:
                f.read()
        return {}
    if op == "touch":
        for path in step["files"]:
            with open(path, "ab"):
                pass
            os.utime(path)
        return {}
    if op == "run":
        done = subprocess.run(
            step["argv"], stdin=subprocess.DEVNULL, capture_output=True, timeout=120
        )
        return {"code": done.returncode}
    return None


def describe_block(block):
    """A content block as the tests check it: its type, and for media its
    media type, decoded size and first bytes (hex)."""
    if block.type == "text":
        return {"type": "text"}
    if block.type in ("image", "audio"):
        data = base64.b64decode(block.data)
        return {"type": block.type, "mimeType": block.mime_type, "size": len(data), "head": data[:8].hex()}
    if block.type == "resource":
        r = block.resource
        return {"type": "resource", "uri": str(r.uri), "mimeType": r.mime_type, "text": getattr(r, "text", None)}
    return {"type": block.type}


async def run_step(session, step):
    op = step["op"]
    if op == "sleep":
        await asyncio.sleep(step["seconds"])
        return {}
    if op == "set_level":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated as of 2026-07-28
            try:
                await session.set_logging_level(step["level"])
            except MCPError as e:
                return {"error": {"code": e.code, "message": e.message}}
        return {}
    if op == "logs":
        return {"logs": session.notifications.take_logs()}
    if op == "wait_logs":
        received = await session.notifications.wait_logs(step["count"], step.get("timeout", 30))
        return {"received": received}
    if op == "wait_list_changed":
        try:
            await asyncio.wait_for(session.notifications.list_changed.wait(), step.get("timeout", 30))
        except asyncio.TimeoutError:
            return {"list_changed": False}
        session.notifications.list_changed.clear()
        return {"list_changed": True}
    if op == "cancel":
        before = cpu_ticks(step["when_busy"]) if "when_busy" in step else None
        call = asyncio.ensure_future(session.call_tool(step["tool"], step.get("args", {})))
        if before is None:
            await asyncio.sleep(step.get("after", 0.3))
        else:
            deadline = time.monotonic() + 30
            while cpu_ticks(step["when_busy"]) - before < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        finished = call.done()
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        return {"finished_before_cancel": finished}
    if op == "list":
        listed = await session.list_tools()
        return {
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "outputSchema": t.output_schema,
                    "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                    if t.annotations
                    else None,
                }
                for t in listed.tools
            ]
        }
    if op == "call":
        started = time.monotonic()
        progress = []

        async def on_progress(done, total, message):
            progress.append({"progress": done, "total": total, "message": message})

        meta = {"io.modelcontextprotocol/logLevel": step["log_level"]} if "log_level" in step else None
        session.notifications.take_logs()
        try:
            result = await session.call_tool(
                step["tool"],
                step.get("args", {}),
                progress_callback=on_progress if step.get("progress") else None,
                meta=meta,
            )
        except MCPError as e:
            return {"error": {"code": e.code, "message": e.message}}
        # Reports still delivered after the result would land here too late:
        # what the test sees is what had arrived when call_tool returned.
        received = list(progress)
        return {
            "progress": received,
            "logs": session.notifications.take_logs(),
            "is_error": bool(result.is_error),
            "text": [c.text for c in result.content if c.type == "text"],
            "structured": result.structured_content,
            "blocks": [describe_block(c) for c in result.content],
            "seconds": time.monotonic() - started,
        }
    raise SystemExit(f"unknown op {op!r}")


async def main(transport, target, steps):
    sessions = {}
    infos = {}
    results = []
    async with contextlib.AsyncExitStack() as stack:
        for step in steps:
            local = run_local(step)
            if local is not None:
                results.append(local)
                continue
            name = step.get("session", "a")
            if name not in sessions:
                sessions[name], infos[name] = await open_session(
                    stack, transport, target, modern=name.startswith("modern")
                )
            results.append(await run_step(sessions[name], step))
    print(json.dumps({"sessions": infos, "results": results}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
