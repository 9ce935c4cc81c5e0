//! "auto" tests run in the project's own environment, in the languages
//! whose own tool runs them: an npm project's `test` script with its
//! `node_modules`, a Cargo crate's `cargo test` — each made as a user
//! makes it, the `chimera` binary run as a person runs it against the
//! scripted fake LLM server. A correct fix is proposed with its tests
//! passed, a wrong one is never called passing, a broken environment is
//! said; and the tests, the project's own code, reach nothing of the
//! user's.

mod support;

use std::path::Path;

use support::{fix_add, project};

/// The agent a `chimera task` about `file` ends as, run from a plain
/// shell whose cache folder is `cache`.
fn task(p: &support::Project, file: &str, cache: &Path) -> serde_json::Value {
    p.project_options(serde_json::json!({"tests": {"command": "auto"}}));
    let out = p
        .command(&["task", "--file", file, "fix", "add"])
        .env("XDG_CACHE_HOME", cache)
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    p.agent_of(&out)
}

/// `chimera status --tests`, with `cache` as the cache folder: its line
/// about the tests as the project is now.
fn tests_now(p: &support::Project, cache: &Path) -> String {
    let out = p
        .command(&["status", "--tests"])
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("now: "))
        .unwrap_or(&text)
        .to_owned()
}

fn summary(agent: &serde_json::Value) -> String {
    agent["agent"]["summary"].as_str().unwrap_or("").to_owned()
}

/// An npm project as `npm init` and `npm install` leave it: `calc.js`
/// with a bug, `node --test` tests that import a package from its
/// `node_modules` (ignored by git, so never in the agent's view), a
/// lockfile, and a `.env`. The tests check, as they run, that the
/// project's real folder, its `.env` and the user's home are out of
/// reach and that `node_modules` cannot be written.
fn npm_project(p: &support::Project, with_package: bool) {
    p.write(
        "calc.js",
        "function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n",
    );
    p.write(
        "package.json",
        r#"{"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
    );
    p.write(
        "package-lock.json",
        r#"{"name": "calc", "lockfileVersion": 3, "packages": {}}"#,
    );
    p.write(".gitignore", "node_modules/\n");
    p.write(".env", "API_KEY=SECRET_VALUE_42\n");
    if with_package {
        p.write(
            "node_modules/twice/index.js",
            "module.exports = (x) => x * 2;\n",
        );
        p.write(
            "node_modules/twice/package.json",
            r#"{"name": "twice", "main": "index.js"}"#,
        );
    }
    let root = p.root.display().to_string();
    let home = std::env::var("HOME").unwrap();
    p.write(
        "test/calc.test.js",
        &format!(
            r#"const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const twice = require('twice');
const {{ add }} = require('../calc');

test('adds', () => {{
  assert.strictEqual(add(2, 3), 5);
}});

test('adds twice', () => {{
  assert.strictEqual(twice(add(1, 1)), 4);
}});

test('reaches nothing of the user', () => {{
  assert.throws(() => fs.readFileSync({env:?}));
  assert.throws(() => fs.readdirSync({root:?}));
  assert.throws(() => fs.readFileSync({other:?}));
  assert.throws(() => fs.readdirSync({home:?}));
  assert.throws(() => fs.writeFileSync(require.resolve('twice'), 'pwned'));
}});
"#,
            env = format!("{root}/.env"),
            other = another_project(p),
        ),
    );
}

/// A file of another project of the user's, beside this one: what no
/// test of this project may read.
fn another_project(p: &support::Project) -> String {
    let other = p.root.parent().unwrap().join("other-project/notes.txt");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "another project's notes\n").unwrap();
    other.display().to_string()
}

#[test]
fn an_npm_projects_test_script_passes_a_correct_fix_reading_its_node_modules() {
    let p = project(&[
        serde_json::json!({"text": "```javascript\nfunction add(a, b) {\n  return a + b;\n}\n```"}),
    ]);
    npm_project(&p, true);
    let cache = p.root.parent().unwrap().join("cache");
    let agent = task(&p, "calc.js", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains("tests passed: 3 passed, 0 failed"),
        "{agent}"
    );
    assert_eq!(
        tests_now(&p, &cache),
        "failing before any change: 1 passed, 2 failed (adds, adds twice)"
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("node_modules/twice/index.js")).unwrap(),
        "module.exports = (x) => x * 2;\n"
    );
    let status = p.ok(&["status"]);
    assert!(
        status.contains("tests     auto: package.json's test script `node --test`, with npm (package-lock.json)"),
        "{status}"
    );
}

