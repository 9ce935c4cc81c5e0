//! Crash harness: an accept is killed with SIGKILL at random points, many
//! times. After each kill, and the recovery a restart performs (import
//! from disk, rebase of pending proposals), every file is wholly old or
//! wholly new, `PRAGMA integrity_check` is ok, and the lifecycle, the
//! stable layer, the proposal and the event log agree with the disk.
//!
//! `CHIMERA_CRASH_CYCLES` sets the number of cycles (`make crash-test` runs
//! 500; `make test` the default 40).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use chimera::accept;
use chimera::overlay::Overlay;
use chimera::paths::ProjectPath;
use chimera::store::{now_ms, AgentRecord, AgentState, Store};
use chimera::sync::{self, OpenBuffers};

const FILES: usize = 10;

fn old(i: usize) -> String {
    format!("# module {i}\n").repeat(400)
}

fn new(i: usize) -> String {
    format!("# module {i}, changed by the agent\n").repeat(400)
}

fn setup(root: &Path) {
    setup_n(root, FILES);
}

/// `n` files and an agent `ag` whose completed proposal rewrites each.
fn setup_n(root: &Path, n: usize) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    for i in 0..n {
        std::fs::write(root.join(format!("m{i}.py")), old(i)).unwrap();
    }
    let store = Store::open(root).unwrap();
    sync::import(&store, root, 1 << 20, &OpenBuffers::default()).unwrap();
    store
        .agent_insert(&AgentRecord {
            state: AgentState::Running,
            rounds: 1,
            owner: "x".into(),
            ..AgentRecord::new("ag", "crash")
        })
        .unwrap();
    let ov = Overlay::new(&store, "ag", 1 << 20);
    for i in 0..n {
        ov.write(
            &ProjectPath::parse(&format!("m{i}.py")).unwrap(),
            new(i).as_bytes(),
        )
        .unwrap();
    }
    accept::build_proposal(&store, "ag").unwrap();
    let mut rec = store.agent("ag").unwrap();
    rec.state = AgentState::Completed;
    store.agent_update(&rec).unwrap();
}

/// The child: waits for "go", accepts, exits. Run by the harness only.
#[test]
fn crash_child() {
    let Ok(root) = std::env::var("CHIMERA_CRASH_CHILD") else {
        return;
    };
    let root = Path::new(&root);
    let store = Store::open(root).unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    accept::accept(&store, root, "ag", &HashMap::new()).unwrap();
    println!("done");
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Cycles to run: `CHIMERA_CRASH_CYCLES` (make crash-test: 500), else 40.
fn cycles() -> usize {
    std::env::var("CHIMERA_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// Starts this test binary's `child` test with `env`, waits until it says
/// "ready", tells it to go, and SIGKILLs it within `max_micros` µs at random.
fn kill_child_at_random(
    child: &str,
    env: &[(&str, &std::ffi::OsStr)],
    rng: &mut Rng,
    max_micros: u64,
) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", child, "--nocapture", "--test-threads=1"]);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "child died before it was ready"
        );
    }
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    std::thread::sleep(Duration::from_micros(rng.next() % max_micros));
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
}

