//! The topology in memory: every node by ID, every file's nodes and
//! references, and a petgraph of the edges for traversal. It matches the
//! nodes of a re-parsed file to their old IDs and resolves references
//! between files, and reports each change as a [`FileChange`] for the store.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use petgraph::Direction;
use serde::{Deserialize, Serialize};

use super::extract::{Extracted, Target};
use super::extracted::RawNode;
use super::ids::{self, Id};
use super::{Edge, EdgeKind, Node, NodeStatus, NodeType};
use table::{Fields, Link, Slot, Table};

mod bulk;
mod load;
mod resolve;
mod table;
mod words;

pub use bulk::Pending;
use bulk::{Lean, Notes};
pub use load::Loading;

/// A reference from one node, as stored with its file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ref {
    pub from: Id,
    pub kind: EdgeKind,
    pub target: Target,
}

/// One indexed file.
#[derive(Debug, Clone, Default)]
pub struct FileState {
    /// Hash of the text indexed ([`crate::store::hash_bytes`]).
    pub hash: String,
    /// Its live nodes in order; `ids[0]` is the file's own node.
    ids: Vec<Slot>,
    pub refs: Vec<Ref>,
    /// Every edge leaving one of its nodes, in order.
    edges: Vec<Link>,
    /// Its live definitions by qualified name, in that order (the first
    /// of duplicates).
    qual: Vec<Slot>,
    /// The [`shape_of`] its parse, while every ID is of a node parsed (no
    /// definition kept through a syntax error); `None` also when loaded
    /// from the store.
    shape: Option<blake3::Hash>,
    /// The [`record_of`] each parsed node as written, in order: a node
    /// whose record is the same needs no look in the topology. Empty for a
    /// file of a bulk index or loaded from the store (not being edited):
    /// its first edit compares the fields instead.
    records: Vec<Record>,
}

/// What one update changed, for the store and the event log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// The file is gone.
    pub removed: bool,
    pub hash: String,
    /// Nodes of the file that are new or changed, with their position among
    /// the file's live nodes.
    pub nodes: Vec<(usize, Node)>,
    /// The file's references, when they changed.
    pub refs: Option<Vec<Ref>>,
    /// IDs that did not exist before.
    pub added: Vec<String>,
    pub orphaned: Vec<String>,
    pub added_edges: Vec<Edge>,
    pub removed_edges: Vec<Edge>,
}

/// The whole topology.
#[derive(Debug, Default)]
pub struct Topology {
    table: Table,
    /// Each file's path is shared by its nodes and the tables below.
    files: HashMap<Arc<str>, FileState>,
    /// Module name → file path.
    modules: HashMap<String, Arc<str>>,
    /// Module name → every file of it, in order: a Go package is a
    /// directory of files.
    members: HashMap<String, Vec<Arc<str>>>,
    /// Module name → files with a reference into it (to backfill their edges).
    dependents: HashMap<String, HashSet<Arc<str>>>,
    /// The files of each word their definitions name.
    words: words::Words,
}

impl Topology {
    pub fn node(&self, id: &str) -> Option<Node> {
        self.table.slot(id).map(|s| self.table.node(s))
    }

    pub fn file(&self, path: &str) -> Option<&FileState> {
        self.files.get(path)
    }

