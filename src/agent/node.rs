//! Node agents (Remora, seed §3–4): an agent that embodies one Python node.
//! Its prompt is the seed's base prompt hydrated from the topology, and its
//! edits are confined: `rewrite_self` replaces exactly the node's span (its
//! ID comment kept), `propose_new_node` adds a sibling in the parent's body.

use std::sync::Arc;

use serde::Serialize;

use crate::lang::{self, Language};
use crate::llm::ChatMessage;
use crate::paths::ProjectPath;
use crate::remora::extract::{extract, RawNode};
use crate::remora::{Node, NodeStatus, NodeType};
use crate::sandbox::HostError;
use crate::sandbox::{args, Value};
use crate::workspace::Workspace;

/// A node with everything its agent is told about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeView {
    pub node: Option<Node>,
    pub source: String,
    pub parent: Option<Node>,
    pub callers: Vec<Node>,
    pub callees: Vec<Node>,
    /// From a matching extension (`.chimera/extensions/`).
    pub custom_prompt: String,
    pub workspaces: String,
    /// The extension's extra tools.
    pub tools: Vec<crate::remora::extensions::ExtTool>,
    /// For a ghost node, the sibling it is written after (`None`: at the
    /// end of its parent).
    pub insert_after: Option<Node>,
}

fn label(n: &Node) -> String {
    format!("{} ({} {})", n.id, n.node_type.as_str(), n.name)
}

fn labels(nodes: &[Node]) -> String {
    if nodes.is_empty() {
        "none".into()
    } else {
        nodes.iter().map(label).collect::<Vec<_>>().join(", ")
    }
}

/// The seed's base system prompt for `view`, then the tools and the reply
/// format a small model can follow.
pub fn system_prompt(view: &NodeView) -> String {
    let Some(n) = &view.node else {
        return String::new();
    };
    let language = lang::of_file(&n.file_path);
    let tools = {
        let mut t = vec![
            "rewrite_self(new_source)",
            "message_node(target_id, request)",
            "ask_parent(request)",
            "propose_new_node(node_type, name, source, insert_after=None)",
            "read_node(target_id)",
            "get_my_callers()",
            "get_my_callees()",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        t.extend(view.tools.iter().map(|tool| {
            let header = tool
                .source
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("def ");
            let header = header.trim_end_matches(':');
            if tool.doc.is_empty() {
                header.to_owned()
            } else {
                format!("{header} ({})", tool.doc.lines().next().unwrap_or(""))
            }
        }));
        t.join(", ")
    };
    format!(
        "You are an autonomous AI agent embodying a {language} {kind}: `{name}`

# Identity
- Node ID: {id}
- Location: {path}:{start}-{end}
- Parent: {parent}

{code}

# Custom Instructions
{custom}

# Available Data
{workspaces}

# Core Rules
1. You may ONLY edit your own body using `rewrite_self()`.
2. To request changes elsewhere, use `message_node(target_id, request)`. A question (ending in ?) returns that node's answer.
3. Your parent can edit you. You cannot edit your parent.
4. All edits are proposals until the human approves.

# How to answer
Answer with your complete new source in one ```{fence} block, starting with
your own {first_line}: that block is your `rewrite_self`. Keep
your name. Do not write ID comments (`{comment} rm_...`). Nothing else is needed.

Only when the request is about ANOTHER node, answer instead with a short
program in one ```python block calling message_node(target_id, request),
with a node ID from the Graph Context above. Programs may also call: {tools}.
They run in a small Python subset: no imports, no open(), no % formatting.",
        kind = n.node_type.as_str(),
        name = n.name,
        id = n.id,
        path = n.file_path,
        start = n.start_line,
        end = n.end_line,
        parent = view
            .parent
            .as_ref()
            .map_or("None (top-level)".into(), label),
        code = code_and_neighbours(view, n),
        custom = if view.custom_prompt.trim().is_empty() {
            "None"
        } else {
            view.custom_prompt.trim()
        },
        workspaces = if view.workspaces.trim().is_empty() {
            "None"
        } else {
            view.workspaces.trim()
        },
        language = language.name,
        fence = language.fence,
        comment = language.line_comment,
        first_line = match (language.id, n.node_type) {
            ("python", NodeType::Class) => format!("`class {}` line", n.name),
            ("python", _) => format!("`def {}` line", n.name),
            _ => format!("line defining `{}`", n.name),
        },
    )
}

/// The node of `text` that is `node` now: same type and qualified name,
/// the one nearest its recorded line when there are several.
pub fn locate<'a>(text: &str, node: &Node, nodes: &'a [RawNode]) -> Option<&'a RawNode> {
    let _ = text;
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
    let raw = locate(text, node, &ex.nodes)?;
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
fn clean_source(language: &Language, src: &str) -> String {
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
fn check_definition(
    language: &Language,
    fname: &str,
    src: &str,
    name: &str,
    kind: NodeType,
) -> Result<(), String> {
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
                return Err(format!(
                    "{fname}(): the new source does not parse.\n{problem}"
                ));
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
        Some(d) if d.name == name && (d.kind == lang::DefKind::Class) == (kind == NodeType::Class) => Ok(()),
        Some(d) => Err(format!(
            "{fname}(): the new source must be `{keyword} {name}`, not `{}`; keep the name (a new name is a new node: use propose_new_node)",
            d.name
        )),
        None => Err(format!(
            "{fname}(): the new source must be the whole `{keyword} {name}` definition, starting with its `{keyword}` line"
        )),
    }
}

