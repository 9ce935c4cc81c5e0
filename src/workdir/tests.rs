use super::*;
use crate::overlay::Overlay;

/// A store whose stable layer holds `files`, and a folder for agent `a`.
fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, Store, Workdir) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let store = Store::open_in_memory(&root).unwrap();
    for (p, text) in files {
        store
            .stable_put(p, text.as_bytes(), 0o644, 1, 1 << 20)
            .unwrap();
    }
    store
        .agent_insert(&crate::store::AgentRecord::new("a", "a task"))
        .unwrap();
    let dir = Workdir::create(&t.path().join("work"), "a").unwrap();
    (t, store, dir)
}

fn all(_: &str) -> bool {
    true
}

/// Changes as `write PATH TEXT [from HASH-OF]` / `delete PATH`, sorted:
/// `was` named by the text it hashes.
fn said(changes: &[Change], texts: &[&str]) -> Vec<String> {
    let named = |was: &Option<String>| match was {
        None => String::new(),
        Some(h) => texts
            .iter()
            .find(|t| crate::store::hash_bytes(t.as_bytes()) == *h)
            .map_or(" from ?".into(), |t| format!(" from {t:?}")),
    };
    let mut out: Vec<String> = changes
        .iter()
        .map(|c| match c {
            Change::Write { path, data, was } => format!(
                "write {path} {:?}{}",
                String::from_utf8_lossy(data),
                named(was)
            ),
            Change::Delete { path, was } => format!("delete {path}{}", named(was)),
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_folder_holds_the_view_and_what_a_program_changes_is_read_back_once() {
    let (_t, store, mut w) = setup(&[
        ("app.py", "x = 1\n"),
        ("lib/util.py", "y\n"),
        ("gone.py", "g\n"),
    ]);
    Overlay::new(&store, "a", 1 << 20)
        .write(&ProjectPath::parse("mine.py").unwrap(), b"mine\n")
        .unwrap();
    assert_eq!(w.fill(&store, "a", &all).unwrap(), 4);
    let f = w.files().to_path_buf();
    assert_eq!(
        std::fs::read_to_string(f.join("lib/util.py")).unwrap(),
        "y\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.join("mine.py")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        w.read_back(1 << 20).unwrap(),
        (vec![], vec![]),
        "nothing changed yet"
    );

    std::fs::write(f.join("app.py"), "x = 2\n").unwrap();
    std::fs::write(f.join("new.py"), "n\n").unwrap();
    std::fs::remove_file(f.join("gone.py")).unwrap();
    let (changes, refused) = w.read_back(1 << 20).unwrap();
    assert_eq!(
        said(&changes, &["x = 1\n", "g\n"]),
        [
            "delete gone.py from \"g\\n\"",
            "write app.py \"x = 2\\n\" from \"x = 1\\n\"",
            "write new.py \"n\\n\"",
        ]
    );
    assert!(refused.is_empty());
    assert_eq!(w.read_back(1 << 20).unwrap(), (vec![], vec![]), "said once");
}

#[test]
fn links_reserved_names_hidden_and_huge_files_are_not_taken() {
    let (t, store, mut w) = setup(&[("app.py", "a\n"), ("private/key.txt", "k\n")]);
    let outside = t.path().join("proj/app.py");
    std::fs::write(&outside, "the human's\n").unwrap();
    w.fill(&store, "a", &|p: &str| !p.starts_with("private/"))
        .unwrap();
    let f = w.files().to_path_buf();
    assert!(
        !f.join("private/key.txt").exists(),
        "a file it may not see is left out"
    );
    std::os::unix::fs::symlink(&outside, f.join("link.py")).unwrap();
    std::fs::create_dir_all(f.join("sub/.git")).unwrap();
    std::fs::write(f.join("sub/.git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(f.join("private")).unwrap();
    std::fs::write(f.join("private/key.txt"), "overwritten blind\n").unwrap();
    std::fs::write(f.join("big.bin"), vec![b'x'; 2000]).unwrap();
    let (changes, refused) = w.read_back(1000).unwrap();
    assert!(changes.is_empty(), "{changes:?}");
    let mut said: Vec<&str> = refused.iter().map(|r| r.path.as_str()).collect();
    said.sort();
    assert_eq!(said, ["big.bin", "link.py", "private/key.txt", "sub/.git"]);
    assert!(
        w.read_back(1000).unwrap().1.is_empty(),
        "refusals are said once"
    );
    // Filling again clears all of it, through no link.
    w.fill(&store, "a", &|p: &str| !p.starts_with("private/"))
        .unwrap();
    for gone in ["link.py", "sub/.git", "private/key.txt", "big.bin"] {
        assert!(
            std::fs::symlink_metadata(f.join(gone)).is_err(),
            "{gone} is left"
        );
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "the human's\n");
}

#[test]
fn a_refill_writes_only_what_changed_and_undoes_what_was_not_taken() {
    let files: Vec<(String, String)> = (0..50)
        .map(|i| (format!("m{i}.py"), format!("v = {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (_t, store, mut w) = setup(&refs);
    assert_eq!(w.fill(&store, "a", &all).unwrap(), 50);
    std::thread::sleep(RACY * 2);
    store
        .stable_put("m3.py", b"v = 'human'\n", 0o644, 2, 1 << 20)
        .unwrap();
    // A program's change that was never read back is undone.
    std::fs::write(w.files().join("m7.py"), "late\n").unwrap();
    std::fs::write(w.files().join("stray.py"), "late\n").unwrap();
    assert_eq!(w.fill(&store, "a", &all).unwrap(), 2);
    assert_eq!(
        std::fs::read_to_string(w.files().join("m3.py")).unwrap(),
        "v = 'human'\n"
    );
    assert_eq!(
        std::fs::read_to_string(w.files().join("m7.py")).unwrap(),
        "v = 7\n"
    );
    assert!(!w.files().join("stray.py").exists());
}

#[test]
fn what_the_projects_ignore_rules_leave_out_is_not_taken_and_not_a_deletion() {
    let (_t, store, mut w) = setup(&[
        (".gitignore", "__pycache__/\n*.log\n"),
        ("app.py", "x = 1\n"),
        ("lib/util.py", "y\n"),
    ]);
    w.fill(&store, "a", &all).unwrap();
    let f = w.files().to_path_buf();
    // A test run leaves its caches; a build its products.
    std::fs::create_dir_all(f.join("__pycache__")).unwrap();
    std::fs::write(f.join("__pycache__/app.cpython-311.pyc"), [0u8, 1, 2]).unwrap();
    std::fs::create_dir_all(f.join("lib/__pycache__")).unwrap();
    std::fs::write(f.join("lib/__pycache__/util.pyc"), [0u8]).unwrap();
    std::fs::write(f.join("run.log"), "ran\n").unwrap();
    std::fs::write(f.join("app.py"), "x = 2\n").unwrap();
    let (changes, refused) = w.read_back(1 << 20).unwrap();
    assert_eq!(
        said(&changes, &["x = 1\n"]),
        ["write app.py \"x = 2\\n\" from \"x = 1\\n\""],
        "only the project's own file"
    );
    assert!(refused.is_empty(), "{refused:?}");

    // An agent that ignores a file of the project does not delete it,
    // and what it then writes there is still seen.
    std::fs::write(f.join(".gitignore"), "__pycache__/\n*.log\nlib/\n").unwrap();
    std::fs::write(f.join("lib/util.py"), "z\n").unwrap();
    let (changes, _) = w.read_back(1 << 20).unwrap();
    assert_eq!(
        said(&changes, &["__pycache__/\n*.log\n", "y\n"]),
        [
            "write .gitignore \"__pycache__/\\n*.log\\nlib/\\n\" from \"__pycache__/\\n*.log\\n\"",
            "write lib/util.py \"z\\n\" from \"y\\n\"",
        ]
    );
}

#[test]
fn a_folder_with_too_many_entries_is_refused_and_started_afresh() {
    let (_t, store, mut w) = setup(&[("app.py", "x = 1\n")]);
    w.max_entries = 50;
    w.fill(&store, "a", &all).unwrap();
    let f = w.files().to_path_buf();
    std::fs::create_dir_all(f.join("many")).unwrap();
    for i in 0..=50 {
        std::fs::write(f.join(format!("many/{i}")), "").unwrap();
    }
    let err = w.read_back(1 << 20).unwrap_err();
    assert!(
        err.to_string().contains("more than 51 files or folders"),
        "{err}"
    );
    assert_eq!(w.fill(&store, "a", &all).unwrap(), 1);
    assert!(!f.join("many").exists());
    assert_eq!(
        std::fs::read_to_string(f.join("app.py")).unwrap(),
        "x = 1\n"
    );
}

#[test]
fn a_large_fill_is_written_by_several_threads_and_a_rewrite_in_the_same_tick_is_seen() {
    let names: Vec<(String, String)> = (0..300)
        .map(|i| (format!("pkg{}/sub/m{i}.py", i % 7), format!("v = {i:04}\n")))
        .collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let (_t, store, mut w) = setup(&files);
    store
        .stable_put("tool.sh", b"#!/bin/sh\n", 0o755, 1, 1 << 20)
        .unwrap();
    assert_eq!(w.fill(&store, "a", &all).unwrap(), 301);
    for (p, text) in &files {
        assert_eq!(std::fs::read_to_string(w.files().join(p)).unwrap(), *text);
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(w.files().join("tool.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    // At once, as a program would: the same length, another text.
    std::fs::write(w.files().join("pkg3/sub/m3.py"), "v = 9999\n").unwrap();
    let (changes, _) = w.read_back(1 << 20).unwrap();
    assert_eq!(
        said(&changes, &["v = 0003\n"]),
        ["write pkg3/sub/m3.py \"v = 9999\\n\" from \"v = 0003\\n\""]
    );
    // Filling again writes only what differs from the view.
    assert_eq!(w.fill(&store, "a", &all).unwrap(), 1);
}
