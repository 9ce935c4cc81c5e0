//! The core's runtime: a tokio runtime on its own thread that owns the
//! store, the watcher and the agents, and answers [`ToCore`] messages with
//! [`ToEditor`] messages. Every spawned agent task is tracked with a
//! cancellation token; shutdown cancels them all and waits briefly.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::accept;
use crate::agent::{self, Job};
use crate::config::Config;
use crate::diff::FileDiff;
use crate::llm::LlmClient;
use crate::messages::{BufferText, Level, ToCore, ToEditor};
use crate::paths::ProjectPath;
use crate::rootfs::DiskError;
use crate::store::{now_ms, AgentRecord, AgentState, Store};
use crate::sync::{self, OpenBuffers};

mod chat;
mod history;
mod nodes;
pub mod remora;
pub use remora::SharedIndex;

/// Where the core's messages go (the Neovim bridge, or a channel in tests).
pub trait EditorSink: Send + Sync + 'static {
    fn send(&self, msg: ToEditor);
}

impl EditorSink for mpsc::UnboundedSender<ToEditor> {
    fn send(&self, msg: ToEditor) {
        let _ = mpsc::UnboundedSender::send(self, msg);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot start the Chimera runtime thread: {0}")]
    Thread(std::io::Error),
    #[error("the Chimera runtime has stopped; restart Neovim")]
    Stopped,
}

/// The editor's handle on the running core.
pub struct CoreHandle {
    tx: mpsc::UnboundedSender<ToCore>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub root: PathBuf,
    /// The Remora topology, readable from the editor without waiting on I/O.
    pub remora: SharedIndex,
}

impl CoreHandle {
    pub fn send(&self, msg: ToCore) -> Result<(), RuntimeError> {
        self.tx.send(msg).map_err(|_| RuntimeError::Stopped)
    }

    /// Stops the core: agents are cancelled, and the thread is given
    /// `grace` to finish before it is left to die with the process.
    pub fn shutdown(mut self, grace: Duration) {
        let _ = self.tx.send(ToCore::Shutdown);
        if let Some(thread) = self.thread.take() {
            let deadline = std::time::Instant::now() + grace;
            while !thread.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Starts the core for the project at `root`.
pub fn start(
    config: Config,
    root: PathBuf,
    sink: Arc<dyn EditorSink>,
) -> Result<CoreHandle, RuntimeError> {
    let (tx, rx) = mpsc::unbounded_channel();
    let root2 = root.clone();
    let remora = SharedIndex::default();
    let remora2 = remora.clone();
    let thread = std::thread::Builder::new()
        .name("chimera-core".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("chimera-worker")
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    sink.send(ToEditor::Notify {
                        level: Level::Error,
                        message: format!("cannot start tokio: {e}"),
                    });
                    return;
                }
            };
            rt.block_on(main_loop(config, root2, sink.clone(), rx, remora2));
            // Blocking tasks (a sandbox mid-run) are not waited for.
            rt.shutdown_timeout(Duration::from_millis(200));
        })
        .map_err(RuntimeError::Thread)?;
    Ok(CoreHandle {
        tx,
        thread: Some(thread),
        root,
        remora,
    })
}

/// State shared by the message loop and the agent tasks.
struct Core {
    config: Config,
    root: PathBuf,
    store: Arc<Store>,
    sink: Arc<dyn EditorSink>,
    buffers: OpenBuffers,
    agents: Mutex<HashMap<String, CancellationToken>>,
    slots: Arc<Semaphore>,
    llm: Result<LlmClient, String>,
    /// MCP servers and web search, shared by every agent.
    services: agent::Services,
    shutdown: CancellationToken,
    /// This Neovim instance's name in the store (`pid-start time`).
    owner: String,
    /// Keeps the Remora index up to date (`None` when `remora.index` is off).
    remora: Option<remora::Worker>,
    /// The Remora topology (shared with the editor).
    remora_index: SharedIndex,
    /// Activation chains of node agents messaging one another.
    chains: Mutex<crate::remora::chain::Chains>,
}

/// An owner without a heartbeat for this long is considered gone.
const STALE_OWNER_MS: i64 = 15_000;
const HEARTBEAT: Duration = Duration::from_secs(3);

impl Core {
    fn notify(&self, level: Level, message: impl Into<String>) {
        self.sink.send(ToEditor::Notify {
            level,
            message: message.into(),
        });
    }

