//! A node agent's edits, confined to its node: `rewrite_self` replaces
//! exactly the node's span (its ID comment kept), `propose_new_node` adds
//! a sibling in the parent's body, and a reply in the definitions form is
//! read as both. Pure functions of the file's text; a [`EditError`] says
//! what went wrong in words the model can act on.

use std::sync::Arc;

use super::{NodeBus, NodeJob};
use crate::lang::{self, Language};
use crate::remora::extract::{extract, RawNode};
use crate::remora::{Node, NodeStatus, NodeType};

/// Why a node's edit was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("{tool}(): the {what} does not parse.\n{problem}")]
    Unparsable {
        tool: &'static str,
        what: &'static str,
        problem: String,
    },
    #[error("{tool}(): the new source must be `{keyword} {name}`, not `{found}`; keep the name (a new name is a new node: use propose_new_node)")]
    Renamed {
        tool: &'static str,
        keyword: &'static str,
        name: String,
        found: String,
    },
    #[error("{tool}(): the new source must be the whole `{keyword} {name}` definition, starting with its `{keyword}` line")]
    NotTheDefinition {
        tool: &'static str,
        keyword: &'static str,
        name: String,
    },
    #[error("{tool}(): `{name}` is no longer in {file}")]
    Gone {
        tool: &'static str,
        name: String,
        file: String,
    },
    #[error("rewrite_self(): the new source is the same as the old; change it as asked")]
    Unchanged,
    #[error(
        "propose_new_node(): `{name}` already exists there; choose a new name or ask it to change"
    )]
    Exists { name: String },
    #[error("propose_new_node(): insert_after `{id}` was not found")]
    NoSibling { id: String },
    #[error("Answer with your whole definition: one ```{fence} block defining `{name}`.")]
    NoGhostSource { fence: &'static str, name: String },
    #[error("the scope of `{name}` is no longer indexed")]
    ScopeGone { name: String },
    #[error("Answer with your whole new source: one ```{fence} block with the whole definition of `{name}`. To ask another node instead, answer with a one-line program such as `message_node(\"rm_...\", \"your request\")`, using a node ID from your Graph Context.")]
    NoOwnSource { fence: &'static str, name: String },
    #[error("{0}")]
    Other(String),
}

impl From<EditError> for crate::sandbox::HostError {
    fn from(e: EditError) -> Self {
        crate::sandbox::HostError::Failed(e.to_string())
    }
}

/// The node of a file's `nodes` that is `node` now: same type and qualified name,
/// the one nearest its recorded line when there are several.
pub fn locate<'a>(node: &Node, nodes: &'a [RawNode]) -> Option<&'a RawNode> {
    if node.node_type == NodeType::File {
        return nodes.first();
    }
    nodes
        .iter()
        .skip(1)
        .filter(|r| r.node_type == node.node_type && r.qualname == node.qualname)
        .min_by_key(|r| r.start_line.abs_diff(node.start_line))
}

/// The text of `node` in `text` (the file), as its agent sees it.
pub fn node_source(text: &str, node: &Node) -> Option<String> {
    let ex = extract(&node.file_path, text);
    let raw = locate(node, &ex.nodes)?;
    let start = line_start(text, raw.start_byte);
    Some(text[start..raw.end_byte].to_owned())
}

fn line_start(text: &str, byte: usize) -> usize {
    text[..byte].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, byte: usize) -> usize {
    text[byte..].find('\n').map_or(text.len(), |i| byte + i + 1)
}

/// Removes a ```python fence and the common indentation.
pub(super) fn clean_source(language: &Language, src: &str) -> String {
    let src = if src.contains("```") {
        crate::agent::prompt::extract_code_as(src, language)
    } else {
        src.to_owned()
    };
    let src = lang::splice::dedent(&src);
    let lines: Vec<&str> = src.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(f), Some(l)) => lines[f..=l].join("\n"),
        _ => String::new(),
    }
}

