//! The host functions a code-mode program calls, backed by the agent's
//! overlay. Every path is checked by [`ProjectPath`]; every error is
//! returned to the program as an exception it (or the model) can act on.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::llm::{ChatMessage, LlmClient};
use crate::sandbox::HostError;
use crate::sandbox::{Host, Value};
use crate::store::Store;
use crate::workspace::{Workspace, WorkspaceError};

mod files;
pub(crate) mod own;

/// Everything a program's host calls need.
pub struct AgentHost {
    pub store: Arc<Store>,
    pub agent_id: String,
    pub task: String,
    pub max_bytes: u64,
    pub llm: Option<LlmClient>,
    pub cancel: CancellationToken,
    pub runtime: tokio::runtime::Handle,
    /// `(summary, changed_files)` once `submit_result` was called.
    pub submitted: Option<(String, Vec<String>)>,
    pub logs: Vec<String>,
    pub written: Vec<String>,
    /// A node agent's tools (Remora), when the agent embodies a node.
    pub node: Option<super::node::NodeJob>,
    /// Messages a node agent sent (message_node, ask_parent).
    pub messages_sent: Vec<String>,
    /// What this agent may do.
    pub caps: crate::capabilities::Capabilities,
    /// Time limit of one `run_command`.
    pub command_timeout: std::time::Duration,
    /// Runs commands unconfined where the kernel cannot confine them
    /// (`agents.run_unconfined`).
    pub run_unconfined: bool,
    /// MCP servers and the web search endpoint.
    pub services: super::Services,
    /// The MCP tools (`server.tool`) this agent was offered.
    pub mcp_tools: Vec<String>,
    /// Which of the human's text each file was when last read.
    pub read: crate::workspace::ReadFrom,
    /// Why the last call, a write, was refused, when its code was the
    /// trouble (tool mode then asks for the code in another form).
    pub write_refused: Option<WriteRefused>,
    /// Which file a path the model gave was taken for, said once with the
    /// next call's answer (see [`super::meant`]).
    pub path_notes: Vec<super::meant::PathNote>,
    /// Paths refused once for ending in another file's path; written
    /// again, they are taken as new files.
    asked_paths: std::collections::HashSet<String>,
}

pub use super::tools::files::WriteRefused;

/// Whether `name` is one of the host functions (the tool table's).
pub(crate) fn is_function(name: &str) -> bool {
    super::tools::table::function(name).is_some()
}

impl AgentHost {
    /// The host of `run`, under its capabilities; must be made on the
    /// runtime.
    pub fn new(run: &super::Run) -> Self {
        let (config, job) = (run.config, run.job);
        Self {
            store: run.store.clone(),
            agent_id: job.id.clone(),
            task: job.spec.task.clone(),
            max_bytes: config.sync.max_file_bytes,
            // ask_llm() may have a model of its own (llm.roles).
            llm: run.llm().ok().map(|llm| {
                config
                    .llm
                    .roles
                    .get("ask_llm")
                    .map_or_else(|| llm.clone(), |m| llm.with_model(m))
            }),
            cancel: run.cancel.clone(),
            runtime: tokio::runtime::Handle::current(),
            submitted: None,
            logs: Vec::new(),
            written: Vec::new(),
            node: job.node.clone(),
            messages_sent: Vec::new(),
            caps: run.caps.clone(),
            command_timeout: std::time::Duration::from_millis(config.agents.command_timeout_ms),
            run_unconfined: config.agents.run_unconfined,
            services: run.services.clone(),
            mcp_tools: Vec::new(),
            read: Default::default(),
            write_refused: None,
            path_notes: Vec::new(),
            asked_paths: Default::default(),
        }
    }

