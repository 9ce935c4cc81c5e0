//! Remora's extraction for every language but Python, driven by the
//! language's queries (`queries/<language>/*.scm`): the file's nodes with
//! their ID comments, and the calls and imports of each node, resolved as
//! far as the file alone allows. Python keeps its own walker
//! ([`super::extract`]), tuned for re-indexing while the human types.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use tree_sitter::{
    InputEdit, Node as TsNode, Query, QueryCursor, QueryMatch, StreamingIterator, Tree,
};

use super::extracted::{file_node, newline_of, Extracted, IdSpan, RawNode, RawRef, Target};
use super::{ids, EdgeKind, NodeType};
use crate::lang::{self, DefKind, IndexingPattern, Language};

mod refs;
use refs::{calls, capture, imports};

/// What a file's queries matched, kept between edits of the file so that
/// the next edit queries only the lines it touched (see [`extract_edited`]).
/// Every position is the text's; each list is in the order
/// [`Matched::sort`] gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matched {
    defs: Vec<Def>,
    calls: Vec<Call>,
    imports: Vec<Import>,
}

/// A definition and what the file around it says about its node.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Def {
    found: lang::Found,
    /// The ID comment ending its header line, if any.
    id_comment: Option<IdSpan>,
    /// The end of its header line, where an ID comment goes …
    eol: usize,
    /// … unless that line runs on into the next (a string, a comment).
    runs_past: bool,
    /// blake3 of its text (from its attached comments on) without its ID.
    source_hash: String,
    /// The bytes all of the above was read from: the line above its
    /// attached comments (a comment typed there attaches) to the end of
    /// its node or header line.
    span: (usize, usize),
}

/// Longer scopes of a call (`(function () {…}).call`) are not a name the
/// file binds: they are not kept whole.
const LONGEST_SCOPE: usize = 256;

/// A call the calls query matched.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    pattern: usize,
    name: (usize, usize),
    name_text: String,
    scope: Option<String>,
    /// From the first captured byte to the last.
    span: (usize, usize),
}

/// An import the imports query matched: the text of each capture.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Import {
    pattern: usize,
    module: Option<String>,
    name: Option<String>,
    alias: Option<String>,
    submodule: Option<String>,
    span: (usize, usize),
}

impl Matched {
    fn sort(&mut self) {
        self.defs.sort_by_key(|d| lang::found_order(&d.found));
        self.calls.sort_by_key(|c| (c.name.0, c.pattern));
        self.imports.sort_by_key(|i| (i.span.0, i.pattern));
    }
}

/// Extracts the nodes and references of `text`, the file at project path
/// `path`, written in `lang`.
pub fn extract(lang: &'static Language, path: &str, text: &str) -> Extracted {
    match lang.parse(text) {
        Some(tree) => extract_tree(lang, path, text, &tree).0,
        None => finish(lang, path, text, true, &Matched::default()),
    }
}

/// [`extract`] from a tree already parsed from `text`; also returns what
/// the queries matched, for [`extract_edited`].
pub fn extract_tree(
    lang: &'static Language,
    path: &str,
    text: &str,
    tree: &Tree,
) -> (Extracted, Matched) {
    let fresh = matches_in(lang, tree, text, None);
    let root = tree.root_node();
    let mut matched = Matched {
        defs: fresh
            .defs
            .into_iter()
            .map(|f| def(lang, root, text, f))
            .collect(),
        calls: fresh.calls,
        imports: fresh.imports,
    };
    matched.sort();
    let ex = finish(lang, path, text, tree.root_node().has_error(), &matched);
    (ex, matched)
}

