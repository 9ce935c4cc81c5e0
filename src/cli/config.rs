//! The CLI's options: the keys of `setup{}` as JSON, from the user's
//! `$XDG_CONFIG_HOME/chimera/config.json` with the project's
//! `.chimera/config.json` over it — the project's options that run, reach
//! or read anything only once the user trusts that file ([`crate::trust`])
//! — and `--llm-provider`, `--llm-url` and `--llm-model` on top.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Global;
use crate::config::Config;
use crate::trust::{self, TrustDb};

/// The options and where they came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The user's own file, if there is one.
    pub user_file: Option<PathBuf>,
    /// The project's file, if there is one.
    pub project: Option<ProjectOptions>,
    /// The user's file's JSON (for saying which keys it sets).
    user_raw: Value,
    /// The project's JSON as applied (without the keys ignored).
    project_raw: Value,
    /// `llm` keys given on the command line.
    overridden: Vec<&'static str>,
}

/// The project's own options file and how much of it applies.
#[derive(Debug, Clone)]
pub struct ProjectOptions {
    pub file: PathBuf,
    /// Its content is what the user trusted (`chimera trust`).
    pub trusted: bool,
    /// The keys it sets that need trust (see [`trust::guarded_keys`]).
    pub guarded: Vec<String>,
    /// Why trust could not be checked, if it could not.
    pub trust_error: Option<String>,
}

impl ProjectOptions {
    /// The keys ignored because the file is not trusted.
    pub fn ignored(&self) -> &[String] {
        if self.trusted {
            &[]
        } else {
            &self.guarded
        }
    }
}

impl Loaded {
    /// Where `llm.<key>` came from: the command line, a file, or the default.
    pub fn source(&self, key: &str) -> String {
        if self.overridden.contains(&key) {
            return format!("--llm-{key}");
        }
        let sets = |raw: &Value| raw.get("llm").and_then(|l| l.get(key)).is_some();
        match (&self.project, &self.user_file) {
            (Some(p), _) if sets(&self.project_raw) => p.file.display().to_string(),
            (_, Some(f)) if sets(&self.user_raw) => f.display().to_string(),
            _ => "default".to_owned(),
        }
    }

    /// The file the options mostly come from: the project's, else the user's.
    pub fn file(&self) -> Option<&Path> {
        self.project
            .as_ref()
            .map(|p| p.file.as_path())
            .or(self.user_file.as_deref())
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

/// The project's own options file.
pub fn project_file(root: &Path) -> PathBuf {
    root.join(".chimera").join("config.json")
}

/// Why the options could not be read; each says which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", file.display())]
    Unreadable {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid JSON: {source}", file.display())]
    NotJson {
        file: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} must hold a JSON object", .0.display())]
    NotObject(PathBuf),
    #[error("bad option in {from}: {source} (the keys are those of setup{{}}; see :help chimera-config)")]
    BadOption {
        from: String,
        source: serde_json::Error,
    },
    #[error("{} is a symbolic link: a project's options must be a file of its own (a link would give it another file's options, and that file's trust); replace it with a copy", .0.display())]
    Link(PathBuf),
}

fn read_json(f: &Path) -> Result<(Vec<u8>, Value), ConfigError> {
    let bytes = std::fs::read(f).map_err(|source| ConfigError::Unreadable {
        file: f.to_owned(),
        source,
    })?;
    let value = serde_json::from_slice::<Value>(&bytes).map_err(|source| ConfigError::NotJson {
        file: f.to_owned(),
        source,
    })?;
    if !value.is_object() {
        return Err(ConfigError::NotObject(f.to_owned()));
    }
    Ok((bytes, value))
}

fn parse(value: Value, from: &str) -> Result<Config, ConfigError> {
    serde_json::from_value(value).map_err(|source| ConfigError::BadOption {
        from: from.to_owned(),
        source,
    })
}

/// `over` merged into `base`: objects key by key, anything else replaced.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o,
    }
}

/// A project's options file (or its `.chimera` folder) that is a link is
/// refused: what it says would be another file's, trusted or not.
fn refuse_links(root: &Path, file: &Path) -> Result<(), ConfigError> {
    for p in [root.join(".chimera"), file.to_path_buf()] {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(ConfigError::Link(p));
        }
    }
    Ok(())
}

/// Reads the options for the project at `root`.
pub fn load(root: &Path, g: &Global) -> Result<Loaded, ConfigError> {
    let user_file = user_file().filter(|p| p.is_file());
    let user_raw = match &user_file {
        Some(f) => read_json(f)?.1,
        None => Value::Object(Default::default()),
    };
    let base = parse(
        user_raw.clone(),
        &user_file
            .as_ref()
            .map_or("the defaults".into(), |f| f.display().to_string()),
    )?;
    let file = project_file(root);
    refuse_links(root, &file)?;
    let (project, project_raw) = if file.is_file() {
        let (bytes, raw) = read_json(&file)?;
        // Checked whole first: a bad key is an error even where it would be ignored.
        let mut whole = user_raw.clone();
        merge(&mut whole, raw.clone());
        parse(whole, &file.display().to_string())?;
        let guarded = trust::guarded_keys(&raw, &base);
        let (trusted, trust_error) =
            match TrustDb::user().and_then(|db| db.is_trusted(&file, &bytes)) {
                Ok(t) => (t, None),
                Err(e) => (false, Some(e.to_string())),
            };
        let options = ProjectOptions {
            file,
            trusted,
            guarded,
            trust_error,
        };
        let applied = trust::without(raw, options.ignored());
        (Some(options), applied)
    } else {
        (None, Value::Object(Default::default()))
    };
    let mut merged = user_raw.clone();
    merge(&mut merged, project_raw.clone());
    let mut overridden = Vec::new();
    for (key, value) in [
        ("provider", &g.llm_provider),
        ("url", &g.llm_url),
        ("model", &g.llm_model),
    ] {
        if let Some(v) = value {
            merge(&mut merged, serde_json::json!({ "llm": { key: v } }));
            overridden.push(key);
        }
    }
    let config = parse(merged, "the command line")?;
    Ok(Loaded {
        config,
        user_file,
        project,
        user_raw,
        project_raw,
        overridden,
    })
}
