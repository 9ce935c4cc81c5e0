//! A bulk index's side of the topology: each file taken in without its
//! edges, its change kept lean until it is written, the edges of all
//! resolved at the end.

use super::table::{Slot, Table};
use super::{FileChange, Topology};
use crate::remora::extract::Extracted;
use crate::remora::ids::Id;

/// A change of a bulk index ([`Topology::add_file_unresolved`]), kept
/// until it is written: its nodes named by slot and its references left in
/// the topology, so that a monorepo's first index does not hold a copy of
/// every node besides the topology's own.
#[derive(Debug)]
pub struct Pending {
    change: FileChange,
    lean: Lean,
    /// Its references changed.
    refs: bool,
}

/// The nodes an update wrote and the IDs it made, as a bulk index keeps them.
#[derive(Debug, Default)]
pub(super) struct Lean {
    pub nodes: Vec<(usize, Slot)>,
    pub added: Vec<Id>,
}

/// Where an update notes what it did: whole in its change (for the store
/// and the event log at once), or lean for a bulk index ([`Pending`]).
pub(super) struct Notes {
    pub change: FileChange,
    pub lean: Option<Lean>,
}

impl Notes {
    pub fn added(&mut self, id: Id) {
        match &mut self.lean {
            Some(lean) => lean.added.push(id),
            None => self.change.added.push(id.as_str().to_owned()),
        }
    }

    pub fn node(&mut self, ord: usize, slot: Slot, table: &Table) {
        match &mut self.lean {
            Some(lean) => lean.nodes.push((ord, slot)),
            None => self.change.nodes.push((ord, table.node(slot))),
        }
    }
}

impl Topology {
    /// Bulk loading: takes in a file's nodes without resolving any edge;
    /// call [`Topology::resolve_all`] once every file is in. The change is
    /// kept lean until [`Topology::written`] gives it whole.
    pub fn add_file_unresolved(&mut self, path: &str, hash: &str, ex: &Extracted) -> Pending {
        let (notes, _) = self.keeping_words(path, ex, |t| t.replace_nodes(path, hash, ex, true));
        let mut change = notes.change;
        let refs = change.refs.take().is_some();
        Pending {
            change,
            lean: notes.lean.unwrap_or_default(),
            refs,
        }
    }

    /// The whole change `pending` stands for: its nodes and references as
    /// the topology holds them now.
    pub fn written(&self, pending: Pending) -> FileChange {
        let Pending {
            mut change,
            lean,
            refs,
        } = pending;
        change.nodes = lean
            .nodes
            .into_iter()
            .map(|(ord, slot)| (ord, self.table.node(slot)))
            .collect();
        change.added = lean.added.iter().map(|id| id.as_str().to_owned()).collect();
        if refs {
            change.refs = self.files.get(change.path.as_str()).map(|f| f.refs.clone());
        }
        change
    }

    /// Resolves the edges of every file (after bulk loading); hands `each`
    /// the change of every file whose edges changed, one by one.
    pub fn resolve_all<E>(
        &mut self,
        mut each: impl FnMut(FileChange) -> Result<(), E>,
    ) -> Result<(), E> {
        let paths: Vec<String> = self.file_paths().map(str::to_owned).collect();
        for p in paths {
            let mut change = FileChange {
                path: p.clone(),
                ..FileChange::default()
            };
            self.resolve_files(std::slice::from_ref(&p), &mut change);
            if !change.added_edges.is_empty() || !change.removed_edges.is_empty() {
                each(change)?;
            }
        }
        // What the bulk grew and will not use.
        self.table.shrink();
        Ok(())
    }
}
