//! ACP agents: coding agents of the user's (Claude Code, opencode, Gemini
//! CLI…) driven over the Agent Client Protocol. Chimera is their editor:
//! each run of a Chimera agent starts the configured program in that
//! agent's own folder ([`crate::workdir`]: its view of the project, outside
//! the project), confined by the kernel ([`crate::confine`]) so that it can
//! neither read nor change the project by any path. Its file requests
//! ([`requests`]) and its own writes both land in that folder; after each
//! turn what changed there is read back into the agent's overlay, so its
//! work arrives as a proposal — reviewed, rebased and accepted like any
//! other. The program and everything it started end with the run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{SessionId, StopReason};
use agent_client_protocol::ByteStreams;
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

use crate::agent::{self, AgentError, Done, Job};
use crate::config::{Config, ExternalAgent};
use crate::store::Store;
use crate::workdir::Workdir;

mod calls;
mod connection;
pub mod home;
pub mod known;
mod policy;
pub use policy::network_of;
pub mod requests;
mod terminals;
pub mod transcript;
use connection::connect;
pub use requests::Route;

/// Sessions' routes, by session ID: whom a request works for.
type Routes = Arc<Mutex<HashMap<String, Arc<Route>>>>;

/// What a running agent process is asked to do.
enum Command {
    NewSession {
        cwd: PathBuf,
        /// The mode to put it in, when it offers that mode.
        mode: Option<&'static str>,
        /// The login method to use when it asks for one.
        login: Option<&'static str>,
        reply: oneshot::Sender<Result<SessionId, connection::NoAnswer>>,
    },
    Prompt {
        session: SessionId,
        text: String,
        reply: oneshot::Sender<Result<StopReason, connection::NoAnswer>>,
    },
    Cancel {
        session: SessionId,
    },
}

/// One agent process and the connection to it; dropping it ends the
/// process and everything it started.
struct Process {
    commands: mpsc::UnboundedSender<Command>,
    /// Ends the process (with every process it started).
    stop: CancellationToken,
    /// Cancelled once the connection to the process has ended.
    gone: CancellationToken,
    /// A turn was just cancelled: the process is given a moment to hear
    /// it before it ends.
    linger: std::sync::atomic::AtomicBool,
}

impl Drop for Process {
    fn drop(&mut self) {
        let stop = self.stop.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if self.linger.load(std::sync::atomic::Ordering::Relaxed) => {
                rt.spawn(async move {
                    tokio::time::sleep(CANCEL_GRACE).await;
                    stop.cancel();
                });
            }
            _ => stop.cancel(),
        }
    }
}

/// The ACP side of one core: the sessions' routes, and each Chimera
/// agent's folder, kept between its runs and removed with the core.
pub struct Pool {
    root: PathBuf,
    routes: Routes,
    workdirs: Mutex<HashMap<String, Arc<Mutex<Workdir>>>>,
    /// Where the folders live: a private temporary folder, never in the
    /// project.
    base: Mutex<Option<tempfile::TempDir>>,
    shutdown: CancellationToken,
}

impl Pool {
    pub fn new(root: PathBuf, shutdown: CancellationToken) -> Self {
        Pool {
            root,
            routes: Routes::default(),
            workdirs: Mutex::new(HashMap::new()),
            base: Mutex::new(None),
            shutdown,
        }
    }

    /// Chimera agent `agent`'s folder, made on its first run. The
    /// folders of agents that have ended go first: a copy of the project
    /// is kept only while its agent may run again.
    fn workdir(&self, store: &Store, agent: &str) -> Result<Arc<Mutex<Workdir>>, AgentError> {
        let broken =
            |e: String| AgentError::External(format!("cannot make the agent's folder: {e}"));
        let mut all = self.workdirs.lock().map_err(|e| broken(e.to_string()))?;
        let ended: Vec<String> = all
            .keys()
            .filter(|id| {
                id.as_str() != agent && store.agent(id).map_or(true, |rec| rec.state.is_terminal())
            })
            .cloned()
            .collect();
        for id in ended {
            let gone = all
                .remove(&id)
                .and_then(|w| Arc::try_unwrap(w).ok())
                .and_then(|w| w.into_inner().ok());
            if let Some(w) = gone {
                // Left behind, it goes with the core's temporary folder.
                let _ = w.remove();
            }
        }
        if let Some(w) = all.get(agent) {
            return Ok(w.clone());
        }
        let mut base = self.base.lock().map_err(|e| broken(e.to_string()))?;
        if base.is_none() {
            *base = Some(
                tempfile::Builder::new()
                    .prefix("chimera-agents-")
                    .tempdir()
                    .map_err(|e| broken(e.to_string()))?,
            );
        }
        let parent = base
            .as_ref()
            .map(|b| b.path().to_path_buf())
            .unwrap_or_default();
        let w = Arc::new(Mutex::new(
            Workdir::create(&parent, agent).map_err(|e| broken(e.to_string()))?,
        ));
        all.insert(agent.to_owned(), w.clone());
        Ok(w)
    }
}

