use super::*;
use crate::overlay::Overlay;
use crate::paths::ProjectPath;
use crate::store::AgentRecord;

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
}

fn fixture(files: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for (path, content) in files {
        let abs = dir.path().join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(&abs, content).unwrap();
        store
            .stable_put(path, content.as_bytes(), 0o644, 0, 1 << 20)
            .unwrap();
    }
    Fixture { dir, store }
}

fn agent(f: &Fixture, id: &str, writes: &[(&str, Option<&str>)]) {
    f.store
        .agent_insert(&AgentRecord {
            state: AgentState::Running,
            ..AgentRecord::new(id, "t")
        })
        .unwrap();
    let ov = Overlay::new(&f.store, id, 1 << 20);
    for (path, content) in writes {
        let p = ProjectPath::parse(path).unwrap();
        match content {
            Some(c) => ov.write(&p, c.as_bytes()).unwrap(),
            None => ov.delete(&p).unwrap(),
        }
    }
}

fn complete(f: &Fixture, id: &str) -> Vec<String> {
    let conflicts = build_proposal(&f.store, id).unwrap();
    let mut rec = f.store.agent(id).unwrap();
    rec.state = AgentState::Completed;
    rec.conflicted = !conflicts.is_empty();
    f.store.agent_update(&rec).unwrap();
    conflicts
}

fn disk(f: &Fixture, path: &str) -> Option<String> {
    std::fs::read_to_string(f.dir.path().join(path)).ok()
}

fn stable(f: &Fixture, path: &str) -> Option<String> {
    f.store
        .stable_entry(path)
        .unwrap()
        .map(|e| String::from_utf8(f.store.blob(&e.hash).unwrap()).unwrap())
}

#[test]
fn accept_writes_disk_and_stable_and_clears_the_overlay() {
    let f = fixture(&[("a.py", "def f():\n    pass\n"), ("old.py", "x\n")]);
    agent(
        &f,
        "ag",
        &[
            ("a.py", Some("def f():\n    \"\"\"Doc.\"\"\"\n    pass\n")),
            ("new.py", Some("n\n")),
            ("old.py", None),
        ],
    );
    assert!(complete(&f, "ag").is_empty());
    let diffs = proposal_diffs(&f.store, "ag").unwrap();
    assert_eq!(diffs.len(), 3);
    assert_eq!(diffs[0].path, "a.py");
    assert_eq!(diffs[0].hunks[0].new_lines, vec!["    \"\"\"Doc.\"\"\""]);
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        "def f():\n    pass\n",
        "nothing changes before accept"
    );

    let out = accept(&f.store, f.dir.path(), "ag", &HashMap::new()).unwrap();
    assert!(out.buffer_edits.is_empty());
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        "def f():\n    \"\"\"Doc.\"\"\"\n    pass\n"
    );
    assert_eq!(disk(&f, "new.py").unwrap(), "n\n");
    assert!(disk(&f, "old.py").is_none());
    assert_eq!(stable(&f, "a.py"), disk(&f, "a.py"));
    assert!(stable(&f, "old.py").is_none());
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Accepted);
    assert!(f.store.overlay_entries("ag").unwrap().is_empty());
    // Accepting twice is refused.
    assert!(matches!(
        accept(&f.store, f.dir.path(), "ag", &HashMap::new()),
        Err(AcceptError::NotReady { .. })
    ));
}

#[test]
fn loaded_buffers_get_one_minimal_edit_instead_of_a_disk_write() {
    let f = fixture(&[("a.py", "a\nb\nc\n")]);
    agent(&f, "ag", &[("a.py", Some("a\nB\nc\n"))]);
    complete(&f, "ag");
    let buffers = HashMap::from([("a.py".to_owned(), "a\nb\nc\n".to_owned())]);
    let out = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap();
    assert_eq!(
        out.buffer_edits,
        vec![BufferChange {
            path: "a.py".into(),
            base: "a\nb\nc\n".into(),
            wanted: "a\nB\nc\n".into()
        }]
    );
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        "a\nb\nc\n",
        "the buffer is written by the editor"
    );
    assert_eq!(stable(&f, "a.py").unwrap(), "a\nB\nc\n");
}