/// [`extract_tree`] after an edit, querying only what the edit can have
/// changed: `old` is what the queries matched in the text before `edits`
/// (in the order [`tree_sitter::Tree::edit`] takes them), `changed` the
/// ranges whose syntax differs between the old tree and `tree`. A
/// match that touches neither is moved along, not matched again.
pub fn extract_edited(
    lang: &'static Language,
    path: &str,
    text: &str,
    tree: &Tree,
    old: Matched,
    edits: &[InputEdit],
    changed: &[Range<usize>],
) -> (Extracted, Matched) {
    // Each edit's lines in the new text: the edits after it in the list
    // are above it, and move it.
    let mut again: Vec<Range<usize>> = changed.to_vec();
    let mut above = 0isize;
    for e in edits.iter().rev() {
        again.push(
            e.start_byte.saturating_add_signed(above)..e.new_end_byte.saturating_add_signed(above),
        );
        above += e.new_end_byte as isize - e.old_end_byte as isize;
    }
    let mut kept = Matched::default();
    // Whether a span of the new text meets a range whose syntax changed.
    let touches_changed = |(a, b): (usize, usize)| {
        changed
            .iter()
            .any(|r| a < r.end.max(r.start + 1) && r.start < b)
    };
    // Whether to keep a match whose values were read from `span`; if not,
    // `head` is where to match it again: for a definition, the lines down
    // to its name (its body's matches are each kept or matched again on
    // their own).
    let mut keep = |span: (usize, usize), head: (usize, usize)| {
        let by = match moved(span, edits) {
            Ok(by) if !touches_changed(by.span(span)) => return Some(by),
            Ok(by) => Ok(by),
            Err(_) => moved(head, edits),
        };
        let (a, b) = match by {
            Ok(by) => by.span(head),
            Err(head) => head,
        };
        again.push(a..b);
        None
    };
    for d in old.defs {
        let head = (d.span.0, d.eol.max(d.found.name_span.1));
        if let Some(by) = keep(d.span, head) {
            kept.defs.push(by.def(d));
        }
    }
    for c in old.calls {
        // A call's scope can be a whole file (`(function () {…}).call(this)`):
        // matching its name again finds it whole.
        if let Some(by) = keep(c.span, c.name) {
            kept.calls.push(Call {
                name: by.span(c.name),
                span: by.span(c.span),
                ..c
            });
        }
    }
    for i in old.imports {
        if let Some(by) = keep(i.span, i.span) {
            kept.imports.push(Import {
                span: by.span(i.span),
                ..i
            });
        }
    }
    for range in merged(again, text.len()) {
        let fresh = matches_in(lang, tree, text, Some(range));
        merge(&mut kept, fresh, lang, tree, text);
    }
    kept.sort();
    let ex = finish(lang, path, text, tree.root_node().has_error(), &kept);
    (ex, kept)
}
/// How far the edits before a span moved it, in bytes and rows.
#[derive(Debug, Clone, Copy, Default)]
struct Moved {
    bytes: isize,
    rows: isize,
}

impl Moved {
    fn byte(self, at: usize) -> usize {
        at.saturating_add_signed(self.bytes)
    }

    fn row(self, row: usize) -> usize {
        row.saturating_add_signed(self.rows)
    }

    fn span(self, (a, b): (usize, usize)) -> (usize, usize) {
        (self.byte(a), self.byte(b))
    }

    fn def(self, d: Def) -> Def {
        let f = d.found;
        Def {
            found: lang::Found {
                name_span: self.span(f.name_span),
                name_row: self.row(f.name_row),
                node: self.span(f.node),
                node_rows: (self.row(f.node_rows.0), self.row(f.node_rows.1)),
                first: (self.byte(f.first.0), self.row(f.first.1)),
                ..f
            },
            id_comment: d.id_comment.map(|c| IdSpan {
                start: self.byte(c.start),
                end: self.byte(c.end),
                id: c.id,
            }),
            eol: self.byte(d.eol),
            span: self.span(d.span),
            ..d
        }
    }
}

