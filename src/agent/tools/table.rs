//! Every tool Chimera gives an agent's program, a model in tool mode, a
//! Remora node or an MCP host, listed once: its name, arguments, what it
//! does, what it touches and where it is offered. The host functions, tool
//! mode's registry, the file functions' reads and writes, the node tools
//! and the MCP server's list are views of this table; tests hold the
//! dispatchers and `:help chimera` to it.

use super::files::{self, Args, Handler, ToolError};
use crate::agent::host::{own, AgentHost};
use crate::agent::node::{tools as node, NodeJob};
use crate::workspace::Workspace;

/// A node agent's own tool's code.
pub type NodeFn = fn(&NodeJob, &Workspace<'_>, &Args) -> Result<serde_json::Value, ToolError>;

/// An agent's own tool's code.
pub type AgentFn = fn(&mut AgentHost, &Args) -> Result<serde_json::Value, ToolError>;

/// One argument: `(name, JSON type, description)`; a type ending in `?`
/// is optional.
pub type Param = (&'static str, &'static str, &'static str);

/// What runs a tool's call, which decides the checks around it.
#[derive(Clone, Copy)]
pub enum Runs {
    /// Looks at the caller's files: the same code in every host.
    Reads(Handler),
    /// Changes files, into the caller's overlay: the same code in every
    /// host (an MCP session opens its proposal first).
    Writes(Handler),
    /// An agent's own: its task, model, machine, network, checkpoints,
    /// its end (an agent's program and tool mode).
    Agent(AgentFn),
    /// A Remora node agent's own: itself, its siblings, its neighbours.
    Node(NodeFn),
    /// The one host that offers it, as its own: the chat's reply, an MCP
    /// session's proposals (the API is a client of this table: the
    /// table cannot name it).
    Host,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Runs::Reads(_) => "Reads",
            Runs::Writes(_) => "Writes",
            Runs::Agent(_) => "Agent",
            Runs::Node(_) => "Node",
            Runs::Host => "Host",
        })
    }
}

/// What an agent's capabilities must allow for it to be offered a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// `capabilities.env`.
    Env,
    /// `capabilities.snapshots`.
    Snapshot,
    /// `capabilities.snapshots`, rolling back.
    Rollback,
    /// `tools.web_search_url`, its host allowed.
    WebSearch,
    /// An A2A peer whose host is allowed.
    Peer,
}

/// Where a tool is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// To every agent: a host function, and a tool in tool mode.
    Agent,
    /// To an agent whose capabilities allow it, the same two ways.
    AgentIf(Needs),
    /// To an agent's program only (no tool of tool mode).
    Program,
    /// To a tool-mode turn of the chat only: its way to answer.
    Chat,
    /// To a Remora node's program.
    Node,
    /// To an MCP host only.
    Mcp,
}

/// One tool.
#[derive(Debug)]
pub struct Tool {
    pub name: &'static str,
    pub params: &'static [Param],
    /// What it does, as a model is told.
    pub doc: &'static str,
    pub runs: Runs,
    pub offer: Offer,
    /// What an MCP host is told, where the MCP server offers this tool
    /// too (its calls run in a session of the core, whose writes become a
    /// proposal by `propose`).
    pub mcp_doc: Option<&'static str>,
}

const PATH: Param = ("path", "string", "project path");
const NODE: Param = ("id", "string", "a Remora node ID (from `nodes`)");

/// A tool an agent is offered the same way everywhere.
const fn agent(
    name: &'static str,
    params: &'static [Param],
    doc: &'static str,
    runs: Runs,
) -> Tool {
    Tool {
        name,
        params,
        doc,
        runs,
        offer: Offer::Agent,
        mcp_doc: None,
    }
}

/// A tool offered elsewhere than to every agent.
const fn only(
    offer: Offer,
    name: &'static str,
    params: &'static [Param],
    doc: &'static str,
) -> Tool {
    Tool {
        name,
        params,
        doc,
        runs: Runs::Host,
        offer,
        mcp_doc: None,
    }
}

