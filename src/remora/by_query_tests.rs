//! Remora nodes, IDs and edges in JavaScript, TypeScript, Go, Rust and Lua.

use std::path::Path;

use super::extract::{extract, RawRef, Target};
use super::index::Indexer;
use super::inject::apply;
use super::*;
use crate::store::Store;

fn store() -> Store {
    Store::open_in_memory(Path::new("/project")).unwrap()
}

/// `(type, qualname, parent's qualname)` of every node but the file.
fn shape(path: &str, text: &str) -> Vec<(NodeType, String, String)> {
    let ex = extract(path, text);
    ex.nodes
        .iter()
        .skip(1)
        .map(|n| {
            let parent = n
                .parent
                .map_or(String::new(), |p| ex.nodes[p].qualname.clone());
            (n.node_type, n.qualname.clone(), parent)
        })
        .collect()
}

fn s(t: NodeType, q: &str, p: &str) -> (NodeType, String, String) {
    (t, q.into(), p.into())
}

use NodeType::{Class, Function, Method};

const JS: &str = "import { helper } from './util';\n\nexport function main(x) {\n  return helper(x) + twice(x);\n}\n\nconst twice = (x) => x * 2;\n\nclass Box {\n  constructor(v) { this.v = v; }\n  get() { return this.wrap(this.v); }\n  wrap(v) { return [v]; }\n}\n";

#[test]
fn javascript_and_typescript_nodes() {
    assert_eq!(
        shape("src/app.js", JS),
        [
            s(Function, "main", "src/app.js"),
            s(Function, "twice", "src/app.js"),
            s(Class, "Box", "src/app.js"),
            s(Method, "Box.constructor", "Box"),
            s(Method, "Box.get", "Box"),
            s(Method, "Box.wrap", "Box"),
        ]
    );
    let ts = "interface Shape { area(): number }\n\nexport class Circle implements Shape {\n  constructor(private r: number) {}\n  area(): number { return Math.PI * this.r ** 2; }\n}\n\nexport const unit = (): Circle => new Circle(1);\n";
    assert_eq!(
        shape("a.ts", ts),
        [
            s(Class, "Shape", "a.ts"),
            s(Class, "Circle", "a.ts"),
            s(Method, "Circle.constructor", "Circle"),
            s(Method, "Circle.area", "Circle"),
            s(Function, "unit", "a.ts"),
        ]
    );
    let tsx = "export function App(): JSX.Element {\n  return <div>hi</div>;\n}\n";
    assert_eq!(shape("App.tsx", tsx), [s(Function, "App", "App.tsx")]);
}

const GO: &str = "// Package store keeps items.\npackage store\n\nimport \"example.com/m/util\"\n\n// Store holds items.\ntype Store struct {\n\titems map[string]int\n}\n\n// Add adds one.\nfunc (s *Store) Add(k string) {\n\ts.items[k] = util.Clamp(s.items[k] + 1)\n}\n\nfunc New() *Store { return &Store{} }\n";

#[test]
fn go_methods_hang_under_their_receiver_type() {
    assert_eq!(
        shape("store/store.go", GO),
        [
            s(Class, "Store", "store/store.go"),
            s(Method, "Store.Add", "Store"),
            s(Function, "New", "store/store.go"),
        ]
    );
    // A method of a type of another file of the package.
    let other = "package store\n\nfunc (s Store) Len() int { return len(s.items) }\n";
    assert_eq!(
        shape("store/len.go", other),
        [s(Method, "Store.Len", "store/len.go")]
    );
}

const RUST: &str = "//! Items.\n\nuse crate::util::clamp;\n\n/// Where items live.\n#[derive(Debug)]\npub struct Store {\n    n: u32,\n}\n\nimpl Store {\n    pub fn add(&mut self) {\n        self.n = clamp(self.n + 1);\n        self.check();\n    }\n\n    fn check(&self) {}\n}\n\nmod inner {\n    pub fn helper() {}\n}\n";

