use std::path::Path;

use super::extract::extract;
use super::index::Indexer;
use super::inject::{apply, buffer_edits};
use super::*;
use crate::store::Store;

fn store() -> Store {
    Store::open_in_memory(Path::new("/project")).unwrap()
}

/// `(type, qualname)` of every node but the file.
fn shape(path: &str, text: &str) -> Vec<(NodeType, String)> {
    extract(path, text)
        .nodes
        .iter()
        .skip(1)
        .map(|n| (n.node_type, n.qualname.clone()))
        .collect()
}

/// Indexes `text` and returns `qualname → id` of the live nodes.
fn ids(ix: &mut Indexer, st: &Store, path: &str, text: &str) -> Vec<(String, String)> {
    ix.index_text(st, path, text).unwrap();
    ix.topology()
        .nodes_in(path)
        .iter()
        .map(|n| (n.qualname.clone(), n.id.clone()))
        .collect()
}

fn id_of(ix: &Indexer, path: &str, qualname: &str) -> String {
    ix.topology()
        .nodes_in(path)
        .iter()
        .find(|n| n.qualname == qualname)
        .map(|n| n.id.clone())
        .unwrap_or_else(|| panic!("no live node {qualname} in {path}"))
}

/// The text with its IDs injected, as inline mode writes it.
fn injected(ix: &Indexer, path: &str, text: &str) -> String {
    apply(text, &ix.id_edits(path, text))
}

#[test]
fn finds_classes_functions_and_methods_of_every_shape() {
    let src = "\
import os

@decorator
def top(a):
    def inner():
        pass
    return inner

async def fetch():
    pass

class Config(Base):
    @property
    def path(self):
        return 1

    async def load(self):
        class Local:
            def m(self):
                pass
";
    assert_eq!(
        shape("a.py", src),
        vec![
            (NodeType::Function, "top".into()),
            (NodeType::Function, "top.inner".into()),
            (NodeType::Function, "fetch".into()),
            (NodeType::Class, "Config".into()),
            (NodeType::Method, "Config.path".into()),
            (NodeType::Method, "Config.load".into()),
            (NodeType::Class, "Config.load.Local".into()),
            (NodeType::Method, "Config.load.Local.m".into()),
        ]
    );
    let ex = extract("a.py", src);
    let top = &ex.nodes[1];
    assert_eq!(
        (top.start_line, top.end_line),
        (3, 7),
        "decorators are part of the node"
    );
    assert_eq!(ex.nodes[0].node_type, NodeType::File);
}

#[test]
fn ids_in_strings_and_docstrings_are_not_comments() {
    let src = "def f():  \"# rm_aaaaaaaa\"\n    \"\"\"Doc # rm_bbbbbbbb\"\"\"\n    return 1\n";
    let ex = extract("a.py", src);
    assert_eq!(ex.nodes[1].id_comment, None);
    let st = store();
    let mut ix = Indexer::default();
    let out = injected(&ix, "a.py", src);
    let got = ids(&mut ix, &st, "a.py", &out);
    assert!(!got
        .iter()
        .any(|(_, id)| id == "rm_aaaaaaaa" || id == "rm_bbbbbbbb"));
}

#[test]
fn inline_injection_changes_only_the_id_bytes() {
    let cases = [
        // CRLF line endings and no final newline.
        "class A:\r\n    def m(self):\r\n        return 1",
        // Tabs, a `\` continuation on the def line, a trailing comment.
        "def f(a, \\\n      b):  # noqa\n\treturn a\n",
        // A shebang and an encoding line stay first.
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\ndef g():\n    pass\n",
        // A syntax error elsewhere in the file (mid-edit).
        "def ok():\n    pass\n\nx = (1,\n\ndef also():\n    pass\n",
        // Empty file.
        "",
    ];
    for src in cases {
        let ix = Indexer::default();
        let edits = ix.id_edits("a.py", src);
        let out = apply(src, &edits);
        // Removing what was inserted gives back the original bytes.
        let mut restored = out.clone();
        for e in edits.iter().rev() {
            let start = e.start
                + edits
                    .iter()
                    .filter(|x| x.start < e.start)
                    .map(|x| x.text.len() - (x.end - x.start))
                    .sum::<usize>();
            restored.replace_range(start..start + e.text.len(), &src[e.start..e.end]);
        }
        assert_eq!(restored, src, "only IDs were added to {src:?}:\n{out}");
        assert!(
            crate::python::syntax_problem(&out).is_none()
                || crate::python::syntax_problem(src).is_some(),
            "{out}"
        );
        // The result carries every ID: a second pass changes nothing.
        let st = store();
        let mut ix = Indexer::default();
        ix.index_text(&st, "a.py", &out).unwrap();
        assert!(ix.id_edits("a.py", &out).is_empty(), "{out}");
    }
}

