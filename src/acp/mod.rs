//! ACP agents: coding agents of the user's (Claude Code, opencode, Gemini
//! CLI…) driven over the Agent Client Protocol. Chimera is their editor:
//! it starts each configured agent once, opens a session per task, and
//! answers their file requests from a Chimera agent's overlay
//! ([`requests`]), so their work arrives as a proposal — reviewed, rebased
//! and accepted like any other — and never touches the human's files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, CreateTerminalRequest,
    CreateTerminalResponse, FileSystemCapabilities, InitializeRequest, KillTerminalRequest,
    KillTerminalResponse, NewSessionRequest, PromptRequest, ReadTextFileRequest,
    ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionRequest, RequestPermissionResponse, SessionId, SessionNotification,
    StopReason, TerminalId, TerminalOutputRequest, TerminalOutputResponse, TextContent,
    WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams};
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

use crate::agent::{self, AgentError, Done, Job, Services};
use crate::config::{Config, ExternalAgent};
use crate::store::Store;

pub mod requests;
mod terminals;
pub mod transcript;
pub use requests::Route;
use terminals::Terminals;

/// Sessions' routes, by session ID: whom a request works for.
type Routes = Arc<Mutex<HashMap<String, Arc<Route>>>>;

/// What a running agent process is asked to do.
enum Command {
    NewSession {
        reply: oneshot::Sender<Result<SessionId, String>>,
    },
    Prompt {
        session: SessionId,
        text: String,
        reply: oneshot::Sender<Result<StopReason, String>>,
    },
    Cancel {
        session: SessionId,
    },
}

/// One agent process and the connection to it.
struct Process {
    commands: mpsc::UnboundedSender<Command>,
    /// Ends the process (with its process group).
    stop: CancellationToken,
    /// Cancelled once the connection to the process has ended.
    gone: CancellationToken,
}

/// The agent processes of one core, started on first use and stopped with
/// it; and which session each Chimera agent had, so feedback continues it.
pub struct Pool {
    root: PathBuf,
    routes: Routes,
    processes: Mutex<HashMap<String, Arc<Process>>>,
    sessions: Mutex<HashMap<String, (String, SessionId)>>,
    shutdown: CancellationToken,
}

impl Pool {
    pub fn new(root: PathBuf, shutdown: CancellationToken) -> Self {
        Pool {
            root,
            routes: Routes::default(),
            processes: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            shutdown,
        }
    }

    /// The running process of agent `name`, started if it is not.
    fn process(&self, name: &str, spec: &ExternalAgent) -> Result<Arc<Process>, String> {
        let mut all = self.processes.lock().map_err(|e| e.to_string())?;
        if let Some(p) = all.get(name) {
            if !p.gone.is_cancelled() {
                return Ok(p.clone());
            }
        }
        let p = Arc::new(start(
            name,
            spec,
            &self.root,
            self.routes.clone(),
            self.shutdown.child_token(),
        )?);
        all.insert(name.to_owned(), p.clone());
        // Sessions of an earlier process of this agent died with it.
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|_, (n, _)| n != name);
        }
        Ok(p)
    }

    /// Whether agent `name`'s process has gone (its connection closes
    /// soon after the process exits: a moment is given to notice).
    async fn died(&self, name: &str) -> bool {
        let Some(p) = self
            .processes
            .lock()
            .ok()
            .and_then(|all| all.get(name).cloned())
        else {
            return true;
        };
        tokio::time::timeout(std::time::Duration::from_secs(1), p.gone.cancelled())
            .await
            .is_ok()
    }

    fn session_of(&self, agent: &str, name: &str) -> Option<SessionId> {
        self.sessions
            .lock()
            .ok()?
            .get(agent)
            .filter(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Ok(all) = self.processes.lock() {
            for p in all.values() {
                p.stop.cancel();
            }
        }
    }
}