    /// Runs `f` on the host off the async threads: host functions may
    /// wait on the runtime (ask_llm, MCP, web_search), a program may run
    /// for seconds.
    pub async fn off_runtime<R: Send + 'static>(
        mut self,
        f: impl FnOnce(&mut AgentHost) -> R + Send + 'static,
    ) -> Result<(R, AgentHost), super::AgentError> {
        tokio::task::spawn_blocking(move || {
            let r = f(&mut self);
            (r, self)
        })
        .await
        .map_err(|e| super::AgentError::Internal(format!("host task: {e}")))
    }

    /// The agent's files behind its capabilities.
    fn workspace(&self) -> Workspace<'_> {
        Workspace::new(&self.store, &self.agent_id, &self.caps, self.max_bytes)
    }

    /// A file operation's failure as the program sees it (a refusal is
    /// logged by [`Host::call`]).
    fn refused(&self, fname: &str, e: WorkspaceError) -> HostError {
        let said = format!("{fname}(): {e}");
        match e {
            WorkspaceError::Denied(_) => HostError::Denied(said),
            _ => HostError::Failed(said),
        }
    }

    /// Refuses a call the capabilities forbid, with the reason.
    fn allowed(
        &self,
        fname: &str,
        check: Result<(), crate::capabilities::Denied>,
    ) -> Result<(), HostError> {
        check.map_err(|denied| HostError::Denied(format!("{fname}(): {denied}")))
    }

    fn ask_llm(&self, prompt: String, context: Option<String>) -> Result<String, HostError> {
        let mut content = prompt;
        if let Some(ctx) = context.filter(|c| !c.is_empty()) {
            content.push_str("\n\nContext:\n");
            content.push_str(&ctx);
        }
        let messages = [
            ChatMessage::system("Answer the request directly and concisely. No preamble."),
            ChatMessage::user(content),
        ];
        let label = format!("ask_llm: {}", messages[1].content);
        let llm = self
            .llm
            .as_ref()
            .ok_or_else(|| HostError::Failed("ask_llm(): this agent has no model".into()))?;
        self.runtime
            .block_on(super::logged_chat(
                &self.store,
                &self.agent_id,
                &label,
                llm,
                &messages,
                &Default::default(),
                &self.cancel,
            ))
            .map_err(|e| HostError::Failed(format!("ask_llm(): {e}")))
    }
}

impl AgentHost {
    /// Calls the MCP tool `name` (`server.tool`) the agent was offered, with
    /// JSON arguments; logged as an effect whether it worked or not.
    pub fn call_mcp(&self, name: &str, args: serde_json::Value) -> Result<String, HostError> {
        if !self.mcp_tools.iter().any(|t| t == name) {
            return Err(format!("there is no tool `{name}`").into());
        }
        let shown = crate::brief::brief(args.as_object().unwrap_or(&Default::default()));
        let started = std::time::Instant::now();
        let result = self.mcp(name, args);
        self.log_denial(name, &result);
        let brief = result
            .as_ref()
            .map(|r| shown_text(r))
            .map_err(HostError::to_string);
        self.audit(name, &shown, started, brief);
        result
    }

    /// `mcp_call(server, tool, args)`: a tool of an MCP server the
    /// capabilities allow.
    fn mcp_call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<String, HostError> {
        const F: &str = "mcp_call";
        let name = format!("{server}.{tool}");
        if !self.services.mcp.server_names().any(|n| n == server) {
            let known: Vec<&str> = self.services.mcp.server_names().collect();
            return Err(format!(
                "{F}(): there is no MCP server `{server}` (mcp.servers has: {})",
                known.join(", ")
            )
            .into());
        }
        self.mcp(&name, arguments).map_err(|e| e.within(F))
    }

    fn mcp(&self, name: &str, args: serde_json::Value) -> Result<String, HostError> {
        self.allowed(name, self.caps.check_mcp(name))?;
        let started = std::time::Instant::now();
        let input = format!("{name} {args}");
        let result = self
            .runtime
            .block_on(self.services.mcp.call(name, args, &self.cancel));
        self.record_effect("mcp", &input, started, &result);
        result.map_err(HostError::failed)
    }

    /// Records an action no rollback undoes, whether it worked or not.
    fn record_effect<E: std::fmt::Display>(
        &self,
        kind: &str,
        input: &str,
        started: std::time::Instant,
        result: &Result<String, E>,
    ) {
        let output = match result {
            Ok(text) => text.clone(),
            Err(e) => format!("error: {e}"),
        };
        self.store.effect_record(
            kind,
            Some(&self.agent_id),
            input,
            &output,
            started.elapsed().as_millis() as i64,
        );
    }