#[test]
fn injected_comments_have_the_seed_format() {
    let src = "#!/usr/bin/env python\nclass A:\r\n    def m(self): return 1\n";
    let ix = Indexer::default();
    let out = injected(&ix, "a.py", src);
    let lines: Vec<&str> = out.split('\n').collect();
    assert!(lines[0].starts_with("#!"));
    assert!(ids::file_comment_id(lines[1], "#").is_some(), "{out}");
    assert!(lines[2].starts_with("class A:    # rm_"), "{out}");
    assert!(lines[2].ends_with('\r'), "CRLF kept: {out:?}");
    assert!(
        lines[3].starts_with("    def m(self): return 1    # rm_"),
        "{out}"
    );
}

#[test]
fn a_body_running_on_from_the_header_line_gets_no_inline_comment() {
    let src = "def f(): return (1,\n    2)\n";
    let ex = extract("a.py", src);
    assert_eq!(ex.nodes[1].id_insert_at, None);
    let ix = Indexer::default();
    let out = injected(&ix, "a.py", src);
    assert!(out.ends_with(src), "{out}");
}

#[test]
fn ids_survive_edits_and_renames_make_new_nodes() {
    let st = store();
    let mut ix = Indexer::default();
    let v1 = "class C:\n    def load(self):\n        pass\n\ndef helper():\n    pass\n";
    let before = ids(&mut ix, &st, "m.py", v1);
    let load = id_of(&ix, "m.py", "C.load");
    // Body edits and moves keep every ID.
    let v2 = "def helper():\n    return 2\n\nclass C:\n    x = 1\n\n    def load(self):\n        return 1\n";
    let after = ids(&mut ix, &st, "m.py", v2);
    let mut b = before.clone();
    let mut a = after.clone();
    b.sort();
    a.sort();
    assert_eq!(a, b);
    // A rename is a new node; the old one is orphaned, not deleted.
    let v3 = v2.replace("def load", "def load_config");
    ids(&mut ix, &st, "m.py", &v3);
    let renamed = id_of(&ix, "m.py", "C.load_config");
    assert_ne!(renamed, load);
    let old = st.remora_node(&load).unwrap().unwrap();
    assert_eq!(old.status, NodeStatus::Orphaned);
    assert_eq!(
        ix.topology().node(&load).unwrap().status,
        NodeStatus::Orphaned
    );
}

#[test]
fn same_named_nodes_keep_their_ids_in_order() {
    let st = store();
    let mut ix = Indexer::default();
    let v1 = "if A:\n    def f():\n        return 1\nelse:\n    def f():\n        return 2\n";
    let first = ids(&mut ix, &st, "m.py", v1);
    let v2 =
        "x = 0\nif A:\n    def f():\n        return 10\nelse:\n    def f():\n        return 20\n";
    let second = ids(&mut ix, &st, "m.py", v2);
    assert_eq!(
        first, second,
        "the first f stays the first, the second the second"
    );
}

#[test]
fn comment_ids_are_adopted_into_an_empty_database() {
    let src = "# remora-file: rm_file0001\ndef f():    # rm_aaaa0001\n    pass\n\nclass K:    # rm_aaaa0002\n    def m(self):    # rm_aaaa0003\n        pass\n";
    let st = store();
    let mut ix = Indexer::default();
    let got = ids(&mut ix, &st, "m.py", src);
    let got: Vec<&str> = got.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(
        got,
        ["rm_file0001", "rm_aaaa0001", "rm_aaaa0002", "rm_aaaa0003"]
    );
    assert!(ix.id_edits("m.py", src).is_empty());
}