#[test]
fn sigkill_during_accept_never_leaves_a_half_written_file_or_a_disagreeing_store() {
    let mut rng = Rng(now_ms() as u64 | 1);
    let (mut killed_before, mut killed_during, mut finished) = (0, 0, 0);
    let cycles = cycles();
    for cycle in 0..cycles {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        setup(root);
        // An accept of 10 files takes a few milliseconds: kill somewhere in
        // [0, 12 ms) so that most kills land before, during or after it.
        kill_child_at_random(
            "crash_child",
            &[("CHIMERA_CRASH_CHILD", root.as_os_str())],
            &mut rng,
            12_000,
        );

        // Every file on disk is wholly old or wholly new.
        let mut new_on_disk = Vec::new();
        for i in 0..FILES {
            let text = std::fs::read_to_string(root.join(format!("m{i}.py"))).unwrap();
            assert!(
                text == old(i) || text == new(i),
                "cycle {cycle}: m{i}.py is half-written"
            );
            new_on_disk.push(text == new(i));
        }
        let store = Store::open(root).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok", "cycle {cycle}");
        // The restart's recovery puts back what a cut accept replaced.
        let recovered = chimera::store::journal::recover(&store, root).unwrap();
        let cut = new_on_disk.iter().any(|n| *n) && !new_on_disk.iter().all(|n| *n);
        if cut {
            killed_during += 1;
        }
        let new_on_disk: Vec<bool> = (0..FILES)
            .map(|i| std::fs::read_to_string(root.join(format!("m{i}.py"))).unwrap() == new(i))
            .collect();
        let rec = store.agent("ag").unwrap();
        let accepted_event = store
            .events_since(0)
            .unwrap()
            .iter()
            .any(|e| e.2 == "accepted");
        match rec.state {
            AgentState::Accepted => {
                assert!(
                    new_on_disk.iter().all(|n| *n),
                    "cycle {cycle}: accepted but a file is old"
                );
                assert!(accepted_event, "cycle {cycle}: accepted without its event");
                finished += 1;
            }
            AgentState::Completed => {
                assert!(
                    !accepted_event,
                    "cycle {cycle}: an accepted event for an unaccepted proposal"
                );
                // Wholly before: not one file of the cut accept is left new.
                assert!(
                    new_on_disk.iter().all(|n| !*n),
                    "cycle {cycle}: completed but files are new after recovery ({recovered:?})"
                );
                if !cut {
                    killed_before += 1;
                }
            }
            other => panic!("cycle {cycle}: unexpected state {other:?}"),
        }
        // The restart's recovery: stable follows the disk, the proposal is
        // rebased, and what is left to review is exactly what is not on disk.
        sync::import(&store, root, 1 << 20, &OpenBuffers::default()).unwrap();
        let leftovers: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| sync::is_accept_leftover(n))
            .collect();
        assert!(
            leftovers.is_empty(),
            "cycle {cycle}: the restart left temporary files: {leftovers:?}"
        );
        for (i, is_new) in new_on_disk.iter().enumerate() {
            let e = store.stable_entry(&format!("m{i}.py")).unwrap().unwrap();
            let want = if *is_new { new(i) } else { old(i) };
            assert_eq!(
                store.blob(&e.hash).unwrap(),
                want.as_bytes(),
                "cycle {cycle}: stable disagrees with m{i}.py"
            );
        }
        if rec.state == AgentState::Completed {
            accept::rebase(&store, "ag").unwrap();
            let left: Vec<String> = store
                .proposal_files("ag")
                .unwrap()
                .into_iter()
                .map(|f| f.path)
                .collect();
            let want: Vec<String> = (0..FILES)
                .filter(|i| !new_on_disk[*i])
                .map(|i| format!("m{i}.py"))
                .collect();
            let mut want_sorted = want.clone();
            want_sorted.sort();
            assert_eq!(
                left, want_sorted,
                "cycle {cycle}: proposal disagrees with the disk"
            );
            // And accepting the rest completes the change; with nothing
            // left (killed after the last rename) the rebase completed it.
            if want.is_empty() {
                assert_eq!(store.agent("ag").unwrap().state, AgentState::Accepted);
            } else {
                accept::accept(&store, root, "ag", &HashMap::new()).unwrap();
            }
            for i in 0..FILES {
                assert_eq!(
                    std::fs::read_to_string(root.join(format!("m{i}.py"))).unwrap(),
                    new(i)
                );
            }
        }
    }
    println!(
        "crash harness: {cycles} cycles, 0 failures; killed before the accept: {killed_before}, \
         during it (some files new): {killed_during}, after it: {finished}"
    );
}

/// The project after an accepted change, with a snapshot before it (`old`)
/// and ended agents for a purge to remove. Returns the old snapshot's ID.
fn setup_history(root: &Path) -> String {
    setup(root);
    let store = Store::open(root).unwrap();
    let before = store.snapshot_create("before the change").unwrap();
    accept::accept(&store, root, "ag", &HashMap::new()).unwrap();
    for k in 0..20 {
        let id = format!("ended{k}");
        store
            .agent_insert(&AgentRecord::new(id.clone(), "t"))
            .unwrap();
        let mut rec = store.agent(&id).unwrap();
        rec.state = AgentState::Cancelled;
        store.agent_update(&rec).unwrap();
    }
    before.id
}