/// How `edits` (applied in their order, as [`Tree::edit`] takes them)
/// move the span `[a, b)` of the old text; `Err` with the span's place in
/// the new text, stretched over what replaced it, when an edit touches it.
fn moved((a, b): (usize, usize), edits: &[InputEdit]) -> Result<Moved, (usize, usize)> {
    let (mut a, mut b) = (a, b);
    let mut by = Moved::default();
    let mut touched = false;
    for e in edits {
        let (s, old_end, new_end) = (e.start_byte, e.old_end_byte, e.new_end_byte);
        let bytes = new_end as isize - old_end as isize;
        let rows = e.new_end_position.row as isize - e.old_end_position.row as isize;
        // Lines put in right above a definition may attach to it: an
        // insertion where a span starts meets it.
        let meets = if s == old_end {
            a <= s && s < b
        } else {
            a < old_end && s < b
        };
        if meets {
            touched = true;
            a = a.min(s);
            b = if b >= old_end {
                b.saturating_add_signed(bytes)
            } else {
                new_end
            };
            b = b.max(new_end);
        } else if a >= old_end {
            a = a.saturating_add_signed(bytes);
            b = b.saturating_add_signed(bytes);
            by.bytes += bytes;
            by.rows += rows;
        }
    }
    if touched {
        Err((a, b))
    } else {
        Ok(by)
    }
}

/// `ranges` sorted, joined where they meet, and kept inside the text.
fn merged(mut ranges: Vec<Range<usize>>, len: usize) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        let r = r.start.min(len)..r.end.min(len).max(r.start.min(len));
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    // An empty range (lines deleted) still holds the place where what
    // followed them now starts.
    for r in &mut out {
        if r.start == r.end {
            r.end = (r.end + 1).min(len);
        }
    }
    out
}

/// Adds what was matched again to what was kept: a definition found both
/// ways is one (its patterns merged), a call or import found again
/// replaces the kept one.
fn merge(kept: &mut Matched, fresh: Fresh, lang: &Language, tree: &Tree, text: &str) {
    let mut defs: HashMap<(usize, usize), usize> = kept
        .defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.found.name_span, i))
        .collect();
    let root = tree.root_node();
    for mut f in fresh.defs {
        match defs.get(&f.name_span) {
            Some(&i) => {
                let old = &kept.defs[i].found;
                if old.pattern < f.pattern {
                    (f.pattern, f.kind, f.parent) = (old.pattern, old.kind, old.parent.clone());
                }
                if old.node.1 - old.node.0 > f.node.1 - f.node.0 {
                    (f.node, f.node_rows, f.first) = (old.node, old.node_rows, old.first);
                }
                // A definition kept and found again unchanged (a method
                // of the class an edit is in) keeps what was read around it.
                if f != *old {
                    kept.defs[i] = def(lang, root, text, f);
                }
            }
            None => {
                defs.insert(f.name_span, kept.defs.len());
                kept.defs.push(def(lang, root, text, f));
            }
        }
    }
    let calls: HashSet<(usize, usize)> =
        fresh.calls.iter().map(|c| (c.name.0, c.pattern)).collect();
    kept.calls
        .retain(|c| !calls.contains(&(c.name.0, c.pattern)));
    kept.calls.extend(fresh.calls);
    let imports: HashSet<(usize, usize)> = fresh
        .imports
        .iter()
        .map(|i| (i.span.0, i.pattern))
        .collect();
    kept.imports
        .retain(|i| !imports.contains(&(i.span.0, i.pattern)));
    kept.imports.extend(fresh.imports);
}

/// What the queries matched in part of a file, before the text around
/// each definition is read (most of them were read before: see [`merge`]).
#[derive(Default)]
struct Fresh {
    defs: Vec<lang::Found>,
    calls: Vec<Call>,
    imports: Vec<Import>,
}

/// What the three queries match in `range` of the file (all of it when
/// `None`), unsorted: one walk of the tree with the three as one query.
fn matches_in(lang: &Language, tree: &Tree, text: &str, range: Option<Range<usize>>) -> Fresh {
    let Ok(queries) = lang.queries() else {
        return Fresh::default();
    };
    let indexing = &queries.indexing;
    let query = &indexing.query;
    let mut defs = lang::Founds::new(query, text);
    let (calls_ix, imports_ix) = (CallCaptures::new(query), ImportCaptures::new(query));
    let (mut calls, mut imports) = (Vec::new(), Vec::new());
    let mut cursor = QueryCursor::new();
    if let Some(r) = range {
        cursor.set_byte_range(r);
    }
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = matches.next() {
        match indexing.pattern(m.pattern_index) {
            IndexingPattern::Definition(p) => defs.add(m, p),
            IndexingPattern::Call(p) => calls.extend(calls_ix.call(m, p, text)),
            IndexingPattern::Import(p) => imports.push(imports_ix.import(m, p, text)),
        }
    }
    Fresh {
        defs: defs.finish(lang),
        calls,
        imports,
    }
}