#[test]
fn a_new_file_accepted_into_its_buffer_gets_its_folder_so_the_buffer_can_be_saved() {
    // The human opened `tests/test_x.py` before it existed and asked for it:
    // Neovim's `:w` cannot make the missing folder (E212), so the accept does.
    let f = fixture(&[("a.py", "a\n")]);
    // An empty buffer of a file that is not on disk is pushed as empty.
    let path = "tests/unit/test_x.py";
    f.store.stable_put(path, b"", 0o644, 0, 1 << 20).unwrap();
    agent(&f, "ag", &[(path, Some("def test_x():\n    pass\n"))]);
    complete(&f, "ag");
    let buffers = HashMap::from([("tests/unit/test_x.py".to_owned(), String::new())]);
    let out = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap();
    assert_eq!(out.buffer_edits.len(), 1, "{out:?}");
    assert!(f.dir.path().join("tests/unit").is_dir());
    assert_eq!(
        disk(&f, "tests/unit/test_x.py"),
        None,
        "the buffer is written by the editor"
    );
}

#[cfg(unix)]
#[test]
fn a_buffer_folder_through_a_link_refuses_the_accept_before_any_file_is_written() {
    // A cloned repository links `tests` out of the project; the new file's
    // buffer under it must not get a folder made outside, nor leave the
    // proposal's other file half accepted.
    let f = fixture(&[("a.py", "a\n")]);
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), f.dir.path().join("tests")).unwrap();
    let path = "tests/unit/test_x.py";
    f.store.stable_put(path, b"", 0o644, 0, 1 << 20).unwrap();
    agent(&f, "ag", &[(path, Some("x = 1\n")), ("a.py", Some("A\n"))]);
    complete(&f, "ag");
    let buffers = HashMap::from([(path.to_owned(), String::new())]);
    let err = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap_err();
    assert!(
        matches!(err, AcceptError::Disk(DiskError::Symlink(_))),
        "{err:?}"
    );
    assert!(!outside.path().join("unit").exists());
    assert_eq!(disk(&f, "a.py").unwrap(), "a\n", "nothing written");
}

#[test]
fn human_edits_elsewhere_are_merged_and_overlaps_conflict() {
    let f = fixture(&[("a.py", "1\n2\n3\n4\n5\n")]);
    agent(&f, "ag", &[("a.py", Some("1\n2\n3\n4\nFIVE\n"))]);
    complete(&f, "ag");
    // The human types in the buffer: line 1 changes.
    let buffers = HashMap::from([("a.py".to_owned(), "ONE\n2\n3\n4\n5\n".to_owned())]);
    let out = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap();
    assert_eq!(
        out.buffer_edits,
        vec![BufferChange {
            path: "a.py".into(),
            base: "ONE\n2\n3\n4\n5\n".into(),
            wanted: "ONE\n2\n3\n4\nFIVE\n".into()
        }]
    );
    assert_eq!(stable(&f, "a.py").unwrap(), "ONE\n2\n3\n4\nFIVE\n");

    let f = fixture(&[("a.py", "1\n2\n3\n")]);
    agent(&f, "ag", &[("a.py", Some("1\nTWO\n3\n"))]);
    complete(&f, "ag");
    let buffers = HashMap::from([("a.py".to_owned(), "1\ntwo!\n3\n".to_owned())]);
    let err = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap_err();
    assert!(matches!(err, AcceptError::Conflict(_)), "{err}");
    let d = proposal_diffs(&f.store, "ag").unwrap();
    assert_eq!(d[0].hunks[0].new_lines, vec!["TWO"], "the agent's side");
    assert_eq!(
        d[0].human_hunks[0].new_lines,
        vec!["two!"],
        "the human's side"
    );
    assert!(f.store.agent("ag").unwrap().conflicted);
    assert_eq!(disk(&f, "a.py").unwrap(), "1\n2\n3\n", "nothing written");
}

