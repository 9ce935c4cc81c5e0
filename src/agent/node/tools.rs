//! A Remora node agent's own tools — rewrite itself, add a sibling, read
//! another node, list its callers and callees, message a node or its
//! parent — the tool table's `Runs::Node` rows.

use serde_json::{json, Value as Json};

use super::edit::{clean_source, write_ghost};
use super::{node_source, propose_new_node as new_node, rewrite_self as rewritten, NodeJob};
use crate::agent::tools::files::{Args, ToolError};
use crate::lang;
use crate::paths::ProjectPath;
use crate::remora::{Node, NodeStatus, NodeType};
use crate::sandbox::HostError;
use crate::workspace::Workspace;

type Done = Result<Json, ToolError>;

/// A node as its agent is told of it.
fn node_json(n: &Node) -> Json {
    json!({
        "id": n.id,
        "node_type": n.node_type.as_str(),
        "name": n.name,
        "file_path": n.file_path,
        "start_line": n.start_line,
        "end_line": n.end_line,
    })
}

/// The file `path` and its text, as the agent may write it (`tool`'s
/// refusal otherwise).
fn writable(
    ws: &Workspace<'_>,
    tool: &'static str,
    path: &str,
) -> Result<(ProjectPath, String), ToolError> {
    let refused = |error| ToolError::Files { tool, error };
    let p = ws.path(path).map_err(refused)?;
    ws.may_write(&p).map_err(refused)?;
    let text = ws.read_text(&p).map_err(refused)?;
    Ok((p, text))
}

/// `rewrite_self(new_source)`: exactly this node, its ID kept; code that
/// defines a neighbour instead goes to it as a request.
pub(crate) fn rewrite_self(job: &NodeJob, ws: &Workspace<'_>, args: &Args) -> Done {
    let me = job.me()?;
    let src = args.string("new_source")?;
    let (p, text) = writable(ws, "rewrite_self", &me.file_path)?;
    let written = if me.status == NodeStatus::Ghost {
        let language = lang::of_file(&me.file_path);
        let src = clean_source(language, &src);
        write_ghost(
            &text,
            me,
            Some(&job.bus),
            job.view.insert_after.as_ref(),
            &src,
        )
    } else {
        rewritten(&text, me, &src)
    };
    let new = match written {
        Ok(new) => new,
        Err(e) => {
            let sent = job.redirect("", &src).unwrap_or(Err(e.into()))?;
            return Ok(json!(sent));
        }
    };
    ws.write(&p, new.as_bytes())
        .map_err(|error| ToolError::Files {
            tool: "rewrite_self",
            error,
        })?;
    Ok(json!(format!(
        "proposed a rewrite of {} for the human to review",
        me.id
    )))
}

/// `propose_new_node(node_type, name, source, insert_after?)`: a sibling
/// of this node, written into its parent.
pub(crate) fn propose_new_node(job: &NodeJob, ws: &Workspace<'_>, args: &Args) -> Done {
    const TOOL: &str = "propose_new_node";
    let me = job.me()?;
    // The parent is in this node's file.
    let (p, text) = writable(ws, TOOL, &me.file_path)?;
    let kind = args.string("node_type")?;
    let new_name = args.string("name")?;
    let src = args.string("source")?;
    let after = args.opt_string("insert_after")?;
    let node_type = match kind.as_str() {
        "function" => NodeType::Function,
        "method" => NodeType::Method,
        "class" => NodeType::Class,
        other => {
            return Err(ToolError::Args(format!(
                "{TOOL}(): node_type must be \"function\", \"method\" or \"class\", not {other:?}"
            )))
        }
    };
    let parent = match &me.parent_id {
        Some(pid) => job
            .bus
            .node(pid)
            .ok_or_else(|| HostError::from(format!("{TOOL}(): parent {pid} is gone")))?,
        None => return Err(HostError::from(format!("{TOOL}(): a file node has no parent")).into()),
    };
    let after =
        match after {
            Some(id) => Some(job.bus.node(&id).ok_or_else(|| {
                HostError::from(format!("{TOOL}(): no node {id} to insert after"))
            })?),
            None => None,
        };
    let new = new_node(&text, &parent, after.as_ref(), node_type, &new_name, &src)
        .map_err(HostError::from)?;
    ws.write(&p, new.as_bytes())
        .map_err(|error| ToolError::Files { tool: TOOL, error })?;
    Ok(json!(format!(
        "proposed a new {kind} `{new_name}` in {}",
        parent.id
    )))
}

/// `read_node(target_id)`: another node's source.
pub(crate) fn read_node(job: &NodeJob, ws: &Workspace<'_>, args: &Args) -> Done {
    let id = job.resolve_target(&args.string("target_id")?)?;
    let n = job
        .bus
        .node(&id)
        .ok_or_else(|| HostError::from(format!("read_node(): no node {id}")))?;
    let refused = |error| ToolError::Files {
        tool: "read_node",
        error,
    };
    let p = ws.path(&n.file_path).map_err(refused)?;
    let text = ws.read_text(&p).map_err(refused)?;
    let source = node_source(&text, &n).ok_or_else(|| {
        HostError::Failed(format!("read_node(): {id} is no longer in {}", n.file_path))
    })?;
    Ok(json!(source))
}

/// `get_my_callers()`.
pub(crate) fn get_my_callers(job: &NodeJob, _: &Workspace<'_>, _: &Args) -> Done {
    Ok(Json::Array(
        job.view.callers.iter().map(node_json).collect(),
    ))
}

/// `get_my_callees()`.
pub(crate) fn get_my_callees(job: &NodeJob, _: &Workspace<'_>, _: &Args) -> Done {
    Ok(Json::Array(
        job.view.callees.iter().map(node_json).collect(),
    ))
}

/// `message_node(target_id, request)`: a question is answered at once, a
/// request wakes the node's agent.
pub(crate) fn message_node(job: &NodeJob, ws: &Workspace<'_>, args: &Args) -> Done {
    let me = job.me()?;
    let to = job.resolve_target(&args.string("target_id")?)?;
    let request = args.string("request")?;
    Ok(json!(job.send(
        ws.overlay().agent(),
        &me.id,
        &to,
        &request
    )?))
}

/// `ask_parent(request)`: `message_node` to this node's parent.
pub(crate) fn ask_parent(job: &NodeJob, ws: &Workspace<'_>, args: &Args) -> Done {
    let me = job.me()?;
    let request = args.string("request")?;
    let parent = me
        .parent_id
        .as_deref()
        .ok_or_else(|| HostError::from("ask_parent(): a file node has no parent"))?;
    Ok(json!(job.send(
        ws.overlay().agent(),
        &me.id,
        parent,
        &request
    )?))
}
