#!/usr/bin/env python3
"""The web dashboard in a real headless browser (Debian's chromium, driven
by Playwright), as a person uses it: open the address `chimera serve`
printed, watch a proposal made from a shell arrive live, read its diff,
accept it and see the file change on disk; reject with feedback; roll back
after a dry run; browse Remora nodes; the token is asked once, a wrong one
is refused, and an agent's text is never run as HTML.

Screenshots go to $CHIMERA_SCREENSHOTS (default: target/screenshots).

Usage: python3 tests/web/test_dashboard.py  (after `cargo build`)
"""
import json
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE / ".deps" / "browser"))
sys.path.insert(0, str(HERE / "tests"))
from chimera_project import BIN, Project, wait_for  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

SHOTS = Path(os.environ.get("CHIMERA_SCREENSHOTS", HERE / "target" / "screenshots"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

ORIGINAL = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
SCRIPT = [
    # Slow enough that the page is open and following before it lands.
    {"text": "```python\ndef add(a, b):\n    return a + b\n```", "chunk_delay": 0.05},
    {"text": "```python\ndef add(a, b):\n    return b + a\n```"},
    {"text": "```python\ndef add(a, b):\n    return (b + a)\n```"},
    {"text": "```python\ndef one():\n    return 10\n\n\ndef two():\n    return 20\n```"},
]
TWO = "def one():\n    return 1\n\n\ndef two():\n    return 2\n"
# The scripted ACP agent's script and log, outside the project.
ACP_STATE = Path(tempfile.mkdtemp(prefix="chimera-web-acp-"))
ACP_SCRIPT, ACP_LOG = ACP_STATE / "fake.json", ACP_STATE / "fake.log"


def agent_item(page, agent_id):
    return page.locator(f'#agents li[data-agent="{agent_id}"]')


def run(p, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    url = p.said["dashboard"]
    assert "#login=" in url, url
    token = json.loads((p.root / ".chimera" / "api.json").read_text())["token"]
    assert token not in url, url
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # The printed address pasted into a tab already showing the login form
    # (only the fragment changes: no reload): logged in, live, and the
    # token is gone from the address bar.
    page.goto(url.split("#")[0])
    expect(page.locator("#login")).to_be_visible()
    page.goto(url)
    expect(page.locator("#link")).to_have_text("live")
    assert "login" not in page.url and token not in page.url, page.url
    expect(page.locator("#root")).to_contain_text("proj")

    # A task typed in a shell arrives live; its proposal appears with it.
    agent_id = p.chimera("task", "--file", "calc.py", "fix", "add")
    item = agent_item(page, agent_id)
    expect(item).to_be_visible()
    expect(item.locator(".badge")).to_have_text("completed", timeout=30_000)
    # Its tokens (estimated: the fake model counts none), in the list and
    # in the detail, and the total over the agents.
    expect(item.locator(".tokens")).to_contain_text("≈")
    expect(page.locator("#agents-total")).to_contain_text("All agents: ≈")
    item.click()
    expect(page.locator("#agent dd").filter(has_text="(estimated)")).to_contain_text(" in, ")
    expect(page.locator(".diff .add")).to_have_text("+    return a + b")
    expect(page.locator(".diff .del")).to_have_text("-    return a - b")
    # The line above the hunk is shown with it, and the summary's
    # `backticked` names are code, not literal backticks.
    expect(page.locator(".diff .ctx").first).to_have_text(" def add(a, b):")
    summary = page.locator("#agent dd").filter(has_text="changed add")
    expect(summary.locator("code")).to_have_text("add")
    assert "`" not in summary.inner_text(), summary.inner_text()
    page.screenshot(path=str(SHOTS / "dashboard-proposal.png"), full_page=True)
    assert p.file() == ORIGINAL, "nothing is written before the accept"

    # Accept: the file changes on disk.
    page.locator("#accept").click()
    wait_for("the accepted file on disk", lambda: p.file() == FIXED)
    expect(item.locator(".badge")).to_have_text("accepted")
    page.screenshot(path=str(SHOTS / "dashboard-accepted.png"), full_page=True)

    # A task from the page; rejected with feedback, the agent tries again.
    page.fill("#task-text", "fix add <img src=x onerror=window.pwned=1>")
    page.fill("#task-file", "calc.py")
    page.click("#new-task button")
    second = page.locator("#agents li").first
    expect(second.locator(".badge")).to_have_text("completed", timeout=30_000)
    assert page.locator("#agents img").count() == 0, "an agent's text was run as HTML"
    assert page.evaluate("window.pwned") is None
    expect(page.locator("#agent h2")).to_have_text("fix add <img src=x onerror=window.pwned=1>")
    page.fill("#feedback", "put b first")
    page.click("#reject")
    expect(page.locator("#agent dd").filter(has_text="put b first")).to_be_visible(timeout=30_000)
    expect(second.locator(".badge")).to_have_text("completed", timeout=30_000)
    expect(page.locator(".diff .add")).to_have_text("+    return (b + a)")

    # Snapshots: a rollback is offered only after its dry run.
    page.click('button[data-tab="snapshots"]')
    row = page.locator("#snapshots tr").last
    rollback = row.locator("button.danger")
    expect(rollback).to_be_disabled()
    row.locator("text=Dry run").click()
    expect(page.locator("#rollback-report")).to_contain_text("calc.py")
    assert p.file() == FIXED, "a dry run changes nothing"
    page.screenshot(path=str(SHOTS / "dashboard-snapshots.png"), full_page=True)
    page.once("dialog", lambda d: d.accept())
    rollback.click()
    wait_for("the rollback on disk", lambda: p.file() == ORIGINAL)
    expect(page.locator("#rollback-report")).to_contain_text("Rolled back")

    # A proposal of two hunks: the second alone is accepted.
    page.click('button[data-tab="agents"]')
    page.fill("#task-text", "make them bigger")
    page.fill("#task-file", "two.py")
    page.click("#new-task button")
    expect(page.locator("#agents li").first.locator(".badge")).to_have_text("completed", timeout=30_000)
    heads = page.locator(".diff .hunk-head")
    expect(heads).to_have_count(2)
    # Each hunk with the lines around it, as :Chimera diff shows them.
    expect(page.locator(".diff pre").first.locator("span.ctx").first).to_be_visible()
    expect(heads.nth(1)).to_contain_text("hunk 2")
    heads.nth(1).locator("text=Accept hunk").click()
    wait_for("hunk 2 on disk", lambda: "return 20" in (p.root / "two.py").read_text())
    assert "return 1\n" in (p.root / "two.py").read_text(), "hunk 1 was accepted too"
    expect(page.locator(".diff .hunk-head")).to_have_count(1)

    # The effect log has the model calls.
    page.click('button[data-tab="effects"]')
    expect(page.locator("#effects tr").first).to_be_visible()
    page.select_option("#effect-kind", "llm")
    expect(page.locator("#effects tr td:nth-child(2)").first).to_have_text("llm")

    # Remora: a file's nodes, a node's callers, a message to it.
    p.chimera("remora", "enable")
    page.click('button[data-tab="nodes"]')
    calc = page.locator("#files li", has_text="calc.py")
    expect(calc).to_be_visible(timeout=20_000)
    calc.click()
    page.locator("#nodes li", has_text="add").click()
    expect(page.locator("#node h2")).to_have_text("function add")
    expect(page.locator("#node .neighbours")).to_contain_text("twice")
    expect(page.locator("#node pre.source")).to_contain_text("def add(a, b):")
    page.fill("#node input", "what do you return?")
    page.click("#node button[type=submit]")
    expect(page.locator("#node .log")).to_contain_text("HumanChatEvent")
    page.screenshot(path=str(SHOTS / "dashboard-nodes.png"), full_page=True)

    # The token is asked once: a new tab of the same browser needs none.
    again = context.new_page()
    again.goto(url.split("#")[0])
    expect(again.locator("#link")).to_have_text("live")
    expect(again.locator("#login")).to_be_hidden()

    # The login link worked once: another browser opening it is refused.
    thief = browser.new_context().new_page()
    thief.goto(url)
    expect(thief.locator("#login-error")).to_contain_text("used already")
    expect(thief.locator("#app")).to_be_hidden()

    # A browser without it asks, refuses a wrong one, takes the right one.
    fresh = browser.new_context().new_page()
    fresh.goto(url.split("#")[0])
    expect(fresh.locator("#login")).to_be_visible()
    fresh.fill("#token", "0" * 64)
    fresh.click("#login button")
    expect(fresh.locator("#login-error")).to_contain_text("token")
    fresh.screenshot(path=str(SHOTS / "dashboard-login.png"))
    fresh.fill("#token", token)
    fresh.click("#login button")
    expect(fresh.locator("#link")).to_have_text("live")
    expect(agent_item(fresh, agent_id)).to_be_visible()

    asked(p, page)
    assert not errors, f"the page threw: {errors}"


def post(p, path, body):
    """POST `body` to the API of `p`, as a script does."""
    req = urllib.request.Request(
        p.base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + p.token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=20) as res:
        return json.loads(res.read())


def asked(p, page):
    """An ACP agent asks to edit where its preset says no: the question
    reaches the page (no editor is open), with what the agent is doing
    now; Allow answers it, and the agent hears the answer. A question
    answered by another client leaves the page too."""
    page.click('.tab[data-tab="agents"]')
    agent_id = post(p, "/tasks", {"task": "fix add", "file": "calc.py", "agent": "fake", "capabilities": "readonly"})["id"]
    question = page.locator("#questions li")
    expect(question).to_contain_text("Edit calc.py", timeout=30_000)
    expect(question.locator("code")).to_have_text(agent_id)
    expect(agent_item(page, agent_id).locator(".progress")).to_contain_text("looking at calc.py")
    page.screenshot(path=str(SHOTS / "dashboard-question.png"), full_page=True)
    question.locator("button", has_text="Allow").click()
    # The second question is answered elsewhere (Neovim, a script): it
    # leaves the page all the same.
    second = page.locator("#questions li", has_text="Edit use.py")
    expect(second).to_be_visible(timeout=30_000)
    post(p, "/questions/" + second.get_attribute("data-question"), {"allow": False})
    expect(page.locator("#questions")).to_be_hidden()
    expect(agent_item(page, agent_id).locator(".badge")).not_to_have_text("running", timeout=30_000)
    expect(agent_item(page, agent_id).locator(".progress")).to_have_count(0)
    answers = [json.loads(line) for line in ACP_LOG.read_text().splitlines() if line.strip()]
    said = [a["answer"]["result"]["outcome"]["optionId"] for a in answers if a.get("answer_to") == "session/request_permission"]
    assert said == ["allow", "reject"], said


def main():
    assert BIN.exists(), f"{BIN} is missing: run `cargo build` first"
    assert CHROMIUM, "chromium is missing: run scripts/install-browser.sh"
    ACP_STATE.mkdir(parents=True, exist_ok=True)
    ACP_SCRIPT.write_text(
        json.dumps([[{"say": "looking at calc.py"}, {"permission": "Edit calc.py"}, {"permission": "Edit use.py"}, {"say": "Done."}]])
    )
    p = Project(
        {"calc.py": ORIGINAL, "two.py": TWO, "use.py": "from calc import add\n\n\ndef twice(x):\n    return add(x, x)\n"},
        SCRIPT,
        prefix="chimera-web-",
        config={
            "agents": {"external": {"fake": {
                "command": [sys.executable, str(HERE / "tests" / "fake_acp_agent.py"), "--script", str(ACP_SCRIPT), "--log", str(ACP_LOG)],
                "writable": [str(ACP_STATE)],
            }}},
            # What a preset refuses an ACP agent is asked of the human.
            "capabilities": {"ask": True},
        },
    )
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                run(p, browser)
            finally:
                browser.close()
    finally:
        p.close()
        shutil.rmtree(ACP_STATE, ignore_errors=True)
    print(f"dashboard: ok (screenshots in {SHOTS})")


if __name__ == "__main__":
    main()
