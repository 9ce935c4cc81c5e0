//! The topology's nodes, held compactly: a monorepo has hundreds of
//! thousands, and a running core holds them all. Each node lives in one
//! place (its slot) of one table, with its ID, names and lines beside no
//! copy; its file's path is shared with its file; its source hash is 32
//! bytes; the graph of edges numbers its nodes by their slots.

use std::collections::HashMap;
use std::sync::Arc;

use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;

use super::super::ids::Id;
use super::super::{Edge, EdgeKind, Node, NodeStatus, NodeType};

/// A node's place in the table. Nodes are never taken out (an orphan
/// stays), so a slot names the same node for the table's life.
pub(super) type Slot = u32;

/// One node, as the table holds it; its texts are in the table's
/// ([`Table::get`] reads them).
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub id: Id,
    pub node_type: NodeType,
    pub status: NodeStatus,
    pub start_line: u32,
    pub end_line: u32,
    pub parent: Option<Id>,
    /// Shared with the other nodes of its file.
    pub file: Arc<str>,
    qualname: Span,
    /// Nearly always the end of the qualified name's span.
    name: Span,
    source: SourceHash,
}

/// Where a text is in the table's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    at: u32,
    len: u32,
}

/// A node's source hash: blake3's 64 hex digits as the 32 bytes they
/// spell, anything else as it was given (in the table's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SourceHash {
    Blake3([u8; 32]),
    Other(Span),
}

/// `hex` as the 32 bytes it spells, if it is 64 lowercase hex digits.
fn blake3_bytes(hex: &str) -> Option<[u8; 32]> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0u8; 32];
    let decoded = hex.len() == 64
        && hex
            .as_bytes()
            .chunks(2)
            .zip(bytes.iter_mut())
            .all(|(pair, out)| match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => {
                    *out = hi << 4 | lo;
                    true
                }
                _ => false,
            });
    decoded.then_some(bytes)
}

/// A node of the table, read with the table's text.
#[derive(Clone, Copy)]
pub(super) struct Held<'a> {
    entry: &'a Entry,
    text: &'a str,
}

impl std::ops::Deref for Held<'_> {
    type Target = Entry;

    fn deref(&self) -> &Entry {
        self.entry
    }
}

impl<'a> Held<'a> {
    fn read(&self, span: Span) -> &'a str {
        let at = span.at as usize;
        self.text
            .get(at..at + span.len as usize)
            .unwrap_or_default()
    }

    pub fn qualname(&self) -> &'a str {
        self.read(self.entry.qualname)
    }

    pub fn name(&self) -> &'a str {
        self.read(self.entry.name)
    }

    /// Whether its source hash is `hex`.
    pub fn source_is(&self, hex: &str) -> bool {
        match self.entry.source {
            SourceHash::Blake3(bytes) => blake3_bytes(hex) == Some(bytes),
            SourceHash::Other(span) => self.read(span) == hex,
        }
    }

    fn source_hex(&self) -> String {
        match self.entry.source {
            SourceHash::Blake3(bytes) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
            SourceHash::Other(span) => self.read(span).to_owned(),
        }
    }

    /// Whether its lines are `start..=end`.
    pub fn spans(&self, start: usize, end: usize) -> bool {
        (self.start_line as usize, self.end_line as usize) == (start, end)
    }
}

/// A node's fields as [`Table::put`] takes them, borrowed from wherever
/// they are (a parse, a row of the store).
#[derive(Debug, Clone, Copy)]
pub(super) struct Fields<'a> {
    pub id: Id,
    pub node_type: NodeType,
    pub status: NodeStatus,
    pub start_line: usize,
    pub end_line: usize,
    pub parent: Option<Id>,
    pub name: &'a str,
    pub qualname: &'a str,
    pub source_hash: &'a str,
}

impl<'a> Fields<'a> {
    /// The fields of `node`; `None` for an ID too long to be one.
    pub fn of(node: &'a Node) -> Option<Self> {
        Some(Fields {
            id: Id::new(&node.id)?,
            node_type: node.node_type,
            status: node.status,
            start_line: node.start_line,
            end_line: node.end_line,
            parent: node.parent_id.as_deref().and_then(Id::new),
            name: &node.name,
            qualname: &node.qualname,
            source_hash: &node.source_hash,
        })
    }
}

