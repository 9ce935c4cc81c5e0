use super::*;

fn record(id: &str) -> AgentRecord {
    AgentRecord {
        owner: "dead".into(),
        ..AgentRecord::new(id, "add a docstring")
    }
}

#[test]
fn opens_a_wal_database_with_a_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(dir.path().join(".chimera/chimera.db").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".chimera/.gitignore")).unwrap(),
        "*\n"
    );
    let mode: String = store
        .conn()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(store.integrity_check().unwrap(), "ok");
    drop(store);
    // Reopening applies the schema again without error.
    Store::open(dir.path()).unwrap();
}

#[test]
fn processes_opening_a_new_database_at_once_all_open_it() {
    // Neovim's core and a shell's `chimera task` typed at once both make
    // the schema; the second must find the first's columns, not add them
    // again ("duplicate column name" in CI).
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let start = std::sync::Barrier::new(6);
        std::thread::scope(|scope| {
            let opens: Vec<_> = (0..6)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        Store::open(dir.path()).map(|_| ())
                    })
                })
                .collect();
            for open in opens {
                open.join().unwrap().unwrap();
            }
        });
    }
}

#[test]
fn a_large_import_stays_in_the_wal_until_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // 8 MB of distinct files: past the WAL's automatic checkpoint (1000
    // pages of 4 KB).
    let content = |i: usize| format!("{i:040000}").into_bytes();
    let files: Vec<_> = (0..200)
        .map(|i| DiskFile {
            path: format!("m{i}.py"),
            size: content(i).len() as u64,
            data: Content::Read(content(i)),
            mode: 0o644,
            mtime_ns: 0,
        })
        .collect();
    let imported = store.bulk_write(|| store.stable_import(&files, 1 << 20));
    assert_eq!(imported.unwrap(), 200);
    let size = |name: &str| {
        std::fs::metadata(dir.path().join(".chimera").join(name))
            .unwrap()
            .len()
    };
    assert!(
        size("chimera.db-wal") > 8_000_000,
        "the import is in the WAL"
    );
    assert!(size("chimera.db") < 1_000_000, "not yet copied");
    let pages: i64 = store
        .conn()
        .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
        .unwrap();
    assert_eq!(pages, 1000, "later commits checkpoint as usual");
    let cache: i64 = store
        .conn()
        .query_row("PRAGMA cache_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(cache, -32_000, "later reads have the whole cache again");
    store.checkpoint().unwrap();
    assert!(size("chimera.db") > 8_000_000, "copied by the checkpoint");
    let e = store.stable_entry("m7.py").unwrap().unwrap();
    assert_eq!(store.blob(&e.hash).unwrap(), content(7));
    assert_eq!(store.integrity_check().unwrap(), "ok");
    // Once copied, the next write starts the WAL again and leaves the
    // file no larger than its limit on the disk.
    store
        .stable_put("later.py", b"x = 1\n", 0o644, 0, 1 << 20)
        .unwrap();
    assert!(
        size("chimera.db-wal") <= 4 << 20,
        "the WAL's {} bytes were left on the disk",
        size("chimera.db-wal")
    );
}

#[test]
fn blobs_are_content_addressed_and_shared() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    let a = store.put_blob(b"same").unwrap();
    let b = store.put_blob(b"same").unwrap();
    assert_eq!(a, b);
    assert_eq!(store.blob(&a).unwrap(), b"same");
    let n: i64 = store
        .conn()
        .query_row("SELECT count(*) FROM blobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
    assert!(matches!(
        store.blob("nope"),
        Err(StoreError::MissingBlob(_))
    ));
}

