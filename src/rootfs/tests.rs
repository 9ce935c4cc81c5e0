use super::*;

fn pp(p: &str) -> ProjectPath {
    ProjectPath::parse(p).unwrap()
}

fn put(path: &str, data: &str, expect: Expect) -> Write {
    Write {
        path: path.into(),
        data: Some(data.as_bytes().to_vec()),
        mode: 0o644,
        expect,
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in walk(dir) {
        let name = e.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(".chimera-") {
            out.push(e.display().to_string());
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn writes_through_a_linked_folder_are_refused_and_nothing_leaves_the_root() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("linkdir")).unwrap();
    let err = write_all(
        root.path(),
        &[put("linkdir/secret.txt", "x", Expect::Anything)],
    )
    .unwrap_err();
    assert!(matches!(err, DiskError::Symlink(_)), "{err}");
    assert!(!outside.path().join("secret.txt").exists());
    assert!(leftovers(outside.path()).is_empty());
    // Deeper, and a link to a folder inside the root: still refused.
    std::fs::create_dir(root.path().join("real")).unwrap();
    std::os::unix::fs::symlink(root.path().join("real"), root.path().join("inner")).unwrap();
    assert!(matches!(
        write_all(root.path(), &[put("inner/a/b.txt", "x", Expect::Anything)]),
        Err(DiskError::Symlink(_))
    ));
    assert!(!root.path().join("real/a").exists());
    assert!(matches!(
        check_no_links(root.path(), &pp("linkdir/x")),
        Err(DiskError::Symlink(_))
    ));
    assert!(check_no_links(root.path(), &pp("real/new/x.py")).is_ok());
}

#[test]
fn a_linked_file_is_neither_read_nor_replaced() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("target.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("target.txt"),
        root.path().join("link.txt"),
    )
    .unwrap();
    assert!(matches!(
        read(root.path(), &pp("link.txt"), 1 << 20),
        Err(DiskError::Symlink(_))
    ));
    let err = write_all(root.path(), &[put("link.txt", "new", Expect::Anything)]).unwrap_err();
    assert!(matches!(err, DiskError::Symlink(_)), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("target.txt")).unwrap(),
        "outside\n"
    );
    assert!(std::fs::symlink_metadata(root.path().join("link.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(matches!(
        check_no_links(root.path(), &pp("link.txt")),
        Err(DiskError::Symlink(_))
    ));
}

#[test]
fn a_held_root_reads_nested_files_and_never_through_a_linked_folder() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP_SECRET\n").unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("a/b")).unwrap();
    std::fs::write(root.path().join("a/b/c.py"), "x = 1\n").unwrap();
    std::fs::write(root.path().join("a/file"), "not a folder\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("a/out")).unwrap();
    std::os::unix::fs::symlink(root.path().join("a/b"), root.path().join("inner")).unwrap();
    // Relative and inside the root: only a rule against every link refuses it.
    std::os::unix::fs::symlink("a/b", root.path().join("near")).unwrap();
    let held = Root::open(root.path()).unwrap();
    assert_eq!(
        held.read(&pp("a/b/c.py"), 1 << 20).unwrap().unwrap(),
        b"x = 1\n"
    );
    for through_a_link in ["a/out/secret.txt", "inner/c.py", "near/c.py"] {
        assert!(
            matches!(
                held.read(&pp(through_a_link), 1 << 20),
                Err(DiskError::Symlink(_))
            ),
            "{through_a_link}"
        );
    }
    assert!(matches!(
        held.read(&pp("a/file/x.py"), 1 << 20),
        Err(DiskError::NotAFile(_))
    ));
    assert_eq!(held.read(&pp("a/none/x.py"), 1 << 20).unwrap(), None);
}

#[test]
fn reads_stop_at_the_limit() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("big.bin"), vec![b'x'; 10_000]).unwrap();
    assert!(matches!(
        read(root.path(), &pp("big.bin"), 9_999),
        Err(DiskError::TooLarge { .. })
    ));
    assert_eq!(
        read(root.path(), &pp("big.bin"), 10_000)
            .unwrap()
            .unwrap()
            .len(),
        10_000
    );
    assert_eq!(read(root.path(), &pp("missing/x"), 10).unwrap(), None);
    std::fs::create_dir(root.path().join("d")).unwrap();
    assert!(matches!(
        read(root.path(), &pp("d"), 10),
        Err(DiskError::NotAFile(_))
    ));
}

