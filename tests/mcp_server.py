#!/usr/bin/env python3
"""A small MCP server for Chimera's tests, standard library only.

    mcp_server.py                 speak JSON-RPC on stdin/stdout
    mcp_server.py --http [--sse]  serve streamable HTTP on 127.0.0.1 (the
                                  port is printed as the first stdout line);
                                  --sse answers as an event stream
    mcp_server.py --http --sse --crlf   events end in CRLF CRLF (as many
                                  servers send them) and the stream stays
                                  open after the answer

Tools: echo(text), add(a, b), fail(message) (an error result), and
write_marker(path) (writes a file: proves a call really ran). Each start
and call is appended to the file named by $MCP_LOG, when set.
"""

import json
import os
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = [
    {
        "name": "echo",
        "description": "Repeat the text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "fail",
        "description": "Always fails with the message.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
        },
    },
    {
        "name": "write_marker",
        "description": "Write a marker file at an absolute path.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
]


def log(line):
    path = os.environ.get("MCP_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def call_tool(name, args):
    log("call " + name + " " + json.dumps(args, sort_keys=True))
    if name == "echo":
        return {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
    if name == "add":
        try:
            total = args["a"] + args["b"]
        except (KeyError, TypeError) as e:
            return {"content": [{"type": "text", "text": "bad arguments: " + str(e)}], "isError": True}
        return {"content": [{"type": "text", "text": str(total)}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": args.get("message", "it failed")}], "isError": True}
    if name == "write_marker":
        with open(args["path"], "w") as f:
            f.write("called\n")
        return {"content": [{"type": "text", "text": "written"}]}
    return None


def handle(msg):
    """The answer to one JSON-RPC message, or None for a notification."""
    method = msg.get("method")
    if "id" not in msg:
        return None
    mid = msg["id"]
    if method == "initialize":
        log("initialize")
        result = {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-03-26"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "chimera-test", "version": "1"},
        }
    elif method == "tools/list":
        cursor = msg.get("params", {}).get("cursor")
        # Two pages, to exercise pagination.
        if cursor is None:
            result = {"tools": TOOLS[:2], "nextCursor": "page2"}
        else:
            result = {"tools": TOOLS[2:]}
    elif method == "tools/call":
        params = msg.get("params", {})
        result = call_tool(params.get("name"), params.get("arguments") or {})
        if result is None:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool " + str(params.get("name"))}}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown method " + str(method)}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def serve_stdio():
    log("start stdio")
    print("test MCP server up", file=sys.stderr, flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if msg.get("method") == "tools/call" and msg["params"].get("name") == "echo":
            # A notification before the answer: the client must skip it.
            print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "echoing"}}), flush=True)
        answer = handle(msg)
        if answer is not None:
            print(json.dumps(answer), flush=True)


def serve_http(sse, crlf):
    sessions = set()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            msg = json.loads(body)
            session = self.headers.get("Mcp-Session-Id")
            headers = {}
            if msg.get("method") == "initialize":
                session = uuid.uuid4().hex
                sessions.add(session)
                headers["Mcp-Session-Id"] = session
            elif session not in sessions:
                self.send_response(400)
                self.end_headers()
                self.wfile.write(b"missing or unknown Mcp-Session-Id")
                return
            answer = handle(msg)
            if answer is None:
                self.send_response(202)
                self.end_headers()
                return
            self.send_response(200)
            for k, v in headers.items():
                self.send_header(k, v)
            if sse and crlf:
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                event = "event: message\r\ndata: " + json.dumps(answer) + "\r\n\r\n"
                self.wfile.write(event.encode())
                self.wfile.flush()
                # Open until the client goes: only the answer says it is done.
                time.sleep(30)
                return
            if sse:
                data = "event: message\ndata: " + json.dumps(answer) + "\n\n"
                self.send_header("Content-Type", "text/event-stream")
            else:
                data = json.dumps(answer)
                self.send_header("Content-Type", "application/json")
            raw = data.encode()
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    log("start http")
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http("--sse" in sys.argv, "--crlf" in sys.argv)
    else:
        serve_stdio()
