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
    let (mut changes, refused) = w.read_back(1 << 20).unwrap();
    changes.sort_by_key(|c| format!("{c:?}"));
    assert_eq!(
        changes,
        vec![
            Change::Delete(ProjectPath::parse("gone.py").unwrap()),
            Change::Write(ProjectPath::parse("app.py").unwrap(), b"x = 2\n".to_vec()),
            Change::Write(ProjectPath::parse("new.py").unwrap(), b"n\n".to_vec()),
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