#[test]
fn rust_impl_methods_hang_under_their_type() {
    assert_eq!(
        shape("src/store.rs", RUST),
        [
            s(Class, "Store", "src/store.rs"),
            s(Method, "Store.add", "Store"),
            s(Method, "Store.check", "Store"),
            s(Class, "inner", "src/store.rs"),
            s(Function, "inner.helper", "inner"),
        ]
    );
    // A type inside a module: its methods are named down from the file,
    // as it is.
    let nested = "mod inner {\n    pub struct S;\n    impl S {\n        fn f(&self) {}\n    }\n}\n";
    assert_eq!(
        shape("src/n.rs", nested),
        [
            s(Class, "inner", "src/n.rs"),
            s(Class, "inner.S", "inner"),
            s(Method, "inner.S.f", "inner.S"),
        ]
    );
    let ex = extract("src/store.rs", RUST);
    assert_eq!(
        ex.nodes[1].start_line, 5,
        "the doc comment and attribute belong to Store"
    );
}

const LUA: &str = "local util = require(\"mymod.util\")\n\nlocal M = {}\n\nlocal function clamp(x)\n  return util.bound(x)\nend\n\nfunction M.add(x)\n  return clamp(x) + 1\nend\n\nM.sub = function(x)\n  return x - 1\nend\n\nfunction M:name()\n  return self.add(1)\nend\n\nreturn M\n";

#[test]
fn lua_functions_of_every_form() {
    assert_eq!(
        shape("lua/mymod/init.lua", LUA),
        [
            s(Function, "clamp", "lua/mymod/init.lua"),
            s(Method, "M.add", "lua/mymod/init.lua"),
            s(Method, "M.sub", "lua/mymod/init.lua"),
            s(Method, "M.name", "lua/mymod/init.lua"),
        ]
    );
}

/// `text` with the IDs inline mode writes, and that the bytes other than
/// the inserted comments are the original ones.
fn inject_checked(path: &str, text: &str) -> String {
    let ix = Indexer::default();
    let edits = ix.id_edits(path, text);
    let out = apply(text, &edits);
    let mut restored = String::new();
    let mut at = 0;
    let mut pos = 0;
    for e in &edits {
        assert_eq!(e.start, e.end, "an insertion only");
        restored.push_str(&out[pos..pos + (e.start - at)]);
        pos += e.start - at + e.text.len();
        at = e.start;
    }
    restored.push_str(&out[pos..]);
    assert_eq!(restored, text, "only IDs were added:\n{out}");
    let lang = crate::lang::for_path(path).unwrap();
    assert_eq!(
        crate::lang::syntax_problem(lang, &out).is_some(),
        crate::lang::syntax_problem(lang, text).is_some(),
        "{out}"
    );
    out
}

#[test]
fn ids_go_in_as_comments_of_each_language_and_change_nothing_else() {
    for (path, text, comment) in [
        ("src/app.js", JS, "// rm_"),
        ("store/store.go", GO, "// rm_"),
        ("src/store.rs", RUST, "// rm_"),
        ("lua/mymod/init.lua", LUA, "-- rm_"),
    ] {
        let crlf = text.replace('\n', "\r\n");
        let no_final_newline = text.trim_end();
        for variant in [text, crlf.as_str(), no_final_newline] {
            let out = inject_checked(path, variant);
            let ex = extract(path, &out);
            let nodes = ex.nodes.len() - 1;
            let with_id = ex.nodes.iter().filter(|n| n.id_comment.is_some()).count();
            assert_eq!(with_id, nodes, "{path}: every node carries its ID:\n{out}");
            assert!(out.contains(comment), "{out}");
            assert!(ex.file_comment.is_some(), "{path}: the file's ID:\n{out}");
            // A second pass has nothing to add.
            let st = store();
            let mut ix = Indexer::default();
            ix.index_text(&st, path, &out).unwrap();
            assert!(ix.id_edits(path, &out).is_empty(), "{out}");
        }
    }
}

#[test]
fn a_go_package_comment_stays_the_package_comment() {
    let out = inject_checked("store/store.go", GO);
    assert!(out.starts_with("// remora-file: rm_"), "{out}");
    let second = out.lines().nth(1).unwrap();
    assert_eq!(
        second, "",
        "a blank line keeps it off the package doc:\n{out}"
    );
}