/// Checks that `src` (dedented) is one definition named `name` of the
/// right kind, and parses as `language`.
pub(super) fn check_definition(
    language: &Language,
    fname: &'static str,
    src: &str,
    name: &str,
    kind: NodeType,
) -> Result<(), EditError> {
    // A JavaScript or TypeScript method parses only inside a class body.
    let wrapped = match (kind, language.method_context) {
        (NodeType::Method, Some((before, after))) => {
            let inside = format!("{before}{src}{after}");
            let parses = lang::syntax_problem(language, &inside).is_none();
            parses.then(|| {
                let defs = lang::definitions(language, &inside);
                defs.into_iter().skip(1).collect::<Vec<_>>()
            })
        }
        _ => None,
    };
    let defs = match wrapped {
        Some(defs) => defs,
        None => {
            if let Some(problem) = lang::syntax_problem(language, src) {
                return Err(EditError::Unparsable {
                    tool: fname,
                    what: "new source",
                    problem: problem.to_string(),
                });
            }
            lang::definitions(language, src)
        }
    };
    // Outermost first: a Go method's receiver type is its parent, yet it
    // is the definition written.
    let first = defs.first();
    let keyword = match (language.id, kind == NodeType::Class) {
        ("python", true) => "class",
        ("python", false) => "def",
        (_, true) => "type",
        (_, false) => "function",
    };
    match first {
        Some(d)
            if d.name == name && (d.kind == lang::DefKind::Class) == (kind == NodeType::Class) =>
        {
            Ok(())
        }
        Some(d) => Err(EditError::Renamed {
            tool: fname,
            keyword,
            name: name.to_owned(),
            found: d.name.clone(),
        }),
        None => Err(EditError::NotTheDefinition {
            tool: fname,
            keyword,
            name: name.to_owned(),
        }),
    }
}

/// `text` (the node's file) with `node` replaced by `new_source`: exactly
/// its span changes, re-indented to its place, its inline ID comment kept.
pub fn rewrite_self(text: &str, node: &Node, new_source: &str) -> Result<String, EditError> {
    let language = lang::of_file(&node.file_path);
    let ex = extract(&node.file_path, text);
    let newline = ex.newline;
    let src = clean_source(language, new_source);
    if node.node_type == NodeType::File {
        let mut new = src.replace('\n', newline);
        if text.ends_with('\n') {
            new.push_str(newline);
        }
        // Keep the file's own ID line.
        if let Some(c) = &ex.file_comment {
            if !new.contains(&c.id) {
                let first = line_end(text, c.start);
                new = format!("{}{new}", &text[..first]);
            }
        }
        if let Some(problem) = lang::syntax_problem(language, &new) {
            return Err(EditError::Unparsable {
                tool: "rewrite_self",
                what: "new file",
                problem: problem.to_string(),
            });
        }
        return Ok(new);
    }
    let raw = locate(node, &ex.nodes).ok_or_else(|| EditError::Gone {
        tool: "rewrite_self",
        name: node.name.clone(),
        file: node.file_path.clone(),
    })?;
    check_definition(language, "rewrite_self", &src, &node.name, node.node_type)?;
    let mut start = line_start(text, raw.start_byte);
    // Doc comments and attributes above the node stay when the new source
    // comes without any (a model rewriting a body leaves them out).
    let brings_its_own = reply_definitions(language, &src)
        .first()
        .is_some_and(|d| d.start < d.own_start);
    if !brings_its_own {
        if let Some(old) = lang::definitions(language, text)
            .into_iter()
            .find(|d| d.start == start && d.name == node.name)
        {
            start = old.own_start;
        }
    }
    let indent: String = text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let end = raw.end_byte;
    let mut new = format!(
        "{}{}{}",
        &text[..start],
        lang::splice::reindent(&src, &indent, newline),
        &text[end..]
    );
    // The ID comment stays on the header line.
    if let Some(c) = &raw.id_comment {
        if !src.contains(&c.id) {
            let nex = extract(&node.file_path, &new);
            if let Some(at) = locate(node, &nex.nodes).and_then(|r| r.id_insert_at) {
                new.insert_str(at, &format!("    {} {}", ex.comment, c.id));
            }
        }
    }
    if let Some(problem) = lang::syntax_problem(language, &new) {
        return Err(EditError::Unparsable {
            tool: "rewrite_self",
            what: "result",
            problem: problem.to_string(),
        });
    }
    if new == text {
        return Err(EditError::Unchanged);
    }
    Ok(new)
}

