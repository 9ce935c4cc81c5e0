//! A scripted fake LLM server on 127.0.0.1 for tests: real HTTP, real
//! sockets, replies taken from a script in order. The code under test uses
//! its real client against it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An OpenAI-compatible streamed reply carrying `text`.
    OpenaiStream(String),
    /// An OpenAI-compatible non-streamed reply carrying `text`.
    OpenaiJson(String),
    /// An OpenAI-compatible streamed native tool call: the name, then the
    /// arguments (JSON text) in fragments.
    OpenaiToolCall(String, String),
    /// An Ollama NDJSON stream carrying `text`.
    OllamaStream(String),
    /// A stream cut off in the middle (no terminator), then the socket closes.
    Truncated(String),
    /// Any status with a body.
    Status(u16, String),
    /// A web page with status 200 (a wrong URL: a web UI, a proxy's page).
    Html(String),
    /// Accept the request and never answer.
    Hang,
    /// An OpenAI-compatible stream of `text` whose pieces come `.1` ms
    /// apart: a slow machine's model, never silent for long.
    SlowStream(String, u64),
    /// `.1` after `.0` ms of silence (a server busy with another request,
    /// or reading a long prompt).
    After(u64, Box<Reply>),
    /// 429 with `Retry-After: {0}`.
    RetryAfter(String),
    /// An Anthropic Messages stream carrying `text`.
    AnthropicStream(String),
    /// An Anthropic stream with text, then a `tool_use` block: the name,
    /// then its input (JSON text) in fragments.
    AnthropicToolCall(String, String),
    /// A Gemini SSE stream carrying `text`.
    GeminiStream(String),
    /// A Gemini stream whose one part is a `functionCall`: name, args.
    GeminiToolCall(String, serde_json::Value),
}

/// A running fake server; dropped, it stops.
pub struct FakeServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<String>>>,
    /// The most scripted requests it was answering at one time.
    pub most_at_once: Arc<std::sync::atomic::AtomicUsize>,
    /// The header lines of each scripted request, in `requests`' order.
    pub heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    /// Serves `script` in order; once exhausted, every request gets a 500.
    pub async fn start(script: Vec<Reply>) -> Self {
        Self::start_with_window(script, None).await
    }

    /// Like [`start`](Self::start), also answering llama.cpp's `GET /props`
    /// with a context window of `n_ctx` tokens.
    pub async fn start_with_window(script: Vec<Reply>, n_ctx: Option<u32>) -> Self {
        Self::start_llama(script, n_ctx, 0, 1).await
    }

    /// A llama.cpp server of one slot that `busy` requests (someone
    /// else's) keep working: `GET /slots` says so before each.
    pub async fn start_busy(script: Vec<Reply>, busy: usize) -> Self {
        Self::start_llama(script, Some(4096), busy, 1).await
    }

    /// A llama.cpp server of `slots` slots, all free (`--parallel`).
    pub async fn start_slots(script: Vec<Reply>, slots: usize) -> Self {
        Self::start_llama(script, Some(4096), 0, slots).await
    }

    /// An Ollama server whose `/api/ps` says it holds `loaded` in memory.
    pub async fn start_ollama(script: Vec<Reply>, loaded: &[&str]) -> Self {
        let server = Server {
            n_ctx: None,
            slots: 1,
            loaded: Some(loaded.iter().map(|m| m.to_string()).collect()),
        };
        Self::serve(script, server, 0).await
    }

    async fn start_llama(
        script: Vec<Reply>,
        n_ctx: Option<u32>,
        busy: usize,
        slots: usize,
    ) -> Self {
        let server = Server {
            n_ctx,
            slots,
            loaded: None,
        };
        Self::serve(script, server, busy).await
    }

    async fn serve(script: Vec<Reply>, server: Server, busy: usize) -> Self {
        let server = Arc::new(server);
        let busy = Arc::new(std::sync::atomic::AtomicUsize::new(busy));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let (reqs, hds) = (requests.clone(), heads.clone());
        let most_at_once = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (most, now) = (
            most_at_once.clone(),
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        );
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let (reqs, hds) = (reqs.clone(), hds.clone());
                let (most, now) = (most.clone(), now.clone());
                let script = script.clone();
                let (busy, server) = (busy.clone(), server.clone());
                tokio::spawn(async move {
                    let Some((head, body)) = read_request(&mut sock).await else {
                        return;
                    };
                    // Metadata requests (/props, /models, Ollama's /api/show)
                    // are not part of the script.
                    if body.starts_with("get ") || body.starts_with("post /api/show") {
                        let working = busy.load(std::sync::atomic::Ordering::SeqCst);
                        let reply = server.metadata(&body, working);
                        // The client hung up first: a test that cares says so itself.
                        let _ = write_reply(&mut sock, reply).await;
                        return;
                    }
                    reqs.lock().unwrap().push(body);
                    hds.lock().unwrap().push(head);
                    // Someone else's request ends as this one arrives.
                    let _ = busy.fetch_update(
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                        |n| n.checked_sub(1),
                    );
                    let reply = script.lock().unwrap().next();
                    let reply = reply.unwrap_or(Reply::Status(500, "script exhausted".into()));
                    let at_once = now.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(at_once, std::sync::atomic::Ordering::SeqCst);
                    // As above: a client that hung up is the test's to judge.
                    let _ = write_reply(&mut sock, reply).await;
                    now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
        });
        Self {
            url: format!("http://{addr}"),
            requests,
            most_at_once,
            heads,
            task,
        }
    }
}

