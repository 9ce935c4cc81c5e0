//! The definitions of a file (functions, types, methods) as its language's
//! `definitions.scm` query finds them, with their spans, kinds and parents.

use std::collections::HashMap;

use tree_sitter::{Node, QueryCursor, StreamingIterator, Tree};

use super::Language;

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
        match name.split_once('.') {
            Some((class, own)) => self.name == own && self.parent.as_deref() == Some(class),
            None => self.name == name,
        }
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

/// What the patterns that captured one name node say about it.
struct Found<'t> {
    /// The first pattern's index: its kind and parent win.
    pattern: usize,
    kind: DefKind,
    name: String,
    name_span: (usize, usize),
    parent: Option<String>,
    /// The widest node captured as the definition.
    node: Node<'t>,
}

/// [`definitions`] of an already parsed `tree` of `text`.
pub fn definitions_in(lang: &Language, tree: &Tree, text: &str) -> Vec<Definition> {
    let Ok(queries) = lang.queries() else {
        return vec![];
    };
    let query = &queries.definitions;
    let index = |name| query.capture_index_for_name(name);
    let (name_ix, parent_ix) = (index("name"), index("parent"));
    let kinds = [
        (index("definition.function"), DefKind::Function),
        (index("definition.class"), DefKind::Class),
        (index("definition.method"), DefKind::Method),
    ];
    let source = text.as_bytes();
    let node_text = |n: Node<'_>| n.utf8_text(source).ok().map(str::to_owned);

    let mut found: HashMap<(usize, usize), Found<'_>> = HashMap::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source);
    while let Some(m) = matches.next() {
        let (mut name, mut parent, mut def) = (None, None, None);
        for c in m.captures {
            let ix = Some(c.index);
            if ix == name_ix {
                name = Some(c.node);
            } else if ix == parent_ix {
                parent = node_text(c.node);
            } else if let Some((_, kind)) = kinds.iter().find(|(k, _)| *k == ix) {
                def = Some((*kind, c.node));
            }
        }
        let (Some(name), Some((kind, node))) = (name, def) else {
            continue;
        };
        let Some(name_text) = node_text(name) else {
            continue;
        };
        let f = found
            .entry((name.start_byte(), name.end_byte()))
            .or_insert(Found {
                pattern: m.pattern_index,
                kind,
                name: name_text,
                name_span: (name.start_byte(), name.end_byte()),
                parent: parent.clone(),
                node,
            });
        if m.pattern_index < f.pattern {
            (f.pattern, f.kind, f.parent) = (m.pattern_index, kind, parent);
        }
        if node.byte_range().len() > f.node.byte_range().len() {
            f.node = node;
        }
    }

    let mut spans: Vec<(Found<'_>, Node<'_>)> = found
        .into_values()
        .map(|f| {
            let first = first_attached(lang, f.node);
            (f, first)
        })
        .collect();
    spans.sort_by_key(|(f, first)| (first.start_byte(), std::cmp::Reverse(f.node.end_byte())));

    let mut out: Vec<Definition> = Vec::with_capacity(spans.len());
    // The definitions around the current one, innermost last.
    let mut around: Vec<usize> = Vec::new();
    for (f, first) in spans {
        let start_byte = first.start_byte();
        let end = f.node.end_byte();
        while around.last().is_some_and(|&i| out[i].end < end) {
            around.pop();
        }
        let line_start = text[..start_byte].rfind('\n').map_or(0, |i| i + 1);
        let indent = text[line_start..start_byte]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        let parent = f
            .parent
            .or_else(|| around.last().map(|&i| out[i].name.clone()));
        let own = f.node.start_byte();
        let own_start = text[..own].rfind('\n').map_or(0, |i| i + 1).max(line_start);
        out.push(Definition {
            name: f.name,
            kind: f.kind,
            parent,
            start: line_start,
            end,
            own_start,
            start_line: first.start_position().row,
            end_line: f.node.end_position().row,
            indent,
            name_start: f.name_span.0,
            name_end: f.name_span.1,
        });
        around.push(out.len() - 1);
    }
    out
}

/// The first of the comments and attributes right above `node` (no blank
/// line between, none trailing code on its line), or `node` itself.
fn first_attached<'t>(lang: &Language, node: Node<'t>) -> Node<'t> {
    let mut first = node;
    while let Some(prev) = first.prev_sibling() {
        let touching = last_row(prev) + 1 >= first.start_position().row;
        let own_line = prev
            .prev_sibling()
            .is_none_or(|p| last_row(p) < prev.start_position().row);
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