#[test]
fn a_comment_naming_another_node_is_a_rename() {
    let st = store();
    let mut ix = Indexer::default();
    let v1 = "def load():    # rm_aaaa0001\n    pass\n";
    ids(&mut ix, &st, "m.py", v1);
    // The human renamed the function and kept the comment.
    let v2 = "def load_config():    # rm_aaaa0001\n    pass\n";
    let edits = ix.id_edits("m.py", v2);
    let out = apply(v2, &edits);
    assert!(
        !out.contains("rm_aaaa0001"),
        "the line gets a new ID: {out}"
    );
    ids(&mut ix, &st, "m.py", &out);
    assert_ne!(id_of(&ix, "m.py", "load_config"), "rm_aaaa0001");
    assert_eq!(
        ix.topology().node("rm_aaaa0001").unwrap().status,
        NodeStatus::Orphaned
    );
    // A copied definition with the same comment: only one keeps the ID.
    let v3 = "def f():    # rm_bbbb0001\n    pass\n\ndef g():    # rm_bbbb0001\n    pass\n";
    let out = injected(&ix, "n.py", v3);
    assert_eq!(out.matches("rm_bbbb0001").count(), 1, "{out}");
}

#[test]
fn a_syntax_error_mid_edit_keeps_ids_and_orphans_nothing() {
    let st = store();
    let mut ix = Indexer::default();
    let v1 = "def a():\n    pass\n\ndef b():\n    pass\n\ndef c():\n    pass\n";
    let before = ids(&mut ix, &st, "m.py", v1);
    let v2 = "def a():\n    pass\n\ndef b(:\n    pass\n\ndef c():\n    pass\n";
    ids(&mut ix, &st, "m.py", v2);
    for (_, id) in &before {
        assert_eq!(
            ix.topology().node(id).unwrap().status,
            NodeStatus::Active,
            "{id}"
        );
    }
    let after = ids(&mut ix, &st, "m.py", v1);
    let mut a = after.clone();
    let mut b = before.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

fn edges(st: &Store, kind: EdgeKind) -> Vec<(String, String)> {
    st.remora_edges(kind).unwrap()
}

#[test]
fn edges_cover_containment_calls_imports_and_inheritance() {
    let st = store();
    let mut ix = Indexer::default();
    ix.index_text(
        &st,
        "pkg/base.py",
        "class Base:\n    def run(self):\n        return self.step()\n\n    def step(self):\n        return 1\n",
    )
    .unwrap();
    ix.index_text(
        &st,
        "pkg/app.py",
        "from .base import Base\nimport pkg.util\n\nclass App(Base):\n    def go(self):\n        helper()\n        pkg.util.tool()\n        return Base()\n\ndef helper():\n    print(1)\n",
    )
    .unwrap();
    ix.index_text(&st, "pkg/util.py", "def tool():\n    return 0\n")
        .unwrap();
    let id = |p: &str, q: &str| id_of(&ix, p, q);
    let calls = edges(&st, EdgeKind::Calls);
    for (from, to) in [
        (
            id("pkg/base.py", "Base.run"),
            id("pkg/base.py", "Base.step"),
        ),
        (id("pkg/app.py", "App.go"), id("pkg/app.py", "helper")),
        // Backfilled: util.py appeared after app.py.
        (id("pkg/app.py", "App.go"), id("pkg/util.py", "tool")),
        (id("pkg/app.py", "App.go"), id("pkg/base.py", "Base")),
    ] {
        assert!(
            calls.contains(&(from.clone(), to.clone())),
            "{from} → {to} in {calls:?}"
        );
    }
    assert_eq!(
        calls.len(),
        4,
        "print() and other builtins make no edge: {calls:?}"
    );
    let imports = edges(&st, EdgeKind::Imports);
    assert!(imports.contains(&(
        id("pkg/app.py", "pkg/app.py"),
        id("pkg/base.py", "pkg/base.py")
    )));
    assert!(imports.contains(&(
        id("pkg/app.py", "pkg/app.py"),
        id("pkg/util.py", "pkg/util.py")
    )));
    assert_eq!(
        edges(&st, EdgeKind::Inherits),
        vec![(id("pkg/app.py", "App"), id("pkg/base.py", "Base"))]
    );
    let parent = edges(&st, EdgeKind::ParentOf);
    assert!(parent.contains(&(id("pkg/app.py", "App"), id("pkg/app.py", "App.go"))));
    assert!(parent.contains(&(id("pkg/base.py", "pkg/base.py"), id("pkg/base.py", "Base"))));
    let t = ix.topology();
    let callers: Vec<String> = t
        .callers(&id("pkg/util.py", "tool"))
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(callers, ["go"]);
    let callees: Vec<String> = t
        .callees(&id("pkg/app.py", "App.go"))
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(callees.len(), 3, "{callees:?}");
}

#[test]
fn edges_to_a_node_that_goes_away_are_removed_and_never_duplicated() {
    let st = store();
    let mut ix = Indexer::default();
    ix.index_text(&st, "lib.py", "def tool():\n    pass\n")
        .unwrap();
    let caller = "from lib import tool\n\ndef main():\n    tool()\n    tool()\n";
    ix.index_text(&st, "main.py", caller).unwrap();
    assert_eq!(edges(&st, EdgeKind::Calls).len(), 1);
    // Re-indexing the same and a slightly different text adds nothing twice.
    ix.index_text(&st, "main.py", &format!("{caller}\n"))
        .unwrap();
    assert_eq!(edges(&st, EdgeKind::Calls).len(), 1);
    // tool() is deleted: the call edge goes; it comes back with the new node.
    ix.index_text(&st, "lib.py", "def other():\n    pass\n")
        .unwrap();
    assert!(edges(&st, EdgeKind::Calls).is_empty());
    ix.index_text(&st, "lib.py", "def tool():\n    pass\n")
        .unwrap();
    let calls = edges(&st, EdgeKind::Calls);
    assert_eq!(
        calls,
        vec![(id_of(&ix, "main.py", "main"), id_of(&ix, "lib.py", "tool"))]
    );
    // The file goes: its nodes are orphaned and the edges into it removed.
    ix.remove(&st, "lib.py").unwrap();
    assert!(edges(&st, EdgeKind::Calls).is_empty());
    assert!(edges(&st, EdgeKind::Imports).is_empty());
}

#[test]
fn the_store_gives_back_the_same_topology_and_unchanged_files_are_not_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let st = Store::open(dir.path()).unwrap();
    let files = [
        (
            "a.py".to_string(),
            "from b import g\n\ndef f():\n    g()\n".to_string(),
        ),
        ("b.py".to_string(), "def g():\n    pass\n".to_string()),
        ("README.md".to_string(), "not python".to_string()),
    ];
    let list: Vec<(String, Option<String>)> = files
        .iter()
        .map(|(p, t)| (p.clone(), Some(crate::store::hash_bytes(t.as_bytes()))))
        .collect();
    let load = |p: &str| files.iter().find(|(q, _)| q == p).map(|(_, t)| t.clone());
    let mut ix = Indexer::default();
    let stats = ix.index_all(&st, &list, 2, load).unwrap();
    assert_eq!(stats.parsed, 2);
    let calls = edges(&st, EdgeKind::Calls);
    assert_eq!(calls.len(), 1);

    // Reopening: only hashes are read; unchanged files are neither loaded
    // nor parsed, and the topology loads when first needed.
    let mut again = Indexer::open(&st).unwrap();
    let stats = again
        .index_all(&st, &list, 2, |_| panic!("an unchanged file was loaded"))
        .unwrap();
    assert_eq!((stats.parsed, stats.unchanged), (0, 2));
    assert_eq!(again.topology().counts(), (0, 0));
    again.hydrate(&st).unwrap();
    assert_eq!(again.topology().counts(), ix.topology().counts());
    assert_eq!(
        again.topology().nodes_in("a.py"),
        ix.topology().nodes_in("a.py")
    );
    // A file gone from the list is removed.
    let stats = again.index_all(&st, &list[..1], 2, load).unwrap();
    assert_eq!(stats.removed, 1);
    assert!(edges(&st, EdgeKind::Calls).is_empty());
}