#[test]
fn a_file_deleted_by_the_human_is_a_conflict_not_a_recreation() {
    let f = fixture(&[("a.py", "x\n")]);
    agent(&f, "ag", &[("a.py", Some("y\n"))]);
    f.store.stable_delete("a.py").unwrap();
    std::fs::remove_file(f.dir.path().join("a.py")).unwrap();
    assert_eq!(complete(&f, "ag"), vec!["a.py"]);
    assert!(accept(&f.store, f.dir.path(), "ag", &HashMap::new()).is_err());
    assert!(disk(&f, "a.py").is_none());
}

#[test]
fn crlf_and_mode_survive_accept() {
    let f = fixture(&[("w.py", "a\r\nb\r\n")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            f.dir.path().join("w.py"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        f.store
            .stable_put("w.py", b"a\r\nb\r\n", 0o755, 0, 1 << 20)
            .unwrap();
    }
    agent(&f, "ag", &[("w.py", Some("a\nB\n"))]);
    complete(&f, "ag");
    accept(&f.store, f.dir.path(), "ag", &HashMap::new()).unwrap();
    assert_eq!(disk(&f, "w.py").unwrap(), "a\r\nB\r\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(f.dir.path().join("w.py"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o755);
    }
}

#[test]
fn reject_discards_the_overlay_and_touches_nothing() {
    let f = fixture(&[("a.py", "x\n")]);
    agent(&f, "ag", &[("a.py", Some("y\n"))]);
    complete(&f, "ag");
    reject(&f.store, "ag", Some("not like that")).unwrap();
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Rejected);
    assert!(f.store.overlay_entries("ag").unwrap().is_empty());
    assert!(f.store.proposal_files("ag").unwrap().is_empty());
    assert_eq!(disk(&f, "a.py").unwrap(), "x\n");
    assert_eq!(stable(&f, "a.py").unwrap(), "x\n");
}

#[test]
fn rebase_follows_human_edits_between_proposal_and_accept() {
    let f = fixture(&[("a.py", "1\n2\n3\n")]);
    agent(&f, "ag", &[("a.py", Some("1\n2\nTHREE\n"))]);
    complete(&f, "ag");
    f.store
        .stable_put("a.py", b"0\n1\n2\n3\n", 0o644, 5, 1 << 20)
        .unwrap();
    let (changed, conflicted) = rebase(&f.store, "ag").unwrap();
    assert!(changed && !conflicted);
    let d = proposal_diffs(&f.store, "ag").unwrap();
    assert_eq!(
        d[0].hunks[0].old_start, 3,
        "the hunk moved down with the text"
    );
}

#[test]
fn a_proposal_already_in_the_humans_files_ends_settled_not_accepted() {
    let f = fixture(&[("a.py", "1\n2\n"), ("b.py", "x\n")]);
    agent(
        &f,
        "ag",
        &[("a.py", Some("1\nTWO\n")), ("b.py", Some("y\n"))],
    );
    complete(&f, "ag");
    // An accept cut short after its renames, or the human typing the same:
    f.store
        .stable_put("a.py", b"1\nTWO\n", 0o644, 5, 1 << 20)
        .unwrap();
    rebase(&f.store, "ag").unwrap();
    assert_eq!(
        f.store.agent("ag").unwrap().state,
        AgentState::Completed,
        "b.py is left"
    );
    f.store
        .stable_put("b.py", b"y\n", 0o644, 5, 1 << 20)
        .unwrap();
    let (changed, conflicted) = rebase(&f.store, "ag").unwrap();
    assert!(changed && !conflicted);
    let rec = f.store.agent("ag").unwrap();
    assert_eq!(
        rec.state,
        AgentState::Settled,
        "nothing left to review, and nobody accepted it"
    );
    assert!(f.store.proposal_files("ag").unwrap().is_empty());
    let events = f.store.events_since(0).unwrap();
    let (_, agent_id, kind, _) = events.last().unwrap();
    assert_eq!(
        (agent_id.as_deref(), kind.as_str()),
        (Some("ag"), "settled")
    );
}

#[test]
fn hunks_are_accepted_and_rejected_one_by_one() {
    let f = fixture(&[("a.py", "1\n2\n3\n4\n5\n"), ("b.py", "x\n")]);
    agent(
        &f,
        "ag",
        &[
            ("a.py", Some("ONE\n2\n3\n4\nFIVE\n")),
            ("b.py", Some("y\n")),
        ],
    );
    complete(&f, "ag");
    // Hunks in file order: a.py#1 (line 1), a.py#2 (line 5), b.py#1.
    let out = accept_some(
        &f.store,
        f.dir.path(),
        "ag",
        &HashMap::new(),
        Some(&HunkRef::Number(2)),
    )
    .unwrap();
    assert!(!out.done);
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        "1\n2\n3\n4\nFIVE\n",
        "only hunk 2 applied"
    );
    let d = proposal_diffs(&f.store, "ag").unwrap();
    assert_eq!(
        d.iter().map(|d| d.hunks.len()).sum::<usize>(),
        2,
        "two hunks left"
    );
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Completed);

    assert!(
        !reject_hunk(&f.store, "ag", &HunkRef::Number(1)).unwrap(),
        "a.py's first hunk dropped"
    );
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        "1\n2\n3\n4\nFIVE\n",
        "reject changes nothing on disk"
    );
    let d = proposal_diffs(&f.store, "ag").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].path, "b.py");

    let out = accept_some(
        &f.store,
        f.dir.path(),
        "ag",
        &HashMap::new(),
        Some(&HunkRef::Number(1)),
    )
    .unwrap();
    assert!(out.done);
    assert_eq!(disk(&f, "b.py").unwrap(), "y\n");
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Accepted);
    assert!(matches!(
        accept_some(
            &f.store,
            f.dir.path(),
            "ag",
            &HashMap::new(),
            Some(&HunkRef::Number(1))
        ),
        Err(AcceptError::NotReady { .. })
    ));
}