/// `text` (the node's file) with `node` replaced by `new_source`: exactly
/// its span changes, re-indented to its place, its inline ID comment kept.
pub fn rewrite_self(text: &str, node: &Node, new_source: &str) -> Result<String, String> {
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
            return Err(format!(
                "rewrite_self(): the new file does not parse.\n{problem}"
            ));
        }
        return Ok(new);
    }
    let raw = locate(text, node, &ex.nodes).ok_or_else(|| {
        format!(
            "rewrite_self(): `{}` is no longer in {}",
            node.name, node.file_path
        )
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
            if let Some(at) = locate(&new, node, &nex.nodes).and_then(|r| r.id_insert_at) {
                new.insert_str(at, &format!("    {} {}", ex.comment, c.id));
            }
        }
    }
    if let Some(problem) = lang::syntax_problem(language, &new) {
        return Err(format!(
            "rewrite_self(): the result does not parse.\n{problem}"
        ));
    }
    if new == text {
        return Err(
            "rewrite_self(): the new source is the same as the old; change it as asked".into(),
        );
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
) -> Result<String, String> {
    let language = lang::of_file(&parent.file_path);
    let src = clean_source(language, source);
    check_definition(language, "propose_new_node", &src, name, node_type)?;
    let ex = extract(&parent.file_path, text);
    if ex.nodes.iter().skip(1).any(|n| {
        n.name == name
            && n.parent.and_then(|p| ex.nodes.get(p)).map(|p| &p.qualname) == Some(&parent.qualname)
            || (parent.node_type == NodeType::File && n.parent == Some(0) && n.name == name)
    }) {
        return Err(format!(
            "propose_new_node(): `{name}` already exists there; choose a new name or ask it to change"
        ));
    }
    let newline = ex.newline;
    let python = language.id == "python";
    let (at, indent, blank) = match parent.node_type {
        NodeType::File => (None, String::new(), if python { 2 } else { 1 }),
        _ => {
            let p = locate(text, parent, &ex.nodes).ok_or_else(|| {
                format!(
                    "propose_new_node(): `{}` is no longer in {}",
                    parent.name, parent.file_path
                )
            })?;
            // The indentation of the parent's body.
            let body_line = text[line_end(text, p.start_byte).min(text.len())..]
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("    ");
            let indent: String = body_line
                .chars()
                .take_while(|c| c.is_whitespace())
                .collect();
            // A body in braces (or Lua's `end`) closes on its last line:
            // the new definition goes before that line.
            let end = if python {
                p.end_byte
            } else {
                line_start(text, p.end_byte.saturating_sub(1)).saturating_sub(1)
            };
            (Some(end), indent, 1)
        }
    };
    let insert_at = match after {
        Some(a) => {
            let r = locate(text, a, &ex.nodes).ok_or_else(|| {
                format!("propose_new_node(): insert_after `{}` was not found", a.id)
            })?;
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
        return Err(format!(
            "propose_new_node(): the result does not parse.\n{problem}"
        ));
    }
    Ok(new)
}

/// A ghost node's first source: its own definition in `code`, inserted
/// in its parent after `after` (else the sibling its view names).
fn write_ghost(
    text: &str,
    ghost: &Node,
    bus: Option<&Arc<dyn NodeBus>>,
    after: Option<&Node>,
    code: &str,
) -> Result<String, String> {
    let language = lang::of_file(&ghost.file_path);
    let defs = reply_definitions(language, code);
    let own = lang::outermost(&defs)
        .into_iter()
        .find(|d| d.name == ghost.name)
        .ok_or_else(|| {
            format!(
                "Answer with your whole definition: one ```{} block defining `{}`.",
                language.fence, ghost.name
            )
        })?;
    let parent = ghost
        .parent_id
        .as_deref()
        .and_then(|p| bus.and_then(|b| b.node(p)))
        .ok_or_else(|| format!("the scope of `{}` is no longer indexed", ghost.name))?;
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
pub fn apply_reply(text: &str, job: &NodeJob, code: &str) -> Result<String, String> {
    let node = job.me().map_err(|e| e.to_string())?;
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
        let fence = language.fence;
        return Err(format!(
            "Answer with your whole new source: one ```{fence} block with the whole definition of `{}`. To ask another node instead, answer with a one-line program such as `message_node(\"rm_...\", \"your request\")`, using a node ID from your Graph Context.",
            node.name
        ));
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

/// What a node agent reaches beyond its own file: other nodes, and the
/// other agents (through the runtime, which checks activation chains).
pub trait NodeBus: Send + Sync {
    /// A node by ID, as the topology has it now.
    fn node(&self, id: &str) -> Option<Node>;
    /// Sends `request` from node `from` to node `to` within chain
    /// `correlation`; the text for the caller, or why it was refused.
    fn message(
        &self,
        from: &str,
        to: &str,
        request: &str,
        correlation: Option<&str>,
    ) -> Result<String, String>;
    /// Puts `question` from node `from` to node `to` within chain
    /// `correlation`, as agent `asker`; the answer, or why there is none.
    /// Blocks (call it off the async threads).
    fn ask(
        &self,
        asker: &str,
        from: &str,
        to: &str,
        question: &str,
        correlation: Option<&str>,
    ) -> Result<String, String>;
}

/// A node's source and neighbours, as its prompts show them.
fn code_and_neighbours(view: &NodeView, n: &Node) -> String {
    let source = if n.status == NodeStatus::Ghost {
        "(none yet: the human asked for you by name; write yourself from scratch)"
    } else {
        view.source.trim_end()
    };
    format!(
        "# Your Source Code\n```{fence}\n{source}\n```\n\n# Graph Context\n- Called by: {callers}\n- You call: {callees}",
        fence = lang::of_file(&n.file_path).fence,
        callers = labels(&view.callers),
        callees = labels(&view.callees),
    )
}

/// The conversation in which the node of `view` answers `question` from
/// `asker` (a neighbour's label, or "The human"): one turn in prose, from
/// its own code, changing nothing (seed §4b: the target's response goes
/// back to the caller).
pub fn answer_messages(view: &NodeView, asker: &str, question: &str) -> Vec<ChatMessage> {
    let Some(n) = &view.node else {
        return Vec::new();
    };
    let system = format!(
        "You are the agent embodying the {language} {kind} `{name}` ({id}, {path}:{start}-{end}).

{code}
{custom}
You are asked a question. Answer it from your source code in a few plain sentences. Do not write code and do not propose changes.",
        language = lang::of_file(&n.file_path).name,
        kind = n.node_type.as_str(),
        name = n.name,
        id = n.id,
        path = n.file_path,
        start = n.start_line,
        end = n.end_line,
        code = code_and_neighbours(view, n),
        custom = if view.custom_prompt.trim().is_empty() {
            String::new()
        } else {
            format!("\n# Custom Instructions\n{}\n", view.custom_prompt.trim())
        },
    );
    vec![
        ChatMessage::system(system),
        ChatMessage::user(format!("{asker} asks: {}", question.trim())),
    ]
}

/// A node agent's job: the node, its chain, and the bus.
#[derive(Clone)]
pub struct NodeJob {
    pub view: NodeView,
    pub correlation: Option<String>,
    pub bus: Arc<dyn NodeBus>,
}

impl std::fmt::Debug for NodeJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeJob")
            .field("node", &self.view.node.as_ref().map(|n| &n.id))
            .field("correlation", &self.correlation)
            .finish_non_exhaustive()
    }
}

/// Part of the error for a rewrite that changes nothing.
pub const UNCHANGED: &str = "the new source is the same as the old";

/// The definitions of a reply's `code`, read as methods alone when that
/// is what it is (`total(): number {…}` in TypeScript).
fn reply_definitions(language: &Language, code: &str) -> Vec<lang::Definition> {
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
            !TOOLS.iter().any(|tool| t.starts_with(&format!("{tool}(")))
        })
        .collect();
    Some(kept.join("\n"))
}

