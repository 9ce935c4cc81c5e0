//! The core's runtime: a tokio runtime on its own thread that owns the
//! store, the watcher and the agents, and answers what an editor hands it
//! ([`FromEditor`], in the port's words) with what it says to the editor. Every spawned agent task is tracked with a
//! cancellation token; shutdown cancels them all and waits briefly.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{self, Job};
use crate::config::Config;
use crate::event::{AgentView, Level};
use crate::lifecycle::{self, Lifecycle, Outcome, Verdict};
use crate::llm::LlmClient;
use crate::paths::ProjectPath;
use crate::port::{Command, ForEditor, FromEditor};
use crate::store::{now_ms, AgentRecord, Store};
use crate::sync::{self, OpenBuffers};

mod agents;
mod chat;
mod history;
mod nodes;
mod outlet;
mod questions;
pub mod remora;
mod router;
mod slots;
use agents::{spawn_agent, start_agent};
pub use remora::SharedIndex;
use router::{answer, route};

use crate::event::{Event, Listener};
pub use crate::port::EditorSink;
use outlet::Outlet;
use questions::{asker, Questions};
use slots::Slots;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot start the Chimera runtime thread: {0}")]
    Thread(std::io::Error),
    #[error("the Chimera runtime has stopped; restart Neovim")]
    Stopped,
}

/// The editor's handle on the running core.
pub struct CoreHandle {
    tx: mpsc::UnboundedSender<FromEditor>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub root: PathBuf,
    /// The Remora topology, readable from the editor without waiting on I/O.
    pub remora: SharedIndex,
}

impl CoreHandle {
    pub fn enter(&self, msg: FromEditor) -> Result<(), RuntimeError> {
        self.tx.send(msg).map_err(|_| RuntimeError::Stopped)
    }

    /// Stops the core: agents are cancelled, and the thread is given
    /// `grace` to finish before it is left to die with the process.
    pub fn shutdown(mut self, grace: Duration) {
        // A core that stopped already has nothing to be told.
        let _ = self.tx.send(FromEditor::Shutdown);
        if let Some(thread) = self.thread.take() {
            let deadline = std::time::Instant::now() + grace;
            while !thread.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                // The thread's panic, if any, was reported where it happened.
                let _ = thread.join();
            }
        }
    }
}

/// A front end served beside the core in its process (the API): started
/// by whoever owns the process, opened on the core's runtime once the
/// core is up, closed when it stops.
pub trait FrontEnd: Send + 'static {
    /// Starts serving `port`.
    fn open(&mut self, port: Port);
    /// The core stops: stop serving while the runtime still runs.
    fn close(&mut self);
    /// Hears every event of the core (the API's feed), if it wants to.
    fn listener(&self) -> Option<Arc<dyn Listener>> {
        None
    }
}

/// When a core builds the Remora index of the whole project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indexing {
    /// In the background as it starts: an editor or a server lives long
    /// enough to use it, and reads the topology while it grows.
    AtStart,
    /// When something first needs the topology (a node's chat, `remora
    /// enable`, a ghost): a core that lives for one `chimera` command would
    /// otherwise parse a large project each time and stop before its index
    /// is stored.
    OnDemand,
}

/// Starts the core for the project at `root`; `front`, if any, is served
/// beside it (see [`FrontEnd`]).
pub fn start(
    config: Config,
    root: PathBuf,
    sink: Arc<dyn EditorSink>,
    front: Option<Box<dyn FrontEnd>>,
    indexing: Indexing,
) -> Result<CoreHandle, RuntimeError> {
    let (tx, rx) = mpsc::unbounded_channel();
    let out =
        Arc::new(Outlet::new(sink, &root).heard_by(front.as_ref().and_then(|f| f.listener())));
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
                    out.notify(Level::Error, format!("cannot start tokio: {e}"));
                    return;
                }
            };
            let index = (remora2, indexing);
            rt.block_on(main_loop(config, root2, out.clone(), rx, index, front));
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

