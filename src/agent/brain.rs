//! The one way into an agent's run: which brain answers a task (chosen
//! here, once) and the context every brain works in.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{AgentError, Job, Services};
use crate::capabilities::Capabilities;
use crate::config::{AgentMode, Config};
use crate::llm::LlmClient;
use crate::store::Store;
use crate::workspace::Workspace;

/// What answers a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Brain {
    /// Code mode: each reply a program, changed definitions or a file.
    Code,
    /// Tool mode: one tool call per reply (most chat turns).
    Tools,
    /// A Remora node agent: its own definition, its tools, its messages.
    Node,
    /// An ACP agent (`agents.external`), not ours: it works in a folder of
    /// its own, taken back through its workspace.
    External,
}

impl Brain {
    /// The brain of `job` under `config`.
    pub fn of(job: &Job, config: &Config) -> Brain {
        if job.spec.external.is_some() {
            Brain::External
        } else if job.node.is_some() {
            Brain::Node
        } else if job.spec.mode().unwrap_or(config.agents.mode) == AgentMode::Tools {
            Brain::Tools
        } else {
            Brain::Code
        }
    }

    /// The role `job` plays for `llm.roles` (one of [`crate::config::ROLES`]).
    pub fn role(self, job: &Job) -> &'static str {
        match self {
            Brain::Node => "node",
            _ if job.chat.is_some() => "chat",
            Brain::Tools => "tools",
            Brain::Code | Brain::External => "task",
        }
    }
}

/// Everything one run of an agent works with, made once by whoever starts
/// it and passed whole to every step.
pub struct Run<'a> {
    pub store: Arc<Store>,
    /// The configuration the run keeps to its end (its model chosen).
    pub config: &'a Config,
    /// The model our brains ask ([`Run::llm`]); an external agent has
    /// its own.
    llm: Option<&'a LlmClient>,
    /// Who runs an external agent's process for this run ([`Outside`]).
    outside: Option<&'a dyn Outside>,
    pub services: &'a Services,
    pub job: &'a Job,
    /// What the agent may do: `job`'s preset under `capabilities`.
    pub caps: Capabilities,
    pub cancel: &'a CancellationToken,
    /// Hears short status lines for the human; each one is progress
    /// (`agents.timeout_ms` counts from the last).
    pub progress: &'a (dyn Fn(String) + Send + Sync),
    /// The last step said, which a model call's line adds its time to.
    said: std::sync::Mutex<String>,
    /// The test runs on the project as it is, shared by the run's tries.
    as_is: super::checks::AsIsRuns,
}

/// An agent that is not ours ([`Brain::External`]), run by whoever owns
/// its process and talks to the human for it (the runtime, through its
/// ACP client): the external arm of [`super::run`].
pub trait Outside: Send + Sync {
    fn run<'r>(
        &'r self,
        run: &'r Run<'r>,
    ) -> futures_util::future::BoxFuture<'r, Result<super::Done, AgentError>>;
}

impl<'a> Run<'a> {
    /// The run of `job`; fails when its capabilities preset is not one.
    /// `llm`: the model our brains ask (none for an external agent).
    pub fn new(
        store: Arc<Store>,
        config: &'a Config,
        llm: Option<&'a LlmClient>,
        services: &'a Services,
        job: &'a Job,
        cancel: &'a CancellationToken,
        progress: &'a (dyn Fn(String) + Send + Sync),
    ) -> Result<Self, AgentError> {
        Ok(Run {
            caps: capabilities(config, job, services)?,
            store,
            config,
            llm,
            outside: None,
            services,
            job,
            cancel,
            progress,
            said: std::sync::Mutex::new(String::new()),
            as_is: Default::default(),
        })
    }

    /// This run with `outside` running its external agent.
    pub fn with_outside(self, outside: &'a dyn Outside) -> Self {
        Run {
            outside: Some(outside),
            ..self
        }
    }