/// The text of node `n` of `text`.
fn src(text: &str, n: TsNode<'_>) -> String {
    text.get(n.byte_range()).unwrap_or("").to_owned()
}

/// The bytes a match spans, from its first capture to its last.
fn span(m: &QueryMatch<'_, '_>) -> (usize, usize) {
    let a = m
        .captures
        .iter()
        .map(|c| c.node.start_byte())
        .min()
        .unwrap_or(0);
    let b = m
        .captures
        .iter()
        .map(|c| c.node.end_byte())
        .max()
        .unwrap_or(a);
    (a, b)
}

/// Where a calls pattern's captures are in the query that holds it.
struct CallCaptures {
    name: Option<u32>,
    scope: Option<u32>,
}

impl CallCaptures {
    fn new(query: &Query) -> Self {
        CallCaptures {
            name: query.capture_index_for_name("call.name"),
            scope: query.capture_index_for_name("call.scope"),
        }
    }

    /// The call match `m` of calls pattern `pattern` captures, if it
    /// names one.
    fn call(&self, m: &QueryMatch<'_, '_>, pattern: usize, text: &str) -> Option<Call> {
        let name = capture(m, self.name)?;
        Some(Call {
            pattern,
            name: (name.start_byte(), name.end_byte()),
            name_text: src(text, name),
            // Only a name can resolve; a longer scope is kept short.
            scope: capture(m, self.scope).map(|n| {
                if n.byte_range().len() > LONGEST_SCOPE {
                    "…".to_owned()
                } else {
                    src(text, n)
                }
            }),
            span: span(m),
        })
    }
}

/// Where an imports pattern's captures are in the query that holds it.
struct ImportCaptures {
    module: Option<u32>,
    name: Option<u32>,
    alias: Option<u32>,
    submodule: Option<u32>,
}

impl ImportCaptures {
    fn new(query: &Query) -> Self {
        let ix = |n| query.capture_index_for_name(n);
        ImportCaptures {
            module: ix("import.module"),
            name: ix("import.name"),
            alias: ix("import.alias"),
            submodule: ix("import.submodule"),
        }
    }

    /// The import match `m` of imports pattern `pattern` captures.
    fn import(&self, m: &QueryMatch<'_, '_>, pattern: usize, text: &str) -> Import {
        let get = |want| capture(m, want).map(|n| src(text, n));
        Import {
            pattern,
            module: get(self.module),
            name: get(self.name),
            alias: get(self.alias),
            submodule: get(self.submodule),
            span: span(m),
        }
    }
}

/// A definition with what the text around it says about its node.
fn def(lang: &Language, root: TsNode<'_>, text: &str, found: lang::Found) -> Def {
    let name_end = found.name_span.1;
    let eol = line_end(text, name_end);
    let id_comment = id_comment(lang, text, root, name_end, eol);
    let runs_past = runs_past(root, text, name_end, eol);
    // From its first token, as Python's nodes (the indentation is not
    // part of it).
    let line_start = lang::line_start(text, found.first.0);
    let start = line_start
        + text[line_start..found.first.0]
            .chars()
            .take_while(|c| c.is_whitespace())
            .map(char::len_utf8)
            .sum::<usize>();
    let end = found.node.1;
    let mut hasher = blake3::Hasher::new();
    match &id_comment {
        Some(c) if c.start >= start && c.end <= end => {
            hasher.update(&text.as_bytes()[start..c.start]);
            hasher.update(&text.as_bytes()[c.end..end]);
        }
        _ => {
            hasher.update(&text.as_bytes()[start..end]);
        }
    }
    let above = lang::line_start(text, line_start.saturating_sub(1));
    Def {
        span: (above, end.max(eol)),
        found,
        id_comment,
        eol,
        runs_past,
        source_hash: hasher.finalize().to_hex().to_string(),
    }
}

