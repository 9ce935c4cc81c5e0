//! What the project's files define, as `locate` weighs it: read from the
//! files' texts, or asked of the project's Remora index on a core that
//! keeps one — which knows every file's definitions without reading any,
//! where the texts are read from 5,000 files at most.

use std::collections::HashMap;

use crate::lang::{self, DefKind, Definition};
use crate::remora::topology::Topology;
use crate::remora::{self, NodeType};

/// Source files read at most when their texts are the only way to know:
/// on a larger project, the definitions in the others are not found.
const MOST_READ: usize = 5000;

/// Gives the text of each of the paths it is handed that it can read, in
/// any order (a store reads many at once).
pub type Texts<'a> = Box<dyn FnOnce(&[&str], &mut dyn FnMut(String, String)) + 'a>;

/// Where `locate` learns what the project's files define.
pub enum Defined<'a> {
    /// The files' texts.
    Texts(Texts<'a>),
    /// An index of every file's definitions as the agent sees them: the
    /// project's, which the agent's overlay has not changed.
    Index(&'a Topology),
}

/// One definition, as much as `locate` asks of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    pub name: String,
    /// The name of what it belongs to: a class, an `impl`'s type, a Go
    /// receiver, a Lua table.
    pub parent: Option<String>,
    pub class: bool,
}

impl Named {
    fn of_definition(d: &Definition) -> Self {
        Named {
            name: d.name.clone(),
            parent: d.parent.clone(),
            class: d.kind == DefKind::Class,
        }
    }

    fn of_indexed((node_type, name, qualname): (NodeType, &str, &str)) -> Self {
        Named {
            name: name.to_owned(),
            parent: remora::parent_name(qualname, name).map(str::to_owned),
            class: node_type == NodeType::Class,
        }
    }

    /// Whether `name`, as a task writes it (`mean`, `Store.add`), is this.
    pub fn is_named(&self, name: &str) -> bool {
        lang::names(&self.name, self.parent.as_deref(), name)
    }

    /// Whether this is class `class`, or belongs to it.
    pub fn is_of(&self, class: &str) -> bool {
        self.parent.as_deref() == Some(class) || (self.class && self.name == class)
    }
}

/// Each file of `files` that may define one of `names` (a `Class.method`
/// name counts each of its parts), with its place in `files` and its
/// definitions (at least those that could be one of `names`).
pub(super) fn files_defining(
    names: &[&str],
    files: &[String],
    defined: Defined<'_>,
) -> Vec<(usize, Vec<Named>)> {
    let parts: Vec<&str> = names.iter().flat_map(|n| n.split('.')).collect();
    match defined {
        Defined::Texts(texts) => read(&parts, files, texts),
        Defined::Index(topology) => indexed(&parts, files, topology),
    }
}

fn read(parts: &[&str], files: &[String], texts: Texts<'_>) -> Vec<(usize, Vec<Named>)> {
    // Each file's place in `files`: what a file is known by, and the order
    // of the answer whatever order the texts came in.
    let place: HashMap<&str, usize> = files
        .iter()
        .enumerate()
        .filter(|(_, f)| lang::is_source(f))
        .take(MOST_READ)
        .map(|(at, f)| (f.as_str(), at))
        .collect();
    let mut candidates: Vec<&str> = place.keys().copied().collect();
    candidates.sort_by_key(|f| place[f]);
    let mut out = Vec::new();
    texts(&candidates, &mut |path, text| {
        let Some(&at) = place.get(path.as_str()) else {
            return;
        };
        if !parts.iter().any(|part| text.contains(part)) {
            return;
        }
        let defs = lang::definitions(lang::of_file(&files[at]), &text);
        out.push((at, defs.iter().map(Named::of_definition).collect()));
    });
    out
}

