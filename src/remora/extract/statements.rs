//! Python's extraction kept between edits of one file: what each top-level
//! statement contributed to it, so that after an edit only the statements
//! whose text changed are walked, and the others' nodes are moved into
//! place rather than read or copied again.

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node as TsNode, Tree};

use super::{
    file_header, file_node, newline_of, target_of, top_level, Binding, Expr, Extracted, RawNode,
    RawRef, Target, Walker,
};
use crate::remora::{EdgeKind, NodeType};

/// A file's top-level statements as last extracted, and the extraction
/// they made once it is given back ([`Statements::give_back`]).
#[derive(Debug, Default)]
pub struct Statements {
    list: Vec<Statement>,
    /// The extraction `list` made; without it every statement is walked.
    made: Option<Extracted>,
    /// What `list`'s references were resolved against (see
    /// [`Statement::context`]): the file's top-level definitions by name
    /// and what its imports bind.
    context: Option<blake3::Hash>,
    names: HashMap<String, NodeType>,
    bindings: HashMap<String, Binding>,
    /// Statements walked by the last extraction (the others were moved).
    walked: usize,
}

/// The hash of a statement's text and its column.
type Key = (blake3::Hash, usize);

/// One top-level statement's share of the extraction.
#[derive(Debug)]
struct Statement {
    /// The hash of its text and its column: an unchanged statement has
    /// the same (and, unless it has a syntax error, the same share).
    key: Key,
    /// Where it started when its nodes were placed.
    start_byte: usize,
    start_row: usize,
    /// How many nodes it has: they follow those of the statements before.
    nodes: usize,
    /// Its calls and bases by owner: 0 is the file, `k` its `k`-th node.
    exprs: Vec<(usize, EdgeKind, Expr)>,
    /// What its imports bind, by name, in name order.
    bindings: Vec<(String, Binding)>,
    /// Its imports (all from the file).
    imports: Vec<RawRef>,
    /// `exprs` resolved, each once, owners as in `exprs`.
    refs: Vec<RawRef>,
    /// The hash of what it adds to the names every statement's
    /// references resolve against: its top-level definitions and its
    /// bindings.
    context: blake3::Hash,
    /// How a statement with a syntax error parses depends on its
    /// neighbours, not only on its text: it is always walked again.
    has_error: bool,
}

impl Statements {
    /// Keeps `ex`, which the last [`extract_kept`] made, so that the next
    /// one moves its nodes rather than walking their statements again.
    pub fn give_back(&mut self, ex: Extracted) {
        let nodes: usize = self.list.iter().map(|s| s.nodes).sum();
        if ex.nodes.len() == nodes + 1 {
            self.made = Some(ex);
        }
    }

    /// Statements the last extraction walked (the others were moved).
    pub fn walked(&self) -> usize {
        self.walked
    }
}

/// Extracts `text`, the file at `path` parsed as `tree`, from what `kept`
/// holds of its last extraction: a top-level statement whose text did not
/// change is not walked again, and its nodes (if the last extraction was
/// given back) are moved. `kept` is left holding the statements of `text`.
/// Gives what [`super::extract_tree`] gives.
pub fn extract_kept(path: &str, text: &str, tree: &Tree, kept: &mut Statements) -> Extracted {
    let mut old = Old::new(kept);
    let module = crate::lang::module_key(path);
    let is_package = path.ends_with("__init__.py") || path.ends_with("__init__.pyi");
    let mut nodes = Vec::with_capacity(old.nodes.len().max(1));
    nodes.push(file_node(path, text));
    // Each statement, where its nodes start, and whether it was moved.
    let mut list: Vec<(usize, Statement, bool)> = Vec::new();
    let root = tree.root_node();
    let mut cursor = root.walk();
    for stmt in root.children(&mut cursor) {
        let (start, row) = (stmt.start_byte(), stmt.start_position().row);
        let key = (
            blake3::hash(&text.as_bytes()[start..stmt.end_byte()]),
            stmt.start_position().column,
        );
        let at = nodes.len();
        if !stmt.has_error() {
            if let Some(s) = old.take(&key, start, row, &mut nodes) {
                list.push((at, s, true));
                continue;
            }
        }
        let s = walk(stmt, key, text, (&module, is_package), &mut nodes);
        list.push((at, s, false));
    }
    resolve_where_needed(kept, &nodes, &mut list);
    let refs = assemble(&list);
    let (file_comment, file_comment_at) = file_header(text);
    kept.list = list.into_iter().map(|(_, s, _)| s).collect();
    Extracted {
        nodes,
        refs,
        has_error: root.has_error(),
        file_comment,
        file_comment_at,
        file_comment_gap: false,
        newline: newline_of(text),
        comment: "#",
    }
}