/// Everything a topology answers about `paths` and `ids`, in one value.
fn answers(t: &topology::Topology, paths: &[&str], ids: &[String]) -> String {
    let mut out = Vec::new();
    for p in paths {
        let mut edges = t.edges_of(p);
        edges.sort();
        out.push(format!("{p}: {:?}\n{edges:?}", t.nodes_in(p)));
        for word in ["Shop", "total", "helper", "load"] {
            out.push(format!("{word}: {}", t.files_naming(word).any(|f| f == *p)));
        }
    }
    for id in ids {
        out.push(format!(
            "{id}: {:?} {:?} {:?}",
            t.node(id),
            t.callers(id),
            t.callees(id)
        ));
    }
    out.join("\n")
}

#[test]
fn the_topology_loaded_from_the_store_answers_as_the_one_that_wrote_it() {
    let st = store();
    let mut ix = Indexer::default();
    let shop = "from util import helper\n\n\nclass Shop:\n    def total(self):\n        return helper(self.load())\n\n    def load(self):\n        return []\n";
    let util = "def helper(xs):\n    return sum(xs)\n\n\ndef unused():\n    return helper([])\n";
    ix.index_text(&st, "shop.py", shop).unwrap();
    ix.index_text(&st, "util.py", util).unwrap();
    let load = id_of(&ix, "shop.py", "Shop.load");
    // A rename orphans a node; a syntax error keeps the nodes it hides.
    ix.index_text(
        &st,
        "shop.py",
        &shop
            .replace("def load", "def fetch")
            .replace(".load()", ".fetch()"),
    )
    .unwrap();
    ix.index_text(
        &st,
        "util.py",
        &util.replace("return sum(xs)", "return sum(xs"),
    )
    .unwrap();
    let mut ids: Vec<String> = ["shop.py", "util.py"]
        .iter()
        .flat_map(|p| ix.topology().nodes_in(p))
        .map(|n| n.id)
        .collect();
    ids.push(load.clone());
    let loaded = Indexer::load(&st).unwrap();
    let paths = ["shop.py", "util.py"];
    let (want, got) = (
        answers(ix.topology(), &paths, &ids),
        answers(loaded.topology(), &paths, &ids),
    );
    assert_eq!(got, want);
    // What was asked is there to compare: the calls across files and the orphan.
    assert!(want.contains("Calls"), "{want}");
    assert_eq!(
        loaded.topology().node(&load).unwrap().status,
        NodeStatus::Orphaned
    );
    assert_eq!(loaded.topology().counts(), ix.topology().counts());
}

