//! One tree-sitter pass over a Python file: its nodes (the file, classes,
//! functions and methods, decorated, async and nested ones included), the
//! names each node references (calls, bases, imports) resolved as far as the
//! file alone allows, and the ID comments already in the text.
//!
//! The walk uses an explicit stack, so deeply nested expressions cannot
//! overflow a worker thread's stack.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node as TsNode;

use super::extracted::{file_node, newline_of, top_level};
pub use super::extracted::{Extracted, IdSpan, RawNode, RawRef, Target};
use super::ids;
use super::{EdgeKind, NodeType};

mod statements;
pub use statements::{extract_kept, Statements};

#[derive(Debug, Clone)]
enum Binding {
    Module(String),
    From { module: String, name: String },
}

#[derive(Debug, Clone)]
enum Expr {
    Name(String),
    SelfAttr { class: String, name: String },
    Dotted { base: String, attr: String },
}

/// Node kinds and fields the walk looks at, as tree-sitter's numeric IDs
/// (comparing numbers, not strings, keeps the walk cheap beside the parse).
struct Kinds {
    comment: u16,
    function_definition: u16,
    class_definition: u16,
    decorated_definition: u16,
    call: u16,
    import_statement: u16,
    import_from_statement: u16,
    identifier: u16,
    attribute: u16,
    string: u16,
    function_field: u16,
    superclasses_field: std::num::NonZeroU16,
    name_field: u16,
    body_field: u16,
    object_field: u16,
    attribute_field: u16,
}

fn kinds() -> &'static Kinds {
    static KINDS: once_cell::sync::Lazy<Kinds> = once_cell::sync::Lazy::new(|| {
        let lang: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        let kind = |name: &str| lang.id_for_node_kind(name, true);
        let field = |name: &str| {
            lang.field_id_for_name(name)
                .unwrap_or(std::num::NonZeroU16::MAX)
        };
        Kinds {
            comment: kind("comment"),
            function_definition: kind("function_definition"),
            class_definition: kind("class_definition"),
            decorated_definition: kind("decorated_definition"),
            call: kind("call"),
            import_statement: kind("import_statement"),
            import_from_statement: kind("import_from_statement"),
            identifier: kind("identifier"),
            string: kind("string"),
            attribute: kind("attribute"),
            function_field: field("function").get(),
            superclasses_field: field("superclasses"),
            name_field: field("name").get(),
            body_field: field("body").get(),
            object_field: field("object").get(),
            attribute_field: field("attribute").get(),
        }
    });
    &KINDS
}

/// Extracts the nodes and references of the file at project path `path`.
pub fn extract(path: &str, text: &str) -> Extracted {
    if let Some(lang) = crate::lang::for_path(path).filter(|l| l.id != "python") {
        return super::by_query::extract(lang, path, text);
    }
    match crate::python::parse(text) {
        Some(tree) => extract_tree(path, text, &tree),
        None => extract_parts(path, text, None),
    }
}

/// [`extract`] from a tree already parsed (perhaps incrementally) from `text`.
pub fn extract_tree(path: &str, text: &str, tree: &tree_sitter::Tree) -> Extracted {
    extract_parts(path, text, Some(tree))
}

fn extract_parts(path: &str, text: &str, tree: Option<&tree_sitter::Tree>) -> Extracted {
    let newline = newline_of(text);
    let file = file_node(path, text);
    let (file_comment, file_comment_at) = file_header(text);
    let mut walker = Walker {
        text,
        module: crate::lang::module_key(path),
        is_package: path.ends_with("__init__.py") || path.ends_with("__init__.pyi"),
        nodes: vec![file],
        exprs: Vec::new(),
        bindings: HashMap::new(),
        refs: Vec::new(),
        comments: Vec::new(),
    };
    let has_error = match tree {
        Some(tree) => {
            walker.walk(tree.root_node());
            walker.attach_comments();
            tree.root_node().has_error()
        }
        None => true,
    };
    let refs = walker.resolve_refs();
    let nodes = walker.nodes;
    Extracted {
        nodes,
        refs,
        has_error,
        file_comment,
        file_comment_at,
        file_comment_gap: false,
        newline,
        comment: "#",
    }
}

/// The file comment among the first lines, and where one would be inserted.
fn file_header(text: &str) -> (Option<IdSpan>, usize) {
    let mut found = None;
    let mut insert_at = 0;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').take(3).enumerate() {
        if found.is_none() {
            if let Some((s, e)) = ids::file_comment_id(line, "#") {
                found = Some(IdSpan {
                    id: line[s..e].to_owned(),
                    start: offset + s,
                    end: offset + e,
                });
            }
        }
        let is_shebang = i == 0 && line.starts_with("#!");
        let is_encoding = i < 2 && insert_at == offset && is_encoding_line(line);
        if (is_shebang || is_encoding) && insert_at == offset {
            insert_at = offset + line.len();
        }
        offset += line.len();
    }
    (found, insert_at)
}

