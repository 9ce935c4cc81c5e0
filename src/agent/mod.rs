//! Chimera's own agents: what a task is ([`Job`]), how it ends ([`Done`],
//! [`AgentError`]) and the one door into a run ([`run`]), which hands the
//! task to its [`Brain`] — code mode (`code`), tool mode ([`tools`]) or
//! a Remora node ([`node`]) — in one [`Run`] context. Every brain's answer
//! passes the same [`gate`] before it is proposed.

mod assertion;
mod attempt;
pub mod baseline;
pub mod brain;
mod budget;
pub mod checks;
mod code;
mod context;
mod corrections;
mod echo;
pub mod gate;
pub(crate) mod host;
pub mod locate;
pub mod meant;
pub mod node;
mod packages;
mod problem;
pub mod prompt;
mod refactor;
mod runaway;
mod runner;
mod scene;
mod scope;
mod test_output;
pub mod tools;
mod unasked;
pub mod world;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use brain::{capabilities, Brain, Outside, Run};
pub use code::choose_form;
pub use host::AgentHost;
pub use problem::Problem;
pub use prompt::EditForm;

use crate::config::Config;
use crate::llm::{ChatMessage, ChatOptions, LlmClient, LlmError};
use crate::store::{Store, StoreError};
use crate::task::TaskSpec;

/// Runs the task of `run` to completion with its brain: on success the
/// agent's overlay holds its changes.
pub async fn run(run: &Run<'_>) -> Result<Done, AgentError> {
    match Brain::of(run.job, run.config) {
        Brain::Tools => tools::run(run).await,
        Brain::Code | Brain::Node => code::run(run).await,
        // Its process and its folder are the ACP client's (`crate::acp`).
        Brain::External => run.outside()?.run(run).await,
    }
}

/// Why an agent ended without a proposal.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("LLM: {0}")]
    Llm(#[from] LlmError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the model's answer still failed after {rounds} repair rounds: {last}")]
    GaveUp { rounds: u32, last: String },
    #[error("none of {tries} answers fixed a failing test without breaking another: {last}")]
    NoFix { tries: u32, last: String },
    #[error("the model did not finish within {0} tool calls (agents.max_iterations)")]
    TooManySteps(usize),
    #[error("cancelled")]
    Cancelled,
    #[error("made no progress for {0} s (agents.timeout_ms)")]
    TimedOut(u64),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{0}")]
    Denied(String),
    /// An ACP agent (`agents.external`) failed or stopped.
    #[error("{0}")]
    External(String),
}

/// What agents reach beyond the project, shared by all of them.
#[derive(Clone)]
pub struct Services {
    /// The configured MCP servers.
    pub mcp: Arc<crate::mcp::Hub>,
    pub http: reqwest::Client,
    /// `tools.web_search_url`.
    pub web_search_url: Option<String>,
    pub web_search_results: usize,
    /// `a2a.peers`: the agents `delegate` may hand a task to.
    pub a2a_peers: std::collections::BTreeMap<String, crate::config::A2aPeer>,
    /// The project root: agents' writes are checked against the disk under it.
    pub root: std::path::PathBuf,
    /// The project's Remora index, on a core that keeps one: a task asks
    /// it which files define the names it mentions (see [`locate`]).
    pub index: Option<crate::remora::shared::SharedIndex>,
}

impl Services {
    /// The services of `config` for the project at `root`.
    pub fn new(config: &Config, root: std::path::PathBuf) -> Self {
        let http = crate::http::http_client();
        Self {
            mcp: Arc::new(crate::mcp::Hub::new(config.mcp.clone(), root.clone())),
            root,
            http,
            web_search_url: config.tools.web_search_url.clone(),
            web_search_results: config.tools.web_search_results,
            a2a_peers: config.a2a.peers.clone(),
            index: None,
        }
    }
}

impl Default for Services {
    fn default() -> Self {
        Self::new(&Config::default(), std::path::PathBuf::from("."))
    }
}