#[test]
fn a_wrong_fix_the_npm_tests_reject_is_never_called_passing() {
    let wrong =
        serde_json::json!({"text": "```javascript\nfunction add(a, b) {\n  return a * b;\n}\n```"});
    let p = project(&[wrong.clone(), wrong.clone(), wrong.clone(), wrong]);
    npm_project(&p, true);
    p.project_options(serde_json::json!({"tests": {"command": "auto"}}));
    let out = p
        .command(&["task", "--file", "calc.js", "fix", "add"])
        .env("XDG_CACHE_HOME", p.root.parent().unwrap().join("cache"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("none of 4 answers fixed a failing test") && !err.contains("tests passed"),
        "{err}"
    );
    // The model was shown the failing test by name.
    let saw = p.model_saw();
    assert!(
        saw.contains("not ok 1 - adds") && saw.contains("-1 !== 5"),
        "the model saw no failure: {saw}"
    );
}

#[test]
fn an_npm_project_without_its_packages_proposes_the_fix_and_says_what_to_install() {
    let p = project(&[
        serde_json::json!({"text": "```javascript\nfunction add(a, b) {\n  return a + b;\n}\n```"}),
    ]);
    npm_project(&p, false);
    let cache = p.root.parent().unwrap().join("cache");
    let agent = task(&p, "calc.js", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains("tests could not run: `twice` is not installed for the project — install it: `npm install -D twice`"),
        "{agent}"
    );
    assert_eq!(
        tests_now(&p, &cache),
        "cannot run: `twice` is not installed for the project — install it: `npm install -D twice`"
    );
}

/// A Cargo crate as `cargo new` makes it, with a bug in `add`, its tests
/// beside it, and the user's own `cargo test` run once (its `target/`,
/// which Chimera's build starts from and never writes). A test checks,
/// as it runs, that the project's real folder, the user's home and the
/// user's `target/` are out of reach.
fn cargo_project(p: &support::Project) {
    let root = p.root.display().to_string();
    let home = std::env::var("HOME").unwrap();
    p.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    p.write(".gitignore", "/target\n");
    p.write(
        "src/lib.rs",
        &format!(
            r#"pub fn add(a: i64, b: i64) -> i64 {{
    a - b
}}

#[cfg(test)]
mod tests {{
    use super::*;

    #[test]
    fn adds() {{
        assert_eq!(add(2, 3), 5);
    }}

    #[test]
    fn reaches_nothing_of_the_user() {{
        assert!(std::fs::read_dir({root:?}).is_err());
        assert!(std::fs::read({other:?}).is_err());
        assert!(std::fs::read_dir({home:?}).is_err());
        assert!(std::fs::write({target:?}, "pwned").is_err());
    }}
}}
"#,
            target = format!("{root}/target/debug/pwned"),
            other = another_project(p),
        ),
    );
    let ok = std::process::Command::new("cargo")
        .args(["build", "--offline", "--tests", "-q"])
        .current_dir(&p.root)
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .unwrap();
    assert!(ok.success(), "the user's own cargo build");
}

#[test]
fn a_cargo_crates_tests_pass_a_correct_fix_built_in_chimeras_own_target() {
    let p = project(&[
        serde_json::json!({"text": "```rust\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n```"}),
    ]);
    cargo_project(&p);
    let cache = p.root.parent().unwrap().join("cache");
    let before: Vec<_> = walk(&p.root.join("target"));
    p.project_options(serde_json::json!({"tests": {"command": "auto"}}));
    assert_eq!(
        tests_now(&p, &cache),
        "failing before any change: 1 passed, 1 failed (adds)"
    );
    let agent = task(&p, "src/lib.rs", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains("tests passed: 2 passed, 0 failed"),
        "{agent}"
    );
    assert_eq!(
        walk(&p.root.join("target")),
        before,
        "the user's target/ changed"
    );
    assert!(
        cache.join("chimera/build").is_dir(),
        "no build cache of Chimera's own"
    );
    let status = p.ok(&["status"]);
    assert!(
        status.contains("tests     auto: cargo test of Cargo.toml"),
        "{status}"
    );
}