    pub fn file_paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(|p| &**p)
    }

    /// Number of nodes (all statuses) and edges.
    pub fn counts(&self) -> (usize, usize) {
        (self.table.len(), self.table.edge_count())
    }

    fn slots_in(&self, path: &str) -> &[Slot] {
        self.files.get(path).map_or(&[][..], |f| f.ids.as_slice())
    }

    /// The live nodes of a file, in order (the file's own node first).
    pub fn nodes_in(&self, path: &str) -> Vec<Node> {
        self.slots_in(path)
            .iter()
            .map(|&s| self.table.node(s))
            .collect()
    }

    /// The kind, name and qualified name of each live definition of
    /// `path`, in order (the file's own node left out): what
    /// [`Topology::nodes_in`] gives, for a look at many files.
    pub fn definitions_in(&self, path: &str) -> impl Iterator<Item = (NodeType, &str, &str)> {
        self.slots_in(path).iter().skip(1).map(|&s| {
            let e = self.table.get(s);
            (e.node_type, e.name(), e.qualname())
        })
    }

    /// The edges leaving the nodes of `path`.
    pub fn edges_of(&self, path: &str) -> Vec<Edge> {
        let links = self.files.get(path).map_or(&[][..], |f| f.edges.as_slice());
        links.iter().map(|&l| self.table.edge(l)).collect()
    }

    /// The files with a live definition named `word`, or belonging to
    /// something named `word` (see [`Node::parent_name`]), in no set order.
    pub fn files_naming(&self, word: &str) -> impl Iterator<Item = &str> {
        self.words.files(word)
    }

    /// The words of `path`'s live definitions ([`Topology::files_naming`]).
    fn words_in(&self, path: &str) -> BTreeSet<String> {
        words::words_of(
            self.definitions_in(path)
                .map(|(_, name, qual)| (name, qual)),
        )
    }

    /// Runs `update` of `path` to the parse `ex`, keeping its words in
    /// step. A parse of the same shape as the file's last (the same kinds
    /// and qualified names in order: as while the human types) has the
    /// same words.
    fn keeping_words<T>(
        &mut self,
        path: &str,
        ex: &Extracted,
        update: impl FnOnce(&mut Self) -> T,
    ) -> T {
        if self.files.get(path).and_then(|f| f.shape) == Some(shape_of(ex)) {
            return update(self);
        }
        let before = self.words_in(path);
        let out = update(self);
        let after = self.words_in(path);
        self.words.change(path, &before, &after);
        out
    }

    /// The innermost live definition of `path` containing 1-based `line`,
    /// else the file's own node.
    pub fn node_at(&self, path: &str, line: usize) -> Option<Node> {
        let slots = self.slots_in(path);
        let line = line as u32;
        slots
            .iter()
            .skip(1)
            .filter(|&&s| {
                let e = self.table.get(s);
                e.start_line <= line && line <= e.end_line
            })
            .min_by_key(|&&s| {
                let e = self.table.get(s);
                e.end_line - e.start_line
            })
            .or(slots.first())
            .map(|&s| self.table.node(s))
    }

    /// Nodes with an edge of `kind` into (`Incoming`) or out of `id`.
    pub fn neighbours(&self, id: &str, kind: EdgeKind, dir: Direction) -> Vec<Node> {
        let Some(slot) = self.table.slot(id) else {
            return vec![];
        };
        let mut slots: Vec<Slot> = self.table.neighbours(slot, kind, dir).collect();
        slots.sort_by(|&a, &b| {
            let (a, b) = (self.table.get(a), self.table.get(b));
            (&a.file, a.start_line).cmp(&(&b.file, b.start_line))
        });
        slots.dedup();
        slots.into_iter().map(|s| self.table.node(s)).collect()
    }

    pub fn callers(&self, id: &str) -> Vec<Node> {
        self.neighbours(id, EdgeKind::Calls, Direction::Incoming)
    }

    pub fn callees(&self, id: &str) -> Vec<Node> {
        self.neighbours(id, EdgeKind::Calls, Direction::Outgoing)
    }

    /// Whether edges of any kind lead from `from` to `to`.
    pub fn has_path(&self, from: &str, to: &str) -> bool {
        match (self.table.slot(from), self.table.slot(to)) {
            (Some(a), Some(b)) => self.table.has_path(a, b),
            _ => from == to,
        }
    }

    // ---- matching IDs ------------------------------------------------------

    /// The ID of each node of `ex` (parallel to `ex.nodes`), without changing
    /// anything: comments first (adopted when unknown, kept when they name
    /// the same node), then the old nodes of the file by (type, qualified
    /// name) in order, then fresh IDs.
    pub fn assign_ids(&self, path: &str, ex: &Extracted) -> Vec<String> {
        self.ids_for(path, self.files.get(path), ex)
            .iter()
            .map(|id| id.as_str().to_owned())
            .collect()
    }

    fn ids_of(&self, slots: &[Slot]) -> Vec<Id> {
        slots.iter().map(|&s| self.table.id(s)).collect()
    }

    /// [`Topology::assign_ids`] given the file's state as indexed (`old`).
    fn ids_for(&self, path: &str, old: Option<&FileState>, ex: &Extracted) -> Vec<Id> {
        // The common case while typing: the same definitions in the same
        // order, so the same IDs (unless a comment says otherwise).
        if let Some(f) = old.filter(|f| self.same_nodes(f, ex, shape_of(ex))) {
            return self.ids_of(&f.ids);
        }
        let mut taken: HashSet<Id> = HashSet::new();
        let mut out: Vec<Option<Id>> = vec![None; ex.nodes.len()];

        let file_id = ex
            .file_comment
            .as_ref()
            .and_then(|c| Id::new(&c.id))
            .filter(|&id| match self.table.by_id(id) {
                None => true,
                Some(n) => {
                    n.node_type == NodeType::File
                        && (&*n.file == path || n.status == NodeStatus::Orphaned)
                }
            })
            .or_else(|| old.and_then(|f| f.ids.first()).map(|&s| self.table.id(s)));
        if let Some(id) = file_id {
            taken.insert(id);
            out[0] = Some(id);
        }

        let mut pool: HashMap<(NodeType, &str), VecDeque<Id>> = HashMap::new();
        if let Some(f) = old {
            for &slot in f.ids.iter().skip(1) {
                let n = self.table.get(slot);
                pool.entry((n.node_type, n.qualname()))
                    .or_default()
                    .push_back(n.id);
            }
        }
        for (i, raw) in ex.nodes.iter().enumerate().skip(1) {
            let Some(id) = raw.id_comment.as_ref().and_then(|c| Id::new(&c.id)) else {
                continue;
            };
            if !taken.contains(&id) && self.may_claim(path, raw, id) {
                if let Some(q) = pool.get_mut(&(raw.node_type, raw.qualname.as_str())) {
                    q.retain(|x| *x != id);
                }
                taken.insert(id);
                out[i] = Some(id);
            }
        }
        for (i, raw) in ex.nodes.iter().enumerate().skip(1) {
            if out[i].is_some() {
                continue;
            }
            let comment_claims = raw.id_comment.is_some();
            if let Some(q) = pool.get_mut(&(raw.node_type, raw.qualname.as_str())) {
                // A line whose comment names another node is a rename: it
                // must not inherit an ID by name either.
                if comment_claims {
                    continue;
                }
                while let Some(id) = q.pop_front() {
                    if taken.insert(id) {
                        out[i] = Some(id);
                        break;
                    }
                }
            }
        }
        out.into_iter()
            .map(|id| {
                id.unwrap_or_else(|| {
                    let id = ids::fresh_id(|c| self.table.contains(c) || taken.contains(&c));
                    taken.insert(id);
                    id
                })
            })
            .collect()
    }

    /// Whether `ex` has the nodes of `f` in the same order, no comment
    /// naming another ID.
    fn same_nodes(&self, f: &FileState, ex: &Extracted, shape: blake3::Hash) -> bool {
        let id_is = |slot: Slot, id: &str| self.table.id(slot).as_str() == id;
        let same_names = |(raw, &slot): (&RawNode, &Slot)| {
            let n = self.table.get(slot);
            n.node_type == raw.node_type && n.qualname() == raw.qualname
        };
        f.ids.len() == ex.nodes.len()
            && ex
                .file_comment
                .as_ref()
                .is_none_or(|c| f.ids.first().is_some_and(|&s| id_is(s, &c.id)))
            && ex
                .nodes
                .iter()
                .zip(&f.ids)
                .skip(1)
                .all(|(raw, &s)| raw.id_comment.as_ref().is_none_or(|c| id_is(s, &c.id)))
            && match f.shape {
                Some(s) => s == shape,
                None => ex.nodes.iter().zip(&f.ids).skip(1).all(same_names),
            }
    }

    /// Whether node `raw` of `path` may take `id`, which its comment
    /// names: an unknown ID, or the same node (here, or orphaned).
    fn may_claim(&self, path: &str, raw: &RawNode, id: Id) -> bool {
        self.table.by_id(id).is_none_or(|n| {
            n.node_type == raw.node_type
                && n.qualname() == raw.qualname
                && (&*n.file == path || n.status == NodeStatus::Orphaned)
        })
    }

    // ---- updates -----------------------------------------------------------

    /// Takes in the new parse of `path` and resolves edges at once (the file
    /// and every file with references into it).
    pub fn update_file(&mut self, path: &str, hash: &str, ex: &Extracted) -> FileChange {
        let (notes, resolve) =
            self.keeping_words(path, ex, |t| t.replace_nodes(path, hash, ex, false));
        let mut change = notes.change;
        let Some(exports_changed) = resolve else {
            return change;
        };
        let mut touched = vec![path.to_owned()];
        if exports_changed {
            touched.extend(self.dependents_of(path));
        }
        self.resolve_files(&touched, &mut change);
        change
    }

    /// The file is gone: its nodes are orphaned and every edge to or from
    /// them removed.
    pub fn remove_file(&mut self, path: &str) -> Option<FileChange> {
        let words = self.words_in(path);
        self.words.change(path, &words, &BTreeSet::new());
        let state = self.files.remove(path)?;
        let mut change = FileChange {
            path: path.to_owned(),
            removed: true,
            ..FileChange::default()
        };
        for &slot in &state.ids {
            self.table.set_status(slot, NodeStatus::Orphaned);
            change
                .orphaned
                .push(self.table.id(slot).as_str().to_owned());
        }
        for &l in &state.edges {
            self.table.unlink(l);
            change.removed_edges.push(self.table.edge(l));
        }
        self.forget_refs(path, &state.refs);
        let dependents = self.dependents_of(path);
        self.forget_module(path);
        self.resolve_files(&dependents, &mut change);
        Some(change)
    }

    /// The qualified names of a file's definitions with their slots: what
    /// other files can reach of it.
    fn exports(&self, f: &FileState) -> Vec<(String, Slot)> {
        f.qual
            .iter()
            .map(|&s| (self.table.get(s).qualname().to_owned(), s))
            .collect()
    }

    /// Replaces the nodes and references of `path`; returns the change (no
    /// edges yet) and whether edges need resolving again: `None` when the
    /// file's structure (its IDs in order and its references) is unchanged,
    /// `Some(true)` when names other files can reach changed too.
    fn replace_nodes(
        &mut self,
        path: &str,
        hash: &str,
        ex: &Extracted,
        lean: bool,
    ) -> (Notes, Option<bool>) {
        let (file, mut old) = match self.files.remove_entry(path) {
            Some((file, old)) => (file, Some(old)),
            None => (Arc::from(path), None),
        };
        // While the human types, the file has the same definitions in the
        // same order: its IDs, names and edges are moved over, not copied.
        let shape = shape_of(ex);
        let same = old.as_ref().is_some_and(|o| self.same_nodes(o, ex, shape));
        let mut ids = match old.as_ref() {
            Some(o) if same => self.ids_of(&o.ids),
            _ => self.ids_for(path, old.as_ref(), ex),
        };
        let parsed = ids.len();
        let mut notes = Notes {
            change: FileChange {
                path: path.to_owned(),
                hash: hash.to_owned(),
                ..FileChange::default()
            },
            lean: lean.then(Lean::default),
        };
        if let Some(o) = old.as_ref().filter(|_| !same) {
            self.keep_or_orphan(o, ex.has_error, &mut ids, &mut notes.change);
        }
        let same_order = same || old.as_ref().is_some_and(|o| self.ids_of(&o.ids) == ids);
        let exports_before = match &old {
            Some(o) if !same_order => Some(self.exports(o)),
            _ => None,
        };
        let written = match &old {
            Some(o) if same_order => Some(o.records.as_slice()),
            _ => None,
        };
        let (slots, records) = self.write_nodes(&file, ex, &ids, parsed, written, &mut notes);
        let mut state = FileState {
            hash: hash.to_owned(),
            ids: slots,
            shape: (ids.len() == parsed).then_some(shape),
            records: if lean { Vec::new() } else { records },
            ..FileState::default()
        };
        if !same_order {
            // Kept nodes (under a syntax error) move to the end of the order.
            for (ord, &slot) in state.ids.iter().enumerate().skip(parsed) {
                notes.node(ord, slot, &self.table);
            }
        }
        // Same IDs in the same order means the same qualified names, so
        // nothing other files can reach changed.
        let exports_changed = match old.as_mut() {
            Some(o) if same_order => {
                state.qual = std::mem::take(&mut o.qual);
                false
            }
            o => {
                state.qual = self.qualified(&state.ids);
                o.is_none_or(|o| {
                    exports_before.as_ref() != Some(&self.exports(&state))
                        || o.ids.first() != state.ids.first()
                })
            }
        };
        let refs_unchanged;
        (state.refs, refs_unchanged) = refs_after(ex, &ids, parsed, same_order, old.as_mut());
        if !refs_unchanged {
            // A lean change notes only that they changed: they are the file's.
            notes.change.refs = Some(if lean { Vec::new() } else { state.refs.clone() });
        }
        let resolve = self.keep_file(file, old, state, refs_unchanged, exports_changed);
        (notes, resolve)
    }

    /// The nodes of `old` not among `ids`: kept at the end of `ids` under a
    /// syntax error (mid-edit, definitions vanish from the parse for a
    /// moment: their identity is not churned), else orphaned.
    fn keep_or_orphan(
        &mut self,
        old: &FileState,
        has_error: bool,
        ids: &mut Vec<Id>,
        change: &mut FileChange,
    ) {
        let new_set: HashSet<Id> = ids.iter().copied().collect();
        for &slot in &old.ids {
            let id = self.table.id(slot);
            if new_set.contains(&id) {
                continue;
            }
            if has_error {
                ids.push(id);
            } else {
                self.table.set_status(slot, NodeStatus::Orphaned);
                change.orphaned.push(id.as_str().to_owned());
            }
        }
    }

    /// Keeps `state` as `path`'s, its references indexed and its edges
    /// those it had (`old`) until they are resolved again; returns whether
    /// they must be (see [`Topology::replace_nodes`]).
    fn keep_file(
        &mut self,
        path: Arc<str>,
        old: Option<FileState>,
        mut state: FileState,
        refs_unchanged: bool,
        exports_changed: bool,
    ) -> Option<bool> {
        let resolve = match old {
            None => {
                self.register_module(&path);
                self.remember_refs(&path, &state.refs);
                Some(true)
            }
            Some(o) if refs_unchanged => {
                state.edges = o.edges;
                None
            }
            Some(o) => {
                state.edges = o.edges;
                self.forget_refs(&path, &o.refs);
                self.remember_refs(&path, &state.refs);
                Some(exports_changed)
            }
        };
        self.files.insert(path, state);
        resolve
    }

    /// Writes the nodes of `ex` (with their `ids`; the first `parsed` are
    /// the parse's, the others kept from before it) that are new or
    /// changed, noting each in `change`; returns the slot of every one of
    /// `ids` and the records of the parsed. With the file's order
    /// unchanged, `written` holds the records of its nodes as they are (if
    /// known): a node of the same record, or the same fields, is left as
    /// it is.
    fn write_nodes(
        &mut self,
        file: &Arc<str>,
        ex: &Extracted,
        ids: &[Id],
        parsed: usize,
        written: Option<&[Record]>,
        notes: &mut Notes,
    ) -> (Vec<Slot>, Vec<Record>) {
        let mut slots = Vec::with_capacity(ids.len());
        let mut records = Vec::with_capacity(parsed);
        for (ord, (raw, &id)) in ex.nodes.iter().zip(&ids[..parsed]).enumerate() {
            let record = record_of(raw);
            records.push(record);
            let parent_id = raw.parent.map(|p| ids[p]);
            let kept = self.table.slot_of(id);
            let unchanged = kept.filter(|&slot| {
                if written.and_then(|w| w.get(ord)) == Some(&record) {
                    return true;
                }
                let n = self.table.get(slot);
                written.is_some()
                    && n.status == NodeStatus::Active
                    && n.spans(raw.start_line, raw.end_line)
                    && n.source_is(&raw.source_hash)
                    && n.parent == parent_id
                    && n.file == *file
            });
            if let Some(slot) = unchanged {
                slots.push(slot);
                continue;
            }
            if kept.is_none() {
                notes.added(id);
            }
            let fields = Fields {
                id,
                node_type: raw.node_type,
                status: NodeStatus::Active,
                start_line: raw.start_line,
                end_line: raw.end_line,
                parent: parent_id,
                name: &raw.name,
                qualname: &raw.qualname,
                source_hash: &raw.source_hash,
            };
            let slot = self.table.put(fields, file);
            slots.push(slot);
            notes.node(ord, slot, &self.table);
        }
        slots.extend(
            ids[parsed..]
                .iter()
                .filter_map(|&id| self.table.slot_of(id)),
        );
        (slots, records)
    }

    /// A file's definitions `slots` (its file node first) by qualified
    /// name, each name's first.
    fn qualified(&self, slots: &[Slot]) -> Vec<Slot> {
        let mut qual: Vec<Slot> = slots.iter().skip(1).copied().collect();
        // A stable sort: of duplicates, the first stays first.
        qual.sort_by(|&a, &b| {
            self.table
                .get(a)
                .qualname()
                .cmp(self.table.get(b).qualname())
        });
        qual.dedup_by(|a, b| self.table.get(*a).qualname() == self.table.get(*b).qualname());
        qual
    }

    /// The definition of `path` named `qual`, if it is one of the file's.
    fn qualified_in(&self, path: &str, qual: &str) -> Option<Slot> {
        let f = self.files.get(path)?;
        let at = f
            .qual
            .binary_search_by(|&s| self.table.get(s).qualname().cmp(qual))
            .ok()?;
        Some(f.qual[at])
    }
}