    fn abs(&self, path: &str) -> String {
        self.root.join(path).to_string_lossy().into_owned()
    }

    /// The project path of a file the editor names, if it is part of the
    /// project: under the root and not through a symbolic link, which may
    /// lead outside or give a secret another name (its buffer is then not
    /// the ground truth of anything, and agents never see it).
    fn rel(&self, abs: &str) -> Option<ProjectPath> {
        let p = ProjectPath::from_absolute(&self.root, std::path::Path::new(abs))?;
        crate::rootfs::check_no_links(&self.root, &p).ok()?;
        Some(p)
    }

    fn send_agent(&self, id: &str) {
        if let Ok(agent) = self.store.agent(id) {
            self.sink.send(ToEditor::Agent { agent });
        }
    }

    fn send_proposal(&self, id: &str) {
        match accept::proposal_diffs(&self.store, id) {
            Ok(files) => {
                let files = files
                    .into_iter()
                    .map(|f| FileDiff {
                        path: self.abs(&f.path),
                        ..f
                    })
                    .collect();
                self.sink.send(ToEditor::Proposal {
                    id: id.to_owned(),
                    files,
                });
            }
            Err(e) => self.notify(
                Level::Error,
                format!("Chimera: cannot show proposal {id}: {e}"),
            ),
        }
    }

    /// Saves a new state for `id` (with summary/error) and tells the editor.
    fn set_state(&self, id: &str, state: AgentState, f: impl FnOnce(&mut AgentRecord)) {
        let result = self.store.agent(id).and_then(|mut rec| {
            rec.state = state;
            rec.updated_at = now_ms();
            f(&mut rec);
            self.store.agent_update(&rec)
        });
        if let Err(e) = result {
            self.notify(
                Level::Error,
                format!("Chimera: cannot record agent {id}: {e}"),
            );
        }
        self.send_agent(id);
    }

    /// The human's text of `path` changed: rebase the proposals on it and
    /// re-index its nodes.
    fn stable_changed(self: &Arc<Self>, path: &str) {
        self.rebase_proposals(path);
        if let Some(w) = &self.remora {
            w.send(remora::Job::Changed(path.to_owned()));
        }
    }

    /// Rebase every proposal on `path` onto the human's text.
    fn rebase_proposals(self: &Arc<Self>, path: &str) {
        // Runs on every buffer change: ask only for the proposals on `path`.
        let Ok(ids) = self.store.proposals_on(path) else {
            return;
        };
        for id in ids {
            self.rebase_one(&id);
        }
    }

