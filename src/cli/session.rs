//! One run of the `chimera` command: finds the project and its core, runs
//! the subcommand through the API, and stops the core it started, if any.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{exit, output, A2aAction, Cli, Command, McpAction, RemoraAction};
use crate::api::client::{Client, ClientError};
use crate::api::core::{CoreHandle, Indexing};
use crate::api::events::EventBus;
use crate::event::Event;
use crate::event::Level;
use crate::port::{EditorSink, ForEditor, Said};
use crate::remora::shared::SharedIndex;
use crate::store::Store;

mod servers;
use servers::{a2a, mcp, serve};

/// How often `wait` and a foreground task look at the agent: first after
/// [`FIRST_POLL`], then twice as long each time up to [`POLL`], so that an
/// agent done at once is told at once and one that works for minutes
/// costs a look every [`POLL`].
const POLL: Duration = Duration::from_millis(150);
const FIRST_POLL: Duration = Duration::from_millis(5);
/// How long a core started here may take to serve its socket.
const START_LIMIT: Duration = Duration::from_secs(15);

/// The terminal of a `chimera` command whose core runs in it: the core's
/// notices on stderr and, when a person is at the terminal, its questions
/// (`capabilities.ask`), answered on stdin.
struct Terminal {
    root: PathBuf,
    /// stdin and stderr are a terminal: a person may answer there (the
    /// core asks only under `capabilities.ask`).
    asks: bool,
}

impl Terminal {
    fn new(root: PathBuf) -> Self {
        use std::io::IsTerminal;
        let asks = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        Self { root, asks }
    }
}

impl EditorSink for Terminal {
    fn asks_the_human(&self) -> bool {
        self.asks
    }

    fn hear(&self, said: Said, _root: &Path) {
        match said {
            Said::Event(Event::Notice { level, message })
            | Said::Asked(ForEditor::Notice { level, message })
                if level != Level::Info =>
            {
                eprintln!("{message}")
            }
            Said::Event(Event::Permission {
                id,
                agent,
                question,
            }) if self.asks => ask_on_terminal(self.root.clone(), id, agent, question),
            Said::Event(Event::Answered { allow: None, .. }) if self.asks => {
                eprintln!("chimera: a question went unanswered for 2 minutes: refused")
            }
            _ => {}
        }
    }
}

/// One question at a time on the terminal.
static ASKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Asks question `id` of agent `agent` on the terminal and answers it
/// through the API (the first answer of any client counts), off the
/// core's thread: a person takes their time.
fn ask_on_terminal(root: PathBuf, id: u64, agent: String, question: String) {
    std::thread::spawn(move || {
        let allow = {
            let _one = ASKING.lock().unwrap_or_else(|p| p.into_inner());
            eprint!("chimera: agent {agent} asks permission: {question}\n  Allow it? [y/N] ");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).is_ok()
                && matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
        };
        let said = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                let (client, route) = (Client::for_root(&root), format!("/questions/{id}"));
                let asked = client.call("POST", &route, Some(json!({ "allow": allow })));
                rt.block_on(asked).map_err(|e| e.to_string())
            });
        if let Err(e) = said {
            eprintln!("chimera: cannot answer the question: {e}");
        }
    });
}

/// The routes over the store alone, for reads when no core runs.
struct StoreOnly {
    store: Store,
    root: PathBuf,
    /// Nothing happens without a core: an empty feed.
    events: Arc<EventBus>,
    /// The topology as last stored, loaded on the first node read.
    index: std::sync::OnceLock<Option<SharedIndex>>,
}

impl crate::api::Backend for StoreOnly {
    fn store(&self) -> &Store {
        &self.store
    }
    fn root(&self) -> &Path {
        &self.root
    }
    fn call(&self, _msg: crate::port::Command) -> BoxFuture<'static, crate::port::Told> {
        Box::pin(async { crate::port::Told::default() })
    }
    fn events(&self) -> Arc<EventBus> {
        self.events.clone()
    }
    fn config(&self) -> Option<&crate::config::Config> {
        None
    }
    fn index(&self) -> Option<SharedIndex> {
        self.index
            .get_or_init(|| {
                crate::remora::index::Indexer::load(&self.store)
                    .ok()
                    .map(SharedIndex::from)
            })
            .clone()
    }
}