/// `text` with a new definition `source` (named `name`) added to the body
/// of `parent`: after the sibling `after` when given, else at the end.
pub fn propose_new_node(
    text: &str,
    parent: &Node,
    after: Option<&Node>,
    node_type: NodeType,
    name: &str,
    source: &str,
) -> Result<String, EditError> {
    let language = lang::of_file(&parent.file_path);
    let src = clean_source(language, source);
    check_definition(language, "propose_new_node", &src, name, node_type)?;
    let ex = extract(&parent.file_path, text);
    if ex.nodes.iter().skip(1).any(|n| {
        n.name == name
            && n.parent.and_then(|p| ex.nodes.get(p)).map(|p| &p.qualname) == Some(&parent.qualname)
            || (parent.node_type == NodeType::File && n.parent == Some(0) && n.name == name)
    }) {
        return Err(EditError::Exists {
            name: name.to_owned(),
        });
    }
    let newline = ex.newline;
    let python = language.id == "python";
    let (at, indent, blank) = match parent.node_type {
        NodeType::File => (None, String::new(), if python { 2 } else { 1 }),
        _ => {
            let (end, indent) = body_of(text, parent, &ex.nodes, python)?;
            (Some(end), indent, 1)
        }
    };
    let insert_at = match after {
        Some(a) => {
            let r =
                locate(a, &ex.nodes).ok_or_else(|| EditError::NoSibling { id: a.id.clone() })?;
            line_end(text, r.end_byte.saturating_sub(1).max(r.start_byte))
        }
        None => match at {
            Some(end) => line_end(text, end.saturating_sub(1)),
            None => text.len(),
        },
    };
    let mut block = String::new();
    if insert_at > 0 && !text[..insert_at].ends_with('\n') {
        block.push_str(newline);
    }
    for _ in 0..blank {
        block.push_str(newline);
    }
    block.push_str(&lang::splice::reindent(&src, &indent, newline));
    block.push_str(newline);
    let mut new = text.to_owned();
    new.insert_str(insert_at, &block);
    if let Some(problem) = lang::syntax_problem(language, &new) {
        return Err(EditError::Unparsable {
            tool: "propose_new_node",
            what: "result",
            problem: problem.to_string(),
        });
    }
    Ok(new)
}

/// Where `parent`'s body ends (before its closing line, for a body in
/// braces or Lua's `end`) and its indentation.
fn body_of(
    text: &str,
    parent: &Node,
    nodes: &[RawNode],
    python: bool,
) -> Result<(usize, String), EditError> {
    let p = locate(parent, nodes).ok_or_else(|| EditError::Gone {
        tool: "propose_new_node",
        name: parent.name.clone(),
        file: parent.file_path.clone(),
    })?;
    let body_line = text[line_end(text, p.start_byte).min(text.len())..]
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("    ");
    let indent: String = body_line
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    let end = if python {
        p.end_byte
    } else {
        line_start(text, p.end_byte.saturating_sub(1)).saturating_sub(1)
    };
    Ok((end, indent))
}

/// A ghost node's first source: its own definition in `code`, inserted
/// in its parent after `after` (else the sibling its view names).
pub(super) fn write_ghost(
    text: &str,
    ghost: &Node,
    bus: Option<&Arc<dyn NodeBus>>,
    after: Option<&Node>,
    code: &str,
) -> Result<String, EditError> {
    let language = lang::of_file(&ghost.file_path);
    let defs = reply_definitions(language, code);
    let own = lang::outermost(&defs)
        .into_iter()
        .find(|d| d.name == ghost.name)
        .ok_or_else(|| EditError::NoGhostSource {
            fence: language.fence,
            name: ghost.name.clone(),
        })?;
    let parent = ghost
        .parent_id
        .as_deref()
        .and_then(|p| bus.and_then(|b| b.node(p)))
        .ok_or_else(|| EditError::ScopeGone {
            name: ghost.name.clone(),
        })?;
    propose_new_node(
        text,
        &parent,
        after,
        ghost.node_type,
        &ghost.name,
        &code[own.start..own.end],
    )
}

