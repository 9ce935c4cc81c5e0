//! A2A client (protocol 0.3.0): a peer's agent card, a task sent to it
//! (`message/send`), its status (`tasks/get`). What `chimera a2a
//! discover|delegate|status` use; Chimera's own A2A server is
//! [`crate::api`]'s `/a2a`.

use serde_json::{json, Value};

/// Why a call to a peer failed; says what to check.
#[derive(Debug, thiserror::Error)]
pub enum A2aError {
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url} answered HTTP {status}, a redirect to {to}: not followed (a redirect could lead to a host capabilities.hosts does not allow); give the final URL instead")]
    Redirect {
        url: String,
        status: u16,
        to: String,
    },
    #[error("{url} is not an A2A agent: {detail}")]
    NotA2a { url: String, detail: String },
    #[error("the agent answered with an error ({code}): {message}")]
    Remote { code: i64, message: String },
}

/// Where a peer's card is: `URL` itself when it names a `.json` file,
/// else `URL/.well-known/agent-card.json`.
pub fn card_url(url: &str) -> String {
    let url = url.trim_end_matches('/');
    if url.ends_with(".json") {
        url.to_owned()
    } else {
        format!("{url}/.well-known/agent-card.json")
    }
}

/// The peer's agent card, with the fields a caller needs checked.
pub async fn discover(http: &reqwest::Client, url: &str) -> Result<Value, A2aError> {
    let at = card_url(url);
    let card = get_json(http.get(&at), &at).await?;
    for field in ["name", "url", "version", "skills"] {
        if card.get(field).is_none() {
            return Err(A2aError::NotA2a {
                url: at,
                detail: format!("its card has no `{field}`"),
            });
        }
    }
    Ok(card)
}

async fn get_json(req: reqwest::RequestBuilder, url: &str) -> Result<Value, A2aError> {
    let resp = req.send().await.map_err(|e| A2aError::Unreachable {
        url: url.to_owned(),
        detail: e.to_string(),
    })?;
    let status = resp.status().as_u16();
    if let Some(to) = crate::http::redirect_target(&resp) {
        return Err(A2aError::Redirect {
            url: url.to_owned(),
            status,
            to,
        });
    }
    let body = resp.text().await.map_err(|e| A2aError::Unreachable {
        url: url.to_owned(),
        detail: e.to_string(),
    })?;
    if status >= 300 {
        let mut body = body;
        body.truncate(300);
        return Err(A2aError::Status {
            url: url.to_owned(),
            status,
            body,
        });
    }
    serde_json::from_str(&body).map_err(|e| A2aError::NotA2a {
        url: url.to_owned(),
        detail: format!("its answer is not JSON ({e})"),
    })
}

/// One JSON-RPC call to the agent at `endpoint` (its card's `url`).
async fn rpc(
    http: &reqwest::Client,
    endpoint: &str,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> Result<Value, A2aError> {
    let mut req = http
        .post(endpoint)
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let answer = get_json(req, endpoint).await?;
    if let Some(e) = answer.get("error") {
        return Err(A2aError::Remote {
            code: e["code"].as_i64().unwrap_or(0),
            message: e["message"].as_str().unwrap_or("no message").to_owned(),
        });
    }
    answer
        .get("result")
        .cloned()
        .ok_or_else(|| A2aError::NotA2a {
            url: endpoint.to_owned(),
            detail: "its answer has neither result nor error".into(),
        })
}

/// Sends `text` as a new task; with `blocking`, the answer comes when the
/// task has settled. The task (or the message the agent answered with).
pub async fn send(
    http: &reqwest::Client,
    endpoint: &str,
    token: Option<&str>,
    text: &str,
    blocking: bool,
) -> Result<Value, A2aError> {
    let message = json!({
        "kind": "message",
        "role": "user",
        "messageId": crate::store::unique_digest().to_hex()[..16].to_owned(),
        "parts": [{ "kind": "text", "text": text }],
    });
    let params = json!({ "message": message, "configuration": { "blocking": blocking } });
    rpc(http, endpoint, token, "message/send", params).await
}

/// The task `id` as the agent has it now.
pub async fn status(
    http: &reqwest::Client,
    endpoint: &str,
    token: Option<&str>,
    id: &str,
) -> Result<Value, A2aError> {
    rpc(http, endpoint, token, "tasks/get", json!({ "id": id })).await
}

/// The text of a task's artifacts (or of a message), for a person.
pub fn artifact_text(task: &Value) -> String {
    let parts = |v: &Value| -> Vec<String> {
        v["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect()
    };
    if task["kind"] == "message" {
        return parts(task).join("\n");
    }
    task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(parts)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_is_found_at_the_well_known_path_unless_named() {
        assert_eq!(
            card_url("http://127.0.0.1:9/"),
            "http://127.0.0.1:9/.well-known/agent-card.json"
        );
        assert_eq!(card_url("http://h/card.json"), "http://h/card.json");
    }

    #[test]
    fn artifacts_and_messages_read_as_text() {
        let task = json!({"kind": "task", "artifacts": [{"parts": [{"kind": "text", "text": "sum"}, {"kind": "text", "text": "diff"}]}]});
        assert_eq!(artifact_text(&task), "sum\ndiff");
        let msg = json!({"kind": "message", "parts": [{"kind": "text", "text": "hi"}]});
        assert_eq!(artifact_text(&msg), "hi");
    }
}
