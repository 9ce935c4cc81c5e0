//! The CLI's side of the API: JSON over HTTP/1.1 on the project's control
//! socket ([`super::control`]), or straight into the routes in this process
//! when no core serves the project (reads need only the store).

use std::path::{Path, PathBuf};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// Longest socket path the platform takes (`sun_path`, with room to spare).
const MAX_SOCKET_PATH: usize = 100;

/// Where the control socket of the project at `root` lives:
/// `.chimera/core.sock`, or, when that path is too long for a socket, a
/// file named after the root in [`socket_dir`].
pub fn socket_path(root: &Path) -> PathBuf {
    let inside = root.join(".chimera").join("core.sock");
    if inside.as_os_str().len() <= MAX_SOCKET_PATH {
        return inside;
    }
    let hash = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
    socket_dir(root).join(format!("{}.sock", &hash[..16]))
}

/// The short home of sockets whose project path is long:
/// `$XDG_RUNTIME_DIR/chimera` (the user's own, made by the system), else
/// a folder under the temporary directory whose name no other account
/// can guess — made by [`super::control::check_socket_dir`] and recorded
/// in the project's `.chimera/socket-dir`. Another account may make any
/// folder it likes there; none of them is this one.
pub fn socket_dir(root: &Path) -> PathBuf {
    if let Some(run) = runtime_dir() {
        return run.join("chimera");
    }
    std::fs::read_to_string(socket_dir_record(root))
        .ok()
        .map(|s| PathBuf::from(s.trim()))
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| std::env::temp_dir().join("chimera-no-socket-yet"))
}

/// `$XDG_RUNTIME_DIR`, when it names a folder.
pub(super) fn runtime_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
}

/// The project's record of its socket folder.
pub(super) fn socket_dir_record(root: &Path) -> PathBuf {
    root.join(".chimera").join("socket-dir")
}

/// Largest request body the API takes, announced or not.
pub const BODY_LIMIT: u64 = 2 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the Chimera core at {socket} did not answer: {message}")]
    Broken { socket: String, message: String },
    /// The core answered with an error status.
    #[error("{message}")]
    Api { status: u16, message: String },
}

/// Where requests go.
#[derive(Clone)]
enum Target {
    /// The control socket of the core serving the project.
    Socket(PathBuf),
    /// These routes, in this process.
    Local(axum::Router),
}

/// A connection point to the API of one project.
#[derive(Clone)]
pub struct Client {
    target: Target,
}

impl Client {
    /// The client of the core serving the project at `root` (nothing is
    /// connected yet).
    pub fn for_root(root: &Path) -> Self {
        Self {
            target: Target::Socket(socket_path(root)),
        }
    }

    /// A client of `router` itself, in this process.
    pub fn local(router: axum::Router) -> Self {
        Self {
            target: Target::Local(router),
        }
    }

    /// Whether requests go to another core.
    pub fn is_remote(&self) -> bool {
        matches!(self.target, Target::Socket(_))
    }

    /// Whether the core answers now.
    pub async fn alive(&self) -> bool {
        self.call("GET", "/status", None).await.is_ok()
    }

    /// `method path` with `body` as JSON; the answer's JSON, or the
    /// error it carries.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ClientError> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "chimera")
            .header("content-type", "application/json");
        let (status, bytes) = match &self.target {
            Target::Socket(socket) => {
                let broken = |message: String| ClientError::Broken {
                    socket: socket.display().to_string(),
                    message,
                };
                let request = request
                    .body(Full::new(Bytes::from(body)))
                    .map_err(|e| broken(e.to_string()))?;
                over_socket(socket, request).await.map_err(broken)?
            }
            Target::Local(router) => {
                let request =
                    request
                        .body(axum::body::Body::from(body))
                        .map_err(|e| ClientError::Api {
                            status: 400,
                            message: e.to_string(),
                        })?;
                let Ok(response) = tower::ServiceExt::oneshot(router.clone(), request).await;
                let status = response.status().as_u16();
                let bytes = response
                    .into_body()
                    .collect()
                    .await
                    .map(|c| c.to_bytes())
                    .unwrap_or_default();
                (status, bytes)
            }
        };
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status >= 400 {
            let message = value
                .get("error")
                .and_then(Value::as_str)
                .map_or_else(|| format!("the core answered {status}"), str::to_owned);
            return Err(ClientError::Api { status, message });
        }
        Ok(value)
    }
}

/// Sends `request` to the core listening on `socket`: its status and body.
async fn over_socket(
    socket: &Path,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, Bytes), String> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(conn);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string());
    let answer = match response {
        Ok(r) => {
            let status = r.status().as_u16();
            r.into_body()
                .collect()
                .await
                .map(|c| (status, c.to_bytes()))
                .map_err(|e| e.to_string())
        }
        Err(e) => Err(e),
    };
    driver.abort();
    answer
}