/// What the agent is asked to do.
#[derive(Debug, Clone, Default)]
pub struct Job {
    pub id: String,
    /// The task as the client gave it; its file is a project path.
    pub spec: TaskSpec,
    /// Earlier attempts the user rejected, with their feedback.
    pub feedback: Vec<crate::store::Feedback>,
    /// The node this agent embodies (Remora), hydrated by the runtime.
    pub node: Option<node::NodeJob>,
    /// A turn of the free chat (tool mode): the conversation so far.
    pub chat: Option<tools::ChatTurn>,
    /// The model chosen (`:Chimera model`, else `llm.model`) when the task
    /// was given; `None`: the one chosen when it starts.
    pub model: Option<String>,
}

impl Job {
    /// The job of a task a client gave.
    pub fn new(id: String, spec: TaskSpec) -> Self {
        Job {
            id,
            spec,
            ..Job::default()
        }
    }

    /// The cursor's line when the task was typed in `path`'s buffer.
    fn cursor_in(&self, path: &str) -> Option<usize> {
        self.spec
            .cursor_line()
            .filter(|_| self.spec.file.as_deref() == Some(path))
    }
}

impl From<crate::store::AgentRecord> for Job {
    /// The job of a stored agent, to run it (again). The conversation is
    /// not part of the record (a turn run again after a restart is a plain
    /// tool-mode task), and it runs with the model chosen then.
    fn from(rec: crate::store::AgentRecord) -> Self {
        Self {
            id: rec.id,
            spec: rec.spec,
            feedback: rec.feedback,
            ..Job::default()
        }
    }
}

/// A finished run: its summary and the files it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub summary: String,
    pub changed_files: Vec<String>,
    /// Model round trips used (1 = no repair).
    pub rounds: u32,
    /// The reply form that produced the change.
    pub form: &'static str,
}

/// One model call, recorded in the effect log whether it succeeded or not:
/// no rollback takes it back. `label` says what was asked.
pub(crate) async fn logged_chat(
    store: &Store,
    agent: &str,
    label: &str,
    llm: &LlmClient,
    messages: &[ChatMessage],
    opts: &ChatOptions,
    cancel: &CancellationToken,
) -> Result<String, LlmError> {
    Ok(
        logged_reply(store, agent, label, llm, messages, opts, cancel, &|_| {})
            .await?
            .into_text(),
    )
}

/// [`logged_chat`], keeping a native tool call apart; `on_delta` sees the
/// reply as it streams.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn logged_reply(
    store: &Store,
    agent: &str,
    label: &str,
    llm: &LlmClient,
    messages: &[ChatMessage],
    opts: &ChatOptions,
    cancel: &CancellationToken,
    on_delta: &(dyn Fn(&str) + Send + Sync),
) -> Result<crate::llm::Reply, LlmError> {
    let started = std::time::Instant::now();
    // A reply that loops is cut where that shows, as the token limit would
    // cut it, rather than heard out.
    let stop = cancel.child_token();
    let watch = std::sync::Mutex::new(runaway::Runaway::default());
    let watched = |piece: &str| {
        let mut watch = watch.lock().unwrap_or_else(|e| e.into_inner());
        if !stop.is_cancelled() && watch.feed(piece) {
            stop.cancel();
        }
        on_delta(piece)
    };
    let reply = llm.chat_reply(messages, opts, &stop, &watched).await;
    let watch = watch.into_inner().unwrap_or_else(|e| e.into_inner());
    // Cut where the loop showed, also when the whole reply had come before
    // the stop was heard.
    let reply = match reply {
        Err(LlmError::Cancelled) | Ok(_) if watch.looped().is_some() && !cancel.is_cancelled() => {
            Ok(crate::llm::Reply {
                text: watch.heard().to_owned(),
                tool_call: None,
                usage: Default::default(),
                looped: watch.looped().map(str::to_owned),
            })
        }
        reply => reply,
    };
    let mut output = match &reply {
        Ok(r) => match &r.tool_call {
            Some(call) => format!("{}{}", r.text, call.as_text()),
            None => r.text.clone(),
        },
        Err(e) => format!("error: {e}"),
    };
    if let Some(line) = watch.looped() {
        output.push_str(&format!(
            "\n[cut: the reply went into a loop, lines like `{line}`]"
        ));
    }
    store.effect_record(
        "llm",
        Some(agent),
        label,
        &output,
        started.elapsed().as_millis() as i64,
    );
    if reply.is_ok() {
        let used = tokens_used(llm, messages, &output, reply.as_ref().map(|r| r.usage));
        store.agent_usage_add(agent, used);
    }
    reply
}

