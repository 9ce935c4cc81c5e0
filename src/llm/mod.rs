//! LLM providers over HTTP: Ollama (`POST /api/chat`), OpenAI-compatible
//! servers (`POST /v1/chat/completions`), Anthropic (`POST /v1/messages`)
//! and Gemini (`…:streamGenerateContent`). Timeouts, retries with backoff,
//! streaming and cancellation live here so that every agent gets them.

mod anthropic;
#[doc(hidden)]
pub mod fake;
mod gemini;
pub mod health;
mod ollama;
mod openai;
mod queue;
pub use queue::WaitAhead;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::config::{LlmConfig, Provider};

/// One message of a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    /// The native tool calls of an assistant message (OpenAI's shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<serde_json::Value>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    fn new(role: &str, content: String) -> Self {
        Self {
            role: role.into(),
            content,
            tool_calls: None,
            tool_call_id: None,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content.into())
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content.into())
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content.into())
    }
    /// The assistant message that made the native tool call `call`.
    pub fn assistant_call(text: impl Into<String>, call: &ToolCall) -> Self {
        let arguments = match &call.arguments {
            serde_json::Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        Self {
            tool_calls: Some(serde_json::json!([{
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }])),
            ..Self::new("assistant", text.into())
        }
    }
    /// The result of the native tool call `id`.
    pub fn tool_result(id: &str, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(id.to_owned()),
            ..Self::new("tool", content.into())
        }
    }
}

/// A tool call the model made through the provider's native tool calling.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// An object, or the raw text when the model wrote invalid JSON.
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// The call in the text protocol's form, `{"tool": …, "args": …}`.
    pub fn as_text(&self) -> String {
        serde_json::json!({"tool": self.name, "args": self.arguments}).to_string()
    }
}

/// A model's answer: its text and, with native tool calling, its first call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub tool_call: Option<ToolCall>,
    /// The tokens the call used, as far as the server said.
    pub usage: Usage,
    /// Set when the reply was cut as it streamed for going round in a loop:
    /// the first line of what it repeated.
    pub looped: Option<String>,
}

/// Tokens one call used, as the server counted them (`None`: it did not
/// say; an OpenAI-compatible server streaming says only when asked with
/// `stream_options`, which `llm.extra_body` can add).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: Option<u64>,
    pub output: Option<u64>,
}

impl Usage {
    /// Takes what `v` — a whole reply or a streamed piece of one — says of
    /// its tokens, in any provider's words: OpenAI's `usage`, Anthropic's
    /// (`message.usage` first, `usage` at the end), Gemini's
    /// `usageMetadata`, Ollama's counts on its last line.
    pub fn heard(&mut self, v: &serde_json::Value) {
        let n = |v: &serde_json::Value| v.as_u64();
        let found = [
            (
                &v["usage"]["prompt_tokens"],
                &v["usage"]["completion_tokens"],
            ),
            (
                &v["message"]["usage"]["input_tokens"],
                &v["message"]["usage"]["output_tokens"],
            ),
            (&v["usage"]["input_tokens"], &v["usage"]["output_tokens"]),
            (
                &v["usageMetadata"]["promptTokenCount"],
                &v["usageMetadata"]["candidatesTokenCount"],
            ),
            (&v["prompt_eval_count"], &v["eval_count"]),
        ];
        for (input, output) in found {
            if let Some(i) = n(input) {
                self.input = Some(i);
            }
            if let Some(o) = n(output) {
                self.output = Some(o);
            }
        }
    }
}

impl Reply {
    /// The answer as text: a native tool call in the text protocol's form.
    pub fn into_text(self) -> String {
        match self.tool_call {
            Some(call) => call.as_text(),
            None => self.text,
        }
    }
}