/// The source inside a reply that is only a `rewrite_self(...)` call with
/// one string literal, taken verbatim between its first and last quote
/// (small models put unescaped triple quotes inside it).
pub fn unwrap_rewrite_call(code: &str) -> Option<String> {
    let t = code.trim();
    let inner = t.strip_prefix("rewrite_self(")?.strip_suffix(')')?.trim();
    let inner = inner.strip_prefix("new_source=").unwrap_or(inner).trim();
    for q in ["\"\"\"", "'''", "\"", "'"] {
        if let Some(body) = inner.strip_prefix(q).and_then(|b| b.strip_suffix(q)) {
            return Some(body.to_owned());
        }
    }
    None
}

/// A reply in the definitions form, for node `node` of `text`: the
/// definition named like the node is its `rewrite_self`; any other new
/// top-level definition in the reply is proposed as a sibling after it.
pub fn apply_reply(text: &str, job: &NodeJob, code: &str) -> Result<String, EditError> {
    let node = job.me().map_err(|e| EditError::Other(e.to_string()))?;
    let bus = Some(&job.bus);
    let language = lang::of_file(&node.file_path);
    let code = clean_source(language, code);
    if node.status == NodeStatus::Ghost {
        return write_ghost(text, node, bus, job.view.insert_after.as_ref(), &code);
    }
    if node.node_type == NodeType::File {
        return rewrite_self(text, node, &code);
    }
    let defs = reply_definitions(language, &code);
    let top = lang::outermost(&defs);
    let Some(own) = top.iter().find(|d| d.name == node.name) else {
        return Err(EditError::NoOwnSource {
            fence: language.fence,
            name: node.name.clone(),
        });
    };
    let mut new = rewrite_self(text, node, &code[own.start..own.end])?;
    let parent = node
        .parent_id
        .as_deref()
        .and_then(|p| bus.and_then(|b| b.node(p)));
    if let Some(parent) = parent {
        let existing: Vec<String> = extract(&node.file_path, text)
            .nodes
            .iter()
            .map(|n| n.qualname.clone())
            .collect();
        for d in top.iter().filter(|d| d.name != node.name).rev() {
            let qual = if parent.node_type == NodeType::File {
                d.name.clone()
            } else {
                format!("{}.{}", parent.qualname, d.name)
            };
            if existing.contains(&qual) {
                continue;
            }
            let kind = match (d.kind, parent.node_type) {
                (lang::DefKind::Class, _) => NodeType::Class,
                (_, NodeType::Class) => NodeType::Method,
                _ => NodeType::Function,
            };
            new = propose_new_node(
                &new,
                &parent,
                Some(node),
                kind,
                &d.name,
                &code[d.start..d.end],
            )?;
        }
    }
    Ok(new)
}

/// The definitions of a reply's `code`, read as methods alone when that
/// is what it is (`total(): number {…}` in TypeScript).
pub(super) fn reply_definitions(language: &Language, code: &str) -> Vec<lang::Definition> {
    match lang::lone_methods(language, code) {
        Some(alone) => alone.methods,
        None => lang::definitions(language, code),
    }
}

/// In a reply that defines this node at top level, that definition alone,
/// without lines that only call a tool (small models append
/// `rewrite_self(...)` or `message_node(...)` lines inside their own body).
pub fn own_definition(code: &str, node: &Node) -> Option<String> {
    if node.node_type == NodeType::File {
        return None;
    }
    let language = lang::of_file(&node.file_path);
    let code = clean_source(language, code);
    let defs = reply_definitions(language, &code);
    let def = lang::outermost(&defs)
        .into_iter()
        .find(|d| d.name == node.name)?;
    let kept: Vec<&str> = code[def.start..def.end]
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !super::tool_names().any(|tool| t.starts_with(&format!("{tool}(")))
        })
        .collect();
    Some(kept.join("\n"))
}
