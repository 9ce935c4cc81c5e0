//! The agent's own host functions — its task, its model, the machine,
//! the network, MCP servers, its checkpoints, its end — the tool table's
//! `Runs::Agent` rows; the file tools are every host's
//! ([`crate::agent::tools::files`]).

use serde_json::{json, Value as Json};

use super::AgentHost;
use crate::agent::tools::files::{type_name, Args, ToolError};

type Done = Result<Json, ToolError>;

/// `get_task()`.
pub(crate) fn get_task(h: &mut AgentHost, _: &Args) -> Done {
    Ok(json!(h.task))
}

/// `ask_llm(prompt, context=None)`.
pub(crate) fn ask_llm(h: &mut AgentHost, args: &Args) -> Done {
    let prompt = args.string("prompt")?;
    let context = args.opt_string("context")?;
    Ok(json!(h.ask_llm(prompt, context)?))
}

/// `log(message)`: kept with the agent, whatever it is.
pub(crate) fn log(h: &mut AgentHost, args: &Args) -> Done {
    let message = match args.get("message") {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    h.logs.push(message);
    Ok(json!(true))
}

/// `run_command(argv)`.
pub(crate) fn run_command(h: &mut AgentHost, args: &Args) -> Done {
    let argv = args.string_list("argv")?;
    Ok(json!(h.run_command(argv)?))
}

/// `system_stats()`.
pub(crate) fn system_stats(h: &mut AgentHost, _: &Args) -> Done {
    Ok(crate::agent::world::system_stats(h.store.root()))
}

/// `web_search(query)`.
pub(crate) fn web_search(h: &mut AgentHost, args: &Args) -> Done {
    let query = args.string("query")?;
    Ok(json!(h.web_search(&query)?))
}

/// `mcp_call(server, tool, args)` of a program: code mode is offered no
/// list of tools, so the hub says when there is no such tool.
pub(crate) fn mcp_call(h: &mut AgentHost, args: &Args) -> Done {
    let server = args.string("server")?;
    let tool = args.string("tool")?;
    let arguments = match args.get("args") {
        None | Some(Json::Null) => json!({}),
        Some(v @ Json::Object(_)) => v.clone(),
        Some(other) => {
            return Err(ToolError::Args(format!(
                "mcp_call(): `args` must be a dict of the tool's arguments, got {}",
                type_name(other)
            )))
        }
    };
    Ok(json!(h.mcp_call(&server, &tool, arguments)?))
}

/// `env(name=None, default=None)`.
pub(crate) fn env(h: &mut AgentHost, args: &Args) -> Done {
    let name = args.opt_string("name")?;
    let default = args.get("default").cloned().unwrap_or(Json::Null);
    Ok(h.env(name, default)?)
}

/// `snapshot(name=None)`.
pub(crate) fn snapshot(h: &mut AgentHost, args: &Args) -> Done {
    let name = args.opt_string("name")?;
    Ok(json!(h.snapshot(name)?))
}

/// `rollback(name)`.
pub(crate) fn rollback(h: &mut AgentHost, args: &Args) -> Done {
    let to = args.string("name")?;
    Ok(json!(h.rollback(&to)?))
}

/// `delegate(peer, task)`.
pub(crate) fn delegate(h: &mut AgentHost, args: &Args) -> Done {
    let peer = args.string("peer")?;
    let task = args.string("task")?;
    Ok(json!(h.delegate(&peer, &task)?))
}

/// `submit_result(summary, changed_files)`: the agent's end.
pub(crate) fn submit_result(h: &mut AgentHost, args: &Args) -> Done {
    let summary = args.string("summary")?;
    let files = args.string_list("changed_files")?;
    h.submitted = Some((summary, files));
    Ok(json!(true))
}
