//! The topology rebuilt from the store's rows, one row at a time.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::table::{Fields, Link, Slot};
use super::{FileState, Ref, Topology};
use crate::remora::{Edge, Node};

/// Rebuilds the topology from stored rows: every node with whether it is
/// live (in its file's order), then each file's hash and references, then
/// every edge. Rows go in one by one, so a project's rows are never all
/// held at once beside the topology they make.
#[derive(Default)]
pub struct Loading {
    topology: Topology,
    /// Each path met, shared, with its live nodes in order.
    live: HashMap<Arc<str>, Vec<Slot>>,
}

impl Loading {
    pub fn node(&mut self, node: &Node, live: bool) {
        let path = node.file_path.as_str();
        let file = match self.live.get_key_value(path) {
            Some((file, _)) => Arc::clone(file),
            None => {
                let file: Arc<str> = Arc::from(path);
                self.live.insert(Arc::clone(&file), Vec::new());
                file
            }
        };
        let Some(fields) = Fields::of(node) else {
            return;
        };
        let slot = self.topology.table.put(fields, &file);
        if live {
            if let Some(order) = self.live.get_mut(path) {
                order.push(slot);
            }
        }
    }

    pub fn file(&mut self, path: &str, hash: String, refs: Vec<Ref>) {
        let (file, ids) = self
            .live
            .remove_entry(path)
            .unwrap_or_else(|| (Arc::from(path), Vec::new()));
        let t = &mut self.topology;
        let mut state = FileState {
            hash,
            ids,
            refs,
            ..FileState::default()
        };
        state.qual = t.qualified(&state.ids);
        t.remember_refs(&file, &state.refs);
        t.register_module(&file);
        t.files.insert(Arc::clone(&file), state);
        let words = t.words_in(&file);
        t.words.change(&file, &BTreeSet::new(), &words);
    }

    pub fn edge(&mut self, e: &Edge) {
        let t = &mut self.topology;
        let (Some(from), Some(to)) = (t.table.slot(&e.from), t.table.slot(&e.to)) else {
            return;
        };
        let file = Arc::clone(&t.table.get(from).file);
        if let Some(state) = t.files.get_mut(&file) {
            state.edges.push(Link {
                from,
                to,
                kind: e.kind,
            });
        }
    }

    pub fn finish(mut self) -> Topology {
        let t = &mut self.topology;
        for state in t.files.values_mut() {
            state.edges.sort_unstable();
            state.edges.dedup();
            for &l in &state.edges {
                t.table.link(l);
            }
        }
        t.table.shrink();
        self.topology
    }
}
