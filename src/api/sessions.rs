//! MCP hosts' sessions with the core (`chimera mcp serve`, `/mcp`): a
//! session reads the project as the human sees it and writes into an
//! overlay of its own — a Chimera agent, `running` from its first write —
//! which `propose` turns into a proposal the human reviews like any other;
//! the next write starts a new one. Every call is gated by the preset the
//! session was opened with and is an `mcp` effect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Extension, Path as UrlPath, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::backend::{new_id, Answer, ApiError, Shared};
use crate::agent::tools::files::{Args, FileHost, Handler, ToolError};
use crate::agent::tools::table::{self, Runs, Tool};
use crate::capabilities::{Capabilities, Denied};
use crate::event::AgentView;
use crate::paths::ProjectPath;
use crate::port::{Command, Query, Reply};
use crate::sandbox::HostError;
use crate::store::AgentState;
use crate::workspace::{ReadFrom, Workspace, WorkspaceError};

/// The open sessions of one core.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
}

#[derive(Clone)]
struct Session {
    /// The MCP host's name.
    client: String,
    caps: Capabilities,
    /// The agent this session writes into, once it wrote.
    agent: Option<String>,
    /// Which of the human's text each file was when the host last read it.
    read: ReadFrom,
}

impl Sessions {
    fn get(&self, id: &str) -> Result<Session, ApiError> {
        self.open
            .lock()
            .map_err(|_| ApiError::internal("the sessions' lock is poisoned"))?
            .get(id)
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found(format!(
                    "no MCP session {id} (it ended, or its core restarted); open a new one"
                ))
            })
    }

    fn note_read(&self, id: &str, read: ReadFrom) {
        if let Ok(mut open) = self.open.lock() {
            if let Some(s) = open.get_mut(id) {
                s.read.merge(read);
            }
        }
    }

    fn set_agent(&self, id: &str, agent: Option<String>) {
        if let Ok(mut open) = self.open.lock() {
            if let Some(s) = open.get_mut(id) {
                s.agent = agent;
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct OpenRequest {
    /// The host's name (from MCP's `initialize`).
    client: String,
    /// `readonly`, `sandbox` or `developer`; default: `capabilities.preset`.
    preset: Option<String>,
}

/// `POST /sessions`: a new session under `preset`.
pub(super) async fn open(
    State(b): State<Shared>,
    Extension(sessions): Extension<Arc<Sessions>>,
    Json(req): Json<OpenRequest>,
) -> Answer {
    let config = b.config().ok_or_else(|| {
        ApiError::conflict("no core serves this project; `chimera mcp serve` starts one")
    })?;
    let caps = Capabilities::new(&config.capabilities, req.preset.as_deref())
        .map_err(|e| ApiError::bad(e.to_string()))?
        .on_disk(b.root().to_path_buf());
    // The host reads next: a core that is still importing the project
    // would tell it that the files are not there.
    b.settled().await;
    let client = clean_name(&req.client);
    let id = new_id(12);
    let preset = caps.preset.clone();
    sessions
        .open
        .lock()
        .map_err(|_| ApiError::internal("the sessions' lock is poisoned"))?
        .insert(
            id.clone(),
            Session {
                client: client.clone(),
                caps,
                agent: None,
                read: ReadFrom::default(),
            },
        );
    b.store().effect_record(
        "mcp",
        None,
        &format!("{client} opened an MCP session ({preset})"),
        "ok",
        0,
    );
    Ok(Json(json!({ "session": id, "preset": preset })))
}

/// A host's name as shown in the agents list: printable, one line, short.
fn clean_name(name: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ' '))
        .take(40)
        .collect();
    match name.trim() {
        "" => "mcp-host".into(),
        n => n.to_owned(),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct CallRequest {
    tool: String,
    #[serde(default)]
    args: Map<String, Value>,
    /// The bridge refused the call itself (it was too large to send) and
    /// says so, with the arguments in [`brief`]: only recorded.
    #[serde(default)]
    refused: Option<String>,
}

/// `POST /sessions/{id}/call`: one tool call of the session; its result,
/// or an error that says what to do.
pub(super) async fn call(
    State(b): State<Shared>,
    Extension(sessions): Extension<Arc<Sessions>>,
    UrlPath(id): UrlPath<String>,
    Json(req): Json<CallRequest>,
) -> Answer {
    let session = sessions.get(&id)?;
    let started = Instant::now();
    let call = Call {
        b: &b,
        sessions: &sessions,
        id: &id,
        session: &session,
        args: &req.args,
    };
    let result = match &req.refused {
        Some(why) => Err(ApiError::bad(why.clone())),
        None => call.run(&req.tool).await,
    };
    let output = match &result {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!("refused: {}", e.1),
    };
    let agent = sessions
        .get(&id)
        .ok()
        .and_then(|s| s.agent)
        .or(session.agent);
    b.store().effect_record(
        "mcp",
        agent.as_deref(),
        &format!(
            "{} called {} {}",
            session.client,
            req.tool,
            crate::brief::brief(&req.args)
        ),
        &output,
        started.elapsed().as_millis() as i64,
    );
    result.map(|v| Json(json!({ "result": v })))
}

/// `DELETE /sessions/{id}`: the host went away; what it wrote and did not
/// propose is dropped, said on its agent.
pub(super) async fn close(
    State(b): State<Shared>,
    Extension(sessions): Extension<Arc<Sessions>>,
    UrlPath(id): UrlPath<String>,
) -> Answer {
    let session = sessions
        .open
        .lock()
        .map_err(|_| ApiError::internal("the sessions' lock is poisoned"))?
        .remove(&id);
    let Some(session) = session else {
        return Err(ApiError::not_found(format!("no MCP session {id}")));
    };
    if let Some(agent) = &session.agent {
        if super::backend::agent(&b, agent).is_ok_and(|r| r.state == AgentState::Running) {
            b.call(Command::SessionEnd {
                id: agent.clone(),
                reason: format!(
                    "the MCP session of {} ended before it proposed; what it wrote was dropped",
                    session.client
                ),
            })
            .await;
        }
    }
    Ok(Json(json!({ "closed": id })))
}

/// One tool call, with what it needs.
struct Call<'a> {
    b: &'a Shared,
    sessions: &'a Sessions,
    id: &'a str,
    session: &'a Session,
    args: &'a Map<String, Value>,
}

fn denied(d: Denied) -> ApiError {
    ApiError(StatusCode::FORBIDDEN, d.to_string())
}

/// A file operation's failure as an HTTP status.
fn refused(e: WorkspaceError) -> ApiError {
    let status = match &e {
        WorkspaceError::Denied(_) => StatusCode::FORBIDDEN,
        WorkspaceError::NotFound(_) => StatusCode::NOT_FOUND,
        WorkspaceError::Invalid(_) | WorkspaceError::TooLarge(_) | WorkspaceError::NotText(_) => {
            StatusCode::BAD_REQUEST
        }
        WorkspaceError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError(status, e.to_string())
}

/// A file tool's failure as an HTTP status.
fn tool_refused(e: ToolError) -> ApiError {
    match e {
        ToolError::Files { tool, error } => {
            let ApiError(status, said) = refused(error);
            ApiError(status, format!("{tool}(): {said}"))
        }
        ToolError::Code { said, .. } => ApiError(StatusCode::UNPROCESSABLE_ENTITY, said),
        ToolError::Host(HostError::Denied(said)) => ApiError(StatusCode::FORBIDDEN, said),
        ToolError::Args(said) | ToolError::Host(HostError::Failed(said)) => ApiError::bad(said),
    }
}

/// An MCP session as the file tools' host.
struct SessionFiles<'s> {
    store: &'s crate::store::Store,
    agent: &'s str,
    caps: &'s Capabilities,
    max_bytes: u64,
    read: ReadFrom,
    /// The file the call wrote or deleted.
    wrote: Option<ProjectPath>,
}

impl FileHost for SessionFiles<'_> {
    fn files(&mut self) -> (Workspace<'_>, &mut ReadFrom) {
        let ws = Workspace::new(self.store, self.agent, self.caps, self.max_bytes);
        (ws, &mut self.read)
    }

    fn wrote(&mut self, p: &ProjectPath) {
        self.wrote = Some(p.clone());
    }
}

impl Call<'_> {
    async fn run(&self, tool: &str) -> Result<Value, ApiError> {
        let Some(t) = table::for_mcp_named(tool) else {
            return Err(ApiError::not_found(format!(
                "no tool `{tool}`; tools/list names them"
            )));
        };
        match t.runs {
            Runs::Reads(run) => self.read(t, run),
            Runs::Writes(run) => self.write(t, run).await,
            // No agent's or node's own tool is offered to MCP hosts (the
            // table's tests).
            Runs::Host | Runs::Agent(_) | Runs::Node(_) => self.own(tool).await,
        }
    }

    /// The session's own tools: its proposals, the project's nodes and
    /// snapshots.
    async fn own(&self, tool: &str) -> Result<Value, ApiError> {
        match tool {
            "propose" => self.propose().await,
            "proposal_status" => self.proposal_status(),
            "nodes" => self.nodes().await,
            "node" | "callers" | "callees" => self.node(tool).await,
            "snapshot" => self.snapshot().await,
            "history" => Ok(json!(self.b.ask(Query::Snapshots)?)),
            other => Err(ApiError::internal(format!(
                "tool `{other}` is offered to MCP hosts but the session does not run it"
            ))),
        }
    }

    fn string(&self, name: &str) -> Result<String, ApiError> {
        match self.args.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(ApiError::bad(format!("`{name}` must be a string"))),
            None => Err(ApiError::bad(format!("`{name}` is missing"))),
        }
    }

    fn opt_string(&self, name: &str) -> Result<Option<String>, ApiError> {
        match self.args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.string(name).map(Some),
        }
    }

    fn max_bytes(&self) -> u64 {
        self.b.config().map_or(0, |c| c.sync.max_file_bytes)
    }

    /// The session's files: its agent's overlay over the human's text (an
    /// agent ID with nothing in it reads the human's text alone), behind
    /// its capabilities.
    fn with_workspace<R>(&self, agent: Option<&str>, f: impl FnOnce(&Workspace<'_>) -> R) -> R {
        let agent = agent.or(self.session.agent.as_deref()).unwrap_or("");
        f(&Workspace::new(
            self.b.store(),
            agent,
            &self.session.caps,
            self.max_bytes(),
        ))
    }

    /// The session's files as a file tool's host: its agent's (or
    /// `agent`'s) overlay over the human's text.
    fn files<'s>(&'s self, agent: Option<&'s str>, read: ReadFrom) -> SessionFiles<'s> {
        SessionFiles {
            store: self.b.store(),
            agent: agent.or(self.session.agent.as_deref()).unwrap_or(""),
            caps: &self.session.caps,
            max_bytes: self.max_bytes(),
            read,
            wrote: None,
        }
    }

    /// A file tool that reads; what it read is noted for the writes after.
    fn read(&self, tool: &'static Tool, run: Handler) -> Result<Value, ApiError> {
        let mut files = self.files(None, ReadFrom::default());
        let result = run(&mut files, &Args::named(tool.name, self.args.clone()));
        self.sessions.note_read(self.id, files.read);
        result.map_err(tool_refused)
    }

    /// A file tool that writes, into the session's proposal (opened by
    /// the first write, once the path is known to be writable).
    async fn write(&self, tool: &'static Tool, run: Handler) -> Result<Value, ApiError> {
        let args = Args::named(tool.name, self.args.clone());
        let raw = args.string("path").map_err(tool_refused)?;
        self.with_workspace(None, |ws| ws.path(&raw).and_then(|p| ws.may_write(&p)))
            .map_err(refused)?;
        let agent = self.writer().await?;
        let mut files = self.files(Some(&agent), self.session.read.clone());
        run(&mut files, &args).map_err(tool_refused)?;
        let Some(p) = files.wrote.take() else {
            return Ok(json!({ "agent": agent }));
        };
        let there = files.files().0.exists(&p).unwrap_or(true);
        let done = if there { "written" } else { "deleted" };
        Ok(json!({ done: p.as_str(), "agent": agent }))
    }

    /// The agent this session writes into, recorded `running` at its
    /// first write; a new one when the last was proposed, or cancelled by
    /// the human (said once, as the error of that write).
    async fn writer(&self) -> Result<String, ApiError> {
        if let Some(agent) = &self.session.agent {
            match super::backend::agent(self.b, agent) {
                Ok(r) if r.state == AgentState::Running => return Ok(agent.clone()),
                Ok(r) => {
                    self.sessions.set_agent(self.id, None);
                    return Err(ApiError::conflict(format!(
                        "your work in agent {agent} is {} (the human's choice); nothing was written — write again to start a new proposal",
                        r.state.as_str()
                    )));
                }
                Err(_) => self.sessions.set_agent(self.id, None),
            }
        }
        let agent = new_id(8);
        let told = self
            .b
            .call(Command::SessionStart {
                id: agent.clone(),
                task: format!("{} over MCP", self.session.client),
                client: self.session.client.clone(),
                capabilities: self.session.caps.preset.clone(),
            })
            .await;
        if let Some(r) = told.refused {
            return Err(r.into());
        }
        self.sessions.set_agent(self.id, Some(agent.clone()));
        Ok(agent)
    }

    async fn propose(&self) -> Result<Value, ApiError> {
        let summary = self
            .opt_string("summary")?
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| format!("changes from {}", self.session.client));
        let Some(agent) = self.session.agent.clone() else {
            return Err(ApiError::conflict(
                "nothing to propose: write or delete files first",
            ));
        };
        let rec = super::backend::agent(self.b, &agent)?;
        if rec.state != AgentState::Running {
            self.sessions.set_agent(self.id, None);
            return Err(ApiError::conflict(format!(
                "agent {agent} is {} (the human's choice); write again to start a new proposal",
                rec.state.as_str()
            )));
        }
        let told = self
            .b
            .call(Command::SessionPropose {
                id: agent.clone(),
                summary,
            })
            .await;
        if let Some(r) = told.refused {
            return Err(r.into());
        }
        self.sessions.set_agent(self.id, None);
        self.status_of(&agent)
    }

    fn proposal_status(&self) -> Result<Value, ApiError> {
        let id = self.string("id")?;
        self.status_of(&id)
    }

    /// An agent's state and, while it is a proposal, its diff.
    fn status_of(&self, id: &str) -> Result<Value, ApiError> {
        let rec = super::backend::agent(self.b, id)
            .map_err(|_| ApiError::not_found(format!("no proposal {id}")))?;
        let diff = match rec.state {
            AgentState::Completed => match self.b.ask(Query::Proposal { id: id.to_owned() })? {
                Reply::Proposal { diff, .. } => diff,
                _ => return Err(ApiError::internal(super::backend::MISMATCH)),
            },
            _ => String::new(),
        };
        let view = AgentView::from(&rec);
        Ok(json!({
            "id": id,
            "state": view.state,
            "summary": rec.summary,
            "feedback": rec.feedback,
            "error": rec.error,
            "diff": diff,
        }))
    }

    async fn nodes(&self) -> Result<Value, ApiError> {
        let raw = self.string("path")?;
        let p = self
            .with_workspace(None, |ws| ws.path(&raw))
            .map_err(refused)?;
        self.session.caps.check_read(p.as_str()).map_err(denied)?;
        let ix = super::nodes::indexed(self.b).await?;
        let ix = ix.read();
        let t = ix.topology();
        if t.file(p.as_str()).is_none() {
            return Err(super::nodes::not_indexed(&p));
        }
        Ok(json!(t.nodes_in(p.as_str())))
    }

    /// `node` (with its source), `callers` or `callees` of node `id`.
    async fn node(&self, tool: &str) -> Result<Value, ApiError> {
        let id = self.string("id")?;
        let ix = super::nodes::indexed(self.b).await?;
        let (node, neighbours) = {
            let ix = ix.read();
            let t = ix.topology();
            let n = t
                .node(&id)
                .ok_or_else(|| {
                    ApiError::not_found(format!("no node {id}; `nodes` lists a file's"))
                })?
                .clone();
            let neighbours: Vec<_> = match tool {
                "callers" => t.callers(&id),
                "callees" => t.callees(&id),
                _ => Vec::new(),
            };
            (n, neighbours)
        };
        self.session
            .caps
            .check_read(&node.file_path)
            .map_err(denied)?;
        if tool != "node" {
            let caps = &self.session.caps;
            let seen: Vec<_> = neighbours
                .into_iter()
                .filter(|n| caps.may_see(&n.file_path))
                .collect();
            return Ok(json!(seen));
        }
        let source = self
            .with_workspace(None, |ws| {
                ws.path(&node.file_path).and_then(|p| ws.read_text(&p))
            })
            .ok()
            .and_then(|text| crate::agent::node::node_source(&text, &node));
        Ok(json!({ "node": node, "source": source }))
    }

    async fn snapshot(&self) -> Result<Value, ApiError> {
        if !self.session.caps.may_write_anything() {
            return Err(denied(Denied {
                preset: self.session.caps.preset.clone(),
                what: "this session may not take snapshots".into(),
            }));
        }
        let message = self.opt_string("message")?.unwrap_or_default();
        let id = super::backend::take_snapshot(self.b, message).await?;
        Ok(json!({ "id": id }))
    }
}
