//! Whether the configured LLM server answers and serves the configured
//! model, in the words `:checkhealth` shows.

use serde::Serialize;

use super::LlmClient;
use crate::config::{LlmConfig, Provider};

/// What the check found.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Health {
    /// Agents can work with this server and model.
    pub ok: bool,
    /// They can, but something deserves a look (said in `message`).
    pub warning: bool,
    pub message: String,
    /// What the server offers.
    pub models: Vec<String>,
}

/// Asks the server for its models and judges them.
pub async fn check(client: &LlmClient) -> Health {
    match client.models().await {
        Ok(models) => {
            // llama.cpp serves one model whatever name a request gives.
            let any_name = models.len() == 1 && client.is_llama_cpp().await;
            judge(client.config(), models, any_name)
        }
        Err(e) => Health {
            ok: false,
            warning: false,
            message: e.to_string(),
            models: vec![],
        },
    }
}

/// Whether `models` hold `config.model`: exactly, or as Ollama's implicit
/// `:latest` tag. `any_name`: the server answers every name with its one
/// model.
pub fn judge(config: &LlmConfig, models: Vec<String>, any_name: bool) -> Health {
    let (url, want) = (&config.url, &config.model);
    let latest = format!("{want}:latest");
    let found = models.iter().any(|m| {
        m == want || (config.provider == Provider::Ollama && super::ollama::same_model(m, want))
    });
    let (ok, warning, message) = if found {
        (
            true,
            false,
            format!("{url} answers and serves model `{want}`"),
        )
    } else if any_name {
        (
            true,
            true,
            format!(
                "{url} serves one model, `{}`, whatever the name; Chimera calls it `{want}` (llm.model) and picks its prompts by the size in that name",
                models[0]
            ),
        )
    } else if models.is_empty() {
        (
            false,
            false,
            format!("{url} answers but serves no model: load or pull `{want}`"),
        )
    } else {
        let near = models
            .iter()
            .find(|m| m.eq_ignore_ascii_case(want) || m.eq_ignore_ascii_case(&latest));
        let hint = near.map_or_else(String::new, |m| format!("; did you mean `{m}`?"));
        (
            false,
            false,
            format!(
                "{url} answers but has no model `{want}` (it has: {}){hint}",
                models.join(", ")
            ),
        )
    };
    Health {
        ok,
        warning,
        message,
        models,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(provider: Provider, model: &str) -> LlmConfig {
        LlmConfig {
            provider,
            url: "http://x".into(),
            model: model.into(),
            ..LlmConfig::default()
        }
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_model_name_must_match_exactly() {
        let c = config(Provider::Openai, "qwen2.5-coder:7b");
        assert!(judge(&c, names(&["qwen2.5-coder:7b", "llama3"]), false).ok);
        // One model listed is not any model: a typo is said.
        let h = judge(&c, names(&["qwen2.5-coder:1.5b"]), false);
        assert!(!h.ok, "{h:?}");
        assert!(h.message.contains("it has: qwen2.5-coder:1.5b"), "{h:?}");
        let h = judge(&c, names(&["Qwen2.5-Coder:7B"]), false);
        assert!(
            !h.ok && h.message.contains("did you mean `Qwen2.5-Coder:7B`"),
            "{h:?}"
        );
        let h = judge(&c, vec![], false);
        assert!(!h.ok && h.message.contains("serves no model"), "{h:?}");
    }

    #[test]
    fn ollama_names_without_a_tag_mean_latest() {
        let c = config(Provider::Ollama, "llama3");
        assert!(judge(&c, names(&["llama3:latest"]), false).ok);
        assert!(!judge(&c, names(&["llama3:8b"]), false).ok);
        // Not for other servers, where tags mean nothing.
        let c = config(Provider::Openai, "llama3");
        assert!(!judge(&c, names(&["llama3:latest"]), false).ok);
    }

    #[test]
    fn a_server_that_answers_any_name_works_but_is_pointed_out() {
        let c = config(Provider::Openai, "qwen2.5-coder-1.5b-instruct");
        let h = judge(&c, names(&["/models/qwen.gguf"]), true);
        assert!(h.ok && h.warning, "{h:?}");
        assert!(h.message.contains("`/models/qwen.gguf`"), "{h:?}");
    }
}