    /// Rebases `id`'s proposal onto the human's text and, when that changed
    /// it, tells the editor (then returns true); a proposal whose every
    /// change the human already has ends `accepted`, announced as accepted.
    fn rebase_one(self: &Arc<Self>, id: &str) -> bool {
        match accept::rebase(&self.store, id) {
            Ok((true, _)) => {
                self.send_agent(id);
                let ended = self
                    .store
                    .agent(id)
                    .is_ok_and(|rec| rec.state == AgentState::Accepted);
                if ended {
                    self.sink
                        .send(ToEditor::ProposalCleared { id: id.to_owned() });
                    nodes::verdict(self, id, true, None);
                    self.sink.send(ToEditor::Resolved {
                        id: id.to_owned(),
                        accepted: true,
                        files: vec![],
                        hunk: None,
                    });
                } else {
                    self.send_proposal(id);
                }
                true
            }
            Ok((false, _)) => false,
            Err(e) => {
                self.notify(
                    Level::Warn,
                    format!("Chimera: cannot rebase proposal {id}: {e}"),
                );
                false
            }
        }
    }
}

async fn main_loop(
    config: Config,
    root: PathBuf,
    sink: Arc<dyn EditorSink>,
    mut rx: mpsc::UnboundedReceiver<ToCore>,
    shared: SharedIndex,
) {
    let store = match Store::open(&root) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            sink.send(ToEditor::Notify {
                level: Level::Error,
                message: format!(
                    "Chimera: cannot open the database in {}: {e}",
                    root.join(".chimera").display()
                ),
            });
            // Keep answering so the editor gets clear errors instead of silence.
            while let Some(msg) = rx.recv().await {
                match msg {
                    ToCore::Shutdown => return,
                    ToCore::Spawn { .. } | ToCore::Accept { .. } | ToCore::Reject { .. } => sink.send(ToEditor::Notify {
                        level: Level::Error,
                        message: "Chimera: the database could not be opened; see :checkhealth chimera".into(),
                    }),
                    _ => {}
                }
            }
            return;
        }
    };
    let buffers = OpenBuffers::default();
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let remora = if config.remora.index {
        match remora::Worker::start(remora::Context {
            store: store.clone(),
            root: root.clone(),
            config: config.remora.clone(),
            buffers: buffers.clone(),
            sink: sink.clone(),
            shared: shared.clone(),
            events: events_tx,
        }) {
            Ok(w) => Some(w),
            Err(e) => {
                sink.send(ToEditor::Notify {
                    level: Level::Warn,
                    message: format!("Chimera: cannot start the Remora index: {e}"),
                });
                None
            }
        }
    } else {
        None
    };
    let core = Arc::new(Core {
        remora,
        remora_index: shared,
        chains: Mutex::new(crate::remora::chain::Chains::new(
            config.remora.max_depth,
            config.remora.cooldown_ms,
        )),
        slots: Arc::new(Semaphore::new(config.agents.max_concurrent.max(1))),
        llm: LlmClient::new(&config.llm).map_err(|e| e.to_string()),
        services: agent::Services::new(&config, root.clone()),
        config,
        root,
        store,
        sink,
        buffers,
        agents: Mutex::new(HashMap::new()),
        shutdown: CancellationToken::new(),
        owner: format!("{}-{}", std::process::id(), now_ms()),
    });
    let c = core.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = c.shutdown.cancelled() => return,
                event = events_rx.recv() => match event {
                    Some(event) => c.emit(event, None),
                    None => return,
                },
            }
        }
    });
    if let Err(e) = core.store.instance_heartbeat(&core.owner) {
        core.notify(
            Level::Warn,
            format!("Chimera: cannot register this instance: {e}"),
        );
    }
    let c = core.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = c.shutdown.cancelled() => return,
                _ = tokio::time::sleep(HEARTBEAT) => {
                    let _ = c.store.instance_heartbeat(&c.owner);
                }
            }
        }
    });

    // Initial import in the background; the editor is never kept waiting.
    let c = core.clone();
    tokio::spawn(async move {
        let c2 = c.clone();
        let imported = tokio::task::spawn_blocking(move || {
            sync::import(
                &c2.store,
                &c2.root,
                c2.config.sync.max_file_bytes,
                &c2.buffers,
            )
        })
        .await;
        match imported {
            Ok(Ok(files)) => {
                c.sink.send(ToEditor::Ready {
                    root: c.root.to_string_lossy().into_owned(),
                    files,
                });
                c.send_snapshots();
                if let Some(w) = &c.remora {
                    w.send(remora::Job::IndexAll);
                }
                recover(&c);
                // The import left its pages in the WAL; copy them now, in
                // the background, rather than in the next accept's commit.
                let c2 = c.clone();
                let _ = tokio::task::spawn_blocking(move || c2.store.checkpoint()).await;
            }
            Ok(Err(e)) => c.notify(Level::Error, format!("Chimera: import failed: {e}")),
            Err(e) => c.notify(Level::Error, format!("Chimera: import failed: {e}")),
        }
    });
    let _watch = if core.config.sync.watch {
        let c = core.clone();
        match sync::watch(
            core.store.clone(),
            core.root.clone(),
            core.config.sync.max_file_bytes,
            Duration::from_millis(core.config.sync.debounce_ms),
            core.buffers.clone(),
            move |p| c.stable_changed(p.as_str()),
        ) {
            Ok(w) => Some(w),
            Err(e) => {
                core.notify(
                    Level::Warn,
                    format!(
                        "Chimera: {e}; changes made outside Neovim will be seen at the next start"
                    ),
                );
                None
            }
        }
    } else {
        None
    };

    while let Some(msg) = rx.recv().await {
        match msg {
            ToCore::Shutdown => break,
            ToCore::Spawn {
                id,
                task,
                context,
                file,
                cursor_line,
                mode,
                capabilities,
            } => spawn_agent(
                &core,
                Job {
                    id,
                    task,
                    context,
                    file,
                    cursor_line,
                    mode,
                    capabilities,
                    ..Job::default()
                },
            ),
            ToCore::Accept { id, buffers, hunk } => {
                let c = core.clone();
                tokio::task::spawn_blocking(move || accept_proposal(&c, &id, buffers, hunk));
            }
            ToCore::RejectHunk { id, hunk } => match accept::reject_hunk(&core.store, &id, hunk) {
                Ok(done) => {
                    core.send_agent(&id);
                    if done {
                        core.sink.send(ToEditor::ProposalCleared { id: id.clone() });
                    } else {
                        core.send_proposal(&id);
                    }
                    core.sink.send(ToEditor::Resolved {
                        id,
                        accepted: false,
                        files: vec![],
                        hunk: Some(hunk),
                    });
                }
                Err(e) => core.notify(
                    Level::Error,
                    format!("Chimera: cannot reject hunk {hunk} of {id}: {e}"),
                ),
            },
            ToCore::Reject { id, feedback } => reject_proposal(&core, &id, feedback),
            ToCore::Cancel { id } => cancel_agent(&core, &id),
            ToCore::BufferText(BufferText { path, text }) => {
                let Some(p) = core.rel(&path) else { continue };
                core.buffers.insert(p.as_str());
                let mode = core
                    .store
                    .stable_entry(p.as_str())
                    .ok()
                    .flatten()
                    .map_or(0o644, |e| e.mode);
                match core.store.stable_put(
                    p.as_str(),
                    text.as_bytes(),
                    mode,
                    now_ms() * 1_000_000,
                    core.config.sync.max_file_bytes,
                ) {
                    Ok(true) => core.stable_changed(p.as_str()),
                    Ok(false) => {}
                    Err(e) => core.notify(Level::Warn, format!("Chimera: cannot record {p}: {e}")),
                }
            }
            ToCore::BufferClosed { path } => {
                let Some(p) = core.rel(&path) else { continue };
                core.buffers.remove(p.as_str());
                if let Ok(true) = sync::sync_from_disk(
                    &core.store,
                    &core.root,
                    &p,
                    core.config.sync.max_file_bytes,
                ) {
                    core.stable_changed(p.as_str());
                }
            }
            ToCore::RemoraEnable { confirmed } => match &core.remora {
                Some(w) => w.send(remora::Job::Enable { confirmed }),
                None => core.notify(
                    Level::Warn,
                    "Chimera: Remora needs `remora.index = true` in setup{}",
                ),
            },
            ToCore::Snapshot { id, message } => {
                let c = core.clone();
                tokio::task::spawn_blocking(move || c.take_snapshot(Some(&id), &message));
            }
            ToCore::History => core.send_snapshots(),
            ToCore::Rollback {
                id,
                dry_run,
                buffers,
            } => {
                let c = core.clone();
                tokio::task::spawn_blocking(move || history::rollback(&c, &id, dry_run, buffers));
            }
            ToCore::Effects { since, kind } => match core.store.effects(since, kind.as_deref()) {
                Ok(effects) => core.sink.send(ToEditor::Effects { effects }),
                Err(e) => core.notify(
                    Level::Warn,
                    format!("Chimera: cannot read the effect log: {e}"),
                ),
            },
            ToCore::Fork { id, snapshot, task } => history::fork(&core, id, &snapshot, task),
            ToCore::NodeChat { node_id, message } => nodes::chat(&core, &node_id, message),
            ToCore::Chat {
                id,
                message,
                file,
                cursor_line,
            } => chat::send(&core, id, message, file, cursor_line),
            ToCore::ChatHistory => chat::history(&core),
            ToCore::ChatClear => chat::clear(&core),
            ToCore::NodeHistory { node_id } => {
                let c = core.clone();
                tokio::task::spawn_blocking(move || {
                    match c.store.remora_events_since(0, Some(&node_id), 10_000) {
                        Ok(events) => c.sink.send(ToEditor::NodeHistory { node_id, events }),
                        Err(e) => c.notify(
                            Level::Warn,
                            format!("Chimera: cannot read the history of {node_id}: {e}"),
                        ),
                    }
                });
            }
            ToCore::CheckLlm => {
                let c = core.clone();
                tokio::spawn(async move { check_llm(&c).await });
            }
        }
    }
    core.shutdown.cancel();
    let tokens: Vec<_> = core
        .agents
        .lock()
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default();
    for t in tokens {
        t.cancel();
    }
    // Agents still queued or running stay so: the next start (or another
    // instance, once this heartbeat is stale) recovers them.
    let _ = core.store.instance_remove(&core.owner);
}

