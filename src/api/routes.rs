//! The API's routes. Reads come from the store; every change is a message
//! to the core, run exactly as if the editor had sent it (so an open Neovim
//! sees it happen), and answered with what the core announced.

use std::sync::Arc;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::backend::{new_id, take_snapshot, task_file, Answer, ApiError, OptionalBody, Shared};
use crate::diff::HunkRef;
use crate::event::{AgentView, Event};
use crate::port::{self, Command, EffectsSince, FileView, Told};
use crate::store::AgentState;
use crate::task::TaskSpec;

/// Every route of the API.
pub fn router(backend: Shared) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/tasks", post(task))
        .route("/agents", get(agents))
        .route("/agents/{id}", get(agent))
        .route("/agents/{id}/cancel", post(cancel))
        .route("/agents/{id}/calls", get(calls))
        .route("/questions/{id}", post(question))
        .route("/proposal/{id}/approve", post(approve))
        .route("/proposal/{id}/reject", post(reject))
        .route("/snapshots", get(snapshots).post(snapshot))
        .route("/branches", get(branches).post(branch))
        .route("/rollback/{id}", post(rollback))
        .route("/snapshots/{id}/fork", post(fork))
        .route("/effects", get(effects))
        .route("/events/stream", get(super::stream::all))
        .route("/events/stream/{id}", get(super::stream::one))
        .route("/nodes", get(super::nodes::files))
        .route("/nodes/{*file_path}", get(super::nodes::in_file))
        .route("/node/{id}", get(super::nodes::one))
        .route("/node/{id}/events", get(super::nodes::events))
        .route("/node/{id}/chat", post(super::nodes::chat))
        .route("/remora/enable", post(remora_enable))
        .route("/a2a", post(super::a2a::rpc))
        .route("/sessions", post(super::sessions::open))
        .route("/sessions/{id}/call", post(super::sessions::call))
        .route(
            "/sessions/{id}",
            axum::routing::delete(super::sessions::close),
        )
        .fallback(|| async {
            ApiError::not_found("no such route; `:help chimera-http` lists them")
        })
        .layer(axum::middleware::map_response(json_errors))
        .layer(axum::middleware::from_fn(announced_size))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT as usize))
        .layer(axum::Extension(Arc::new(
            super::sessions::Sessions::default(),
        )))
        .with_state(backend)
}

use super::client::BODY_LIMIT;

/// Refuses a body announced larger than [`BODY_LIMIT`] before reading any
/// of it (a client still sending it would otherwise see the socket close
/// under it); one sent without its length meets the same limit as it is
/// read.
async fn announced_size(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let announced = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match announced {
        Some(n) if n > BODY_LIMIT => ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is {n} bytes; at most {BODY_LIMIT} are taken"),
        )
        .into_response(),
        _ => next.run(req).await,
    }
}

/// Longest error text kept from a refusal that was not JSON.
const ERROR_TEXT: usize = 4096;

/// Answers every refusal in JSON, those of the framework too (a body that
/// is not JSON, too large, missing a field) — clients parse one shape.
async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let bytes = axum::body::to_bytes(resp.into_body(), ERROR_TEXT)
        .await
        .unwrap_or_default();
    let mut text = String::from_utf8_lossy(&bytes).trim().to_owned();
    if text.is_empty() {
        text = status.canonical_reason().unwrap_or("error").to_owned();
    }
    ApiError(status, text).into_response()
}

async fn status(State(b): State<Shared>) -> Answer {
    Ok(Json(json!({
        "root": b.root().to_string_lossy(),
        "pid": std::process::id(),
        "version": crate::VERSION,
        // Effect and audit records that could not be written (the work
        // they record went on): a gap in the logs is said, not hidden.
        "unrecorded": b.ask(port::Query::Unrecorded)?,
        "api_port": super::http::read_info(b.root())
            .filter(|i| i.pid == std::process::id())
            .map(|i| i.port),
    })))
}

/// `POST /tasks`: a [`TaskSpec`] (`line` from 1; `agent` names an ACP agent).
async fn task(State(b): State<Shared>, Json(mut spec): Json<TaskSpec>) -> Answer {
    spec.check().map_err(|e| ApiError::bad(e.to_string()))?;
    if let Some(f) = spec.file.take() {
        spec.file = Some(task_file(&b, &f).map_err(|e| ApiError::bad(format!("--file {f}: {e}")))?);
    }
    let id = new_id(8);
    let told = b
        .call(Command::Spawn {
            id: id.clone(),
            spec,
        })
        .await;
    if let Some(refused) = told.refused {
        return Err(refused.into());
    }
    Ok(Json(json!({ "id": id })))
}