/// A reply that is one JSON tool call, `{"tool": name, "args": {…}}` (or
/// another shape [`super::tools::call_parts`] reads, fenced or not): the
/// tool and its arguments as keyword arguments.
pub fn parse_tool_call(reply: &str) -> Option<(String, Vec<(Value, Value)>)> {
    let t = reply.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map_or(t, |r| r.trim_end().trim_end_matches("```"))
        .trim();
    if !t.starts_with('{') {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(t).ok()?;
    let (tool, args) = super::tools::call_parts(&v);
    let tool = tool?.to_owned();
    let args = match args {
        Some(serde_json::Value::String(s)) => serde_json::from_str(s).ok()?,
        Some(a) => a.clone(),
        None => serde_json::Value::Object(Default::default()),
    };
    let serde_json::Value::Object(map) = args else {
        return None;
    };
    Some((
        tool,
        map.into_iter()
            .map(|(k, v)| (Value::String(k), crate::sandbox::from_json(v)))
            .collect(),
    ))
}

/// How the answer to a message that was sent begins.
pub const SENT: &str = "sent to ";

/// The seed's node tools, by name.
pub const TOOLS: &[&str] = &[
    "rewrite_self",
    "message_node",
    "ask_parent",
    "propose_new_node",
    "read_node",
    "get_my_callers",
    "get_my_callees",
];

fn node_value(n: &Node) -> Value {
    Value::dict(vec![
        (Value::String("id".into()), Value::String(n.id.clone())),
        (
            Value::String("node_type".into()),
            Value::String(n.node_type.as_str().into()),
        ),
        (Value::String("name".into()), Value::String(n.name.clone())),
        (
            Value::String("file_path".into()),
            Value::String(n.file_path.clone()),
        ),
        (
            Value::String("start_line".into()),
            Value::Int(n.start_line as i64),
        ),
        (
            Value::String("end_line".into()),
            Value::Int(n.end_line as i64),
        ),
    ])
}

impl NodeJob {
    fn me(&self) -> Result<&Node, HostError> {
        self.view
            .node
            .as_ref()
            .ok_or_else(|| HostError::from("this agent has no node"))
    }

    /// When `code` defines a neighbour (not this node), sends it to that
    /// neighbour as a request: a node may not edit another, but it may ask.
    pub fn redirect(&self, task: &str, code: &str) -> Option<Result<String, HostError>> {
        let me = self.view.node.as_ref()?;
        let language = lang::of_file(&me.file_path);
        let code = clean_source(language, code);
        let defs = lang::definitions(language, &code);
        let (def, target) = lang::outermost(&defs).into_iter().find_map(|d| {
            let n = self
                .view
                .callers
                .iter()
                .chain(&self.view.callees)
                .find(|n| n.name == d.name && n.id != me.id)?;
            Some((d, n))
        })?;
        let request = format!(
            "{}\nA suggested new version of you:\n```{}\n{}\n```",
            task.trim(),
            language.fence,
            code[def.start..def.end].trim_end()
        );
        Some(
            self.bus
                .message(&me.id, &target.id, &request, self.correlation.as_deref())
                .map_err(|e| HostError::Failed(format!("message_node(): {e}"))),
        )
    }

    /// When the request names exactly one neighbour, sends it there: the
    /// agent left itself unchanged, so the request was not for it.
    pub fn forward(&self, task: &str) -> Option<Result<String, HostError>> {
        let me = self.view.node.as_ref()?;
        let words: Vec<&str> = task
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect();
        let mut named: Vec<&Node> = self
            .view
            .callers
            .iter()
            .chain(&self.view.callees)
            .chain(self.view.parent.iter())
            .filter(|n| n.id != me.id && words.contains(&n.name.as_str()))
            .collect();
        named.dedup_by(|a, b| a.id == b.id);
        let [target] = named.as_slice() else {
            return None;
        };
        Some(
            self.bus
                .message(&me.id, &target.id, task.trim(), self.correlation.as_deref())
                .map_err(|e| HostError::Failed(format!("message_node(): {e}"))),
        )
    }

    /// A question is answered by `to` at once; a request wakes its agent.
    fn send(&self, asker: &str, from: &str, to: &str, request: &str) -> Result<String, HostError> {
        let correlation = self.correlation.as_deref();
        if crate::agent::tools::is_question(request) {
            self.bus.ask(asker, from, to, request, correlation)
        } else {
            self.bus.message(from, to, request, correlation)
        }
        .map_err(HostError::Failed)
    }

    /// A node ID, or the name of a neighbour (small models often give names).
    fn resolve_target(&self, target: &str) -> Result<String, HostError> {
        if crate::remora::ids::is_id(target) {
            return Ok(target.to_owned());
        }
        let neighbours = self
            .view
            .callers
            .iter()
            .chain(&self.view.callees)
            .chain(self.view.parent.iter());
        let found: Vec<&Node> = neighbours.filter(|n| n.name == target).collect();
        match found.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err(format!(
                "no node {target:?} among your neighbours; give a node ID (rm_...) from your Graph Context"
            ).into()),
            _ => Err(format!("{target:?} names several nodes; give its node ID (rm_...)").into()),
        }
    }

    fn file_text(ws: &Workspace<'_>, path: &str) -> Result<(ProjectPath, String), HostError> {
        let p = ws.path(path).map_err(HostError::failed)?;
        let text = ws.read_text(&p).map_err(HostError::failed)?;
        Ok((p, text))
    }

    /// Runs node tool `name`; `None` when `name` is not one.
    pub fn call(
        &self,
        ws: &Workspace<'_>,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Option<Result<Value, HostError>> {
        if !TOOLS.contains(&name) {
            return None;
        }
        Some(self.call_tool(ws, name, a, kw))
    }

    /// The extension tool `name` of this node, if it has one.
    pub fn extension_tool(&self, name: &str) -> Option<crate::remora::extensions::ExtTool> {
        self.view.tools.iter().find(|t| t.name == name).cloned()
    }

    /// Whether `name` is one of this agent's tools (seed tools or extension ones).
    pub fn has_tool(&self, name: &str) -> bool {
        TOOLS.contains(&name) || self.view.tools.iter().any(|t| t.name == name)
    }

    /// `propose_new_node(node_type, name, source, insert_after?)`: a
    /// sibling of this node, written into its parent.
    fn new_sibling(
        &self,
        ws: &Workspace<'_>,
        me: &Node,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Result<Value, HostError> {
        let kind = args::string(name, a, kw, 0, "node_type")?;
        let new_name = args::string(name, a, kw, 1, "name")?;
        let src = args::string(name, a, kw, 2, "source")?;
        let after = args::opt_string(name, a, kw, 3, "insert_after")?;
        let node_type = match kind.as_str() {
            "function" => NodeType::Function,
            "method" => NodeType::Method,
            "class" => NodeType::Class,
            other => {
                return Err(format!(
                    "propose_new_node(): node_type must be \"function\", \"method\" or \"class\", not {other:?}"
                ).into())
            }
        };
        let parent = match &me.parent_id {
            Some(pid) => self
                .bus
                .node(pid)
                .ok_or_else(|| format!("propose_new_node(): parent {pid} not found"))?,
            None => {
                return Err(
                    "propose_new_node(): a file has no siblings; rewrite_self instead".into(),
                )
            }
        };
        let after = match after {
            Some(id) => Some(
                self.bus
                    .node(&id)
                    .ok_or_else(|| format!("propose_new_node(): no node {id} to insert after"))?,
            ),
            None => None,
        };
        let (p, text) = Self::file_text(ws, &parent.file_path)?;
        let new = propose_new_node(&text, &parent, after.as_ref(), node_type, &new_name, &src)?;
        ws.write(&p, new.as_bytes()).map_err(HostError::failed)?;
        Ok(Value::String(format!(
            "proposed a new {kind} `{new_name}` in {}",
            parent.id
        )))
    }

    fn call_tool(
        &self,
        ws: &Workspace<'_>,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Result<Value, HostError> {
        let me = self.me()?;
        match name {
            "rewrite_self" => {
                let src = args::string(name, a, kw, 0, "new_source")?;
                let (p, text) = Self::file_text(ws, &me.file_path)?;
                let written = if me.status == NodeStatus::Ghost {
                    let language = lang::of_file(&me.file_path);
                    let src = clean_source(language, &src);
                    write_ghost(
                        &text,
                        me,
                        Some(&self.bus),
                        self.view.insert_after.as_ref(),
                        &src,
                    )
                } else {
                    rewrite_self(&text, me, &src)
                };
                let new = match written {
                    Ok(new) => new,
                    Err(e) => {
                        return self
                            .redirect("", &src)
                            .unwrap_or(Err(HostError::Failed(e)))
                            .map(Value::String)
                    }
                };
                ws.write(&p, new.as_bytes()).map_err(HostError::failed)?;
                Ok(Value::String(format!(
                    "proposed a rewrite of {} for the human to review",
                    me.id
                )))
            }
            "propose_new_node" => self.new_sibling(ws, me, name, a, kw),
            "read_node" => {
                let id = self.resolve_target(&args::string(name, a, kw, 0, "target_id")?)?;
                let n = self
                    .bus
                    .node(&id)
                    .ok_or_else(|| format!("read_node(): no node {id}"))?;
                let (_, text) = Self::file_text(ws, &n.file_path)?;
                node_source(&text, &n).map(Value::String).ok_or_else(|| {
                    HostError::Failed(format!("read_node(): {id} is no longer in {}", n.file_path))
                })
            }
            "get_my_callers" => Ok(Value::List(
                self.view.callers.iter().map(node_value).collect(),
            )),
            "get_my_callees" => Ok(Value::List(
                self.view.callees.iter().map(node_value).collect(),
            )),
            "message_node" => {
                let to = self.resolve_target(&args::string(name, a, kw, 0, "target_id")?)?;
                let request = args::string(name, a, kw, 1, "request")?;
                self.send(ws.overlay().agent(), &me.id, &to, &request)
                    .map(Value::String)
            }
            "ask_parent" => {
                let request = args::string(name, a, kw, 0, "request")?;
                let parent = me
                    .parent_id
                    .as_deref()
                    .ok_or("ask_parent(): a file node has no parent")?;
                self.send(ws.overlay().agent(), &me.id, parent, &request)
                    .map(Value::String)
            }
            other => Err(format!("unknown node tool `{other}`").into()),
        }
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