/// After a restart or a crash: purge what is past retention, run the agents
/// left queued or running by stopped instances, and show every agent and
/// every pending proposal again.
fn recover(core: &Arc<Core>) {
    let retention = core.config.agents.retention_hours as i64 * 3_600_000;
    if let Err(e) = core.store.purge(retention) {
        core.notify(
            Level::Warn,
            format!("Chimera: cannot purge old agents: {e}"),
        );
    }
    let runnable = match core.store.recover(&core.owner, STALE_OWNER_MS) {
        Ok(r) => r,
        Err(e) => {
            core.notify(Level::Error, format!("Chimera: cannot recover agents: {e}"));
            vec![]
        }
    };
    if let Ok(all) = core.store.agents() {
        for agent in all {
            let id = agent.id.clone();
            let pending = agent.state == AgentState::Completed;
            // The files may have changed while Neovim was away (or an accept
            // was cut short): rebase onto what is there now, which tells the
            // editor when it changed anything.
            if pending && core.rebase_one(&id) {
                continue;
            }
            core.sink.send(ToEditor::Agent { agent });
            if pending {
                core.send_proposal(&id);
            }
        }
    }
    for rec in runnable {
        start_agent(core, nodes::hydrate(core, Job::from(rec)));
    }
}

fn spawn_agent(core: &Arc<Core>, mut job: Job) {
    job.file = job.file.and_then(|f| core.rel(&f)).map(|p| p.to_string());
    let rec = AgentRecord {
        context: job.context.clone(),
        owner: core.owner.clone(),
        file: job.file.clone(),
        cursor_line: job.cursor_line,
        feedback: job.feedback.clone(),
        mode: job.mode,
        capabilities: job.capabilities.clone(),
        ..AgentRecord::new(job.id.clone(), job.task.clone())
    };
    if let Err(e) = core.store.agent_insert(&rec) {
        core.notify(Level::Error, format!("Chimera: cannot create agent: {e}"));
        return;
    }
    core.send_agent(&job.id);
    start_agent(core, job);
}

