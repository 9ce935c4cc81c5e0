//! A2A (Agent2Agent, protocol 0.3.0) on the API server: an agent card at
//! `/.well-known/agent-card.json` and JSON-RPC at `/a2a` — `message/send`
//! (a coding task becomes a Chimera agent; its artifact is the proposal's
//! diff and summary), `message/stream` (its status as server-sent events),
//! `tasks/get`, `tasks/cancel`. An A2A task is a Chimera agent and the same
//! ID; nothing a caller sends changes a file before the human accepts.

use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::backend::{new_id, Shared};
use crate::port::Command;
use crate::store::{AgentRecord, AgentState};

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "0.3.0";
/// How long a wait for the task's next change lasts at most: it is woken
/// by the core's feed, this only bounds a change the feed did not carry.
const RECHECK: Duration = Duration::from_secs(2);

/// Until the core announces something (or [`RECHECK`] passed).
async fn next_change(feed: &mut tokio::sync::watch::Receiver<u64>) {
    // A timeout is a normal wake: the caller rechecks the task either way.
    let _ = tokio::time::timeout(RECHECK, feed.changed()).await;
}

/// `GET /.well-known/agent-card.json`: who answers at `/a2a` and how to
/// authenticate. Public, as discovery is; it names no path of the project.
pub(super) async fn card(headers: HeaderMap) -> Json<Value> {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    Json(json!({
        "protocolVersion": PROTOCOL_VERSION,
        "name": "Chimera",
        "description": "Coding agents that propose changes to this project without touching it: a task becomes a proposal (a diff) that the human reviews and accepts in their editor.",
        "url": format!("http://{host}/a2a"),
        "preferredTransport": "JSONRPC",
        "version": crate::VERSION,
        "capabilities": { "streaming": true, "pushNotifications": false, "stateTransitionHistory": false },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "text/x-diff"],
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "The token in the project's .chimera/api.json",
            }
        },
        "security": [{ "bearer": [] }],
        "skills": [{
            "id": "code-change",
            "name": "Change the code",
            "description": "Make a change described in words (fix, add, refactor); the result is a proposal with its diff, applied only when the human accepts it.",
            "tags": ["code", "refactor", "fix"],
            "examples": ["fix add in calc.py so it adds", "add a docstring to parse_config"],
            "inputModes": ["text/plain"],
            "outputModes": ["text/x-diff"],
        }],
    }))
}

/// A JSON-RPC error answer.
fn error(id: &Value, code: i64, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } })
}