/// The kinds and qualified names of a parse's nodes, in order, hashed:
/// the same hash, the same definitions.
fn shape_of(ex: &Extracted) -> blake3::Hash {
    let nodes = &ex.nodes[1.min(ex.nodes.len())..];
    let mut all = Vec::with_capacity(nodes.iter().map(|n| n.qualname.len() + 2).sum());
    for n in nodes {
        all.push(n.node_type as u8);
        all.extend_from_slice(n.qualname.as_bytes());
        all.push(0);
    }
    blake3::hash(&all)
}

/// What of a parsed node its record in the topology holds beyond its ID,
/// kind and names (which the same ID in the same place keeps): its lines,
/// its parent's place, and its source hash (the first 64 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    lines: (usize, usize),
    parent: Option<usize>,
    source: [u8; 16],
}

fn record_of(n: &RawNode) -> Record {
    let mut source = [0u8; 16];
    let hex = n.source_hash.as_bytes();
    let len = hex.len().min(16);
    source[..len].copy_from_slice(&hex[..len]);
    Record {
        lines: (n.start_line, n.end_line),
        parent: n.parent,
        source,
    }
}

/// The references of the parse `ex` of a file, its nodes `ids` (the first
/// `parsed` of them parsed, the others kept through a syntax error): moved
/// from the file's `old` state when they are the same (`same_order`: the
/// same IDs in the same order), with whether they are.
fn refs_after(
    ex: &Extracted,
    ids: &[Id],
    parsed: usize,
    same_order: bool,
    old: Option<&mut FileState>,
) -> (Vec<Ref>, bool) {
    let parsed_ids = &ids[..parsed];
    let unchanged = same_order
        && old.as_ref().is_some_and(|o| {
            o.refs.len() == ex.refs.len()
                && o.refs.iter().zip(&ex.refs).all(|(a, b)| {
                    a.from == parsed_ids[b.from] && a.kind == b.kind && a.target == *b.target
                })
        });
    let refs = match old {
        Some(o) if unchanged => std::mem::take(&mut o.refs),
        o => refs_of(ex, parsed_ids, o.as_deref(), &ids[parsed..]),
    };
    (refs, unchanged)
}

/// The references of `ex` from its nodes `ids`, and under a syntax error
/// those of the `kept` nodes that vanished from the parse (from `old`).
fn refs_of(ex: &Extracted, ids: &[Id], old: Option<&FileState>, kept: &[Id]) -> Vec<Ref> {
    let mut refs: Vec<Ref> = ex
        .refs
        .iter()
        .map(|r| Ref {
            from: ids[r.from],
            kind: r.kind,
            target: Target::clone(&r.target),
        })
        .collect();
    if let Some(o) = old {
        let kept: HashSet<Id> = kept.iter().copied().collect();
        refs.extend(o.refs.iter().filter(|r| kept.contains(&r.from)).cloned());
    }
    refs
}