/// Runs a queued agent when a slot is free (at most `agents.max_concurrent`
/// at once), within `agents.timeout_ms`.
fn start_agent(core: &Arc<Core>, job: Job) {
    let id = job.id.clone();
    let cancel = core.shutdown.child_token();
    if let Ok(mut agents) = core.agents.lock() {
        agents.insert(id.clone(), cancel.clone());
    }
    let core = core.clone();
    tokio::spawn(async move {
        let permit = tokio::select! {
            p = core.slots.clone().acquire_owned() => p.ok(),
            _ = cancel.cancelled() => None,
        };
        if permit.is_some() && !cancel.is_cancelled() {
            core.set_state(&id, AgentState::Running, |_| {});
            let outcome = match &core.llm {
                Ok(llm) => {
                    let sink = core.sink.clone();
                    let pid = id.clone();
                    let progress = move |message: String| {
                        sink.send(ToEditor::Progress {
                            id: pid.clone(),
                            message,
                        })
                    };
                    let limit = Duration::from_millis(core.config.agents.timeout_ms);
                    let run = agent::run(
                        core.store.clone(),
                        &core.config,
                        llm,
                        &core.services,
                        &job,
                        &cancel,
                        &progress,
                    );
                    // A cancel ends the run at once, even when its program is
                    // busy in the sandbox: that thread finds the cancel at its
                    // next host call, or stops at its CPU time limit, and its
                    // result is dropped.
                    let run = async {
                        tokio::select! {
                            outcome = run => outcome,
                            _ = cancel.cancelled() => Err(agent::AgentError::Cancelled),
                        }
                    };
                    match tokio::time::timeout(limit, run).await {
                        Ok(outcome) => outcome,
                        Err(_) => {
                            // Stops the LLM request and the sandbox at their next step.
                            cancel.cancel();
                            let _ = core.store.overlay_clear(&id);
                            core.set_state(&id, AgentState::Failed, |r| {
                                r.error = Some(format!(
                                    "timed out after {} s (agents.timeout_ms)",
                                    core.config.agents.timeout_ms / 1000
                                ))
                            });
                            core.notify(Level::Error, format!("Chimera agent {id} timed out"));
                            Err(agent::AgentError::Cancelled)
                        }
                    }
                }
                Err(e) => Err(agent::AgentError::Internal(e.clone())),
            };
            finish_agent(&core, &id, outcome, &cancel);
            if let Some(node_job) = &job.node {
                nodes::after_run(&core, &id, node_job);
            }
        }
        drop(permit);
        if let Ok(mut agents) = core.agents.lock() {
            agents.remove(&id);
        }
    });
}