/// The file's nodes and references from what its queries matched.
fn finish(
    lang: &'static Language,
    path: &str,
    text: &str,
    has_error: bool,
    matched: &Matched,
) -> Extracted {
    let (file_comment, file_comment_at, file_comment_gap) = file_header(lang, text);
    let mut ex = Extracted {
        nodes: vec![file_node(path, text)],
        refs: Vec::new(),
        has_error,
        file_comment,
        file_comment_at,
        file_comment_gap,
        newline: newline_of(text),
        comment: lang.line_comment,
    };
    ex.nodes.extend(nodes(text, &matched.defs));
    let mut targets = refs::Targets::default();
    let bindings = imports(lang, path, &matched.imports, &mut targets, &mut ex.refs);
    // Where a name neither defined nor imported here may be: another file
    // of the same package.
    let package = lang
        .modules
        .spans_files()
        .then(|| lang.modules.key_of_file(path));
    calls(
        &matched.calls,
        &ex.nodes,
        &bindings,
        package,
        &mut targets,
        &mut ex.refs,
    );
    // Equal targets are one (`Targets`): a reference is its node, kind and
    // target's address.
    let mut seen = HashSet::new();
    ex.refs
        .retain(|r| seen.insert((r.from, r.kind, Arc::as_ptr(&r.target))));
    ex
}

/// For each definition, its parent: the innermost definition whose span
/// holds it, or the type it names (a Go receiver, a Rust `impl`'s type)
/// when that type is in this file.
fn parents(defs: &[lang::Definition]) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(defs.len());
    let mut around: Vec<usize> = Vec::new();
    let mut classes: HashMap<&str, usize> = HashMap::new();
    for (i, d) in defs.iter().enumerate().rev() {
        if d.kind == DefKind::Class {
            classes.insert(&d.name, i);
        }
    }
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
            _ => classes.get(p).copied(),
        });
        out.push(named.or(enclosing));
        around.push(out.len() - 1);
    }
    out
}

/// `Parent.name` down from the file; a method of a type of another file
/// is named by that type all the same (`Store.Len`).
fn qualname(defs: &[lang::Definition], parents: &[Option<usize>], i: usize) -> String {
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
fn nodes(text: &str, matched: &[Def]) -> Vec<RawNode> {
    let defs = lang::assemble(text, matched.iter().map(|d| &d.found));
    let parents = parents(&defs);
    let mut out: Vec<RawNode> = Vec::with_capacity(defs.len());
    let mut rows_with_id: HashSet<usize> = HashSet::new();
    for (i, (d, m)) in defs.iter().zip(matched).enumerate() {
        let node_type = match d.kind {
            DefKind::Function => NodeType::Function,
            DefKind::Class => NodeType::Class,
            DefKind::Method => NodeType::Method,
        };
        let header_row = m.found.name_row;
        let first_on_row = rows_with_id.insert(header_row);
        out.push(RawNode {
            node_type,
            name: d.name.clone(),
            qualname: qualname(&defs, &parents, i),
            parent: Some(parents[i].map_or(0, |j| j + 1)),
            start_line: d.start_line + 1,
            end_line: d.end_line + 1,
            start_byte: d.start + d.indent.len(),
            end_byte: d.end,
            id_comment: m.id_comment.clone().filter(|_| first_on_row),
            id_insert_at: (first_on_row && !m.runs_past).then_some(m.eol),
            source_hash: m.source_hash.clone(),
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
    // Down from the root through the nodes holding it (asking a node for
    // its parent walks down from the root every time).
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let kind = node.kind();
        let fragile = kind.contains("string")
            || kind.contains("comment")
            || kind.contains("template")
            || kind.starts_with("jsx");
        if fragile && node.end_byte() > eol {
            return true;
        }
        if cursor.goto_first_child_for_byte(last).is_none() || cursor.node().start_byte() > last {
            return false;
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

#[cfg(test)]
mod tests;