#[test]
fn stable_put_reports_changes_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    assert!(store.stable_put("a.py", b"1", 0o644, 1, 100).unwrap());
    assert!(!store.stable_put("a.py", b"1", 0o644, 2, 100).unwrap());
    assert!(store.stable_put("a.py", b"2", 0o644, 3, 100).unwrap());
    assert!(
        store.stable_put("a.py", b"2", 0o755, 3, 100).unwrap(),
        "mode change counts"
    );
    let e = store.stable_entry("a.py").unwrap().unwrap();
    assert_eq!(
        (e.size, e.mode, e.mtime_ns, e.too_large),
        (1, 0o755, 3, false)
    );
    assert!(store.stable_delete("a.py").unwrap());
    assert!(store.stable_entry("a.py").unwrap().is_none());
}

#[test]
fn stable_paths_under_is_a_prefix_scan_on_directory_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    for p in ["src/a.py", "src/sub/b.py", "src0.py", "src.py", "srcx/c.py"] {
        store.stable_put(p, b"x", 0o644, 0, 100).unwrap();
    }
    assert_eq!(
        store.stable_paths_under("src").unwrap(),
        vec!["src/a.py", "src/sub/b.py"]
    );
}

#[test]
fn agent_updates_are_logged_as_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    let mut rec = record("ag1");
    store.agent_insert(&rec).unwrap();
    rec.state = AgentState::Running;
    store.agent_update(&rec).unwrap();
    rec.state = AgentState::Failed;
    rec.error = Some("boom".into());
    store.agent_update(&rec).unwrap();
    let back = store.agent("ag1").unwrap();
    assert_eq!(back.state, AgentState::Failed);
    assert_eq!(back.error.as_deref(), Some("boom"));
    let kinds: Vec<String> = store
        .events_since(0)
        .unwrap()
        .into_iter()
        .map(|e| e.2)
        .collect();
    assert_eq!(kinds, vec!["agent_created", "agent_state", "agent_state"]);
    assert!(matches!(
        store.agent("missing"),
        Err(StoreError::NoAgent(_))
    ));
}

#[test]
fn overlay_keeps_the_first_base() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    store.agent_insert(&record("a")).unwrap();
    store
        .overlay_set("a", "x.py", Some("h1"), Some("base1"))
        .unwrap();
    store
        .overlay_set("a", "x.py", Some("h2"), Some("base2"))
        .unwrap();
    let e = store.overlay_entry("a", "x.py").unwrap().unwrap();
    assert_eq!(
        e,
        OverlayEntry {
            hash: Some("h2".into()),
            base_hash: Some("base1".into())
        }
    );
    store.overlay_clear("a").unwrap();
    assert!(store.overlay_entries("a").unwrap().is_empty());
}

#[test]
fn illegal_transitions_are_errors_not_silent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    let mut rec = record("ag1");
    store.agent_insert(&rec).unwrap();
    rec.state = AgentState::Accepted;
    let err = store.agent_update(&rec).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::IllegalTransition {
                from: "queued",
                to: "accepted",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        store.agent("ag1").unwrap().state,
        AgentState::Queued,
        "nothing written"
    );
    for (from, to, ok) in [
        (AgentState::Running, AgentState::Completed, true),
        (AgentState::Completed, AgentState::Accepted, true),
        (AgentState::Accepted, AgentState::Running, false),
        (AgentState::Failed, AgentState::Completed, false),
        (AgentState::Cancelled, AgentState::Queued, false),
        (AgentState::Rejected, AgentState::Accepted, false),
    ] {
        assert_eq!(from.can_become(to), ok, "{from:?} -> {to:?}");
    }
}

#[test]
fn recovery_requeues_once_skips_live_owners_and_fails_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    store.instance_heartbeat("live").unwrap();
    let mut queued = record("q");
    queued.owner = "dead".into();
    let mut running = record("r");
    running.state = AgentState::Running;
    let mut other = record("o");
    other.owner = "live".into();
    let mut twice = record("t");
    twice.state = AgentState::Running;
    twice.recoveries = 1;
    for r in [&queued, &running, &other, &twice] {
        store.agent_insert(r).unwrap();
    }
    let runnable: Vec<String> = store
        .recover("me", 10_000)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(runnable, vec!["q", "r"]);
    let r = store.agent("r").unwrap();
    assert_eq!(
        (r.state, r.recoveries, r.owner.as_str()),
        (AgentState::Queued, 1, "me")
    );
    assert_eq!(
        store.agent("o").unwrap().owner,
        "live",
        "a live instance keeps its agents"
    );
    let t = store.agent("t").unwrap();
    assert_eq!(t.state, AgentState::Failed);
    assert!(t.error.unwrap().contains("twice"));
    // Idempotent: a second pass by the same instance takes nothing twice.
    assert!(store.recover("me", 10_000).unwrap().is_empty());
    assert_eq!(store.agent("r").unwrap().recoveries, 1);
}