/// State shared by the message loop, the lifecycle thread and the agent tasks.
struct Core {
    config: Config,
    root: PathBuf,
    store: Arc<Store>,
    /// Where what the core says goes: the editor, and the API's feed.
    out: Arc<Outlet>,
    /// Every agent and proposal transition; used only on the lifecycle
    /// thread (through [`Core::on_lifecycle`]).
    lifecycle: Lifecycle,
    /// Queue of the lifecycle thread.
    steps: std::sync::mpsc::Sender<Step>,
    /// The agents' tasks and the slots they run in.
    slots: Slots,
    llm: Result<LlmClient, crate::llm::LlmError>,
    /// The model new agents ask when their role names none (`:Chimera
    /// model`); `None`: `llm.model`.
    model: std::sync::RwLock<Option<String>>,
    /// MCP servers and web search, shared by every agent.
    services: agent::Services,
    shutdown: CancellationToken,
    /// This Neovim instance's name in the store (`pid-start time`).
    owner: String,
    /// Keeps the Remora index up to date (`None` when `remora.index` is off).
    remora: Option<remora::Worker>,
    /// The Remora topology (shared with the editor).
    remora_index: SharedIndex,
    /// When the whole project is indexed.
    indexing: Indexing,
    /// Activation chains of node agents messaging one another.
    chains: Mutex<crate::remora::chain::Chains>,
    /// The ACP agents' processes (`agents.external`).
    acp: crate::acp::Pool,
    /// Permission questions put to the human, waiting for an answer.
    questions: Questions,
}

/// Work for the lifecycle thread.
type Step = Box<dyn FnOnce(&Arc<Core>) + Send>;

/// An owner without a heartbeat for this long is considered gone.
const STALE_OWNER_MS: i64 = 15_000;
const HEARTBEAT: Duration = Duration::from_secs(3);
/// Heartbeats between two looks for agents of stopped instances.
const TAKE_OVER_BEATS: u32 = 5;
/// Heartbeats between two purges past `agents.retention_hours` (an hour).
const PURGE_BEATS: u32 = 1_200;

impl Core {
    fn notify(&self, level: Level, message: impl Into<String>) {
        self.out.notify(level, message.into());
    }

    fn abs(&self, path: &str) -> String {
        self.root.join(path).to_string_lossy().into_owned()
    }

    /// Queues `step` on the lifecycle thread, where every transition runs,
    /// one at a time, in the order they were asked for.
    fn on_lifecycle(&self, step: impl FnOnce(&Arc<Core>) + Send + 'static) {
        if self.steps.send(Box::new(step)).is_err() {
            self.notify(
                Level::Error,
                "Chimera: the lifecycle thread has stopped; restart Neovim",
            );
        }
    }

    /// [`Core::on_lifecycle`], waiting until the step ran.
    async fn on_lifecycle_done(&self, step: impl FnOnce(&Arc<Core>) + Send + 'static) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.on_lifecycle(move |core| {
            step(core);
            // The waiter gave up (its caller was cancelled): nobody to tell.
            let _ = tx.send(());
        });
        // Dropped unsent only when the lifecycle thread stopped; the caller
        // goes on as after the step.
        let _ = rx.await;
    }

    /// Tells the editor about `out` and does what follows from it: Remora
    /// re-indexes changed files and hears node verdicts; agents to run start.
    fn publish(self: &Arc<Self>, out: Outcome) {
        self.publish_into(out, None);
    }

    /// [`Core::publish`], returning the events it caused.
    fn publish_told(self: &Arc<Self>, out: Outcome) -> Vec<Event> {
        let mut kept = Vec::new();
        self.publish_into(out, Some(&mut kept));
        kept
    }

    /// [`Core::publish`], a copy of each event into `kept` when a client
    /// waits for them (a proposal of hundreds of files is not copied for
    /// nobody).
    fn publish_into(self: &Arc<Self>, out: Outcome, mut kept: Option<&mut Vec<Event>>) {
        let told = lifecycle::announce(&out);
        for edit in told.edits {
            self.out.direct(edit);
        }
        for event in told.events {
            if let Some(kept) = kept.as_deref_mut() {
                kept.push(event.clone());
            }
            self.out.event(event);
        }
        if let Some(w) = &self.remora {
            for p in &out.changed_paths {
                w.send(remora::Job::Changed(p.clone()));
            }
        }
        for (id, verdict) in &out.verdicts {
            match verdict {
                Verdict::Accepted { done: true, .. } => nodes::verdict(self, id, true, None),
                Verdict::Rejected {
                    feedback,
                    done: true,
                    ..
                } => nodes::verdict(self, id, false, feedback.as_deref()),
                _ => {}
            }
        }
        for rec in out.run {
            start_agent(self, nodes::hydrate(self, Job::from(rec)));
        }
    }
}