/// Every file under `dir` with its length and modification time.
fn walk(dir: &Path) -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), m.len(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_rust_file_with_no_manifest_says_that_no_test_ran_and_how_to_set_one() {
    let p = project(&[
        serde_json::json!({"text": "```rust\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n```"}),
    ]);
    p.write(
        "lib.rs",
        "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n",
    );
    let cache = p.root.parent().unwrap().join("cache");
    let agent = task(&p, "lib.rs", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent)
            .contains("tests could not run: nothing here says how this project's Rust tests run")
            && summary(&agent).contains("set tests.command"),
        "{agent}"
    );
}

/// A Go module as `go mod init` makes it, with a bug in `Add` and its
/// test beside it, which checks as it runs that the project's real
/// folder and the user's home are out of reach; `go` from the project's
/// scripts (the official build, from PyPI), first on the user's `PATH`.
fn go_project(p: &support::Project) -> String {
    let root = p.root.display().to_string();
    let home = std::env::var("HOME").unwrap();
    p.write("go.mod", "module example.com/calc\n\ngo 1.22\n");
    p.write(
        "calc/calc.go",
        "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
    );
    p.write(
        "calc/calc_test.go",
        &format!(
            "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {{\n\tif got := Add(2, 3); got != 5 {{\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}}\n}}\n\nfunc TestReachesNothingOfTheUser(t *testing.T) {{\n\tfor _, dir := range []string{{{root:?}, {home:?}}} {{\n\t\tif _, err := os.ReadDir(dir); err == nil {{\n\t\t\tt.Fatalf(\"read %s\", dir)\n\t\t}}\n\t}}\n}}\n"
        ),
    );
    let bin = std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-go.sh"),
    )
    .output()
    .unwrap();
    assert!(bin.status.success(), "scripts/install-go.sh");
    let bin = String::from_utf8(bin.stdout).unwrap();
    format!("{}:{}", bin.trim(), std::env::var("PATH").unwrap())
}

#[test]
fn a_go_modules_tests_pass_a_correct_fix_offline_with_chimeras_own_build_cache() {
    let p = project(&[
        serde_json::json!({"text": "```go\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n```"}),
    ]);
    let path = go_project(&p);
    let cache = p.root.parent().unwrap().join("cache");
    p.project_options(serde_json::json!({"tests": {"command": "auto"}}));
    let now = p
        .command(&["status", "--tests"])
        .env("XDG_CACHE_HOME", &cache)
        .env("PATH", &path)
        .output()
        .unwrap();
    let now = String::from_utf8_lossy(&now.stdout);
    assert!(
        now.contains("auto: go test ./... in the module of go.mod"),
        "{now}"
    );
    assert!(
        now.contains("now: failing before any change: FAIL example.com/calc/calc (TestAdd)"),
        "{now}"
    );
    let out = p
        .command(&["task", "--file", "calc/calc.go", "fix", "Add"])
        .env("XDG_CACHE_HOME", &cache)
        .env("PATH", &path)
        .output()
        .unwrap();
    let agent = p.agent_of(&out);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    let said = summary(&agent);
    assert!(
        said.contains("tests passed: ok example.com/calc/calc"),
        "{agent}"
    );
    assert!(
        cache.join("chimera/build").is_dir(),
        "no build cache of Chimera's own"
    );
}