#[test]
fn purge_removes_old_terminal_agents_and_unreferenced_blobs_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    store.stable_put("a.py", b"kept", 0o644, 0, 100).unwrap();
    let orphan = store.put_blob(b"orphan").unwrap();
    let mut done = record("done");
    done.state = AgentState::Failed;
    done.updated_at = now_ms() - 100_000;
    store.agent_insert(&done).unwrap();
    // Every end state is purged, `settled` too.
    let mut settled = record("settled");
    settled.state = AgentState::Settled;
    settled.updated_at = now_ms() - 100_000;
    store.agent_insert(&settled).unwrap();
    let mut review = record("review");
    review.state = AgentState::Completed;
    review.updated_at = now_ms() - 100_000;
    store.agent_insert(&review).unwrap();
    let in_overlay = store.put_blob(b"proposed").unwrap();
    store
        .overlay_set("review", "a.py", Some(&in_overlay), None)
        .unwrap();
    store
        .effect_record("llm", Some("done"), "old call", "x", 1)
        .unwrap();
    store
        .conn()
        .execute("UPDATE effects SET created_at = ?1", [now_ms() - 100_000])
        .unwrap();
    store
        .effect_record("llm", Some("review"), "new call", "y", 1)
        .unwrap();
    let (agents, blobs) = store.purge(50_000).unwrap();
    assert_eq!((agents, blobs), (2, 1));
    let effects = store.effects(0, None).unwrap();
    assert_eq!(
        effects.len(),
        1,
        "the effect log keeps the retention window"
    );
    assert_eq!(effects[0].input, "new call");
    assert!(matches!(
        store.blob(&orphan),
        Err(StoreError::MissingBlob(_))
    ));
    assert_eq!(
        store.blob(&in_overlay).unwrap(),
        b"proposed",
        "still reviewable"
    );
    assert_eq!(store.agent("review").unwrap().state, AgentState::Completed);
    assert_eq!(store.purge(50_000).unwrap(), (0, 0), "idempotent");
}

#[test]
fn proposals_on_finds_only_pending_proposals_for_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    for (id, state) in [("p", AgentState::Completed), ("r", AgentState::Running)] {
        store
            .agent_insert(&AgentRecord {
                state,
                ..record(id)
            })
            .unwrap();
        let file = ProposalFile {
            path: "a.py".into(),
            base_hash: None,
            new_hash: None,
        };
        set_proposal_files(&store.conn(), id, &[file]).unwrap();
    }
    assert_eq!(store.proposals_on("a.py").unwrap(), vec!["p"]);
    assert!(store.proposals_on("b.py").unwrap().is_empty());
}

#[test]
fn a_purge_collects_blobs_at_most_once_in_the_interval_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    let hour = 3_600_000;
    let first = store.put_blob(b"orphan one").unwrap();
    assert_eq!(
        store.purge_collecting_every(hour, hour).unwrap(),
        (0, 0),
        "a new store counts as collected when it was made"
    );
    store
        .set_setting("blobs_collected_at", &(now_ms() - 2 * hour).to_string())
        .unwrap();
    assert_eq!(store.purge_collecting_every(hour, hour).unwrap(), (0, 1));
    assert!(store.blob(&first).is_err());
    let second = store.put_blob(b"orphan two").unwrap();
    assert_eq!(
        store.purge_collecting_every(hour, hour).unwrap(),
        (0, 0),
        "collected less than an hour ago"
    );
    assert_eq!(store.blob(&second).unwrap(), b"orphan two");
    // A clock set back does not put the next collection off forever.
    store
        .set_setting("blobs_collected_at", &(now_ms() + 10 * hour).to_string())
        .unwrap();
    assert_eq!(store.purge_collecting_every(hour, hour).unwrap(), (0, 1));
    let third = store.put_blob(b"orphan three").unwrap();
    assert_eq!(store.purge(hour).unwrap(), (0, 1), "a plain purge collects");
    assert!(store.blob(&third).is_err());
}

