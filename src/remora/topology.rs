//! The topology in memory: every node by ID, every file's nodes and
//! references, and a petgraph of the edges for traversal. It matches the
//! nodes of a re-parsed file to their old IDs and resolves references
//! between files, and reports each change as a [`FileChange`] for the store.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use serde::{Deserialize, Serialize};

use super::extract::{Extracted, Target};
use super::extracted::RawNode;
use super::{ids, Edge, EdgeKind, Node, NodeStatus, NodeType};

mod resolve;
mod words;

/// A reference from one node, as stored with its file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ref {
    pub from: String,
    pub kind: EdgeKind,
    pub target: Target,
}

/// One indexed file.
#[derive(Debug, Clone, Default)]
pub struct FileState {
    /// Hash of the text indexed ([`crate::store::hash_bytes`]).
    pub hash: String,
    /// Its live nodes in order; `ids[0]` is the file's own node.
    pub ids: Vec<String>,
    pub refs: Vec<Ref>,
    /// Every edge leaving one of its nodes.
    pub edges: BTreeSet<Edge>,
    /// Qualified name → ID of its live definitions (the first of duplicates).
    qual: HashMap<String, String>,
    /// The [`shape_of`] its parse, while every ID is of a node parsed (no
    /// definition kept through a syntax error); `None` also when loaded
    /// from the store.
    shape: Option<blake3::Hash>,
    /// The [`record_of`] each parsed node as written, in order: a node
    /// whose record is the same needs no look in the topology.
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
    nodes: HashMap<String, Node>,
    files: HashMap<String, FileState>,
    /// Module name → file path.
    modules: HashMap<String, String>,
    /// Module name → every file of it: a Go package is a directory of files.
    members: HashMap<String, BTreeSet<String>>,
    /// Module name → files with a reference into it (to backfill their edges).
    dependents: HashMap<String, HashSet<String>>,
    graph: StableDiGraph<String, EdgeKind>,
    index: HashMap<String, NodeIndex>,
    /// The files of each word their definitions name.
    words: words::Words,
}

impl Topology {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    pub fn file(&self, path: &str) -> Option<&FileState> {
        self.files.get(path)
    }

    pub fn file_paths(&self) -> impl Iterator<Item = &String> {
        self.files.keys()
    }

