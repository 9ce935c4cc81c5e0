use super::*;
use crate::overlay::Overlay;

fn lifecycle(files: &[(&str, &str)]) -> (tempfile::TempDir, Lifecycle) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
        store
            .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
            .unwrap();
    }
    let lc = Lifecycle {
        store,
        root: dir.path().to_path_buf(),
        buffers: OpenBuffers::default(),
        max_file_bytes: 1 << 20,
        feedback_rounds: 3,
        owner: "me".into(),
    };
    (dir, lc)
}

/// An agent that ran and wrote `writes` into its overlay.
fn ran(lc: &Lifecycle, id: &str, writes: &[(&str, &str)]) {
    let _ = lc.spawn(AgentRecord::new(id, "t"));
    lc.start(id);
    let ov = Overlay::new(&lc.store, id, 1 << 20);
    for (path, text) in writes {
        ov.write(&ProjectPath::parse(path).unwrap(), text.as_bytes())
            .unwrap();
    }
}

/// What `told` says, in order: the editor's buffer edits, then the events.
fn kinds(told: &Announced) -> Vec<String> {
    let edits = told.edits.iter().map(|_| "edit".to_owned());
    let events = told.events.iter().map(|m| match m {
        Event::Agent {
            agent,
            proposal,
            cleared,
        } => format!(
            "agent {}{}{}",
            agent.state.as_str(),
            if proposal.is_some() { " +proposal" } else { "" },
            if *cleared { " -proposal" } else { "" }
        ),
        Event::Resolved { accepted, .. } => format!("resolved {accepted}"),
        Event::Snapshots { .. } => "snapshots".into(),
        Event::Notice { message, .. } => format!("notify {message}"),
        other => format!("{other:?}"),
    });
    edits.chain(events).collect()
}

