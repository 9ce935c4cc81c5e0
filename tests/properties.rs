//! Property tests of the overlay and of rebase/accept against simple
//! in-memory models, with random interleavings of agent writes, human
//! edits, accepts and rejects. The invariant users care about most: the
//! human's bytes are never lost.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;

use chimera::accept;
use chimera::overlay::Overlay;
use chimera::paths::ProjectPath;
use chimera::store::{AgentRecord, AgentState, Store};

fn record(id: &str) -> AgentRecord {
    AgentRecord {
        state: AgentState::Running,
        ..AgentRecord::new(id, "t")
    }
}

#[derive(Debug, Clone)]
enum Op {
    Human(usize, Option<u8>),
    AgentWrite(usize, usize, u8),
    AgentDelete(usize, usize),
}

const PATHS: [&str; 4] = ["a.py", "src/b.py", "src/c/d.py", "e.txt"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4usize, proptest::option::of(any::<u8>())).prop_map(|(p, c)| Op::Human(p, c)),
        (0..2usize, 0..4usize, any::<u8>()).prop_map(|(a, p, c)| Op::AgentWrite(a, p, c)),
        (0..2usize, 0..4usize).prop_map(|(a, p)| Op::AgentDelete(a, p)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Reads fall through, writes and whiteouts stay per agent, listings
    /// merge both layers — exactly as a map-of-maps model says.
    #[test]
    fn overlay_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory(dir.path()).unwrap();
        let agents = ["x", "y"];
        for a in agents {
            store.agent_insert(&record(a)).unwrap();
        }
        let mut stable: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        let mut overlays: [BTreeMap<&str, Option<Vec<u8>>>; 2] = [BTreeMap::new(), BTreeMap::new()];
        for op in ops {
            match op {
                Op::Human(p, Some(c)) => {
                    store.stable_put(PATHS[p], &[c], 0o644, 0, 1 << 20).unwrap();
                    stable.insert(PATHS[p], vec![c]);
                }
                Op::Human(p, None) => {
                    store.stable_delete(PATHS[p]).unwrap();
                    stable.remove(PATHS[p]);
                }
                Op::AgentWrite(a, p, c) => {
                    Overlay::new(&store, agents[a], 1 << 20).write(&ProjectPath::parse(PATHS[p]).unwrap(), &[c]).unwrap();
                    overlays[a].insert(PATHS[p], Some(vec![c]));
                }
                Op::AgentDelete(a, p) => {
                    let view = overlays[a].get(PATHS[p]).cloned().unwrap_or_else(|| stable.get(PATHS[p]).cloned());
                    let r = Overlay::new(&store, agents[a], 1 << 20).delete(&ProjectPath::parse(PATHS[p]).unwrap());
                    prop_assert_eq!(r.is_ok(), view.is_some(), "delete succeeds only if the agent sees the file");
                    if view.is_some() {
                        overlays[a].insert(PATHS[p], None);
                    }
                }
            }
            for (i, a) in agents.iter().enumerate() {
                let ov = Overlay::new(&store, a, 1 << 20);
                let mut want_files = BTreeSet::new();
                for p in PATHS {
                    let want = overlays[i].get(p).cloned().unwrap_or_else(|| stable.get(p).cloned());
                    prop_assert_eq!(ov.read(&ProjectPath::parse(p).unwrap()).unwrap(), want.clone());
                    if want.is_some() {
                        want_files.insert(p.to_owned());
                    }
                }
                let got: BTreeSet<String> = ov.files().unwrap().into_iter().collect();
                prop_assert_eq!(got, want_files);
            }
        }
    }
}