#[test]
fn rejecting_the_last_hunk_rejects_the_proposal_and_a_missing_hunk_is_an_error() {
    let f = fixture(&[("a.py", "1\n")]);
    agent(&f, "ag", &[("a.py", Some("2\n"))]);
    complete(&f, "ag");
    assert!(matches!(
        reject_hunk(&f.store, "ag", &HunkRef::Number(7)),
        Err(AcceptError::NoHunk { n: 7, .. })
    ));
    assert!(reject_hunk(&f.store, "ag", &HunkRef::Number(1)).unwrap());
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Rejected);
    assert_eq!(disk(&f, "a.py").unwrap(), "1\n");
}

#[test]
fn a_hunk_named_by_its_key_is_the_same_change_after_the_proposal_moved() {
    let f = fixture(&[("a.py", "1\n2\n3\n4\n5\n")]);
    agent(&f, "ag", &[("a.py", Some("ONE\n2\n3\n4\nFIVE\n"))]);
    complete(&f, "ag");
    let d = proposal_diffs(&f.store, "ag").unwrap();
    let keys = diff::hunk_keys(&d[0].path, &d[0].hunks);
    // The editor drew both hunks; the human drops the first, then accepts
    // the second by what was drawn, before the editor redrew.
    assert!(!reject_hunk(&f.store, "ag", &HunkRef::Key(keys[0].clone())).unwrap());
    assert!(
        matches!(
            accept_some(
                &f.store,
                f.dir.path(),
                "ag",
                &HashMap::new(),
                Some(&HunkRef::Number(2))
            ),
            Err(AcceptError::NoHunk { n: 2, .. })
        ),
        "the number counts the hunks as they are now"
    );
    let out = accept_some(
        &f.store,
        f.dir.path(),
        "ag",
        &HashMap::new(),
        Some(&HunkRef::Key(keys[1].clone())),
    )
    .unwrap();
    assert!(out.done);
    assert_eq!(disk(&f, "a.py").unwrap(), "1\n2\n3\n4\nFIVE\n");
}