    /// Asks the configured search endpoint; logged as a network effect.
    fn web_search(&self, query: &str) -> Result<String, HostError> {
        let base = self
            .services
            .web_search_url
            .as_deref()
            .ok_or("web_search(): no search endpoint is configured (tools.web_search_url)")?;
        let url = reqwest::Url::parse(base).map_err(|e| {
            HostError::Failed(format!("web_search(): tools.web_search_url {base:?}: {e}"))
        })?;
        let host = url.host_str().unwrap_or("");
        self.allowed("web_search", self.caps.check_endpoint(host, url.port()))?;
        let started = std::time::Instant::now();
        let result = self.runtime.block_on(super::world::search(
            &self.services.http,
            &url,
            query,
            self.services.web_search_results,
            &self.cancel,
        ));
        let input = format!("web_search {query:?} via {}", url.authority());
        self.record_effect("network", &input, started, &result);
        result.map_err(|e| HostError::Failed(format!("web_search(): {e}")))
    }
}

impl AgentHost {
    /// `env(name, default=None)`: an environment variable the capabilities
    /// let the agent read (`None`, or `default`, when unset); `env()`: all
    /// of those that are set, as a dict. What `os.getenv` and `os.environ`
    /// give a program too.
    fn env(
        &self,
        name: Option<String>,
        default: serde_json::Value,
    ) -> Result<serde_json::Value, HostError> {
        let Some(name) = name else {
            let set: serde_json::Map<String, serde_json::Value> = std::env::vars()
                .filter(|(k, _)| self.caps.check_env(k).is_ok())
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            return Ok(serde_json::Value::Object(set));
        };
        self.allowed("env", self.caps.check_env(&name))?;
        Ok(std::env::var(&name).map_or(default, serde_json::Value::String))
    }