#[test]
fn node_at_finds_the_innermost_definition() {
    let st = store();
    let mut ix = Indexer::default();
    ix.index_text(
        &st,
        "m.py",
        "x = 1\n\nclass A:\n    def m(self):\n        return 1\n",
    )
    .unwrap();
    let t = ix.topology();
    assert_eq!(t.node_at("m.py", 5).unwrap().qualname, "A.m");
    assert_eq!(t.node_at("m.py", 3).unwrap().qualname, "A");
    assert_eq!(t.node_at("m.py", 1).unwrap().node_type, NodeType::File);
}

#[test]
fn buffer_edits_use_rows_and_byte_columns() {
    let src = "def f():\r\n    pass\r\n";
    let ix = Indexer::default();
    let edits = ix.id_edits("a.py", src);
    let be = buffer_edits(src, &edits);
    assert_eq!(be[0].start_row, 0);
    assert_eq!(be[0].start_col, 0);
    assert_eq!(be[0].lines.len(), 2, "a new first line: {be:?}");
    assert_eq!(be[1].start_row, 0);
    assert_eq!(be[1].start_col, 8, "before the \\r: {be:?}");
}

#[test]
fn module_names_follow_packages() {
    assert_eq!(crate::lang::module_key("pkg/mod.py"), "pkg.mod");
    assert_eq!(crate::lang::module_key("pkg/__init__.py"), "pkg");
    assert_eq!(crate::lang::module_key("top.py"), "top");
}

fn all_events() -> Vec<events::Event> {
    use events::Event::*;
    vec![
        AgentStart {
            agent_id: "rm_a0000000".into(),
            trigger_event_id: None,
        },
        AgentComplete {
            agent_id: "rm_a0000000".into(),
            result: "done".into(),
        },
        AgentError {
            agent_id: "rm_a0000000".into(),
            error: "boom".into(),
        },
        AgentMessage {
            from_agent: "rm_a0000000".into(),
            to_agent: "rm_b0000000".into(),
            message: "add hints".into(),
        },
        RewriteProposal {
            agent_id: "rm_b0000000".into(),
            proposal_id: "p1".into(),
            old_source: "a".into(),
            new_source: "b".into(),
            diff: "-a\n+b\n".into(),
        },
        RewriteApplied {
            agent_id: "rm_b0000000".into(),
            proposal_id: "p1".into(),
        },
        RewriteRejected {
            agent_id: "rm_b0000000".into(),
            proposal_id: "p1".into(),
            feedback: "no".into(),
        },
        TopologyChanged {
            file_path: "a.py".into(),
            added_nodes: vec!["rm_c0000000".into()],
            removed_nodes: vec![],
            orphaned_nodes: vec![],
        },
        HumanChat {
            to_agent: "rm_a0000000".into(),
            message: "hi".into(),
        },
        AgentQuestion {
            from_agent: "rm_a0000000".into(),
            to_agent: "rm_b0000000".into(),
            question: "what do you return?".into(),
        },
        AgentAnswer {
            from_agent: "rm_b0000000".into(),
            to_agent: "rm_a0000000".into(),
            answer: "one".into(),
        },
    ]
}