/// An agent's own tool offered elsewhere than to every agent.
const fn own_tool(
    offer: Offer,
    name: &'static str,
    params: &'static [Param],
    doc: &'static str,
    run: AgentFn,
) -> Tool {
    Tool {
        runs: Runs::Agent(run),
        ..only(offer, name, params, doc)
    }
}

/// A Remora node agent's own tool.
const fn node_tool(
    name: &'static str,
    params: &'static [Param],
    doc: &'static str,
    run: NodeFn,
) -> Tool {
    Tool {
        runs: Runs::Node(run),
        ..only(Offer::Node, name, params, doc)
    }
}

/// An agent's tool an MCP host is offered too, told `mcp_doc`.
const fn shared(tool: Tool, mcp_doc: &'static str) -> Tool {
    Tool {
        mcp_doc: Some(mcp_doc),
        ..tool
    }
}

/// The chat's way to answer, the one tool offered `Offer::Chat`.
pub const REPLY: Tool = only(
    Offer::Chat,
    "reply",
    &[("text", "string", "your answer")],
    "Answer the human in the chat and end your turn (no file change needed).",
);

/// Every tool. The agents' come in the order tool mode lists them (small
/// models read the first ones more closely): the file tools first.
pub const TOOLS: &[Tool] = &[
    shared(
        agent("read_file", &[PATH], "Read a project file (path relative to the root).", Runs::Reads(files::read_file)),
        "Read a project file as the human sees it (unsaved editor buffers included), with what you wrote in this session over it.",
    ),
    shared(
        agent(
            "write_file",
            &[PATH, ("content", "string", "the complete new content")],
            "Write a whole file (into your overlay; the human reviews it).",
            Runs::Writes(files::write_file),
        ),
        "Write a whole file into this session's overlay. The human's files do not change: call `propose` when done, and the human reviews the change in the editor.",
    ),
    agent(
        "run_command",
        &[("argv", "array", "the program and its arguments")],
        "Run a program (no shell) in a scratch copy of the project with your changes, e.g. the tests. Only allowed programs run.",
        Runs::Agent(own::run_command),
    ),
    shared(
        agent(
            "write_definitions",
            &[PATH, ("code", "string", "the new definitions, complete")],
            "Replace functions/classes in a Python file by their new versions (same names), or add new ones.",
            Runs::Writes(files::write_definitions),
        ),
        "Replace functions, classes or methods of a file by new versions of the same names (or add new ones), in this session's overlay; the rest of the file stays as it is. Refused, with why, when the result does not parse or changes nothing.",
    ),
    shared(
        agent("delete_file", &[PATH], "Delete a file.", Runs::Writes(files::delete_file)),
        "Delete a file in this session's overlay (proposed like a write).",
    ),
    shared(
        agent(
            "list_dir",
            &[("path", "string?", "directory")],
            "List a directory (\"\" for the root).",
            Runs::Reads(files::list_dir),
        ),
        "List a directory of the project (\"\" or no path: the root); directories end in /.",
    ),
    agent("file_exists", &[PATH], "Whether a file exists.", Runs::Reads(files::file_exists)),
    shared(
        agent(
            "search_files",
            &[("pattern", "string", "glob or text")],
            "Files whose path matches a glob (with * or ?), else files containing the text.",
            Runs::Reads(files::search_files),
        ),
        "Project files whose path matches a glob (with * ? or [), else files containing the text.",
    ),
    agent("get_file_tree", &[], "Every file of the project, one per line.", Runs::Reads(files::get_file_tree)),
    agent("get_task", &[], "The task, again.", Runs::Agent(own::get_task)),
    agent(
        "system_stats",
        &[],
        "The machine's CPUs, load averages, memory, uptime, the project's disk, and the processes using the most CPU and memory.",
        Runs::Agent(own::system_stats),
    ),
    agent(
        "submit_result",
        &[("summary", "string", "one line"), ("changed_files", "array", "paths you wrote")],
        "Finish: say what you changed. Call it once, last.",
        Runs::Agent(own::submit_result),
    ),
    own_tool(
        Offer::AgentIf(Needs::Env),
        "env",
        &[("name", "string?", "the variable's name"), ("default", "string?", "what an unset one gives")],
        "An environment variable you may read (no name: all of them).",
        own::env,
    ),
    own_tool(
        Offer::AgentIf(Needs::Snapshot),
        "snapshot",
        &[("name", "string?", "a name for it")],
        "Checkpoint your changes so far; returns the checkpoint's name.",
        own::snapshot,
    ),
    own_tool(
        Offer::AgentIf(Needs::Rollback),
        "rollback",
        &[("name", "string", "the checkpoint's name")],
        "Undo your changes made since a checkpoint (e.g. when the tests fail after them).",
        own::rollback,
    ),
    own_tool(
        Offer::AgentIf(Needs::WebSearch),
        "web_search",
        &[("query", "string", "what to search for")],
        "Search the web; the top results with title, URL and snippet.",
        own::web_search,
    ),
    own_tool(
        Offer::AgentIf(Needs::Peer),
        "delegate",
        &[("peer", "string", "the agent's name"), ("task", "string", "what it should do, in words")],
        "Hand a task to another agent (A2A) and wait for its answer; a change it proposes is applied to your files (your overlay).",
        own::delegate,
    ),
    own_tool(
        Offer::Program,
        "ask_llm",
        &[("prompt", "string", "the question"), ("context", "string?", "what it is about")],
        "Ask the model (or `llm.roles`' model for this) and get its answer.",
        own::ask_llm,
    ),
    own_tool(
        Offer::Program,
        "log",
        &[("message", "string", "what to keep")],
        "Keep a line with the agent, shown even when the program fails.",
        own::log,
    ),
    own_tool(
        Offer::Program,
        "mcp_call",
        &[("server", "string", "the MCP server's name"), ("tool", "string", "its tool"), ("args", "object", "the tool's arguments")],
        "Call a tool of an MCP server the capabilities allow.",
        own::mcp_call,
    ),
    REPLY,
    node_tool("rewrite_self", &[("new_source", "string", "this node's new source")], "Replace exactly this node (its ID kept).", node::rewrite_self),
    node_tool(
        "message_node",
        &[("target_id", "string", "the node's ID"), ("request", "string", "what to ask of it")],
        "Wake another node's agent with a request.",
        node::message_node,
    ),
    node_tool("ask_parent", &[("request", "string", "what to ask of it")], "message_node to this node's parent.", node::ask_parent),
    node_tool(
        "propose_new_node",
        &[
            ("node_type", "string", "function, class or method"),
            ("name", "string", "its name"),
            ("source", "string", "its source"),
            ("insert_after", "string?", "the node ID it follows"),
        ],
        "Add a sibling in the parent's body.",
        node::propose_new_node,
    ),
    node_tool("read_node", &[("target_id", "string", "the node's ID")], "Another node's source.", node::read_node),
    node_tool("get_my_callers", &[], "The nodes that call this one: their IDs, types, names, files and lines.", node::get_my_callers),
    node_tool("get_my_callees", &[], "The nodes this one calls: their IDs, types, names, files and lines.", node::get_my_callees),
    only(
        Offer::Mcp,
        "propose",
        &[("summary", "string?", "one line: what the change does")],
        "Turn what this session wrote into a proposal for the human to review (accept or reject, per hunk). Returns its ID and diff; the next write starts a new proposal.",
    ),
    only(
        Offer::Mcp,
        "proposal_status",
        &[("id", "string", "the proposal's ID (from `propose`)")],
        "A proposal's state (completed = waiting for the human, accepted, rejected with feedback, failed) and its diff.",
    ),
    only(Offer::Mcp, "nodes", &[PATH], "The functions, classes and methods of a file (Remora nodes), with their IDs and lines."),
    only(Offer::Mcp, "node", &[NODE], "One Remora node with its source."),
    only(Offer::Mcp, "callers", &[NODE], "The nodes that call a node."),
    only(Offer::Mcp, "callees", &[NODE], "The nodes a node calls."),
    only(
        Offer::Mcp,
        "snapshot",
        &[("message", "string?", "what it marks")],
        "Record a snapshot of the project the human can roll back to.",
    ),
    only(Offer::Mcp, "history", &[], "The project's snapshots, newest last."),
];

