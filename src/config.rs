//! The typed configuration. Lua validates the user's options against one
//! commented defaults table (`lua/chimera/config.lua`) and hands the result
//! here as JSON; every field also has a default so the core runs without Lua.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Everything the core needs to know from the user's `setup{}` options.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Config {
    /// Project root; `None` means the nearest ancestor holding `.git`.
    pub root: Option<PathBuf>,
    pub llm: LlmConfig,
    pub agents: AgentsConfig,
    pub sync: SyncConfig,
    pub remora: RemoraConfig,
    pub capabilities: crate::capabilities::CapabilitiesConfig,
    pub tools: ToolsConfig,
    pub tests: TestsConfig,
    pub mcp: crate::mcp::McpConfig,
    pub api: ApiConfig,
    pub a2a: A2aConfig,
}

/// Other agents a tool-mode agent may hand a task to (`delegate`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct A2aConfig {
    /// By name; each one's host must be in `capabilities.hosts`.
    pub peers: std::collections::BTreeMap<String, A2aPeer>,
}

/// One A2A agent: where its card is, and its token if it needs one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct A2aPeer {
    /// The agent's base URL (its card at `/.well-known/agent-card.json`)
    /// or its card's URL.
    pub url: String,
    pub token: Option<String>,
}

/// The HTTP API and web dashboard (`:help chimera-http`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ApiConfig {
    /// Serve them on 127.0.0.1 while this project's core runs.
    pub enabled: bool,
    /// 0: any free port (see `.chimera/api.json`).
    pub port: u16,
}

/// The project's tests, run on an agent's change before it is proposed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct TestsConfig {
    pub command: TestCommand,
    /// Time limit of one run, ms.
    pub timeout_ms: u64,
}

impl Default for TestsConfig {
    fn default() -> Self {
        Self {
            command: TestCommand::Named(TestsMode::Auto),
            timeout_ms: 60_000,
        }
    }
}

/// `tests.command`: a mode or a command of the user's — a list, or a
/// line split as a shell splits it (run without a shell).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged, try_from = "TestCommandAsWritten")]
pub enum TestCommand {
    Named(TestsMode),
    /// Run as given, in the project's scratch copy.
    Argv(Vec<String>),
}

/// `tests.command` as the user may write it.
#[derive(Deserialize)]
#[serde(untagged)]
enum TestCommandAsWritten {
    Named(TestsMode),
    Line(String),
    Argv(Vec<String>),
}

/// A `tests.command` that names no command.
#[derive(Debug, thiserror::Error)]
#[error("tests.command {0} is not a command (\"auto\", \"off\", a command line such as \"python3 -m pytest -q\", or a non-empty list)")]
pub struct NotACommand(String);

impl TryFrom<TestCommandAsWritten> for TestCommand {
    type Error = NotACommand;

    fn try_from(written: TestCommandAsWritten) -> Result<Self, NotACommand> {
        match written {
            TestCommandAsWritten::Named(mode) => Ok(TestCommand::Named(mode)),
            TestCommandAsWritten::Argv(argv) if !argv.is_empty() => Ok(TestCommand::Argv(argv)),
            TestCommandAsWritten::Argv(_) => Err(NotACommand("[]".into())),
            TestCommandAsWritten::Line(line) => match shlex::split(&line) {
                Some(argv) if !argv.is_empty() => Ok(TestCommand::Argv(argv)),
                _ => Err(NotACommand(format!("{line:?}"))),
            },
        }
    }
}

/// An `agents.external.NAME.network` entry that names no host and port.
#[derive(Debug, thiserror::Error)]
#[error("network entry {0:?} names no host and port (a URL or host:port)")]
pub struct BadNetworkEntry(pub String);

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TestsMode {
    /// The test files that import a changed module, with pytest if it is
    /// installed, else unittest.
    Auto,
    Off,
}

/// Tools beyond the project: the web search endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ToolsConfig {
    /// Base URL of a SearXNG-compatible search (`GET {url}/search?q=…&format=json`);
    /// `None`: no `web_search` tool. Its host must be in `capabilities.hosts`.
    pub web_search_url: Option<String>,
    /// Results `web_search` returns.
    pub web_search_results: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            web_search_url: None,
            web_search_results: 5,
        }
    }
}

