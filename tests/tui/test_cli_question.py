#!/usr/bin/env python3
"""`chimera task` in a real terminal (tmux, 80 x 24) with no core running:
the command is the agent's core, and with `capabilities.ask` it asks the
person at the terminal what the preset would refuse an ACP agent. The
question shows, `y` answers it, the agent hears `allow`; a second run
answered `n` (the default) is refused. With stdin not a terminal (a
script), nobody is asked and the preset decides at once.

  tests/tui/test_cli_question.py     (after `cargo build`)
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from chimera_project import BIN, HERE, Project, wait_for  # noqa: E402

CALC = "def add(a, b):\n    return a - b\n"
QUESTION = "Allow it? [y/N]"


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


class Terminal:
    """A tmux server of its own running a shell at 80 x 24."""

    def __init__(self, cwd):
        self.sock = tempfile.mktemp(prefix="chimera-tmux-")
        self.tmux = ["tmux", "-S", self.sock]
        sh(*self.tmux, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "80", "-y", "24", "-c", str(cwd), "sh")

    def screen(self):
        return sh(*self.tmux, "capture-pane", "-p", "-J", "-S", "-200", "-t", "t")

    def type(self, text, enter=True):
        sh(*self.tmux, "send-keys", "-t", "t", "-l", text)
        if enter:
            sh(*self.tmux, "send-keys", "-t", "t", "Enter")

    def close(self):
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def ended(screen):
    """How many of the commands typed have ended (their `exit=N` line)."""
    return sum(1 for line in screen.splitlines() if line.startswith("exit="))


def answers(log):
    said = []
    for line in log.read_text().splitlines() if log.exists() else []:
        e = json.loads(line)
        if e.get("answer_to") == "session/request_permission":
            said.append(e["answer"]["result"]["outcome"]["optionId"])
    return said


def main():
    assert BIN.exists(), f"{BIN} is missing: run `cargo build` first"
    state = Path(tempfile.mkdtemp(prefix="chimera-cli-ask-"))
    script, log = state / "fake.json", state / "fake.log"
    script.write_text(json.dumps([[{"say": "looking at calc.py"}, {"permission": "Edit calc.py"}, {"say": "Done."}]]))
    p = Project(
        {"calc.py": CALC},
        [{"text": "unused"}],
        prefix="chimera-cli-ask-",
        serve=False,
        config={
            "agents": {"external": {"fake": {
                "command": [sys.executable, str(HERE / "tests" / "fake_acp_agent.py"), "--script", str(script), "--log", str(log)],
                "writable": [str(state)],
            }}},
            "capabilities": {"preset": "readonly", "ask": True},
        },
    )
    term = Terminal(p.root)
    try:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in p.env.items() if k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "NO_COLOR", "PATH", "HOME"))
        task = f"env {env} {shlex.quote(str(BIN))} task --agent fake --file calc.py 'fix add'; echo exit=$?"

        # Asked, and allowed with `y`.
        term.type(task)
        screen = wait_for("the question on the terminal", lambda: QUESTION in term.screen() and term.screen(), 30)
        assert answers(log) == [], "the agent was answered before the person was asked"
        assert "asks permission: " in screen and "calc.py" in screen, screen
        term.type("y")
        wait_for("the command's end", lambda: ended(term.screen()) == 1, 30)
        assert answers(log) == ["allow"], (answers(log), term.screen())

        # Asked again, and Enter alone refuses.
        term.type(task)
        wait_for("the second question", lambda: term.screen().count(QUESTION) == 2, 30)
        term.type("")
        wait_for("the second command's end", lambda: ended(term.screen()) == 2, 30)
        assert answers(log) == ["allow", "reject"], answers(log)

        # A script (stdin not a terminal) is not asked: refused at once.
        started = time.time()
        out = subprocess.run([str(BIN), "task", "--agent", "fake", "--file", "calc.py", "fix add"], cwd=p.root, env=p.env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert QUESTION not in out.stderr, out.stderr
        assert time.time() - started < 30, "a script waited for an answer"
        assert answers(log) == ["allow", "reject", "reject"], answers(log)
    finally:
        term.close()
        p.close()
    print("cli question: ok")


if __name__ == "__main__":
    main()
