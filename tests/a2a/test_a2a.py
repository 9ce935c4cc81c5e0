#!/usr/bin/env python3
"""Chimera as an A2A agent, met by the official A2A SDK (a2a-sdk, protocol
0.3.0): `chimera serve` publishes its agent card (validated by the SDK's
types, which are generated from the spec's JSON schema) and answers the
SDK's client — message/send → tasks/get → completed with the proposal's
diff as the artifact, and the file untouched until the human accepts;
message/stream; tasks/cancel; nothing without the token.

Usage: python3 tests/a2a/test_a2a.py  (after `cargo build` and
scripts/install-a2a.sh)
"""
import asyncio
import json
import sys
import urllib.error
import urllib.request
import uuid
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE / ".deps" / "a2a"))
sys.path.insert(0, str(HERE / "tests"))
import httpx  # noqa: E402
from chimera_project import Project  # noqa: E402
from a2a.client import A2AClient  # noqa: E402
from a2a.types import (  # noqa: E402
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    MessageSendParams,
    Part,
    SendMessageRequest,
    SendStreamingMessageRequest,
    TaskIdParams,
    TaskQueryParams,
    TextPart,
)

ORIGINAL = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
SCRIPT = [
    {"text": "```python\ndef add(a, b):\n    return a + b\n```"},
    {"text": "```python\ndef add(a, b):\n    return b + a\n```"},
    # Slow: cancelled while it streams.
    {"text": "```python\ndef add(a, b):\n    return 0\n```", "chunk_delay": 1.0},
]


def message(text, task_id=None):
    return Message(
        role="user",
        message_id=uuid.uuid4().hex,
        parts=[Part(root=TextPart(text=text))],
        task_id=task_id,
    )


def status_code(url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


async def run(p):
    # The card: public, valid for the spec's types, pointing at /a2a.
    code, body = status_code(p.base + "/.well-known/agent-card.json")
    assert code == 200, code
    card = AgentCard.model_validate(json.loads(body))
    assert card.protocol_version == "0.3.0" and card.url == p.base + "/a2a", card
    assert card.capabilities.streaming and card.skills, card
    assert "bearer" in card.security_schemes, card
    # Nothing at /a2a without the token.
    ask = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}).encode()
    code, _ = status_code(p.base + "/a2a", ask, {"Content-Type": "application/json"})
    assert code == 401, code
    code, _ = status_code(p.base + "/a2a", ask, {"Content-Type": "application/json", "Authorization": "Bearer wrong"})
    assert code == 401, code

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {p.token}"}, timeout=30) as http:
        # The SDK's per-method JSON-RPC client (it calls it legacy, in
        # favour of a factory that hides which method goes out).
        warnings.simplefilter("ignore", DeprecationWarning)
        client = A2AClient(httpx_client=http, agent_card=card)
        # message/send: a task, blocking until the proposal is ready.
        sent = await client.send_message(
            SendMessageRequest(id="1", params=MessageSendParams(message=message("fix add in calc.py so it adds")))
        )
        task = sent.root.result
        assert task.status.state.value == "completed", task
        diff = task.artifacts[0].parts[1].root.text
        assert "+    return a + b" in diff, diff
        assert (p.root / "calc.py").read_text() == ORIGINAL, "nothing is applied before the human accepts"
        got = await client.get_task(GetTaskRequest(id="2", params=TaskQueryParams(id=task.id)))
        assert got.root.result.status.state.value == "completed"
        assert got.root.result.metadata["chimera"]["state"] == "completed"
        # The human accepts from the shell; the caller sees it.
        p.chimera("accept", task.id)
        assert (p.root / "calc.py").read_text() == FIXED
        got = await client.get_task(GetTaskRequest(id="3", params=TaskQueryParams(id=task.id)))
        assert got.root.result.metadata["chimera"]["state"] == "accepted"
        # Every call is an a2a effect.
        effects = json.loads(p.chimera("effects", "--kind", "a2a", "--json"))
        assert any(e["agent_id"] == task.id for e in effects), effects

        # message/stream: the task, its status changes, the artifact, a final status.
        events = []
        async for ev in client.send_message_streaming(
            SendStreamingMessageRequest(id="4", params=MessageSendParams(message=message("put b first in add")))
        ):
            events.append(ev.root.result)
        kinds = [e.kind for e in events]
        assert kinds[0] == "task" and kinds[-1] == "status-update" and events[-1].final, kinds
        assert "artifact-update" in kinds, kinds
        assert events[-1].status.state.value == "completed", events[-1]
        streamed = events[0].id
        p.chimera("reject", streamed)

        # tasks/cancel while it works.
        started = await client.send_message(
            SendMessageRequest(
                id="5",
                params=MessageSendParams(message=message("make add return 0"), configuration={"blocking": False}),
            )
        )
        working = started.root.result
        assert working.status.state.value in ("submitted", "working"), working
        cancelled = await client.cancel_task(CancelTaskRequest(id="6", params=TaskIdParams(id=working.id)))
        assert cancelled.root.result.status.state.value == "canceled", cancelled
        again = await client.cancel_task(CancelTaskRequest(id="7", params=TaskIdParams(id=working.id)))
        assert again.root.error.code == -32002, again
        missing = await client.get_task(GetTaskRequest(id="8", params=TaskQueryParams(id="nosuch")))
        assert missing.root.error.code == -32001, missing
    assert (p.root / "calc.py").read_text() == FIXED


def main():
    p = Project({"calc.py": ORIGINAL}, SCRIPT, prefix="chimera-a2a-")
    try:
        asyncio.run(run(p))
    finally:
        p.close()
    print("a2a: ok")


if __name__ == "__main__":
    main()
