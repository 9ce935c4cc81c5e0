//! The API over HTTP, for the web dashboard and other programs: bound to
//! 127.0.0.1 only, with a random token (written with the port to
//! `.chimera/api.json`, readable by the user alone) required on every
//! request but the dashboard's own files. The Host header must name the
//! loopback address, so a web page that rebinds its domain to 127.0.0.1
//! reaches nothing either.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// What `.chimera/api.json` says: where the API listens and its token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiInfo {
    pub port: u16,
    pub token: String,
    /// The process serving it.
    pub pid: u32,
}

impl ApiInfo {
    /// The dashboard's address, which asks for the token.
    pub fn dashboard_url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The dashboard's address with a one-time code good for `lifetime`
    /// in the fragment (which a browser never sends): opening it logs in
    /// once. Never the token itself.
    pub fn login_url(&self, lifetime: std::time::Duration) -> String {
        format!(
            "{}#login={}",
            self.dashboard_url(),
            super::login::mint(&self.token, lifetime)
        )
    }
}

/// Writes `.chimera/dashboard.html`, a page of the user's alone (0600)
/// that sends the browser on to a fresh login link, and returns its
/// `file://` address: a browser is started with that on its command line,
/// which every account on the machine can read, and it holds no secret.
pub fn write_opener(root: &Path, info: &ApiInfo) -> std::io::Result<String> {
    let url = info.login_url(super::login::OPENED);
    let page = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={url}\"><title>Chimera</title><a href=\"{url}\">Open the dashboard</a>\n"
    );
    let path = root.join(".chimera").join("dashboard.html");
    write_private(&path, page.as_bytes())?;
    Ok(format!("file://{}", path.display()))
}

/// `.chimera/api.json` of the project at `root`.
pub fn info_path(root: &Path) -> PathBuf {
    root.join(".chimera").join("api.json")
}

/// Reads `.chimera/api.json`, if an API is announced there.
pub fn read_info(root: &Path) -> Option<ApiInfo> {
    let text = std::fs::read_to_string(info_path(root)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes `info` whole or not at all, readable by its user only; a link
/// planted at the path is replaced, never followed.
fn write_info(root: &Path, info: &ApiInfo) -> std::io::Result<()> {
    write_private(
        &info_path(root),
        serde_json::to_string_pretty(info)?.as_bytes(),
    )
}

/// Writes `data` at `path` whole or not at all, readable by its user only;
/// a link planted at the path is replaced, never followed.
fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!("{name}.{}.tmp", std::process::id()));
    // A temporary file of an earlier run of this pid; usually absent.
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Removes `.chimera/api.json` if it still announces this process.
pub fn withdraw(root: &Path) {
    if read_info(root).is_some_and(|i| i.pid == std::process::id()) {
        // Best effort: a stale `api.json` names a port nobody serves, and
        // the next start writes its own.
        let _ = std::fs::remove_file(info_path(root));
    }
}

/// The bound listener and what it was announced as.
pub struct Bound {
    listener: tokio::net::TcpListener,
    pub info: ApiInfo,
    root: PathBuf,
}

/// Binds 127.0.0.1:`port` (0: any free port), makes a token and announces
/// both in `.chimera/api.json`.
pub async fn bind(root: &Path, port: u16) -> std::io::Result<Bound> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot listen on 127.0.0.1:{port}: {e} (set `api.port` to a free port, or 0)"
                ),
            )
        })?;
    let info = ApiInfo {
        port: listener.local_addr()?.port(),
        token: crate::store::random_token()?,
        pid: std::process::id(),
    };
    write_info(root, &info)?;
    Ok(Bound {
        listener,
        info,
        root: root.to_path_buf(),
    })
}

impl Bound {
    /// Serves `api` and MCP on `/mcp` (both behind the token) and the
    /// dashboard until `stop`.
    pub async fn serve(self, api: Router, stop: CancellationToken) -> std::io::Result<()> {
        let token = self.info.token.clone();
        let port = self.info.port;
        let mcp = crate::mcp::server::http_service(api.clone(), stop.child_token());
        let redeemed = std::sync::Arc::new(super::login::Redeemed::default());
        let for_login = self.info.token.clone();
        let app =
            Router::new()
                .merge(api.nest_service("/mcp", mcp).layer(middleware::from_fn(
                    move |req, next| authorize(token.clone(), req, next),
                )))
                .merge(super::dashboard::router())
                // A one-time link's code for the token (no token needed).
                .route(
                    "/login",
                    axum::routing::post(move |body: axum::body::Bytes| {
                        login(for_login.clone(), redeemed.clone(), body)
                    }),
                )
                // Discovery is public, as A2A has it; `/a2a` needs the token.
                .route(
                    "/.well-known/agent-card.json",
                    axum::routing::get(super::a2a::card),
                )
                .layer(middleware::from_fn(move |req, next| {
                    loopback_host(port, req, next)
                }));
        super::serve::serve(self.listener, app, super::serve::Limits::default(), stop).await;
        withdraw(&self.root);
        Ok(())
    }
}

/// `POST /login {"code"}`: the token, once per good code.
async fn login(
    token: String,
    redeemed: std::sync::Arc<super::login::Redeemed>,
    body: axum::body::Bytes,
) -> Response {
    let code = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_default();
    match redeemed.redeem(&token, &code) {
        Ok(()) => Json(json!({ "token": token })).into_response(),
        Err(e) => refuse(StatusCode::UNAUTHORIZED, &e.to_string()),
    }
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

async fn authorize(token: String, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if super::login::same(t.trim().as_bytes(), token.as_bytes()) => next.run(req).await,
        _ => refuse(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: send `Authorization: Bearer TOKEN`, TOKEN from the project's .chimera/api.json",
        ),
    }
}

/// Only requests addressed to the loopback address by name or number.
async fn loopback_host(port: u16, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let allowed = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
        next.run(req).await
    } else {
        refuse(
            StatusCode::FORBIDDEN,
            &format!("the API answers only requests to 127.0.0.1:{port}, not to {host:?}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::login::same;
    use super::*;

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (a, b) = (
            crate::store::random_token().unwrap(),
            crate::store::random_token().unwrap(),
        );
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
        assert!(!same(a.as_bytes(), &a.as_bytes()[..63]));
    }

    #[test]
    fn the_info_file_is_private_and_replaces_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".chimera")).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep").unwrap();
        std::os::unix::fs::symlink(&elsewhere, info_path(dir.path())).unwrap();
        let info = ApiInfo {
            port: 1,
            token: "t".into(),
            pid: std::process::id(),
        };
        write_info(dir.path(), &info).unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
        let meta = std::fs::symlink_metadata(info_path(dir.path())).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(read_info(dir.path()).unwrap().token, "t");
        withdraw(dir.path());
        assert!(read_info(dir.path()).is_none());
    }
}