#[test]
fn ids_in_strings_jsx_and_shebangs_are_handled() {
    // A string that looks like an ID comment is not one.
    let js = "function f() { return \"// rm_aaaaaaaa\"; }\n";
    assert_eq!(extract("a.js", js).nodes[1].id_comment, None);
    // No comment lands inside JSX text or a template running on.
    let jsx = "const A = () => <div>\n  hi\n</div>;\nconst B = () => `a\nb`;\n";
    let ex = extract("a.jsx", jsx);
    assert!(
        ex.nodes[1..].iter().all(|n| n.id_insert_at.is_none()),
        "{:?}",
        ex.nodes
    );
    // A Lua shebang stays first; a Rust inner attribute is not a shebang.
    let lua = "#!/usr/bin/env lua\nlocal function f() end\n";
    let out = inject_checked("x.lua", lua);
    assert!(
        out.starts_with("#!/usr/bin/env lua\n-- remora-file: rm_"),
        "{out}"
    );
    let rs = "#![allow(dead_code)]\nfn f() {}\n";
    let out = inject_checked("src/lib.rs", rs);
    assert!(out.starts_with("// remora-file: rm_"), "{out}");
}

#[test]
fn ids_survive_edits_and_a_rename_is_a_new_node_as_in_python() {
    let st = store();
    let mut ix = Indexer::default();
    let path = "src/store.rs";
    let out = inject_checked(path, RUST);
    ix.index_text(&st, path, &out).unwrap();
    let id = |ix: &Indexer, q: &str| {
        ix.topology()
            .nodes_in(path)
            .iter()
            .find(|n| n.qualname == q)
            .map(|n| n.id.clone())
            .unwrap_or_else(|| panic!("no {q}"))
    };
    let add = id(&ix, "Store.add");
    let edited = out.replace("self.n + 1", "self.n + 2");
    ix.index_text(&st, path, &edited).unwrap();
    assert_eq!(id(&ix, "Store.add"), add);
    // Renamed with its comment kept: a new node, and the line a new ID.
    let renamed = edited.replace("pub fn add(", "pub fn increment(");
    let out = apply(&renamed, &ix.id_edits(path, &renamed));
    assert!(!out.contains(&add), "{out}");
    ix.index_text(&st, path, &out).unwrap();
    assert_ne!(id(&ix, "Store.increment"), add);
    assert_eq!(
        ix.topology().node(&add).unwrap().status,
        NodeStatus::Orphaned
    );
    assert_eq!(
        apply(&out, &ix.id_edits(path, &out)),
        out,
        "nothing left to add"
    );
}