    /// Number of nodes (all statuses) and edges.
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes.len(), self.graph.edge_count())
    }

    /// The live nodes of a file, in order (the file's own node first).
    pub fn nodes_in(&self, path: &str) -> Vec<&Node> {
        self.files
            .get(path)
            .map(|f| f.ids.iter().filter_map(|id| self.nodes.get(id)).collect())
            .unwrap_or_default()
    }

    /// The files with a live definition named `word`, or belonging to
    /// something named `word` (see [`Node::parent_name`]), in no set order.
    pub fn files_naming(&self, word: &str) -> impl Iterator<Item = &str> {
        self.words.files(word)
    }

    /// The words of `path`'s live definitions ([`Topology::files_naming`]).
    fn words_in(&self, path: &str) -> BTreeSet<String> {
        let ids = self.files.get(path).map_or(&[][..], |f| f.ids.as_slice());
        words::words_of(ids.iter().skip(1).filter_map(|id| self.nodes.get(id)))
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
    pub fn node_at(&self, path: &str, line: usize) -> Option<&Node> {
        let nodes = self.nodes_in(path);
        nodes
            .iter()
            .skip(1)
            .filter(|n| n.start_line <= line && line <= n.end_line)
            .min_by_key(|n| n.end_line - n.start_line)
            .or(nodes.first())
            .copied()
    }

    /// Nodes with an edge of `kind` into (`Incoming`) or out of `id`.
    pub fn neighbours(&self, id: &str, kind: EdgeKind, dir: Direction) -> Vec<&Node> {
        let Some(&ix) = self.index.get(id) else {
            return vec![];
        };
        let mut out: Vec<&Node> = self
            .graph
            .edges_directed(ix, dir)
            .filter(|e| *e.weight() == kind)
            .filter_map(|e| {
                let other = if dir == Direction::Incoming {
                    e.source()
                } else {
                    e.target()
                };
                self.graph
                    .node_weight(other)
                    .and_then(|id| self.nodes.get(id))
            })
            .collect();
        out.sort_by(|a, b| (&a.file_path, a.start_line).cmp(&(&b.file_path, b.start_line)));
        out.dedup_by(|a, b| a.id == b.id);
        out
    }

    pub fn callers(&self, id: &str) -> Vec<&Node> {
        self.neighbours(id, EdgeKind::Calls, Direction::Incoming)
    }

    pub fn callees(&self, id: &str) -> Vec<&Node> {
        self.neighbours(id, EdgeKind::Calls, Direction::Outgoing)
    }

    /// Whether edges of any kind lead from `from` to `to`.
    pub fn has_path(&self, from: &str, to: &str) -> bool {
        match (self.index.get(from), self.index.get(to)) {
            (Some(&a), Some(&b)) => petgraph::algo::has_path_connecting(&self.graph, a, b, None),
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
    }

    /// [`Topology::assign_ids`] given the file's state as indexed (`old`).
    fn ids_for(&self, path: &str, old: Option<&FileState>, ex: &Extracted) -> Vec<String> {
        // The common case while typing: the same definitions in the same
        // order, so the same IDs (unless a comment says otherwise).
        if let Some(f) = old.filter(|f| self.same_nodes(f, ex, shape_of(ex))) {
            return f.ids.clone();
        }
        let mut taken: HashSet<String> = HashSet::new();
        let mut out: Vec<Option<String>> = vec![None; ex.nodes.len()];

        let file_id = ex
            .file_comment
            .as_ref()
            .map(|c| c.id.clone())
            .filter(|id| match self.nodes.get(id) {
                None => true,
                Some(n) => {
                    n.node_type == NodeType::File
                        && (n.file_path == path || n.status == NodeStatus::Orphaned)
                }
            })
            .or_else(|| old.and_then(|f| f.ids.first().cloned()));
        if let Some(id) = file_id {
            taken.insert(id.clone());
            out[0] = Some(id);
        }

        let mut pool: HashMap<(NodeType, &str), VecDeque<&str>> = HashMap::new();
        if let Some(f) = old {
            for id in f.ids.iter().skip(1) {
                if let Some(n) = self.nodes.get(id) {
                    pool.entry((n.node_type, n.qualname.as_str()))
                        .or_default()
                        .push_back(id.as_str());
                }
            }
        }
        for (i, raw) in ex.nodes.iter().enumerate().skip(1) {
            let Some(c) = &raw.id_comment else { continue };
            if !taken.contains(&c.id) && self.may_claim(path, raw, &c.id) {
                if let Some(q) = pool.get_mut(&(raw.node_type, raw.qualname.as_str())) {
                    q.retain(|id| *id != c.id);
                }
                taken.insert(c.id.clone());
                out[i] = Some(c.id.clone());
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
                    if taken.insert(id.to_owned()) {
                        out[i] = Some(id.to_owned());
                        break;
                    }
                }
            }
        }
        out.into_iter()
            .map(|id| {
                id.unwrap_or_else(|| {
                    let id = ids::fresh_unused(|c| self.nodes.contains_key(c) || taken.contains(c));
                    taken.insert(id.clone());
                    id
                })
            })
            .collect()
    }

    /// Whether `ex` has the nodes of `f` in the same order, no comment
    /// naming another ID.
    fn same_nodes(&self, f: &FileState, ex: &Extracted, shape: blake3::Hash) -> bool {
        let same_names = |(raw, id): (&RawNode, &String)| {
            self.nodes
                .get(id)
                .is_some_and(|n| n.node_type == raw.node_type && n.qualname == raw.qualname)
        };
        f.ids.len() == ex.nodes.len()
            && ex
                .file_comment
                .as_ref()
                .is_none_or(|c| Some(&c.id) == f.ids.first())
            && ex
                .nodes
                .iter()
                .zip(&f.ids)
                .skip(1)
                .all(|(raw, id)| raw.id_comment.as_ref().is_none_or(|c| &c.id == id))
            && match f.shape {
                Some(s) => s == shape,
                None => ex.nodes.iter().zip(&f.ids).skip(1).all(same_names),
            }
    }

    /// Whether node `raw` of `path` may take `id`, which its comment
    /// names: an unknown ID, or the same node (here, or orphaned).
    fn may_claim(&self, path: &str, raw: &RawNode, id: &str) -> bool {
        self.nodes.get(id).is_none_or(|n| {
            n.node_type == raw.node_type
                && n.qualname == raw.qualname
                && (n.file_path == path || n.status == NodeStatus::Orphaned)
        })
    }

    // ---- updates -----------------------------------------------------------

    /// Takes in the new parse of `path` and resolves edges at once (the file
    /// and every file with references into it).
    pub fn update_file(&mut self, path: &str, hash: &str, ex: &Extracted) -> FileChange {
        let (mut change, resolve) =
            self.keeping_words(path, ex, |t| t.replace_nodes(path, hash, ex));
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
        for id in &state.ids {
            if let Some(n) = self.nodes.get_mut(id) {
                n.status = NodeStatus::Orphaned;
                change.orphaned.push(id.clone());
            }
        }
        for e in &state.edges {
            self.graph_remove(e);
            change.removed_edges.push(e.clone());
        }
        self.forget_refs(path, &state.refs);
        let dependents = self.dependents_of(path);
        self.forget_module(path);
        self.resolve_files(&dependents, &mut change);
        Some(change)
    }

    /// Bulk loading: takes in a file's nodes without resolving any edge;
    /// call [`Topology::resolve_all`] once every file is in.
    pub fn add_file_unresolved(&mut self, path: &str, hash: &str, ex: &Extracted) -> FileChange {
        self.keeping_words(path, ex, |t| t.replace_nodes(path, hash, ex).0)
    }

    /// Resolves the edges of every file (after bulk loading); returns one
    /// change per file whose edges changed.
    pub fn resolve_all(&mut self) -> Vec<FileChange> {
        let paths: Vec<String> = self.files.keys().cloned().collect();
        paths
            .into_iter()
            .filter_map(|p| {
                let mut change = FileChange {
                    path: p.clone(),
                    ..FileChange::default()
                };
                self.resolve_files(std::slice::from_ref(&p), &mut change);
                (!change.added_edges.is_empty() || !change.removed_edges.is_empty())
                    .then_some(change)
            })
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
    ) -> (FileChange, Option<bool>) {
        let mut old = self.files.remove(path);
        // While the human types, the file has the same definitions in the
        // same order: its IDs, names and edges are moved over, not copied.
        let shape = shape_of(ex);
        let same = old.as_ref().is_some_and(|o| self.same_nodes(o, ex, shape));
        let ids = match old.as_mut() {
            Some(o) if same => std::mem::take(&mut o.ids),
            _ => self.ids_for(path, old.as_ref(), ex),
        };
        let parsed = ids.len();
        let mut change = FileChange {
            path: path.to_owned(),
            hash: hash.to_owned(),
            ..FileChange::default()
        };
        let mut state = FileState {
            hash: hash.to_owned(),
            ids,
            ..FileState::default()
        };
        if let Some(o) = old.as_ref().filter(|_| !same) {
            self.keep_or_orphan(o, ex.has_error, &mut state.ids, &mut change);
        }
        let same_order = same || old.as_ref().is_some_and(|o| o.ids == state.ids);
        state.shape = (state.ids.len() == parsed).then_some(shape);
        let written = match &old {
            Some(o) if same_order => Some(o.records.as_slice()),
            _ => None,
        };
        state.records = self.write_nodes(path, ex, &state.ids[..parsed], written, &mut change);
        if !same_order {
            // Kept nodes (under a syntax error) move to the end of the order.
            for (ord, id) in state.ids.iter().enumerate().skip(parsed) {
                if let Some(n) = self.nodes.get(id) {
                    change.nodes.push((ord, n.clone()));
                }
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
                o.is_none_or(|o| o.qual != state.qual || o.ids.first() != state.ids.first())
            }
        };
        let ids = &state.ids[..parsed];
        let refs_unchanged = same_order
            && old.as_ref().is_some_and(|o| {
                o.refs.len() == ex.refs.len()
                    && o.refs.iter().zip(&ex.refs).all(|(a, b)| {
                        a.from == ids[b.from] && a.kind == b.kind && a.target == *b.target
                    })
            });
        state.refs = match old.as_mut() {
            Some(o) if refs_unchanged => std::mem::take(&mut o.refs),
            _ => refs_of(ex, ids, old.as_ref(), &state.ids[parsed..]),
        };
        if !refs_unchanged {
            change.refs = Some(state.refs.clone());
        }
        let resolve = self.keep_file(path, old, state, refs_unchanged, exports_changed);
        (change, resolve)
    }

    /// The nodes of `old` not among `ids`: kept at the end of `ids` under a
    /// syntax error (mid-edit, definitions vanish from the parse for a
    /// moment: their identity is not churned), else orphaned.
    fn keep_or_orphan(
        &mut self,
        old: &FileState,
        has_error: bool,
        ids: &mut Vec<String>,
        change: &mut FileChange,
    ) {
        let new_set: HashSet<&String> = ids.iter().collect();
        let vanished: Vec<String> = old
            .ids
            .iter()
            .filter(|id| !new_set.contains(id))
            .cloned()
            .collect();
        for id in vanished {
            if has_error {
                ids.push(id);
            } else if let Some(n) = self.nodes.get_mut(&id) {
                n.status = NodeStatus::Orphaned;
                change.orphaned.push(id);
            }
        }
    }

    /// Keeps `state` as `path`'s, its references indexed and its edges
    /// those it had (`old`) until they are resolved again; returns whether
    /// they must be (see [`Topology::replace_nodes`]).
    fn keep_file(
        &mut self,
        path: &str,
        old: Option<FileState>,
        mut state: FileState,
        refs_unchanged: bool,
        exports_changed: bool,
    ) -> Option<bool> {
        let resolve = match old {
            None => {
                self.register_module(path);
                self.remember_refs(path, &state.refs);
                Some(true)
            }
            Some(o) if refs_unchanged => {
                state.edges = o.edges;
                None
            }
            Some(o) => {
                state.edges = o.edges;
                self.forget_refs(path, &o.refs);
                self.remember_refs(path, &state.refs);
                Some(exports_changed)
            }
        };
        self.files.insert(path.to_owned(), state);
        resolve
    }

    /// Writes the nodes of `ex` (with their `ids`) that are new or changed,
    /// noting each in `change`; returns their records. With the file's
    /// order unchanged, `written` holds the records of its nodes as they
    /// are (if known): a node of the same record, or the same fields, is
    /// left as it is.
    fn write_nodes(
        &mut self,
        path: &str,
        ex: &Extracted,
        ids: &[String],
        written: Option<&[Record]>,
        change: &mut FileChange,
    ) -> Vec<Record> {
        let mut records = Vec::with_capacity(ids.len());
        for (ord, (raw, id)) in ex.nodes.iter().zip(ids).enumerate() {
            let record = record_of(raw);
            records.push(record);
            if written.and_then(|w| w.get(ord)) == Some(&record) {
                continue;
            }
            let parent_id = raw.parent.map(|p| &ids[p]);
            match self.nodes.get(id) {
                None => change.added.push(id.clone()),
                Some(n)
                    if written.is_some()
                        && n.status == NodeStatus::Active
                        && n.start_line == raw.start_line
                        && n.end_line == raw.end_line
                        && n.source_hash == raw.source_hash
                        && n.parent_id.as_ref() == parent_id
                        && n.file_path == path =>
                {
                    continue
                }
                Some(_) => {}
            }
            let node = Node {
                id: id.clone(),
                node_type: raw.node_type,
                name: raw.name.clone(),
                qualname: raw.qualname.clone(),
                parent_id: parent_id.cloned(),
                file_path: path.to_owned(),
                start_line: raw.start_line,
                end_line: raw.end_line,
                status: NodeStatus::Active,
                source_hash: raw.source_hash.clone(),
            };
            self.nodes.insert(id.clone(), node.clone());
            change.nodes.push((ord, node));
        }
        records
    }
    /// The qualified names of a file's nodes `ids` (its file node first),
    /// each to the first node of that name.
    fn qualified(&self, ids: &[String]) -> HashMap<String, String> {
        let mut qual = HashMap::new();
        for id in ids.iter().skip(1) {
            if let Some(n) = self.nodes.get(id) {
                qual.entry(n.qualname.clone()).or_insert_with(|| id.clone());
            }
        }
        qual
    }

    fn graph_ix(&mut self, id: &str) -> NodeIndex {
        if let Some(&ix) = self.index.get(id) {
            return ix;
        }
        let ix = self.graph.add_node(id.to_owned());
        self.index.insert(id.to_owned(), ix);
        ix
    }

    fn graph_add(&mut self, e: &Edge) {
        let a = self.graph_ix(&e.from);
        let b = self.graph_ix(&e.to);
        self.graph.add_edge(a, b, e.kind);
    }

    fn graph_remove(&mut self, e: &Edge) {
        let (Some(&a), Some(&b)) = (self.index.get(&e.from), self.index.get(&e.to)) else {
            return;
        };
        let found = self
            .graph
            .edges_connecting(a, b)
            .find(|x| *x.weight() == e.kind)
            .map(|x| x.id());
        if let Some(ix) = found {
            self.graph.remove_edge(ix);
        }
    }

    // ---- loading from the store ---------------------------------------------

    /// Rebuilds the topology from stored rows: every node, each file's hash,
    /// live node order and references, and every edge.
    pub fn from_parts(
        nodes: Vec<Node>,
        files: Vec<(String, String, Vec<String>, Vec<Ref>)>,
        edges: Vec<Edge>,
    ) -> Self {
        let mut t = Topology::default();
        for n in nodes {
            t.nodes.insert(n.id.clone(), n);
        }
        for (path, hash, ids, refs) in files {
            let mut state = FileState {
                hash,
                ids,
                refs,
                ..FileState::default()
            };
            for id in state.ids.iter().skip(1) {
                if let Some(n) = t.nodes.get(id) {
                    state
                        .qual
                        .entry(n.qualname.clone())
                        .or_insert_with(|| id.clone());
                }
            }
            t.remember_refs(&path, &state.refs);
            t.register_module(&path);
            t.files.insert(path.clone(), state);
            let words = t.words_in(&path);
            t.words.change(&path, &BTreeSet::new(), &words);
        }
        for e in edges {
            let Some(path) = t.nodes.get(&e.from).map(|n| n.file_path.clone()) else {
                continue;
            };
            if let Some(state) = t.files.get_mut(&path) {
                if state.edges.insert(e.clone()) {
                    t.graph_add(&e);
                }
            }
        }
        t
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

/// The references of `ex` from its nodes `ids`, and under a syntax error
/// those of the `kept` nodes that vanished from the parse (from `old`).
fn refs_of(ex: &Extracted, ids: &[String], old: Option<&FileState>, kept: &[String]) -> Vec<Ref> {
    let mut refs: Vec<Ref> = ex
        .refs
        .iter()
        .map(|r| Ref {
            from: ids[r.from].clone(),
            kind: r.kind,
            target: Target::clone(&r.target),
        })
        .collect();
    if let Some(o) = old {
        let kept: HashSet<&String> = kept.iter().collect();
        refs.extend(o.refs.iter().filter(|r| kept.contains(&r.from)).cloned());
    }
    refs
}
