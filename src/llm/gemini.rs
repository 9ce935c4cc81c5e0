//! Google's Gemini API (`POST /v1beta/models/{model}:streamGenerateContent`,
//! server-sent events): turns of `parts`, tool calls as `functionCall`
//! parts, their results as `functionResponse` parts. `url` ends in
//! `/v1beta`.

use serde_json::{json, Value};

use super::{
    for_each_line, send_json, ChatMessage, ChatOptions, LlmClient, LlmError, Reply, ToolCall,
};

pub(super) async fn chat(
    client: &LlmClient,
    messages: &[ChatMessage],
    opts: &ChatOptions,
    on_delta: &(dyn Fn(&str) + Send + Sync),
) -> Result<Reply, LlmError> {
    let cfg = client.config();
    let body = request(client, messages, opts);
    let path = if cfg.stream {
        format!("models/{}:streamGenerateContent?alt=sse", cfg.model)
    } else {
        format!("models/{}:generateContent", cfg.model)
    };
    let resp = super::post(client, &path, &body).await?;
    let mut reply = Partial::default();
    if !cfg.stream {
        reply.take(&super::whole_json(client, resp).await?, &|_| {})?;
        return Ok(reply.reply);
    }
    for_each_line(resp, client, |line| {
        if let Some(v) = super::sse_json(line)? {
            reply.take(&v, on_delta)?;
        }
        Ok(false)
    })
    .await?;
    if !reply.finished {
        return Err(LlmError::Truncated);
    }
    Ok(reply.reply)
}

/// The body of a generateContent request.
fn request(client: &LlmClient, messages: &[ChatMessage], opts: &ChatOptions) -> Value {
    let cfg = client.config();
    let (system, contents) = wire_messages(messages);
    let mut generation = json!({
        "temperature": opts.temperature.unwrap_or(cfg.temperature),
        "maxOutputTokens": opts.reply_tokens(cfg.max_tokens),
    });
    if let Some(schema) = &opts.json_schema {
        generation["responseMimeType"] = json!("application/json");
        generation["responseJsonSchema"] = schema.clone();
    }
    let mut body = json!({ "contents": contents, "generationConfig": generation });
    if !system.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if opts.tools.is_some() {
        let declarations: Vec<Value> = super::declared_tools(opts)
            .map(|(name, description, parameters)| {
                json!({"name": name, "description": description, "parameters": parameters})
            })
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
    }
    super::pass_through(&mut body, cfg, Some("generationConfig"));
    body
}

/// A reply as its candidates come in.
#[derive(Default)]
struct Partial {
    reply: Reply,
    /// A candidate said why it ended.
    finished: bool,
}

impl Partial {
    /// Takes in one answer (or one streamed piece), its text shown to
    /// `on_delta`; only the first function call is kept.
    fn take(&mut self, v: &Value, on_delta: &(dyn Fn(&str) + Send + Sync)) -> Result<(), LlmError> {
        if let Some(err) = v.get("error") {
            return Err(LlmError::BadReply(err.to_string()));
        }
        self.reply.usage.heard(v);
        let candidate = &v["candidates"][0];
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(t) = part["text"].as_str() {
                on_delta(t);
                self.reply.text.push_str(t);
            }
            let call = &part["functionCall"];
            if let (None, Some(name)) = (&self.reply.tool_call, call["name"].as_str()) {
                self.reply.tool_call = Some(ToolCall {
                    id: format!("call_{name}"),
                    name: name.to_owned(),
                    arguments: match &call["args"] {
                        Value::Null => json!({}),
                        args => args.clone(),
                    },
                });
            }
        }
        if candidate["finishReason"].is_string() {
            self.finished = true;
        }
        Ok(())
    }
}

/// The system text, and the turns as Gemini takes them (`model` for the
/// assistant; a tool's result answers the call by its name).
fn wire_messages(messages: &[ChatMessage]) -> (String, Vec<Value>) {
    let mut system = Vec::new();
    let mut contents = Vec::new();
    // Gemini names a result by its function, not by a call ID.
    let mut names = std::collections::HashMap::new();
    for m in messages {
        match m.role.as_str() {
            "system" => system.push(m.content.as_str()),
            "assistant" => {
                let mut parts = Vec::new();
                if !m.content.is_empty() {
                    parts.push(json!({"text": m.content}));
                }
                for c in m.tool_calls.iter().flat_map(|c| c.as_array()).flatten() {
                    let args = super::call_arguments(c);
                    if let Some(id) = c["id"].as_str() {
                        names.insert(id.to_owned(), c["function"]["name"].clone());
                    }
                    parts.push(
                        json!({"functionCall": {"name": c["function"]["name"], "args": args}}),
                    );
                }
                contents.push(json!({"role": "model", "parts": parts}));
            }
            "tool" => {
                let name = m
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| names.get(id).cloned())
                    .unwrap_or_else(|| json!("tool"));
                contents.push(json!({"role": "user", "parts": [{"functionResponse": {
                    "name": name, "response": {"result": m.content}
                }}]}));
            }
            _ => contents.push(json!({"role": "user", "parts": [{"text": m.content}]})),
        }
    }
    (system.join("\n\n"), contents)
}

pub(super) async fn models(client: &LlmClient) -> Result<Vec<String>, LlmError> {
    let v = send_json(client, client.request(reqwest::Method::GET, "models")).await?;
    Ok(v["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str())
        .map(|n| n.trim_start_matches("models/").to_owned())
        .collect())
}

/// `GET models/{model}`: its `inputTokenLimit`.
pub(super) async fn context_window(client: &LlmClient) -> Option<u32> {
    let path = format!("models/{}", client.config().model);
    let v = send_json(client, client.request(reqwest::Method::GET, &path))
        .await
        .ok()?;
    v["inputTokenLimit"]
        .as_u64()
        .map(|n| n.min(u32::MAX as u64) as u32)
}