/// PEP 263: `# -*- coding: utf-8 -*-`, `# vim: set fileencoding=utf-8 :`.
fn is_encoding_line(line: &str) -> bool {
    let t = line.trim_start_matches([' ', '\t', '\x0c']);
    t.starts_with('#') && (t.contains("coding:") || t.contains("coding="))
}

struct Walker<'a> {
    text: &'a str,
    module: String,
    is_package: bool,
    nodes: Vec<RawNode>,
    /// Calls and bases, by owner node, before names are resolved.
    exprs: Vec<(usize, EdgeKind, Expr)>,
    bindings: HashMap<String, Binding>,
    refs: Vec<RawRef>,
    /// `(row, start byte, end byte)` of every comment, in order.
    comments: Vec<(usize, usize, usize)>,
}

impl<'a> Walker<'a> {
    fn src(&self, n: TsNode<'_>) -> &'a str {
        self.text.get(n.start_byte()..n.end_byte()).unwrap_or("")
    }

    fn walk(&mut self, root: TsNode<'_>) {
        let k = kinds();
        let mut cursor = root.walk();
        let mut depth = 0usize;
        // The innermost definition around the cursor: (its depth, index).
        let mut scopes: Vec<(usize, usize)> = Vec::new();
        // The decorated definition whose `definition` child comes next.
        let mut decorated: Option<(usize, TsNode<'_>)> = None;
        'visit: loop {
            while scopes.last().is_some_and(|s| s.0 >= depth) {
                scopes.pop();
            }
            let owner = scopes.last().map_or(0, |s| s.1);
            let n = cursor.node();
            let kind = n.kind_id();
            // A string holds calls only in f-string interpolations, which
            // add children beyond its start, content and end.
            let mut descend = match n.child_count() {
                0 => false,
                c => kind != k.string || c > 3,
            };
            if kind == k.comment {
                self.comments
                    .push((n.start_position().row, n.start_byte(), n.end_byte()));
            } else if kind == k.function_definition || kind == k.class_definition {
                let outer = decorated
                    .take()
                    .filter(|(d, _)| *d + 1 == depth)
                    .map(|(_, node)| node);
                let class_scope = self.nodes[owner].node_type == NodeType::Class;
                match self.add_definition(n, owner, class_scope, outer) {
                    Some(idx) => {
                        if kind == k.class_definition {
                            self.add_bases(n, idx);
                        }
                        scopes.push((depth, idx));
                    }
                    None => descend = false,
                }
            } else if kind == k.decorated_definition {
                decorated = Some((depth, n));
            } else if kind == k.call {
                if let Some(f) = n.child_by_field_id(k.function_field) {
                    if let Some(e) = self.expr(f, owner) {
                        self.exprs.push((owner, EdgeKind::Calls, e));
                    }
                }
            } else if kind == k.import_statement {
                self.add_import(n);
                descend = false;
            } else if kind == k.import_from_statement {
                self.add_import_from(n);
                descend = false;
            } else if scopes
                .last()
                .is_some_and(|s| s.0 + 1 == depth && self.nodes[s.1].node_type == NodeType::Class)
                && cursor.field_id() == Some(k.superclasses_field)
            {
                // Bases were taken by `add_bases`.
                descend = false;
            }
            if descend && cursor.goto_first_child() {
                depth += 1;
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    continue 'visit;
                }
                if !cursor.goto_parent() {
                    break 'visit;
                }
                depth -= 1;
            }
        }
    }

    fn add_definition(
        &mut self,
        n: TsNode<'_>,
        owner: usize,
        class_scope: bool,
        decorated: Option<TsNode<'_>>,
    ) -> Option<usize> {
        let k = kinds();
        let name = self.src(n.child_by_field_id(k.name_field)?).to_owned();
        let node_type = match (n.kind_id() == k.class_definition, class_scope) {
            (true, _) => NodeType::Class,
            (_, true) => NodeType::Method,
            _ => NodeType::Function,
        };
        let outer = decorated.unwrap_or(n);
        let qualname = if owner == 0 {
            name.clone()
        } else {
            format!("{}.{}", self.nodes[owner].qualname, name)
        };
        let mut cursor = n.walk();
        let colon = n.children(&mut cursor).find(|c| c.kind() == ":")?;
        let header_row = colon.end_position().row;
        let colon_end = colon.end_byte();
        let eol = self.text[colon_end..]
            .find('\n')
            .map_or(self.text.len(), |i| colon_end + i);
        let eol = if eol > colon_end && self.text.as_bytes()[eol - 1] == b'\r' {
            eol - 1
        } else {
            eol
        };
        let body_runs_on = n.child_by_field_id(k.body_field).is_some_and(|b| {
            b.start_position().row == header_row && b.end_position().row > header_row
        });
        let continued = self.text[colon_end..eol].trim_end().ends_with('\\');
        let id_insert_at = (!body_runs_on && !continued).then_some(eol);
        self.nodes.push(RawNode {
            node_type,
            name,
            qualname,
            parent: Some(owner),
            start_line: outer.start_position().row + 1,
            end_line: outer.end_position().row + 1,
            start_byte: outer.start_byte(),
            end_byte: outer.end_byte(),
            id_comment: None,
            id_insert_at,
            source_hash: String::new(),
            header_row,
            colon_end,
        });
        Some(self.nodes.len() - 1)
    }