/// One step of a human/agent interleaving on a single file of ten lines.
#[derive(Debug, Clone)]
enum Step {
    /// The human replaces line `n` with a marker of their own.
    Human(usize),
    /// The human inserts a line of their own before line `n`.
    HumanInsert(usize),
    /// The agent (writing into its overlay) replaces line `n`.
    Agent(usize),
    Accept,
    Reject,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..10usize).prop_map(Step::Human),
        (0..10usize).prop_map(Step::HumanInsert),
        (0..10usize).prop_map(Step::Agent),
        Just(Step::Accept),
        Just(Step::Reject),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever the interleaving, every line the human wrote while an agent
    /// worked is still in the file after the accept, a reject or a refused
    /// accept changes nothing, and the buffer and stable agree.
    #[test]
    fn the_humans_lines_are_never_lost(steps in proptest::collection::vec(step(), 1..30)) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let initial: String = (0..10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(root.join("f.py"), &initial).unwrap();
        let store = Store::open(root).unwrap();
        store.stable_put("f.py", initial.as_bytes(), 0o644, 0, 1 << 20).unwrap();
        let mut human = initial.clone(); // the buffer: the ground truth
        let mut human_lines: BTreeSet<String> = BTreeSet::new();
        let mut agent_n = 0;
        let mut agent_id: Option<String> = None;
        let mut agent_text: Option<String> = None;
        let mut counter = 0;
        for s in steps {
            counter += 1;
            match s {
                Step::Human(n) | Step::HumanInsert(n) => {
                    let mut lines: Vec<String> = human.lines().map(str::to_owned).collect();
                    let n = n.min(lines.len().saturating_sub(1));
                    let mine = format!("human {counter}");
                    if matches!(s, Step::Human(_)) && !lines.is_empty() {
                        human_lines.remove(&lines[n]);
                        lines[n] = mine.clone();
                    } else {
                        lines.insert(n, mine.clone());
                    }
                    human_lines.insert(mine);
                    human = lines.join("\n") + "\n";
                    store.stable_put("f.py", human.as_bytes(), 0o644, counter, 1 << 20).unwrap();
                    if let Some(id) = &agent_id {
                        if store.agent(id).unwrap().state == AgentState::Completed {
                            accept::rebase(&store, id).unwrap();
                        }
                    }
                }
                Step::Agent(n) => {
                    // A new agent starts from the human's current text when none is pending.
                    let id = match &agent_id {
                        Some(id) => id.clone(),
                        None => {
                            agent_n += 1;
                            let id = format!("ag{agent_n}");
                            store.agent_insert(&record(&id)).unwrap();
                            agent_text = Some(human.clone());
                            agent_id = Some(id.clone());
                            // What the agent saw is its to change; what the human
                            // writes from now on, while it works, must survive.
                            human_lines.clear();
                            id
                        }
                    };
                    let rec = store.agent(&id).unwrap();
                    if rec.state != AgentState::Running {
                        continue;
                    }
                    let text = agent_text.clone().unwrap();
                    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
                    let n = n.min(lines.len() - 1);
                    lines[n] = format!("agent {counter}");
                    let new = lines.join("\n") + "\n";
                    Overlay::new(&store, &id, 1 << 20).write(&ProjectPath::parse("f.py").unwrap(), new.as_bytes()).unwrap();
                    agent_text = Some(new);
                }
                Step::Accept | Step::Reject => {
                    let Some(id) = agent_id.clone() else { continue };
                    let mut rec = store.agent(&id).unwrap();
                    if rec.state == AgentState::Running {
                        let conflicts = accept::build_proposal(&store, &id).unwrap();
                        rec.state = AgentState::Completed;
                        rec.conflicted = !conflicts.is_empty();
                        store.agent_update(&rec).unwrap();
                    }
                    let buffers = HashMap::from([("f.py".to_owned(), human.clone())]);
                    if matches!(s, Step::Accept) {
                        match accept::accept(&store, root, &id, &buffers) {
                            Ok(out) => {
                                let e = store.stable_entry("f.py").unwrap().unwrap();
                                let result = String::from_utf8(store.blob(&e.hash).unwrap()).unwrap();
                                // Apply the editor's buffer edit as Neovim would.
                                if let Some(change) = out.buffer_edits.first() {
                                    let (start, end, lines) = chimera::diff::minimal_edit(&change.base, &change.wanted);
                                    let mut b: Vec<String> = human.lines().map(str::to_owned).collect();
                                    b.splice(start..end, lines);
                                    human = b.join("\n") + "\n";
                                }
                                prop_assert_eq!(&human, &result, "buffer and stable agree after accept");
                                let now: BTreeSet<String> = human.lines().map(str::to_owned).collect();
                                for l in &human_lines {
                                    // Written while the agent worked: a merge keeps it, or
                                    // reports a conflict and the accept is refused.
                                    prop_assert!(now.contains(l), "human line {:?} lost:\n{}", l, human);
                                }
                            }
                            Err(e) => {
                                // Refused only for the reason the human can see: their
                                // edit overlaps the agent's.
                                prop_assert!(
                                    matches!(e, accept::AcceptError::Conflict(_)),
                                    "an accept failed for another reason: {}", e
                                );
                                prop_assert!(
                                    store.agent(&id).unwrap().conflicted,
                                    "refused as a conflict the record does not show"
                                );
                                let e = store.stable_entry("f.py").unwrap().unwrap();
                                prop_assert_eq!(store.blob(&e.hash).unwrap(), human.as_bytes().to_vec(), "a refused accept changes nothing");
                                accept::reject(&store, &id, None).unwrap();
                            }
                        }
                    } else {
                        accept::reject(&store, &id, None).unwrap();
                        let e = store.stable_entry("f.py").unwrap().unwrap();
                        prop_assert_eq!(store.blob(&e.hash).unwrap(), human.as_bytes().to_vec(), "reject changes nothing");
                    }
                    agent_id = None;
                    agent_text = None;
                }
            }
        }
    }
}
