#!/usr/bin/env python3
"""A project of N files, from small to monorepo size, measured from the
`chimera` command as a person runs it (no core running, so the first task
pays for the import), each size beside git committing the same tree:

  first task -> proposal, second task, the first accept (which reads every
  file the tasks left unread), peak RSS of each, `.chimera/`'s size; then
  a task through a running core (`chimera serve`, as Neovim's is), once
  its start's work is done: what a person's later tasks cost in the editor,
  and that core's peak RSS (its Remora index in memory)

Files are ~2 KB of Python, 100 to a folder. The model is a scripted one on
127.0.0.1 (tests/fake_llm.py) that edits the task's file, so what grows
with N is Chimera's own cost. The figure that matters is the growth from
the smallest size to the largest, measured in the same run (issue 52: 40x
the files may cost the first task at most 3x, a later task at most 2x,
memory at most 2x).

Usage: scripts/bench_monorepo.py CHIMERA_BIN [N ...]   (default 1500 15000 60000)
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

HERE = Path(__file__).resolve().parent.parent

MODULE = '''"""Module {i} of package {p}."""

import os


class Record{i}:
    def __init__(self, name, size):
        self.name = name
        self.size = size

    def describe(self):
        return f"{{self.name}} ({{self.size}} bytes)"

    def grow(self, by):
        self.size += by
        return self.size


def load_{i}(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def total_{i}(records):
    return sum(r.size for r in records)


def largest_{i}(records):
    best = None
    for r in records:
        if best is None or r.size > best.size:
            best = r
    return best


def names_{i}(records):
    return sorted(r.name for r in records)


def under_{i}(root):
    out = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            out.append(os.path.join(dirpath, name))
    return out


def describe_all_{i}(records):
    return "\\n".join(r.describe() for r in records)
'''

PROGRAM = (
    "```python\n"
    "src = read_file('pkg0/m0.py')\n"
    "write_file('pkg0/m0.py', src.replace('def total_0(records):\\n', "
    "'def total_0(records):\\n    \"\"\"The records\\' total size.\"\"\"\\n'))\n"
    "submit_result('docstring', ['pkg0/m0.py'])\n"
    "```"
)


def make_tree(root: Path, n: int) -> None:
    for i in range(n):
        p = i // 100
        folder = root / f"pkg{p}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
            (folder / "__init__.py").write_text("")
        (folder / f"m{i % 100}.py").write_text(MODULE.format(i=i % 100, p=p))


def run(cmd, cwd=None, env=None):
    """Runs `cmd`; its wall time in seconds, peak RSS in MB and output.
    Its output goes to files, not pipes: a child that says more than a
    pipe holds would wait forever for a reader that waits for it to end."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        said, complained = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{said}\n{complained}")
    return took, usage.ru_maxrss / 1024, said


def proposed(chimera: str, root: Path, agent: str, env: dict) -> None:
    """Fails unless `agent` proposed the docstring (a task that failed
    fast must not pass for a fast one)."""
    _, _, diff = run([chimera, "diff", "--root", str(root), agent], env=env)
    if "The records' total size." not in diff:
        raise SystemExit(f"agent {agent} proposed no docstring:\n{diff}")


def cpu_ticks(pid: int) -> int:
    """The CPU time process `pid` has used so far, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(pid: int, limit_s: float = 300) -> None:
    """Waits until process `pid` has used no CPU for half a second (a core
    that indexes the project as it starts has done so)."""
    end = time.monotonic() + limit_s
    last = cpu_ticks(pid)
    while time.monotonic() < end:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if now == last:
            return
        last = now
    raise SystemExit(f"the core (pid {pid}) was still busy after {limit_s:.0f} s")


def peak_rss_mb(pid: int) -> float:
    """The most memory process `pid` has held so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def through_core(chimera: str, root: Path, llm: list, env: dict) -> tuple:
    """The median time of three tasks through a running core (`chimera
    serve`), each from `chimera task` to `chimera wait`'s answer, once the
    core has done its start's work (import, index); and the core's peak
    memory by then (Neovim's core holds the same)."""
    serve = subprocess.Popen([chimera, "serve", "--root", str(root), *llm], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Serving once `status` names it: a task sent before would start
        # a core of its own, and the server would stop.
        for _ in range(600):
            _, _, said = run([chimera, "status", "--root", str(root), "--json"], env=env)
            if (json.loads(said).get("core") or {}).get("pid") == serve.pid:
                break
            if serve.poll() is not None:
                raise SystemExit(f"chimera serve stopped ({serve.returncode})")
            time.sleep(0.05)
        else:
            raise SystemExit("chimera serve did not start serving within 30 s")
        task = [chimera, "task", "--root", str(root), "--file", "pkg0/m0.py", *llm,
                "--mode", "code", "add a docstring to total_0"]
        # The first waits for the import; then the index is built.
        _, _, agent = run(task, env=env)
        run([chimera, "wait", "--root", str(root), agent.strip()], env=env)
        wait_idle(serve.pid)
        took = []
        for _ in range(3):
            start = time.perf_counter()
            _, _, agent = run(task, env=env)
            run([chimera, "wait", "--root", str(root), agent.strip()], env=env)
            took.append(time.perf_counter() - start)
            proposed(chimera, root, agent.strip(), env)
        return sorted(took)[1], peak_rss_mb(serve.pid)
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@b", "-c", "user.name=bench", "-c", "commit.gpgsign=false", *args],
        cwd=root, check=True, stdout=subprocess.DEVNULL,
    )