    /// Runs an extension's tool (seed §3b) in the sandbox, its host calls
    /// answered by this agent's host functions under its capabilities (an
    /// extension tool is no way around them).
    fn run_extension_tool(
        &mut self,
        tool: &crate::remora::extensions::ExtTool,
        a: Vec<Value>,
        kw: Vec<(Value, Value)>,
    ) -> Result<Value, HostError> {
        struct ExtHost<'h> {
            agent: &'h mut AgentHost,
            args: Vec<Value>,
            kwargs: Vec<(Value, Value)>,
            result: Option<Value>,
        }
        impl Host for ExtHost<'_> {
            fn has_function(&self, name: &str) -> bool {
                matches!(name, "__chimera_args__" | "__chimera_kwargs__" | "__chimera_return__")
                    // No extension tool inside another: no recursion.
                    || (is_function(name) && name != "submit_result")
                    || crate::agent::node::is_tool(name)
            }
            fn cancelled(&self) -> bool {
                self.agent.cancelled()
            }
            fn call(
                &mut self,
                name: &str,
                a: Vec<Value>,
                kw: Vec<(Value, Value)>,
            ) -> Result<Value, HostError> {
                match name {
                    "__chimera_args__" => Ok(Value::List(std::mem::take(&mut self.args))),
                    "__chimera_kwargs__" => Ok(Value::dict(std::mem::take(&mut self.kwargs))),
                    "__chimera_return__" => {
                        self.result = a.into_iter().next();
                        Ok(Value::None)
                    }
                    _ => self.agent.call(name, a, kw),
                }
            }
        }
        // `import os` for the seed's `os.environ.get(...)`: the sandbox
        // answers it through `env`.
        let code = format!(
            "import os\n{}\n__chimera_return__({}(*__chimera_args__(), **__chimera_kwargs__()))\n",
            tool.source, tool.name
        );
        let mut host = ExtHost {
            agent: self,
            args: a,
            kwargs: kw,
            result: None,
        };
        crate::sandbox::run(&code, &mut host, crate::sandbox::Limits::default())
            .map_err(|e| HostError::Failed(format!("{}(): {e}", tool.name)))?;
        Ok(host.result.unwrap_or(Value::None))
    }

    /// `snapshot(name)`: checkpoints the agent's own overlay; its name
    /// (`checkpoint-N` when none is given).
    fn snapshot(&self, name: Option<String>) -> Result<String, HostError> {
        self.allowed("snapshot", self.caps.check_snapshot())?;
        let taken = self
            .store
            .checkpoints(&self.agent_id)
            .map_err(|e| HostError::Failed(format!("snapshot(): {e}")))?;
        let name = match name.map(|n| n.trim().to_owned()) {
            Some(n) if !n.is_empty() => n,
            _ => format!("checkpoint-{}", taken.len() + 1),
        };
        if name.chars().count() > 64 || name.chars().any(char::is_control) {
            return Err("snapshot(): a name is one line of at most 64 characters".into());
        }
        self.store
            .checkpoint_take(&self.agent_id, &name)
            .map(|c| c.name)
            .map_err(|e| HostError::Failed(format!("snapshot(): {e}")))
    }

    /// `rollback(name)`: the agent's overlay back to checkpoint `name`
    /// (never the human's files); says what no rollback undoes.
    fn rollback(&self, name: &str) -> Result<String, HostError> {
        self.allowed("rollback", self.caps.check_rollback())?;
        let back = self
            .store
            .checkpoint_restore(&self.agent_id, name)
            .map_err(|e| HostError::Failed(format!("rollback(): {e}")))?;
        let effects: Vec<String> = self
            .store
            .effects(back.effect_seq, None)
            .map_err(|e| HostError::Failed(format!("rollback(): {e}")))?
            .into_iter()
            .filter(|e| e.agent_id.as_deref() == Some(self.agent_id.as_str()))
            .map(|e| e.kind)
            .collect();
        let mut said = format!(
            "Your files are as at checkpoint `{name}` ({} changed then).",
            back.files
        );
        if !effects.is_empty() {
            said.push_str(&format!(
                " Not undone: {} action(s) since that no rollback reverses ({}).",
                effects.len(),
                effects.join(", ")
            ));
        }
        Ok(said)
    }

    /// `delegate`: `task` to A2A peer `peer` (a2a.peers), whose host the
    /// capabilities must allow; a diff in its answer is applied to this
    /// agent's overlay, file by file, where it applies and may be written.
    fn delegate(&mut self, peer: &str, task: &str) -> Result<String, HostError> {
        let spec = self.services.a2a_peers.get(peer).cloned().ok_or_else(|| {
            let known: Vec<&str> = self.services.a2a_peers.keys().map(String::as_str).collect();
            format!(
                "delegate(): no agent `{peer}` (a2a.peers has: {})",
                known.join(", ")
            )
        })?;
        let allowed = |url: &str| -> Result<(), HostError> {
            let u = reqwest::Url::parse(url)
                .map_err(|e| HostError::Failed(format!("delegate(): {url:?}: {e}")))?;
            self.allowed(
                "delegate",
                self.caps
                    .check_endpoint(u.host_str().unwrap_or(""), u.port()),
            )
        };
        allowed(&spec.url)?;
        let started = std::time::Instant::now();
        let http = self.services.http.clone();
        let answer = self.runtime.block_on(async {
            let card = crate::a2a::discover(&http, &spec.url).await?;
            let endpoint = card["url"].as_str().unwrap_or_default().to_owned();
            Ok::<_, crate::a2a::A2aError>((card, endpoint))
        });
        // Every request an agent makes is an effect, a read as well.
        let fetched = answer
            .as_ref()
            .map(|(_, endpoint)| format!("sends to {endpoint}"));
        self.record_effect(
            "network",
            &format!("GET the agent card of {peer} ({})", spec.url),
            started,
            &fetched.map_err(HostError::failed),
        );
        let started = std::time::Instant::now();
        let (_, endpoint) = answer.map_err(|e| HostError::Failed(format!("delegate(): {e}")))?;
        // The card names where to send: that host must be allowed too.
        allowed(&endpoint)?;
        let sent = self.runtime.block_on(async {
            tokio::select! {
                r = crate::a2a::send(&http, &endpoint, spec.token.as_deref(), task, true) => r.map_err(HostError::failed),
                _ = self.cancel.cancelled() => Err(HostError::from("cancelled")),
            }
        });
        let input = format!("delegate to {peer} ({endpoint}): {task}");
        let said = sent.as_ref().map(|t| {
            format!(
                "{} {}",
                t["id"].as_str().unwrap_or("-"),
                t["status"]["state"].as_str().unwrap_or("-")
            )
        });
        self.record_effect("a2a", &input, started, &said);
        let answer = sent.map_err(|e| HostError::Failed(format!("delegate(): {e}")))?;
        let text = crate::a2a::artifact_text(&answer);
        let (applied, skipped) = apply_diff(&self.workspace(), &text);
        self.written.extend(applied.iter().cloned());
        let mut out = format!(
            "{peer} answered: task {} {}.\n{text}",
            answer["id"].as_str().unwrap_or("-"),
            answer["status"]["state"].as_str().unwrap_or("-")
        );
        if !applied.is_empty() {
            out.push_str(&format!("\nApplied to your files: {}.", applied.join(", ")));
        }
        if !skipped.is_empty() {
            out.push_str(&format!("\nNot applied: {}.", skipped.join("; ")));
        }
        Ok(out)
    }
}

