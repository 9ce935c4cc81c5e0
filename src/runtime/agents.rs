//! An agent's task on the runtime: queued for a slot, run by its brain
//! within `agents.timeout_ms` and a cancel, its end handed to the
//! lifecycle.

use super::*;
/// Records a new agent (`queued`), then starts it.
pub(super) fn spawn_agent(core: &Arc<Core>, job: Job) {
    let step = spawning(core, job);
    core.on_lifecycle(move |c| c.publish(step(c)));
}

/// The transition that records `job`'s agent (`queued`) and starts it; a
/// record the store refuses is the client's refusal, and nothing starts.
pub(super) fn spawning(core: &Arc<Core>, mut job: Job) -> router::Transition {
    // A file reached through a link is no file of the project (it may
    // lead outside): the task runs without it.
    job.spec.file = job
        .spec
        .file
        .and_then(|f| crate::paths::ProjectPath::parse(&f).ok())
        .filter(|p| crate::rootfs::check_no_links(&core.root, p).is_ok())
        .map(|p| p.to_string());
    // A switch made after the task was given is not its model.
    job.model = Some(
        core.model
            .read()
            .ok()
            .and_then(|m| m.clone())
            .unwrap_or_else(|| core.config.llm.model.clone()),
    );
    let rec = AgentRecord {
        owner: core.owner.clone(),
        feedback: job.feedback.clone(),
        ..AgentRecord::new(job.id.clone(), job.spec.clone())
    };
    Box::new(move |c| {
        let (out, created) = c.lifecycle.spawn(rec);
        if created {
            start_agent(c, job);
        }
        out
    })
}

/// Runs a queued agent when a slot is free (at most `agents.max_concurrent`
/// at once), within `agents.timeout_ms`.
pub(super) fn start_agent(core: &Arc<Core>, job: Job) {
    let id = job.id.clone();
    let cancel = core.shutdown.child_token();
    let entry = core.slots.enter(&id, cancel.clone());
    let core = core.clone();
    tokio::spawn(async move {
        let permit = core.slots.slot(&cancel).await;
        if permit.is_some() && !cancel.is_cancelled() {
            let i = id.clone();
            core.on_lifecycle_done(move |c| c.publish(c.lifecycle.start(&i)))
                .await;
            // A bug that panics in an agent ends that agent, `failed` with
            // the panic's message, never leaving it `running`.
            let run = std::panic::AssertUnwindSafe(run_agent(&core, &job, &cancel));
            let outcome = match futures_util::FutureExt::catch_unwind(run).await {
                Ok(outcome) => outcome,
                Err(panic) => Err(agent::AgentError::Internal(format!(
                    "the agent crashed ({}); this is a bug in Chimera, please report it",
                    panic_message(panic.as_ref())
                ))),
            };
            finish_agent(&core, &id, outcome, &cancel).await;
            if let Some(node_job) = &job.node {
                nodes::after_run(&core, &id, node_job);
            }
        }
        drop(permit);
        core.slots.leave(&id, entry);
    });
}

