//! `make bench`: a project's tests run the way an agent's change is
//! tested (a scratch copy, confined, in the project's own environment)
//! against the same tests run directly by the user, in one run:
//!
//! - Python: a real package's suite (`inflection`, 455 tests) with pytest
//!   from an activated venv, after a one-line change (goal ≤ 1.5 ×);
//! - Rust: `cargo test` after a one-line change to a crate, against the
//!   user's own incremental `cargo test` (goal ≤ 1.5 ×).
//!
//! Usage: `cargo bench --bench environments -- VENV_PYTHON PACKAGE_DIR`.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chimera::agent::checks::{Tests, Verdict};
use chimera::overlay::Overlay;
use chimera::paths::ProjectPath;
use chimera::store::{AgentRecord, AgentState, Store};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The tests of agent `agent`'s change in the project of `store`.
fn tests(store: &Arc<Store>, agent: &str, near: &str) -> Tests {
    let config = chimera::config::TestsConfig {
        timeout_ms: 600_000,
        ..Default::default()
    };
    Tests {
        store: store.clone(),
        agent: agent.into(),
        config,
        caps: chimera::capabilities::Capabilities::new(&Default::default(), None).unwrap(),
        max_bytes: 1 << 22,
        as_is: Default::default(),
        unconfined: false,
        near: Some(near.into()),
    }
}

/// A store of the project at `root` with agent `a`'s overlay changing
/// `file` by `change` (its text before and after).
fn with_change(root: &Path, file: &str, change: (&str, &str)) -> (Arc<Store>, Tests) {
    let store = Arc::new(Store::open(root).unwrap());
    chimera::sync::import(&store, root, 1 << 22, &Default::default()).unwrap();
    store
        .agent_insert(&AgentRecord {
            state: AgentState::Running,
            ..AgentRecord::new("a", "bench")
        })
        .unwrap();
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    assert!(text.contains(change.0), "{file} has no {:?}", change.0);
    let path = ProjectPath::parse(file).unwrap();
    Overlay::new(&store, "a", 1 << 22)
        .write(&path, text.replacen(change.0, change.1, 1).as_bytes())
        .unwrap();
    let t = tests(&store, "a", file);
    (store, t)
}

/// Runs `argv` in `dir` with `env`, `n` times; the median.
fn direct(dir: &Path, argv: &[&str], env: &[(&str, &str)], n: usize) -> Duration {
    let times = (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(argv[0])
                .args(&argv[1..])
                .current_dir(dir)
                .envs(env.iter().copied())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
            t.elapsed()
        })
        .collect();
    median(times)
}

/// `t.check()` of the change to `file`, `n` times (each a fresh scratch
/// copy); the median. It must pass: a run that failed would measure
/// something else.
fn checked(t: &Tests, file: &str, n: usize) -> Duration {
    let changed = [file.to_owned()];
    let times = (0..n)
        .map(|_| {
            let s = Instant::now();
            let verdict = t.check(&changed, &|| false);
            assert!(matches!(verdict, Verdict::Passed { .. }), "{verdict:?}");
            s.elapsed()
        })
        .collect();
    median(times)
}

fn bench_python(python: &str, package: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("inflection");
    copy(package, &root);
    let venv = Path::new(python).parent().unwrap().parent().unwrap();
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let env = [
        ("VIRTUAL_ENV", venv.to_str().unwrap()),
        ("PATH", path.as_str()),
    ];
    let argv = [
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--tb=short",
        "-l",
        "test_inflection.py",
    ];
    direct(&root, &argv, &env, 1);
    let theirs = direct(&root, &argv, &env, 5);
    // The activated venv, as the user started the editor.
    // SAFETY: no other thread reads the environment in this bench yet.
    unsafe {
        std::env::set_var("VIRTUAL_ENV", venv);
        std::env::set_var("PATH", &path);
    }
    let (_store, t) = with_change(
        &root,
        "inflection/__init__.py",
        ("def camelize(", "# A one-line change.\ndef camelize("),
    );
    checked(&t, "inflection/__init__.py", 1);
    let ours = checked(&t, "inflection/__init__.py", 5);
    println!(
        "tests of a changed file, inflection's 455 with pytest from a venv: directly {:.0} ms; confined in a scratch copy {:.0} ms: {:.2}x (target <= 1.5)",
        ms(theirs),
        ms(ours),
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}

/// A crate of `MODULES` modules, each with functions and a test of each.
const MODULES: usize = 12;

fn write_crate(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"bench_crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n",
    )
    .unwrap();
    let mut lib = String::new();
    for m in 0..MODULES {
        lib.push_str(&format!("pub mod m{m};\n"));
        let mut module = String::from(
            "pub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\n",
        );
        for f in 0..40 {
            module.push_str(&format!(
                "pub fn f{f}(x: u64) -> u64 {{\n    x.wrapping_mul({f}).wrapping_add({m})\n}}\n\n"
            ));
        }
        module.push_str("#[cfg(test)]\nmod tests {\n    use super::*;\n\n");
        for f in 0..40 {
            module.push_str(&format!(
                "    #[test]\n    fn t{f}() {{\n        assert_eq!(f{f}(2), 2u64.wrapping_mul({f}).wrapping_add({m}));\n        assert_eq!(show({f}), \"{f}\");\n    }}\n\n"
            ));
        }
        module.push_str("}\n");
        std::fs::write(root.join(format!("src/m{m}.rs")), module).unwrap();
    }
    std::fs::write(root.join("src/lib.rs"), lib).unwrap();
    std::fs::write(root.join(".gitignore"), "/target\n").unwrap();
}

fn bench_cargo() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("crate");
    write_crate(&root);
    let env: [(&str, &str); 1] = [("CARGO_TERM_COLOR", "never")];
    let argv = ["cargo", "test", "--offline", "-q"];
    direct(&root, &argv, &env, 1);
    // The user's loop: a one-line change, `cargo test`.
    let file = root.join("src/m3.rs");
    let text = std::fs::read_to_string(&file).unwrap();
    let times = (0..5)
        .map(|i| {
            std::fs::write(
                &file,
                text.replacen(
                    "wrapping_add(3)",
                    &format!("wrapping_add(3 + {i} - {i})"),
                    1,
                ),
            )
            .unwrap();
            direct(&root, &argv, &env, 1)
        })
        .collect();
    let theirs = median(times);
    std::fs::write(&file, &text).unwrap();
    let cache = dir.path().join("cache");
    // SAFETY: no other thread reads the environment in this bench yet.
    unsafe { std::env::set_var("XDG_CACHE_HOME", &cache) };
    let (_store, t) = with_change(
        &root,
        "src/m3.rs",
        ("wrapping_add(3)", "wrapping_add(3 + 0)"),
    );
    // The first check fills Chimera's own target from the user's.
    let first = checked(&t, "src/m3.rs", 1);
    let ours = checked(&t, "src/m3.rs", 5);
    println!(
        "cargo test after a one-line change: the user's own {:.0} ms; confined, Chimera's own target {:.0} ms: {:.2}x (target <= 1.5); the first check (its target seeded from the user's) {:.0} ms",
        ms(theirs),
        ms(ours),
        ours.as_secs_f64() / theirs.as_secs_f64(),
        ms(first)
    );
}

/// Copies the files under `from` to `to`.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    bench_cargo();
    match args.as_slice() {
        [python, package, ..] => bench_python(python, Path::new(package)),
        _ => println!(
            "tests in a venv: skipped (pass VENV_PYTHON PACKAGE_DIR; scripts/bench.sh does)"
        ),
    }
}
