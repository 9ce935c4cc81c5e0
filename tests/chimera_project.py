"""What the Python tests of the `chimera` binary share: a git project
whose options point at the scripted fake LLM server (tests/fake_llm.py),
`chimera serve` on it (its address and token), and the binary run there as
a person runs it.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("CHIMERA_BIN", HERE / "target" / "debug" / "chimera"))


def wait_for(what, check, limit=20.0):
    deadline = time.time() + limit
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Project:
    """`files` (path -> text) in a fresh git project, the fake LLM answering
    with `script` in order, and `chimera serve --port 0` on it (unless not
    `serve`: then a `chimera` command runs the core itself); `config` adds
    to the user's options."""

    def __init__(self, files, script, prefix="chimera-", config=None, serve=True):
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix))
        self.root = self.tmp / "proj"
        (self.root / ".git").mkdir(parents=True)
        for path, text in files.items():
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path).write_text(text)
        script_file = self.tmp / "script.json"
        script_file.write_text(json.dumps(script))
        port_file = self.tmp / "port"
        self.llm = subprocess.Popen(
            [sys.executable, str(HERE / "tests" / "fake_llm.py"), "--script", str(script_file), "--port-file", str(port_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = wait_for("the fake LLM", lambda: port_file.exists() and port_file.read_text().strip())
        # The user's own options (outside the project) name the model.
        (self.tmp / "cfg" / "chimera").mkdir(parents=True)
        (self.tmp / "cfg" / "chimera" / "config.json").write_text(
            json.dumps(
                {
                    "llm": {"provider": "openai", "url": f"http://127.0.0.1:{port}/v1", "model": "fake", "max_retries": 0},
                    "tests": {"command": "off"},
                    **(config or {}),
                }
            )
        )
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(self.tmp / "cfg"), XDG_DATA_HOME=str(self.tmp / "data"), NO_COLOR="1")
        self.serve = None
        if not serve:
            return
        self.serve = subprocess.Popen(
            [str(BIN), "serve", "--port", "0", "--json"],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        # What `chimera serve --json` printed: port, dashboard address.
        self.said = json.loads(self.serve.stdout.readline())
        self.base = f"http://127.0.0.1:{self.said['port']}"
        self.token = json.loads((self.root / ".chimera" / "api.json").read_text())["token"]

    def chimera(self, *args):
        out = subprocess.run([str(BIN), *args], cwd=self.root, env=self.env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"chimera {args}: {out.stderr}"
        return out.stdout.strip()

    def file(self, path="calc.py"):
        return (self.root / path).read_text()

    def close(self):
        if self.serve:
            self.serve.send_signal(signal.SIGINT)
            try:
                self.serve.wait(10)
            except subprocess.TimeoutExpired:
                self.serve.kill()
        self.llm.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)