    fn add_bases(&mut self, class: TsNode<'_>, idx: usize) {
        let Some(args) = class.child_by_field_name("superclasses") else {
            return;
        };
        let mut cursor = args.walk();
        let bases: Vec<_> = args.named_children(&mut cursor).collect();
        for base in bases {
            if let Some(e) = self.expr(base, idx) {
                self.exprs.push((idx, EdgeKind::Inherits, e));
            }
        }
    }

    /// A callee or base expression we can follow: `f`, `self.f`, `mod.sub.f`.
    fn expr(&self, n: TsNode<'_>, owner: usize) -> Option<Expr> {
        let k = kinds();
        match n.kind_id() {
            id if id == k.identifier => Some(Expr::Name(self.src(n).to_owned())),
            id if id == k.attribute => {
                let object = n.child_by_field_id(k.object_field)?;
                let attr = self.src(n.child_by_field_id(k.attribute_field)?).to_owned();
                let base = self.dotted(object)?;
                if base == "self" || base == "cls" {
                    let class = self.enclosing_class(owner)?;
                    return Some(Expr::SelfAttr {
                        class: self.nodes[class].qualname.clone(),
                        name: attr,
                    });
                }
                Some(Expr::Dotted { base, attr })
            }
            _ => None,
        }
    }

    fn dotted(&self, n: TsNode<'_>) -> Option<String> {
        let k = kinds();
        match n.kind_id() {
            id if id == k.identifier => Some(self.src(n).to_owned()),
            id if id == k.attribute => {
                let object = self.dotted(n.child_by_field_id(k.object_field)?)?;
                let attr = self.src(n.child_by_field_id(k.attribute_field)?);
                Some(format!("{object}.{attr}"))
            }
            _ => None,
        }
    }

    /// The class `self` refers to inside node `idx`: the class of the
    /// nearest enclosing method.
    fn enclosing_class(&self, mut idx: usize) -> Option<usize> {
        loop {
            let node = &self.nodes[idx];
            if node.node_type == NodeType::Method {
                return node.parent;
            }
            idx = node.parent?;
        }
    }

    fn add_import(&mut self, n: TsNode<'_>) {
        let mut cursor = n.walk();
        let names: Vec<_> = n.children_by_field_name("name", &mut cursor).collect();
        for name in names {
            let (module, local) = match name.kind() {
                "aliased_import" => {
                    let Some(m) = name.child_by_field_name("name") else {
                        continue;
                    };
                    let module = self.src(m).to_owned();
                    let alias = name
                        .child_by_field_name("alias")
                        .map(|a| self.src(a).to_owned());
                    let local = alias.unwrap_or_else(|| module.clone());
                    (module.clone(), (local, module))
                }
                _ => {
                    let module = self.src(name).to_owned();
                    let first = module.split('.').next().unwrap_or("").to_owned();
                    (module, (first.clone(), first))
                }
            };
            self.bindings.insert(local.0, Binding::Module(local.1));
            self.refs.push(RawRef {
                from: 0,
                kind: EdgeKind::Imports,
                target: Target::Module { module }.into(),
            });
        }
    }

    fn add_import_from(&mut self, n: TsNode<'_>) {
        let Some(m) = n.child_by_field_name("module_name") else {
            return;
        };
        let Some(module) = self.absolute_module(self.src(m)) else {
            return;
        };
        let mut cursor = n.walk();
        let names: Vec<_> = n.children_by_field_name("name", &mut cursor).collect();
        if names.is_empty() {
            // `from m import *`
            self.refs.push(RawRef {
                from: 0,
                kind: EdgeKind::Imports,
                target: Target::Module {
                    module: module.clone(),
                }
                .into(),
            });
        }
        for name in names {
            let (imported, local) = match name.kind() {
                "aliased_import" => {
                    let Some(i) = name.child_by_field_name("name") else {
                        continue;
                    };
                    let imported = self.src(i).to_owned();
                    let local = name
                        .child_by_field_name("alias")
                        .map_or_else(|| imported.clone(), |a| self.src(a).to_owned());
                    (imported, local)
                }
                _ => {
                    let imported = self.src(name).to_owned();
                    (imported.clone(), imported)
                }
            };
            self.bindings.insert(
                local,
                Binding::From {
                    module: module.clone(),
                    name: imported.clone(),
                },
            );
            self.refs.push(RawRef {
                from: 0,
                kind: EdgeKind::Imports,
                target: Target::InModule {
                    module: module.clone(),
                    name: imported,
                }
                .into(),
            });
        }
    }