#[test]
fn purge_keeps_what_snapshots_and_fork_bases_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    store.stable_put("a.py", b"old", 0o644, 0, 100).unwrap();
    let snap = store.snapshot_create("before").unwrap();
    store.stable_put("a.py", b"new", 0o644, 0, 100).unwrap();
    store.agent_insert(&record("forked")).unwrap();
    let base = store.put_blob(b"fork base").unwrap();
    store
        .conn()
        .execute(
            "INSERT INTO agent_bases (agent_id, path, hash, base_hash) VALUES ('forked', 'b.py', ?1, NULL)",
            [&base],
        )
        .unwrap();
    store.purge(0).unwrap();
    let manifest = store.snapshot_manifest(&snap.id).unwrap();
    assert_eq!(manifest.len(), 1);
    assert_eq!(store.blob(&manifest[0].hash).unwrap(), b"old");
    assert_eq!(store.blob(&base).unwrap(), b"fork base");
}

#[test]
fn a_dead_process_with_a_fresh_heartbeat_is_taken_over_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    // A child that has exited: its pid runs no more.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    store.instance_heartbeat("live").unwrap();
    store
        .conn()
        .execute(
            "INSERT INTO instances (owner, pid, started_at, heartbeat, host) VALUES ('dead', ?1, ?2, ?2, ?3)",
            params![dead_pid, now_ms(), this_host()],
        )
        .unwrap();
    // Another machine's pid says nothing here: its heartbeat decides.
    store
        .conn()
        .execute(
            "INSERT INTO instances (owner, pid, started_at, heartbeat, host) VALUES ('remote', ?1, ?2, ?2, 'elsewhere')",
            params![dead_pid, now_ms()],
        )
        .unwrap();
    for (id, owner) in [("d", "dead"), ("r", "remote"), ("l", "live")] {
        let mut rec = record(id);
        rec.state = AgentState::Running;
        rec.owner = owner.into();
        store.agent_insert(&rec).unwrap();
    }
    let taken: Vec<String> = store
        .recover("me", 15_000)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(taken, ["d"]);
}

#[test]
fn a_broken_database_file_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    assert_eq!(Store::check_file(dir.path()), Ok(()));
    std::fs::write(dir.path().join(".chimera/chimera.db"), vec![0x5a; 8192]).unwrap();
    let err = Store::check_file(dir.path()).unwrap_err();
    assert!(
        err.contains("chimera.db") && err.contains("not a database"),
        "{err}"
    );
}

#[test]
fn snapshots_of_the_same_text_in_the_same_millisecond_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory(dir.path()).unwrap();
    store.stable_put("a.py", b"x", 0o644, 0, 100).unwrap();
    let ids: std::collections::HashSet<String> = (0..200)
        .map(|_| store.snapshot_create("before rollback to s1").unwrap().id)
        .collect();
    assert_eq!(ids.len(), 200);
}

