//! A connection to one MCP server over the official SDK (rmcp): a child
//! process speaking JSON-RPC on stdin/stdout, or streamable HTTP. The SDK
//! speaks the protocol — the handshake, event streams whatever their line
//! endings, an answer as soon as it arrives on a stream left open — and
//! this module starts the server and says what went wrong, in its words.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::Value as Json;
use tokio::io::AsyncReadExt;

use super::{McpError, ServerConfig};
use crate::command::Supervised;

/// The last bytes a stdio server wrote to stderr, for error messages.
const STDERR_TAIL: usize = 2000;

pub(super) struct Connection {
    server: String,
    /// Dropping it ends the session.
    service: RunningService<RoleClient, ClientConfig>,
    /// A stdio server's supervisor: dropped, it ends the server and all
    /// it started ([`crate::reaper`]).
    _process: Option<Supervised>,
    /// What a stdio server said on stderr, lately.
    stderr: Option<Arc<Mutex<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

/// Starts a stdio server through the launcher ([`crate::launch`]): its
/// environment the allow-list, its `env` and the variables `pass_env`
/// names — none of the user's secrets by default. It runs unconfined by
/// the kernel: it is the user's own program (or, named by a project's
/// file, one the user trusted), and what it needs is its own business.
fn start(
    program: &str,
    args: &[String],
    config: &ServerConfig,
    root: &Path,
) -> std::io::Result<(
    Supervised,
    (tokio::process::ChildStdout, tokio::process::ChildStdin),
    Option<tokio::process::ChildStderr>,
)> {
    let set = config.env.iter().map(|(k, v)| (k.clone(), v.clone()));
    let mut launch = crate::launch::Launch::new(program, None, &config.pass_env, set)
        .map_err(std::io::Error::other)?;
    launch
        .command()
        .args(args)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = launch.spawn()?;
    let mut child = started.child;
    let pipes = (child.stdout.take(), child.stdin.take(), child.stderr.take());
    let process = Supervised::new(child, started.stop);
    let (Some(stdout), Some(stdin), stderr) = pipes else {
        return Err(std::io::Error::other("no pipes"));
    };
    let stderr = stderr
        .map(tokio::process::ChildStderr::from_std)
        .transpose()?;
    Ok((
        process,
        (
            tokio::process::ChildStdout::from_std(stdout)?,
            tokio::process::ChildStdin::from_std(stdin)?,
        ),
        stderr,
    ))
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(task) = &self.stderr_task {
            task.abort();
        }
    }
}

/// Keeps the tail of `pipe` in `tail` until it closes.
fn keep_tail(
    mut pipe: tokio::process::ChildStderr,
    tail: Arc<Mutex<String>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                return;
            }
            if let Ok(mut t) = tail.lock() {
                t.push_str(&String::from_utf8_lossy(&buf[..n]));
                if t.len() > STDERR_TAIL {
                    let mut cut = t.len() - STDERR_TAIL;
                    while !t.is_char_boundary(cut) {
                        cut += 1;
                    }
                    t.drain(..cut);
                }
            }
        }
    })
}

/// `; it said: …` with what the server wrote to stderr, if anything.
async fn said(stderr: Option<&Arc<Mutex<String>>>) -> String {
    let Some(stderr) = stderr else {
        return String::new();
    };
    // Give the stderr reader a moment to catch the last words.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let t = stderr
        .lock()
        .map(|t| t.trim().to_owned())
        .unwrap_or_default();
    if t.is_empty() {
        String::new()
    } else {
        format!("; it said: {t}")
    }
}

impl Connection {
    /// Starts (or reaches) server `server` and does the handshake.
    pub(super) async fn open(
        server: &str,
        config: &ServerConfig,
        root: &Path,
    ) -> Result<Self, McpError> {
        let name = server.to_owned();
        let info = ClientConfig::new(
            Default::default(),
            Implementation::new("chimera", crate::VERSION),
        );
        match (&config.command[..], &config.url) {
            ([program, args @ ..], None) => {
                let (process, transport, pipe) =
                    start(program, args, config, root).map_err(|e| McpError::Start {
                        server: name.clone(),
                        detail: format!("`{program}`: {e}"),
                    })?;
                let stderr = Arc::new(Mutex::new(String::new()));
                let stderr_task = pipe.map(|p| keep_tail(p, stderr.clone()));
                match info.serve(transport).await {
                    Ok(service) => Ok(Self {
                        server: name,
                        service,
                        _process: Some(process),
                        stderr: Some(stderr),
                        stderr_task,
                    }),
                    Err(e) => {
                        let detail =
                            format!(" during the handshake ({e}){}", said(Some(&stderr)).await);
                        if let Some(t) = stderr_task {
                            t.abort();
                        }
                        Err(McpError::Closed {
                            server: name,
                            detail,
                        })
                    }
                }
            }
            ([], Some(url)) => {
                // The SDK's HTTP client is rustls without a default provider.
                crate::http::install_crypto_provider();
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                let service = info.serve(transport).await.map_err(|e| McpError::Start {
                    server: name.clone(),
                    detail: format!("{url}: {e}"),
                })?;
                Ok(Self {
                    server: name,
                    service,
                    _process: None,
                    stderr: None,
                    stderr_task: None,
                })
            }
            ([], None) => Err(McpError::Config {
                server: name,
                detail: "set `command` (a stdio server) or `url` (streamable HTTP)".into(),
            }),
            (_, Some(_)) => Err(McpError::Config {
                server: name,
                detail: "set either `command` or `url`, not both".into(),
            }),
        }
    }

    /// Every tool of the server, every page.
    pub(super) async fn tools(&self) -> Result<Vec<Tool>, McpError> {
        match self.service.list_all_tools().await {
            Ok(tools) => Ok(tools),
            Err(e) => Err(self.error(e).await),
        }
    }

    /// Calls `tool` with `args` (a JSON object).
    pub(super) async fn call(&self, tool: &str, args: Json) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Json::Object(args) = args {
            params = params.with_arguments(args);
        }
        match self.service.call_tool(params).await {
            Ok(result) => Ok(result),
            Err(e) => Err(self.error(e).await),
        }
    }

    /// What went wrong, named after the server.
    async fn error(&self, e: ServiceError) -> McpError {
        let server = self.server.clone();
        match e {
            ServiceError::McpError(data) => McpError::Remote {
                server,
                message: data.message.to_string(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::Closed {
                detail: said(self.stderr.as_ref()).await,
                server,
            },
            ServiceError::Cancelled { .. } => McpError::Cancelled,
            e => McpError::Protocol {
                server,
                detail: e.to_string(),
            },
        }
    }
}