/// Walks `stmt`, whose text has `key`, in the file of `module` (a package's
/// `__init__` or not), adding its nodes to `nodes`.
fn walk(
    stmt: TsNode<'_>,
    key: Key,
    text: &str,
    (module, is_package): (&str, bool),
    nodes: &mut Vec<RawNode>,
) -> Statement {
    let at = nodes.len();
    let mut w = Walker {
        text,
        module: module.to_owned(),
        is_package,
        nodes: vec![nodes[0].clone()],
        exprs: Vec::new(),
        bindings: HashMap::new(),
        refs: Vec::new(),
        comments: Vec::new(),
    };
    w.walk(stmt);
    w.attach_comments();
    let count = w.nodes.len() - 1;
    for mut n in w.nodes.drain(1..) {
        n.parent = n.parent.map(|p| if p == 0 { 0 } else { at + p - 1 });
        nodes.push(n);
    }
    let mut bindings: Vec<(String, Binding)> = w.bindings.into_iter().collect();
    bindings.sort_by(|a, b| a.0.cmp(&b.0));
    Statement {
        key,
        start_byte: stmt.start_byte(),
        start_row: stmt.start_position().row,
        nodes: count,
        context: context_of(&nodes[at..], &bindings),
        exprs: w.exprs,
        bindings,
        imports: w.refs,
        refs: Vec::new(),
        has_error: stmt.has_error(),
    }
}

/// Resolves the references of each statement of `list` (where its nodes
/// start in `nodes`, whether it was moved) that needs it: a moved one's
/// stand while the names they resolve against are the same.
fn resolve_where_needed(
    kept: &mut Statements,
    nodes: &[RawNode],
    list: &mut [(usize, Statement, bool)],
) {
    kept.walked = list.iter().filter(|(_, _, moved)| !moved).count();
    let context = {
        let mut h = blake3::Hasher::new();
        for (_, s, _) in list.iter() {
            h.update(s.context.as_bytes());
        }
        h.finalize()
    };
    let same_context = kept.context == Some(context);
    if !same_context {
        kept.names = top_level(nodes)
            .into_iter()
            .map(|(name, t)| (name.to_owned(), t))
            .collect();
        kept.bindings = list
            .iter()
            .flat_map(|(_, s, _)| s.bindings.iter().cloned())
            .collect();
        kept.context = Some(context);
    }
    for (_, s, moved) in list.iter_mut() {
        if !(*moved && same_context) {
            s.refs = resolve(&s.exprs, &kept.names, &kept.bindings);
        }
    }
}

/// The statements of the last extraction that can be moved, by key.
struct Old {
    /// Each statement not taken yet and where its nodes were.
    list: Vec<Option<(usize, Statement)>>,
    /// The first statement of each key not taken yet …
    first: HashMap<Key, usize>,
    /// … and the next of the same key after each.
    next: Vec<Option<usize>>,
    /// The last extraction's nodes, each taken as it is moved.
    nodes: Vec<Option<RawNode>>,
}

impl Old {
    fn new(kept: &mut Statements) -> Self {
        let nodes: Vec<Option<RawNode>> = match kept.made.take() {
            Some(made) => made.nodes.into_iter().map(Some).collect(),
            None => Vec::new(),
        };
        let old = std::mem::take(&mut kept.list);
        let mut list = Vec::with_capacity(old.len());
        let mut at = 1;
        for s in old {
            let end = at + s.nodes;
            list.push((!s.has_error && end <= nodes.len()).then_some((at, s)));
            at = end;
        }
        let mut first = HashMap::with_capacity(list.len());
        let mut next = vec![None; list.len()];
        for (i, s) in list.iter().enumerate().rev() {
            if let Some((_, s)) = s {
                next[i] = first.insert(s.key, i);
            }
        }
        Self {
            list,
            first,
            next,
            nodes,
        }
    }

