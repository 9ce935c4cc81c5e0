//! Remora's extraction for every language but Python, driven by the
//! language's queries (`queries/<language>/*.scm`): the file's nodes with
//! their ID comments, and the calls and imports of each node, resolved as
//! far as the file alone allows. Python keeps its own walker
//! ([`super::extract`]), tuned for re-indexing while the human types.

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node as TsNode, QueryCursor, QueryMatch, StreamingIterator, Tree};

use super::extract::{file_node, newline_of, Extracted, IdSpan, RawNode, RawRef, Target};
use super::{ids, EdgeKind, NodeType};
use crate::lang::{self, DefKind, Definition, Language};

/// Extracts the nodes and references of `text`, the file at project path
/// `path`, written in `lang`.
pub fn extract(lang: &'static Language, path: &str, text: &str) -> Extracted {
    let newline = newline_of(text);
    let (file_comment, file_comment_at, file_comment_gap) = file_header(lang, text);
    let mut ex = Extracted {
        nodes: vec![file_node(path, text)],
        refs: Vec::new(),
        has_error: true,
        file_comment,
        file_comment_at,
        file_comment_gap,
        newline,
        comment: lang.line_comment,
    };
    let Some(tree) = lang.parse(text) else {
        return ex;
    };
    ex.has_error = tree.root_node().has_error();
    let defs = lang::definitions_in(lang, &tree, text);
    ex.nodes.extend(nodes(lang, text, &tree, &defs));
    let bindings = imports(lang, path, text, &tree, &mut ex.refs);
    calls(lang, text, &tree, &ex.nodes, &bindings, &mut ex.refs);
    let mut seen = HashSet::new();
    ex.refs.retain(|r| seen.insert(r.clone()));
    ex
}

/// For each definition, its parent: the innermost definition whose span
/// holds it, or the type it names (a Go receiver, a Rust `impl`'s type)
/// when that type is in this file.
fn parents(defs: &[Definition]) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(defs.len());
    let mut around: Vec<usize> = Vec::new();
    for d in defs {
        while around
            .last()
            .is_some_and(|&j| !(defs[j].start <= d.start && d.end <= defs[j].end))
        {
            around.pop();
        }
        let enclosing = around.last().copied();
        let named = d.parent.as_deref().and_then(|p| match enclosing {
            Some(j) if defs[j].name == p => Some(j),
            _ => defs
                .iter()
                .position(|o| o.name == p && o.kind == DefKind::Class),
        });
        out.push(named.or(enclosing));
        around.push(out.len() - 1);
    }
    out
}

/// `Parent.name` down from the file; a method of a type of another file
/// is named by that type all the same (`Store.Len`).
fn qualname(defs: &[Definition], parents: &[Option<usize>], i: usize) -> String {
    let mut names = vec![defs[i].name.as_str()];
    let mut at = i;
    // A type found by name may itself be found by name: at most one step
    // a definition, so no cycle can loop.
    for _ in 0..defs.len() {
        match (parents[at], &defs[at].parent) {
            (Some(j), _) => {
                names.push(&defs[j].name);
                at = j;
            }
            (None, Some(p)) => {
                names.push(p);
                break;
            }
            (None, None) => break,
        }
    }
    names.reverse();
    names.join(".")
}

/// The definition nodes, after the file's (node `k` is `defs[k - 1]`).
fn nodes(lang: &Language, text: &str, tree: &Tree, defs: &[Definition]) -> Vec<RawNode> {
    let root = tree.root_node();
    let parents = parents(defs);
    let mut out: Vec<RawNode> = Vec::with_capacity(defs.len());
    let mut rows_with_id: HashSet<usize> = HashSet::new();
    for (i, d) in defs.iter().enumerate() {
        let node_type = match d.kind {
            DefKind::Function => NodeType::Function,
            DefKind::Class => NodeType::Class,
            DefKind::Method => NodeType::Method,
        };
        let header_row = text[..d.name_start].matches('\n').count();
        let eol = line_end(text, d.name_end);
        let id_comment = id_comment(lang, text, root, d.name_end, eol);
        let first_on_row = rows_with_id.insert(header_row);
        let id_insert_at = (first_on_row && !runs_past(root, text, d.name_end, eol)).then_some(eol);
        // From its first token, as Python's nodes (the indentation is not
        // part of it).
        let start = d.start + d.indent.len();
        let mut hasher = blake3::Hasher::new();
        match &id_comment {
            Some(c) if c.start >= start && c.end <= d.end => {
                hasher.update(&text.as_bytes()[start..c.start]);
                hasher.update(&text.as_bytes()[c.end..d.end]);
            }
            _ => {
                hasher.update(&text.as_bytes()[start..d.end]);
            }
        }
        out.push(RawNode {
            node_type,
            name: d.name.clone(),
            qualname: qualname(defs, &parents, i),
            parent: Some(parents[i].map_or(0, |j| j + 1)),
            start_line: d.start_line + 1,
            end_line: d.end_line + 1,
            start_byte: start,
            end_byte: d.end,
            id_comment: id_comment.filter(|_| first_on_row),
            id_insert_at,
            source_hash: hasher.finalize().to_hex().to_string(),
            header_row,
            colon_end: d.name_end,
        });
    }
    out
}