/// Kills the agent's whole process group when dropped: agents often run
/// behind launchers (`npx`, `uvx`) whose children would outlive them.
struct Group(Option<u32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self
            .0
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Starts agent `name` in `root` and its connection's task.
fn start(
    name: &str,
    spec: &ExternalAgent,
    root: &Path,
    routes: Routes,
    stop: CancellationToken,
) -> Result<Process, String> {
    let (program, args) = spec
        .command
        .split_first()
        .ok_or_else(|| format!("agents.external.{name}.command is empty"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .envs(&spec.env)
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the agent {name} ({program}): {e}"))?;
    let group = Group(child.id());
    let stdin = child.stdin.take().ok_or("no stdin")?.compat_write();
    let stdout = child.stdout.take().ok_or("no stdout")?.compat();
    let (tx, rx) = mpsc::unbounded_channel();
    let root = root.to_path_buf();
    let stopped = stop.clone();
    let gone = CancellationToken::new();
    let ended = gone.clone();
    tokio::spawn(async move {
        let _child = child;
        let _group = group;
        let _ended = ended.drop_guard();
        tokio::select! {
            _ = stopped.cancelled() => {}
            _ = connect(ByteStreams::new(stdin, stdout), root, routes, rx) => {}
        }
    });
    Ok(Process {
        commands: tx,
        stop,
        gone,
    })
}

fn route_of(routes: &Routes, session: &SessionId) -> Option<Arc<Route>> {
    routes.lock().ok()?.get(&*session.0).cloned()
}

/// A request refused, with why (said to the agent).
fn refused(why: String) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params().data(why)
}

fn no_session(session: &SessionId) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params()
        .data(format!("no task of Chimera's runs in session {session}"))
}

/// Speaks ACP with the agent until it goes or `commands` closes.
async fn connect<T>(
    transport: T,
    root: PathBuf,
    routes: Routes,
    mut commands: mpsc::UnboundedReceiver<Command>,
) -> Result<(), agent_client_protocol::Error>
where
    T: agent_client_protocol::ConnectTo<agent_client_protocol::Client> + 'static,
{
    let (r1, r2, r3, r4, r5) = (
        routes.clone(),
        routes.clone(),
        routes.clone(),
        routes.clone(),
        routes,
    );
    let terminals = Arc::new(Terminals::default());
    let (t1, t2, t3, t4, t5) = (
        terminals.clone(),
        terminals.clone(),
        terminals.clone(),
        terminals.clone(),
        terminals,
    );
    agent_client_protocol::Client
        .v1()
        .name("chimera")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                if let Some(route) = route_of(&r1, &n.session_id) {
                    route.update(&n.update);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: ReadTextFileRequest, responder, _cx| {
                let Some(route) = route_of(&r2, &req.session_id) else {
                    return responder.respond_with_error(no_session(&req.session_id));
                };
                match route.read(&req) {
                    Ok(text) => responder.respond(ReadTextFileResponse::new(text)),
                    Err(e) => responder.respond_with_error(refused(e)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WriteTextFileRequest, responder, _cx| {
                let Some(route) = route_of(&r3, &req.session_id) else {
                    return responder.respond_with_error(no_session(&req.session_id));
                };
                match route.write(&req) {
                    Ok(()) => responder.respond(WriteTextFileResponse::new()),
                    Err(e) => responder.respond_with_error(refused(e)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, responder, cx| {
                let route = route_of(&r4, &req.session_id);
                // The human may take a while: not the connection's other messages.
                cx.spawn(async move {
                    let outcome = match route {
                        Some(route) => route.permission(&req).await,
                        None => {
                            agent_client_protocol::v1::schema::RequestPermissionOutcome::Cancelled
                        }
                    };
                    responder.respond(RequestPermissionResponse::new(outcome))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CreateTerminalRequest, responder, _cx| {
                let Some(route) = route_of(&r5, &req.session_id) else {
                    return responder.respond_with_error(no_session(&req.session_id));
                };
                let limit = route.command_timeout;
                match t1.create(route, &req, limit) {
                    Ok(id) => responder.respond(CreateTerminalResponse::new(TerminalId::new(id))),
                    Err(e) => responder.respond_with_error(refused(e)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: TerminalOutputRequest, responder, _cx| match t2
                .output(&req.session_id.0, &req.terminal_id.0)
            {
                Ok((output, status)) => responder
                    .respond(TerminalOutputResponse::new(output, false).exit_status(status)),
                Err(e) => responder.respond_with_error(refused(e)),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WaitForTerminalExitRequest, responder, cx| {
                // Waiting must not hold up the connection's other messages.
                let terminals = t3.clone();
                cx.spawn(async move {
                    match terminals.wait(&req.session_id.0, &req.terminal_id.0).await {
                        Ok(status) => responder.respond(WaitForTerminalExitResponse::new(status)),
                        Err(e) => responder.respond_with_error(refused(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: KillTerminalRequest, responder, _cx| match t4
                .kill(&req.session_id.0, &req.terminal_id.0)
            {
                Ok(()) => responder.respond(KillTerminalResponse::new()),
                Err(e) => responder.respond_with_error(refused(e)),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ReleaseTerminalRequest, responder, _cx| match t5
                .release(&req.session_id.0, &req.terminal_id.0)
            {
                Ok(()) => responder.respond(ReleaseTerminalResponse::new()),
                Err(e) => responder.respond_with_error(refused(e)),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let fs = FileSystemCapabilities::new()
                .read_text_file(true)
                .write_text_file(true);
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1)
                    .client_capabilities(ClientCapabilities::new().fs(fs).terminal(true)),
            )
            .block_task()
            .await?;
            while let Some(command) = commands.recv().await {
                match command {
                    Command::NewSession { reply } => {
                        let made = cx
                            .send_request(NewSessionRequest::new(root.clone()))
                            .block_task()
                            .await
                            .map(|r| r.session_id)
                            .map_err(|e| e.to_string());
                        let _ = reply.send(made);
                    }
                    Command::Prompt {
                        session,
                        text,
                        reply,
                    } => {
                        // A turn takes long; other sessions go on meanwhile.
                        let cx = cx.clone();
                        tokio::spawn(async move {
                            let prompt = PromptRequest::new(
                                session,
                                vec![ContentBlock::Text(TextContent::new(text))],
                            );
                            let done = cx
                                .send_request(prompt)
                                .block_task()
                                .await
                                .map(|r| r.stop_reason)
                                .map_err(|e| e.to_string());
                            let _ = reply.send(done);
                        });
                    }
                    Command::Cancel { session } => {
                        let _ = cx.send_notification(CancelNotification::new(session));
                    }
                }
            }
            Ok(())
        })
        .await
}

/// What the agent is told for `job`'s first turn: the task, and where the
/// human was.
fn first_prompt(job: &Job, root: &Path) -> String {
    let mut text = job.task.clone();
    if let Some(file) = &job.file {
        text.push_str(&format!(
            "\n\nThe file in question: {}",
            root.join(file).display()
        ));
        if let Some(line) = job.cursor_line {
            text.push_str(&format!(" (cursor on line {})", line + 1));
        }
    }
    if let Some(ctx) = job.context.as_deref().filter(|c| !c.is_empty()) {
        text.push_str(&format!("\n\nThe selected text:\n```\n{ctx}\n```"));
    }
    text
}

/// Runs `job` with the ACP agent it names; its writes stay in the job's
/// overlay, which becomes the proposal.
pub async fn run(
    pool: &Pool,
    store: Arc<Store>,
    config: &Config,
    services: &Services,
    job: &Job,
    cancel: &CancellationToken,
    human: Human,
) -> Result<Done, AgentError> {
    let Human {
        progress,
        show,
        ask,
    } = human;
    let name = job.external.as_deref().unwrap_or_default();
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
    let caps = agent::capabilities(config, job, services)?;
    let transcript = Arc::new(Mutex::new(transcript::Transcript::default()));
    let one = Attempt {
        pool,
        name,
        spec,
        store: &store,
        config,
        job,
        caps: &caps,
        progress: &progress,
        show: &show,
        transcript: &transcript,
        ask,
    };
    let mut result = one.run(cancel).await;
    if matches!(result, Err(AgentError::External(_))) && pool.died(name).await {
        // The process went away under the session (it crashed, or exited
        // after its last turn): once more, in a new one, told everything.
        result = one.run(cancel).await;
    }
    let rounds = result?;
    let changed = agent::tools::changed_files(&store, &job.id)?;
    let words = transcript
        .lock()
        .map(|t| t.words().trim().to_owned())
        .unwrap_or_default();
    if changed.is_empty() {
        return Err(AgentError::External(if words.is_empty() {
            format!("{name} changed no file")
        } else {
            format!("{name} changed no file; it said: {}", first_line(&words))
        }));
    }
    progress(format!("{name} is done"));
    Ok(Done {
        summary: if words.is_empty() {
            format!("{name} changed {}", changed.join(", "))
        } else {
            first_line(&words)
        },
        changed_files: changed,
        rounds,
        form: "acp",
    })
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
    progress: &'a Arc<dyn Fn(String) + Send + Sync>,
    show: &'a Arc<dyn Fn(transcript::Piece) + Send + Sync>,
    transcript: &'a Arc<Mutex<transcript::Transcript>>,
    ask: Option<requests::Ask>,
}

impl Attempt<'_> {
    /// The turns taken.
    async fn run(&self, cancel: &CancellationToken) -> Result<u32, AgentError> {
        let (pool, name, job) = (self.pool, self.name, self.job);
        let process = pool
            .process(name, self.spec)
            .map_err(AgentError::External)?;
        let stopped = || AgentError::External(format!("the agent {name} stopped"));
        // Feedback continues the session that made the rejected change.
        let (session, mut text) = match (pool.session_of(&job.id, name), job.feedback.last()) {
            (Some(s), Some(f)) => (
                s,
                format!(
                    "The human rejected your change with this feedback: {}\nChange the files accordingly.",
                    f.feedback
                ),
            ),
            _ => {
                let (reply, made) = oneshot::channel();
                process
                    .commands
                    .send(Command::NewSession { reply })
                    .map_err(|_| stopped())?;
                let s = made
                    .await
                    .map_err(|_| stopped())?
                    .map_err(|e| AgentError::External(format!("{name} opened no session: {e}")))?;
                let mut text = first_prompt(job, &pool.root);
                for f in &job.feedback {
                    text.push_str(&format!("\n\nAn earlier attempt was rejected: {}", f.feedback));
                }
                (s, text)
            }
        };
        if let Ok(mut s) = pool.sessions.lock() {
            s.insert(job.id.clone(), (name.to_owned(), session.clone()));
        }
        let route = Arc::new(Route {
            agent_id: job.id.clone(),
            store: self.store.clone(),
            caps: self.caps.clone(),
            max_bytes: self.config.sync.max_file_bytes,
            progress: self.progress.clone(),
            show: self.show.clone(),
            transcript: self.transcript.clone(),
            command_timeout: std::time::Duration::from_millis(
                self.config.agents.command_timeout_ms,
            ),
            ask: self.ask.clone(),
        });
        let key = session.0.to_string();
        if let Ok(mut r) = pool.routes.lock() {
            r.insert(key.clone(), route);
        }
        let result = Turns {
            name,
            process: &process,
            session: &session,
            store: self.store,
            job,
            repair_rounds: self.config.agents.repair_rounds,
            show: self.show,
            transcript: self.transcript,
        }
        .run(&mut text, cancel)
        .await;
        if let Ok(mut r) = pool.routes.lock() {
            r.remove(&key);
        }
        result
    }
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
    repair_rounds: u32,
    show: &'a Arc<dyn Fn(transcript::Piece) + Send + Sync>,
    transcript: &'a Mutex<transcript::Transcript>,
}

impl Turns<'_> {
    fn stopped(&self) -> AgentError {
        AgentError::External(format!("the agent {} stopped", self.name))
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
                commands: &self.process.commands,
                session: self.session,
                armed: true,
            };
            let stop = tokio::select! {
                r = done => r,
                _ = cancel.cancelled() => {
                    self.keep_turn();
                    return Err(AgentError::Cancelled);
                }
            };
            self.keep_turn();
            let stop = stop
                .map_err(|_| self.stopped())?
                .map_err(|e| AgentError::External(format!("{}: {e}", self.name)))?;
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
                Err(problem) if problem == crate::agent::gate::UNCHANGED => return Ok(rounds),
                Err(problem) if rounds <= self.repair_rounds => *text = problem,
                Err(problem) => {
                    return Err(AgentError::GaveUp {
                        rounds,
                        last: problem,
                    })
                }
            }
        }
    }
}

/// Sends `session/cancel` for a turn still running when dropped.
struct CancelOnDrop<'a> {
    commands: &'a mpsc::UnboundedSender<Command>,
    session: &'a SessionId,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.commands.send(Command::Cancel {
                session: self.session.clone(),
            });
        }
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