    /// The statement of `key`, its nodes moved onto the end of `nodes` as
    /// the statement's now starting at `start_byte` and `start_row`.
    fn take(
        &mut self,
        key: &Key,
        start_byte: usize,
        start_row: usize,
        nodes: &mut Vec<RawNode>,
    ) -> Option<Statement> {
        let i = *self.first.get(key)?;
        match self.next[i] {
            Some(j) => self.first.insert(*key, j),
            None => self.first.remove(key),
        };
        let (old_at, mut s) = self.list[i].take()?;
        let at = nodes.len();
        let by = Shift {
            bytes: start_byte as isize - s.start_byte as isize,
            rows: start_row as isize - s.start_row as isize,
        };
        for slot in &mut self.nodes[old_at..old_at + s.nodes] {
            if let Some(mut n) = slot.take() {
                by.place(&mut n);
                n.parent = n.parent.map(|p| if p == 0 { 0 } else { p - old_at + at });
                nodes.push(n);
            }
        }
        (s.start_byte, s.start_row) = (start_byte, start_row);
        Some(s)
    }
}

/// How far a statement moved.
struct Shift {
    bytes: isize,
    rows: isize,
}

impl Shift {
    fn place(&self, n: &mut RawNode) {
        let b = |x: usize| x.saturating_add_signed(self.bytes);
        let r = |x: usize| x.saturating_add_signed(self.rows);
        (n.start_byte, n.end_byte, n.colon_end) = (b(n.start_byte), b(n.end_byte), b(n.colon_end));
        (n.start_line, n.end_line, n.header_row) =
            (r(n.start_line), r(n.end_line), r(n.header_row));
        n.id_insert_at = n.id_insert_at.map(b);
        if let Some(c) = &mut n.id_comment {
            (c.start, c.end) = (b(c.start), b(c.end));
        }
    }
}

/// What a statement adds to the names references resolve against.
fn context_of(nodes: &[RawNode], bindings: &[(String, Binding)]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    for n in nodes.iter().filter(|n| n.parent == Some(0)) {
        h.update(n.node_type.as_str().as_bytes());
        h.update(&[0]);
        h.update(n.name.as_bytes());
        h.update(&[0]);
    }
    for (name, b) in bindings {
        h.update(name.as_bytes());
        match b {
            Binding::Module(m) => {
                h.update(b"\0m\0");
                h.update(m.as_bytes());
            }
            Binding::From { module, name } => {
                h.update(b"\0f\0");
                h.update(module.as_bytes());
                h.update(&[0]);
                h.update(name.as_bytes());
            }
        }
        h.update(&[0]);
    }
    h.finalize()
}

/// A statement's calls and bases resolved, each once.
fn resolve(
    exprs: &[(usize, EdgeKind, Expr)],
    names: &HashMap<String, NodeType>,
    bindings: &HashMap<String, Binding>,
) -> Vec<RawRef> {
    let mut out: Vec<RawRef> = Vec::new();
    let mut seen = HashSet::new();
    for (from, kind, expr) in exprs {
        if let Some(target) = target_of(expr, |n| names.get(n).copied(), |n| bindings.get(n)) {
            let r = RawRef {
                from: *from,
                kind: *kind,
                target: target.into(),
            };
            if seen.insert(r.clone()) {
                out.push(r);
            }
        }
    }
    out
}

/// The file's references in the order one walk of the whole file gives
/// them: every import, then every call and base, each once. Those from
/// the file itself can repeat across statements; the others cannot (each
/// node is one statement's).
fn assemble(list: &[(usize, Statement, bool)]) -> Vec<RawRef> {
    let mut out = Vec::new();
    let mut from_file: HashSet<(EdgeKind, &Target)> = HashSet::new();
    for (_, s, _) in list {
        for r in &s.imports {
            if from_file.insert((r.kind, &r.target)) {
                out.push(r.clone());
            }
        }
    }
    for (at, s, _) in list {
        for r in &s.refs {
            if r.from == 0 {
                if from_file.insert((r.kind, &r.target)) {
                    out.push(r.clone());
                }
            } else {
                out.push(RawRef {
                    from: at + r.from - 1,
                    kind: r.kind,
                    target: r.target.clone(),
                });
            }
        }
    }
    out
}
