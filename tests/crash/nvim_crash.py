#!/usr/bin/env python3
"""Crash harness with a real Neovim: SIGKILL a headless Neovim at random
moments around an accept of a 10-file proposal, many times (every other
cycle, the moment the first file is renamed into place). After each
kill: every file is wholly old or wholly new, PRAGMA integrity_check is
ok, the lifecycle and the event log agree (accepted <=> an "accepted"
event <=> all files new on disk and in stable), and a restarted Neovim
recovers: a cut accept is put back whole (every file old, the proposal
there to review again), and accepting it completes the change.

  tests/crash/nvim_crash.py CYCLES   (CHIMERA_LIB: the library to load)
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = 10


def old(i):
    return f"# module {i}\n" * 400


def new(i):
    return f"# module {i}, changed by the agent\n" * 400


def watch_for_first_rename(root, timeout):
    sizes = [len(new(i)) for i in range(FILES)]
    paths = [os.path.join(root, f"m{i}.py") for i in range(FILES)]
    end = time.time() + timeout
    while time.time() < end:
        for p, size in zip(paths, sizes):
            try:
                if os.stat(p).st_size == size:
                    return
            except FileNotFoundError:
                pass


def main():
    cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    nvim = subprocess.run([os.path.join(REPO, "scripts/install-nvim.sh")], capture_output=True, text=True, check=True).stdout.strip()
    lib = os.environ.get("CHIMERA_LIB") or os.path.join(REPO, "target/debug/libchimera.so")
    work = tempfile.mkdtemp()
    program = "```python\nfor i in range(10):\n    p = f'm{i}.py'\n    write_file(p, read_file(p).replace(f'# module {i}\\n', f'# module {i}, changed by the agent\\n'))\nsubmit_result('all', [f'm{i}.py' for i in range(10)])\n```"
    with open(os.path.join(work, "script.json"), "w") as f:
        json.dump([{"text": program}], f)
    port_file = os.path.join(work, "port")
    server = subprocess.Popen([sys.executable, os.path.join(REPO, "tests/fake_llm.py"), "--script",
                               os.path.join(work, "script.json"), "--port-file", port_file])
    try:
        while not os.path.exists(port_file):
            time.sleep(0.05)
        url = "http://127.0.0.1:" + open(port_file).read()
        counts = {"before": 0, "during": 0, "after": 0}
        window = None  # how long an accept takes here, measured by cycle 0
        for cycle in range(cycles):
            root = tempfile.mkdtemp(dir=work)
            os.makedirs(os.path.join(root, ".git"))
            for i in range(FILES):
                with open(os.path.join(root, f"m{i}.py"), "w") as f:
                    f.write(old(i))
            go = os.path.join(root, ".go")
            env = dict(os.environ, CHIMERA_LIB=lib, CHIMERA_REPO=REPO, CRASH_LLM_URL=url, CRASH_GO=go)
            script = os.path.join(REPO, "tests/crash/nvim_accept.lua")
            proc = subprocess.Popen([nvim, "--headless", "--clean", "-l", script], cwd=root, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            line = proc.stdout.readline()
            if not line.startswith("ready"):
                proc.kill()
                raise SystemExit(f"cycle {cycle}: the agent did not complete: {line!r}")
            open(go, "w").close()
            proc.stdout.readline()  # "accepting": the accept starts now
            if window is None:
                # Calibration: let the first accept finish and time it.
                t0 = time.time()
                proc.stdout.readline()
                window = (time.time() - t0) * 1.3
            elif cycle % 2:
                time.sleep(random.uniform(0, window))
            else:
                # Aim at the narrow window between the renames and the
                # store's commit: kill as soon as a file has its new size.
                watch_for_first_rename(root, window * 3)
            proc.send_signal(signal.SIGKILL)
            proc.wait()

            texts = []
            for i in range(FILES):
                t = open(os.path.join(root, f"m{i}.py")).read()
                assert t in (old(i), new(i)), f"cycle {cycle}: m{i}.py is half-written"
                texts.append(t == new(i))
            db = sqlite3.connect(os.path.join(root, ".chimera/chimera.db"))
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", f"cycle {cycle}"
            state = db.execute("SELECT state FROM agents WHERE id = 'crash01'").fetchone()[0]
            accepted_event = db.execute("SELECT count(*) FROM events WHERE agent_id = 'crash01' AND kind = 'accepted'").fetchone()[0]
            stable = {p: bytes(d).decode() for p, d in db.execute(
                "SELECT s.path, b.data FROM stable s JOIN blobs b ON b.hash = s.hash")}
            db.close()
            if state == "accepted":
                assert all(texts), f"cycle {cycle}: accepted but a file is old"
                assert accepted_event == 1, f"cycle {cycle}: accepted without its event"
                assert all(stable[f"m{i}.py"] == new(i) for i in range(FILES)), f"cycle {cycle}: stable is old"
                counts["after"] += 1
            else:
                assert state == "completed", f"cycle {cycle}: state {state}"
                assert accepted_event == 0, f"cycle {cycle}: event without the accept"
                assert all(stable[f"m{i}.py"] == old(i) for i in range(FILES)), f"cycle {cycle}: stable moved without the accept"
                counts["during" if any(texts) else "before"] += 1
                leftovers = [n for n in os.listdir(root) if n.endswith(".tmp")]
                # Restart: a cut accept is put back whole before anything
                # else; the proposal is there to review again.
                env["CRASH_RECOVER"] = "1"
                env["CRASH_RECOVER_ONLY"] = "1"
                out = subprocess.run([nvim, "--headless", "--clean", "-l", script], cwd=root, env=env,
                                     capture_output=True, text=True, timeout=60).stdout.strip()
                del env["CRASH_RECOVER_ONLY"]
                assert out.endswith("completed"), f"cycle {cycle}: after the restart {out!r}"
                for i in range(FILES):
                    assert open(os.path.join(root, f"m{i}.py")).read() == old(i), \
                        f"cycle {cycle}: m{i}.py is still new after the restart: not wholly before"
                assert not [n for n in os.listdir(os.path.join(root, ".chimera")) if n.startswith("intent-")], \
                    f"cycle {cycle}: the journal was left"
                # Accepting it again completes it.
                out = subprocess.run([nvim, "--headless", "--clean", "-l", script], cwd=root, env=env,
                                     capture_output=True, text=True, timeout=60).stdout.strip()
                assert out.endswith("accepted"), f"cycle {cycle}: recovery ended {out!r}"
                for i in range(FILES):
                    assert open(os.path.join(root, f"m{i}.py")).read() == new(i), f"cycle {cycle}: m{i}.py after recovery"
                assert not [n for n in os.listdir(root) if n.endswith(".tmp") and n.startswith(".m")], \
                    f"cycle {cycle}: temporary files of the killed accept were left: {leftovers}"
            shutil.rmtree(root, ignore_errors=True)
        print(f"Neovim crash harness: {cycles} cycles, 0 failures; killed before any file was replaced: "
              f"{counts['before']}, between the renames and the commit: {counts['during']}, after the commit: {counts['after']}")
    finally:
        server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