    /// The model our brains ask.
    pub fn llm(&self) -> Result<&'a LlmClient, AgentError> {
        self.llm.ok_or_else(|| {
            AgentError::Internal(format!("agent {} was started without a model", self.job.id))
        })
    }

    /// Who runs this run's external agent.
    pub(super) fn outside(&self) -> Result<&'a dyn Outside, AgentError> {
        self.outside.ok_or_else(|| {
            AgentError::Internal(format!(
                "agent {} is external, and nothing here runs its process",
                self.job.id
            ))
        })
    }

    /// The project's rules for an agent working on project path `near`
    /// ([`crate::rules`]), read from the human's text, as a section of the
    /// system prompt ("" when there are none). A file the agent may not
    /// read is never among them.
    pub fn rules(&self, near: Option<&str>) -> String {
        let read = |path: &str| {
            if self.store.is_secret(path) || !self.caps.may_see(path) {
                return None;
            }
            let entry = self.store.stable_entry(path).ok()??;
            if entry.too_large {
                return None;
            }
            let data = self.store.blob(&entry.hash).ok()?;
            Some(String::from_utf8_lossy(&data).into_owned())
        };
        crate::rules::section(&crate::rules::find(near, read))
    }

    /// Says `message` on the run's progress line.
    pub fn say(&self, message: impl Into<String>) {
        let message = message.into();
        if let Ok(mut said) = self.said.lock() {
            said.clone_from(&message);
        }
        (self.progress)(message)
    }

    /// The progress line while the model answers: the step, how long it
    /// has taken, and how much of the reply came.
    pub(crate) fn waiting(
        &self,
        took: std::time::Duration,
        tokens: usize,
        ahead: Option<&crate::llm::WaitAhead>,
    ) {
        let step = self.said.lock().map(|s| s.clone()).unwrap_or_default();
        let step = if step.is_empty() {
            "asking the model"
        } else {
            &step
        };
        let heard = match tokens {
            0 => ahead.map_or("waiting for the first token".to_owned(), |a| a.to_string()),
            1 => "1 token".to_owned(),
            n => format!("{n} tokens"),
        };
        (self.progress)(format!("{step} ({} s, {heard})", took.as_secs()))
    }

    /// The largest file the run reads or writes (`sync.max_file_bytes`).
    pub fn max_bytes(&self) -> u64 {
        self.config.sync.max_file_bytes
    }

    /// The agent's files behind its capabilities: the one way a step of
    /// the run reads or writes them.
    pub fn workspace(&self) -> Workspace<'_> {
        Workspace::new(&self.store, &self.job.id, &self.caps, self.max_bytes())
    }

    /// The project's tests as this run's agent runs them.
    pub fn tests(&self) -> super::checks::Tests {
        super::checks::Tests {
            store: self.store.clone(),
            agent: self.job.id.clone(),
            config: self.config.tests.clone(),
            caps: self.caps.clone(),
            max_bytes: self.max_bytes(),
            as_is: self.as_is.clone(),
            unconfined: self.config.agents.run_unconfined,
            near: self.job.spec.file.clone(),
        }
    }

    /// What a model call of this run is logged as: the model, then `what`.
    pub fn label(&self, what: &str) -> String {
        format!(
            "{} {}{what}",
            self.config.llm.provider_name(),
            self.config.llm.model
        )
    }
}

/// The capabilities `job` runs under.
pub fn capabilities(
    config: &Config,
    job: &Job,
    services: &Services,
) -> Result<Capabilities, AgentError> {
    Capabilities::new(&config.capabilities, job.spec.capabilities.as_deref())
        .map(|caps| caps.on_disk(services.root.clone()))
        .map_err(|e| AgentError::Denied(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskSpec;

    #[test]
    fn each_job_has_one_brain_and_the_role_it_plays() {
        let config = Config::default();
        let code = Job::default();
        assert_eq!(Brain::of(&code, &config), Brain::Code);
        assert_eq!(Brain::of(&code, &config).role(&code), "task");
        let tools = Job {
            spec: TaskSpec {
                mode: Some("tools".into()),
                ..TaskSpec::default()
            },
            ..Job::default()
        };
        assert_eq!(Brain::of(&tools, &config), Brain::Tools);
        assert_eq!(Brain::of(&tools, &config).role(&tools), "tools");
        let tools_by_default = Config {
            agents: crate::config::AgentsConfig {
                mode: AgentMode::Tools,
                ..Default::default()
            },
            ..Config::default()
        };
        assert_eq!(Brain::of(&code, &tools_by_default), Brain::Tools);
        // An external agent is chosen before any mode.
        let external = Job {
            spec: TaskSpec {
                external: Some("opencode".into()),
                mode: Some("tools".into()),
                ..TaskSpec::default()
            },
            ..Job::default()
        };
        assert_eq!(Brain::of(&external, &config), Brain::External);
    }
}