/// Applies the unified diff in `text` (another agent's answer) to the
/// agent's files through its [`Workspace`], file by file, where the write
/// is allowed and the change applies to the file as it is. The files
/// written, and those not, each with why.
fn apply_diff(ws: &Workspace<'_>, text: &str) -> (Vec<String>, Vec<String>) {
    let mut applied = Vec::new();
    let mut skipped = Vec::new();
    for (path, hunks) in crate::diff::parse_unified(text) {
        let written = (|| -> Result<(), HostError> {
            let p = ws.path(&path).map_err(HostError::failed)?;
            ws.may_write(&p).map_err(HostError::failed)?;
            let old = if ws.overlay().exists(&p).map_err(HostError::failed)? {
                ws.read_text(&p).map_err(HostError::failed)?
            } else {
                String::new()
            };
            let (eol, final_newline) = crate::diff::line_style(&old);
            let new = crate::diff::apply(&old, &hunks, eol, final_newline)
                .ok_or("its change does not apply to the file as it is here")?;
            if new.is_empty() && !old.is_empty() {
                ws.delete(&p).map_err(HostError::failed)
            } else {
                ws.write(&p, new.as_bytes()).map_err(HostError::failed)
            }
        })();
        match written {
            Ok(()) => applied.push(path),
            Err(why) => skipped.push(format!("{path}: {why}")),
        }
    }
    (applied, skipped)
}

fn shown_text(s: &str) -> String {
    shown(&Value::String(s.to_owned()))
}

/// A value as the audit log shows it: a text longer than a line by its
/// size (a file's content says nothing more in a log).
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) if s.len() > 80 || s.contains('\n') => format!("<{} bytes>", s.len()),
        Value::String(s) => format!("{s:?}"),
        Value::List(items) if items.len() > 20 => format!("<list of {}>", items.len()),
        other => other.to_string(),
    }
}

/// A call's arguments as the audit log shows them.
fn shown_args(a: &[Value], kw: &[(Value, Value)]) -> String {
    a.iter()
        .map(shown)
        .chain(kw.iter().map(|(k, v)| match k {
            Value::String(k) => format!("{k}={}", shown(v)),
            other => format!("{other}={}", shown(v)),
        }))
        .collect::<Vec<_>>()
        .join(", ")
}

impl AgentHost {
    /// A refused call is an event of its own in the audit trail.
    fn log_denial<T>(&self, name: &str, result: &Result<T, HostError>) {
        if let Err(HostError::Denied(why)) = result {
            self.store.audit_event(
                Some(&self.agent_id),
                "denied",
                &serde_json::json!({"call": name, "reason": why}),
            );
        }
    }

    /// Adds a call to the agent's audit log.
    fn audit(
        &self,
        tool: &str,
        args: &str,
        started: std::time::Instant,
        result: Result<String, String>,
    ) {
        self.store.tool_call_record(
            &self.agent_id,
            tool,
            args,
            result.as_deref().map_err(String::as_str),
            started.elapsed().as_millis() as i64,
        );
    }
}