/// Which wire protocol the LLM server speaks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Ollama's native `POST /api/chat`.
    Ollama,
    /// `POST /v1/chat/completions`: llama.cpp server, vLLM, LM Studio, hosted APIs.
    Openai,
    /// Anthropic's Messages API, `POST /v1/messages`.
    Anthropic,
    /// Google's Gemini API, `POST /v1beta/models/{model}:streamGenerateContent`.
    Gemini,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LlmConfig {
    pub provider: Provider,
    /// Base URL as users give it to other clients: `http://127.0.0.1:11434`
    /// for Ollama, `http://127.0.0.1:8080/v1` for OpenAI-compatible servers.
    pub url: String,
    pub model: String,
    /// Name of the environment variable holding the API key, if any.
    pub api_key_env: Option<String>,
    /// How long the server may stay silent (no part of the reply yet, or
    /// none since the last) before the request is given up on.
    pub timeout_ms: u64,
    /// Time limit of one whole request, however steadily it streams.
    pub request_timeout_ms: u64,
    /// Retries after a connection error, a timeout or a 5xx, with backoff.
    pub max_retries: u32,
    /// Stream the reply (OpenAI-compatible servers).
    pub stream: bool,
    pub temperature: f64,
    /// Upper bound of generated tokens per reply.
    pub max_tokens: u32,
    /// What the model is asked to answer with (every form is accepted).
    pub edit_form: EditFormSetting,
    /// Per-model overrides of `edit_form`: a model name or a glob over
    /// names (`*0.5b*`), matched without regard to case; an exact name
    /// wins over globs, and globs are tried in name order.
    pub edit_forms: std::collections::BTreeMap<String, EditFormSetting>,
    /// What a model's tokens cost, by model name or glob (as
    /// `edit_forms`): agents' and sessions' token totals come with a price.
    pub prices: std::collections::BTreeMap<String, Price>,
    /// Context window in tokens, used when the server does not report it;
    /// with Ollama, the window asked for (`num_ctx`), at most the model's.
    pub context_tokens: u32,
    /// How long Ollama keeps the model loaded after a request (`"30m"`,
    /// seconds as a number, `-1`: for ever); `None`: Ollama's default.
    pub keep_alive: Option<serde_json::Value>,
    /// Sampling options passed as they are: Ollama's `options`
    /// (`num_gpu`, `top_k`…), top-level fields for OpenAI-compatible
    /// servers (`top_p`, `seed`…). They win over Chimera's own.
    pub options: serde_json::Map<String, serde_json::Value>,
    /// More top-level fields of every chat request (`reasoning`,
    /// `chat_template_kwargs`…); never one Chimera sets itself.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// Headers of every request to the server (Azure's `api-key`,
    /// OpenRouter's `HTTP-Referer`); `${VAR}` in a value is read from the
    /// environment.
    pub headers: std::collections::BTreeMap<String, String>,
    /// A model per role (see [`ROLES`]), on the same server; a role not
    /// named uses `model`.
    pub roles: std::collections::BTreeMap<String, String>,
    /// Ask for JSON `{summary, code}` with the server's constrained output
    /// (llama.cpp `response_format`) for the definitions form.
    pub json_output: bool,
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

/// The entry of `map` that names `model`: its exact name first (case
/// aside), else the first glob over names that matches it.
fn by_model<'m, T>(
    map: &'m std::collections::BTreeMap<String, T>,
    model: &str,
) -> Option<(&'m String, &'m T)> {
    let model = model.to_lowercase();
    let exact = map.iter().find(|(name, _)| name.to_lowercase() == model);
    let glob = || {
        map.iter().find(|(pattern, _)| {
            globset::GlobBuilder::new(&pattern.to_lowercase())
                .build()
                .is_ok_and(|glob| glob.compile_matcher().is_match(&model))
        })
    };
    exact.or_else(glob)
}

