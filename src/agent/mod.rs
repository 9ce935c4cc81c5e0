//! The code-mode agent (seed 000): ask the model for a Python program, run
//! it in the Monty sandbox against the agent's overlay, and turn what it
//! wrote into a proposal. A traceback, or a program that forgot
//! `submit_result` or changed nothing, goes back to the model for a bounded
//! number of repair rounds; then the agent fails with the reason.

mod host;
pub mod prompt;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use host::AgentHost;

use crate::config::Config;
use crate::llm::{ChatMessage, LlmClient, LlmError};
use crate::overlay::Overlay;
use crate::sandbox::{self, Limits, SandboxError};
use crate::store::{Store, StoreError};

/// Why an agent ended without a proposal.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("LLM: {0}")]
    Llm(#[from] LlmError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the model's program still failed after {rounds} repair rounds: {last}")]
    GaveUp { rounds: u32, last: String },
    #[error("cancelled")]
    Cancelled,
    #[error("internal error: {0}")]
    Internal(String),
}

/// What the agent is asked to do.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub task: String,
    /// The user's selection, if the task was given with a range.
    pub context: Option<String>,
    /// The project path of the file the user was in, if any.
    pub file: Option<String>,
}

/// A finished run: the program's summary and the files it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub summary: String,
    pub changed_files: Vec<String>,
    /// Model round trips used (1 = no repair).
    pub rounds: u32,
}

/// Runs `job` to completion: on success the agent's overlay holds its
/// changes. `progress` hears short status lines.
pub async fn run(
    store: Arc<Store>,
    config: &Config,
    llm: &LlmClient,
    job: &Job,
    cancel: &CancellationToken,
    progress: &(dyn Fn(String) + Send + Sync),
) -> Result<Done, AgentError> {
    let max_bytes = config.sync.max_file_bytes;
    let (tree, file_text) = {
        let ov = Overlay::new(&store, &job.id, max_bytes);
        let tree = ov.files().map_err(|e| AgentError::Internal(e.to_string()))?;
        let file_text = job.file.as_deref().and_then(|f| {
            let p = crate::paths::ProjectPath::parse(f).ok()?;
            ov.read_text(&p).ok().map(|t| (f.to_owned(), t))
        });
        (tree, file_text)
    };
    let mut messages = vec![
        ChatMessage::system(prompt::SYSTEM),
        prompt::task_message(
            &job.task,
            job.context.as_deref(),
            file_text.as_ref().map(|(p, t)| (p.as_str(), t.as_str())),
            &tree,
        ),
    ];
    let limits = Limits {
        cpu_time: Duration::from_millis(config.agents.sandbox_timeout_ms),
        max_recursion: config.agents.max_recursion,
        ..Limits::default()
    };
    let max_rounds = config.agents.repair_rounds + 1;
    let mut last_problem = String::new();
    for round in 1..=max_rounds {
        progress(if round == 1 { "asking the model".into() } else { format!("repair round {}", round - 1) });
        let reply = llm.chat(&messages, cancel, &|_| {}).await.map_err(|e| match e {
            LlmError::Cancelled => AgentError::Cancelled,
            e => AgentError::Llm(e),
        })?;
        let code = prompt::extract_code(&reply);
        messages.push(ChatMessage::assistant(reply));
        store.overlay_clear(&job.id)?;
        progress("running the program".into());
        let mut host = AgentHost {
            store: store.clone(),
            agent_id: job.id.clone(),
            task: job.task.clone(),
            max_bytes,
            llm: llm.clone(),
            cancel: cancel.clone(),
            runtime: tokio::runtime::Handle::current(),
            submitted: None,
            logs: Vec::new(),
            written: Vec::new(),
        };
        let (result, host) = tokio::task::spawn_blocking(move || {
            let r = sandbox::run(&code, &mut host, limits);
            (r, host)
        })
        .await
        .map_err(|e| AgentError::Internal(format!("sandbox task: {e}")))?;
        let problem = match result {
            Err(SandboxError::Cancelled) => return Err(AgentError::Cancelled),
            Err(e) => e.to_string(),
            Ok(_) => match &host.submitted {
                None => "The program ended without calling submit_result(summary, changed_files).".to_owned(),
                Some(_) if store.overlay_entries(&job.id)?.is_empty() => {
                    "The program called submit_result but changed no file: write the changed file with write_file(path, content).".to_owned()
                }
                Some((summary, _)) => {
                    let changed = store.overlay_entries(&job.id)?.into_iter().map(|(p, _)| p).collect();
                    return Ok(Done { summary: summary.clone(), changed_files: changed, rounds: round });
                }
            },
        };
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        last_problem = problem.clone();
        messages.push(prompt::repair_message(&problem));
    }
    store.overlay_clear(&job.id)?;
    Err(AgentError::GaveUp { rounds: max_rounds - 1, last: last_problem })
}

#[cfg(test)]
mod tests;