fn finish_agent(
    core: &Core,
    id: &str,
    outcome: Result<agent::Done, agent::AgentError>,
    cancel: &CancellationToken,
) {
    if cancel.is_cancelled() {
        // Rejected/cancelled by the user or Neovim is quitting: the record
        // was already updated by whoever cancelled, or is left for recovery.
        return;
    }
    match outcome {
        Ok(done) => match accept::build_proposal(&core.store, id) {
            Ok(conflicts) => {
                let files = core
                    .store
                    .proposal_files(id)
                    .map(|f| f.into_iter().map(|f| f.path).collect())
                    .unwrap_or_default();
                core.set_state(id, AgentState::Completed, |r| {
                    r.summary = Some(done.summary.clone());
                    r.rounds = done.rounds;
                    r.changed_files = files;
                    r.conflicted = !conflicts.is_empty();
                });
                core.send_proposal(id);
            }
            Err(e) => core.set_state(id, AgentState::Failed, |r| r.error = Some(e.to_string())),
        },
        Err(agent::AgentError::Cancelled) => {}
        Err(e) => {
            core.set_state(id, AgentState::Failed, |r| r.error = Some(e.to_string()));
            core.notify(Level::Error, format!("Chimera agent {id} failed: {e}"));
        }
    }
}

fn accept_proposal(core: &Arc<Core>, id: &str, buffers: Vec<BufferText>, hunk: Option<usize>) {
    // Every accept can be rolled back: snapshot the project first.
    core.take_snapshot(None, &format!("before accepting {id}"));
    let mut buffers: HashMap<String, String> = buffers
        .into_iter()
        .filter_map(|b| core.rel(&b.path).map(|p| (p.to_string(), b.text)))
        .collect();
    // A loaded buffer the editor did not send (it accepted before it knew
    // the proposal's files): its last pushed text is in the stable layer.
    for f in core.store.proposal_files(id).unwrap_or_default() {
        if core.buffers.contains(&f.path) && !buffers.contains_key(&f.path) {
            let text = core
                .store
                .stable_entry(&f.path)
                .ok()
                .flatten()
                .and_then(|e| core.store.blob(&e.hash).ok());
            if let Some(text) = text {
                buffers.insert(f.path.clone(), String::from_utf8_lossy(&text).into_owned());
            }
        }
    }
    match accept::accept_some(&core.store, &core.root, id, &buffers, hunk) {
        Ok(out) => {
            for (path, start, end, lines) in out.buffer_edits {
                core.sink.send(ToEditor::EditBuffer {
                    id: id.to_owned(),
                    path: core.abs(&path),
                    start,
                    end,
                    lines,
                });
            }
            core.send_agent(id);
            if out.done {
                core.sink
                    .send(ToEditor::ProposalCleared { id: id.to_owned() });
            } else {
                core.send_proposal(id);
            }
            if let Some(w) = &core.remora {
                for f in &out.files {
                    w.send(remora::Job::Changed(f.clone()));
                }
            }
            if out.done {
                nodes::verdict(core, id, true, None);
            }
            let files = out.files.iter().map(|f| core.abs(f)).collect();
            core.sink.send(ToEditor::Resolved {
                id: id.to_owned(),
                accepted: true,
                files,
                hunk,
            });
        }
        Err(accept::AcceptError::Disk(DiskError::Changed(path))) => {
            // Someone changed the file after the watcher last looked: take
            // their text as the ground truth and rebase onto it, so nothing
            // of theirs is lost and the proposal shown is what would land.
            let rebased = ProjectPath::parse(&path).is_ok_and(|p| {
                sync::sync_from_disk(&core.store, &core.root, &p, core.config.sync.max_file_bytes)
                    .unwrap_or(false)
            });
            if rebased {
                core.stable_changed(&path);
            }
            core.send_agent(id);
            core.notify(
                Level::Warn,
                format!("Chimera: {path} changed on disk just before the accept of {id}; nothing was written. The proposal now includes that change: review it and accept again"),
            );
        }
        Err(e) => {
            core.send_agent(id);
            if matches!(e, accept::AcceptError::Conflict(_)) {
                core.send_proposal(id);
            }
            core.notify(Level::Error, format!("Chimera: cannot accept {id}: {e}"));
        }
    }
}

