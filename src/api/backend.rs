//! What every route shares: the core as the API sees it ([`Backend`]),
//! the error answer and its JSON shape, and the small helpers routes and
//! MCP sessions both use. A leaf of the API: routes import it, never the
//! reverse.

use std::path::Path;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::port::{Command, Query, Refusal, RefusalKind, Reply, Told};
use crate::store::Store;

/// The core as the API sees it.
pub trait Backend: Send + Sync + 'static {
    fn store(&self) -> &Store;
    fn root(&self) -> &Path;
    /// Runs `msg`; resolves to what the core said about it (empty for
    /// commands that are not transitions).
    fn call(&self, msg: Command) -> BoxFuture<'static, Told>;
    /// Answers `query` (from the store: the same with or without a core).
    fn ask(&self, query: Query) -> Result<Reply, Refusal> {
        crate::port::ask(self.store(), query)
    }
    /// The live feed of what the core tells the editor.
    fn events(&self) -> Arc<super::events::EventBus>;
    /// The Remora topology (`None` when `remora.index` is off).
    fn index(&self) -> Option<crate::remora::shared::SharedIndex>;
    /// [`Backend::index`] for a read that needs the whole project's: a
    /// core that indexes on demand builds it first.
    fn indexed(&self) -> BoxFuture<'_, Option<crate::remora::shared::SharedIndex>> {
        let index = self.index();
        Box::pin(async move { index })
    }
    /// The core's options (`None` when no core runs: reads of the store).
    fn config(&self) -> Option<&crate::config::Config>;
    /// Resolves once the steps the core was asked before have run — the
    /// import of the project as it starts among them — so that a read
    /// made after sees the project (at once when no core runs).
    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

pub(crate) type Shared = Arc<dyn Backend>;

/// An error answer: `{"error": message}` with its status.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl ApiError {
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self(StatusCode::BAD_REQUEST, message.into())
    }
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self(StatusCode::NOT_FOUND, message.into())
    }
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self(StatusCode::CONFLICT, message.into())
    }
    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        Self(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

pub(crate) type Answer = Result<Json<Value>, ApiError>;

/// A JSON body a route may go without: an empty one (whatever its content
/// type says) is `None`; any other must be the JSON the route takes — a
/// body sent with another content type is read too, never dropped (a
/// `{"hunk": 2}` ignored would accept the whole proposal).
pub(crate) struct OptionalBody<T>(pub Option<T>);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S>
    for OptionalBody<T>
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::bad(format!("cannot read the body: {e}")))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(None));
        }
        serde_json::from_slice(&bytes)
            .map(|v| Self(Some(v)))
            .map_err(|e| ApiError::bad(format!("the body is not the JSON this route takes: {e}")))
    }
}

/// Project file `f` a task names, normalised. The core would drop a file
/// reached through a link (it may lead outside): that is said rather than
/// the task run without it.
pub(crate) fn task_file(b: &Shared, f: &str) -> Result<String, String> {
    let p = crate::paths::ProjectPath::parse(f).map_err(|e| e.to_string())?;
    crate::rootfs::check_no_links(b.root(), &p).map_err(|e| e.to_string())?;
    Ok(p.to_string())
}

/// What a route says when a query's reply is not the one it asked for
/// (a bug, never a client's error).
pub(crate) const MISMATCH: &str = "the core answered another question than the one asked";

/// Agent `id`'s record, through the port.
pub(crate) fn agent(b: &Shared, id: &str) -> Result<crate::store::AgentRecord, ApiError> {
    match b.ask(Query::Agent { id: id.to_owned() })? {
        Reply::Agent(rec) => Ok(*rec),
        _ => Err(ApiError::internal(MISMATCH)),
    }
}

/// A new ID of `len` hex digits, as the editor makes them (agents 8,
/// snapshots 12).
pub(crate) fn new_id(len: usize) -> String {
    crate::store::unique_digest().to_hex()[..len].to_owned()
}

/// A refusal's status: the kind decides, never the words.
impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        let status = match r.kind {
            RefusalKind::NotFound => StatusCode::NOT_FOUND,
            RefusalKind::Conflict => StatusCode::CONFLICT,
            RefusalKind::Invalid => StatusCode::BAD_REQUEST,
            RefusalKind::Failed => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, r.message)
    }
}

/// Has the core take a snapshot; its ID.
pub(crate) async fn take_snapshot(b: &Shared, message: String) -> Result<String, ApiError> {
    let id = new_id(12);
    let told = b
        .call(Command::Snapshot {
            id: id.clone(),
            message,
        })
        .await;
    match told.refused {
        Some(r) => Err(r.into()),
        None => Ok(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new kind of refusal gets its status here (the match in `from`
    /// is exhaustive: adding a kind does not build until it has one).
    #[test]
    fn a_refusals_status_comes_from_its_kind() {
        for (kind, status) in [
            (RefusalKind::NotFound, 404),
            (RefusalKind::Conflict, 409),
            (RefusalKind::Invalid, 400),
            (RefusalKind::Failed, 500),
        ] {
            let e = ApiError::from(Refusal::new(kind, "why"));
            assert_eq!((e.0.as_u16(), e.1.as_str()), (status, "why"));
        }
    }
}