/// Starts agent `name` in folder `files` (temporary files in `tmp`),
/// confined by `policy`, and its connection's task.
fn start(
    name: &str,
    spec: &ExternalAgent,
    (files, tmp, stderr): (&Path, &Path, &Path),
    confined: Option<(&crate::launch::Policy, &Path)>,
    routes: Routes,
    stop: CancellationToken,
    opened: crate::launch::Opened,
) -> Result<Process, AgentError> {
    let policy = confined.map(|(policy, _)| policy);
    let (program, args) = spec
        .command
        .split_first()
        .ok_or_else(|| AgentError::Denied(format!("agents.external.{name}.command is empty")))?;
    let failed =
        |e: String| AgentError::External(format!("cannot start the agent {name} ({program}): {e}"));
    let (pass, set) = policy::environment(name, spec, confined.map(|(_, home)| home), (tmp, files));
    let mut launch = crate::launch::Launch::new(program, policy, &pass, set)
        .map_err(|e| failed(e.to_string()))?;
    launch
        .command()
        .args(args)
        .current_dir(files)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(
            std::fs::File::create(stderr)
                .map(std::process::Stdio::from)
                .unwrap_or_else(|_| std::process::Stdio::null()),
        );
    let crate::launch::Started {
        mut child,
        stop: tree,
        doors,
    } = launch.spawn().map_err(|e| failed(e.to_string()))?;
    let pipes = child.stdin.take().zip(child.stdout.take());
    let supervised = crate::command::Supervised::new(child, tree);
    let (stdin, stdout) = pipes.ok_or_else(|| failed("no pipes".into()))?;
    let stdin = tokio::process::ChildStdin::from_std(stdin)
        .map_err(|e| failed(e.to_string()))?
        .compat_write();
    let stdout = tokio::process::ChildStdout::from_std(stdout)
        .map_err(|e| failed(e.to_string()))?
        .compat();
    let (tx, rx) = mpsc::unbounded_channel();
    let stopped = stop.clone();
    let gone = CancellationToken::new();
    let ended = gone.clone();
    // Its network's doors stay open while it runs.
    doors
        .serve(gone.clone(), opened)
        .map_err(|e| failed(format!("its network: {e}")))?;
    // Its terminals get what it has, but no network.
    let terminal_confined = policy.map(|policy| crate::command::Confined {
        policy: crate::launch::Policy {
            files: policy.files.clone(),
            network: crate::launch::Network::Off,
        },
        tmp: tmp.to_path_buf(),
    });
    let terminal_dir = files.to_path_buf();
    tokio::spawn(async move {
        let _supervised = supervised;
        let _ended = ended.drop_guard();
        let place = Place {
            dir: terminal_dir,
            confined: terminal_confined,
        };
        tokio::select! {
            _ = stopped.cancelled() => {}
            _ = connect(ByteStreams::new(stdin, stdout), routes, place, rx) => {}
        }
    });
    Ok(Process {
        commands: tx,
        stop,
        gone,
        linger: Default::default(),
    })
}

/// Where an agent's terminals run: its folder, under its confinement.
#[derive(Clone)]
pub(crate) struct Place {
    pub dir: PathBuf,
    pub confined: Option<crate::command::Confined>,
}