/// Runs the lifecycle's steps on a thread of their own (inside the tokio
/// runtime, so a step may start agents), until the core is dropped.
fn lifecycle_thread(rx: std::sync::mpsc::Receiver<Step>, core: std::sync::Weak<Core>) {
    let handle = tokio::runtime::Handle::current();
    let started = std::thread::Builder::new()
        .name("chimera-lifecycle".into())
        .spawn(move || {
            let _runtime = handle.enter();
            while let Ok(step) = rx.recv() {
                let Some(core) = core.upgrade() else { return };
                step(&core);
            }
        });
    if let Err(e) = started {
        eprintln!("chimera: cannot start the lifecycle thread: {e}");
    }
}

async fn main_loop(
    config: Config,
    root: PathBuf,
    out: Arc<Outlet>,
    mut rx: mpsc::UnboundedReceiver<FromEditor>,
    index: (SharedIndex, Indexing),
    mut front: Option<Box<dyn FrontEnd>>,
) {
    let secrets =
        crate::capabilities::Secrets::new(&config.capabilities.secrets).unwrap_or_default();
    let store = match Store::open_with(&root, secrets) {
        Ok(s) => Arc::new(s),
        Err(e) => return without_store(&root, &out, &mut rx, &e.to_string()).await,
    };
    // Before the import: stable still says what the files held before a
    // write that a crash cut.
    match crate::store::journal::recover(&store, &root) {
        Ok(done) => {
            for r in done {
                out.notify(Level::Warn, format!("Chimera: {}", r.describe()));
            }
        }
        Err(e) => out.notify(Level::Error, format!("Chimera: {e}")),
    }
    match store.forget_secrets() {
        Ok(0) => {}
        Ok(n) => out.notify(Level::Info, format!(
                "Chimera: removed {n} copies of secret files (capabilities.secrets) that an older version kept in .chimera/chimera.db"
            )),
        Err(e) => out.notify(Level::Warn, format!("Chimera: cannot remove secret files' copies from the store: {e}")),
    }
    let core = build_core(config, root, out, store, index);
    // The watcher watches the folders the import lists, each before it is
    // listed: a file written meanwhile is seen by one or the other (both:
    // the watcher's change queues behind the import), never by neither.
    let watch = start_watcher(&core);
    // The import is the lifecycle's first step: a task a front end sends
    // the moment it opens (`chimera task` with no core) queues behind it.
    start_background(&core, watch.as_ref().map(|w| w.watching().clone()));
    if let Some(front) = front.as_mut() {
        front.open(Port(core.clone()));
    }
    while let Some(msg) = rx.recv().await {
        let Some(msg) = read(msg, &core.root, &core.out) else {
            continue;
        };
        match msg {
            FromEditor::Command(command) => route(&core, command),
            FromEditor::Query(query) => router::answer_editor(&core, query),
            FromEditor::Shutdown => break,
            // Read above: an editor's words are put into the port's once.
            FromEditor::Unread(_) => {}
        }
    }
    core.shutdown.cancel();
    // Not left to the server's tasks, which the runtime may drop first.
    if let Some(front) = front.as_mut() {
        front.close();
    }
    core.slots.stop_all();
    // Agents still queued or running stay so: the next start (or another
    // instance, once this heartbeat is stale) recovers them.
    let _ = core.store.instance_remove(&core.owner);
}

/// The project path of a file an editor names, if it is part of the
/// project at `root`: under the root and not through a symbolic link,
/// which may lead outside or give a secret another name (its buffer is
/// then not the ground truth of anything, and agents never see it).
pub fn project_path(root: &std::path::Path, abs: &str) -> Option<ProjectPath> {
    let p = ProjectPath::from_absolute(root, std::path::Path::new(abs))?;
    crate::rootfs::check_no_links(root, &p).ok()?;
    Some(p)
}

/// The core as a front end reaches it: typed messages in, the lifecycle's
/// typed answers out, and its store, root, index and options to read.
#[derive(Clone)]
pub struct Port(Arc<Core>);

impl Port {
    pub fn store(&self) -> &Store {
        &self.0.store
    }