/// The reply form the prompt asks for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EditFormSetting {
    /// By model size: a program for 7B and up, definitions for smaller or
    /// unknown models when the task has a target file.
    Auto,
    /// A Python program calling host functions (multi-file changes).
    Program,
    /// The new version of each changed function, method or class.
    Definitions,
}

impl LlmConfig {
    /// The edit form set for this model: its entry in `edit_forms` when one
    /// matches the model's name, else `edit_form`.
    pub fn edit_form_for_model(&self) -> EditFormSetting {
        self.edit_form_entry()
            .map_or(self.edit_form, |(_, form)| *form)
    }

    /// The `edit_forms` entry that names this model, if any.
    fn edit_form_entry(&self) -> Option<(&String, &EditFormSetting)> {
        by_model(&self.edit_forms, &self.model)
    }

    /// What `input` and `output` tokens of this model cost, in US dollars
    /// (0 when `prices` names no price for it).
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        by_model(&self.prices, &self.model).map_or(0.0, |(_, p)| {
            (input as f64 * p.input + output as f64 * p.output) / 1_000_000.0
        })
    }

    /// What the prompt asks this model for and which option decided it, for
    /// `:checkhealth`.
    pub fn describe_edit_form(&self) -> String {
        let (form, source) = match self.edit_form_entry() {
            Some((pattern, form)) => (*form, format!("llm.edit_forms[{pattern:?}]")),
            None => (self.edit_form, "llm.edit_form".to_owned()),
        };
        let what = match form {
            EditFormSetting::Program => "a program".to_owned(),
            EditFormSetting::Definitions => {
                "the changed definitions (a program when the task has no file)".to_owned()
            }
            EditFormSetting::Auto => match self.model_size_b() {
                Some(_) if self.hosted() && self.size_in_name().is_none() => {
                    "a program (auto: a hosted model)".to_owned()
                }
                Some(size) if size >= 7.0 => format!("a program (auto: a {size}B model)"),
                Some(size) => format!(
                    "the changed definitions (auto: a {size}B model; a program when the task has no file)"
                ),
                None => "the changed definitions (auto: the name gives no size; a program when the task has no file)".to_owned(),
            },
        };
        format!("{what}, from {source}")
    }

    /// The provider as users write it in the config.
    pub fn provider_name(&self) -> &'static str {
        match self.provider {
            Provider::Ollama => "ollama",
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// The model is a hosted frontier model (Anthropic's, Google's): it
    /// counts as large whatever its name says.
    fn hosted(&self) -> bool {
        matches!(self.provider, Provider::Anthropic | Provider::Gemini)
    }

    /// The model's size in billions of parameters, read from its name
    /// (`qwen2.5-coder:1.5b`, `Qwen2.5-Coder-7B-Instruct`); a hosted
    /// model's unpublished size counts as [`HOSTED_SIZE_B`].
    pub fn model_size_b(&self) -> Option<f64> {
        let from_name = self.size_in_name();
        if from_name.is_none() && self.hosted() {
            return Some(HOSTED_SIZE_B);
        }
        from_name
    }

    fn size_in_name(&self) -> Option<f64> {
        let name = self.model.to_lowercase();
        let bytes = name.as_bytes();
        let mut best = None;
        for (i, _) in name.match_indices('b') {
            let after_ok = bytes.get(i + 1).is_none_or(|c| !c.is_ascii_alphanumeric());
            let mut j = i;
            while j > 0 && (bytes[j - 1].is_ascii_digit() || bytes[j - 1] == b'.') {
                j -= 1;
            }
            let before_ok = j == 0 || !bytes[j - 1].is_ascii_alphanumeric() || bytes[j - 1] == b'-';
            if after_ok && before_ok && j < i {
                if let Ok(v) = name[j..i].parse::<f64>() {
                    best = Some(v);
                }
            }
        }
        best
    }
}

/// What a model can be chosen for (`llm.roles`): code-mode tasks, tool-mode
/// tasks, free-chat turns, a program's `ask_llm()`, Remora node agents.
pub const ROLES: [&str; 5] = ["task", "tools", "chat", "ask_llm", "node"];

