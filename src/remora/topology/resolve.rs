//! The topology's references between files: which file is which module,
//! which files reach into a module (to resolve again when it changes), and
//! each reference resolved to the node it names.

use std::sync::Arc;

use super::table::{Link, Slot};
use super::{FileChange, Ref, Topology};
use crate::lang::{module_key, ModuleStyle};
use crate::remora::extract::Target;
use crate::remora::{EdgeKind, NodeStatus};

impl Topology {
    pub(super) fn register_module(&mut self, path: &Arc<str>) {
        let module = module_key(path);
        // A `src/` layout imports `pkg.mod`, not `src.pkg.mod`.
        if let Some(stripped) = module.strip_prefix("src.") {
            self.modules
                .entry(stripped.to_owned())
                .or_insert_with(|| Arc::clone(path));
            insert_sorted(self.members.entry(stripped.to_owned()).or_default(), path);
        }
        let files = self.members.entry(module.clone()).or_default();
        insert_sorted(files, path);
        // A package of several files stands as its first, whatever order
        // they were indexed in.
        let first = files.first().cloned().unwrap_or_else(|| Arc::clone(path));
        self.modules.insert(module, first);
    }

    /// `path` is no longer a file of its module; another file of the same
    /// package stands for it, if there is one. Only the names `path` was
    /// registered under are looked at: a monorepo has tens of thousands.
    pub(super) fn forget_module(&mut self, path: &str) {
        for key in module_names(path) {
            let Some(files) = self.members.get_mut(&key) else {
                continue;
            };
            if let Ok(at) = files.binary_search_by(|f| (**f).cmp(path)) {
                files.remove(at);
            }
            let first = files.first().cloned();
            if first.is_none() {
                self.members.remove(&key);
            }
            if self.modules.get(&key).is_some_and(|p| &**p == path) {
                match first {
                    Some(first) => self.modules.insert(key, first),
                    None => self.modules.remove(&key),
                };
            }
        }
    }

    /// Every file of the module `key` names (shorter forms tried as in
    /// [`Topology::module_path`]), in path order.
    pub(super) fn module_files(&self, key: &str) -> &[Arc<str>] {
        std::iter::once(key.to_owned())
            .chain(ModuleStyle::fallbacks(key))
            .find_map(|k| self.members.get(&k))
            .map_or(&[], Vec::as_slice)
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
    pub(super) fn module_path(&self, key: &str) -> Option<&str> {
        self.modules
            .get(key)
            .or_else(|| ModuleStyle::fallbacks(key).find_map(|k| self.modules.get(&k)))
            .map(|p| &**p)
    }

    pub(super) fn remember_refs(&mut self, path: &Arc<str>, refs: &[Ref]) {
        for r in refs {
            for m in Self::target_modules(&r.target) {
                self.dependents
                    .entry(m)
                    .or_default()
                    .insert(Arc::clone(path));
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
        let mut out: Vec<String> = module_names(path)
            .iter()
            .filter_map(|m| self.dependents.get(m))
            .flatten()
            .filter(|p| &***p != path)
            .map(|p| p.to_string())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Recomputes the edges leaving the nodes of each of `paths`, records the
    /// difference in `change` and in the graph.
    pub(super) fn resolve_files(&mut self, paths: &[String], change: &mut FileChange) {
        for path in paths {
            let Some(state) = self.files.get(path.as_str()) else {
                continue;
            };
            let mut edges = Vec::new();
            for &slot in state.ids.iter().skip(1) {
                let parent = self.table.get(slot).parent;
                if let Some(from) = parent.and_then(|p| self.table.slot_of(p)) {
                    edges.push(Link {
                        from,
                        to: slot,
                        kind: EdgeKind::ParentOf,
                    });
                }
            }
            for r in &state.refs {
                let (Some(from), Some(to)) = (self.table.slot_of(r.from), self.resolve(path, r))
                else {
                    continue;
                };
                if to != from || r.kind == EdgeKind::Calls {
                    edges.push(Link {
                        from,
                        to,
                        kind: r.kind,
                    });
                }
            }
            edges.sort_unstable();
            edges.dedup();
            let old = self
                .files
                .get_mut(path.as_str())
                .map(|s| std::mem::take(&mut s.edges))
                .unwrap_or_default();
            for &l in old.iter().filter(|l| edges.binary_search(l).is_err()) {
                self.table.unlink(l);
                change.removed_edges.push(self.table.edge(l));
            }
            for &l in edges.iter().filter(|l| old.binary_search(l).is_err()) {
                self.table.link(l);
                change.added_edges.push(self.table.edge(l));
            }
            if let Some(s) = self.files.get_mut(path.as_str()) {
                s.edges = edges;
            }
        }
    }

    pub(super) fn resolve(&self, path: &str, r: &Ref) -> Option<Slot> {
        let file_node = |m: &str| -> Option<Slot> {
            let p = self.module_path(m)?;
            self.files.get(p).and_then(|f| f.ids.first()).copied()
        };
        match (&r.target, r.kind) {
            (Target::Local { name }, _) => self.qualified_in(path, name),
            (Target::Method { class, name }, _) => {
                self.qualified_in(path, &format!("{class}.{name}"))
            }
            (Target::InModule { module, name }, EdgeKind::Imports) => {
                file_node(&ModuleStyle::child(module, name)).or_else(|| file_node(module))
            }
            // A Go package's name is in any of its files.
            (Target::InModule { module, name }, _) => {
                self.module_files(module).iter().find_map(|p| {
                    // A Lua or JavaScript module is often a table or object
                    // of functions (`M.bound`): its name there is one level
                    // down.
                    self.qualified_in(p, name).or_else(|| {
                        // (Python's keys have no family: `m.f` is `f` in `m`.)
                        let f = self.files.get(p).filter(|_| module.contains(':'))?;
                        let suffix = format!(".{name}");
                        let mut found = f.qual.iter().filter(|&&s| {
                            let q = self.table.get(s).qualname();
                            q.strip_suffix(&suffix).is_some_and(|t| !t.contains('.'))
                        });
                        let &slot = found.next()?;
                        found.next().is_none().then_some(slot)
                    })
                })
            }
            (Target::Module { module }, _) => file_node(module),
        }
        .filter(|&to| self.table.get(to).status == NodeStatus::Active)
    }
}

/// The module names `path` is known by: its module's, and in a `src/`
/// layout the same without `src.` (see [`Topology::register_module`]).
fn module_names(path: &str) -> Vec<String> {
    let module = module_key(path);
    let stripped = module.strip_prefix("src.").map(str::to_owned);
    std::iter::once(module).chain(stripped).collect()
}

/// Puts `path` in `files`, kept in order, unless it is there.
fn insert_sorted(files: &mut Vec<Arc<str>>, path: &Arc<str>) {
    if let Err(at) = files.binary_search(path) {
        files.insert(at, Arc::clone(path));
    }
}