struct Session {
    root: PathBuf,
    loaded: super::Loaded,
    json: bool,
    /// The core serving the project (another process's, or ours).
    remote: Client,
    /// The core this process started, if it had to.
    own: Option<CoreHandle>,
}

impl Session {
    /// A client for reads: the running core, else the store read here.
    async fn reader(&self) -> Result<Client, SessionError> {
        if self.remote.alive().await {
            return Ok(self.remote.clone());
        }
        let store = Store::open(&self.root)?;
        Ok(Client::local(crate::api::router(Arc::new(StoreOnly {
            store,
            events: Arc::new(EventBus::new()),
            root: self.root.clone(),
            index: std::sync::OnceLock::new(),
        }))))
    }

    /// A client for one change: the running core, else one started here
    /// for this command (which indexes the project only if it needs to).
    async fn writer(&mut self) -> Result<Client, SessionError> {
        self.core(Indexing::OnDemand).await
    }

    /// A client for a server that runs until stopped: the running core,
    /// else one started here that indexes the project as it starts.
    async fn server(&mut self) -> Result<Client, SessionError> {
        self.core(Indexing::AtStart).await
    }

    /// The running core, else one started here indexing as `indexing` says.
    async fn core(&mut self, indexing: Indexing) -> Result<Client, SessionError> {
        if self.remote.alive().await {
            return Ok(self.remote.clone());
        }
        // A core that holds the project but does not answer yet (Neovim's,
        // just started) is waited for, never raced: the agent runs there,
        // with that editor's options and buffers.
        if self.own.is_none() && crate::api::control::holder(&self.root).is_none() {
            let terminal = Terminal::new(self.root.clone());
            let core = crate::api::core::start(
                self.loaded.config.clone(),
                self.root.clone(),
                Arc::new(terminal),
                indexing,
            )?;
            self.own = Some(core);
        }
        let deadline = Instant::now() + START_LIMIT;
        while Instant::now() < deadline {
            if self.remote.alive().await {
                return Ok(self.remote.clone());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(SessionError::Silent {
            root: self.root.clone(),
            secs: START_LIMIT.as_secs(),
        })
    }

    /// `GET path` from the running core, else from the store.
    async fn get(&self, path: &str) -> Result<Value, Failure> {
        Ok(self.reader().await?.call("GET", path, None).await?)
    }

    /// `POST path` to the running core, started here if none runs.
    async fn post(&mut self, path: &str, body: Option<Value>) -> Result<Value, Failure> {
        Ok(self.writer().await?.call("POST", path, body).await?)
    }

    /// Whether the core `client` reaches runs in this process (a core
    /// started here may have lost the socket to Neovim's, starting at the
    /// same time: then that one runs the agent).
    async fn served_here(&self, client: &Client) -> bool {
        self.own.is_some()
            && client
                .call("GET", "/status", None)
                .await
                .is_ok_and(|st| st["pid"].as_u64() == Some(u64::from(std::process::id())))
    }

    fn close(mut self) {
        if let Some(core) = self.own.take() {
            core.shutdown(Duration::from_secs(2));
        }
    }
}

/// The project root: `--root`, else the nearest folder above holding `.git`.
fn project_root(given: Option<&Path>) -> Result<PathBuf, SessionError> {
    let root = match given {
        Some(r) => r.to_path_buf(),
        None => {
            let cwd = std::env::current_dir().map_err(SessionError::NoCwd)?;
            let root = crate::paths::find_root(&cwd);
            if !root.join(".git").exists() {
                return Err(SessionError::NotInGit(cwd));
            }
            root
        }
    };
    let root = root
        .canonicalize()
        .map_err(|source| SessionError::BadRoot { root, source })?;
    crate::paths::check_root(&root)?;
    Ok(root)
}

pub async fn run(cli: Cli) -> i32 {
    let root = match project_root(cli.global.root.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chimera: {e}");
            return exit::USAGE;
        }
    };
    if let Err(e) = crate::api::control::check_socket_dir(&root) {
        eprintln!("chimera: {e}");
        return exit::FAILED;
    }
    if let Command::Trust { revoke, yes } = cli.command {
        return match trust(&root, revoke, yes, &cli.global) {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("chimera: {e}");
                exit::FAILED
            }
        };
    }
    let loaded = match super::load_config(&root, &cli.global) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("chimera: {e}");
            return exit::USAGE;
        }
    };
    if let Some(p) = loaded.project.as_ref().filter(|p| !p.ignored().is_empty()) {
        if !matches!(cli.command, Command::Status { .. }) {
            eprintln!("chimera: {}{}", p.file.display(), output::trust_note(p));
        }
    }
    let mut s = Session {
        remote: Client::for_root(&root),
        root,
        loaded,
        json: cli.global.json,
        own: None,
    };
    let code = match command(&mut s, cli.command).await {
        Ok(code) => code,
        Err(Failure::Usage(e)) => {
            eprintln!("chimera: {e}");
            exit::USAGE
        }
        Err(Failure::Failed(e)) => {
            eprintln!("chimera: {e}");
            exit::FAILED
        }
    };
    s.close();
    code
}