/// The end of the line holding byte `at`, before its `\r\n` or `\n`.
fn line_end(text: &str, at: usize) -> usize {
    let eol = text[at..].find('\n').map_or(text.len(), |i| at + i);
    if eol > at && text.as_bytes()[eol - 1] == b'\r' {
        eol - 1
    } else {
        eol
    }
}

/// The ID comment ending the header line after the name, if any.
fn id_comment(
    lang: &Language,
    text: &str,
    root: TsNode<'_>,
    from: usize,
    eol: usize,
) -> Option<IdSpan> {
    let (s, e) = ids::trailing_id(&text[from..eol], lang.line_comment)?;
    let (start, end) = (from + s, from + e);
    // `"// rm_…"` in a string is not a comment.
    let at = root.descendant_for_byte_range(start, end)?;
    at.kind().contains("comment").then(|| IdSpan {
        id: text[start..end].to_owned(),
        start,
        end,
    })
}

/// Whether the end of the line (`eol`) is inside something that runs on to
/// the next line, where a comment would change the code: a string, a block
/// comment, JSX text.
fn runs_past(root: TsNode<'_>, text: &str, from: usize, eol: usize) -> bool {
    // The line's last character that is not blank.
    let last = (from + text[from..eol].trim_end().len())
        .saturating_sub(1)
        .max(from);
    let Some(mut node) = root.descendant_for_byte_range(last, last + 1) else {
        return true;
    };
    loop {
        let kind = node.kind();
        let fragile = kind.contains("string")
            || kind.contains("comment")
            || kind.contains("template")
            || kind.starts_with("jsx");
        if fragile && node.end_byte() > eol {
            return true;
        }
        match node.parent() {
            Some(p) => node = p,
            None => return false,
        }
    }
}

/// The file comment in the first lines, where one would go (after a
/// shebang), and whether a blank line must follow it there so it does not
/// join the comment or code below (a Go package's doc comment).
fn file_header(lang: &Language, text: &str) -> (Option<IdSpan>, usize, bool) {
    let mut found = None;
    let mut offset = 0;
    let mut insert_at = 0;
    for (i, line) in text.split_inclusive('\n').take(3).enumerate() {
        if found.is_none() {
            if let Some((s, e)) = ids::file_comment_id(line, lang.line_comment) {
                found = Some(IdSpan {
                    id: line[s..e].to_owned(),
                    start: offset + s,
                    end: offset + e,
                });
            }
        }
        if i == 0 && line.starts_with("#!") && !line.starts_with("#![") {
            insert_at = line.len();
        }
        offset += line.len();
    }
    let next = text[insert_at..].lines().next().unwrap_or("");
    (found, insert_at, !next.trim().is_empty())
}

/// What a name stands for in the file, from its imports.
#[derive(Debug, Clone)]
enum Binding {
    /// The whole module (`local m = require("m")`, Go's `store`).
    Module(String),
    /// One name of a module (`import { f } from "./m"`, `use crate::m::f`).
    From { module: String, name: String },
}