    /// `..pkg.mod` seen from this file, as an absolute module name.
    fn absolute_module(&self, spec: &str) -> Option<String> {
        let dots = spec.chars().take_while(|c| *c == '.').count();
        let rest = spec[dots..].trim();
        if dots == 0 {
            return Some(rest.to_owned());
        }
        let mut package: Vec<&str> = self.module.split('.').collect();
        if !self.is_package {
            package.pop();
        }
        for _ in 1..dots {
            package.pop()?;
        }
        if !rest.is_empty() {
            package.push(rest);
        }
        let joined = package.join(".");
        (!joined.is_empty()).then_some(joined)
    }

    /// Finds each definition's ID comment and hashes its source.
    fn attach_comments(&mut self) {
        for i in 1..self.nodes.len() {
            let (row, colon_end) = (self.nodes[i].header_row, self.nodes[i].colon_end);
            let at = self.comments.partition_point(|c| c.1 < colon_end);
            let comment = self
                .comments
                .get(at)
                .filter(|c| c.0 == row)
                .and_then(|&(_, s, e)| {
                    let (is, ie) = ids::trailing_id(&self.text[s..e], "#")?;
                    Some(IdSpan {
                        id: self.text[s + is..s + ie].to_owned(),
                        start: s + is,
                        end: s + ie,
                    })
                });
            let node = &mut self.nodes[i];
            let mut hasher = blake3::Hasher::new();
            match &comment {
                Some(c) if c.start >= node.start_byte && c.end <= node.end_byte => {
                    hasher.update(&self.text.as_bytes()[node.start_byte..c.start]);
                    hasher.update(&self.text.as_bytes()[c.end..node.end_byte]);
                }
                _ => {
                    hasher.update(&self.text.as_bytes()[node.start_byte..node.end_byte]);
                }
            }
            node.source_hash = hasher.finalize().to_hex().to_string();
            node.id_comment = comment;
        }
    }

    /// Turns call and base expressions into targets, using the file's own
    /// definitions and imports; names from elsewhere (builtins) are dropped.
    fn resolve_refs(&mut self) -> Vec<RawRef> {
        let top = top_level(&self.nodes);
        let mut out = std::mem::take(&mut self.refs);
        for (from, kind, expr) in &self.exprs {
            let target = target_of(expr, |n| top.get(n).copied(), |n| self.bindings.get(n));
            if let Some(target) = target {
                out.push(RawRef {
                    from: *from,
                    kind: *kind,
                    target: target.into(),
                });
            }
        }
        let mut seen = HashSet::new();
        out.retain(|r| seen.insert(r.clone()));
        out
    }
}

/// What call or base `expr` refers to, given the file's top-level
/// definitions and what its imports bind; `None` for a name from elsewhere
/// (a builtin).
fn target_of<'b>(
    expr: &Expr,
    top: impl Fn(&str) -> Option<NodeType>,
    binding: impl Fn(&str) -> Option<&'b Binding>,
) -> Option<Target> {
    Some(match expr {
        Expr::Name(name) => {
            if top(name).is_some() {
                Target::Local { name: name.clone() }
            } else if let Some(Binding::From { module, name }) = binding(name) {
                Target::InModule {
                    module: module.clone(),
                    name: name.clone(),
                }
            } else {
                return None;
            }
        }
        Expr::SelfAttr { class, name } => Target::Method {
            class: class.clone(),
            name: name.clone(),
        },
        Expr::Dotted { base, attr } => {
            let (first, rest) = match base.split_once('.') {
                Some((f, r)) => (f, Some(r)),
                None => (base.as_str(), None),
            };
            if rest.is_none() && top(first) == Some(NodeType::Class) {
                Target::Method {
                    class: first.to_owned(),
                    name: attr.clone(),
                }
            } else {
                let module = match binding(first)? {
                    Binding::Module(m) => m.clone(),
                    Binding::From { module, name } => format!("{module}.{name}"),
                };
                let module = match rest {
                    Some(r) => format!("{module}.{r}"),
                    None => module,
                };
                Target::InModule {
                    module,
                    name: attr.clone(),
                }
            }
        }
    })
}