/// Copies the folders and files under `from` to `to` (links as links).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (kind, target) = (e.file_type().unwrap(), to.join(e.file_name()));
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_vitest_project_passes_a_correct_fix_with_its_node_modules_read_only() {
    let p = project(&[
        serde_json::json!({"text": "```javascript\nexport function add(a, b) {\n  return a + b;\n}\n```"}),
    ]);
    let vitest = std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-vitest.sh"),
    )
    .output()
    .unwrap();
    assert!(vitest.status.success(), "scripts/install-vitest.sh");
    let installed = String::from_utf8(vitest.stdout).unwrap();
    copy_tree(
        &Path::new(installed.trim()).join("node_modules"),
        &p.root.join("node_modules"),
    );
    p.write(
        "package.json",
        r#"{"name": "calc", "type": "module", "scripts": {"test": "vitest run"}}"#,
    );
    p.write(
        "package-lock.json",
        r#"{"name": "calc", "lockfileVersion": 3}"#,
    );
    p.write(".gitignore", "node_modules/\n");
    p.write(
        "src/calc.js",
        "export function add(a, b) {\n  return a - b;\n}\n",
    );
    p.write(
        "src/calc.test.js",
        "import { describe, test, expect } from 'vitest';\nimport { add } from './calc.js';\n\ndescribe('math', () => {\n  test('adds', () => {\n    expect(add(2, 3)).toBe(5);\n  });\n  test('adds zero', () => {\n    expect(add(0, 0)).toBe(0);\n  });\n});\n",
    );
    let cache = p.root.parent().unwrap().join("cache");
    p.project_options(serde_json::json!({"tests": {"command": "auto"}}));
    assert_eq!(
        tests_now(&p, &cache),
        "failing before any change: 1 passed, 1 failed (src/calc.test.js > math > adds)"
    );
    let agent = task(&p, "src/calc.js", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains("tests passed: 2 passed, 0 failed"),
        "{agent}"
    );
    assert!(
        !p.root.join("node_modules/.vite").exists(),
        "the run wrote into the project's node_modules"
    );
}

#[test]
fn a_fix_whose_test_runner_is_not_installed_is_proposed_saying_what_to_install() {
    // `npm install` never ran: the script's `vitest` is nowhere. The task
    // asks for a fix, so it would start from the failing run — which says
    // nothing of the code.
    let p = project(&[
        serde_json::json!({"text": "```javascript\nexport function add(a, b) {\n  return a + b;\n}\n```"}),
    ]);
    p.write(
        "package.json",
        r#"{"name": "calc", "type": "module", "scripts": {"test": "vitest run"}}"#,
    );
    p.write(
        "src/calc.js",
        "export function add(a, b) {\n  return a - b;\n}\n",
    );
    p.write(
        "src/calc.test.js",
        "import { test, expect } from 'vitest';\nimport { add } from './calc.js';\n\ntest('adds', () => {\n  expect(add(2, 3)).toBe(5);\n});\n",
    );
    let cache = p.root.parent().unwrap().join("cache");
    let agent = task(&p, "src/calc.js", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains("tests could not run: `vitest` is not installed for the project — install it: `npm install -D vitest`"),
        "{agent}"
    );
    assert_eq!(
        tests_now(&p, &cache),
        "cannot run: `vitest` is not installed for the project — install it: `npm install -D vitest`"
    );
}