fn indexed(parts: &[&str], files: &[String], topology: &Topology) -> Vec<(usize, Vec<Named>)> {
    let names_a_part = |name: &str| parts.contains(&name);
    let mut by_file: HashMap<&str, Vec<Named>> = HashMap::new();
    for part in parts {
        for file in topology.files_naming(part) {
            if by_file.contains_key(file) {
                continue;
            }
            let named = topology
                .definitions_in(file)
                .filter(|&(_, name, qual)| {
                    names_a_part(name) || remora::parent_name(qual, name).is_some_and(names_a_part)
                })
                .map(Named::of_indexed)
                .collect();
            by_file.insert(file, named);
        }
    }
    // Only the files the agent may see, in their order.
    files
        .iter()
        .enumerate()
        .filter_map(|(at, f)| Some((at, by_file.remove(f.as_str())?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{locate, locate_by, Place};
    use super::*;
    use crate::remora::index::Indexer;
    use crate::store::Store;

    /// Files of every language, with methods of classes, `impl`s, Go
    /// receivers and Lua tables, and names that two files share.
    const PROJECT: &[(&str, &str)] = &[
        ("mathx.py", "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(lst):\n    return sorted(lst)[len(lst) // 2]\n"),
        ("inventory.py", "class Inventory:\n    def add(self, item):\n        pass\n\n    def mean(self):\n        return 0\n"),
        ("pkg/io.py", "import os\n\n\ndef load(path):\n    return open(path).read()\n"),
        ("src/lib.rs", "pub mod stack;\npub fn version() -> u32 { 1 }\n"),
        ("src/stack.rs", "pub struct Stack { items: Vec<i32> }\n\nimpl Stack {\n    pub fn len(&self) -> usize { 0 }\n}\n"),
        ("lua/shop/util.lua", "local M = {}\nfunction M.total(xs) return 0 end\nreturn M\n"),
        ("lua/shop/cart.lua", "local Cart = {}\nfunction Cart:total()\n  return 0\nend\nreturn Cart\n"),
        ("store/store.go", "package store\n\ntype Store struct{ n int }\n\nfunc (s *Store) Add(k string) { s.n++ }\n\nfunc New() *Store { return &Store{} }\n"),
        ("web/box.js", "export class Box {\n  constructor(v) { this.v = v; }\n  get() { return this.v; }\n}\nexport function median(xs) { return xs[0]; }\n"),
        ("edge.py", "import typing\n\nif typing.TYPE_CHECKING:\n    def guarded(x):\n        return x\n\n\ndef outer():\n    def inner_helper():\n        return 1\n    return inner_helper\n\n\nasync def fetch_all(urls):\n    return urls\n\n\nclass Shell:\n    class Inner:\n        def deep(self):\n            return 2\n\n    @property\n    def size(self):\n        return 0\n\n    @staticmethod\n    def build():\n        return Shell()\n"),
        ("notes.txt", "mean median load Stack\n"),
    ];

    const TASKS: &[&str] = &[
        "add a docstring to mean",
        "make mean use median",
        "fix Stack::len: it must return the number of items",
        "add Stack::push to push an item",
        "make Cart:total return the sum of price times qty",
        "add a method Cart:remove(name) that removes the item",
        "make Store.Add ignore empty keys",
        "add Store.Remove",
        "New should take a size",
        "Box.get returns undefined",
        "make load strip whitespace",
        "Inventory.add must reject None",
        "nothing here names code",
        "guarded must return None",
        "inner_helper should return 2",
        "fetch_all must dedupe urls",
        "Shell.size counts items",
        "Inner.deep must return 3",
        "add Shell.clear",
        "Shell.build takes a name",
    ];

    fn read(files: &[String], task: &str, current: Option<&str>) -> Option<Place> {
        locate(task, files, current, |f| {
            PROJECT
                .iter()
                .find(|(p, _)| p == &f)
                .map(|(_, t)| t.to_string())
        })
    }

    /// The project's Remora index, as a core builds it.
    fn index() -> Indexer {
        let store = Store::open_in_memory(std::path::Path::new("/project")).unwrap();
        let mut ix = Indexer::default();
        for (path, text) in PROJECT {
            ix.index_text(&store, path, text).unwrap();
        }
        ix
    }

    #[test]
    fn the_index_finds_what_reading_the_files_finds() {
        let files: Vec<String> = PROJECT.iter().map(|(p, _)| p.to_string()).collect();
        let ix = index();
        let mut located = 0;
        for task in TASKS {
            for current in [None, Some("notes.txt"), Some("inventory.py")] {
                let want = read(&files, task, current);
                let got = locate_by(task, &files, current, Defined::Index(ix.topology()));
                assert_eq!(got, want, "{task:?} typed in {current:?}");
                located += usize::from(want.is_some_and(|p| !p.only_the_buffer));
            }
        }
        assert!(located > 20, "the tasks find their files: {located}");
        for task in [
            "inner_helper should return 2",
            "Inner.deep must return 3",
            "add Shell.clear",
        ] {
            let got = locate_by(
                task,
                &files,
                Some("notes.txt"),
                Defined::Index(ix.topology()),
            );
            assert_eq!(got.map(|p| p.file).as_deref(), Some("edge.py"), "{task}");
        }
    }

    #[test]
    fn the_index_answers_only_for_the_files_the_agent_may_see() {
        let ix = index();
        let files: Vec<String> = PROJECT
            .iter()
            .map(|(p, _)| p.to_string())
            .filter(|p| p != "src/stack.rs")
            .collect();
        let place = locate_by(
            "fix Stack::len: it must return the number of items",
            &files,
            Some("src/lib.rs"),
            Defined::Index(ix.topology()),
        );
        assert_eq!(place.map(|p| p.file).as_deref(), Some("src/lib.rs"));
    }
}
