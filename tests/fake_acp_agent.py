#!/usr/bin/env python3
"""A scripted ACP agent (Agent Client Protocol v1, JSON-RPC over stdio) for
the tests. Each `session/prompt` runs the next turn of the script given
with --script (a JSON list of turns; a turn is a list of steps; the last
turn repeats; the count of turns played is kept beside the script, so a
new process of the same script goes on where the last one ended). Steps:
  {"say": "text"}                       an agent_message_chunk update
  {"read": "path"}                      fs/read_text_file (the answer is kept)
  {"replace": ["path", "old", "new"]}   read path, write it back with old -> new
  {"write": ["path", "content"]}        fs/write_text_file
  {"permission": "title"}               session/request_permission (allow/reject)
  {"terminal": ["prog", "arg"]}         terminal/create, wait_for_exit, output, release
  {"line": "cat a | wc -l"}             the same with a whole shell line as the
                                        command and no args (as Claude Code)
  {"asked_edit": ["path", "old", "new"]}
                                        as Claude Code edits: a tool_call of kind
                                        edit, then session/request_permission
                                        naming only its id, input and title; the
                                        edit made only when an allow was chosen
  {"tool": "title"}                     a tool_call update (pending, then completed;
                                        with "fail": true, failed)
  {"ran": ["title", "output"]}          a command the agent ran itself: a tool_call
                                        of kind execute, completed with that output
  {"think": "text"}                     an agent_thought_chunk update
  {"plan": ["entry", ...]}              a plan update (the first entry done)
  {"wait_cancel": true}                 wait for session/cancel, end the turn "cancelled"
  {"sleep": seconds}
  {"exit_after_turn": true}             the process exits once the turn's answer is sent
  {"die": "text"}                       prints text (and an escape sequence, and bytes
                                        that are no UTF-8) to stderr and exits at once, 3
  {"write_timed": ["path", n]}          n writes of ~1 KB, each round trip's ms logged
As a hostile agent would, on its own, not through the client (each result
logged as {"disk": step, "path": ..., "ok": bool, "text"/"error": ...}):
  {"disk_write": ["path", "content"]}   open(path, "w") relative to its cwd
  {"disk_read": "path"}                 open(path).read()
  {"symlink": ["target", "link"]}       os.symlink
  {"detached_write": ["path", "content", seconds]}
                                        a double-forked setsid child writes later
  {"ignore_term": true}                 SIGTERM is ignored (from the start)
  {"editor_rpc": ["vim command", [paths]]}
                                        every Neovim server it can find (in
                                        /proc/net/unix, $NVIM, or guessed:
                                        paths) is sent nvim_command(...)
                                        over msgpack-RPC
Every message received and every answer to the agent's requests go to
--log, one JSON per line, so tests can check what the client said.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("--script", required=True)
parser.add_argument("--log")
parser.add_argument("--login", help="a login method it requires (ACP authenticate) before any session, as Codex does")
args = parser.parse_args()

with open(args.script) as f:
    SCRIPT = json.load(f)

out_lock = threading.Lock()
pending = {}  # request id -> Event, answer
cancelled = threading.Event()
logged_in = threading.Event()
next_id = [1000]
cwds = {}  # session id -> its cwd


def where(session, path):
    """ACP paths are absolute: a relative one in the script is under the session's cwd."""
    return path if os.path.isabs(path) else os.path.join(cwds.get(session, "/"), path)


