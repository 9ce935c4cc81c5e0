//! Remora's routes (seed 001): the nodes of a file, one node with its
//! neighbours, its events, and a chat message to its agent.

use axum::extract::{Path as UrlPath, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::backend::{Answer, ApiError, Shared};
use crate::port::{self, Command};
use crate::remora::shared::SharedIndex;
use crate::remora::Node;

/// The Remora topology holding the whole project (see
/// [`super::Backend::indexed`]).
pub(super) async fn indexed(b: &Shared) -> Result<SharedIndex, ApiError> {
    b.indexed().await.ok_or_else(remora_off)
}

fn remora_off() -> ApiError {
    ApiError::conflict(
        "Remora is off for this project: set `remora.index = true` and run `chimera remora enable`",
    )
}

/// A neighbour, named well enough to show and follow.
fn brief(n: &Node) -> Value {
    json!({
        "id": n.id,
        "node_type": n.node_type,
        "name": n.name,
        "file_path": n.file_path,
        "start_line": n.start_line,
    })
}

/// `GET /nodes`: the indexed files and how many nodes each has, by path.
pub(super) async fn files(State(b): State<Shared>) -> Answer {
    let ix = indexed(&b).await?;
    let ix = ix.read();
    let t = ix.topology();
    let mut files: Vec<Value> = t
        .file_paths()
        .map(|p| json!({ "path": p, "nodes": t.nodes_in(p).len() }))
        .collect();
    files.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Ok(Json(json!(files)))
}

/// `GET /nodes/{file_path}`: the nodes of one project file, in order.
pub(super) async fn in_file(State(b): State<Shared>, UrlPath(path): UrlPath<String>) -> Answer {
    let p = crate::paths::ProjectPath::parse(&path).map_err(|e| ApiError::bad(e.to_string()))?;
    let ix = indexed(&b).await?;
    let ix = ix.read();
    let t = ix.topology();
    if t.file(p.as_str()).is_none() {
        return Err(not_indexed(&p));
    }
    let nodes: Vec<Value> = t
        .nodes_in(p.as_str())
        .into_iter()
        .map(|n| {
            json!({
                "node": n,
                "callers": t.callers(&n.id).len(),
                "callees": t.callees(&n.id).len(),
            })
        })
        .collect();
    Ok(Json(json!(nodes)))
}

/// `GET /node/{id}`: the node, its source as the human sees it, its
/// parent, callers and callees.
pub(super) async fn one(State(b): State<Shared>, UrlPath(id): UrlPath<String>) -> Answer {
    let ix = indexed(&b).await?;
    let (node, mut answer) = {
        let ix = ix.read();
        let t = ix.topology();
        let n = t.node(&id).ok_or_else(|| no_node(&id))?;
        let answer = json!({
            "node": n,
            "parent": n.parent_id.as_deref().and_then(|p| t.node(p)).as_ref().map(brief),
            "callers": t.callers(&id).iter().map(brief).collect::<Vec<_>>(),
            "callees": t.callees(&id).iter().map(brief).collect::<Vec<_>>(),
        });
        (n.clone(), answer)
    };
    // Read after the index's lock is let go: the store is I/O.
    let store = b.store();
    let source = store
        .stable_entry(&node.file_path)
        .ok()
        .flatten()
        .and_then(|e| store.blob(&e.hash).ok())
        .and_then(|text| crate::agent::node::node_source(&String::from_utf8_lossy(&text), &node));
    answer["source"] = json!(source);
    Ok(Json(answer))
}

pub(super) fn not_indexed(p: &crate::paths::ProjectPath) -> ApiError {
    ApiError::not_found(format!(
        "{p} is not indexed (not a source file of a known language, or not indexed yet)"
    ))
}

pub(super) fn no_node(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no node {id}; `chimera nodes PATH` lists a file's nodes"
    ))
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct EventsQuery {
    /// After this event sequence number.
    since: Option<i64>,
}

/// `GET /node/{id}/events`: the Remora events from or to the node, oldest first.
pub(super) async fn events(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<EventsQuery>,
) -> Answer {
    let events = b.ask(port::Query::NodeHistory {
        node: id,
        since: q.since.unwrap_or(0),
    })?;
    Ok(Json(json!(events)))
}

#[derive(Debug, Deserialize)]
pub(super) struct ChatRequest {
    message: String,
}

/// `POST /node/{id}/chat`: the human's message to the node's agent, which
/// wakes for it; its reply arrives as events (`/node/{id}/events`, the
/// stream).
pub(super) async fn chat(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Json(req): Json<ChatRequest>,
) -> Answer {
    if req.message.trim().is_empty() {
        return Err(ApiError::bad("the message is empty"));
    }
    if indexed(&b).await?.read().topology().node(&id).is_none() {
        return Err(no_node(&id));
    }
    let port::Reply::Seq(before) = b.ask(port::Query::LatestEvent)? else {
        return Err(ApiError::internal(super::backend::MISMATCH));
    };
    b.call(Command::NodeChat {
        node: id.clone(),
        message: req.message,
    })
    .await;
    let port::Reply::NodeHistory(told) = b.ask(port::Query::NodeHistory {
        node: id.clone(),
        since: before,
    })?
    else {
        return Err(ApiError::internal(super::backend::MISMATCH));
    };
    Ok(Json(json!({ "node": id, "events": told })))
}