/// The child of the history harness: waits for "go", then rolls back,
/// purges or snapshots, over and over, until it is killed.
#[test]
fn crash_history_child() {
    let (Ok(root), Ok(op), Ok(snapshot)) = (
        std::env::var("CHIMERA_CRASH_HISTORY"),
        std::env::var("CHIMERA_CRASH_OP"),
        std::env::var("CHIMERA_CRASH_SNAPSHOT"),
    ) else {
        return;
    };
    let root = Path::new(&root);
    let store = Store::open(root).unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let after = store.snapshots().unwrap()[0].id.clone();
    for round in 0.. {
        match op.as_str() {
            "rollback" => {
                // Back and forth between the two states.
                let to = if round % 2 == 0 { &snapshot } else { &after };
                let plan = chimera::rollback::plan(&store, to).unwrap();
                chimera::rollback::apply(&store, root, &plan, &HashMap::new()).unwrap();
            }
            "purge" => {
                store.purge(0).unwrap();
            }
            _ => {
                store.snapshot_create("in a loop").unwrap();
            }
        }
    }
}

#[test]
fn sigkill_during_rollback_purge_or_snapshot_keeps_files_whole_and_snapshots_restorable() {
    let mut rng = Rng(now_ms() as u64 | 1);
    let ops = ["rollback", "purge", "snapshot"];
    let cycles = cycles();
    for cycle in 0..cycles {
        let op = ops[cycle % ops.len()];
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let before = setup_history(root);
        kill_child_at_random(
            "crash_history_child",
            &[
                ("CHIMERA_CRASH_HISTORY", root.as_os_str()),
                ("CHIMERA_CRASH_OP", op.as_ref()),
                ("CHIMERA_CRASH_SNAPSHOT", before.as_ref()),
            ],
            &mut rng,
            30_000,
        );

        // Every file is wholly in one state or the other.
        for i in 0..FILES {
            let text = std::fs::read_to_string(root.join(format!("m{i}.py"))).unwrap();
            assert!(
                text == old(i) || text == new(i),
                "cycle {cycle} ({op}): m{i}.py is half-written"
            );
        }
        let store = Store::open(root).unwrap();
        assert_eq!(
            store.integrity_check().unwrap(),
            "ok",
            "cycle {cycle} ({op})"
        );
        // The restart: a purge, then the import.
        store.purge(24 * 3_600_000).unwrap();
        sync::import(&store, root, 1 << 20, &OpenBuffers::default()).unwrap();
        // Every snapshot can still be restored, and restoring the first
        // gives back the project as it was.
        for s in store.snapshots().unwrap() {
            for e in store.snapshot_manifest(&s.id).unwrap() {
                assert!(
                    store.blob(&e.hash).is_ok(),
                    "cycle {cycle} ({op}): snapshot {} lost {}",
                    s.id,
                    e.path
                );
            }
        }
        let plan = chimera::rollback::plan(&store, &before).unwrap();
        chimera::rollback::apply(&store, root, &plan, &HashMap::new()).unwrap();
        for i in 0..FILES {
            assert_eq!(
                std::fs::read_to_string(root.join(format!("m{i}.py"))).unwrap(),
                old(i),
                "cycle {cycle} ({op})"
            );
        }
    }
    println!(
        "history crash harness: {cycles} cycles (rollback, purge, snapshot in turn), 0 failures"
    );
}

/// Files of the failpoint harness: enough that a cut lands between two of
/// many renames, as in the 1,500-file accept.
const MANY: usize = 120;

fn setup_many(root: &Path) {
    setup_n(root, MANY);
}

/// Which files hold the agent's text (the others must hold the old one).
fn new_files(root: &Path, cycle: &str) -> Vec<usize> {
    (0..MANY)
        .filter(|&i| {
            let text = std::fs::read_to_string(root.join(format!("m{i}.py"))).unwrap();
            assert!(
                text == old(i) || text == new(i),
                "{cycle}: m{i}.py is half-written"
            );
            text == new(i)
        })
        .collect()
}