/// What the agent is told for `job`'s first turn: the task, and where the
/// human was (in the agent's folder, the only project it has).
fn first_prompt(job: &Job, root: &Path, files: &Path) -> String {
    let mut text = job.spec.task.clone();
    let file = job.spec.file.as_deref().map(|f| {
        crate::paths::ProjectPath::from_absolute(root, Path::new(f))
            .map_or_else(|| files.join(f), |p| files.join(p.as_str()))
    });
    if let Some(file) = file {
        text.push_str(&format!("\n\nThe file in question: {}", file.display()));
        if let Some(line) = job.spec.cursor_line() {
            text.push_str(&format!(" (cursor on line {})", line + 1));
        }
    }
    if let Some(ctx) = job.spec.context.as_deref().filter(|c| !c.is_empty()) {
        text.push_str(&format!("\n\nThe selected text:\n```\n{ctx}\n```"));
    }
    text
}

/// Runs `job` with the ACP agent it names, in the job's folder; what it
/// changed there becomes the job's overlay, which becomes the proposal.
pub async fn run(pool: &Pool, run: &agent::Run<'_>, human: Human) -> Result<Done, AgentError> {
    let (store, config, job, cancel) = (run.store.clone(), run.config, run.job, run.cancel);
    let Human {
        progress,
        show,
        ask,
    } = human;
    let name = job.spec.external.as_deref().unwrap_or_default();
    let spec = config.agents.external.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.agents.external.keys().map(String::as_str).collect();
        AgentError::Denied(format!(
            "no agent `{name}` in agents.external (configured: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ))
    })?;
    let caps = run.caps.clone();
    let workdir = pool.workdir(&store, &job.id)?;
    let transcript = Arc::new(Mutex::new(transcript::Transcript::default()));
    let one = Attempt {
        pool,
        name,
        spec,
        store: &store,
        config,
        job,
        caps: &caps,
        workdir: &workdir,
        progress: &progress,
        show: &show,
        transcript: &transcript,
        ask,
    };
    let mut result = one.run(cancel, false).await;
    if let Err((AgentError::External(_), true)) = &result {
        // The process went away under the session (it crashed, or exited
        // after its last turn): once more, in a new one, told everything.
        result = one.run(cancel, true).await;
    }
    let rounds = result.map_err(|(e, _)| e)?;
    let changed = agent::tools::changed_files(&store, &job.id)?;
    let summary = transcript
        .lock()
        .map(|t| summary(name, &t, &changed))
        .unwrap_or_else(|_| Err(AgentError::External(format!("{name}'s turn was lost"))))?;
    progress(format!("{name} is done"));
    Ok(Done {
        summary,
        changed_files: changed,
        rounds,
        form: "acp",
    })
}

/// What a run of agent `name` that changed `changed` comes to, in words:
/// its reply (or what it changed), and what the sandbox refused it; an
/// error when it changed nothing.
fn summary(
    name: &str,
    t: &transcript::Transcript,
    changed: &[String],
) -> Result<String, AgentError> {
    // Its last message says what it did; earlier ones what it was about
    // to do (or a warning of its own).
    let words = t
        .words()
        .rsplit("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty())
        .unwrap_or("");
    let refused = crate::confine::refusals::sentence(t.refusals())
        .map_or(String::new(), |r| format!(" ({r})"));
    match (changed.is_empty(), words.is_empty()) {
        (true, true) => Err(AgentError::External(format!(
            "{name} changed no file{refused}"
        ))),
        (true, false) => Err(AgentError::External(format!(
            "{name} changed no file{refused}; it said: {}",
            first_line(words)
        ))),
        (false, true) => Ok(format!("{name} changed {}{refused}", changed.join(", "))),
        (false, false) => Ok(format!("{}{refused}", first_line(words))),
    }
}

/// Where an ACP agent's run reaches the human: the progress line, the
/// streamed turn, and permission questions (`None`: the preset decides
/// alone).
pub struct Human {
    pub progress: Arc<dyn Fn(String) + Send + Sync>,
    pub show: Arc<dyn Fn(transcript::Piece) + Send + Sync>,
    pub ask: Option<requests::Ask>,
}

/// One try at a run: the agent's process and session, its route, its turns.
struct Attempt<'a> {
    pool: &'a Pool,
    name: &'a str,
    spec: &'a ExternalAgent,
    store: &'a Arc<Store>,
    config: &'a Config,
    job: &'a Job,
    caps: &'a crate::capabilities::Capabilities,
    workdir: &'a Arc<Mutex<Workdir>>,
    progress: &'a Arc<dyn Fn(String) + Send + Sync>,
    show: &'a Arc<dyn Fn(transcript::Piece) + Send + Sync>,
    transcript: &'a Arc<Mutex<transcript::Transcript>>,
    ask: Option<requests::Ask>,
}

