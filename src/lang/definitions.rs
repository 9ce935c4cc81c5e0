//! The definitions of a file (functions, types, methods) as its language's
//! `definitions.scm` query finds them, with their spans, kinds and parents.

use std::collections::HashMap;

use tree_sitter::{Node, Query, QueryCursor, QueryMatch, StreamingIterator, Tree};

use super::language::Language;

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Function,
    /// Any type-like definition: class, struct, enum, trait, interface,
    /// type alias, Rust `mod`.
    Class,
    /// A function that belongs to a type or table: in a class body, an
    /// `impl`, a Go receiver, Lua's `function M.x`.
    Method,
}

/// One definition in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    pub kind: DefKind,
    /// What it belongs to: the enclosing definition, or the type or table
    /// the language ties it to (a Go receiver, a Rust `impl`).
    pub parent: Option<String>,
    /// Byte span, decorators, attributes and doc comments included, from
    /// the start of its first line.
    pub start: usize,
    pub end: usize,
    /// Start of the line where the definition itself begins, after the
    /// comments and attributes attached above it (`start` when it has none).
    pub own_start: usize,
    /// 0-based first and last line.
    pub start_line: usize,
    pub end_line: usize,
    /// The indentation of its first line.
    pub indent: String,
    /// Byte span of its name.
    pub name_start: usize,
    pub name_end: usize,
}

