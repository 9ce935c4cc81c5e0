//! The topology's references between files: which file is which module,
//! which files reach into a module (to resolve again when it changes), and
//! each reference resolved to the node it names.

use std::collections::BTreeSet;

use super::{FileChange, Ref, Topology};
use crate::lang::{module_key, ModuleStyle};
use crate::remora::extract::Target;
use crate::remora::{Edge, EdgeKind, NodeStatus};

impl Topology {
    pub(super) fn register_module(&mut self, path: &str) {
        let module = module_key(path);
        // A `src/` layout imports `pkg.mod`, not `src.pkg.mod`.
        if let Some(stripped) = module.strip_prefix("src.") {
            self.modules
                .entry(stripped.to_owned())
                .or_insert_with(|| path.to_owned());
            self.members
                .entry(stripped.to_owned())
                .or_default()
                .insert(path.to_owned());
        }
        let files = self.members.entry(module.clone()).or_default();
        files.insert(path.to_owned());
        // A package of several files stands as its first, whatever order
        // they were indexed in.
        let first = files.first().cloned().unwrap_or_else(|| path.to_owned());
        self.modules.insert(module, first);
    }

    /// `path` is no longer a file of its module; another file of the same
    /// package stands for it, if there is one.
    pub(super) fn forget_module(&mut self, path: &str) {
        self.members.retain(|_, files| {
            files.remove(path);
            !files.is_empty()
        });
        self.modules.retain(|_, p| p != path);
        for (key, files) in &self.members {
            if let Some(first) = files.first() {
                self.modules
                    .entry(key.clone())
                    .or_insert_with(|| first.clone());
            }
        }
    }

    /// Every file of the module `key` names (shorter forms tried as in
    /// [`Topology::module_path`]), in path order.
    pub(super) fn module_files(&self, key: &str) -> Vec<&String> {
        std::iter::once(key.to_owned())
            .chain(ModuleStyle::fallbacks(key))
            .find_map(|k| self.members.get(&k))
            .map(|files| files.iter().collect())
            .unwrap_or_default()
    }

    pub(super) fn target_modules(target: &Target) -> Vec<String> {
        let mut keys = match target {
            Target::InModule { module, name } => {
                vec![module.clone(), ModuleStyle::child(module, name)]
            }
            Target::Module { module } => vec![module.clone()],
            _ => vec![],
        };
        let tails: Vec<String> = keys
            .iter()
            .flat_map(|k| ModuleStyle::fallbacks(k))
            .collect();
        keys.extend(tails);
        keys
    }

    /// The file of the module `key` names, trying its shorter forms (a Go
    /// import's path) when the project has no file under the whole key.
    pub(super) fn module_path(&self, key: &str) -> Option<&String> {
        self.modules
            .get(key)
            .or_else(|| ModuleStyle::fallbacks(key).find_map(|k| self.modules.get(&k)))
    }

    pub(super) fn remember_refs(&mut self, path: &str, refs: &[Ref]) {
        for r in refs {
            for m in Self::target_modules(&r.target) {
                self.dependents
                    .entry(m)
                    .or_default()
                    .insert(path.to_owned());
            }
        }
    }

    pub(super) fn forget_refs(&mut self, path: &str, refs: &[Ref]) {
        for r in refs {
            for m in Self::target_modules(&r.target) {
                if let Some(set) = self.dependents.get_mut(&m) {
                    set.remove(path);
                    if set.is_empty() {
                        self.dependents.remove(&m);
                    }
                }
            }
        }
    }

    /// Files with references into the module(s) of `path`, `path` excluded.
    pub(super) fn dependents_of(&self, path: &str) -> Vec<String> {
        let module = module_key(path);
        let mut names = vec![module.clone()];
        if let Some(s) = module.strip_prefix("src.") {
            names.push(s.to_owned());
        }
        let mut out: Vec<String> = names
            .iter()
            .filter_map(|m| self.dependents.get(m))
            .flatten()
            .filter(|p| *p != path)
            .cloned()
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Recomputes the edges leaving the nodes of each of `paths`, records the
    /// difference in `change` and in the graph.
    pub(super) fn resolve_files(&mut self, paths: &[String], change: &mut FileChange) {
        for path in paths {
            let Some(state) = self.files.get(path) else {
                continue;
            };
            let mut edges = BTreeSet::new();
            for id in state.ids.iter().skip(1) {
                if let Some(parent) = self.nodes.get(id).and_then(|n| n.parent_id.clone()) {
                    edges.insert(Edge {
                        from: parent,
                        to: id.clone(),
                        kind: EdgeKind::ParentOf,
                    });
                }
            }
            for r in &state.refs {
                if let Some(to) = self.resolve(path, r) {
                    if to != r.from || r.kind == EdgeKind::Calls {
                        edges.insert(Edge {
                            from: r.from.clone(),
                            to,
                            kind: r.kind,
                        });
                    }
                }
            }
            let old = self
                .files
                .get_mut(path)
                .map(|s| std::mem::take(&mut s.edges))
                .unwrap_or_default();
            for e in old.difference(&edges) {
                self.graph_remove(e);
                change.removed_edges.push(e.clone());
            }
            for e in edges.difference(&old) {
                self.graph_add(e);
                change.added_edges.push(e.clone());
            }
            if let Some(s) = self.files.get_mut(path) {
                s.edges = edges;
            }
        }
    }

    pub(super) fn resolve(&self, path: &str, r: &Ref) -> Option<String> {
        let in_file = |p: &str, qual: &str| -> Option<String> {
            self.files.get(p).and_then(|f| f.qual.get(qual)).cloned()
        };
        let file_node = |m: &str| -> Option<String> {
            let p = self.module_path(m)?;
            self.files.get(p).and_then(|f| f.ids.first()).cloned()
        };
        match (&r.target, r.kind) {
            (Target::Local { name }, _) => in_file(path, name),
            (Target::Method { class, name }, _) => in_file(path, &format!("{class}.{name}")),
            (Target::InModule { module, name }, EdgeKind::Imports) => {
                file_node(&ModuleStyle::child(module, name)).or_else(|| file_node(module))
            }
            // A Go package's name is in any of its files.
            (Target::InModule { module, name }, _) => {
                self.module_files(module).into_iter().find_map(|p| {
                    // A Lua or JavaScript module is often a table or object
                    // of functions (`M.bound`): its name there is one level
                    // down.
                    in_file(p, name).or_else(|| {
                        // (Python's keys have no family: `m.f` is `f` in `m`.)
                        let f = self.files.get(p).filter(|_| module.contains(':'))?;
                        let suffix = format!(".{name}");
                        let mut found = f.qual.iter().filter(|(q, _)| {
                            q.strip_suffix(&suffix).is_some_and(|t| !t.contains('.'))
                        });
                        let (_, id) = found.next()?;
                        found.next().is_none().then(|| id.clone())
                    })
                })
            }
            (Target::Module { module }, _) => file_node(module),
        }
        .filter(|to| {
            self.nodes
                .get(to)
                .is_some_and(|n| n.status == NodeStatus::Active)
        })
    }
}