/// What one call used: the tokens the server counted, else about four
/// characters a token of what was sent (`messages`) and heard (`output`),
/// marked as estimated; and their price (`llm.prices`).
fn tokens_used(
    llm: &LlmClient,
    messages: &[ChatMessage],
    output: &str,
    counted: Result<crate::llm::Usage, &LlmError>,
) -> crate::store::TokenUse {
    let counted = counted.unwrap_or_default();
    let estimate = |chars: usize| (chars as u64).div_ceil(4);
    let sent: usize = messages.iter().map(|m| m.content.len()).sum();
    let input = counted.input.unwrap_or_else(|| estimate(sent));
    let output = counted.output.unwrap_or_else(|| estimate(output.len()));
    crate::store::TokenUse {
        input,
        output,
        cost: llm.config().cost(input, output),
        estimated: counted.input.is_none() || counted.output.is_none(),
    }
}

impl Run<'_> {
    /// Asks the run's model, the call logged as `what` was asked.
    pub(crate) async fn ask(
        &self,
        what: &str,
        messages: &[ChatMessage],
        opts: &ChatOptions,
    ) -> Result<String, AgentError> {
        let reply = self.reply(what, messages, opts, &|_| {}).await?;
        Ok(reply.into_text())
    }

    /// [`Run::ask`], keeping a native tool call apart; `on_delta` sees
    /// the reply as it streams. Every request fits the model's context
    /// with room for the answer ([`budget`]); one the server still finds
    /// too long is cut to the size it names and sent once more.
    pub(crate) async fn reply(
        &self,
        what: &str,
        messages: &[ChatMessage],
        opts: &ChatOptions,
        on_delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<crate::llm::Reply, AgentError> {
        let answer = opts.reply_tokens(self.config.llm.max_tokens) as usize;
        let window = self.llm()?.context_window().await as usize;
        let fitted = budget::fit(
            messages,
            window.saturating_sub(answer) * budget::CHARS_PER_TOKEN,
        );
        let first = self.reply_once(what, &fitted, opts, on_delta).await;
        let Err(AgentError::Llm(e)) = &first else {
            return first;
        };
        let Some((context, request)) = budget::overflow(e) else {
            return first;
        };
        let sent: usize = fitted.iter().map(|m| m.content.len()).sum();
        let smaller = budget::after_overflow(context, request, sent, answer as u64)
            .min(sent.saturating_sub(1));
        self.say(format!(
            "the model's context is {context} tokens: asking again with less of the conversation"
        ));
        self.reply_once(what, &budget::fit(messages, smaller), opts, on_delta)
            .await
    }

    /// One model call, logged, with the progress line kept alive.
    async fn reply_once(
        &self,
        what: &str,
        messages: &[ChatMessage],
        opts: &ChatOptions,
        on_delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<crate::llm::Reply, AgentError> {
        let label = self.label(what);
        // Asked before the request goes: a server whose every slot works
        // for someone else, or that loads the model first, keeps this one
        // waiting, and the line says so.
        let llm = self.llm()?;
        let ahead = llm.wait_ahead().await;
        let tokens = std::sync::atomic::AtomicUsize::new(0);
        let counted = |piece: &str| {
            tokens.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            on_delta(piece)
        };
        let call = logged_reply(
            &self.store,
            &self.job.id,
            &label,
            llm,
            messages,
            opts,
            self.cancel,
            &counted,
        );
        tokio::pin!(call);
        // The line shows the time taken and the tokens heard, once a
        // second: a slow machine reading a long prompt says nothing for a
        // while, and more would only cost the editor's main thread.
        let started = std::time::Instant::now();
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                reply = &mut call => return reply.map_err(llm_error),
                _ = tick.tick() => {
                    let heard = tokens.load(std::sync::atomic::Ordering::Relaxed);
                    self.waiting(started.elapsed(), heard, ahead.as_ref());
                }
            }
        }
    }
}

/// What a failed model call means for the agent.
fn llm_error(e: LlmError) -> AgentError {
    match e {
        LlmError::Cancelled => AgentError::Cancelled,
        e => AgentError::Llm(e),
    }
}

#[cfg(test)]
mod tests;