#[test]
fn a_completed_state_and_its_proposal_are_one_message() {
    let (dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    ran(&lc, "ag", &[("a.py", "x = 2\n")]);
    let told = announce(&lc.complete("ag", "two", 1));
    assert_eq!(kinds(&told), ["agent completed +proposal"]);
    let Event::Agent {
        proposal: Some(files),
        ..
    } = &told.events[0]
    else {
        unreachable!()
    };
    // Every client hears project paths; the editor, its buffers' names.
    assert_eq!(files[0].path, "a.py");
    let crate::nvim::messages::ToEditor::Agent {
        proposal: Some(files),
        ..
    } = crate::nvim::messages::ToEditor::of(told.events[0].clone(), &lc.root)
    else {
        unreachable!()
    };
    assert_eq!(files[0].path, dir.path().join("a.py").to_string_lossy());
}

#[test]
fn a_run_that_changed_nothing_ends_settled_with_nothing_to_review() {
    let (_dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    ran(&lc, "ag", &[]);
    let out = lc.complete("ag", "an answer", 1);
    assert_eq!(kinds(&announce(&out)), ["agent settled"]);
    assert_eq!(
        lc.store.agent("ag").unwrap().summary.as_deref(),
        Some("an answer")
    );
}

#[test]
fn an_accept_announces_the_edit_the_snapshot_the_state_then_the_verdict() {
    let (_dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    ran(&lc, "ag", &[("a.py", "x = 2\n")]);
    lc.complete("ag", "two", 1);
    lc.buffers.insert("a.py");
    let buffers = HashMap::from([("a.py".to_owned(), "x = 1\n".to_owned())]);
    let out = lc.accept("ag", buffers, None);
    assert_eq!(
        kinds(&announce(&out)),
        [
            "edit",
            "snapshots",
            "agent accepted -proposal",
            "resolved true"
        ]
    );
    assert_eq!(out.changed_paths, ["a.py"]);
}

#[test]
fn feedback_clears_the_proposal_and_hands_back_the_agent_to_run_again() {
    let (_dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    ran(&lc, "ag", &[("a.py", "x = 2\n")]);
    lc.complete("ag", "two", 1);
    let out = lc.reject("ag", Some("make it three"));
    assert_eq!(
        kinds(&announce(&out)),
        ["agent queued -proposal", "resolved false"]
    );
    assert_eq!(out.run.len(), 1);
    assert_eq!(out.run[0].feedback[0].feedback, "make it three");
}

#[test]
fn typing_the_proposal_yourself_ends_it_settled_once_and_says_so() {
    let (_dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    ran(&lc, "ag", &[("a.py", "x = 2\n")]);
    lc.complete("ag", "two", 1);
    let p = ProjectPath::parse("a.py").unwrap();
    let out = lc.buffer_text(&p, "x = 2\n");
    // Nobody accepted anything: no verdict, and the human is told why it
    // ended.
    assert_eq!(
        kinds(&announce(&out)),
        [
            "agent settled -proposal",
            "notify Chimera: agent ag settled: your text already holds every change it made; nothing is left to review"
        ]
    );
    assert!(lc.buffer_text(&p, "x = 2\n").changes.is_empty(), "once");
}

#[test]
fn a_failed_accept_keeps_the_proposal_and_says_why() {
    let (dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    ran(&lc, "ag", &[("a.py", "x = 2\n")]);
    lc.complete("ag", "two", 1);
    std::fs::write(dir.path().join("a.py"), "x = 1\ny = 1\n").unwrap();
    let out = lc.accept("ag", HashMap::new(), None);
    let kinds = kinds(&announce(&out));
    assert!(
        kinds.contains(&"agent completed +proposal".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.last().unwrap().contains("changed on disk"),
        "{kinds:?}"
    );
    assert_eq!(lc.store.agent("ag").unwrap().state, AgentState::Completed);
    assert_eq!(
        out.refused.map(|r| r.kind),
        Some(RefusalKind::Conflict),
        "a client that asked is refused, typed"
    );
}

#[test]
fn every_refusal_is_typed_for_clients_and_said_to_the_editor() {
    let (_dir, lc) = lifecycle(&[("a.py", "x = 1\n")]);
    let kind = |out: &Outcome| out.refused.as_ref().map(|r| r.kind);
    assert_eq!(
        kind(&lc.accept("nosuch", HashMap::new(), None)),
        Some(RefusalKind::NotFound)
    );
    ran(&lc, "ag", &[("a.py", "x = 2\n")]);
    lc.complete("ag", "two", 1);
    assert_eq!(
        kind(&lc.accept("ag", HashMap::new(), Some(HunkRef::Number(9)))),
        Some(RefusalKind::Conflict),
        "no hunk 9"
    );
    let accepted = lc.accept("ag", HashMap::new(), None);
    assert_eq!(kind(&accepted), None, "{:?}", accepted.notices);
    let again = lc.accept("ag", HashMap::new(), None);
    assert_eq!(
        kind(&again),
        Some(RefusalKind::Conflict),
        "no proposal left"
    );
    // What the editor is told is the same refusal in words.
    let said = kinds(&announce(&again));
    let message = &again.refused.as_ref().unwrap().message;
    assert!(
        said.iter()
            .any(|k| k == &format!("notify Chimera: {message}")),
        "{said:?}"
    );
    assert_eq!(
        kind(&lc.fork(AgentRecord::new("f", "t"), "nosuch")),
        Some(RefusalKind::NotFound)
    );
}

#[test]
fn a_buffer_that_moved_under_an_accept_gets_the_edit_again_for_its_new_text() {
    let (_dir, lc) = lifecycle(&[("a.py", "def f():\n    return 1\n\n\ndef g():\n    pass\n")]);
    let p = ProjectPath::parse("a.py").unwrap();
    let base = "def f():\n    return 1\n\n\ndef g():\n    pass\n";
    let wanted = "def f():\n    return 1\n\n\ndef g():\n    \"\"\"G.\"\"\"\n    pass\n";
    // A formatter added a line at the top between the accept and its edit.
    let now = format!("import os\n{base}");
    let out = lc.buffer_moved("ag", &p, base, wanted, &now);
    assert_eq!(out.buffer_edits.len(), 1);
    let e = &out.buffer_edits[0];
    assert_eq!(
        (e.start, e.end, e.lines.clone(), e.base.as_str()),
        (6, 6, vec!["    \"\"\"G.\"\"\"".to_owned()], now.as_str())
    );
    let stable = lc
        .store
        .blob(&lc.store.stable_entry("a.py").unwrap().unwrap().hash)
        .unwrap();
    assert_eq!(
        String::from_utf8(stable).unwrap(),
        format!("import os\n{wanted}")
    );
    // Typed into the same lines: the human's text wins, and they are told.
    let clash = base.replace("    pass", "    return 0");
    let out = lc.buffer_moved("ag", &p, base, wanted, &clash);
    assert!(out.buffer_edits.is_empty());
    assert!(
        out.notices[0].1.contains("your text was kept"),
        "{:?}",
        out.notices
    );
}