/// The size a hosted model counts as: larger than any local one.
pub const HOSTED_SIZE_B: f64 = 1000.0;

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: Provider::Ollama,
            url: "http://127.0.0.1:11434".to_owned(),
            model: "qwen2.5-coder:7b".to_owned(),
            api_key_env: None,
            timeout_ms: 120_000,
            request_timeout_ms: 1_800_000,
            max_retries: 2,
            stream: true,
            temperature: 0.2,
            max_tokens: 2048,
            edit_form: EditFormSetting::Auto,
            edit_forms: Default::default(),
            prices: Default::default(),
            context_tokens: 8192,
            keep_alive: Some(serde_json::json!("30m")),
            options: Default::default(),
            extra_body: Default::default(),
            headers: Default::default(),
            roles: Default::default(),
            json_output: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct AgentsConfig {
    /// Agents running at once; the rest wait in `queued`.
    pub max_concurrent: usize,
    /// Times a failed program (traceback, no `submit_result`) goes back to the model.
    pub repair_rounds: u32,
    /// Answers drawn for a fix the failing tests can judge, each tested;
    /// several at once where the server has free slots.
    pub candidates: u32,
    /// CPU time limit of one sandbox run (waiting for the LLM is not counted).
    pub sandbox_timeout_ms: u64,
    /// Memory one sandbox run may take (what the process grows by while it
    /// runs), in MB; past it the program stops with a `MemoryError`.
    pub sandbox_memory_mb: u64,
    /// Python recursion limit inside the sandbox.
    pub max_recursion: usize,
    /// Time an agent may take from start to proposal; then it fails.
    pub timeout_ms: u64,
    /// Ended agents (accepted, rejected, failed, cancelled) are purged
    /// after this many hours, with the content only they referenced.
    pub retention_hours: u64,
    /// Times a proposal rejected with feedback is attempted again.
    pub feedback_rounds: usize,
    /// How agents work unless a task says otherwise.
    pub mode: AgentMode,
    /// Tool calls a tool-mode agent may make before it fails.
    pub max_iterations: usize,
    /// Time limit of one `run_command`.
    pub command_timeout_ms: u64,
    /// Runs the project's tests and `run_command` without the kernel's
    /// confinement where this system has none (they are refused there
    /// otherwise).
    pub run_unconfined: bool,
    /// How tool mode asks for calls: the provider's native `tool_calls`,
    /// the JSON text protocol, or `auto` (native except on llama.cpp).
    pub tool_calls: ToolCalls,
    /// Coding agents of the user's (Claude Code, opencode, Gemini CLI…)
    /// spoken to over the Agent Client Protocol, by name.
    pub external: std::collections::BTreeMap<String, ExternalAgent>,
}

/// An ACP agent: the program that speaks ACP on its stdin and stdout.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ExternalAgent {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// Variables added to its environment.
    pub env: std::collections::BTreeMap<String, String>,
    /// Folders and files outside the system's it may read besides its own
    /// install (`~` is the home folder): what its program needs.
    pub readable: Vec<String>,
    /// Folders and files it may also write (its own home is always
    /// writable: `acp::home`).
    pub writable: Vec<String>,
    /// Runs it without the kernel's confinement, where this system has
    /// none. It still works in its own folder, not the project.
    pub unconfined: bool,
    /// The user's environment variables it is given besides the
    /// launcher's allow-list ([`crate::launch::env`]): its API key.
    pub pass_env: Vec<String>,
    /// Where its network may go: URLs or `host:port`. Unset: its kind's
    /// provider (`acp::known`) and the URLs its `env` names (a local
    /// model server).
    pub network: Option<Vec<String>>,
    /// Which agent it is when its name does not say (`claude`, `codex`,
    /// `gemini`, `opencode`): its provider's hosts, its login.
    pub kind: Option<String>,
}