impl Definition {
    /// `Class.method` for a method, else the name.
    pub fn qualified_name(&self) -> String {
        match (&self.parent, self.kind) {
            (Some(class), DefKind::Method) => format!("{class}.{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// Whether `name`, as a task writes it (`mean`, `Store.add`), is this.
    pub fn is_named(&self, name: &str) -> bool {
        names(&self.name, self.parent.as_deref(), name)
    }
}

/// Whether `asked`, as a task writes it (`mean`, `Store.add`), names the
/// definition called `own` that belongs to `parent`.
pub fn names(own: &str, parent: Option<&str>, asked: &str) -> bool {
    match asked.split_once('.') {
        Some((class, method)) => own == method && parent == Some(class),
        None => own == asked,
    }
}

/// Every definition of `text`, outermost first, in order.
pub fn definitions(lang: &Language, text: &str) -> Vec<Definition> {
    match lang.parse(text) {
        Some(tree) => definitions_in(lang, &tree, text),
        None => vec![],
    }
}

/// The definitions no other one holds (a Go method is one, though its
/// receiver type is its parent). `defs` come outermost first, in order.
pub fn outermost(defs: &[Definition]) -> Vec<&Definition> {
    let mut end = 0;
    defs.iter()
        .filter(|d| {
            let out = d.name_start >= end;
            if out {
                end = d.end;
            }
            out
        })
        .collect()
}

/// A reply that is methods without their class (`total(): number {…}`
/// in TypeScript), read inside the language's method context.
pub struct LoneMethods {
    /// The methods, their spans in the reply, with no parent.
    pub methods: Vec<Definition>,
    /// Whether they parse inside the context.
    pub parse: bool,
}

/// `code` read as methods alone, when the language has a method context
/// and `code` does not parse with definitions by itself.
pub fn lone_methods(lang: &Language, code: &str) -> Option<LoneMethods> {
    let (open, close) = lang.method_context?;
    let alone = lang.parse(code)?;
    if !alone.root_node().has_error() && !definitions_in(lang, &alone, code).is_empty() {
        return None;
    }
    let wrapped = format!("{open}{code}{close}");
    let tree = lang.parse(&wrapped)?;
    let shift = open.len();
    let methods: Vec<Definition> = definitions_in(lang, &tree, &wrapped)
        .into_iter()
        .filter(|d| d.kind == DefKind::Method && d.start >= shift && d.end <= shift + code.len())
        .map(|mut d| {
            d.start -= shift;
            d.end -= shift;
            d.own_start -= shift;
            d.name_start -= shift;
            d.name_end -= shift;
            d.parent = None;
            d
        })
        .collect();
    (!methods.is_empty()).then(|| LoneMethods {
        methods,
        parse: !tree.root_node().has_error(),
    })
}

/// What the patterns that captured one name node say about it: a
/// definition before the file around it is read (its parent by position,
/// its indentation). Positions are the text's own, so a kept `Found` can be
/// moved along when lines above it change (see `remora::by_query`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The first pattern's index: its kind and parent win.
    pub pattern: usize,
    pub kind: DefKind,
    pub name: String,
    pub name_span: (usize, usize),
    /// 0-based row of the name.
    pub name_row: usize,
    /// The parent the pattern captured (a receiver, an `impl`'s type).
    pub parent: Option<String>,
    /// The widest node captured as the definition: bytes and 0-based rows.
    pub node: (usize, usize),
    pub node_rows: (usize, usize),
    /// Where its attached comments and attributes start: byte and row.
    pub first: (usize, usize),
}

/// Every definition whose query match touches `range` (the whole file when
/// `None`), in no particular order. A match is found whole even where it
/// reaches outside the range (an `impl`'s type above its method).
pub fn found_in(
    lang: &Language,
    tree: &Tree,
    text: &str,
    range: Option<std::ops::Range<usize>>,
) -> Vec<Found> {
    let Ok(queries) = lang.queries() else {
        return vec![];
    };
    let query = &queries.definitions;
    let mut found = Founds::new(query, text);
    let mut cursor = QueryCursor::new();
    if let Some(range) = range {
        cursor.set_byte_range(range);
    }
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = matches.next() {
        found.add(m, m.pattern_index);
    }
    found.finish(lang)
}

/// The definitions a definitions query's matches capture, gathered match by
/// match: one `Found` per name node, from the first pattern that names it,
/// with the widest node any pattern captured as the definition. The query
/// may hold other patterns too (Remora's, which also finds calls and
/// imports in the same walk of the tree); only the matches given count.
pub struct Founds<'t> {
    name_ix: Option<u32>,
    parent_ix: Option<u32>,
    kinds: [(Option<u32>, DefKind); 3],
    source: &'t [u8],
    found: HashMap<(usize, usize), (Found, Node<'t>)>,
}

impl<'t> Founds<'t> {
    /// Ready for the matches of `query` in `text`.
    pub fn new(query: &Query, text: &'t str) -> Self {
        let index = |name| query.capture_index_for_name(name);
        Founds {
            name_ix: index("name"),
            parent_ix: index("parent"),
            kinds: [
                (index("definition.function"), DefKind::Function),
                (index("definition.class"), DefKind::Class),
                (index("definition.method"), DefKind::Method),
            ],
            source: text.as_bytes(),
            found: HashMap::new(),
        }
    }

    /// Adds match `m` of a definitions pattern, `pattern` its index among
    /// the definitions query's own patterns.
    pub fn add(&mut self, m: &QueryMatch<'_, 't>, pattern: usize) {
        let source = self.source;
        let node_text = |n: Node<'_>| n.utf8_text(source).ok().map(str::to_owned);
        let (mut name, mut parent, mut def) = (None, None, None);
        for c in m.captures {
            let ix = Some(c.index);
            if ix == self.name_ix {
                name = Some(c.node);
            } else if ix == self.parent_ix {
                parent = node_text(c.node);
            } else if let Some((_, kind)) = self.kinds.iter().find(|(k, _)| *k == ix) {
                def = Some((*kind, c.node));
            }
        }
        let (Some(name), Some((kind, node))) = (name, def) else {
            return;
        };
        let Some(name_text) = node_text(name) else {
            return;
        };
        let (f, widest) = self
            .found
            .entry((name.start_byte(), name.end_byte()))
            .or_insert_with(|| {
                let found = Found {
                    pattern,
                    kind,
                    name: name_text,
                    name_span: (name.start_byte(), name.end_byte()),
                    name_row: name.start_position().row,
                    parent: parent.clone(),
                    node: (0, 0),
                    node_rows: (0, 0),
                    first: (0, 0),
                };
                (found, node)
            });
        if pattern < f.pattern {
            (f.pattern, f.kind, f.parent) = (pattern, kind, parent);
        }
        if node.byte_range().len() > widest.byte_range().len() {
            *widest = node;
        }
    }

    /// The definitions found, each with the comments and attributes
    /// attached above it.
    pub fn finish(self, lang: &Language) -> Vec<Found> {
        // Each definition's siblings, read once per parent: asking a node
        // for its previous sibling walks down from the root every time.
        let mut siblings: HashMap<usize, Vec<Node<'_>>> = HashMap::new();
        let mut cursor = None;
        self.found
            .into_values()
            .map(|(mut f, node)| {
                let first = match node.parent() {
                    Some(parent) => {
                        let cursor = cursor.get_or_insert_with(|| parent.walk());
                        let around = siblings
                            .entry(parent.id())
                            .or_insert_with(|| parent.children(cursor).collect());
                        let at = around.partition_point(|n| n.start_byte() < node.start_byte());
                        let at = (at..around.len())
                            .find(|&i| around[i].id() == node.id())
                            .unwrap_or(0);
                        first_attached(lang, &around[..at], node)
                    }
                    None => node,
                };
                f.node = (node.start_byte(), node.end_byte());
                f.node_rows = (node.start_position().row, node.end_position().row);
                f.first = (first.start_byte(), first.start_position().row);
                f
            })
            .collect()
    }
}

/// Where a definition comes in the order [`assemble`] wants: outermost
/// first, in order.
pub fn found_order(f: &Found) -> (usize, std::cmp::Reverse<usize>, usize) {
    (f.first.0, std::cmp::Reverse(f.node.1), f.name_span.0)
}

/// The start of the line holding byte `at`.
pub fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The definitions `found` (in [`found_order`]) make in `text`, one per
/// `Found`, in the same order: parents by position where the pattern named
/// none.
pub fn assemble<'f>(text: &str, found: impl IntoIterator<Item = &'f Found>) -> Vec<Definition> {
    let mut out: Vec<Definition> = Vec::new();
    // The definitions around the current one, innermost last.
    let mut around: Vec<usize> = Vec::new();
    for f in found {
        let (start_byte, end) = (f.first.0, f.node.1);
        while around.last().is_some_and(|&i| out[i].end < end) {
            around.pop();
        }
        let line_start = line_start(text, start_byte);
        let indent = text[line_start..start_byte]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        let parent = f
            .parent
            .clone()
            .or_else(|| around.last().map(|&i| out[i].name.clone()));
        let own_start = self::line_start(text, f.node.0).max(line_start);
        out.push(Definition {
            name: f.name.clone(),
            kind: f.kind,
            parent,
            start: line_start,
            end,
            own_start,
            start_line: f.first.1,
            end_line: f.node_rows.1,
            indent,
            name_start: f.name_span.0,
            name_end: f.name_span.1,
        });
        around.push(out.len() - 1);
    }
    out
}

/// [`definitions`] of an already parsed `tree` of `text`.
pub fn definitions_in(lang: &Language, tree: &Tree, text: &str) -> Vec<Definition> {
    let mut found = found_in(lang, tree, text, None);
    found.sort_by_key(found_order);
    assemble(text, &found)
}

/// The first of the comments and attributes right above `node` (no blank
/// line between, none trailing code on its line), or `node` itself;
/// `before` are the siblings before it.
fn first_attached<'t>(lang: &Language, before: &[Node<'t>], node: Node<'t>) -> Node<'t> {
    let mut first = node;
    for (i, &prev) in before.iter().enumerate().rev() {
        let touching = last_row(prev) + 1 >= first.start_position().row;
        let own_line = i == 0 || last_row(before[i - 1]) < prev.start_position().row;
        if !lang.attached.contains(&prev.kind()) || !touching || !own_line {
            break;
        }
        first = prev;
    }
    first
}

/// The row of a node's last character: a Rust `///` comment owns its
/// newline, so it ends at column 0 of the next row.
fn last_row(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}
