//! The CLI's options: the keys of `setup{}` as JSON, from the project's
//! `.chimera/config.json`, else the user's `$XDG_CONFIG_HOME/chimera/config.json`,
//! with `--llm-provider`, `--llm-url` and `--llm-model` on top.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Global;
use crate::config::Config;

/// The options and where they came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// The file's JSON (for saying which keys it sets).
    raw: Value,
    /// `llm` keys given on the command line.
    overridden: Vec<&'static str>,
}

impl Loaded {
    /// Where `llm.<key>` came from: the command line, the file, or the default.
    pub fn source(&self, key: &str) -> String {
        if self.overridden.contains(&key) {
            return format!("--llm-{key}");
        }
        match (&self.file, self.raw.get("llm").and_then(|l| l.get(key))) {
            (Some(f), Some(_)) => f.display().to_string(),
            _ => "default".to_owned(),
        }
    }
}

/// The user's own config file.
fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("chimera").join("config.json"))
}

/// Reads the options for the project at `root`.
pub fn load(root: &Path, g: &Global) -> Result<Loaded, String> {
    let candidates = [Some(root.join(".chimera").join("config.json")), user_file()];
    let file = candidates.into_iter().flatten().find(|p| p.is_file());
    let raw = match &file {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| format!("cannot read {}: {e}", f.display()))?;
            serde_json::from_str::<Value>(&text)
                .map_err(|e| format!("{} is not valid JSON: {e}", f.display()))?
        }
        None => Value::Object(Default::default()),
    };
    let mut merged = raw.clone();
    let mut overridden = Vec::new();
    for (key, value) in [
        ("provider", &g.llm_provider),
        ("url", &g.llm_url),
        ("model", &g.llm_model),
    ] {
        if let Some(v) = value {
            let Some(obj) = merged.as_object_mut() else {
                return Err("the config file must hold a JSON object".to_owned());
            };
            let llm = obj
                .entry("llm")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(llm) = llm.as_object_mut() {
                llm.insert(key.to_owned(), Value::String(v.clone()));
            }
            overridden.push(key);
        }
    }
    let config: Config = serde_json::from_value(merged).map_err(|e| {
        let from = file.as_ref().map_or_else(
            || "the command line".to_owned(),
            |f| f.display().to_string(),
        );
        format!(
            "bad option in {from}: {e} (the keys are those of setup{{}}; see :help chimera-config)"
        )
    })?;
    Ok(Loaded {
        config,
        file,
        raw,
        overridden,
    })
}
