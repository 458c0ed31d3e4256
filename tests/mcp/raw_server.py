"""A misbehaving MCP server in plain JSON-RPC (no SDK), for the tests of
what toolhost does with a server it cannot trust.

    python3 raw_server.py stdio MODE [STARTS_FILE]
    python3 raw_server.py http MODE PORT_FILE

MODE:
    never-lists   answers `initialize`, never answers `tools/list`
    huge-list     answers `tools/list` with one message of 18 MiB
    over-budget   lists `fine`, and one tool over each per-tool budget the
                  test sets: `long` (a 200-byte description), `wide` (a
                  4 KiB schema), `deep` (a schema nested 40 deep)
    huge-result   lists `big` (input {"bytes": N}) and `echo`; `big`
                  answers with N bytes of text
    echo-secrets  lists `echo` whose description quotes the request's
                  Authorization header (HTTP) or $MCP_API_TOKEN (stdio);
                  `echo` answers with them in its text, `fail` in an
                  isError result, `refuse` in a JSON-RPC error; stdio also
                  writes the token to stderr

STARTS_FILE gets one line per start (to count restarts). In http mode the
server listens on a free loopback port and writes it to PORT_FILE.
"""

import json
import os
import sys

MODE = sys.argv[2]


def secret(headers):
    if headers is not None:
        return headers.get("Authorization", "")
    return os.environ.get("MCP_API_TOKEN", "")


def tools(headers):
    if MODE == "huge-list":
        return [
            {
                "name": "t%d" % i,
                "description": "x" * (1 << 20),
                "inputSchema": {"type": "object"},
            }
            for i in range(18)
        ]
    if MODE == "over-budget":
        deep = {"type": "object"}
        for _ in range(40):
            deep = {"type": "object", "properties": {"x": deep}}
        return [
            {"name": "fine", "description": "Fits.", "inputSchema": {"type": "object"}},
            {"name": "long", "description": "x" * 200, "inputSchema": {"type": "object"}},
            {
                "name": "wide",
                "description": "Wide.",
                "inputSchema": {"type": "object", "description": "y" * 4096},
            },
            {"name": "deep", "description": "Deep.", "inputSchema": deep},
        ]
    listed = [
        {"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object"}},
        {"name": "fail", "description": "Fails.", "inputSchema": {"type": "object"}},
        {"name": "refuse", "description": "Refuses.", "inputSchema": {"type": "object"}},
        {
            "name": "big",
            "description": "Answers with `bytes` bytes.",
            "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}},
        },
    ]
    if MODE == "echo-secrets":
        listed[0]["description"] = "Echoes. Called with " + secret(headers)
    return listed


def answer(message, headers=None):
    """The response to one message, or None (a notification, or a request
    this server never answers)."""
    method = message.get("method")
    if "id" not in message:
        return None
    rid = message["id"]
    if method == "initialize":
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "0.0.1"},
            },
        }
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "tools/list":
        if MODE == "never-lists":
            return None
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools(headers)}}
    if method == "tools/call":
        name = message["params"]["name"]
        args = message["params"].get("arguments") or {}
        token = secret(headers)
        if name == "big":
            text = "x" * int(args.get("bytes", 0))
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}
        if name == "echo":
            text = "you sent: " + token + " / " + json.dumps({"auth": token})
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}
        if name == "fail":
            text = "bad credentials " + token
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"content": [{"type": "text", "text": text}], "isError": True},
            }
        if name == "refuse":
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32000, "message": "refused for " + token},
            }
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + str(method)}}


def stdio():
    if len(sys.argv) > 3:
        with open(sys.argv[3], "a") as f:
            f.write("start\n")
    if MODE == "echo-secrets":
        sys.stderr.write("starting with token " + secret(None) + "\n")
        sys.stderr.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


def http():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, status, body=None, extra=()):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.send(405)

        def do_DELETE(self):
            self.send(200)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            message = json.loads(self.rfile.read(length))
            reply = answer(message, self.headers)
            if reply is None:
                self.send(202)
            else:
                self.send(200, reply, [("Mcp-Session-Id", "raw-session")])

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[3] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    server.serve_forever()


if __name__ == "__main__":
    stdio() if sys.argv[1] == "stdio" else http()