/// An edge between two slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Link {
    pub from: Slot,
    pub to: Slot,
    pub kind: EdgeKind,
}

/// Every node, by slot and by ID, and the graph of their edges.
#[derive(Debug, Default)]
pub(super) struct Table {
    entries: Vec<Entry>,
    /// The nodes' names, one after another: a name is a few bytes, where
    /// a string of its own would cost it 32 and an allocation. A name that
    /// changes under the same ID (which matching IDs does not do) leaves
    /// its old text behind.
    text: String,
    slots: HashMap<Id, Slot>,
    /// Node `i` of the graph is slot `i`.
    graph: StableDiGraph<(), EdgeKind, u32>,
}

impl Table {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    pub fn slot(&self, id: &str) -> Option<Slot> {
        self.slot_of(Id::new(id)?)
    }

    pub fn slot_of(&self, id: Id) -> Option<Slot> {
        self.slots.get(&id).copied()
    }

    pub fn contains(&self, id: Id) -> bool {
        self.slots.contains_key(&id)
    }

    pub fn get(&self, slot: Slot) -> Held<'_> {
        Held {
            entry: &self.entries[slot as usize],
            text: &self.text,
        }
    }

    pub fn by_id(&self, id: Id) -> Option<Held<'_>> {
        self.slot_of(id).map(|s| self.get(s))
    }

    pub fn id(&self, slot: Slot) -> Id {
        self.get(slot).id
    }

    pub fn set_status(&mut self, slot: Slot, status: NodeStatus) {
        self.entries[slot as usize].status = status;
    }

    /// The node of `slot` as the rest of Chimera knows it.
    pub fn node(&self, slot: Slot) -> Node {
        let e = self.get(slot);
        Node {
            id: e.id.as_str().to_owned(),
            node_type: e.node_type,
            name: e.name().to_owned(),
            qualname: e.qualname().to_owned(),
            parent_id: e.parent.map(|p| p.as_str().to_owned()),
            file_path: e.file.to_string(),
            start_line: e.start_line as usize,
            end_line: e.end_line as usize,
            status: e.status,
            source_hash: e.source_hex(),
        }
    }

    pub fn edge(&self, link: Link) -> Edge {
        Edge {
            from: self.id(link.from).as_str().to_owned(),
            to: self.id(link.to).as_str().to_owned(),
            kind: link.kind,
        }
    }

    /// Keeps `node` (of the file `file`, its path shared), in the slot of
    /// its ID if it has one.
    pub fn put(&mut self, node: Fields<'_>, file: &Arc<str>) -> Slot {
        let id = node.id;
        let kept = self.slot_of(id);
        // The same ID nearly always has the same names: they stay put.
        let before = kept.map(|s| {
            let e = self.get(s);
            (
                e.qualname,
                e.qualname() == node.qualname,
                e.name,
                e.name() == node.name,
            )
        });
        let qualname = match before {
            Some((span, true, ..)) => span,
            _ => self.keep_text(node.qualname),
        };
        let name = match (before, node.qualname.len().checked_sub(node.name.len())) {
            (Some((_, _, span, true)), _) => span,
            (_, Some(tail)) if node.qualname.ends_with(node.name) => Span {
                at: qualname.at + tail as u32,
                len: node.name.len() as u32,
            },
            _ => self.keep_text(node.name),
        };
        let source = match blake3_bytes(node.source_hash) {
            Some(bytes) => SourceHash::Blake3(bytes),
            None => SourceHash::Other(self.keep_text(node.source_hash)),
        };
        let entry = Entry {
            id,
            node_type: node.node_type,
            status: node.status,
            start_line: node.start_line as u32,
            end_line: node.end_line as u32,
            parent: node.parent,
            file: Arc::clone(file),
            qualname,
            name,
            source,
        };
        if let Some(slot) = kept {
            self.entries[slot as usize] = entry;
            return slot;
        }
        let slot = self.entries.len() as Slot;
        self.entries.push(entry);
        self.slots.insert(id, slot);
        self.graph.add_node(());
        slot
    }

    fn keep_text(&mut self, s: &str) -> Span {
        let at = self.text.len() as u32;
        self.text.push_str(s);
        Span {
            at,
            len: s.len() as u32,
        }
    }

    pub fn link(&mut self, l: Link) {
        self.graph.add_edge(
            NodeIndex::new(l.from as usize),
            NodeIndex::new(l.to as usize),
            l.kind,
        );
    }

    pub fn unlink(&mut self, l: Link) {
        let (a, b) = (
            NodeIndex::new(l.from as usize),
            NodeIndex::new(l.to as usize),
        );
        let found = self
            .graph
            .edges_connecting(a, b)
            .find(|x| *x.weight() == l.kind)
            .map(|x| x.id());
        if let Some(ix) = found {
            self.graph.remove_edge(ix);
        }
    }

    /// The slots with an edge of `kind` into (`Incoming`) or out of `slot`.
    pub fn neighbours(
        &self,
        slot: Slot,
        kind: EdgeKind,
        dir: Direction,
    ) -> impl Iterator<Item = Slot> + '_ {
        self.graph
            .edges_directed(NodeIndex::new(slot as usize), dir)
            .filter(move |e| *e.weight() == kind)
            .map(move |e| match dir {
                Direction::Incoming => e.source(),
                Direction::Outgoing => e.target(),
            })
            .map(|ix| ix.index() as Slot)
    }

    pub fn has_path(&self, from: Slot, to: Slot) -> bool {
        petgraph::algo::has_path_connecting(
            &self.graph,
            NodeIndex::new(from as usize),
            NodeIndex::new(to as usize),
            None,
        )
    }

    /// Gives back what a bulk load grew and does not use. (The map of
    /// slots never has more room than its next growth gives it; a vector as
    /// large as these grows again by remapping, not by copying.)
    pub fn shrink(&mut self) {
        self.entries.shrink_to_fit();
        self.text.shrink_to_fit();
        self.graph.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, name: &str, qualname: &str, hash: &str) -> Node {
        Node {
            id: id.into(),
            node_type: NodeType::Function,
            name: name.into(),
            qualname: qualname.into(),
            parent_id: Some("rm_parent0".into()),
            file_path: "a.py".into(),
            start_line: 3,
            end_line: 9,
            status: NodeStatus::Active,
            source_hash: hash.into(),
        }
    }

    #[test]
    fn a_node_comes_back_as_it_was_kept() {
        let blake = blake3::hash(b"def f(): pass").to_hex().to_string();
        let mut t = Table::default();
        let file: Arc<str> = Arc::from("a.py");
        for n in [
            node("rm_aaaaaaaa", "add", "Store.add", &blake),
            // A name that is not the end of its qualified name, and
            // hashes that are not blake3's lowercase hex.
            node("rm_bbbbbbbb", "add", "Store.add_all", &blake.to_uppercase()),
            node("rm_cccccccc", "", "x", ""),
            node("rm_dddddddd", "f", "f", &blake[..63]),
        ] {
            let slot = t.put(Fields::of(&n).unwrap(), &file);
            assert_eq!(t.node(slot), n);
            assert!(t.get(slot).source_is(&n.source_hash));
            assert_eq!(t.get(slot).name(), n.name);
        }
        // Kept again under the same ID: the same slot, the new fields, and
        // its names not written again.
        let text = t.text.len();
        let again = node("rm_aaaaaaaa", "add", "Store.add", "");
        assert_eq!(t.put(Fields::of(&again).unwrap(), &file), 0);
        assert_eq!(t.node(0), again);
        assert_eq!(t.text.len(), text);
        let renamed = node("rm_aaaaaaaa", "put", "Store.put", &blake);
        t.put(Fields::of(&renamed).unwrap(), &file);
        assert_eq!(t.node(0), renamed);
        assert_eq!(t.len(), 4);
    }
}