/// The text a panic carried.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// One run of `job`'s brain, stopped by a cancel or by `agents.timeout_ms`
/// without progress.
pub(super) async fn run_agent(
    core: &Arc<Core>,
    job: &Job,
    cancel: &CancellationToken,
) -> Result<agent::Done, agent::AgentError> {
    #[cfg(test)]
    if job.spec.task == tests::PANIC_TASK {
        panic!("a panic the tests asked for");
    }
    let out = core.out.clone();
    let pid = job.id.clone();
    // Each line of progress is a beat: the limit counts from the last.
    let pulse = Arc::new(crate::pulse::Pulse::new());
    let heard = pulse.clone();
    let progress: Arc<dyn Fn(String) + Send + Sync> = Arc::new(move |message: String| {
        heard.beat();
        out.event(Event::Progress {
            agent: pid.clone(),
            message,
        })
    });
    let limit = Duration::from_millis(core.config.agents.timeout_ms);
    if let Some(client) = job
        .spec
        .external
        .as_deref()
        .and_then(|e| e.strip_prefix(crate::task::MCP_SESSION_PREFIX))
    {
        // Taken over from a core that stopped: the MCP host that wrote it
        // talked to that core, and nothing here can finish its work.
        return Err(agent::AgentError::External(format!(
            "the MCP session of {client} ended with its core before it proposed"
        )));
    }
    let brain = agent::Brain::of(job, &core.config);
    // The model of its role, else the one chosen now; the agent keeps it
    // to the end whatever is chosen meanwhile.
    let mut config = core.config.clone();
    config.llm.model = model_of(core, job, brain);
    let llm = match (&core.llm, brain) {
        (Ok(llm), _) => Some(llm.with_model(&config.llm.model)),
        // An external agent asks its own model.
        (Err(_), agent::Brain::External) => None,
        (Err(e), _) => return Err(agent::AgentError::Internal(e.to_string())),
    };
    let external = External {
        core,
        progress: progress.clone(),
    };
    let run = async {
        let run = agent::Run::new(
            core.store.clone(),
            &config,
            llm.as_ref(),
            &core.services,
            job,
            cancel,
            &*progress,
        )?
        .with_outside(&external);
        agent::run(&run).await
    };
    // A cancel ends the run at once, even when its program is busy in the
    // sandbox: that thread finds the cancel at its next host call, or stops
    // at its CPU time limit, and its result is dropped.
    let run = async {
        tokio::select! {
            outcome = run => outcome,
            _ = cancel.cancelled() => Err(agent::AgentError::Cancelled),
        }
    };
    // A slow model still streaming its answer is working (its silence has
    // `llm.timeout_ms`).
    tokio::select! {
        outcome = run => outcome,
        _ = pulse.stopped(limit, Duration::MAX) => Err(agent::AgentError::TimedOut(
            core.config.agents.timeout_ms / 1000,
        )),
    }
}

pub(super) async fn finish_agent(
    core: &Arc<Core>,
    id: &str,
    outcome: Result<agent::Done, agent::AgentError>,
    cancel: &CancellationToken,
) {
    if cancel.is_cancelled() {
        // Rejected/cancelled by the user or Neovim is quitting: the record
        // was already updated by whoever cancelled, or is left for recovery.
        return;
    }
    let id = id.to_owned();
    match outcome {
        Ok(done) => {
            core.on_lifecycle_done(move |c| {
                c.publish(c.lifecycle.complete(&id, &done.summary, done.rounds))
            })
            .await
        }
        Err(agent::AgentError::Cancelled) => {}
        Err(e) => {
            if matches!(e, agent::AgentError::TimedOut(_)) {
                // Stops the LLM request and the sandbox at their next step.
                cancel.cancel();
            }
            let reason = e.to_string();
            core.on_lifecycle_done(move |c| c.publish(c.lifecycle.fail(&id, &reason)))
                .await
        }
    }
}

/// The model `job` asks: its role's (`llm.roles`), else the one chosen
/// when it was given, else the one chosen now, else `llm.model`.
fn model_of(core: &Core, job: &Job, brain: agent::Brain) -> String {
    let llm = &core.config.llm;
    let chosen = job
        .model
        .clone()
        .or_else(|| core.model.read().ok().and_then(|m| m.clone()));
    llm.roles
        .get(brain.role(job))
        .cloned()
        .or(chosen)
        .unwrap_or_else(|| llm.model.clone())
}

/// The ACP client run for the core: what an external agent says shown to
/// the human, its permission questions asked.
struct External<'c> {
    core: &'c Arc<Core>,
    progress: Arc<dyn Fn(String) + Send + Sync>,
}

impl agent::Outside for External<'_> {
    fn run<'r>(
        &'r self,
        run: &'r agent::Run<'r>,
    ) -> futures_util::future::BoxFuture<'r, Result<agent::Done, agent::AgentError>> {
        let (out, id) = (self.core.out.clone(), run.job.id.clone());
        let human = crate::acp::Human {
            progress: self.progress.clone(),
            show: Arc::new(move |piece| {
                out.event(Event::AgentSaid {
                    agent: id.clone(),
                    piece,
                })
            }),
            ask: asker(self.core, &run.job.id),
        };
        Box::pin(crate::acp::run(&self.core.acp, run, human))
    }
}