fn reject_proposal(core: &Arc<Core>, id: &str, feedback: Option<String>) {
    let completed = core
        .store
        .agent(id)
        .is_ok_and(|r| r.state == AgentState::Completed);
    if let (Some(text), true) = (
        feedback.as_deref().filter(|f| !f.trim().is_empty()),
        completed,
    ) {
        match accept::reject_with_feedback(
            &core.store,
            id,
            text,
            core.config.agents.feedback_rounds,
        ) {
            Ok(again) => {
                core.send_agent(id);
                core.sink
                    .send(ToEditor::ProposalCleared { id: id.to_owned() });
                core.sink.send(ToEditor::Resolved {
                    id: id.to_owned(),
                    accepted: false,
                    files: vec![],
                    hunk: None,
                });
                nodes::verdict(core, id, false, Some(text));
                if let Some(rec) = again {
                    start_agent(core, nodes::hydrate(core, Job::from(rec)));
                }
            }
            Err(e) => core.notify(Level::Error, format!("Chimera: cannot reject {id}: {e}")),
        }
        return;
    }
    let token = core.agents.lock().ok().and_then(|mut m| m.remove(id));
    if let Some(t) = token {
        t.cancel();
    }
    match accept::reject(&core.store, id, feedback.as_deref()) {
        Ok(()) => {
            nodes::verdict(core, id, false, feedback.as_deref());
            core.send_agent(id);
            core.sink
                .send(ToEditor::ProposalCleared { id: id.to_owned() });
            core.sink.send(ToEditor::Resolved {
                id: id.to_owned(),
                accepted: false,
                files: vec![],
                hunk: None,
            });
        }
        Err(e) => core.notify(Level::Error, format!("Chimera: cannot reject {id}: {e}")),
    }
}

fn cancel_agent(core: &Arc<Core>, id: &str) {
    match core.store.agent(id) {
        Ok(rec) if rec.state.is_active() => reject_proposal(core, id, None),
        Ok(rec) => core.notify(
            Level::Warn,
            format!(
                "Chimera: agent {id} is {}, not working; use :Chimera reject for a proposal",
                rec.state.as_str()
            ),
        ),
        Err(e) => core.notify(Level::Error, format!("Chimera: {e}")),
    }
}

async fn check_llm(core: &Core) {
    let msg = match &core.llm {
        Err(e) => ToEditor::LlmStatus {
            ok: false,
            message: e.clone(),
            models: vec![],
        },
        Ok(llm) => match llm.models().await {
            Ok(models) => {
                let want = &core.config.llm.model;
                let present = models
                    .iter()
                    .any(|m| m == want || m.starts_with(&format!("{want}:")) || models.len() == 1);
                ToEditor::LlmStatus {
                    ok: present,
                    message: if present {
                        format!("{} answers and serves model `{want}`", core.config.llm.url)
                    } else {
                        format!(
                            "{} answers but has no model `{want}` (it has: {})",
                            core.config.llm.url,
                            models.join(", ")
                        )
                    },
                    models,
                }
            }
            Err(e) => ToEditor::LlmStatus {
                ok: false,
                message: e.to_string(),
                models: vec![],
            },
        },
    };
    core.sink.send(msg);
}

#[cfg(test)]
mod tests;
