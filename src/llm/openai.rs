//! The OpenAI-compatible chat API (`/v1/chat/completions`), as served by
//! llama.cpp, vLLM, LM Studio and hosted APIs. `url` already ends in `/v1`.

use serde_json::{json, Value};

use super::{
    for_each_line, names, send_json, ChatMessage, ChatOptions, LlmClient, LlmError, Reply, ToolCall,
};

pub(super) async fn chat(
    client: &LlmClient,
    messages: &[ChatMessage],
    opts: &ChatOptions,
    on_delta: &(dyn Fn(&str) + Send + Sync),
) -> Result<Reply, LlmError> {
    let cfg = client.config();
    let mut body = json!({
        "model": cfg.model,
        "messages": messages,
        "stream": cfg.stream,
        "temperature": opts.temperature.unwrap_or(cfg.temperature),
        "max_tokens": opts.reply_tokens(cfg.max_tokens),
    });
    if let Some(schema) = &opts.json_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": { "name": "reply", "strict": true, "schema": schema },
        });
    }
    if let Some(tools) = &opts.tools {
        body["tools"] = tools.clone();
        body["tool_choice"] = json!("auto");
    }
    super::pass_through(&mut body, cfg, None);
    let resp = super::post(client, "chat/completions", &body).await?;
    if !cfg.stream {
        return whole_reply(&super::whole_json(client, resp).await?);
    }
    streamed(client, resp, on_delta).await
}

fn usage_of(v: &Value) -> super::Usage {
    let mut usage = super::Usage::default();
    usage.heard(v);
    usage
}

/// A reply that came whole: its message's content and first tool call.
fn whole_reply(v: &Value) -> Result<Reply, LlmError> {
    let message = &v["choices"][0]["message"];
    let tool_call = message["tool_calls"][0]
        .is_object()
        .then(|| {
            let mut call = PartialCall::default();
            call.add(&message["tool_calls"][0]);
            call.finish()
        })
        .flatten();
    match (message["content"].as_str(), tool_call) {
        (text, Some(call)) => Ok(Reply {
            text: text.unwrap_or("").to_owned(),
            tool_call: Some(call),
            usage: usage_of(v),
            looped: None,
        }),
        (Some(text), None) => Ok(Reply {
            text: text.to_owned(),
            tool_call: None,
            usage: usage_of(v),
            looped: None,
        }),
        (None, None) => Err(LlmError::BadReply(format!(
            "no choices[0].message.content in {}",
            cap(&v.to_string())
        ))),
    }
}

/// A streamed reply, its text shown to `on_delta` as it comes; only its
/// first tool call is kept (one tool call per step).
async fn streamed(
    client: &LlmClient,
    resp: reqwest::Response,
    on_delta: &(dyn Fn(&str) + Send + Sync),
) -> Result<Reply, LlmError> {
    let mut out = String::new();
    let mut call = PartialCall::default();
    let mut finished = false;
    let mut usage = super::Usage::default();
    let done = for_each_line(resp, client, |line| {
        if super::is_done(line) {
            return Ok(true);
        }
        let Some(v) = super::sse_json(line)? else {
            return Ok(false);
        };
        usage.heard(&v);
        if let Some(err) = v.get("error") {
            return Err(LlmError::BadReply(err.to_string()));
        }
        if let Some(delta) = v["choices"][0]["delta"]["content"].as_str() {
            on_delta(delta);
            out.push_str(delta);
        }
        if let Some(first) = v["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .and_then(|calls| calls.iter().find(|c| c["index"].as_u64().unwrap_or(0) == 0))
        {
            call.add(first);
        }
        if v["choices"][0]["finish_reason"].is_string() {
            finished = true;
        }
        Ok(false)
    })
    .await?;
    if !done && !finished {
        return Err(LlmError::Truncated);
    }
    Ok(Reply {
        text: out,
        tool_call: call.finish(),
        usage,
        looped: None,
    })
}

/// A tool call as its pieces stream in: the name once, the arguments as
/// text in fragments.
#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

impl PartialCall {
    fn add(&mut self, piece: &Value) {
        if let Some(id) = piece["id"].as_str() {
            self.id = Some(id.to_owned());
        }
        if let Some(name) = piece["function"]["name"].as_str() {
            self.name.push_str(name);
        }
        match &piece["function"]["arguments"] {
            Value::String(fragment) => self.arguments.push_str(fragment),
            Value::Null => {}
            // Some servers send the arguments as an object.
            other => self.arguments.push_str(&other.to_string()),
        }
    }

    fn finish(self) -> Option<ToolCall> {
        if self.name.is_empty() {
            return None;
        }
        let raw = self.arguments.trim();
        let arguments = if raw.is_empty() {
            json!({})
        } else {
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
        };
        Some(ToolCall {
            id: self.id.unwrap_or_else(|| "call_0".to_owned()),
            name: self.name,
            arguments,
        })
    }
}

pub(super) async fn models(client: &LlmClient) -> Result<Vec<String>, LlmError> {
    let v = send_json(client, client.request(reqwest::Method::GET, "models")).await?;
    Ok(names(&v["data"], "id"))
}

/// llama.cpp serves `/props` beside `/v1`: `default_generation_settings.n_ctx`.
pub(super) async fn context_window(client: &LlmClient) -> Option<u32> {
    let base = client
        .config()
        .url
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_owned();
    let v = send_json(client, client.http.get(format!("{base}/props")))
        .await
        .ok()?;
    v["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| v["n_ctx"].as_u64())
        .map(|n| n as u32)
}

pub(super) fn cap(s: &str) -> String {
    s.chars().take(300).collect()
}