/// `(from qualname, to qualname, kind)` of the edges between these files.
fn edges(files: &[(&str, &str)]) -> Vec<(String, String, EdgeKind)> {
    let st = store();
    let mut ix = Indexer::default();
    for (p, t) in files {
        ix.index_text(&st, p, t).unwrap();
    }
    let topo = ix.topology();
    let name = |id: &str| {
        topo.node(id)
            .map(|n| n.qualname.clone())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (p, _) in files {
        for e in &topo.edges_of(p) {
            if e.kind != EdgeKind::ParentOf {
                out.push((name(&e.from), name(&e.to), e.kind));
            }
        }
    }
    out.sort();
    out
}

fn e(a: &str, b: &str, k: EdgeKind) -> (String, String, EdgeKind) {
    (a.into(), b.into(), k)
}

use EdgeKind::{Calls, Imports};

#[test]
fn calls_and_imports_resolve_across_files_in_each_language() {
    let util_js = "export function helper(x) { return x; }\n";
    assert_eq!(
        edges(&[("src/app.js", JS), ("src/util.js", util_js)]),
        [
            e("Box.get", "Box.wrap", Calls),
            e("main", "helper", Calls),
            e("main", "twice", Calls),
            e("src/app.js", "src/util.js", Imports),
        ]
    );
    let util_go = "package util\n\nfunc Clamp(x int) int { return x }\n";
    assert_eq!(
        edges(&[("store/store.go", GO), ("util/util.go", util_go)]),
        [
            e("Store.Add", "Clamp", Calls),
            e("store/store.go", "util/util.go", Imports),
        ]
    );
    let util_rs = "pub fn clamp(x: u32) -> u32 { x }\n";
    let lib_rs = "mod store;\nmod util;\n";
    assert_eq!(
        edges(&[
            ("src/store.rs", RUST),
            ("src/util.rs", util_rs),
            ("src/lib.rs", lib_rs)
        ]),
        [
            e("Store.add", "Store.check", Calls),
            e("Store.add", "clamp", Calls),
            e("src/lib.rs", "src/store.rs", Imports),
            e("src/lib.rs", "src/util.rs", Imports),
            e("src/store.rs", "src/util.rs", Imports),
        ]
    );
    let util_lua = "local M = {}\nfunction M.bound(x) return x end\nreturn M\n";
    assert_eq!(
        edges(&[
            ("lua/mymod/init.lua", LUA),
            ("lua/mymod/util.lua", util_lua)
        ]),
        [
            e("M.add", "clamp", Calls),
            e("M.name", "M.add", Calls),
            e("clamp", "M.bound", Calls),
            e("lua/mymod/init.lua", "lua/mymod/util.lua", Imports),
        ]
    );
}

/// A Go package is a directory: its files call each other's functions
/// without an import, and a call into it finds the name in any of them.
#[test]
fn a_go_package_spans_its_files() {
    let store_go = "package store\n\nfunc Add(x int) int { return clamp(x) + helperLen() }\n";
    let clamp_go = "package store\n\nfunc clamp(x int) int { return x }\n";
    let len_go = "package store\n\nfunc helperLen() int { return len(\"x\") }\n";
    let main_go = "package main\n\nimport \"example.com/m/store\"\n\nfunc main() { store.Add(1); store.clamp(2) }\n";
    let files = [
        ("store/add.go", store_go),
        ("store/clamp.go", clamp_go),
        ("store/len.go", len_go),
        ("cmd/main.go", main_go),
    ];
    let want = [
        e("Add", "clamp", Calls),
        e("Add", "helperLen", Calls),
        e("cmd/main.go", "store/add.go", Imports),
        e("main", "Add", Calls),
        e("main", "clamp", Calls),
    ];
    assert_eq!(edges(&files), want);
    // Indexed the other way round, the calls are found once their files are.
    let mut reversed = files;
    reversed.reverse();
    let mut got = edges(&reversed);
    got.retain(|x| x.2 == Calls);
    assert_eq!(
        got,
        want.iter()
            .filter(|x| x.2 == Calls)
            .cloned()
            .collect::<Vec<_>>()
    );

    // The file that stood for the package goes: the others still do.
    let st = store();
    let mut ix = Indexer::default();
    for (p, t) in files {
        ix.index_text(&st, p, t).unwrap();
    }
    ix.remove(&st, "store/add.go").unwrap();
    ix.index_text(&st, "cmd/main.go", &main_go.replace("store.Add(1); ", ""))
        .unwrap();
    let topo = ix.topology();
    let calls: Vec<String> = topo
        .edges_of("cmd/main.go")
        .iter()
        .filter(|x| x.kind == Calls)
        .filter_map(|x| topo.node(&x.to).map(|n| n.qualname.clone()))
        .collect();
    assert_eq!(calls, ["clamp"]);
    // The package's import now stands for its first file left.
    let imports: Vec<String> = topo
        .edges_of("cmd/main.go")
        .iter()
        .filter(|x| x.kind == Imports)
        .filter_map(|x| topo.node(&x.to).map(|n| n.file_path))
        .collect();
    assert_eq!(imports, ["store/clamp.go"]);
}

/// A reference is made once however many calls make it, and two ways of
/// naming one target (`f()` imported by name, `m.f()` through its module)
/// are one reference: the targets a file shares are told apart by value.
#[test]
fn each_reference_is_made_once_whatever_names_it() {
    let js = "import { f } from './m';\nimport * as m from './m';\n\nfunction g() {\n  f();\n  m.f();\n  f();\n  return m.f();\n}\n";
    let ex = extract("src/a.js", js);
    let calls: Vec<&RawRef> = ex
        .refs
        .iter()
        .filter(|r| r.kind == EdgeKind::Calls)
        .collect();
    assert_eq!(calls.len(), 1, "{:?}", ex.refs);
    assert!(matches!(&*calls[0].target, Target::InModule { name, .. } if name == "f"));
    for (path, text) in [("src/app.js", JS), ("store/store.go", GO)] {
        let ex = extract(path, text);
        let mut seen = std::collections::HashSet::new();
        for r in &ex.refs {
            assert!(
                seen.insert((r.from, r.kind, &*r.target)),
                "{path}: {r:?} twice"
            );
        }
    }
}