async fn agents(State(b): State<Shared>) -> Answer {
    Ok(Json(json!(b.ask(port::Query::Agents)?)))
}

async fn agent(State(b): State<Shared>, UrlPath(id): UrlPath<String>) -> Answer {
    let rec = super::backend::agent(&b, &id)?;
    let port::Reply::Proposal { files, bases, diff } = b.ask(port::Query::Proposal { id })? else {
        return Err(ApiError::internal(super::backend::MISMATCH));
    };
    // Each hunk with its number (what `hunk` in an accept or reject names).
    let proposal: Vec<FileView> = (0..files.len())
        .filter_map(|i| Some(FileView::of(&files, i)?.with_context(&bases[i])))
        .collect();
    Ok(Json(json!({
        "agent": AgentView::from(&rec),
        "proposal": proposal,
        "diff": diff,
    })))
}

/// The agent's record as the core left it after `told`.
fn after(b: &Shared, id: &str, told: &Told) -> Answer {
    if let Some(r) = &told.refused {
        return Err(r.clone().into());
    }
    let rec = super::backend::agent(b, id)?;
    Ok(Json(json!({ "agent": AgentView::from(&rec) })))
}

#[derive(Debug, Deserialize)]
struct QuestionAnswer {
    allow: bool,
}

/// `POST /questions/{id}` `{"allow": true|false}`: answers the permission
/// question of a `permission` event; the first answer of any client
/// counts, a later one (or one after the question's two minutes) changes
/// nothing.
async fn question(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<u64>,
    Json(req): Json<QuestionAnswer>,
) -> Answer {
    b.call(Command::Answer {
        question: id,
        allow: req.allow,
    })
    .await;
    Ok(Json(json!({ "id": id, "allow": req.allow })))
}

async fn cancel(State(b): State<Shared>, UrlPath(id): UrlPath<String>) -> Answer {
    super::backend::agent(&b, &id)?;
    let told = b.call(Command::Cancel { id: id.clone() }).await;
    after(&b, &id, &told)
}

#[derive(Debug, Default, Deserialize)]
struct Verdict {
    /// One hunk (from 1, in file order across the proposal).
    hunk: Option<usize>,
    feedback: Option<String>,
    /// An accept into an editor's open buffer is written there too.
    #[serde(default)]
    write: bool,
}

fn hunk_ref(n: Option<usize>) -> Result<Option<HunkRef>, ApiError> {
    match n {
        None => Ok(None),
        Some(0) => Err(ApiError::bad("hunks are numbered from 1")),
        Some(n) => Ok(Some(HunkRef::Number(n))),
    }
}

async fn approve(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    OptionalBody(body): OptionalBody<Verdict>,
) -> Answer {
    let v = body.unwrap_or_default();
    let rec = super::backend::agent(&b, &id)?;
    if rec.state != AgentState::Completed {
        return Err(ApiError::conflict(format!(
            "agent {id} has no proposal to accept (it is {})",
            rec.state.as_str()
        )));
    }
    let hunk = hunk_ref(v.hunk)?;
    let told = b
        .call(Command::Accept {
            id: id.clone(),
            buffers: Vec::new(),
            hunk,
            write: v.write,
        })
        .await;
    let files = told.events.iter().find_map(|m| match m {
        Event::Resolved {
            id: of,
            accepted: true,
            files,
            unsaved,
            ..
        } if *of == id => Some((files.clone(), unsaved.clone())),
        _ => None,
    });
    match files {
        Some((files, unsaved)) => {
            let rec = super::backend::agent(&b, &id)?;
            Ok(Json(json!({
                "agent": AgentView::from(&rec),
                "files": files,
                "unsaved": unsaved,
            })))
        }
        None => Err(told.refused.map(ApiError::from).unwrap_or_else(|| {
            ApiError::conflict(format!("agent {id}'s proposal was not accepted"))
        })),
    }
}

async fn reject(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    OptionalBody(body): OptionalBody<Verdict>,
) -> Answer {
    let v = body.unwrap_or_default();
    super::backend::agent(&b, &id)?;
    let msg = match hunk_ref(v.hunk)? {
        Some(hunk) => Command::RejectHunk {
            id: id.clone(),
            hunk,
        },
        None => Command::Reject {
            id: id.clone(),
            feedback: v.feedback.filter(|f| !f.trim().is_empty()),
        },
    };
    let told = b.call(msg).await;
    after(&b, &id, &told)
}

async fn snapshots(State(b): State<Shared>) -> Answer {
    Ok(Json(json!(b.ask(port::Query::Snapshots)?)))
}

async fn branches(State(b): State<Shared>) -> Answer {
    Ok(Json(json!(b.ask(port::Query::Branches)?)))
}