    pub fn root(&self) -> &std::path::Path {
        &self.0.root
    }

    /// Runs `msg`; resolves to what the core said about it (empty for
    /// commands that are not transitions).
    pub fn call(&self, msg: Command) -> futures_util::future::BoxFuture<'static, lifecycle::Told> {
        let core = self.0.clone();
        Box::pin(async move { answer(&core, msg).await })
    }

    /// The Remora topology (`None` when `remora.index` is off).
    pub fn index(&self) -> Option<SharedIndex> {
        self.0.remora.is_some().then(|| self.0.remora_index.clone())
    }

    /// [`Port::index`] for a read that needs the whole project's: on a core
    /// that indexes on demand, once it is built (now, if nothing asked for
    /// it yet); at once on one that builds it as it starts (a read while it
    /// grows sees what is indexed so far).
    pub async fn indexed(&self) -> Option<SharedIndex> {
        if self.0.indexing == Indexing::OnDemand {
            self.0.index_done().await;
        }
        self.index()
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }

    /// Once the steps asked before have run (the start's import among
    /// them): a read after it sees the project.
    pub async fn settled(&self) {
        self.0.on_lifecycle_done(|_| {}).await
    }

    /// Cancelled when the core stops.
    pub fn stopping(&self) -> CancellationToken {
        self.0.shutdown.clone()
    }

    /// Tells the human of trouble serving (a port taken, a socket gone).
    pub fn warn(&self, message: String) {
        self.0
            .out
            .notify(Level::Warn, format!("Chimera: {message}"))
    }

    /// This core took over the project from one that stopped (a `chimera`
    /// command's): what it ran is in the store; shows it here and runs
    /// what it left.
    pub fn take_over(&self) {
        self.0
            .on_lifecycle(|c| c.publish(c.lifecycle.recover(retention_ms(c), STALE_OWNER_MS)))
    }
}

/// `msg` in the port's words (`None`: nothing for the core; what the
/// human must know of it is said).
fn read(msg: FromEditor, root: &std::path::Path, out: &Outlet) -> Option<FromEditor> {
    let FromEditor::Unread(words) = msg else {
        return Some(msg);
    };
    match words.into_port(&|abs| project_path(root, abs)) {
        Ok(msg) => msg,
        Err(said) => {
            out.notify(Level::Error, said);
            None
        }
    }
}

/// The database could not be opened: keep answering, so the editor gets
/// clear errors instead of silence.
async fn without_store(
    root: &std::path::Path,
    out: &Arc<Outlet>,
    rx: &mut mpsc::UnboundedReceiver<FromEditor>,
    error: &str,
) {
    out.notify(
        Level::Error,
        format!(
            "Chimera: cannot open the database in {}: {error}",
            root.join(".chimera").display()
        ),
    );
    let reason =
        format!("the project's database cannot be opened ({error}); see :checkhealth chimera");
    while let Some(msg) = rx.recv().await {
        let Some(msg) = read(msg, root, out) else {
            continue;
        };
        match msg {
            FromEditor::Shutdown => return,
            // The editor shows the new agent as queued: it ends at once,
            // failed with the reason, rather than waiting forever.
            FromEditor::Command(Command::Spawn { id, spec }) => out.event(Event::Agent {
                agent: AgentView::from(&AgentRecord {
                    state: crate::store::AgentState::Failed,
                    error: Some(reason.clone()),
                    ..AgentRecord::new(id, spec)
                }),
                proposal: None,
                cleared: false,
            }),
            FromEditor::Command(Command::Accept { .. } | Command::Reject { .. }) => {
                out.notify(Level::Error, format!("Chimera: {reason}"))
            }
            _ => {}
        }
    }
}