impl Host for AgentHost {
    fn has_function(&self, name: &str) -> bool {
        is_function(name) || self.node.as_ref().is_some_and(|n| n.has_tool(name))
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Every call, read or write, allowed or not, goes to the audit log.
    fn call(
        &mut self,
        name: &str,
        a: Vec<Value>,
        kw: Vec<(Value, Value)>,
    ) -> Result<Value, HostError> {
        let args = shown_args(&a, &kw);
        let started = std::time::Instant::now();
        self.write_refused = None;
        let result = self.dispatch(name, a, kw);
        self.log_denial(name, &result);
        let logged = result.as_ref().map(shown).map_err(HostError::to_string);
        self.audit(name, &args, started, logged);
        result
    }
}

impl AgentHost {
    /// `run_command(argv)`: a program the capabilities allow, in a
    /// scratch checkout of the agent's view, confined by the kernel.
    fn run_command(&mut self, argv: Vec<String>) -> Result<String, HostError> {
        let name = "run_command";
        self.allowed(name, self.caps.check_command(&argv))?;
        let cancel = self.cancel.clone();
        // The project's environment, as its tests have it (its `.venv`
        // first on `PATH`, Chimera's build cache), in the project's root:
        // the agent names paths from there.
        let environment = crate::lang::Environment {
            folder: String::new(),
            ..crate::agent::checks::Auto::of(self.store.root(), None).env
        };
        let ran = crate::command::run_in_checkout(
            self.workspace().overlay(),
            |f| self.caps.may_see(f),
            &argv,
            &crate::command::How {
                limit: self.command_timeout,
                unconfined: self.run_unconfined,
                environment: Some(&environment),
            },
            &move || cancel.is_cancelled(),
        )?;
        let text = ran.describe();
        self.store.effect_record(
            "command",
            Some(&self.agent_id),
            &argv.join(" "),
            &text,
            ran.duration.as_millis() as i64,
        );
        Ok(text)
    }

    fn dispatch(
        &mut self,
        name: &str,
        a: Vec<Value>,
        kw: Vec<(Value, Value)>,
    ) -> Result<Value, HostError> {
        if let Some(tool) = self.node.as_ref().and_then(|n| n.extension_tool(name)) {
            return self.run_extension_tool(&tool, a, kw);
        }
        if let Some(node) = &self.node {
            if let Some(result) = node.call(&self.workspace(), name, &a, &kw) {
                if let Ok(Value::String(s)) = &result {
                    if s.starts_with(super::node::SENT) {
                        self.messages_sent.push(s.clone());
                    }
                }
                return result;
            }
        }
        self.table_call(name, &a, &kw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::ProjectPath;

    #[test]
    fn another_agents_diff_lands_only_where_this_agent_may_write() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/tmp", dir.path().join("link")).unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .stable_put("calc.py", b"x = 1\n", 0o644, 0, 1 << 20)
            .unwrap();
        store
            .agent_insert(&crate::store::AgentRecord::new("ag", "delegate"))
            .unwrap();
        let caps = crate::capabilities::Capabilities::new(&Default::default(), None)
            .unwrap()
            .on_disk(dir.path().to_path_buf());
        let ws = Workspace::new(&store, "ag", &caps, 1 << 20);
        let ov = ws.overlay();
        let answer = [
            crate::diff::unified("calc.py", "x = 1\n", "x = 2\n"),
            crate::diff::unified("new.py", "", "y = 1\n"),
            crate::diff::unified("../outside.py", "", "evil\n"),
            crate::diff::unified("link/evil.py", "", "evil\n"),
            crate::diff::unified(".ENV", "", "TOKEN=x\n"),
            crate::diff::unified("calc.py", "z = 9\n", "z = 0\n"),
        ]
        .concat();
        let (applied, skipped) = apply_diff(&ws, &answer);
        assert_eq!(applied, ["calc.py", "new.py"], "{skipped:?}");
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(skipped[3].contains("does not apply"), "{skipped:?}");
        let read = |p: &str| ov.read_text(&ProjectPath::parse(p).unwrap()).unwrap();
        assert_eq!(read("calc.py"), "x = 2\n");
        assert_eq!(read("new.py"), "y = 1\n");
        assert!(!std::path::Path::new("/tmp/evil.py").exists());
        let human = store.stable_entry("calc.py").unwrap().unwrap();
        assert_eq!(
            store.blob(&human.hash).unwrap(),
            b"x = 1\n",
            "the human's file is as it was"
        );
    }
}