impl ExternalAgent {
    /// Where its network may go by its options: each `network` entry, or
    /// when that is unset, the URLs its `env` names (a model server of
    /// yours); the hosts of its kind come on top then (see
    /// `acp::known`). An entry that names no port is an error.
    pub fn targets(&self) -> Result<Vec<crate::launch::Target>, BadNetworkEntry> {
        match &self.network {
            Some(entries) => entries
                .iter()
                .map(|e| target_of(e).ok_or_else(|| BadNetworkEntry(e.clone())))
                .collect(),
            None => Ok(self
                .env
                .values()
                .flat_map(|v| urls_in(v))
                .filter_map(target_of)
                .collect()),
        }
    }

    /// `readable`, `~` expanded.
    pub fn readable(&self) -> Vec<std::path::PathBuf> {
        self.readable
            .iter()
            .filter_map(|d| expand_home(d))
            .collect()
    }

    /// `writable`, `~` expanded.
    pub fn writable(&self) -> Vec<std::path::PathBuf> {
        self.writable
            .iter()
            .filter_map(|d| expand_home(d))
            .collect()
    }
}

/// The host and port a network entry names: a URL's (its scheme's port
/// by default) or a `host:port`'s.
fn target_of(entry: &str) -> Option<crate::launch::Target> {
    let url = if entry.contains("://") {
        reqwest::Url::parse(entry).ok()?
    } else {
        reqwest::Url::parse(&format!("tcp://{entry}")).ok()?
    };
    let host = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    Some(crate::launch::Target {
        host: host.to_owned(),
        port: url.port_or_known_default()?,
    })
}

/// The `http://` and `https://` addresses in `text` (a URL variable, or
/// a JSON configuration that holds one).
fn urls_in(text: &str) -> impl Iterator<Item = &str> {
    let starts = text
        .match_indices("http://")
        .chain(text.match_indices("https://"))
        .map(|(i, _)| i);
    starts.map(move |i| {
        let rest = &text[i..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']'))
            .unwrap_or(rest.len());
        &rest[..end]
    })
}

/// `~/x` as a path in the home folder; other paths as they are; `None`
/// for `~` when there is no home.
fn expand_home(p: &str) -> Option<std::path::PathBuf> {
    match p.strip_prefix("~/") {
        Some(rest) => Some(std::path::PathBuf::from(std::env::var_os("HOME")?).join(rest)),
        None => Some(std::path::PathBuf::from(p)),
    }
}

/// How a tool-mode agent asks the model for tool calls.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ToolCalls {
    /// Native where the server is not llama.cpp (whose small models do
    /// better with constrained JSON text); text otherwise.
    #[default]
    Auto,
    /// The request carries `tools`; the reply's `tool_calls` are used
    /// (a reply without them is read as the text protocol).
    Native,
    /// One JSON object `{"tool", "args"}` per reply, constrained by the
    /// server's JSON-schema output where it has one.
    Text,
}

/// How an agent works.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    /// The model writes Python (a program, definitions or a whole file).
    #[default]
    Code,
    /// The model calls one tool per reply, as JSON.
    Tools,
}

impl AgentMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::Code => "code",
            AgentMode::Tools => "tools",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "code" => Some(AgentMode::Code),
            "tools" => Some(AgentMode::Tools),
            _ => None,
        }
    }
}