impl Attempt<'_> {
    /// Records each connection the agent's network opens (or could not)
    /// as a `network` effect of its agent.
    fn network_log(&self) -> crate::launch::Opened {
        let (store, agent) = (self.store.clone(), self.job.id.clone());
        Arc::new(move |target, outcome| {
            let said = match outcome {
                Ok(()) => "connected".to_string(),
                Err(e) => format!("could not connect: {e}"),
            };
            store.effect_record("network", Some(&agent), &target.to_string(), &said, 0);
        })
    }

    /// The turns taken; on failure, also whether the process died.
    async fn run(
        &self,
        cancel: &CancellationToken,
        again: bool,
    ) -> Result<u32, (AgentError, bool)> {
        let (pool, name, job) = (self.pool, self.name, self.job);
        let (files, tmp, stderr) = self.fill().map_err(|e| (e, false))?;
        let home = match self.spec.unconfined {
            true => None,
            false => Some(policy::own_home(name, self.spec).map_err(|e| (e, false))?),
        };
        let policy = match &home {
            Some(home) => policy::policy_for(name, self.spec, &pool.root, (&files, &tmp, home))
                .map_err(|e| (e, false))?,
            None => None,
        };
        let process = start(
            name,
            self.spec,
            (&files, &tmp, &stderr),
            policy.as_ref().zip(home.as_deref()),
            pool.routes.clone(),
            pool.shutdown.child_token(),
            self.network_log(),
        )
        .map_err(|e| (e, false))?;
        let session = self.open_session(&process, &files, again).await?;
        let mut text = opening(job, &pool.root, &files);
        let route = self.route(files);
        let key = session.0.to_string();
        if let Ok(mut r) = pool.routes.lock() {
            r.insert(key.clone(), route.clone());
        }
        let result = Turns {
            name,
            process: &process,
            session: &session,
            store: self.store,
            job,
            route: &route,
            workdir: self.workdir,
            repair_rounds: self.config.agents.repair_rounds,
            show: self.show,
            transcript: self.transcript,
        }
        .run(&mut text, cancel)
        .await;
        if let Ok(mut r) = pool.routes.lock() {
            r.remove(&key);
        }
        let gone = match &result {
            Err(AgentError::External(_)) if !again => {
                tokio::time::timeout(std::time::Duration::from_secs(1), process.gone.cancelled())
                    .await
                    .is_ok()
            }
            _ => false,
        };
        // The process, and all it started, ends with the run.
        drop(process);
        result.map_err(|e| (e, gone))
    }
}

impl Attempt<'_> {
    /// Fills the agent's folder with its view as of now — the human's
    /// latest text, the job's own changes, nothing a program left since —
    /// and returns its folders: the files, the scratch space, the log.
    fn fill(&self) -> Result<(PathBuf, PathBuf, PathBuf), AgentError> {
        let broken = |e: String| AgentError::External(format!("the agent's folder: {e}"));
        let mut w = self.workdir.lock().map_err(|e| broken(e.to_string()))?;
        w.fill(self.store, &self.job.id, &|f| self.caps.may_see(f))
            .map_err(|e| broken(e.to_string()))?;
        Ok((
            w.files().to_path_buf(),
            w.tmp().to_path_buf(),
            w.stderr().to_path_buf(),
        ))
    }

    /// A new session of `process` in `files`; on failure, also whether the
    /// process died (not on a run `again`).
    async fn open_session(
        &self,
        process: &Process,
        files: &Path,
        again: bool,
    ) -> Result<SessionId, (AgentError, bool)> {
        let name = self.name;
        let stopped = || {
            let message = format!("the agent {name} stopped{}", it_said(self.workdir));
            (AgentError::External(message), !again)
        };
        let (reply, made) = oneshot::channel();
        let cwd = files.to_path_buf();
        let mode = known::known(policy::kind_of(name, self.spec)).and_then(|k| k.mode);
        let login = policy::login_of(name, self.spec);
        process
            .commands
            .send(Command::NewSession {
                cwd,
                reply,
                mode,
                login,
            })
            .map_err(|_| stopped())?;
        made.await.map_err(|_| stopped())?.map_err(|e| match e {
            connection::NoAnswer::Gone => stopped(),
            connection::NoAnswer::NeedsLogin => {
                (AgentError::External(needs_login(name, self.spec)), false)
            }
            connection::NoAnswer::Error(e) => {
                let message = format!("{name} opened no session: {e}{}", it_said(self.workdir));
                (AgentError::External(message), false)
            }
        })
    }

    /// The route of the agent's requests in its session, over `files`.
    fn route(&self, files: PathBuf) -> Arc<Route> {
        Arc::new(Route {
            agent_id: self.job.id.clone(),
            store: self.store.clone(),
            caps: self.caps.clone(),
            files,
            max_bytes: self.config.sync.max_file_bytes,
            progress: self.progress.clone(),
            show: self.show.clone(),
            transcript: self.transcript.clone(),
            calls: Mutex::default(),
            allowed_lines: Mutex::default(),
            allowed_files: Mutex::default(),
            command_timeout: std::time::Duration::from_millis(
                self.config.agents.command_timeout_ms,
            ),
            ask: self.ask.clone(),
        })
    }
}