/// Why a chat request failed. Each message says what to check.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the LLM server at {url}: {detail}. Is it running? Check `llm.url` in your Chimera config")]
    Unreachable { url: String, detail: String },
    #[error("the LLM server at {url} sent nothing for {} s (llm.timeout_ms: raise it if the machine is slow to read a long prompt)", ms / 1000)]
    Timeout { url: String, ms: u64 },
    #[error("the LLM server at {url} was still answering after {} s (llm.request_timeout_ms caps a whole reply)", ms / 1000)]
    TooLong { url: String, ms: u64 },
    #[error("the LLM server answered HTTP {status}: {body}")]
    Status {
        status: u16,
        body: String,
        /// How long the server asked to be left alone (`Retry-After`).
        retry_after: Option<Duration>,
    },
    #[error("the LLM server sent a reply Chimera cannot read: {0}")]
    BadReply(String),
    #[error("the LLM reply was empty")]
    Empty,
    #[error("the LLM stream ended before the reply was complete")]
    Truncated,
    #[error("{url} answered with a web page (\"{title}\"), not the LLM API: check `llm.url` (llama.cpp, vLLM, LM Studio: http://host:port/v1; Ollama: http://host:11434) and `llm.provider`")]
    NotTheApi { url: String, title: String },
    #[error("environment variable `{0}` (llm.api_key_env) is not set")]
    MissingKey(String),
    #[error("llm.headers[{name:?}]: {problem}")]
    BadHeader { name: String, problem: String },
    #[error("cancelled")]
    Cancelled,
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl LlmError {
    /// Worth another try: the server may recover.
    fn is_transient(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::Timeout { .. } | Self::Truncated => true,
            Self::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// A configured connection to one LLM server.
#[derive(Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    config: LlmConfig,
    api_key: Option<String>,
    /// `llm.headers`, their `${VAR}`s read.
    headers: reqwest::header::HeaderMap,
    /// The server's context window, asked once.
    window: std::sync::Arc<tokio::sync::OnceCell<Option<u32>>>,
}

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct ChatOptions {
    /// Constrain the reply to JSON matching this schema (llama.cpp
    /// `response_format`, Ollama `format`).
    pub json_schema: Option<serde_json::Value>,
    /// Overrides `llm.temperature` for this request.
    pub temperature: Option<f64>,
    /// Tools offered through the provider's native tool calling, in
    /// OpenAI's shape (`[{"type": "function", "function": {…}}]`).
    pub tools: Option<serde_json::Value>,
    /// Fewer reply tokens than `llm.max_tokens` (never more).
    pub max_tokens: Option<u32>,
}

impl ChatOptions {
    /// The reply's token limit under the configured `limit`.
    pub fn reply_tokens(&self, limit: u32) -> u32 {
        self.max_tokens.map_or(limit, |m| m.min(limit))
    }
}

impl LlmClient {
    pub fn new(config: &LlmConfig) -> Result<Self, LlmError> {
        crate::http::install_crypto_provider();
        let api_key = match &config.api_key_env {
            Some(var) if !var.is_empty() => {
                Some(std::env::var(var).map_err(|_| LlmError::MissingKey(var.clone()))?)
            }
            _ => None,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        let headers = headers(&config.headers, |var| std::env::var(var).ok())?;
        Ok(Self {
            http,
            config: config.clone(),
            api_key,
            headers,
            window: Default::default(),
        })
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// This client asking for `model` instead (the connection pool is
    /// shared; the context window is asked again, it is the model's).
    pub fn with_model(&self, model: &str) -> LlmClient {
        if model == self.config.model {
            return self.clone();
        }
        let mut other = self.clone();
        other.config.model = model.to_owned();
        other.window = Default::default();
        other
    }

    /// Sends `messages` and returns the assistant's reply, retrying transient
    /// failures with exponential backoff. `on_delta` sees streamed text as it
    /// arrives.
    pub async fn chat(
        &self,
        messages: &[ChatMessage],
        cancel: &CancellationToken,
        on_delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<String, LlmError> {
        self.chat_with(messages, &ChatOptions::default(), cancel, on_delta)
            .await
    }

    /// [`chat`](Self::chat) with options. A native tool call comes back in
    /// the text protocol's form.
    pub async fn chat_with(
        &self,
        messages: &[ChatMessage],
        opts: &ChatOptions,
        cancel: &CancellationToken,
        on_delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<String, LlmError> {
        Ok(self
            .chat_reply(messages, opts, cancel, on_delta)
            .await?
            .into_text())
    }

    /// [`chat_with`](Self::chat_with), keeping a native tool call apart.
    pub async fn chat_reply(
        &self,
        messages: &[ChatMessage],
        opts: &ChatOptions,
        cancel: &CancellationToken,
        on_delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Reply, LlmError> {
        let mut attempt = 0;
        loop {
            let heard = crate::pulse::Pulse::new();
            let on_piece = |piece: &str| {
                heard.beat();
                on_delta(piece)
            };
            let once = self.chat_once(messages, opts, &on_piece);
            let result = tokio::select! {
                _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                r = once => r,
                e = self.too_quiet(&heard) => Err(e),
            };
            match result {
                Ok(r) if r.tool_call.is_none() && r.text.trim().is_empty() => {
                    return Err(LlmError::Empty)
                }
                Ok(r) => return Ok(r),
                Err(e) if e.is_transient() && attempt < self.config.max_retries => {
                    attempt += 1;
                    let backoff = match e {
                        // The server said when; a minute at most, as a
                        // human waits for an answer.
                        LlmError::Status {
                            retry_after: Some(wait),
                            ..
                        } => wait.min(Duration::from_secs(60)),
                        _ => Duration::from_millis(200 * (1 << attempt.min(6))),
                    };
                    tokio::select! {
                        _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                        _ = tokio::time::sleep(backoff) => {}
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Resolves when the request has been silent for `llm.timeout_ms`, or
    /// has run for `llm.request_timeout_ms`: the error it ends with.
    async fn too_quiet(&self, heard: &crate::pulse::Pulse) -> LlmError {
        let silence = Duration::from_millis(self.config.timeout_ms);
        let whole = Duration::from_millis(self.config.request_timeout_ms);
        let url = self.config.url.clone();
        match heard.stopped(silence, whole).await {
            crate::pulse::Stopped::Whole => LlmError::TooLong {
                url,
                ms: self.config.request_timeout_ms,
            },
            crate::pulse::Stopped::Silent => LlmError::Timeout {
                url,
                ms: self.config.timeout_ms,
            },
        }
    }

    async fn chat_once(
        &self,
        messages: &[ChatMessage],
        opts: &ChatOptions,
        on_delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Reply, LlmError> {
        match self.config.provider {
            Provider::Ollama => ollama::chat(self, messages, opts, on_delta).await,
            Provider::Openai => openai::chat(self, messages, opts, on_delta).await,
            Provider::Anthropic => anthropic::chat(self, messages, opts, on_delta).await,
            Provider::Gemini => gemini::chat(self, messages, opts, on_delta).await,
        }
    }

    /// The model's context window in tokens as the server reports it
    /// (llama.cpp `/props`), else `llm.context_tokens`. Ollama runs a
    /// model with the window a request asks for: `llm.context_tokens`, or
    /// the model's own (`/api/show`) when smaller. Asked once per client.
    pub async fn context_window(&self) -> u32 {
        let asked = self
            .window
            .get_or_init(|| async {
                let fut = async {
                    match self.config.provider {
                        Provider::Ollama => ollama::context_window(self).await,
                        Provider::Openai => openai::context_window(self).await,
                        // Its models API says nothing of their windows.
                        Provider::Anthropic => None,
                        Provider::Gemini => gemini::context_window(self).await,
                    }
                };
                tokio::time::timeout(Duration::from_secs(3), fut)
                    .await
                    .ok()
                    .flatten()
            })
            .await;
        let configured = self.config.context_tokens;
        match (self.config.provider, *asked) {
            // The user's own num_ctx is what Ollama will run with.
            (Provider::Ollama, model) if self.config.options.contains_key("num_ctx") => {
                let theirs = self.config.options["num_ctx"]
                    .as_u64()
                    .map_or(configured, |n| n.min(u32::MAX as u64) as u32);
                model.map_or(theirs, |m| m.min(theirs))
            }
            (Provider::Ollama, Some(model)) => model.min(configured),
            (_, asked) => asked.unwrap_or(configured),
        }
    }

    /// Whether the server is llama.cpp (it answered `/props`).
    pub async fn is_llama_cpp(&self) -> bool {
        self.config.provider == Provider::Openai && {
            self.context_window().await;
            self.window.get().is_some_and(Option::is_some)
        }
    }

    /// The models the server offers (for `:checkhealth`).
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        let fut = async {
            match self.config.provider {
                Provider::Ollama => ollama::models(self).await,
                Provider::Openai => openai::models(self).await,
                Provider::Anthropic => anthropic::models(self).await,
                Provider::Gemini => gemini::models(self).await,
            }
        };
        tokio::time::timeout(Duration::from_secs(5), fut)
            .await
            .unwrap_or_else(|_| {
                Err(LlmError::Timeout {
                    url: self.config.url.clone(),
                    ms: 5000,
                })
            })
    }

    fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.config.url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, self.url(path));
        // Each API takes its key its own way.
        req = match (self.config.provider, &self.api_key) {
            (Provider::Anthropic, key) => {
                let req = req.header("anthropic-version", anthropic::VERSION);
                match key {
                    Some(key) => req.header("x-api-key", key),
                    None => req,
                }
            }
            (Provider::Gemini, Some(key)) => req.header("x-goog-api-key", key),
            (_, Some(key)) => req.bearer_auth(key),
            (_, None) => req,
        };
        req.headers(self.headers.clone())
    }

    fn send_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout {
                url: self.config.url.clone(),
                ms: self.config.timeout_ms,
            }
        } else if e.is_connect() || e.is_request() {
            LlmError::Unreachable {
                url: self.config.url.clone(),
                detail: root_cause(&e),
            }
        } else if e.is_body() || e.is_decode() {
            LlmError::Truncated
        } else {
            LlmError::Unreachable {
                url: self.config.url.clone(),
                detail: root_cause(&e),
            }
        }
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// The response if it is a successful answer of the API: an error status
/// becomes [`LlmError::Status`], a web page [`LlmError::NotTheApi`].
async fn api_answer(
    client: &LlmClient,
    resp: reqwest::Response,
) -> Result<reqwest::Response, LlmError> {
    if !resp.status().is_success() {
        return Err(status_error(resp).await);
    }
    let html = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("text/html"));
    if !html {
        return Ok(resp);
    }
    let url = resp.url().to_string();
    let page = resp.text().await.map_err(|e| client.send_error(e))?;
    let title = page
        .split_once("<title>")
        .and_then(|(_, rest)| rest.split_once("</title>"))
        .map(|(t, _)| t.trim().chars().take(80).collect())
        .unwrap_or_else(|| "no title".to_owned());
    Err(LlmError::NotTheApi { url, title })
}

/// Reads an error response into [`LlmError::Status`], body capped.
async fn status_error(resp: reqwest::Response) -> LlmError {
    let status = resp.status().as_u16();
    // Seconds; the HTTP-date form is rare from LLM servers and read as none.
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64);
    let mut body = resp.text().await.unwrap_or_default();
    let mut end = body.len().min(500);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    body.truncate(end);
    LlmError::Status {
        status,
        body,
        retry_after,
    }
}

/// Sends a metadata request (model list) and reads its JSON answer.
async fn send_json(
    client: &LlmClient,
    req: reqwest::RequestBuilder,
) -> Result<serde_json::Value, LlmError> {
    let resp = req.send().await.map_err(|e| client.send_error(e))?;
    let resp = api_answer(client, resp).await?;
    resp.json()
        .await
        .map_err(|e| LlmError::BadReply(e.to_string()))
}

/// POSTs the chat request `body` to `path`: the answer, if the API took it.
async fn post(
    client: &LlmClient,
    path: &str,
    body: &serde_json::Value,
) -> Result<reqwest::Response, LlmError> {
    let resp = client
        .request(reqwest::Method::POST, path)
        .json(body)
        .send()
        .await
        .map_err(|e| client.send_error(e))?;
    api_answer(client, resp).await
}

/// A whole (not streamed) answer as JSON.
async fn whole_json(
    client: &LlmClient,
    resp: reqwest::Response,
) -> Result<serde_json::Value, LlmError> {
    let text = resp.text().await.map_err(|e| client.send_error(e))?;
    serde_json::from_str(&text)
        .map_err(|e| LlmError::BadReply(format!("{e}: {}", openai::cap(&text))))
}

/// The JSON of a server-sent `data:` line (`None`: another line, or
/// OpenAI's `[DONE]`, which [`is_done`] tells).
fn sse_json(line: &str) -> Result<Option<serde_json::Value>, LlmError> {
    let Some(data) = line.strip_prefix("data:").map(str::trim) else {
        return Ok(None);
    };
    if data == "[DONE]" {
        return Ok(None);
    }
    serde_json::from_str(data)
        .map(Some)
        .map_err(|e| LlmError::BadReply(format!("{e}: {}", openai::cap(data))))
}

/// OpenAI's end of stream.
fn is_done(line: &str) -> bool {
    line.strip_prefix("data:").map(str::trim) == Some("[DONE]")
}

/// A call's arguments (OpenAI's shape keeps them as JSON text) as a value.
fn call_arguments(call: &serde_json::Value) -> serde_json::Value {
    let args = &call["function"]["arguments"];
    args.as_str()
        .and_then(|raw| serde_json::from_str(raw).ok())
        .unwrap_or_else(|| args.clone())
}

/// The name, description and parameters of each tool offered in OpenAI's
/// shape, for providers that declare tools their own way.
fn declared_tools(
    opts: &ChatOptions,
) -> impl Iterator<Item = (&serde_json::Value, &serde_json::Value, &serde_json::Value)> {
    opts.tools
        .as_ref()
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let f = &t["function"];
            (&f["name"], &f["description"], &f["parameters"])
        })
}

/// `llm.headers` as sent: each `${VAR}` in a value replaced by the
/// variable `lookup` finds.
fn headers(
    wanted: &std::collections::BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<reqwest::header::HeaderMap, LlmError> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut out = reqwest::header::HeaderMap::new();
    for (name, value) in wanted {
        let bad = |problem: String| LlmError::BadHeader {
            name: name.clone(),
            problem,
        };
        let mut text = String::new();
        let mut rest = value.as_str();
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start..].find('}') else {
                return Err(bad("a `${` without its `}`".into()));
            };
            let var = &rest[start + 2..start + len];
            text.push_str(&rest[..start]);
            text.push_str(
                &lookup(var)
                    .ok_or_else(|| bad(format!("environment variable `{var}` is not set")))?,
            );
            rest = &rest[start + len + 1..];
        }
        text.push_str(rest);
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad("not a valid header name".into()))?;
        let mut value =
            HeaderValue::from_str(&text).map_err(|_| bad("not a valid header value".into()))?;
        value.set_sensitive(true);
        out.insert(header, value);
    }
    Ok(out)
}

/// Merges `llm.options` and `llm.extra_body` into a request `body`:
/// options into `options_at` (`None`: the top level), extra fields at the
/// top level.
fn pass_through(body: &mut serde_json::Value, config: &LlmConfig, options_at: Option<&str>) {
    let target = match options_at {
        Some(key) => &mut body[key],
        None => &mut *body,
    };
    if let Some(obj) = target.as_object_mut() {
        obj.extend(config.options.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(obj) = body.as_object_mut() {
        for (k, v) in &config.extra_body {
            // Never one Chimera set: the request would not be its own.
            obj.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// The string field `key` of every object in the array `list`.
fn names(list: &serde_json::Value, key: &str) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m[key].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Splits a byte stream into lines, calling `line` for each complete one.
/// Returns whatever was left after the last newline.
async fn for_each_line(
    resp: reqwest::Response,
    client: &LlmClient,
    mut line: impl FnMut(&str) -> Result<bool, LlmError>,
) -> Result<bool, LlmError> {
    use futures_util::StreamExt;
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| client.send_error(e))?;
        buf.extend_from_slice(&chunk);
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = buf.drain(..=nl).collect();
            let text = String::from_utf8_lossy(&raw);
            if line(text.trim())? {
                return Ok(true);
            }
        }
    }
    let rest = String::from_utf8_lossy(&buf).trim().to_owned();
    if !rest.is_empty() && line(&rest)? {
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests;