fn build_core(
    config: Config,
    root: PathBuf,
    out: Arc<Outlet>,
    store: Arc<Store>,
    (shared, indexing): (SharedIndex, Indexing),
) -> Arc<Core> {
    let buffers = OpenBuffers::default();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let remora = config.remora.index.then(|| {
        remora::Worker::start(remora::Context {
            store: store.clone(),
            root: root.clone(),
            config: config.remora.clone(),
            buffers: buffers.clone(),
            out: out.clone(),
            shared: shared.clone(),
            events: events_tx,
        })
    });
    let remora = match remora {
        Some(Err(e)) => {
            out.notify(
                Level::Warn,
                format!("Chimera: cannot start the Remora index: {e}"),
            );
            None
        }
        Some(Ok(w)) => Some(w),
        None => None,
    };
    let owner = format!("{}-{}", std::process::id(), now_ms());
    let (steps, steps_rx) = std::sync::mpsc::channel();
    let shutdown = CancellationToken::new();
    let core = Arc::new(Core {
        acp: crate::acp::Pool::new(root.clone(), shutdown.clone()),
        questions: Questions::default(),
        services: agent::Services {
            index: remora.is_some().then(|| shared.clone()),
            ..agent::Services::new(&config, root.clone())
        },
        remora,
        remora_index: shared,
        indexing,
        chains: Mutex::new(crate::remora::chain::Chains::new(
            config.remora.max_depth,
            config.remora.cooldown_ms,
        )),
        slots: Slots::new(config.agents.max_concurrent),
        llm: LlmClient::new(&config.llm),
        model: Default::default(),
        lifecycle: Lifecycle {
            store: store.clone(),
            root: root.clone(),
            buffers,
            max_file_bytes: config.sync.max_file_bytes,
            feedback_rounds: config.agents.feedback_rounds,
            owner: owner.clone(),
        },
        steps,
        config,
        root,
        store,
        out,
        shutdown,
        owner,
    });
    lifecycle_thread(steps_rx, Arc::downgrade(&core));
    forward_remora_events(&core, events_rx);
    core
}

/// Remora events from the index worker wake the node agents subscribed.
fn forward_remora_events(
    core: &Arc<Core>,
    mut events: mpsc::UnboundedReceiver<crate::remora::events::Event>,
) {
    let c = core.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = c.shutdown.cancelled() => return,
                event = events.recv() => match event {
                    Some(event) => c.emit(event, None),
                    None => return,
                },
            }
        }
    });
}

/// The heartbeat, then (on the lifecycle thread, before anything the
/// editor asks) the initial import, adding its folders to `watching`, and
/// the recovery of earlier agents.
fn start_background(core: &Arc<Core>, watching: Option<sync::Watching>) {
    if let Err(e) = core.store.instance_heartbeat(&core.owner) {
        core.notify(
            Level::Warn,
            format!("Chimera: cannot register this instance: {e}"),
        );
    }
    let c = core.clone();
    tokio::spawn(async move {
        let mut beats = 0u32;
        loop {
            tokio::select! {
                _ = c.shutdown.cancelled() => return,
                _ = tokio::time::sleep(HEARTBEAT) => {
                    // A missed beat is retried at the next one; only a run of them marks
                    // this instance stale.
                    let _ = c.store.instance_heartbeat(&c.owner);
                    beats = beats.wrapping_add(1);
                    // Another Neovim on this project may stop (or crash)
                    // while this one runs: its agents are not left behind.
                    if beats.is_multiple_of(TAKE_OVER_BEATS) {
                        c.on_lifecycle(|c| c.publish(c.lifecycle.take_over(STALE_OWNER_MS)));
                    }
                    // Neovim may stay open for days: retention is not only
                    // applied at start.
                    if beats.is_multiple_of(PURGE_BEATS) {
                        c.on_lifecycle(|c| c.publish(c.lifecycle.purge(retention_ms(c))));
                    }
                }
            }
        }
    });
    // The editor is never kept waiting: what it asks meanwhile queues
    // behind the import on the lifecycle thread.
    core.on_lifecycle(move |c| {
        let (lc, max_bytes) = (&c.lifecycle, c.config.sync.max_file_bytes);
        let imported = sync::import_watching(
            &lc.store,
            &lc.root,
            max_bytes,
            &lc.buffers,
            watching.as_ref(),
        );
        if let Some(e) = watching.as_ref().and_then(sync::Watching::refused) {
            watch_lost(c, &e);
        }
        match imported {
            Ok(files) => {
                send_snapshots(c);
                match c.remora.as_ref() {
                    // The index reads every file first.
                    Some(w) if c.indexing == Indexing::AtStart => w.send(remora::Job::IndexAll),
                    None if c.indexing == Indexing::AtStart => fill_in_background(c),
                    _ => {}
                }
                c.publish(c.lifecycle.recover(retention_ms(c), STALE_OWNER_MS));
                // After the proposals that wait: what the editor was asked
                // to do before the core was up acts on them.
                c.out.event(Event::Ready { files });
                // The import left its pages in the WAL; copy them now, in
                // the background, rather than in the next accept's commit.
                let c2 = c.clone();
                tokio::task::spawn_blocking(move || c2.store.checkpoint());
            }
            Err(e) => c.notify(Level::Error, format!("Chimera: import failed: {e}")),
        }
    });
}

