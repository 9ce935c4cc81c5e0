#!/usr/bin/env python3
"""A scripted fake LLM server on 127.0.0.1 for the editor tests.

Serves the OpenAI-compatible API (/v1/chat/completions, /v1/models),
Ollama's (/api/chat, /api/tags), Anthropic's Messages API (/v1/messages,
streamed as its events; tool calls as `tool_use` blocks), as Claude Code
speaks it, and Gemini's (…:generateContent, …:streamGenerateContent;
tool calls as `functionCall` parts), as Gemini CLI speaks it, and
OpenAI's Responses API (/v1/responses; `function_call` items), as Codex
speaks it. Chat replies come from a JSON script, in
order; each entry is one of:
  {"text": "..."}                 a normal (streamed if asked) reply
  {"status": 500, "body": "..."}  an HTTP error
  {"hang": true}                  never answer
  {"text": "...", "chunk_delay": 0.05}  stream slowly (seconds between chunks)
  {"tool_calls": [{"name": "write", "arguments": {...}}]}
                                  native tool calls (OpenAI form), as a model
                                  that makes them answers; for Anthropic's,
                                  Gemini's and the Responses API, "{cwd}" in
                                  them is the working folder the request
                                  names; {"name": ..., "input": "..."} is a
                                  freeform call (Codex's apply_patch)
When the script is exhausted the last entry repeats. With --only-with-tools,
requests that offer no tools (an agent's title or summary requests) are
answered "Fixing it" and leave the script where it is. Writes the chosen
port to --port-file and each request body to --log (one JSON per line).
"""
import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--script", required=True)
parser.add_argument("--port-file", required=True)
parser.add_argument("--log")
parser.add_argument("--timing", help="append the wall time after each reply's last byte")
parser.add_argument("--models", default="fake-model", help="the models it lists, comma-separated")
parser.add_argument("--only-with-tools", action="store_true", help="script only requests that offer tools")
args = parser.parse_args()

with open(args.script) as f:
    SCRIPT = json.load(f)
lock = threading.Lock()
position = 0


