//! Node agents (Remora, seed §3–4): an agent that embodies one node. Its
//! prompt is the seed's base prompt hydrated from the topology, its tools
//! reach other nodes through a [`NodeBus`], and its edits are confined to
//! its node (`edit`).

mod edit;
pub(crate) mod tools;

use std::sync::Arc;

use serde::Serialize;

use crate::agent::tools::files::Args;
use crate::agent::tools::table::{self, Offer, Runs};
use crate::lang;
use crate::llm::ChatMessage;
use crate::remora::{Node, NodeStatus, NodeType};
use crate::sandbox::HostError;
use crate::sandbox::Value;
use crate::workspace::Workspace;

use edit::clean_source;
pub use edit::{
    apply_reply, locate, node_source, own_definition, propose_new_node, rewrite_self,
    unwrap_rewrite_call, EditError,
};

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

/// The node tools and the extension's own, as signatures the prompt
/// lists (an extension tool with the first line of its doc).
fn tool_signatures(view: &NodeView) -> String {
    let seed = [
        "rewrite_self(new_source)",
        "message_node(target_id, request)",
        "ask_parent(request)",
        "propose_new_node(node_type, name, source, insert_after=None)",
        "read_node(target_id)",
        "get_my_callers()",
        "get_my_callees()",
    ];
    let own = view.tools.iter().map(|tool| {
        let header = tool.source.lines().next().unwrap_or("");
        let header = header.trim_start_matches("def ").trim_end_matches(':');
        match tool.doc.lines().next() {
            Some(doc) => format!("{header} ({doc})"),
            None => header.to_owned(),
        }
    });
    let all: Vec<String> = seed.iter().map(|t| (*t).to_owned()).chain(own).collect();
    all.join(", ")
}

/// The seed's base system prompt for `view`, then the tools and the reply
/// format a small model can follow.
pub fn system_prompt(view: &NodeView) -> String {
    let Some(n) = &view.node else {
        return String::new();
    };
    let language = lang::of_file(&n.file_path);
    let tools = tool_signatures(view);
    let or_none = |s: &str| match s.trim() {
        "" => "None".to_owned(),
        s => s.to_owned(),
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
        custom = or_none(&view.custom_prompt),
        workspaces = or_none(&view.workspaces),
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
    ) -> Result<String, BusError>;
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
    ) -> Result<String, BusError>;
}

/// Why a message to another node did not go, or a question to it got no
/// answer; said to the asking agent.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("Chimera is stopping")]
    Stopping,
    #[error("no node {0} in the index (is its file indexed?)")]
    NoNode(String),
    #[error(transparent)]
    Chain(#[from] crate::remora::chain::Refusal),
    #[error("the activation chains cannot be read (a thread failed while holding them)")]
    Chains,
    #[error("{to} did not answer within {secs} s (remora.answer_timeout_ms)")]
    NoAnswer { to: String, secs: f64 },
    #[error("{to} could not answer: {why}")]
    CouldNot { to: String, why: String },
    #[error("{0} gave an empty answer")]
    Empty(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl From<BusError> for HostError {
    fn from(e: BusError) -> Self {
        HostError::Failed(format!("message_node(): {e}"))
    }
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

/// Whether `name` is one of the seed's node tools.
pub fn is_tool(name: &str) -> bool {
    tool_names().any(|t| t == name)
}

/// The seed's node tools, by name.
pub fn tool_names() -> impl Iterator<Item = &'static str> {
    table::offered(Offer::Node).map(|t| t.name)
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
                .map_err(HostError::from),
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
                .map_err(HostError::from),
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
        .map_err(HostError::from)
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

    /// Runs node tool `name` by its row of the tool table; `None` when
    /// `name` is not one.
    pub fn call(
        &self,
        ws: &Workspace<'_>,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Option<Result<Value, HostError>> {
        let tool = table::offered(Offer::Node).find(|t| t.name == name)?;
        let Runs::Node(run) = tool.runs else {
            return None;
        };
        let done =
            Args::of_call(tool.name, tool.params, a, kw).and_then(|args| run(self, ws, &args));
        Some(
            done.map(crate::sandbox::from_json)
                .map_err(|e| e.into_host().0),
        )
    }

    /// The extension tool `name` of this node, if it has one.
    pub fn extension_tool(&self, name: &str) -> Option<crate::remora::extensions::ExtTool> {
        self.view.tools.iter().find(|t| t.name == name).cloned()
    }

    /// Whether `name` is one of this agent's tools (seed tools or extension ones).
    pub fn has_tool(&self, name: &str) -> bool {
        is_tool(name) || self.view.tools.iter().any(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests;
