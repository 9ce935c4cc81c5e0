#!/usr/bin/env python3
"""Neovim in a real terminal (tmux) at 40, 80 and 100 x 24, driven as a
person drives it: a task by an ACP agent whose tool titles are 250
characters long, typed over at once; the proposal accepted with the
default key; a snapshot, the history window, a rollback dry run and a
rollback; a second proposal made conflicting by the user's own edit and
accepted anyway. The screen is read every 40 ms throughout: not one frame
may hold a hit-enter or more prompt, and the proposal's note must show its
accept and reject keys whole.

  CHIMERA_LIB=target/debug/libchimera.so tests/tui/test_terminal.py
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPTS = ("Press ENTER", "-- More --", "type command to continue")
LONG = "python3 -c 'import sys; " + "x = 1; " * 33 + "print(x)'"
CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


class Terminal:
    """A tmux session of its own (its own server socket) running one program."""

    def __init__(self, width, height, command, cwd, env):
        self.sock = tempfile.mktemp(prefix="chimera-tmux-")
        self.tmux = ["tmux", "-S", self.sock]
        sh(*self.tmux, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
           "-c", cwd, "env", *[f"{k}={v}" for k, v in env.items()], *command)
        self.frames = 0
        self.prompted = []
        self.stop = threading.Event()
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def screen(self):
        return sh(*self.tmux, "capture-pane", "-p", "-t", "t")

    def _watch(self):
        while not self.stop.is_set():
            try:
                screen = self.screen()
            except subprocess.CalledProcessError:
                return
            self.frames += 1
            if any(p in screen for p in PROMPTS):
                self.prompted.append(screen)
            time.sleep(0.04)

    def keys(self, *keys, literal=False):
        sh(*self.tmux, "send-keys", "-t", "t", *(["-l"] if literal else []), *keys)

    def type(self, text):
        """Types `text` literally, then Enter."""
        self.keys(text, literal=True)
        self.keys("Enter")

    def wait_for(self, what, pattern, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            screen = self.screen()
            found = re.search(pattern, screen)
            if found:
                return found
            time.sleep(0.05)
        screen = self.screen()
        # What Chimera said, whole, for whoever reads a failure from CI.
        self.keys("Escape")
        self.type(":Chimera log")
        time.sleep(1)
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen}\n"
                             f"and :Chimera log then:\n{self.screen()}")

    def close(self):
        self.stop.set()
        self.watcher.join(timeout=5)
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def scenario(width, nvim, lib, work):
    root = os.path.join(work, f"project{width}")
    agent_dir = os.path.join(work, f"agent{width}")
    home = os.path.join(work, f"home{width}")
    for d in (os.path.join(root, ".git"), agent_dir, home):
        os.makedirs(d)
    with open(os.path.join(root, "calc.py"), "w") as f:
        f.write(CALC)
    script = os.path.join(agent_dir, "script.json")
    with open(script, "w") as f:
        json.dump([
            [{"say": "Looking at add."}, {"tool": LONG}, {"tool": LONG + " again"}, {"sleep": 0.3},
             {"replace": ["calc.py", "return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub"]},
             {"say": "Fixed add so that it adds rather than subtracts, as the tests and the docstring say "
                     "it should; nothing else in the module changed."}],
            [{"tool": LONG}, {"replace": ["calc.py", "def sub(a, b):", "def sub(a, b):  # subtracts"]},
             {"say": "Said what sub does."}],
        ], f)
    init = os.path.join(work, f"init{width}.lua")
    with open(init, "w") as f:
        f.write(f"""
vim.opt.rtp:prepend({json.dumps(REPO)})
vim.cmd("runtime plugin/chimera.lua")
require("chimera").setup({{
  llm = {{ provider = "openai", url = "http://127.0.0.1:9/v1", model = "unused", max_retries = 0 }},
  agents = {{ external = {{ fake = {{
    command = {{ "python3", {json.dumps(REPO + "/tests/fake_acp_agent.py")}, "--script", {json.dumps(script)} }},
    writable = {{ {json.dumps(agent_dir)} }},
  }} }} }},
}})
""")
    env = {"HOME": home, "CHIMERA_LIB": lib, "TERM": "xterm-256color", "PATH": os.environ["PATH"]}
    term = Terminal(width, 24, [nvim, "-u", init, "calc.py"], root, env)
    try:
        term.wait_for("Neovim", r"def add")
        # A task, and at once the user goes on typing at the end of the file.
        term.type(":Chimera task --agent fake fix add")
        term.keys("G", "o")
        term.keys("# typed at once", literal=True)
        term.keys("Escape")
        term.wait_for("the proposal", r"Proposal \w+ ready", timeout=60)
        screen = term.screen()
        assert "# typed at once" in screen, "the keys typed while the agent worked went into the buffer:\n" + screen
        keys = "<Leader>a accept, <Leader>r reject" if width >= 80 else "<Leader>a/<Leader>r"
        assert keys in screen.split("Proposal")[0], "the note shows the keys whole:\n" + screen
        term.type(":Chimera snapshot before accepting")
        snap = term.wait_for("the snapshot", r"snapshot (\w+) taken").group(1)
        # Accepted with the default key, the cursor on the change.
        term.keys("g", "g", "j", "\\", "a")
        term.wait_for("the accept in the buffer", r"return a \+ b")
        term.type(":Chimera history")
        term.wait_for("the history window", snap)
        # A snapshot taken while the window is open shows there at once.
        term.type(":Chimera snapshot taken while looking")
        term.wait_for("the new snapshot in the open history window", r"\w+ .*taken while looking")
        term.keys("q")
        term.type(f":Chimera rollback --dry-run {snap}")
        term.wait_for("the dry run", r"(?i)dry run|would")
        term.keys("j", "k")  # the cursor moves: the answer closes
        term.type(f":Chimera rollback {snap}")
        term.wait_for("the rollback", r"def add\(a, b\):\n    return a - b")
        # A second proposal, made conflicting by the user's own edit.
        term.type(":Chimera task --agent fake comment sub")
        term.wait_for("the second proposal", r"Proposal \w+ ready", timeout=60)
        term.type(":5s/(a, b):/(a, b):  # mine/")
        term.wait_for("the conflict", r"CONFLICT", timeout=20)
        term.type(":Chimera accept")
        time.sleep(1.5)
        term.type(":Chimera log")
        term.wait_for("the log", r"chimera://log|Proposal")
        term.keys("q")
        # The dashboard with the HTTP API off says so on the screen.
        term.type(":Chimera dashboard")
        term.wait_for("why there is no dashboard", r"HTTP API is off", timeout=10)
        time.sleep(0.5)
    finally:
        term.close()
    assert term.frames > 50, f"the screen was read {term.frames} times"
    if term.prompted:
        raise AssertionError(f"{len(term.prompted)} frames at {width} columns held a prompt; the first:\n"
                             + term.prompted[0])
    return term.frames


def main():
    if not shutil.which("tmux"):
        sys.exit("tests/tui: tmux is missing (scripts/install-tmux.sh installs it)")
    nvim = sh(os.path.join(REPO, "scripts/install-nvim.sh")).strip()
    lib = os.environ.get("CHIMERA_LIB") or os.path.join(REPO, "target/debug/libchimera.so")
    work = tempfile.mkdtemp(prefix="chimera-tui-")
    failed = 0
    for width in (40, 80, 100):
        try:
            frames = scenario(width, nvim, lib, work)
            print(f"ok   {width} x 24: no prompt in {frames} screens; the note's keys whole")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {width} x 24: {e}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"{3 - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