#[test]
fn a_key_of_a_hunk_that_is_gone_is_refused_and_nothing_changes() {
    let f = fixture(&[("a.py", "1\n2\n")]);
    agent(&f, "ag", &[("a.py", Some("ONE\n2\n"))]);
    complete(&f, "ag");
    let err = accept_some(
        &f.store,
        f.dir.path(),
        "ag",
        &HashMap::new(),
        Some(&HunkRef::Key("0123456789ab".into())),
    )
    .unwrap_err();
    assert!(matches!(err, AcceptError::HunkGone { .. }), "{err}");
    assert!(err.to_string().contains("look at it again"), "{err}");
    assert_eq!(disk(&f, "a.py").unwrap(), "1\n2\n");
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Completed);
}

#[test]
fn accepting_a_proposal_the_human_already_typed_just_ends_it() {
    let f = fixture(&[("a.py", "1\n2\n")]);
    agent(&f, "ag", &[("a.py", Some("1\nTWO\n"))]);
    complete(&f, "ag");
    // The buffer already holds the change when accept is pressed.
    let buffers = HashMap::from([("a.py".to_owned(), "1\nTWO\n".to_owned())]);
    let out = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap();
    assert!(out.done && out.buffer_edits.is_empty() && out.files.is_empty());
    assert_eq!(f.store.agent("ag").unwrap().state, AgentState::Accepted);
    let accepted_events = f
        .store
        .events_since(0)
        .unwrap()
        .into_iter()
        .filter(|(_, a, kind, _)| a.as_deref() == Some("ag") && kind == "accepted")
        .count();
    assert_eq!(accepted_events, 1, "one accept, one event");
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        "1\n2\n",
        "the disk is the human's to save"
    );
}

#[test]
fn a_conflicted_proposal_takes_its_hunks_that_touch_none_of_the_humans_changes() {
    let base = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
    let f = fixture(&[("a.py", base)]);
    agent(
        &f,
        "ag",
        &[("a.py", Some("1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n"))],
    );
    complete(&f, "ag");
    // The human changed line 2 their way and added a line at the top.
    let mine = "0\n1\ntwo!\n3\n4\n5\n6\n7\n8\n9\n10\n";
    let buffers = HashMap::from([("a.py".to_owned(), mine.to_owned())]);
    let err = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap_err();
    assert!(
        matches!(err, AcceptError::Conflict(ref p) if p == "a.py"),
        "{err}"
    );
    // Hunk 1 overlaps their line 2: refused.
    let err = accept_some(
        &f.store,
        f.dir.path(),
        "ag",
        &buffers,
        Some(&HunkRef::Number(1)),
    )
    .unwrap_err();
    assert!(matches!(err, AcceptError::Conflict(_)), "{err}");
    // Hunk 2 touches nothing of theirs: it goes onto their text, moved by
    // the line they added.
    let done = accept_some(
        &f.store,
        f.dir.path(),
        "ag",
        &buffers,
        Some(&HunkRef::Number(2)),
    )
    .unwrap();
    assert!(!done.done);
    assert_eq!(
        done.buffer_edits,
        vec![BufferChange {
            path: "a.py".into(),
            base: mine.into(),
            wanted: "0\n1\ntwo!\n3\n4\n5\n6\n7\n8\nNINE\n10\n".into()
        }]
    );
    // What is left is the conflicting hunk, still to resolve.
    let rec = f.store.agent("ag").unwrap();
    assert_eq!(rec.state, AgentState::Completed);
    let after = "0\n1\ntwo!\n3\n4\n5\n6\n7\n8\nNINE\n10\n";
    let buffers = HashMap::from([("a.py".to_owned(), after.to_owned())]);
    let err = accept(&f.store, f.dir.path(), "ag", &buffers).unwrap_err();
    assert!(matches!(err, AcceptError::Conflict(_)), "{err}");
    let d = proposal_diffs(&f.store, "ag").unwrap();
    assert!(d[0].hunks.iter().any(|h| h.new_lines == ["TWO"]), "{d:?}");
    assert!(
        !d[0].hunks.iter().any(|h| h.new_lines == ["NINE"]),
        "the hunk taken is not offered again: {d:?}"
    );
    assert_eq!(
        disk(&f, "a.py").unwrap(),
        base,
        "a loaded buffer changes, not the disk"
    );
}