fn answer(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// A2A's task-not-found and not-cancelable codes.
const TASK_NOT_FOUND: i64 = -32001;
const NOT_CANCELABLE: i64 = -32002;

/// `POST /a2a`: one JSON-RPC request.
pub(super) async fn rpc(State(b): State<Shared>, Json(req): Json<Value>) -> Response {
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let params = req.get("params").cloned().unwrap_or(Value::Null);
    match req["method"].as_str().unwrap_or_default() {
        "message/send" => Json(match send(&b, &params).await {
            Ok(agent) => {
                let blocking = params["configuration"]["blocking"].as_bool().unwrap_or(true);
                let rec = if blocking { settled(&b, &agent).await } else { super::backend::agent(&b, &agent).ok() };
                match rec {
                    Some(rec) => answer(&id, task(&b, &rec)),
                    None => error(&id, TASK_NOT_FOUND, format!("task {agent} is gone")),
                }
            }
            Err(e) => error(&id, -32602, e),
        })
        .into_response(),
        "message/stream" => match send(&b, &params).await {
            Ok(agent) => stream(b, id, agent).into_response(),
            Err(e) => Json(error(&id, -32602, e)).into_response(),
        },
        "tasks/get" => Json(match params["id"].as_str().and_then(|t| super::backend::agent(&b, t).ok()) {
            Some(rec) => answer(&id, task(&b, &rec)),
            None => error(&id, TASK_NOT_FOUND, "no such task"),
        })
        .into_response(),
        "tasks/cancel" => Json(cancel(&b, &id, &params).await).into_response(),
        "" => Json(error(&id, -32600, "not a JSON-RPC request: `method` is missing")).into_response(),
        other => Json(error(&id, -32601, format!("no method {other}; this agent speaks message/send, message/stream, tasks/get, tasks/cancel"))).into_response(),
    }
}

/// Starts the agent a `message/send` asks for; its ID.
async fn send(b: &Shared, params: &Value) -> Result<String, String> {
    let message = &params["message"];
    let text: Vec<&str> = message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["kind"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect();
    let text = text.join("\n");
    if text.trim().is_empty() {
        return Err("the message has no text part: say what to change".into());
    }
    // A follow-up names its task: the feedback goes to the same agent.
    if let Some(task_id) = message["taskId"].as_str() {
        let rec = super::backend::agent(b, task_id).map_err(|_| format!("no task {task_id}"))?;
        if rec.state != AgentState::Completed {
            return Err(format!(
                "task {task_id} is {}; only a proposal waiting for review takes a follow-up",
                rec.state.as_str()
            ));
        }
        b.call(Command::Reject {
            id: task_id.to_owned(),
            feedback: Some(text),
        })
        .await;
        return Ok(task_id.to_owned());
    }
    let file = message["metadata"]["file"]
        .as_str()
        .map(|f| super::backend::task_file(b, f))
        .transpose()?;
    let id = new_id(8);
    let told = b
        .call(Command::Spawn {
            id: id.clone(),
            spec: crate::task::TaskSpec {
                file,
                ..crate::task::TaskSpec::new(text)
            },
        })
        .await;
    if let Some(refused) = told.refused {
        return Err(refused.message);
    }
    b.store().effect_record(
        "a2a",
        Some(&id),
        "a task received over A2A (message/send)",
        "ok",
        0,
    );
    Ok(id)
}

/// The agent once it is no longer queued or running (a proposal, or an end).
async fn settled(b: &Shared, id: &str) -> Option<AgentRecord> {
    let mut feed = b.events().watch();
    loop {
        let rec = super::backend::agent(b, id).ok()?;
        if !rec.state.is_active() {
            return Some(rec);
        }
        next_change(&mut feed).await;
    }
}

/// A2A's name for an agent's state. A proposal waiting for the human is
/// `completed`: the agent's work is done, its artifact is the diff.
fn state(s: AgentState) -> &'static str {
    match s {
        AgentState::Queued => "submitted",
        AgentState::Running => "working",
        AgentState::Completed | AgentState::Accepted | AgentState::Settled => "completed",
        AgentState::Rejected => "rejected",
        AgentState::Failed => "failed",
        AgentState::Cancelled => "canceled",
    }
}

fn status(rec: &AgentRecord) -> Value {
    let said = match rec.state {
        AgentState::Completed => Some("A proposal waits for the human's review.".to_owned()),
        AgentState::Accepted => Some("The human accepted the change.".to_owned()),
        AgentState::Settled => Some(
            "Nothing is left to review: it changed nothing, or the human's text already holds its change."
                .to_owned(),
        ),
        AgentState::Rejected => Some("The human rejected the change.".to_owned()),
        AgentState::Failed => rec.error.clone(),
        _ => None,
    };
    let mut status = json!({ "state": state(rec.state) });
    if let Some(text) = said {
        status["message"] = json!({
            "kind": "message",
            "role": "agent",
            "messageId": format!("{}-{}", rec.id, rec.state.as_str()),
            "taskId": rec.id,
            "contextId": rec.id,
            "parts": [{ "kind": "text", "text": text }],
        });
    }
    status
}

/// The agent as an A2A task, with the proposal as its artifact.
fn task(b: &Shared, rec: &AgentRecord) -> Value {
    let mut task = json!({
        "kind": "task",
        "id": rec.id,
        "contextId": rec.id,
        "status": status(rec),
        "metadata": { "chimera": { "state": rec.state.as_str(), "files": rec.changed_files } },
    });
    if matches!(
        rec.state,
        AgentState::Completed | AgentState::Accepted | AgentState::Settled
    ) {
        let diff = match b.ask(crate::port::Query::Proposal { id: rec.id.clone() }) {
            Ok(crate::port::Reply::Proposal { diff, .. }) => diff,
            _ => String::new(),
        };
        task["artifacts"] = json!([{
            "artifactId": format!("{}-proposal", rec.id),
            "name": "proposal",
            "description": rec.summary.clone().unwrap_or_default(),
            "parts": [
                { "kind": "text", "text": rec.summary.clone().unwrap_or_default() },
                { "kind": "text", "text": diff, "metadata": { "mimeType": "text/x-diff" } },
            ],
        }]);
    }
    task
}

async fn cancel(b: &Shared, id: &Value, params: &Value) -> Value {
    let Some(rec) = params["id"]
        .as_str()
        .and_then(|t| super::backend::agent(b, t).ok())
    else {
        return error(id, TASK_NOT_FOUND, "no such task");
    };
    if !rec.state.is_active() {
        return error(
            id,
            NOT_CANCELABLE,
            format!(
                "task {} is {}; a proposal is the human's to accept or reject",
                rec.id,
                rec.state.as_str()
            ),
        );
    }
    b.call(Command::Cancel { id: rec.id.clone() }).await;
    b.store()
        .effect_record("a2a", Some(&rec.id), "tasks/cancel", "ok", 0);
    match super::backend::agent(b, &rec.id) {
        Ok(rec) => answer(id, task(b, &rec)),
        Err(_) => error(id, TASK_NOT_FOUND, "no such task"),
    }
}

/// `message/stream`: the task, then each status change, the last one
/// `final`, with the artifact before it.
fn stream(b: Shared, id: Value, agent: String) -> impl IntoResponse {
    let events = async_stream(move |tx| async move {
        let mut last: Option<AgentState> = None;
        let mut feed = b.events().watch();
        loop {
            let Ok(rec) = super::backend::agent(&b, &agent) else {
                return;
            };
            if tx.is_closed() {
                return; // the caller went away
            }
            if last.is_none() {
                // A task already settled is told whole, once.
                if tx.send(answer(&id, task(&b, &rec))).await.is_err() || !rec.state.is_active() {
                    return;
                }
            } else if last != Some(rec.state) {
                let done = !rec.state.is_active();
                if done
                    && matches!(
                        rec.state,
                        AgentState::Completed | AgentState::Accepted | AgentState::Settled
                    )
                {
                    let artifact = task(&b, &rec)["artifacts"][0].clone();
                    // The client closed the stream: nobody is left to read the artifact.
                    let _ = tx
                        .send(answer(&id, json!({ "kind": "artifact-update", "taskId": rec.id, "contextId": rec.id, "artifact": artifact, "lastChunk": true })))
                        .await;
                }
                let update = json!({ "kind": "status-update", "taskId": rec.id, "contextId": rec.id, "status": status(&rec), "final": done });
                if tx.send(answer(&id, update)).await.is_err() || done {
                    return;
                }
            }
            last = Some(rec.state);
            next_change(&mut feed).await;
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// A stream of `data:` events fed by `produce` through a channel.
fn async_stream<F, Fut>(
    produce: F,
) -> impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Value>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<Value>(16);
    tokio::spawn(produce(tx));
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|v| (Ok(Event::default().data(v.to_string())), rx))
    })
}