#[derive(Debug, Deserialize)]
struct BranchRequest {
    name: String,
    /// A snapshot ID or branch; default: the newest snapshot.
    snapshot: Option<String>,
}

/// `POST /branches`: names a snapshot line — creates branch `name` at
/// `snapshot`, or moves it there.
async fn branch(State(b): State<Shared>, Json(req): Json<BranchRequest>) -> Answer {
    let told = b
        .call(Command::Branch {
            name: Some(req.name.clone()),
            snapshot: req.snapshot,
        })
        .await;
    if let Some(refused) = told.refused {
        return Err(refused.into());
    }
    let port::Reply::Branches(all) = b.ask(port::Query::Branches)? else {
        return Err(ApiError::internal(
            "the branches came back as something else",
        ));
    };
    let set = all.into_iter().find(|set| set.name == req.name);
    Ok(Json(json!(set)))
}

#[derive(Debug, Default, Deserialize)]
struct SnapshotRequest {
    message: Option<String>,
}

async fn snapshot(
    State(b): State<Shared>,
    OptionalBody(body): OptionalBody<SnapshotRequest>,
) -> Answer {
    let message = body.and_then(|r| r.message).unwrap_or_default();
    let id = take_snapshot(&b, message).await?;
    Ok(Json(json!({ "id": id })))
}

#[derive(Debug, Default, Deserialize)]
struct RollbackQuery {
    dry_run: Option<String>,
}

async fn rollback(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<RollbackQuery>,
) -> Answer {
    let dry_run = q
        .dry_run
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | ""));
    let told = b
        .call(Command::Rollback {
            id: id.clone(),
            dry_run,
            buffers: Vec::new(),
        })
        .await;
    let report = told.events.iter().find_map(|m| match m {
        Event::Rollback { ok, report, .. } => Some((*ok, report.clone())),
        _ => None,
    });
    match report {
        Some((true, message)) => Ok(Json(
            json!({ "id": id, "dry_run": dry_run, "message": message }),
        )),
        Some((false, message)) => Err(ApiError::conflict(message)),
        None => Err(told
            .refused
            .map(ApiError::from)
            .unwrap_or_else(|| ApiError::internal(format!("rollback to {id} said nothing")))),
    }
}

#[derive(Debug, Default, Deserialize)]
struct EffectsQuery {
    /// A sequence number or a snapshot ID.
    since: Option<String>,
    kind: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CallsQuery {
    since: Option<i64>,
}

/// `GET /agents/{id}/calls`: the agent's audit log, oldest first.
async fn calls(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<CallsQuery>,
) -> Answer {
    let calls = b.ask(port::Query::Calls {
        agent: id,
        since: q.since.unwrap_or(0),
    })?;
    Ok(Json(json!(calls)))
}

async fn effects(State(b): State<Shared>, Query(q): Query<EffectsQuery>) -> Answer {
    let since = match q.since.as_deref() {
        None | Some("") => EffectsSince::Seq(0),
        Some(s) => match s.parse::<i64>() {
            Ok(seq) => EffectsSince::Seq(seq),
            Err(_) => EffectsSince::Snapshot(s.to_owned()),
        },
    };
    let effects = b.ask(port::Query::Effects {
        since,
        kind: q.kind,
    })?;
    Ok(Json(json!(effects)))
}

#[derive(Debug, Deserialize)]
struct ForkRequest {
    task: String,
}

/// `POST /snapshots/{id}/fork`: a new agent on `task`, working on the
/// project as it was in snapshot `id`.
async fn fork(
    State(b): State<Shared>,
    UrlPath(snapshot): UrlPath<String>,
    Json(req): Json<ForkRequest>,
) -> Answer {
    if req.task.trim().is_empty() {
        return Err(ApiError::bad(
            "the task is empty; say what the agent should do",
        ));
    }
    let id = new_id(8);
    let told = b
        .call(Command::Fork {
            id: id.clone(),
            snapshot,
            task: req.task,
        })
        .await;
    if let Some(refused) = told.refused {
        return Err(refused.into());
    }
    Ok(Json(json!({ "id": id })))
}

/// `POST /remora/enable`: index the project and write node IDs (as
/// `:Chimera remora enable` does, already confirmed).
async fn remora_enable(State(b): State<Shared>) -> Answer {
    if b.index().is_none() {
        return Err(ApiError::conflict(
            "Remora needs `remora.index = true` in the options (setup{} or .chimera/config.json)",
        ));
    }
    b.call(Command::RemoraEnable { confirmed: true }).await;
    Ok(Json(json!({ "enabled": true })))
}