#[test]
fn tests_the_confined_run_may_not_load_do_not_refuse_a_correct_fix() {
    // The test file reads the project's real folder as it loads, which a
    // confined run may not: it fails with and without any change.
    let p = project(&[fix_add()]);
    p.write(
        "test_calc.py",
        &format!(
            "import os\nimport unittest\n\nfrom calc import add\n\nFIXTURES = os.listdir({:?})\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
            p.root.display().to_string()
        ),
    );
    let cache = p.root.parent().unwrap().join("cache");
    let agent = task(&p, "calc.py", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    let said = summary(&agent);
    assert!(
        said.contains("tests could not run: the confined run was refused")
            && said.contains("Permission denied"),
        "{agent}"
    );
    assert!(
        tests_now(&p, &cache).starts_with("cannot run: the confined run was refused"),
        "{}",
        tests_now(&p, &cache)
    );
}

#[test]
fn tests_that_never_finish_as_they_are_do_not_refuse_a_correct_fix() {
    // Loading the test file takes longer than the time limit, with and
    // without any change: the run says nothing of the change.
    let p = project(&[fix_add()]);
    p.write(
        "test_calc.py",
        "import time\nimport unittest\n\nfrom calc import add\n\ntime.sleep(30)\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    );
    p.project_options(serde_json::json!({"tests": {"command": "auto", "timeout_ms": 1500}}));
    let out = p
        .command(&["task", "--file", "calc.py", "fix", "add"])
        .env("XDG_CACHE_HOME", p.root.parent().unwrap().join("cache"))
        .output()
        .unwrap();
    let agent = p.agent_of(&out);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains(
            "tests could not run: the tests as they are did not finish within tests.timeout_ms (1.5 s)"
        ),
        "{agent}"
    );
    assert_eq!(
        tests_now(&p, &p.root.parent().unwrap().join("cache")),
        "cannot run: they did not finish within tests.timeout_ms (1.5 s) — raise it"
    );
}

/// A Lua project as busted's docs lay it out: `src/calc.lua` with a bug,
/// specs under `spec/`, a `.busted` that puts `src` on the module path,
/// and a `.env`. A spec checks, as it runs, that the project's real
/// folder, its `.env`, another project and the user's home are out of
/// reach. busted from the project's scripts (Debian's, as users have it).
fn busted_project(p: &support::Project) {
    let root = p.root.display().to_string();
    let installed = std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-busted.sh"),
    )
    .output()
    .unwrap();
    assert!(installed.status.success(), "scripts/install-busted.sh");
    p.write(
        ".busted",
        "return {\n  default = {\n    lpath = \"src/?.lua\",\n  },\n}\n",
    );
    p.write(".env", "TOKEN=secret\n");
    p.write(
        "src/calc.lua",
        "local M = {}\n\nfunction M.add(a, b)\n  return a - b\nend\n\nreturn M\n",
    );
    p.write(
        "spec/calc_spec.lua",
        &format!(
            r#"local calc = require("calc")
local lfs = require("lfs")

describe("calc", function()
  it("adds", function()
    assert.are.equal(5, calc.add(2, 3))
  end)
  it("reaches nothing of the user", function()
    assert.is_nil(io.open({env:?}))
    assert.is_nil(io.open({other:?}))
    assert.is_false(pcall(lfs.dir, {root:?}))
    assert.is_false(pcall(lfs.dir, {home:?}))
  end)
end)
"#,
            env = format!("{root}/.env"),
            other = another_project(p),
            home = std::env::var("HOME").unwrap(),
        ),
    );
}

#[test]
fn a_lua_projects_busted_specs_pass_a_correct_fix_and_reach_nothing_of_the_user() {
    let p = project(&[
        serde_json::json!({"text": "```lua\nfunction M.add(a, b)\n  return a + b\nend\n```"}),
    ]);
    busted_project(&p);
    let cache = p.root.parent().unwrap().join("cache");
    p.project_options(serde_json::json!({"tests": {"command": "auto"}}));
    assert_eq!(
        tests_now(&p, &cache),
        "failing before any change: 1 passed, 1 failed (calc adds)"
    );
    let agent = task(&p, "src/calc.lua", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains("tests passed: 2 passed, 0 failed"),
        "{agent}"
    );
    let status = p.ok(&["status"]);
    assert!(
        status.contains("tests     auto: busted, as .busted says"),
        "{status}"
    );
}

#[test]
fn a_lua_spec_needing_a_rock_not_installed_proposes_the_fix_and_says_what_to_install() {
    let p = project(&[
        serde_json::json!({"text": "```lua\nfunction M.add(a, b)\n  return a + b\nend\n```"}),
    ]);
    busted_project(&p);
    p.write(
        "spec/inspect_spec.lua",
        "local inspect = require(\"inspect\")\n\ndescribe(\"inspect\", function()\n  it(\"shows\", function()\n    assert.are.equal(\"1\", inspect(1))\n  end)\nend)\n",
    );
    let cache = p.root.parent().unwrap().join("cache");
    let agent = task(&p, "src/calc.lua", &cache);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert!(
        summary(&agent).contains(
            "tests could not run: `inspect` is not installed for the project — install it: `luarocks install --local inspect`"
        ),
        "{agent}"
    );
}