/// Adds an `Imports` reference of the file per import; returns the names
/// they bind.
fn imports(
    lang: &Language,
    path: &str,
    text: &str,
    tree: &Tree,
    refs: &mut Vec<RawRef>,
) -> HashMap<String, Binding> {
    let mut bindings = HashMap::new();
    let Ok(queries) = lang.queries() else {
        return bindings;
    };
    let query = &queries.imports;
    let ix = |n| query.capture_index_for_name(n);
    let (module_ix, name_ix, alias_ix, sub_ix) = (
        ix("import.module"),
        ix("import.name"),
        ix("import.alias"),
        ix("import.submodule"),
    );
    let style = lang.modules;
    let src = |n: TsNode<'_>| text.get(n.byte_range()).unwrap_or("");
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = matches.next() {
        let get = |want| capture(m, want).map(src);
        if let Some(sub) = get(sub_ix) {
            let module = style.key_of_submodule(path, sub);
            refs.push(RawRef {
                from: 0,
                kind: EdgeKind::Imports,
                target: Target::Module { module },
            });
            continue;
        }
        let Some(spec) = get(module_ix) else { continue };
        let Some(module) = style.key_of_import(path, spec) else {
            continue;
        };
        let target = match get(name_ix) {
            Some(name) => {
                bindings.insert(
                    name.to_owned(),
                    Binding::From {
                        module: module.clone(),
                        name: name.to_owned(),
                    },
                );
                Target::InModule {
                    module: module.clone(),
                    name: name.to_owned(),
                }
            }
            None => Target::Module {
                module: module.clone(),
            },
        };
        if let Some(alias) = get(alias_ix)
            .map(str::to_owned)
            .or_else(|| style.default_alias(spec))
        {
            bindings.insert(alias, Binding::Module(module));
        }
        refs.push(RawRef {
            from: 0,
            kind: EdgeKind::Imports,
            target,
        });
    }
    bindings
}

/// Adds a `Calls` reference per call the file can resolve: to its own
/// top-level definitions, its own types' methods, and names its imports bind.
fn calls(
    lang: &Language,
    text: &str,
    tree: &Tree,
    nodes: &[RawNode],
    bindings: &HashMap<String, Binding>,
    refs: &mut Vec<RawRef>,
) {
    let Ok(queries) = lang.queries() else { return };
    let query = &queries.calls;
    let (name_ix, scope_ix) = (
        query.capture_index_for_name("call.name"),
        query.capture_index_for_name("call.scope"),
    );
    let top: HashMap<&str, NodeType> = nodes
        .iter()
        .filter(|n| n.parent == Some(0))
        .map(|n| (n.name.as_str(), n.node_type))
        .collect();
    let src = |n: TsNode<'_>| text.get(n.byte_range()).unwrap_or("");
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = matches.next() {
        let get = |want| capture(m, want);
        let Some(name_node) = get(name_ix) else {
            continue;
        };
        let name = src(name_node).to_owned();
        let from = owner(nodes, name_node.start_byte());
        let target = match get(scope_ix).map(src) {
            None => match (top.contains_key(name.as_str()), bindings.get(&name)) {
                (true, _) => Target::Local { name },
                (false, Some(Binding::From { module, name })) => Target::InModule {
                    module: module.clone(),
                    name: name.clone(),
                },
                _ => continue,
            },
            Some("self" | "this" | "Self") => {
                let Some(class) = class_of(nodes, from) else {
                    continue;
                };
                Target::Method { class, name }
            }
            Some(scope) if top.get(scope) == Some(&NodeType::Class) => Target::Method {
                class: scope.to_owned(),
                name,
            },
            Some(scope) => match bindings.get(scope) {
                Some(Binding::Module(module)) => Target::InModule {
                    module: module.clone(),
                    name,
                },
                // `Store::new()` with `Store` imported: a method of it.
                Some(Binding::From {
                    module,
                    name: bound,
                }) => Target::InModule {
                    module: module.clone(),
                    name: format!("{bound}.{name}"),
                },
                None => continue,
            },
        };
        refs.push(RawRef {
            from,
            kind: EdgeKind::Calls,
            target,
        });
    }
}

/// The node a match captured under the capture index `want`.
fn capture<'t>(m: &QueryMatch<'_, 't>, want: Option<u32>) -> Option<TsNode<'t>> {
    m.captures
        .iter()
        .find(|c| Some(c.index) == want)
        .map(|c| c.node)
}

/// The innermost node whose span holds byte `at` (0: the file).
fn owner(nodes: &[RawNode], at: usize) -> usize {
    nodes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, n)| n.start_byte <= at && at < n.end_byte)
        .min_by_key(|(_, n)| n.end_byte - n.start_byte)
        .map_or(0, |(i, _)| i)
}

/// The qualified name of the type `self` means inside node `i`: the parent
/// of the nearest method around it.
fn class_of(nodes: &[RawNode], mut i: usize) -> Option<String> {
    loop {
        let n = &nodes[i];
        if n.node_type == NodeType::Method {
            return n
                .qualname
                .rsplit_once('.')
                .map(|(class, _)| class.to_owned());
        }
        i = n.parent?;
        if i == 0 {
            return None;
        }
    }
}