/// What a fake server says of itself.
struct Server {
    /// llama.cpp's context window (`None`: not llama.cpp).
    n_ctx: Option<u32>,
    /// llama.cpp's slots.
    slots: usize,
    /// The models Ollama's `/api/ps` lists (`None`: not Ollama).
    loaded: Option<Vec<String>>,
}

impl Server {
    /// The answer to a metadata request (`body`, lowercased), `working`
    /// slots busy.
    fn metadata(&self, body: &str, working: usize) -> Reply {
        if let (Some(loaded), true) = (&self.loaded, body.starts_with("get /api/ps")) {
            let models: Vec<serde_json::Value> = loaded
                .iter()
                .map(|m| serde_json::json!({"name": m, "model": m}))
                .collect();
            return Reply::Status(200, serde_json::json!({ "models": models }).to_string());
        }
        match self.n_ctx {
            Some(_) if body.starts_with("get /slots") => {
                let slots: Vec<serde_json::Value> = (0..self.slots.max(1))
                    .map(|id| serde_json::json!({"id": id, "is_processing": id < working}))
                    .collect();
                Reply::Status(200, serde_json::Value::from(slots).to_string())
            }
            Some(n) if body.starts_with("get /props") => Reply::Status(
                200,
                serde_json::json!({"default_generation_settings": {"n_ctx": n}}).to_string(),
            ),
            Some(n) if body.starts_with("post /api/show") => Reply::Status(
                200,
                serde_json::json!({"model_info": {"qwen2.context_length": n}}).to_string(),
            ),
            _ => Reply::Status(404, "not found".into()),
        }
    }
}

/// The request's header lines (lowercased), and its first line and body.
/// Anthropic's events for a reply of `text`, then maybe a tool call.
fn anthropic_stream(text: &str, call: Option<(&str, &str)>) -> String {
    let event = |v: serde_json::Value| {
        format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""))
    };
    let mut body = event(
        serde_json::json!({"type": "message_start", "message": {"role": "assistant", "content": []}}),
    );
    body.push_str(&event(serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
    body.push_str(&event(serde_json::json!({"type": "ping"})));
    for piece in chunks(text) {
        body.push_str(&event(serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})));
    }
    body.push_str(&event(
        serde_json::json!({"type": "content_block_stop", "index": 0}),
    ));
    if let Some((name, args)) = call {
        body.push_str(&event(serde_json::json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}})));
        for piece in chunks(args) {
            body.push_str(&event(serde_json::json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        body.push_str(&event(
            serde_json::json!({"type": "content_block_stop", "index": 1}),
        ));
    }
    body.push_str(&event(serde_json::json!({"type": "message_delta", "delta": {"stop_reason": if call.is_some() { "tool_use" } else { "end_turn" }}})));
    body.push_str(&event(serde_json::json!({"type": "message_stop"})));
    body
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = sock.read(&mut tmp).await.ok()?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            let first = head.lines().next().unwrap_or("").to_owned();
            let body = format!("{first}\n{}", String::from_utf8_lossy(&buf[end + 4..]));
            return Some((head, body));
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn chunks(text: &str) -> Vec<String> {
    // Split into small pieces, as a real server streams tokens.
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(7).map(|c| c.iter().collect()).collect()
}

/// An OpenAI-compatible stream of `text`, in pieces.
fn openai_stream(text: &str) -> String {
    let mut body = String::new();
    for piece in chunks(text) {
        let v =
            serde_json::json!({"choices": [{"delta": {"content": piece}, "finish_reason": null}]});
        body.push_str(&format!("data: {v}\n\n"));
    }
    body.push_str(
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    body
}

/// An OpenAI-compatible stream of one native call of `name`, its
/// arguments in pieces.
fn openai_tool_call(name: &str, args: &str) -> String {
    let head = serde_json::json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": format!("call_{name}"), "type": "function", "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}]});
    let mut body = format!("data: {head}\n\n");
    for piece in chunks(args) {
        let v = serde_json::json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, "finish_reason": null}]});
        body.push_str(&format!("data: {v}\n\n"));
    }
    body.push_str(
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
    );
    body
}