impl Default for AgentsConfig {
    fn default() -> Self {
        Self {
            max_concurrent: 3,
            repair_rounds: 2,
            candidates: 4,
            sandbox_timeout_ms: 5_000,
            sandbox_memory_mb: 512,
            max_recursion: 200,
            timeout_ms: 300_000,
            retention_hours: 24,
            feedback_rounds: 3,
            mode: AgentMode::Code,
            max_iterations: 10,
            command_timeout_ms: 60_000,
            run_unconfined: false,
            tool_calls: ToolCalls::Auto,
            external: Default::default(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RemoraConfig {
    /// Index the project's Python nodes (IDs in the database, edges).
    pub index: bool,
    /// Where node IDs live.
    pub ids: IdMode,
    /// Longest chain of agents activating one another (message_node).
    pub max_depth: usize,
    /// Time before the same node may be activated again in one chain, ms.
    pub cooldown_ms: u64,
    /// Time a node asked a question has to answer it, ms.
    pub answer_timeout_ms: u64,
}

/// Where node IDs live.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IdMode {
    /// In the database only; the files are never touched.
    Shadow,
    /// Also as trailing `# rm_…` comments, in projects where the user ran
    /// `:Chimera remora enable`.
    Inline,
}

impl Default for RemoraConfig {
    fn default() -> Self {
        Self {
            index: true,
            ids: IdMode::Shadow,
            max_depth: 5,
            cooldown_ms: 30_000,
            answer_timeout_ms: 120_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SyncConfig {
    /// Quiet time before a burst of file-system events is applied.
    pub debounce_ms: u64,
    /// Files larger than this are tracked but their content is not given to agents.
    pub max_file_bytes: u64,
    /// Watch the project for changes made outside Neovim.
    pub watch: bool,
}

impl Default for SyncConfig {
    fn default() -> Self {
        Self {
            debounce_ms: 100,
            max_file_bytes: crate::rootfs::MAX_FILE_BYTES,
            watch: true,
        }
    }
}

impl Config {
    /// Parses the JSON that `lua/chimera/config.lua` produces.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_json_gives_the_documented_defaults() {
        let config = Config::from_json("{}").unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.llm.provider, Provider::Ollama);
        assert_eq!(config.agents.max_concurrent, 3);
    }

    #[test]
    fn partial_tables_keep_other_defaults() {
        let config = Config::from_json(
            r#"{"llm": {"provider": "openai", "url": "http://127.0.0.1:8080/v1"}}"#,
        )
        .unwrap();
        assert_eq!(config.llm.provider, Provider::Openai);
        assert_eq!(config.llm.model, "qwen2.5-coder:7b");
    }

    #[test]
    fn model_sizes_are_read_from_names() {
        let size = |m: &str| {
            LlmConfig {
                model: m.into(),
                ..LlmConfig::default()
            }
            .model_size_b()
        };
        assert_eq!(size("qwen2.5-coder:1.5b"), Some(1.5));
        assert_eq!(size("Qwen2.5-Coder-7B-Instruct"), Some(7.0));
        assert_eq!(size("qwen2.5-coder-0.5b-instruct-q4_k_m"), Some(0.5));
        assert_eq!(size("llama3:70b"), Some(70.0));
        assert_eq!(size("gpt-4o"), None);
        assert_eq!(size("qwen2.5-coder"), None);
        let hosted = LlmConfig {
            provider: Provider::Anthropic,
            model: "claude-sonnet-4-5".into(),
            ..LlmConfig::default()
        };
        assert_eq!(hosted.model_size_b(), Some(HOSTED_SIZE_B));
        assert!(hosted
            .describe_edit_form()
            .starts_with("a program (auto: a hosted model)"));
    }

    #[test]
    fn per_model_edit_forms_come_from_json() {
        let config =
            Config::from_json(r#"{"llm": {"edit_forms": {"*:0.5b": "program"}}}"#).unwrap();
        assert_eq!(
            config.llm.edit_forms.get("*:0.5b"),
            Some(&EditFormSetting::Program)
        );
        assert!(Config::from_json(r#"{"llm": {"edit_forms": {"x": "prose"}}}"#).is_err());
    }

    #[test]
    fn the_edit_form_is_described_with_the_option_that_chose_it() {
        let mut llm = LlmConfig {
            model: "qwen2.5-coder:0.5b".into(),
            ..LlmConfig::default()
        };
        assert!(llm.describe_edit_form().contains("auto: a 0.5B model"));
        assert!(llm.describe_edit_form().ends_with("from llm.edit_form"));
        llm.edit_forms
            .insert("*0.5b".into(), EditFormSetting::Program);
        assert_eq!(
            llm.describe_edit_form(),
            "a program, from llm.edit_forms[\"*0.5b\"]"
        );
    }

    #[test]
    fn unknown_provider_is_an_error() {
        assert!(Config::from_json(r#"{"llm": {"provider": "gpt"}}"#).is_err());
    }
}