/// The first prompt of a run: a run starts a new process, so feedback on
/// an earlier run comes first, then the whole story.
fn opening(job: &Job, root: &Path, files: &Path) -> String {
    let Some((last, earlier)) = job.feedback.split_last() else {
        return first_prompt(job, root, files);
    };
    let mut text = format!(
        "The human rejected your change with this feedback: {}\nChange the files accordingly. The task was:\n\n",
        last.feedback
    );
    text.push_str(&first_prompt(job, root, files));
    for f in earlier {
        text.push_str(&format!(
            "\n\nAn earlier attempt was rejected: {}",
            f.feedback
        ));
    }
    text
}

/// What the agent said, in at most 200 characters on one line (code
/// fences left out: a reply that opens with one says nothing by its first
/// line).
fn first_line(s: &str) -> String {
    let words = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```"))
        .collect::<Vec<_>>()
        .join(" ");
    if words.chars().count() > 200 {
        format!("{}…", words.chars().take(199).collect::<String>())
    } else {
        words
    }
}

/// The turns of one run: a prompt, then, while what the agent left does
/// not parse, that problem as the next prompt (`agents.repair_rounds`).
struct Turns<'a> {
    name: &'a str,
    process: &'a Process,
    session: &'a SessionId,
    store: &'a Store,
    job: &'a Job,
    route: &'a Route,
    workdir: &'a Mutex<Workdir>,
    repair_rounds: u32,
    show: &'a Arc<dyn Fn(transcript::Piece) + Send + Sync>,
    transcript: &'a Mutex<transcript::Transcript>,
}

/// What to do when agent `name` asks for a login none of its variables
/// gives.
fn needs_login(name: &str, spec: &ExternalAgent) -> String {
    let vars: Vec<&str> = known::known(policy::kind_of(name, spec))
        .map(|k| k.logins.iter().map(|(_, var)| *var).collect())
        .unwrap_or_default();
    match vars.is_empty() {
        true => format!(
            "{name} needs a login: log in with it in your shell (its login is copied into its own home)"
        ),
        false => format!(
            "{name} needs a login: set {} (in your environment or agents.external.{name}.env), or log in with it in your shell",
            vars.join(" or ")
        ),
    }
}

/// The last lines the agent printed, as "; it said: …" (nothing when it
/// printed nothing): what an error from it seldom says, its stderr does.
fn it_said(workdir: &Mutex<Workdir>) -> String {
    let said = workdir.lock().map(|w| w.stderr_tail()).unwrap_or_default();
    match said.is_empty() {
        true => String::new(),
        false => format!("; it said: {said}"),
    }
}

impl Turns<'_> {
    fn stopped(&self) -> AgentError {
        AgentError::External(format!(
            "the agent {} stopped{}",
            self.name,
            it_said(self.workdir)
        ))
    }

    /// The turn's lines into the agent's log (what `chimera agent` and
    /// the editor show once it is over).
    fn keep_turn(&self) {
        let lines = self
            .transcript
            .lock()
            .map(|mut t| t.take_lines())
            .unwrap_or_default();
        // Only shown: a store that cannot keep them fails the run at its
        // next write, where the error is reported.
        let _ = self.store.agent_log_append(&self.job.id, &lines);
    }

    /// What the agent changed in its folder, into its overlay.
    fn take_back(&self) -> Result<(), AgentError> {
        let mut w = self
            .workdir
            .lock()
            .map_err(|e| AgentError::External(format!("the agent's folder: {e}")))?;
        self.route
            .take_back(&mut w)
            .map_err(|e| AgentError::External(e.to_string()))
    }

    /// Runs turns until the overlay may be proposed; the turns taken.
    async fn run(&self, text: &mut String, cancel: &CancellationToken) -> Result<u32, AgentError> {
        let mut rounds = 0;
        loop {
            rounds += 1;
            if let Some(piece) = self.transcript.lock().ok().map(|mut t| t.begin(text)) {
                (self.show)(piece);
            }
            let (reply, done) = oneshot::channel();
            self.process
                .commands
                .send(Command::Prompt {
                    session: self.session.clone(),
                    text: std::mem::take(text),
                    reply,
                })
                .map_err(|_| self.stopped())?;
            // However this run ends (a timeout drops it), a turn left
            // running is cancelled.
            let mut pending = CancelOnDrop {
                process: self.process,
                session: self.session,
                armed: true,
            };
            let mut done = done;
            let stop = tokio::select! {
                r = &mut done => r,
                _ = cancel.cancelled() => {
                    // Told, and given a moment to end its turn before its
                    // process ends with the run.
                    pending.fire();
                    // A turn that does not end within the grace ends with its process.
                    let _ = tokio::time::timeout(CANCEL_GRACE, done).await;
                    self.keep_turn();
                    self.take_back()?;
                    return Err(AgentError::Cancelled);
                }
            };
            self.keep_turn();
            self.take_back()?;
            let stop = stop.map_err(|_| self.stopped())?.map_err(|e| match e {
                connection::NoAnswer::Gone => self.stopped(),
                connection::NoAnswer::NeedsLogin => AgentError::External(format!(
                    "{} asked for a login in its turn{}",
                    self.name,
                    it_said(self.workdir)
                )),
                connection::NoAnswer::Error(e) => {
                    AgentError::External(format!("{}: {e}{}", self.name, it_said(self.workdir)))
                }
            })?;
            pending.armed = false;
            match stop {
                StopReason::EndTurn => {}
                StopReason::Cancelled => return Err(AgentError::Cancelled),
                other => {
                    return Err(AgentError::External(format!(
                        "{} stopped its turn: {other:?}",
                        self.name
                    )))
                }
            }
            match crate::agent::gate::check(self.store, &self.job.id, None) {
                Ok(()) => return Ok(rounds),
                // Written back as it was: no change, said by the caller.
                Err(crate::agent::Problem::Unchanged) => return Ok(rounds),
                Err(problem) if rounds <= self.repair_rounds => *text = problem.to_string(),
                Err(problem) => {
                    return Err(AgentError::GaveUp {
                        rounds,
                        last: problem.to_string(),
                    })
                }
            }
        }
    }
}

/// How long a cancelled turn is given to end before its process is ended.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Sends `session/cancel` for a turn still running when dropped.
struct CancelOnDrop<'a> {
    process: &'a Process,
    session: &'a SessionId,
    armed: bool,
}

impl CancelOnDrop<'_> {
    /// Sends the cancel now (once), and lets the process linger so that
    /// it hears it however the run ends from here on.
    fn fire(&mut self) {
        if std::mem::take(&mut self.armed) {
            self.process
                .linger
                .store(true, std::sync::atomic::Ordering::Relaxed);
            // The connection is gone: the process it would tell is ending.
            let _ = self.process.commands.send(Command::Cancel {
                session: self.session.clone(),
            });
        }
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.fire();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_the_agent_said_fits_one_line() {
        assert_eq!(super::first_line("Fixed add."), "Fixed add.");
        assert_eq!(
            super::first_line("```json\n{\"name\": \"edit\"}\n```\n"),
            "{\"name\": \"edit\"}"
        );
        assert_eq!(super::first_line(&"x".repeat(300)).chars().count(), 200);
    }
}