/// Ollama's stream of `text`: one JSON object per line.
fn ollama_stream(text: &str) -> String {
    let mut body = String::new();
    for piece in chunks(text) {
        body.push_str(
            &serde_json::json!({"message": {"content": piece}, "done": false}).to_string(),
        );
        body.push('\n');
    }
    body.push_str("{\"message\":{\"content\":\"\"},\"done\":true}\n");
    body
}

/// Gemini's stream of `text`, its events ended by CRLF pairs.
fn gemini_stream(text: &str) -> String {
    let mut body = String::new();
    for piece in chunks(text) {
        let v = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}}]});
        body.push_str(&format!("data: {v}\r\n\r\n"));
    }
    let end = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]});
    body.push_str(&format!("data: {end}\r\n\r\n"));
    body
}

/// An OpenAI stream of `text`, each event `pause_ms` after the one before.
async fn write_slowly(
    sock: &mut tokio::net::TcpStream,
    text: &str,
    pause_ms: u64,
) -> std::io::Result<()> {
    let body = openai_stream(text);
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    for event in body.split_inclusive("\n\n") {
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        sock.write_all(event.as_bytes()).await?;
        sock.flush().await?;
    }
    sock.shutdown().await
}

async fn write_reply(sock: &mut tokio::net::TcpStream, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::After(ms, then) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Box::pin(write_reply(sock, *then)).await
        }
        Reply::SlowStream(text, pause_ms) => write_slowly(sock, &text, pause_ms).await,
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
        whole => write_whole(sock, whole).await,
    }
}

/// A reply written at once.
async fn write_whole(sock: &mut tokio::net::TcpStream, reply: Reply) -> std::io::Result<()> {
    let mut extra = String::new();
    let (status, ctype, body, close_early) = match reply {
        Reply::OpenaiStream(text) => (200, "text/event-stream", openai_stream(&text), false),
        Reply::OpenaiToolCall(name, args) => (
            200,
            "text/event-stream",
            openai_tool_call(&name, &args),
            false,
        ),
        Reply::OpenaiJson(text) => {
            let v = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": text}}]});
            (200, "application/json", v.to_string(), false)
        }
        Reply::OllamaStream(text) => (200, "application/x-ndjson", ollama_stream(&text), false),
        Reply::Truncated(text) => {
            let v = serde_json::json!({"choices": [{"delta": {"content": text}, "finish_reason": null}]});
            (200, "text/event-stream", format!("data: {v}\n\n"), true)
        }
        Reply::Status(code, body) => (code, "text/plain", body, false),
        Reply::AnthropicStream(text) => (
            200,
            "text/event-stream",
            anthropic_stream(&text, None),
            false,
        ),
        Reply::AnthropicToolCall(name, args) => (
            200,
            "text/event-stream",
            anthropic_stream("Calling it.", Some((&name, &args))),
            false,
        ),
        Reply::GeminiStream(text) => (200, "text/event-stream", gemini_stream(&text), false),
        Reply::GeminiToolCall(name, args) => {
            let v = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]}, "finishReason": "STOP"}]});
            (
                200,
                "text/event-stream",
                format!("data: {v}\r\n\r\n"),
                false,
            )
        }
        Reply::RetryAfter(wait) => {
            extra = format!("retry-after: {wait}\r\n");
            (429, "text/plain", "slow down".to_owned(), false)
        }
        Reply::Html(body) => (200, "text/html; charset=utf-8", body, false),
        Reply::Hang | Reply::SlowStream(..) | Reply::After(..) => return Ok(()),
    };
    let reason = if status == 200 { "OK" } else { "Error" };
    if close_early {
        // Promise more bytes than are sent, then close: a mid-stream disconnect.
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n",
            body.len() + 1000
        );
        sock.write_all(head.as_bytes()).await?;
        sock.write_all(body.as_bytes()).await?;
        sock.flush().await?;
        return sock.shutdown().await;
    }
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await?;
    sock.shutdown().await
}
