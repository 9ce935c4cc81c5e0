//! Core benchmarks, each against a baseline measured in the same run:
//! - initial import of a 1,500-file Python project vs `git add -A && git commit`;
//! - 1 KB overlay write and read-through (absolute, µs);
//! - accepting a 50-hunk proposal over 10 files vs `git apply` of the same patch.
//!
//! Run with `make bench` (or `cargo bench --no-default-features --bench core`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chimera::accept;
use chimera::overlay::Overlay;
use chimera::paths::ProjectPath;
use chimera::store::{now_ms, AgentRecord, AgentState, Store};
use chimera::sync::{self, OpenBuffers};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=b@b", "-c", "user.name=bench", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// 1,500 real Python files, taken from the interpreter's standard library.
fn python_corpus() -> Vec<(String, Vec<u8>)> {
    let out = Command::new("python3")
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
        .output()
        .expect("python3 runs");
    let stdlib = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let mut files = Vec::new();
    let mut stack = vec![stdlib.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && !p.ends_with("site-packages") && !p.ends_with("__pycache__") {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "py") {
                let rel = p.strip_prefix(&stdlib).unwrap().to_string_lossy().into_owned();
                files.push((rel, std::fs::read(&p).unwrap()));
            }
            if files.len() >= 1500 {
                return files;
            }
        }
    }
    files
}

fn write_tree(root: &Path, files: &[(String, Vec<u8>)]) {
    for (rel, data) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
}

fn bench_import(files: &[(String, Vec<u8>)]) {
    let runs = 5;
    let mut ours = Vec::new();
    let mut base = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), files);
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        let t = Instant::now();
        let store = Store::open(dir.path()).unwrap();
        let n = sync::import(&store, dir.path(), 2 << 20, &OpenBuffers::default()).unwrap();
        ours.push(t.elapsed());
        assert_eq!(n, files.len());

        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), files);
        git(dir.path(), &["init", "-q"]);
        let t = Instant::now();
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "import"]);
        base.push(t.elapsed());
    }
    let (o, b) = (median(ours), median(base));
    println!(
        "import {} files: {:.1} ms; git add -A && git commit: {:.1} ms; ratio {:.2} (target <= 0.25)",
        files.len(),
        o.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        o.as_secs_f64() / b.as_secs_f64()
    );
}

fn agent(store: &Store, id: &str) {
    store
        .agent_insert(&AgentRecord {
            id: id.into(),
            state: AgentState::Running,
            task: "bench".into(),
            context: None,
            summary: None,
            error: None,
            changed_files: vec![],
            conflicted: false,
            rounds: 0,
            owner: String::new(),
            recoveries: 0,
            file: None,
            cursor_line: None,
            feedback: vec![],
            owner_pid: std::process::id(),
            created_at: now_ms(),
            updated_at: now_ms(),
        })
        .unwrap();
}

fn bench_overlay() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    agent(&store, "a");
    for i in 0..200 {
        store.stable_put(&format!("src/m{i}.py"), &vec![b'x'; 1024], 0o644, 0, 1 << 20).unwrap();
    }
    let ov = Overlay::new(&store, "a", 1 << 20);
    let n = 2000;
    let paths: Vec<ProjectPath> = (0..n).map(|i| ProjectPath::parse(&format!("src/w{}.py", i % 200)).unwrap()).collect();
    let mut writes = Vec::with_capacity(n);
    for (i, p) in paths.iter().enumerate() {
        let data = format!("{i:01024}");
        let t = Instant::now();
        ov.write(p, data.as_bytes()).unwrap();
        writes.push(t.elapsed());
    }
    let mut reads = Vec::with_capacity(n);
    for i in 0..n {
        let p = ProjectPath::parse(&format!("src/m{}.py", i % 200)).unwrap();
        let t = Instant::now();
        let got = ov.read(&p).unwrap();
        reads.push(t.elapsed());
        assert_eq!(got.map(|g| g.len()), Some(1024));
    }
    println!(
        "overlay 1 KB write: {:.1} µs (target <= 100); read-through: {:.1} µs (target <= 50)",
        median(writes).as_secs_f64() * 1e6,
        median(reads).as_secs_f64() * 1e6
    );
}

/// Ten 200-line files; the agent changes every 40th line: 5 hunks per file.
fn proposal_files() -> Vec<(String, String, String)> {
    (0..10)
        .map(|f| {
            let old: Vec<String> = (0..200).map(|i| format!("value_{f}_{i} = {i}")).collect();
            let mut new = old.clone();
            for i in (20..200).step_by(40) {
                new[i] = format!("value_{f}_{i} = {}  # changed", i * 2);
            }
            (format!("pkg/mod{f}.py"), old.join("\n") + "\n", new.join("\n") + "\n")
        })
        .collect()
}

fn bench_accept() {
    let files = proposal_files();
    let runs = 15;
    let mut ours = Vec::new();
    let mut base = Vec::new();
    let mut hunks = 0;
    for run in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for (p, old, _) in &files {
            std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
            std::fs::write(dir.path().join(p), old).unwrap();
            store.stable_put(p, old.as_bytes(), 0o644, 0, 1 << 20).unwrap();
        }
        agent(&store, "a");
        let ov = Overlay::new(&store, "a", 1 << 20);
        for (p, _, new) in &files {
            ov.write(&ProjectPath::parse(p).unwrap(), new.as_bytes()).unwrap();
        }
        accept::build_proposal(&store, "a").unwrap();
        hunks = accept::proposal_diffs(&store, "a").unwrap().iter().map(|d| d.hunks.len()).sum();
        let mut rec = store.agent("a").unwrap();
        rec.state = AgentState::Completed;
        store.agent_update(&rec).unwrap();
        let t = Instant::now();
        accept::accept(&store, dir.path(), "a", &HashMap::new()).unwrap();
        ours.push(t.elapsed());
        if run == 0 {
            assert_eq!(std::fs::read_to_string(dir.path().join(&files[0].0)).unwrap(), files[0].2);
        }

        // Baseline: the same change as a unified diff, applied by git.
        let gdir = tempfile::tempdir().unwrap();
        git(gdir.path(), &["init", "-q"]);
        for (p, old, _) in &files {
            std::fs::create_dir_all(gdir.path().join("pkg")).unwrap();
            std::fs::write(gdir.path().join(p), old).unwrap();
        }
        git(gdir.path(), &["add", "-A"]);
        git(gdir.path(), &["commit", "-q", "-m", "base"]);
        for (p, _, new) in &files {
            std::fs::write(gdir.path().join(p), new).unwrap();
        }
        let patch = Command::new("git").args(["diff", "-U0"]).current_dir(gdir.path()).output().unwrap().stdout;
        git(gdir.path(), &["checkout", "-q", "--", "."]);
        let patch_path = gdir.path().join("change.patch");
        std::fs::write(&patch_path, patch).unwrap();
        let t = Instant::now();
        git(gdir.path(), &["apply", "--unidiff-zero", patch_path.to_str().unwrap()]);
        base.push(t.elapsed());
    }
    let (o, b) = (median(ours), median(base));
    println!(
        "accept {hunks} hunks over {} files: {:.2} ms; git apply: {:.2} ms; ratio {:.2} (target <= 2)",
        files.len(),
        o.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        o.as_secs_f64() / b.as_secs_f64()
    );
}

fn main() {
    let files = python_corpus();
    bench_import(&files);
    bench_overlay();
    bench_accept();
}