/// Reads what the import left unread (`store/unread.rs`), a part at a
/// time, until none is left or the core stops: the first snapshot (an
/// accept's) then finds the project read. A core that lives for one
/// `chimera` command leaves it to what needs it.
fn fill_in_background(core: &Arc<Core>) {
    let c = core.clone();
    tokio::task::spawn_blocking(move || {
        while !c.shutdown.is_cancelled() {
            match c.store.fill_next() {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) => {
                    c.notify(
                        Level::Warn,
                        format!("Chimera: cannot read the project's files: {e}"),
                    );
                    return;
                }
            }
        }
    });
}

/// How long ended agents are kept (`agents.retention_hours`), in ms.
fn retention_ms(core: &Core) -> i64 {
    core.config.agents.retention_hours as i64 * 3_600_000
}

fn start_watcher(core: &Arc<Core>) -> Option<sync::WatchHandle> {
    if !core.config.sync.watch {
        return None;
    }
    let c = core.clone();
    let watched = sync::watch(
        core.root.clone(),
        Duration::from_millis(core.config.sync.debounce_ms),
        move |paths| {
            c.on_lifecycle(move |c| {
                let out = paths.iter().fold(Outcome::default(), |out, p| {
                    out.then(c.lifecycle.disk_changed(p))
                });
                c.publish(out);
            })
        },
    );
    match watched {
        Ok(w) => Some(w),
        Err(e) => {
            watch_lost(core, &e);
            None
        }
    }
}

/// Tells the human the watcher could not start, and what that costs.
fn watch_lost(core: &Core, e: &sync::SyncError) {
    core.notify(
        Level::Warn,
        format!("Chimera: {e}; changes made outside Neovim will be seen at the next start"),
    );
}

/// Sends the list of snapshots to the editor.
fn send_snapshots(core: &Core) {
    match core.store.snapshots() {
        Ok(snapshots) => core.out.event(Event::Snapshots { snapshots }),
        Err(e) => core.notify(Level::Warn, format!("Chimera: cannot list snapshots: {e}")),
    }
}

impl Core {
    /// Runs `f` on the runtime once the Remora index holds what was asked
    /// before (the import and the whole project's index included, built
    /// now if nothing asked for it yet); `false` when Remora is off.
    fn after_index(self: &Arc<Self>, f: impl FnOnce(&Arc<Core>) + Send + 'static) -> bool {
        if self.remora.is_none() {
            return false;
        }
        let runtime = tokio::runtime::Handle::current();
        let core = self.clone();
        // Through the lifecycle thread, behind the import; then the worker,
        // behind the index; then back on the runtime.
        let queued = move |l: &Arc<Core>| {
            if let Some(w) = &l.remora {
                w.send(remora::Job::IndexAll);
                w.send(remora::Job::Then(Box::new(move || {
                    runtime.spawn(async move { f(&core) });
                })))
            }
        };
        self.on_lifecycle(queued);
        true
    }
}

impl Core {
    /// Once the Remora index holds what was asked of it so far (at once
    /// when Remora is off).
    async fn index_done(self: &Arc<Self>) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        // The worker drops the sender if it stops first: done either way.
        if self.after_index(move |_| drop(tx)) {
            rx.await.ok();
        }
    }
}

async fn check_llm(core: &Core) {
    let health = match &core.llm {
        Err(e) => crate::llm::health::Health {
            ok: false,
            warning: false,
            message: e.to_string(),
            models: vec![],
        },
        Ok(llm) => {
            let chosen = core.model.read().ok().and_then(|m| m.clone());
            let llm = chosen.map_or_else(|| llm.clone(), |m| llm.with_model(&m));
            crate::llm::health::check(&llm).await
        }
    };
    core.out.direct(ForEditor::LlmStatus(health));
}

#[cfg(test)]
mod tests;