/// The project is wholly as before the accept, and the store says so: the
/// agent still `completed` with its whole proposal, stable the old text.
fn wholly_before(store: &Store, root: &Path, cycle: &str) {
    assert_eq!(
        new_files(root, cycle),
        Vec::<usize>::new(),
        "{cycle}: files still new"
    );
    assert_eq!(
        store.agent("ag").unwrap().state,
        AgentState::Completed,
        "{cycle}"
    );
    assert_eq!(
        store.proposal_files("ag").unwrap().len(),
        MANY,
        "{cycle}: the proposal shrank"
    );
    for i in 0..MANY {
        let e = store.stable_entry(&format!("m{i}.py")).unwrap().unwrap();
        assert_eq!(
            store.blob(&e.hash).unwrap(),
            old(i).as_bytes(),
            "{cycle}: stable m{i}.py"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(root.join(".chimera"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("intent-"))
        .collect();
    assert!(leftovers.is_empty(), "{cycle}: {leftovers:?}");
}

/// Where the failpoint harness cuts: after every rename for `make
/// crash-test` (`CHIMERA_CRASH_EVERY=1`), else a spread of them.
fn cut_points() -> Vec<usize> {
    if std::env::var("CHIMERA_CRASH_EVERY").is_ok() {
        (1..=MANY).collect()
    } else {
        vec![1, 2, MANY / 2, MANY - 1, MANY]
    }
}

#[test]
fn an_accept_killed_after_any_rename_is_put_back_whole_and_the_store_agrees() {
    for k in cut_points() {
        let cycle = format!("killed after rename {k} of {MANY}");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        setup_many(root);
        let status = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env("CHIMERA_CRASH_CHILD", root)
            .env("CHIMERA_FAILPOINTS", format!("after-rename={k}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .and_then(|mut c| {
                c.stdin.as_mut().unwrap().write_all(b"go\n")?;
                c.wait()
            })
            .unwrap();
        assert!(!status.success(), "{cycle}: the child was not cut");
        // The failpoint cut exactly there.
        assert_eq!(new_files(root, &cycle).len(), k, "{cycle}");
        // The restart: recovery first, then the import.
        let store = Store::open(root).unwrap();
        let recovered = chimera::store::journal::recover(&store, root).unwrap();
        assert_eq!(recovered.len(), 1, "{cycle}: {recovered:?}");
        assert_eq!(recovered[0].restored.len(), k, "{cycle}");
        assert!(
            recovered[0].describe().contains("put back"),
            "{}",
            recovered[0].describe()
        );
        sync::import(&store, root, 1 << 20, &OpenBuffers::default()).unwrap();
        accept::rebase(&store, "ag").unwrap();
        wholly_before(&store, root, &cycle);
        // Then the human decides, and gets all of it or none of it.
        if k % 2 == 0 {
            accept::reject(&store, "ag", None).unwrap();
            assert_eq!(new_files(root, &cycle), Vec::<usize>::new());
        } else {
            accept::accept(&store, root, "ag", &HashMap::new()).unwrap();
            assert_eq!(new_files(root, &cycle).len(), MANY, "{cycle}");
            assert_eq!(store.agent("ag").unwrap().state, AgentState::Accepted);
        }
    }
}

/// What the tolerant child said of its accept in `root` with
/// `failpoints` armed.
fn accept_failing(root: &Path, failpoints: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_tolerant",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CHIMERA_CRASH_CHILD", root)
        .env("CHIMERA_FAILPOINTS", failpoints)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_rename_that_fails_midway_undoes_the_ones_before_it() {
    for k in cut_points() {
        let cycle = format!("rename {k} of {MANY} failed");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        setup_many(root);
        let said = accept_failing(root, &format!("rename={k}:error"));
        assert!(said.contains("accept failed"), "{cycle}: {said}");
        let store = Store::open(root).unwrap();
        // No restart needed: the failed accept put everything back itself.
        wholly_before(&store, root, &cycle);
        assert!(chimera::store::journal::recover(&store, root)
            .unwrap()
            .is_empty());
    }
}

#[test]
fn an_undo_that_fails_too_is_said_and_the_journal_puts_the_files_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    setup_many(root);
    // The 60th rename fails; putting back the first of the 59 before it
    // fails too.
    let said = accept_failing(root, "rename=60:error,undo=1:error");
    assert!(said.contains("accept failed"), "{said}");
    assert!(said.contains("could not be put back right away"), "{said}");
    let store = Store::open(root).unwrap();
    wholly_before(&store, root, "an undo failed");
}

/// The child of the failing-rename harness: accepts, says how it went.
#[test]
fn crash_child_tolerant() {
    let Ok(root) = std::env::var("CHIMERA_CRASH_CHILD") else {
        return;
    };
    let root = Path::new(&root);
    let store = Store::open(root).unwrap();
    match accept::accept(&store, root, "ag", &HashMap::new()) {
        Ok(_) => println!("accepted"),
        Err(e) => println!("accept failed: {e}"),
    }
}