/// `chimera trust [--revoke] [--yes]`: shows what the project's options
/// file would let run, reach or read, asks, and records (or takes back) the
/// user's trust in it as it is now.
fn trust(root: &Path, revoke: bool, yes: bool, g: &super::Global) -> Result<(), SessionError> {
    let file = super::config::project_file(root);
    let db = crate::trust::TrustDb::user()?;
    if revoke {
        let was = db.revoke(&file)?;
        out!(
            "{} {}",
            file.display(),
            if was {
                "is no longer trusted"
            } else {
                "was not trusted"
            }
        );
        return Ok(());
    }
    let bytes = std::fs::read(&file).map_err(|source| SessionError::NothingToTrust {
        file: file.clone(),
        source,
    })?;
    // Refused while invalid: it would apply nothing anyway.
    let loaded = super::load_config(root, g)?;
    let raw: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let guarded = loaded.project.map(|p| p.guarded).unwrap_or_default();
    if guarded.is_empty() {
        db.trust(&file, &bytes)?;
        out!(
            "trusted {} (it sets nothing that needs trust)",
            file.display()
        );
        return Ok(());
    }
    let value_of = |key: &str| {
        let value = key
            .split('.')
            .try_fold(&raw, |v, k| v.get(k))
            .cloned()
            .unwrap_or(Value::Null)
            .to_string();
        super::output::line(&value, 300)
    };
    out!("{} asks to:", file.display());
    for key in &guarded {
        out!(
            "  {}: {key} = {}",
            crate::trust::purpose(key),
            value_of(key)
        );
    }
    if !yes && !ask("Trust it as it is now? [y/N] ")? {
        return Err(SessionError::NotTrusted(file));
    }
    db.trust(&file, &bytes)?;
    out!("trusted {}; these now apply:", file.display());
    for key in &guarded {
        out!("  {key} = {}", value_of(key));
    }
    out!("A change to the file is ignored until you trust it again.");
    Ok(())
}

/// Asks `question` on the terminal; false where there is none to ask in.
fn ask(question: &str) -> Result<bool, SessionError> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!("{question}");
    // Unflushed, the question shows after the answer: not worth failing on.
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(SessionError::NoAnswer)?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

enum Failure {
    Usage(String),
    Failed(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Failed(e)
    }
}