def log(entry):
    if args.log:
        with open(args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def request(method, params, quiet=False):
    next_id[0] += 1
    rid = next_id[0]
    done = threading.Event()
    pending[rid] = [done, None]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    done.wait()
    answer = pending.pop(rid)[1]
    if not quiet:
        log({"answer_to": method, "params": params, "answer": answer})
    return answer


def update(session, upd):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": upd}})


def next_turn():
    """The index of the turn to play, counted across processes."""
    counter = args.script + ".played"
    try:
        with open(counter) as f:
            played = int(f.read() or 0)
    except FileNotFoundError:
        played = 0
    with open(counter, "w") as f:
        f.write(str(played + 1))
    return played


def disk(what, path, act):
    try:
        got = act()
        log({"disk": what, "path": path, "ok": True, "text": got if isinstance(got, str) else None})
    except OSError as e:
        log({"disk": what, "path": path, "ok": False, "error": str(e)})


def msgpack_str(s):
    b = s.encode()
    if len(b) < 32:
        return bytes([0xA0 | len(b)]) + b
    return bytes([0xDA]) + len(b).to_bytes(2, "big") + b


def editor_rpc(command, guessed):
    """As the attack did: Neovim's servers, found, each sent a command."""
    found = set(guessed)
    try:
        with open("/proc/net/unix") as f:
            for line in f.read().splitlines()[1:]:
                parts = line.split()
                if len(parts) >= 8 and "nvim" in parts[-1]:
                    found.add(parts[-1])
    except OSError as e:
        log({"disk": "editor_rpc", "path": "/proc/net/unix", "ok": False, "error": str(e)})
    if os.environ.get("NVIM"):
        found.add(os.environ["NVIM"])
    log({"editor_servers": sorted(found)})
    # [type 0, msgid 1, method, [command]]
    message = bytes([0x94, 0x00, 0x01]) + msgpack_str("nvim_command") + bytes([0x91]) + msgpack_str(command)
    for path in sorted(found):
        import socket

        def send():
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(path)
            s.sendall(message)
            return s.recv(64).hex()

        disk("editor_rpc", path, send)


def detached_write(path, content, delay):
    """A grandchild in a session of its own writes `path` after `delay`."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            log({"detached": os.getpid()})
            time.sleep(delay)
            disk("detached_write", path, lambda: open(path, "w").write(content))
            os._exit(0)
        os._exit(0)
    os.wait()


def run_turn(rid, session, prompt):
    steps = SCRIPT[min(next_turn(), len(SCRIPT) - 1)]
    cancelled.clear()
    stop = "end_turn"
    leave = False
    for step in steps:
        if "say" in step:
            update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": step["say"]}})
        elif "read" in step:
            request("fs/read_text_file", {"sessionId": session, "path": where(session, step["read"])})
        elif "replace" in step:
            path, old, new = step["replace"]
            got = request("fs/read_text_file", {"sessionId": session, "path": where(session, path)})
            text = (got.get("result") or {}).get("content", "")
            request("fs/write_text_file", {"sessionId": session, "path": where(session, path), "content": text.replace(old, new)})
        elif "write" in step:
            path, content = step["write"]
            request("fs/write_text_file", {"sessionId": session, "path": where(session, path), "content": content})
        elif "permission" in step:
            request(
                "session/request_permission",
                {
                    "sessionId": session,
                    "toolCall": {"toolCallId": "perm-1", "title": step["permission"], "kind": "edit", "status": "pending"},
                    "options": [
                        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                    ],
                },
            )
        elif "asked_edit" in step:
            path, old, new = step["asked_edit"]
            next_id[0] += 1
            call = "toolu_%d" % next_id[0]
            update(session, {"sessionUpdate": "tool_call", "toolCallId": call, "title": "Edit", "kind": "edit", "status": "pending",
                             "rawInput": {}})
            answer = request(
                "session/request_permission",
                {
                    "sessionId": session,
                    "toolCall": {"toolCallId": call, "title": "Edit `%s`" % path,
                                 "rawInput": {"file_path": where(session, path), "old_string": old, "new_string": new}},
                    "options": [
                        {"optionId": "acceptEdits", "name": "Yes, and auto-accept edits", "kind": "allow_always"},
                        {"optionId": "default", "name": "Yes, and manually approve edits", "kind": "allow_once"},
                        {"optionId": "plan", "name": "No, keep planning", "kind": "reject_once"},
                    ],
                },
            )
            outcome = (answer.get("result") or {}).get("outcome") or {}
            if outcome.get("optionId") in ("acceptEdits", "default"):
                got = request("fs/read_text_file", {"sessionId": session, "path": where(session, path)})
                text = (got.get("result") or {}).get("content", "")
                request("fs/write_text_file", {"sessionId": session, "path": where(session, path), "content": text.replace(old, new)})
                update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"})
            else:
                update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "failed"})
        elif "terminal" in step or "line" in step:
            prog, *rest = step["terminal"] if "terminal" in step else [step["line"]]
            made = request("terminal/create", {"sessionId": session, "command": prog, "args": rest})
            tid = (made.get("result") or {}).get("terminalId")
            if tid:
                request("terminal/wait_for_exit", {"sessionId": session, "terminalId": tid})
                request("terminal/output", {"sessionId": session, "terminalId": tid})
                request("terminal/release", {"sessionId": session, "terminalId": tid})
        elif "tool" in step:
            next_id[0] += 1
            call = "t%d" % next_id[0]
            update(session, {"sessionUpdate": "tool_call", "toolCallId": call, "title": step["tool"], "kind": "edit", "status": "pending"})
            update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "failed" if step.get("fail") else "completed"})
        elif "die" in step:
            sys.stderr.buffer.write(b"\x1b[2J\x1b]0;owned\x07\xff\xfe garbage\n" + step["die"].encode() + b"\n")
            sys.stderr.flush()
            os._exit(3)
        elif "ran" in step:
            title, output = step["ran"]
            next_id[0] += 1
            call = "t%d" % next_id[0]
            update(session, {"sessionUpdate": "tool_call", "toolCallId": call, "title": title, "kind": "execute", "status": "in_progress"})
            update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed",
                             "content": [{"type": "content", "content": {"type": "text", "text": output}}]})
        elif "think" in step:
            update(session, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": step["think"]}})
        elif "plan" in step:
            entries = [
                {"content": e, "priority": "medium", "status": "completed" if i == 0 else "pending"}
                for i, e in enumerate(step["plan"])
            ]
            update(session, {"sessionUpdate": "plan", "entries": entries})
        elif "wait_cancel" in step:
            cancelled.wait(60)
            stop = "cancelled"
            break
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "exit_after_turn" in step:
            leave = True
        elif "disk_write" in step:
            path, content = step["disk_write"]
            disk("disk_write", path, lambda: open(path, "w").write(content))
        elif "disk_read" in step:
            path = step["disk_read"]
            disk("disk_read", path, lambda: open(path).read())
        elif "symlink" in step:
            target, link = step["symlink"]
            disk("symlink", link, lambda: os.symlink(target, link))
        elif "detached_write" in step:
            path, content, delay = step["detached_write"]
            detached_write(path, content, delay)
        elif "editor_rpc" in step:
            editor_rpc(*step["editor_rpc"])
        elif "ignore_term" in step:
            pass  # done at the start: only the main thread may
        elif "write_timed" in step:
            path, n = step["write_timed"]
            times = []
            for i in range(n):
                content = ("x = %d\n" % i) * 128
                t = time.perf_counter()
                request("fs/write_text_file", {"sessionId": session, "path": where(session, path), "content": content}, quiet=True)
                times.append((time.perf_counter() - t) * 1000)
            log({"write_ms": times})
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}})
    if leave:
        os._exit(0)


def main():
    if any("ignore_term" in step for turn in SCRIPT for step in turn):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        log({"received": msg})
        if "method" not in msg:
            slot = pending.get(msg.get("id"))
            if slot:
                slot[1] = msg
                slot[0].set()
            continue
        method, rid, params = msg["method"], msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            log({"pid": os.getpid()})
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "fake-acp-agent", "version": "1.0.0"},
                "authMethods": [],
            }})
        elif method == "authenticate" and params.get("methodId") == args.login:
            logged_in.set()
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "authenticate":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no such login method"}})
        elif method == "session/new" and args.login and not logged_in.is_set():
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "Authentication required"}})
        elif method == "session/new":
            sid = "sess-%d" % (time.time_ns() % 1000000)
            cwds[sid] = params.get("cwd", "/")
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
        elif method == "session/prompt":
            threading.Thread(target=run_turn, args=(rid, params["sessionId"], params.get("prompt")), daemon=True).start()
        elif method == "session/cancel":
            cancelled.set()
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found: " + method}})


main()