#[test]
fn a_transaction_that_reads_then_writes_waits_for_another_process_instead_of_failing() {
    // Neovim's core and a `chimera` command's core share the file. A
    // transaction that read before the other wrote must not then fail
    // with "database is locked" (it did: recovery at start, beside a CLI).
    let dir = tempfile::tempdir().unwrap();
    let mine = Store::open(dir.path()).unwrap();
    let theirs = Store::open(dir.path()).unwrap();
    let (read_tx, read_rx) = std::sync::mpsc::channel();
    let other = std::thread::spawn(move || {
        read_rx.recv().unwrap();
        theirs.agent_insert(&record("theirs")).unwrap();
    });
    let result: Result<()> = mine.transaction(|tx| {
        let _: i64 = tx.query_row("SELECT COUNT(*) FROM agents", [], |r| r.get(0))?;
        read_tx.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        tx.execute("INSERT INTO settings (key, value) VALUES ('k', 'v')", [])?;
        Ok(())
    });
    other.join().unwrap();
    result.unwrap();
    assert_eq!(mine.setting("k").unwrap().as_deref(), Some("v"));
    assert!(mine.agent("theirs").is_ok());
}

#[test]
fn a_branch_names_a_snapshot_and_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(store
        .branch_set("exp", None)
        .unwrap_err()
        .to_string()
        .contains("no snapshot yet"));
    store
        .stable_put("a.py", b"a = 1\n", 0o644, 0, 1 << 20)
        .unwrap();
    let first = store.snapshot_create("first").unwrap();
    store
        .stable_put("a.py", b"a = 2\n", 0o644, 0, 1 << 20)
        .unwrap();
    let second = store.snapshot_create("second").unwrap();
    let exp = store.branch_set("exp/try-1", Some(&first.id)).unwrap();
    assert_eq!(exp.snapshot_id, first.id);
    // The branch stands for its head wherever a snapshot ID goes.
    assert_eq!(store.snapshot("exp/try-1").unwrap().unwrap().id, first.id);
    assert_eq!(
        store.snapshot_manifest("exp/try-1").unwrap(),
        store.snapshot_manifest(&first.id).unwrap()
    );
    assert_eq!(
        store.snapshot_effect_seq("exp/try-1").unwrap(),
        store.snapshot_effect_seq(&first.id).unwrap()
    );
    let listed = store.snapshots().unwrap();
    assert_eq!(listed[1].branches, ["exp/try-1"]);
    assert!(listed[0].branches.is_empty());
    // Set again without a snapshot: it moves on to the newest.
    store.branch_set("exp/try-1", None).unwrap();
    store.branch_set("main", Some("exp/try-1")).unwrap();
    assert_eq!(
        store.snapshots().unwrap()[0].branches,
        ["exp/try-1", "main"]
    );
    assert_eq!(store.branches().unwrap().len(), 2);
    assert_eq!(store.snapshot("main").unwrap().unwrap().id, second.id);
    for bad in ["", "a b", "-x", "../x", &"x".repeat(65), &first.id] {
        let e = store.branch_set(bad, None).unwrap_err().to_string();
        assert!(e.contains("not a branch name"), "{bad:?}: {e}");
    }
    let e = store
        .branch_set("x", Some("nosuch"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no snapshot or branch `nosuch`"), "{e}");
}

#[test]
fn a_task_is_stored_whole_and_older_rows_read_from_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let spec = crate::task::TaskSpec {
        task: "rename parse".into(),
        context: Some("def parse(): ...".into()),
        file: Some("src/app.py".into()),
        line: Some(12),
        mode: Some("tools".into()),
        capabilities: Some("readonly".into()),
        external: Some("opencode".into()),
    };
    store
        .agent_insert(&AgentRecord::new("new", spec.clone()))
        .unwrap();
    assert_eq!(store.agent("new").unwrap().spec, spec);

    // A row as versions before the `spec` column wrote it: the cursor was
    // stored counted from 0.
    store
        .conn()
        .execute(
            "INSERT INTO agents (id, state, task, context, file, cursor_line, mode, capabilities,
                                 external, owner_pid, created_at, updated_at)
             VALUES ('old', 'completed', 'rename parse', 'def parse(): ...', 'src/app.py', 11,
                     'tools', 'readonly', 'opencode', 1, 0, 0)",
            [],
        )
        .unwrap();
    assert_eq!(store.agent("old").unwrap().spec, spec);
}