/// What stops a command before or beside the core's own answer.
#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("no current directory: {0}")]
    NoCwd(std::io::Error),
    #[error("{} is not inside a git checkout; pass --root DIR", .0.display())]
    NotInGit(PathBuf),
    #[error("the project root {} cannot be used: {source}", root.display())]
    BadRoot {
        root: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Root(#[from] crate::paths::RootError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Start(#[from] crate::api::core::RuntimeError),
    #[error("the core started for {} did not answer within {secs} s", root.display())]
    Silent { root: PathBuf, secs: u64 },
    #[error(transparent)]
    Options(#[from] super::config::ConfigError),
    #[error(transparent)]
    Trust(#[from] crate::trust::TrustError),
    #[error("cannot read {}: {source} (nothing to trust)", file.display())]
    NothingToTrust {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("not trusted; nothing of the above applies. Read {} first; `chimera trust --yes` trusts it without asking", .0.display())]
    NotTrusted(PathBuf),
    #[error("cannot read the answer: {0}")]
    NoAnswer(std::io::Error),
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Self {
        Failure::Failed(e.to_string())
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Api {
                status: 400,
                message,
            } => Failure::Usage(message),
            e => Failure::Failed(e.to_string()),
        }
    }
}

fn url_part(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn command(s: &mut Session, command: Command) -> Result<i32, Failure> {
    let json = s.json;
    match command {
        // Answered by `run` before the options are read, so that trust in
        // a file that no longer parses can still be taken back.
        Command::Trust { .. } => {}
        Command::Status { tests } => status(s, tests).await,
        Command::Task {
            text,
            file,
            line,
            mode,
            agent,
        } => {
            let spec = crate::task::TaskSpec {
                task: text.join(" "),
                file,
                line,
                mode,
                external: agent,
                ..Default::default()
            };
            task(s, spec).await?
        }
        Command::Wait { id, timeout } => return wait(s, &id, timeout).await,
        Command::Agents => output::agents(&s.get("/agents").await?, json),
        Command::Agent { id } => output::agent(&get_agent(&s.reader().await?, &id).await?, json),
        Command::Diff { id } => {
            if !output::diff(&get_agent(&s.reader().await?, &id).await?, json) {
                return Ok(exit::FAILED);
            }
        }
        Command::Accept { id, hunk, write } => {
            let path = format!("/proposal/{}/approve", url_part(&id));
            let answer = s
                .post(&path, Some(json!({ "hunk": hunk, "write": write })))
                .await?;
            output::accepted(&answer, write, json);
        }
        Command::Reject { id, feedback, hunk } => {
            let path = format!("/proposal/{}/reject", url_part(&id));
            let body = json!({ "hunk": hunk, "feedback": feedback });
            output::agent_state(&s.post(&path, Some(body)).await?["agent"], json);
        }
        Command::Cancel { id } => {
            let path = format!("/agents/{}/cancel", url_part(&id));
            output::agent_state(&s.post(&path, None).await?["agent"], json);
        }
        Command::Calls { id } => output::calls(
            &s.get(&format!("/agents/{}/calls", url_part(&id))).await?,
            json,
        ),
        c @ (Command::Snapshot { .. }
        | Command::History
        | Command::Rollback { .. }
        | Command::Effects { .. }
        | Command::Branch { .. }
        | Command::Fork { .. }) => history(s, c).await?,
        c @ (Command::Nodes { .. }
        | Command::Node { .. }
        | Command::Chat { .. }
        | Command::Remora { .. }) => remora(s, c).await?,
        Command::Serve { port } => return serve(s, port).await,
        Command::A2a { action } => return a2a(s, action).await,
        Command::Mcp { action } => return mcp(s, action).await,
    }
    Ok(exit::OK)
}

/// The snapshot commands: `snapshot`, `history`, `rollback`, `effects`,
/// `branch`, `fork`.
async fn history(s: &mut Session, command: Command) -> Result<(), Failure> {
    let json = s.json;
    match command {
        Command::Snapshot { message } => {
            let body = json!({ "message": message.join(" ") });
            let answer = s.post("/snapshots", Some(body)).await?;
            output::id(answer["id"].as_str().unwrap_or_default(), json);
        }
        Command::History => output::history(&s.get("/snapshots").await?, json),
        Command::Rollback { id, dry_run } => {
            let path = format!(
                "/rollback/{}{}",
                url_part(&id),
                if dry_run { "?dry_run=1" } else { "" }
            );
            output::message(&s.post(&path, None).await?, json);
        }
        Command::Effects { since, kind } => {
            let query: Vec<String> = [("since", since), ("kind", kind)]
                .into_iter()
                .filter_map(|(k, v)| Some(format!("{k}={}", url_part(&v?))))
                .collect();
            let path = match query.is_empty() {
                true => "/effects".to_owned(),
                false => format!("/effects?{}", query.join("&")),
            };
            output::effects(&s.get(&path).await?, json);
        }
        Command::Branch { name: None, .. } => output::branches(&s.get("/branches").await?, json),
        Command::Branch {
            name: Some(name),
            snapshot,
        } => {
            let set = s
                .post(
                    "/branches",
                    Some(json!({ "name": name, "snapshot": snapshot })),
                )
                .await?;
            output::branch(&set, json);
        }
        Command::Fork { id, text } => {
            let path = format!("/snapshots/{}/fork", url_part(&id));
            let answer = s
                .post(&path, Some(json!({ "task": text.join(" ") })))
                .await?;
            output::id(answer["id"].as_str().unwrap_or_default(), json);
        }
        _ => {}
    }
    Ok(())
}

/// The Remora commands: `nodes`, `node`, `chat`, `remora`.
async fn remora(s: &mut Session, command: Command) -> Result<(), Failure> {
    let json = s.json;
    match command {
        Command::Nodes { path } => {
            output::nodes(&s.get(&format!("/nodes/{}", url_path(&path))).await?, json)
        }
        Command::Node { id } => {
            output::node(&s.get(&format!("/node/{}", url_part(&id))).await?, json)
        }
        Command::Chat { id, message } => {
            let path = format!("/node/{}/chat", url_part(&id));
            let answer = s
                .post(&path, Some(json!({ "message": message.join(" ") })))
                .await?;
            output::events(&answer["events"], json);
        }
        Command::Remora {
            action: RemoraAction::Enable,
        } => {
            if !json {
                eprintln!("chimera: indexing {} …", s.root.display());
            }
            let started = Instant::now();
            // Answered once the index holds the project (in the core that
            // runs, or in this process when none does).
            match s.post("/remora/enable", None).await? {
                answer if json => out!("{answer}"),
                _ => out!(
                    "Remora enabled: the project is indexed ({:.1} s); `chimera nodes FILE` lists a file's nodes",
                    started.elapsed().as_secs_f64()
                ),
            }
        }
        _ => {}
    }
    Ok(())
}

/// `chimera status`: the project, its options and its core if one runs;
/// with `tests`, one run of the project's tests as they are.
async fn status(s: &mut Session, tests: bool) {
    let core = match s.remote.alive().await {
        true => s.remote.call("GET", "/status", None).await.ok(),
        false => None,
    };
    let baseline = match tests {
        true => {
            let (root, config) = (s.root.clone(), s.loaded.config.clone());
            tokio::task::spawn_blocking(move || {
                crate::agent::baseline::run(&root, &config, None, &|| false)
            })
            .await
            .ok()
        }
        false => None,
    };
    output::status(&s.root, &s.loaded, core.as_ref(), baseline.as_ref(), s.json);
    if !s.json {
        output::api(core.as_ref().and_then(|c| c["api_port"].as_u64()));
    }
}

/// `chimera task`: gives the core `spec`; with no core running, this
/// process is the agent's core and works until there is something to
/// review.
async fn task(s: &mut Session, spec: crate::task::TaskSpec) -> Result<(), Failure> {
    use crate::task::TaskError;
    spec.check().map_err(|e| {
        Failure::Usage(match e {
            TaskError::Mode(_) => format!("--{e}"),
            TaskError::LineZero => format!("--line: {e}"),
            TaskError::Empty => e.to_string(),
        })
    })?;
    let client = s.writer().await?;
    let body = serde_json::to_value(&spec).map_err(|e| Failure::Failed(e.to_string()))?;
    let answer = client.call("POST", "/tasks", Some(body)).await?;
    let id = answer["id"].as_str().unwrap_or_default().to_owned();
    output::id(&id, s.json);
    if s.served_here(&client).await {
        eprintln!("chimera: no core was running; agent {id} runs here until its proposal is ready");
        let (state, agent) = wait_for(&client, &id, None).await?;
        if ended_badly(&state) {
            // The core running here said why already, on stderr (its notice
            // of the failure): said once, not twice.
            let why = if state == "failed" {
                String::new()
            } else {
                output::why(&agent)
            };
            return Err(Failure::Failed(format!("agent {id} {state}{why}")));
        }
        eprintln!("chimera: agent {id} is {state}");
    }
    Ok(())
}

/// Whether an agent in `state` ended without anything to review, so a
/// script waiting on it must hear a failure (exit code 1).
fn ended_badly(state: &str) -> bool {
    matches!(state, "failed" | "cancelled")
}

/// `chimera wait`: until agent `id` has something to review or ended, or
/// `timeout` seconds.
async fn wait(s: &mut Session, id: &str, timeout: f64) -> Result<i32, Failure> {
    if !(timeout.is_finite() && timeout >= 0.0) {
        return Err(Failure::Usage(format!(
            "--timeout must be seconds ≥ 0, not {timeout}"
        )));
    }
    let client = s.reader().await?;
    let limit = Duration::from_secs_f64(timeout);
    match wait_for(&client, id, Some(limit)).await {
        Ok((state, agent)) => {
            output::agent_state(&agent, s.json);
            if ended_badly(&state) {
                return Ok(exit::FAILED);
            }
        }
        Err(WaitError::Timeout(state)) => {
            eprintln!("chimera: agent {id} is still {state} after {timeout} s");
            return Ok(exit::TIMEOUT);
        }
        Err(WaitError::Other(e)) => return Err(e),
    }
    Ok(exit::OK)
}

/// A project path in a URL: each segment escaped, slashes kept.
fn url_path(p: &str) -> String {
    p.split('/').map(url_part).collect::<Vec<_>>().join("/")
}

enum WaitError {
    Timeout(String),
    Other(Failure),
}

impl From<WaitError> for Failure {
    fn from(e: WaitError) -> Self {
        match e {
            WaitError::Timeout(state) => Failure::Failed(format!("still {state}")),
            WaitError::Other(f) => f,
        }
    }
}

/// Agent `id` with its proposal (`GET /agents/{id}`).
async fn get_agent(client: &Client, id: &str) -> Result<Value, ClientError> {
    client
        .call("GET", &format!("/agents/{}", url_part(id)), None)
        .await
}

/// Polls agent `id` until it has a proposal or has ended (or `limit`
/// passes): its state and record.
async fn wait_for(
    client: &Client,
    id: &str,
    limit: Option<Duration>,
) -> Result<(String, Value), WaitError> {
    let start = Instant::now();
    let mut pause = FIRST_POLL;
    loop {
        let one = get_agent(client, id)
            .await
            .map_err(|e| WaitError::Other(e.into()))?;
        let agent = one["agent"].clone();
        let state = agent["state"].as_str().unwrap_or_default().to_owned();
        if !matches!(state.as_str(), "queued" | "running") {
            return Ok((state, agent));
        }
        if !client.is_remote() {
            return Err(WaitError::Other(Failure::Failed(format!(
                "agent {id} is {state}, but no Chimera core is running for this project to run it; open the project in Neovim or run `chimera serve`"
            ))));
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            return Err(WaitError::Timeout(state));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(POLL);
    }
}
