//! The two MCP transports: a child process speaking newline-delimited
//! JSON-RPC on stdin/stdout, and streamable HTTP (one POST per message,
//! answered with JSON or a server-sent event stream).

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::{McpError, ServerConfig, PROTOCOL_VERSION};

/// The last bytes a stdio server wrote to stderr, for error messages.
const STDERR_TAIL: usize = 2000;

pub(super) struct Connection {
    server: String,
    next_id: u64,
    kind: Kind,
}

struct Pipes {
    // Killed when the connection is dropped (kill_on_drop).
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
    stderr_task: tokio::task::JoinHandle<()>,
}

enum Kind {
    Stdio(Box<Pipes>),
    Http {
        client: reqwest::Client,
        url: String,
        session: Option<String>,
    },
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Kind::Stdio(pipes) = &self.kind {
            pipes.stderr_task.abort();
        }
    }
}

impl Connection {
    pub(super) fn open(
        server: &str,
        config: &ServerConfig,
        root: &Path,
        http: &reqwest::Client,
    ) -> Result<Self, McpError> {
        let kind = match (&config.command[..], &config.url) {
            ([program, args @ ..], None) => {
                let mut child = tokio::process::Command::new(program)
                    .args(args)
                    .envs(&config.env)
                    .current_dir(root)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|e| McpError::Start {
                        server: server.to_owned(),
                        detail: format!("`{program}`: {e}"),
                    })?;
                let missing = || McpError::Start {
                    server: server.to_owned(),
                    detail: "no pipe to the process".into(),
                };
                let stdin = child.stdin.take().ok_or_else(missing)?;
                let stdout = BufReader::new(child.stdout.take().ok_or_else(missing)?);
                let mut err_pipe = child.stderr.take().ok_or_else(missing)?;
                let stderr = Arc::new(Mutex::new(String::new()));
                let tail = stderr.clone();
                let stderr_task = tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = err_pipe.read(&mut buf).await {
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
                });
                Kind::Stdio(Box::new(Pipes {
                    _child: child,
                    stdin,
                    stdout,
                    stderr,
                    stderr_task,
                }))
            }
            ([], Some(url)) => Kind::Http {
                client: http.clone(),
                url: url.clone(),
                session: None,
            },
            ([], None) => {
                return Err(McpError::Config {
                    server: server.to_owned(),
                    detail: "set `command` (a stdio server) or `url` (streamable HTTP)".into(),
                })
            }
            (_, Some(_)) => {
                return Err(McpError::Config {
                    server: server.to_owned(),
                    detail: "set either `command` or `url`, not both".into(),
                })
            }
        };
        Ok(Self {
            server: server.to_owned(),
            next_id: 1,
            kind,
        })
    }

    /// Sends a request and waits for its answer's `result`.
    pub(super) async fn request(&mut self, method: &str, params: Json) -> Result<Json, McpError> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = match &mut self.kind {
            Kind::Stdio(_) => self.stdio_exchange(&message, Some(id)).await?,
            Kind::Http { .. } => self.http_exchange(&message, Some(id)).await?,
        };
        let answer = answer.ok_or_else(|| self.protocol(format!("no answer to `{method}`")))?;
        if let Some(err) = answer.get("error") {
            return Err(McpError::Remote {
                server: self.server.clone(),
                message: err["message"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| err.to_string()),
            });
        }
        Ok(answer.get("result").cloned().unwrap_or(Json::Null))
    }

    /// Sends a notification (no answer expected).
    pub(super) async fn notify(&mut self, method: &str, params: Json) -> Result<(), McpError> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        match &mut self.kind {
            Kind::Stdio(_) => self.stdio_exchange(&message, None).await?,
            Kind::Http { .. } => self.http_exchange(&message, None).await?,
        };
        Ok(())
    }

    fn protocol(&self, detail: String) -> McpError {
        McpError::Protocol {
            server: self.server.clone(),
            detail,
        }
    }

    /// Writes `message`; with `id`, reads until the answer to it, serving
    /// the server's own requests (ping) and skipping notifications.
    async fn stdio_exchange(
        &mut self,
        message: &Json,
        id: Option<u64>,
    ) -> Result<Option<Json>, McpError> {
        let server = self.server.clone();
        let Kind::Stdio(pipes) = &mut self.kind else {
            return Ok(None);
        };
        let Pipes {
            stdin,
            stdout,
            stderr,
            ..
        } = pipes.as_mut();
        let stderr_tail = |stderr: &Arc<Mutex<String>>| {
            let t = stderr
                .lock()
                .map(|t| t.trim().to_owned())
                .unwrap_or_default();
            if t.is_empty() {
                String::new()
            } else {
                format!("; it said: {t}")
            }
        };
        let mut line = message.to_string();
        line.push('\n');
        if let Err(e) = stdin.write_all(line.as_bytes()).await {
            return Err(McpError::Closed {
                server,
                detail: format!(" ({e}){}", stderr_tail(stderr)),
            });
        }
        let _ = stdin.flush().await;
        let Some(id) = id else { return Ok(None) };
        let mut buf = String::new();
        loop {
            buf.clear();
            let n = stdout.read_line(&mut buf).await.unwrap_or(0);
            if n == 0 {
                // Give the stderr reader a moment to catch the last words.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                return Err(McpError::Closed {
                    server,
                    detail: stderr_tail(stderr),
                });
            }
            let Ok(msg) = serde_json::from_str::<Json>(buf.trim()) else {
                // Not a protocol message (a stray print); not ours either.
                continue;
            };
            if msg.get("method").is_some() {
                if let Some(req_id) = msg.get("id") {
                    let reply = if msg["method"] == "ping" {
                        json!({"jsonrpc": "2.0", "id": req_id, "result": {}})
                    } else {
                        json!({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "not supported by this client"}})
                    };
                    let mut out = reply.to_string();
                    out.push('\n');
                    let _ = stdin.write_all(out.as_bytes()).await;
                }
                continue;
            }
            if msg["id"].as_u64() == Some(id) {
                return Ok(Some(msg));
            }
        }
    }

    /// POSTs `message`; with `id`, the answer from the JSON body or the
    /// event stream.
    async fn http_exchange(
        &mut self,
        message: &Json,
        id: Option<u64>,
    ) -> Result<Option<Json>, McpError> {
        let server = self.server.clone();
        let Kind::Http {
            client,
            url,
            session,
        } = &mut self.kind
        else {
            return Ok(None);
        };
        let mut req = client
            .post(url.as_str())
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL_VERSION)
            .json(message);
        if let Some(s) = session.as_deref() {
            req = req.header("Mcp-Session-Id", s);
        }
        let resp = req.send().await.map_err(|e| McpError::Start {
            server: server.clone(),
            detail: format!("cannot reach {url}: {e}"),
        })?;
        let status = resp.status();
        if !status.is_success() {
            let mut body = resp.text().await.unwrap_or_default();
            body.truncate(300);
            let detail = format!(" with HTTP {status}: {body}");
            return Err(if status.as_u16() == 404 && session.is_some() {
                // The session expired: start again on the next call.
                McpError::Closed { server, detail }
            } else {
                McpError::Protocol {
                    server,
                    detail: format!("{url} answered{detail}"),
                }
            });
        }
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *session = Some(s.to_owned());
        }
        let Some(id) = id else { return Ok(None) };
        let is_stream = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let answer = |m: &Json| m["id"].as_u64() == Some(id) && m.get("method").is_none();
        if is_stream {
            // The server may keep the stream open after its answer: stop
            // at the answer, not at the end of the stream.
            use futures_util::StreamExt;
            let mut stream = resp.bytes_stream();
            let mut buf = String::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| McpError::Closed {
                    server: server.clone(),
                    detail: format!(" ({e})"),
                })?;
                buf.push_str(&String::from_utf8_lossy(&chunk));
                let complete = buf.rfind("\n\n").map_or(0, |i| i + 2);
                let events: String = buf.drain(..complete).collect();
                if let Some(m) = sse_data(&events)
                    .iter()
                    .filter_map(|d| serde_json::from_str::<Json>(d).ok())
                    .find(answer)
                {
                    return Ok(Some(m));
                }
            }
            return Ok(sse_data(&buf)
                .iter()
                .filter_map(|d| serde_json::from_str::<Json>(d).ok())
                .find(answer));
        }
        let body = resp.text().await.map_err(|e| McpError::Closed {
            server: server.clone(),
            detail: format!(" ({e})"),
        })?;
        let candidates: Vec<Json> = match serde_json::from_str::<Json>(&body) {
            Ok(Json::Array(batch)) => batch,
            Ok(one) => vec![one],
            Err(e) => {
                return Err(McpError::Protocol {
                    server,
                    detail: format!("its answer is not JSON ({e})"),
                })
            }
        };
        Ok(candidates.into_iter().find(answer))
    }
}

/// The `data` of each event in a server-sent event stream.
fn sse_data(body: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for line in body.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                events.push(data.join("\n"));
                data.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    events
}

#[cfg(test)]
mod tests {
    #[test]
    fn event_stream_data_is_joined_per_event() {
        let body = "event: message\ndata: {\"a\":\ndata: 1}\n\n: comment\ndata: two\n";
        assert_eq!(super::sse_data(body), vec!["{\"a\":\n1}", "two"]);
    }
}