def next_reply():
    global position
    with lock:
        reply = SCRIPT[min(position, len(SCRIPT) - 1)]
        position += 1
        return reply


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Send each write at once: Nagle + delayed ACK would add 40 ms to replies.
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def send(self, code, ctype, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        if args.timing:
            with lock, open(args.timing, "a") as f:
                f.write(f"{time.time():.6f}\n")

    def do_GET(self):
        models = args.models.split(",")
        if self.path.endswith("/models"):
            self.send(200, "application/json", json.dumps({"data": [{"id": m} for m in models]}))
        elif self.path.endswith("/api/tags"):
            self.send(200, "application/json", json.dumps({"models": [{"name": m} for m in models]}))
        else:
            self.send(404, "text/plain", "not found")

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.endswith("/api/show"):
            # Ollama's model details: not a chat turn, not in the script.
            self.send(200, "application/json", json.dumps({"model_info": {"qwen2.context_length": 32768}}))
            return
        if args.log:
            with lock, open(args.log, "a") as f:
                f.write(json.dumps(body) + "\n")
        if self.path.split("?")[0].endswith(":countTokens"):
            self.send(200, "application/json", json.dumps({"totalTokens": 100}))
            return
        if self.path.split("?")[0].endswith("/messages/count_tokens"):
            self.send(200, "application/json", json.dumps({"input_tokens": 100}))
            return
        if args.only_with_tools and not body.get("tools"):
            reply = {"text": side_answer(body)}
        else:
            reply = next_reply()
        if self.path.split("?")[0].endswith("/responses") and ("text" in reply or "tool_calls" in reply):
            self.openai_responses(body, reply)
            return
        gemini = re.search(r":(stream)?[gG]enerateContent", self.path)
        if gemini and ("text" in reply or "tool_calls" in reply):
            self.gemini(body, reply, bool(gemini.group(1)))
            return
        if self.path.split("?")[0].endswith("/messages") and ("text" in reply or "tool_calls" in reply):
            self.anthropic(body, reply)
            return
        if "tool_calls" in reply:
            self.tool_calls(body, reply["tool_calls"])
            return
        if reply.get("hang"):
            time.sleep(3600)
            return
        if "status" in reply:
            self.send(reply["status"], "text/plain", reply.get("body", ""))
            return
        text = reply["text"]
        ollama = self.path.endswith("/api/chat")
        if not body.get("stream"):
            if ollama:
                out = {"message": {"role": "assistant", "content": text}, "done": True}
            else:
                out = {"choices": [{"message": {"role": "assistant", "content": text}}]}
            self.send(200, "application/json", json.dumps(out))
            return
        pieces = [text[i : i + 16] for i in range(0, len(text), 16)]
        if ollama:
            lines = [json.dumps({"message": {"content": p}, "done": False}) + "\n" for p in pieces]
            lines.append(json.dumps({"message": {"content": ""}, "done": True}) + "\n")
            self.send(200, "application/x-ndjson", "".join(lines))
        else:
            events = [
                "data: " + json.dumps({"choices": [{"delta": {"content": p}, "finish_reason": None}]}) + "\n\n"
                for p in pieces
            ]
            events.append('data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
            delay = reply.get("chunk_delay")
            if not delay:
                self.send(200, "text/event-stream", "".join(events))
                return
            # A slow stream, as a real model produces it: chunked encoding.
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for e in events:
                data = e.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                time.sleep(delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()


def _tool_calls(self, body, calls):
    """Answers with native tool calls, streamed as OpenAI streams them."""
    listed = [
        {"id": "call_%d_%d" % (position, i), "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for i, c in enumerate(calls)
    ]
    if not body.get("stream"):
        out = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": listed},
                            "finish_reason": "tool_calls"}]}
        self.send(200, "application/json", json.dumps(out))
        return
    deltas = [dict(call, index=i) for i, call in enumerate(listed)]
    events = [
        "data: " + json.dumps({"choices": [{"delta": {"role": "assistant", "tool_calls": deltas}, "finish_reason": None}]}) + "\n\n",
        "data: " + json.dumps({"choices": [{"delta": {}, "finish_reason": "tool_calls"}],
                               "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}) + "\n\n",
        "data: [DONE]\n\n",
    ]
    self.send(200, "text/event-stream", "".join(events))


def side_answer(body):
    """An agent's side request (a title, a classifier): "Fixing it", or when
    it asks for JSON of a schema (Gemini CLI's do), the least JSON that
    fits it — an answer that does not parse is retried with back-off."""
    schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or (body.get("generationConfig") or {}).get("responseSchema")
    return json.dumps(fitting(schema)) if schema else "Fixing it"


def fitting(schema):
    """The least value of JSON schema `schema`."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties", {})
        return {k: fitting(props[k]) for k in schema.get("required", props.keys()) if k in props}
    if schema.get("enum"):
        return schema["enum"][0]
    return {"string": "ok", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


def strings(value):
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)


def with_cwd(body, reply):
    """Agents' tools take absolute paths: `{cwd}` in an argument is the
    working folder the request names, as a model reads it there: "Working
    directory: X" (claude-code-acp), "Primary working directory: X"
    (claude-agent-acp), "**Workspace Directories:**\n  - X" (Gemini CLI)."""
    found = re.search(r"(?:[Ww]orking directory: |Workspace Directories:\*\*\n\s*- )(/\S+)", "\n".join(strings(body)))
    cwd = found.group(1).rstrip(".") if found else ""
    return json.loads(json.dumps(reply).replace("{cwd}", cwd))


def _gemini(self, body, reply, stream):
    """Answers as Gemini's generateContent: text and `functionCall` parts,
    as one response or as its server-sent stream."""
    reply = with_cwd(body, reply)
    parts = []
    if reply.get("text"):
        parts.append({"text": reply["text"]})
    for c in reply.get("tool_calls", []):
        parts.append({"functionCall": {"name": c["name"], "args": c["arguments"]}})
    out = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}}
    if stream:
        self.send(200, "text/event-stream", "data: " + json.dumps(out) + "\r\n\r\n")
    else:
        self.send(200, "application/json", json.dumps(out))


def _responses(self, body, reply):
    """Answers as OpenAI's Responses API (Codex's): a message and
    `function_call` items, streamed as its events."""
    reply = with_cwd(body, reply)
    items = []
    if reply.get("text"):
        items.append({"type": "message", "id": "msg_%d" % position, "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": reply["text"], "annotations": []}]})
    for i, c in enumerate(reply.get("tool_calls", [])):
        ids = {"id": "fc_%d_%d" % (position, i), "call_id": "call_%d_%d" % (position, i), "name": c["name"], "status": "completed"}
        if "input" in c:
            # A freeform tool (Codex's apply_patch): its input as written.
            items.append(dict(ids, type="custom_tool_call", input=c["input"]))
        else:
            items.append(dict(ids, type="function_call", arguments=json.dumps(c["arguments"])))
    response = {"id": "resp_%d" % position, "object": "response", "status": "completed", "model": body.get("model", "fake-model"),
                "output": items, "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                                           "input_tokens_details": {"cached_tokens": 0},
                                           "output_tokens_details": {"reasoning_tokens": 0}}}
    if not body.get("stream"):
        self.send(200, "application/json", json.dumps(response))
        return

    def event(kind, data):
        return "event: %s\ndata: %s\n\n" % (kind, json.dumps(dict(data, type=kind)))

    events = [event("response.created", {"response": dict(response, status="in_progress", output=[])})]
    for i, item in enumerate(items):
        events.append(event("response.output_item.added", {"output_index": i, "item": item}))
        if item["type"] == "message":
            events.append(event("response.output_text.delta", {"output_index": i, "item_id": item["id"], "content_index": 0,
                                                               "delta": reply["text"]}))
        events.append(event("response.output_item.done", {"output_index": i, "item": item}))
    events.append(event("response.completed", {"response": response}))
    self.send(200, "text/event-stream", "".join(events))


def _anthropic(self, body, reply):
    """Answers as Anthropic's Messages API: text and `tool_use` blocks, as
    one message or as its stream of events."""
    blocks = []
    reply = with_cwd(body, reply)
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    for i, c in enumerate(reply.get("tool_calls", [])):
        blocks.append({"type": "tool_use", "id": "toolu_%d_%d" % (position, i), "name": c["name"], "input": c["arguments"]})
    stop = "tool_use" if reply.get("tool_calls") else "end_turn"
    message = {"id": "msg_%d" % position, "type": "message", "role": "assistant", "model": body.get("model", "fake-model"),
               "content": blocks, "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": 100, "output_tokens": 10}}
    if not body.get("stream"):
        self.send(200, "application/json", json.dumps(message))
        return

    def event(kind, data):
        return "event: %s\ndata: %s\n\n" % (kind, json.dumps(dict(data, type=kind)))

    events = [event("message_start", {"message": dict(message, content=[], stop_reason=None)})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            events.append(event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            delta = {"type": "text_delta", "text": b["text"]}
        else:
            events.append(event("content_block_start", {"index": i, "content_block": dict(b, input={})}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
        events.append(event("content_block_delta", {"index": i, "delta": delta}))
        events.append(event("content_block_stop", {"index": i}))
    events.append(event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}}))
    events.append(event("message_stop", {}))
    self.send(200, "text/event-stream", "".join(events))


Handler.tool_calls = _tool_calls
Handler.anthropic = _anthropic
Handler.gemini = _gemini
Handler.openai_responses = _responses

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os

os.replace(args.port_file + ".tmp", args.port_file)
server.serve_forever()