def measure(chimera: str, n: int, url: str, env: dict) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"chimera-mono-{n}-"))
    try:
        ours, theirs = work / "ours", work / "theirs"
        make_tree(ours, n)
        make_tree(theirs, n)
        (ours / ".git").mkdir()
        git(theirs, "init", "-q")
        start = time.perf_counter()
        git(theirs, "add", "-A")
        git(theirs, "commit", "-q", "-m", "initial")
        git_s = time.perf_counter() - start
        # A project at rest, as a person's is: the trees just written are
        # on the disk before the clock starts, not still being written
        # back while the first task runs.
        os.sync()
        llm = ["--llm-provider", "openai", "--llm-url", url, "--llm-model", "fake-model"]
        task = [chimera, "task", "--root", str(ours), "--file", "pkg0/m0.py", *llm,
                "--mode", "code", "add a docstring to total_0"]
        first, first_rss, agent = run(task, env=env)
        proposed(chimera, ours, agent.strip(), env)
        second, second_rss, agent = run(task, env=env)
        proposed(chimera, ours, agent.strip(), env)
        # The first accept snapshots the project, so it reads every file
        # the tasks left unread (a core that lives on has read them by then).
        accept, accept_rss, _ = run([chimera, "accept", "--root", str(ours), agent.strip()], env=env)
        if "The records' total size." not in (ours / "pkg0/m0.py").read_text():
            raise SystemExit(f"the accept of {agent.strip()} wrote nothing")
        served, core_rss = through_core(chimera, ours, llm, env)
        return {
            "files": n, "first_s": first, "second_s": second, "accept_s": accept,
            "served_s": served, "core_rss_mb": core_rss,
            "rss_mb": max(first_rss, second_rss, accept_rss), "store_mb": size_mb(ours / ".chimera"),
            "git_s": git_s,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    chimera = str(Path(sys.argv[1]).resolve())
    sizes = [int(a) for a in sys.argv[2:]] or [1500, 15000, 60000]
    scratch = Path(tempfile.mkdtemp(prefix="chimera-mono-llm-"))
    script, port_file = scratch / "script.json", scratch / "port"
    script.write_text(json.dumps([{"text": PROGRAM}]))
    llm = subprocess.Popen([sys.executable, str(HERE / "tests/fake_llm.py"), "--script", str(script),
                            "--port-file", str(port_file)])
    try:
        for _ in range(100):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        # A fresh home: no configuration, cache or agent of the person
        # running the bench changes what is measured.
        home = scratch / "home"
        home.mkdir()
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                   XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"))
        rows = [measure(chimera, n, url, env) for n in sizes]
    finally:
        llm.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    base = rows[0]
    for r in rows:
        grow = r["files"] / base["files"]
        print(
            f"monorepo {r['files']} files: first task {r['first_s']:.2f} s "
            f"({r['first_s'] / base['first_s']:.1f}x), second {r['second_s']:.2f} s "
            f"({r['second_s'] / base['second_s']:.1f}x), first accept {r['accept_s']:.2f} s "
            f"({r['accept_s'] / base['accept_s']:.1f}x), a task through a running core "
            f"{r['served_s']:.2f} s ({r['served_s'] / base['served_s']:.1f}x), "
            f"the running core's peak RSS {r['core_rss_mb']:.0f} MB "
            f"({r['core_rss_mb'] / base['core_rss_mb']:.1f}x), "
            f"peak RSS {r['rss_mb']:.0f} MB "
            f"({r['rss_mb'] / base['rss_mb']:.1f}x), .chimera {r['store_mb']:.0f} MB; "
            f"git add -A && git commit {r['git_s']:.2f} s "
            f"({r['git_s'] / base['git_s']:.1f}x); {grow:.0f}x the files "
            f"(targets at 40x: first <= 3x, second <= 2x, RSS <= 2x)"
        )


if __name__ == "__main__":
    main()