#[test]
fn every_event_type_is_logged_in_order_and_replays_from_a_sequence() {
    let st = store();
    let mut seqs = Vec::new();
    for e in all_events() {
        let (rec, _) = st.remora_emit(&e, Some("cr_x")).unwrap();
        assert_eq!(rec.event, e);
        seqs.push(rec.seq);
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let all = st.remora_events_since(0, None, 100).unwrap();
    let types: Vec<&str> = all.iter().map(|r| r.event.event_type()).collect();
    assert_eq!(types, events::EVENT_TYPES);
    assert!(all
        .iter()
        .all(|r| r.correlation_id.as_deref() == Some("cr_x") && !r.event_id.is_empty()));
    // Replay from the middle gives the rest, in order.
    let rest = st.remora_events_since(seqs[4], None, 100).unwrap();
    assert_eq!(rest.iter().map(|r| r.seq).collect::<Vec<_>>(), seqs[5..]);
    // Filtered by node: from or to it.
    let b = st.remora_events_since(0, Some("rm_b0000000"), 100).unwrap();
    assert_eq!(b.len(), 6);
    // The seed's wire names.
    let json = serde_json::to_value(&all[3]).unwrap();
    assert_eq!(json["event_type"], "AgentMessageEvent");
    assert_eq!(json["from_agent"], "rm_a0000000");
}

#[test]
fn subscriptions_turn_events_into_triggers() {
    let st = store();
    for p in events::Pattern::for_node("rm_b0000000") {
        st.subscribe("rm_b0000000", &p).unwrap();
    }
    st.subscribe(
        "rm_b0000000",
        &events::Pattern {
            event_types: vec!["RewriteRejectedEvent".into()],
            from_agents: vec!["rm_b0000000".into()],
            ..Default::default()
        },
    )
    .unwrap();
    st.subscribe(
        "rm_watcher0",
        &events::Pattern {
            event_types: vec!["RewriteProposalEvent".into()],
            ..Default::default()
        },
    )
    .unwrap();
    let fired: Vec<Vec<String>> = all_events()
        .iter()
        .map(|e| {
            st.remora_emit(e, None)
                .unwrap()
                .1
                .into_iter()
                .map(|t| t.agent_id)
                .collect()
        })
        .collect();
    assert_eq!(
        fired,
        vec![
            vec![],
            vec![],
            vec![],
            vec!["rm_b0000000".to_string()], // a message to it
            vec!["rm_watcher0".to_string()],
            vec![],
            vec!["rm_b0000000".to_string()], // its proposal was rejected
            vec![],
            vec![],
            vec![], // a question is answered, not woken for
            vec![],
        ]
    );
    // not_from_self: a node's message to itself wakes nothing.
    let own = events::Event::AgentMessage {
        from_agent: "rm_b0000000".into(),
        to_agent: "rm_b0000000".into(),
        message: "x".into(),
    };
    assert!(st.remora_emit(&own, None).unwrap().1.is_empty());
    st.unsubscribe("rm_b0000000").unwrap();
    assert_eq!(st.subscriptions().unwrap().len(), 1);
}

#[test]
fn an_old_database_gains_the_new_event_columns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".chimera")).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join(".chimera/chimera.db")).unwrap();
    conn.execute_batch(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts INTEGER NOT NULL,
         agent_id TEXT, kind TEXT NOT NULL, data TEXT NOT NULL);
         INSERT INTO events (ts, agent_id, kind, data) VALUES (1, 'a', 'accepted', '{}');",
    )
    .unwrap();
    drop(conn);
    let st = Store::open(dir.path()).unwrap();
    let (rec, _) = st.remora_emit(&all_events()[0], Some("cr_y")).unwrap();
    assert_eq!(rec.seq, 2);
    assert_eq!(st.events_since(0).unwrap().len(), 2);
}