/// The tools offered `offer`, in the table's order.
pub fn offered(offer: Offer) -> impl Iterator<Item = &'static Tool> {
    TOOLS.iter().filter(move |t| t.offer == offer)
}

/// The tool an agent's program calls `name`: a host function.
pub fn function(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| {
        t.name == name && matches!(t.offer, Offer::Agent | Offer::AgentIf(_) | Offer::Program)
    })
}

/// The tools an MCP host is offered, with what it is told of each.
pub fn for_mcp() -> impl Iterator<Item = (&'static Tool, &'static str)> {
    TOOLS.iter().filter_map(|t| match (t.offer, t.mcp_doc) {
        (Offer::Mcp, _) => Some((t, t.doc)),
        (_, Some(doc)) => Some((t, doc)),
        _ => None,
    })
}

/// The tool an MCP host calls `name`.
pub fn for_mcp_named(name: &str) -> Option<&'static Tool> {
    for_mcp().map(|(t, _)| t).find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_name_is_offered_twice_to_the_same_client() {
        let mut seen = std::collections::HashSet::new();
        for t in TOOLS {
            let client = match t.offer {
                Offer::Agent | Offer::AgentIf(_) | Offer::Program | Offer::Chat => "agent",
                Offer::Node => "node",
                Offer::Mcp => "mcp",
            };
            assert!(seen.insert((client, t.name)), "{} twice", t.name);
        }
        let mcp: Vec<&str> = for_mcp().map(|(t, _)| t.name).collect();
        let unique: std::collections::HashSet<_> = mcp.iter().collect();
        assert_eq!(unique.len(), mcp.len(), "{mcp:?}");
    }

    /// What runs a tool is there wherever it is offered: an agent's own
    /// code only where an agent calls it, a file tool's everywhere.
    #[test]
    fn every_tool_is_run_where_it_is_offered() {
        for t in TOOLS {
            let agents = function(t.name).is_some_and(|f| f.offer == t.offer);
            match t.runs {
                Runs::Agent(_) => assert!(agents && t.mcp_doc.is_none(), "{}", t.name),
                Runs::Reads(_) | Runs::Writes(_) => {
                    assert!(matches!(t.offer, Offer::Agent | Offer::Mcp), "{}", t.name)
                }
                Runs::Node(_) => assert_eq!(t.offer, Offer::Node, "{}", t.name),
                Runs::Host => assert!(
                    matches!(t.offer, Offer::Chat | Offer::Mcp),
                    "{}: an agent's function with no code",
                    t.name
                ),
            }
        }
    }

    /// `:help chimera` names every tool where its client reads of it.
    #[test]
    fn the_help_names_every_tool() {
        let help = include_str!("../../../doc/chimera.txt");
        let section = |tag: &str, end: &str| {
            let start = help
                .find(tag)
                .unwrap_or_else(|| panic!("no {tag} in the help"));
            let rest = &help[start..];
            rest[..rest.find(end).unwrap_or(rest.len())].to_owned()
        };
        let functions = section("*chimera-host-functions*", "\n\n");
        for t in TOOLS.iter().filter(|t| function(t.name).is_some()) {
            assert!(
                functions.contains(&format!("{}(", t.name)),
                "host function {} not in the help",
                t.name
            );
        }
        let mcp = section("chimera mcp serve [--root DIR]", "When the HTTP API is on");
        for (t, _) in for_mcp() {
            assert!(
                mcp.split_whitespace().any(|w| w == t.name),
                "MCP tool {} not in the help",
                t.name
            );
        }
        let nodes = section("rewrite_self(new_source)", "\n\n");
        for t in offered(Offer::Node) {
            assert!(
                nodes.contains(t.name),
                "node tool {} not in the help",
                t.name
            );
        }
    }
}
