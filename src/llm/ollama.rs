//! Ollama's native chat API (`POST /api/chat`, newline-delimited JSON stream).

use serde_json::{json, Value};

use super::openai::cap;
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
    // Ollama runs the model with the window asked for (its own default is
    // small): ask for the one prompts are sized to.
    let num_ctx = client.context_window().await;
    let mut body = json!({
        "model": cfg.model,
        "messages": messages.iter().map(wire_message).collect::<Vec<_>>(),
        "stream": cfg.stream,
        "options": {
            "temperature": opts.temperature.unwrap_or(cfg.temperature),
            "num_predict": opts.reply_tokens(cfg.max_tokens),
            "num_ctx": num_ctx,
        },
    });
    if let Some(keep) = &cfg.keep_alive {
        body["keep_alive"] = keep.clone();
    }
    if let Some(schema) = &opts.json_schema {
        body["format"] = schema.clone();
    }
    if let Some(tools) = &opts.tools {
        body["tools"] = tools.clone();
    }
    super::pass_through(&mut body, cfg, Some("options"));
    let resp = super::post(client, "api/chat", &body).await?;
    let mut out = String::new();
    let mut tool_call = None;
    let mut usage = super::Usage::default();
    let done = for_each_line(resp, client, |line| {
        if line.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| LlmError::BadReply(format!("{e}: {}", cap(line))))?;
        if let Some(err) = v.get("error") {
            return Err(LlmError::BadReply(err.to_string()));
        }
        usage.heard(&v);
        if let Some(delta) = v["message"]["content"].as_str() {
            on_delta(delta);
            out.push_str(delta);
        }
        // Ollama sends a call whole, its arguments as an object.
        let call = &v["message"]["tool_calls"][0]["function"];
        if let (None, Some(name)) = (&tool_call, call["name"].as_str()) {
            tool_call = Some(ToolCall {
                id: format!("call_{name}"),
                name: name.to_owned(),
                arguments: match &call["arguments"] {
                    Value::Null => json!({}),
                    other => other.clone(),
                },
            });
        }
        Ok(v["done"].as_bool().unwrap_or(false))
    })
    .await?;
    if !done {
        return Err(LlmError::Truncated);
    }
    Ok(Reply {
        text: out,
        tool_call,
        usage,
        looped: None,
    })
}

/// A message as Ollama takes it: tool-call arguments as objects.
fn wire_message(m: &ChatMessage) -> Value {
    let mut v = json!({"role": m.role, "content": m.content});
    if let Some(calls) = m.tool_calls.as_ref().and_then(Value::as_array) {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"function": {"name": c["function"]["name"], "arguments": super::call_arguments(c)}})
            })
            .collect();
        v["tool_calls"] = Value::Array(calls);
    }
    v
}

/// `POST /api/show`: `model_info["<arch>.context_length"]`.
pub(super) async fn context_window(client: &LlmClient) -> Option<u32> {
    let req = client
        .request(reqwest::Method::POST, "api/show")
        .json(&json!({ "model": client.config().model }));
    let v = send_json(client, req).await.ok()?;
    let info = v["model_info"].as_object()?;
    info.iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, n)| n.as_u64())
        .map(|n| n as u32)
}

/// `GET /api/ps`: the models the server holds in memory now.
pub(super) async fn loaded(client: &LlmClient) -> Option<Vec<String>> {
    let v = send_json(client, client.request(reqwest::Method::GET, "api/ps"))
        .await
        .ok()?;
    Some(names(&v["models"], "name"))
}

/// Whether Ollama's `a` and `b` name one model: a name without a tag is
/// its `:latest`.
pub(super) fn same_model(a: &str, b: &str) -> bool {
    let tagged = |m: &str| {
        if m.contains(':') {
            m.to_owned()
        } else {
            format!("{m}:latest")
        }
    };
    tagged(a) == tagged(b)
}

pub(super) async fn models(client: &LlmClient) -> Result<Vec<String>, LlmError> {
    let v = send_json(client, client.request(reqwest::Method::GET, "api/tags")).await?;
    Ok(names(&v["models"], "name"))
}