#[test]
fn a_batch_with_one_bad_target_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.py"), "a\n").unwrap();
    std::fs::create_dir(root.path().join("b.py")).unwrap();
    let writes = [
        put("a.py", "A\n", Expect::Content(hash_bytes(b"a\n"))),
        put("b.py", "B\n", Expect::Anything),
        put("new/c.py", "C\n", Expect::Absent),
    ];
    let err = write_all(root.path(), &writes).unwrap_err();
    assert!(
        matches!(err, DiskError::NotAFile(ref p) if p == "b.py"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.py")).unwrap(),
        "a\n"
    );
    assert!(!root.path().join("new/c.py").exists());
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

#[test]
fn a_file_changed_since_it_was_read_fails_the_batch() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.py"), "a\ndef added():\n    pass\n").unwrap();
    std::fs::write(root.path().join("b.py"), "b\n").unwrap();
    let writes = [
        put("b.py", "B\n", Expect::Content(hash_bytes(b"b\n"))),
        put("a.py", "A\n", Expect::Content(hash_bytes(b"a\n"))),
    ];
    assert!(
        matches!(write_all(root.path(), &writes), Err(DiskError::Changed(ref p)) if p == "a.py")
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("b.py")).unwrap(),
        "b\n"
    );
    assert!(std::fs::read_to_string(root.path().join("a.py"))
        .unwrap()
        .contains("added"));
    // A file expected absent that appeared meanwhile is not overwritten.
    assert!(matches!(
        write_all(root.path(), &[put("b.py", "x", Expect::Absent)]),
        Err(DiskError::Changed(_))
    ));
    assert!(leftovers(root.path()).is_empty());
}

#[test]
fn writes_create_folders_and_deletes_remove_files_with_their_modes() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("old.py"), "o\n").unwrap();
    let writes = [
        Write {
            mode: 0o755,
            ..put("src/pkg/run.sh", "#!/bin/sh\n", Expect::Absent)
        },
        Write {
            path: "old.py".into(),
            data: None,
            mode: 0o644,
            expect: Expect::Content(hash_bytes(b"o\n")),
        },
    ];
    write_all(root.path(), &writes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(root.path().join("src/pkg/run.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o755);
    assert!(!root.path().join("old.py").exists());
    assert!(leftovers(root.path()).is_empty());
}

#[test]
fn two_writers_of_one_file_never_swap_their_temporary_files() {
    let root = tempfile::tempdir().unwrap();
    let contents = ["a\n".repeat(5000), "b\n".repeat(5000)];
    std::thread::scope(|scope| {
        for text in &contents {
            let root = root.path();
            scope.spawn(move || {
                for _ in 0..200 {
                    write_all(root, &[put("f.py", text, Expect::Anything)]).unwrap();
                    let now = std::fs::read_to_string(root.join("f.py")).unwrap();
                    assert!(
                        now == "a\n".repeat(5000) || now == "b\n".repeat(5000),
                        "a mixed file"
                    );
                }
            });
        }
    });
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

#[test]
fn what_is_ready_before_the_renames_sees_the_old_files_and_its_error_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    for name in ["a.py", "b.py"] {
        std::fs::write(root.path().join(name), "old\n").unwrap();
    }
    let old = || Expect::Content(hash_bytes(b"old\n"));
    let writes = [put("a.py", "new\n", old()), put("b.py", "new\n", old())];
    let read = |name: &str| std::fs::read_to_string(root.path().join(name)).unwrap();
    let refused = write_all_when(root.path(), &writes, || {
        assert_eq!(
            (read("a.py"), read("b.py")),
            ("old\n".into(), "old\n".into())
        );
        Err(DiskError::Changed("the journal".into()))
    });
    assert!(matches!(refused, Err(DiskError::Changed(ref what)) if what == "the journal"));
    assert_eq!(
        (read("a.py"), read("b.py")),
        ("old\n".into(), "old\n".into())
    );
    assert!(leftovers(root.path()).is_empty());

    let mut saw = None;
    write_all_when(root.path(), &writes, || {
        saw = Some(read("a.py"));
        Ok::<(), DiskError>(())
    })
    .unwrap();
    assert_eq!(saw.as_deref(), Some("old\n"));
    assert_eq!(
        (read("a.py"), read("b.py")),
        ("new\n".into(), "new\n".into())
    );
}

#[test]
fn the_files_a_write_replaced_or_deleted_are_let_go_once_it_is_done() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let old = Expect::Content(hash_bytes(b"old\n"));
    let mut writes = Vec::new();
    for i in 0..20 {
        std::fs::write(root.path().join(format!("f{i}.py")), "old\n").unwrap();
        writes.push(put(&format!("f{i}.py"), "new\n", old.clone()));
    }
    writes[0].data = None;
    write_all(root.path(), &writes).unwrap();
    // Held open through the renames, they are closed on another thread:
    // soon no descriptor of this process names one of them.
    let held = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter(|target| target.starts_with(&root_path))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while held() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(held(), 0, "files of the write are still open");
    assert!(!root.path().join("f0.py").exists());
    assert_eq!(
        std::fs::read_to_string(root.path().join("f7.py")).unwrap(),
        "new\n"
    );
}
