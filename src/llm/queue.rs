//! What a request waits for at the server before its first token: busy
//! llama.cpp slots (`/slots`), a model Ollama must load first (`/api/ps`).
//! Asked before each model call, so the agent's line can say why it waits
//! and candidates are drawn as many at once as the server takes.

use std::time::Duration;

use super::{ollama, send_json, LlmClient};
use crate::config::Provider;

impl LlmClient {
    /// What a request sent now waits for before its first token, as the
    /// server says (asked before it is sent): every slot working on
    /// someone else's request (llama.cpp's `/slots`), or the model to be
    /// loaded (Ollama's `/api/ps`). `None` when nothing, or the server
    /// does not say (Ollama has no API for the requests it is serving).
    pub async fn wait_ahead(&self) -> Option<WaitAhead> {
        if self.config.provider == Provider::Ollama {
            let loaded = tokio::time::timeout(Duration::from_millis(250), ollama::loaded(self))
                .await
                .ok()??;
            let model = &self.config.model;
            let holds = loaded.iter().any(|m| ollama::same_model(m, model));
            return (!holds).then(|| WaitAhead::Loading {
                model: model.clone(),
                others: loaded,
            });
        }
        let slots = self.slots().await?;
        (!slots.is_empty() && slots.iter().all(|s| s.working)).then_some(WaitAhead::Busy)
    }

    /// How many requests the server would start at once now: its slots
    /// no request works in (llama.cpp's `/slots`). `None` when the server
    /// does not say.
    pub async fn free_slots(&self) -> Option<usize> {
        Some(self.slots().await?.iter().filter(|s| !s.working).count())
    }

    /// The server's slots (llama.cpp's `/slots`), if it says.
    async fn slots(&self) -> Option<Vec<Slot>> {
        if !self.is_llama_cpp().await {
            return None;
        }
        let base = self
            .config
            .url
            .trim_end_matches('/')
            .trim_end_matches("/v1");
        let fut = send_json(self, self.http.get(format!("{base}/slots")));
        // Asked before every model call: a server slow to say is not
        // waited for (a local llama.cpp answers in a few ms).
        let slots = tokio::time::timeout(Duration::from_millis(250), fut)
            .await
            .ok()?
            .ok()?;
        let working = |s: &serde_json::Value| {
            s["is_processing"].as_bool().unwrap_or(false)
                || s["state"].as_u64().is_some_and(|n| n != 0)
        };
        Some(
            slots
                .as_array()?
                .iter()
                .map(|s| Slot {
                    working: working(s),
                })
                .collect(),
        )
    }
}

/// One of a llama.cpp server's slots: whether a request works in it.
struct Slot {
    working: bool,
}

/// The most models a [`WaitAhead::Loading`] names.
const SHOWN: usize = 3;

/// What a request waits for before its first token ([`LlmClient::wait_ahead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitAhead {
    /// Every slot of the server works on another request.
    Busy,
    /// The server loads `model` first; it held `others` in memory.
    Loading { model: String, others: Vec<String> },
}

impl std::fmt::Display for WaitAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitAhead::Busy => write!(
                f,
                "the server was busy with another request; waiting for it"
            ),
            WaitAhead::Loading { model, others } if others.is_empty() => {
                write!(f, "the server is loading {model}")
            }
            WaitAhead::Loading { model, others } => {
                // The line is one line: a server that lists many models is
                // named by a few.
                let named = others[..others.len().min(SHOWN)].join(", ");
                let more = match others.len().saturating_sub(SHOWN) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                write!(
                    f,
                    "the server is loading {model} (it held {named}{more} for another request)"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_holding_many_models_is_named_by_a_few() {
        let others: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        let said = WaitAhead::Loading {
            model: "q".into(),
            others,
        }
        .to_string();
        assert_eq!(
            said,
            "the server is loading q (it held m0, m1, m2 and 997 more for another request)"
        );
    }
}
