//! Anthropic's Messages API (`POST /v1/messages`, server-sent events):
//! system text apart, tool calls as `tool_use` blocks, their results as
//! `tool_result` blocks. `url` ends in `/v1`.

use serde_json::{json, Value};

use super::openai::cap;
use super::{
    for_each_line, names, send_json, ChatMessage, ChatOptions, LlmClient, LlmError, Reply, ToolCall,
};

/// The API version every request names (`anthropic-version`).
pub(super) const VERSION: &str = "2023-06-01";

pub(super) async fn chat(
    client: &LlmClient,
    messages: &[ChatMessage],
    opts: &ChatOptions,
    on_delta: &(dyn Fn(&str) + Send + Sync),
) -> Result<Reply, LlmError> {
    let cfg = client.config();
    let body = request(client, messages, opts);
    let resp = super::post(client, "messages", &body).await?;
    if !cfg.stream {
        return whole_reply(&super::whole_json(client, resp).await?);
    }
    streamed(client, resp, on_delta).await
}

/// The body of a Messages request.
fn request(client: &LlmClient, messages: &[ChatMessage], opts: &ChatOptions) -> Value {
    let cfg = client.config();
    let (system, turns) = wire_messages(messages);
    let mut body = json!({
        "model": cfg.model,
        "messages": turns,
        "stream": cfg.stream,
        "temperature": opts.temperature.unwrap_or(cfg.temperature),
        "max_tokens": opts.reply_tokens(cfg.max_tokens),
    });
    if !system.is_empty() {
        body["system"] = json!(system);
    }
    if opts.tools.is_some() {
        body["tools"] = super::declared_tools(opts)
            .map(|(name, description, parameters)| {
                json!({"name": name, "description": description, "input_schema": parameters})
            })
            .collect();
    }
    super::pass_through(&mut body, cfg, None);
    body
}

/// A reply that came whole: its text blocks, and its first `tool_use`.
fn whole_reply(v: &Value) -> Result<Reply, LlmError> {
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| LlmError::BadReply(format!("no content in {}", cap(&v.to_string()))))?;
    let mut reply = Reply::default();
    reply.usage.heard(v);
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => reply.text.push_str(b["text"].as_str().unwrap_or("")),
            Some("tool_use") if reply.tool_call.is_none() => {
                reply.tool_call = Some(ToolCall {
                    id: b["id"].as_str().unwrap_or("call_0").to_owned(),
                    name: b["name"].as_str().unwrap_or("").to_owned(),
                    arguments: b["input"].clone(),
                })
            }
            _ => {}
        }
    }
    Ok(reply)
}

/// A streamed reply, its text shown to `on_delta` as it comes; only its
/// first tool call is kept (one tool call per step).
async fn streamed(
    client: &LlmClient,
    resp: reqwest::Response,
    on_delta: &(dyn Fn(&str) + Send + Sync),
) -> Result<Reply, LlmError> {
    let mut reply = Reply::default();
    // The first tool_use block: its index, id, name and input so far.
    let mut call: Option<(u64, String, String, String)> = None;
    let done = for_each_line(resp, client, |line| {
        let Some(v) = super::sse_json(line)? else {
            return Ok(false);
        };
        reply.usage.heard(&v);
        match v["type"].as_str() {
            Some("error") => return Err(LlmError::BadReply(v["error"].to_string())),
            Some("content_block_start")
                if v["content_block"]["type"] == "tool_use" && call.is_none() =>
            {
                let b = &v["content_block"];
                call = Some((
                    v["index"].as_u64().unwrap_or(0),
                    b["id"].as_str().unwrap_or("call_0").to_owned(),
                    b["name"].as_str().unwrap_or("").to_owned(),
                    String::new(),
                ));
            }
            Some("content_block_delta") => {
                let d = &v["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => {
                        let t = d["text"].as_str().unwrap_or("");
                        on_delta(t);
                        reply.text.push_str(t);
                    }
                    Some("input_json_delta") => {
                        if let Some((index, _, _, input)) = call.as_mut() {
                            if v["index"].as_u64() == Some(*index) {
                                input.push_str(d["partial_json"].as_str().unwrap_or(""));
                            }
                        }
                    }
                    _ => {}
                }
            }
            Some("message_stop") => return Ok(true),
            _ => {}
        }
        Ok(false)
    })
    .await?;
    if !done {
        return Err(LlmError::Truncated);
    }
    reply.tool_call = call.map(|(_, id, name, input)| ToolCall {
        id,
        name,
        arguments: if input.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&input).unwrap_or(Value::String(input))
        },
    });
    Ok(reply)
}

/// The system text, and the turns as Anthropic takes them.
fn wire_messages(messages: &[ChatMessage]) -> (String, Vec<Value>) {
    let mut system = Vec::new();
    let mut turns = Vec::new();
    for m in messages {
        match m.role.as_str() {
            "system" => system.push(m.content.as_str()),
            "tool" => turns.push(json!({"role": "user", "content": [{
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.as_deref().unwrap_or("call_0"),
                "content": m.content,
            }]})),
            "assistant" => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in m.tool_calls.iter().flat_map(|c| c.as_array()).flatten() {
                    let input = super::call_arguments(c);
                    blocks.push(json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": input}));
                }
                turns.push(json!({"role": "assistant", "content": blocks}));
            }
            _ => turns.push(json!({"role": "user", "content": m.content})),
        }
    }
    (system.join("\n\n"), turns)
}

pub(super) async fn models(client: &LlmClient) -> Result<Vec<String>, LlmError> {
    let v = send_json(client, client.request(reqwest::Method::GET, "models")).await?;
    Ok(names(&v["data"], "id"))
}
