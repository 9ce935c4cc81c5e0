//! The code-mode agent (seed 000), made to work with small local models.
//! It asks the model for an edit in the form that fits it (a program for
//! large models, changed definitions for small ones) and uses whatever form
//! the reply actually carries: a program (run in the Monty sandbox against
//! the agent's overlay), definitions (spliced into the target file by name)
//! or a whole file. Every result is parsed before it becomes a proposal; a
//! syntax error, a traceback, a reply without code or an edit that changes
//! nothing goes back to the model with the exact error for a bounded number
//! of repair rounds; then the agent fails with the reason.

pub mod checks;
mod context;
pub mod gate;
pub(crate) mod host;
pub mod locate;
pub mod node;
mod packages;
pub mod prompt;
mod refactor;
mod scope;
pub mod tools;
pub mod world;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use host::AgentHost;
pub use prompt::EditForm;

use crate::config::{Config, EditFormSetting};
use crate::lang::splice::{self, ReplyForm};
use crate::lang::{self, Language};
use crate::llm::{ChatMessage, ChatOptions, LlmClient, LlmError};
use crate::overlay::Overlay;
use crate::paths::ProjectPath;
use crate::python;
use crate::sandbox::{self, Limits, SandboxError};
use crate::store::{Store, StoreError};

/// Why an agent ended without a proposal.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("LLM: {0}")]
    Llm(#[from] LlmError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the model's answer still failed after {rounds} repair rounds: {last}")]
    GaveUp { rounds: u32, last: String },
    #[error("the model did not finish within {0} tool calls (agents.max_iterations)")]
    TooManySteps(usize),
    #[error("cancelled")]
    Cancelled,
    #[error("timed out after {0} s (agents.timeout_ms)")]
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
}

impl Services {
    /// The services of `config` for the project at `root`.
    pub fn new(config: &Config, root: std::path::PathBuf) -> Self {
        let http = crate::llm::http_client();
        Self {
            mcp: Arc::new(crate::mcp::Hub::new(config.mcp.clone(), root.clone())),
            root,
            http,
            web_search_url: config.tools.web_search_url.clone(),
            web_search_results: config.tools.web_search_results,
            a2a_peers: config.a2a.peers.clone(),
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
    pub task: String,
    /// The user's selection, if the task was given with a range.
    pub context: Option<String>,
    /// The project path of the file the user was in, if any.
    pub file: Option<String>,
    /// The cursor's line in that file (0-based).
    pub cursor_line: Option<usize>,
    /// Earlier attempts the user rejected, with their feedback.
    pub feedback: Vec<crate::store::Feedback>,
    /// The node this agent embodies (Remora), hydrated by the runtime.
    pub node: Option<node::NodeJob>,
    /// Code or tool mode; `None`: `agents.mode`.
    pub mode: Option<crate::config::AgentMode>,
    /// A capabilities preset; `None`: `capabilities.preset`.
    pub capabilities: Option<String>,
    /// A turn of the free chat (tool mode): the conversation so far.
    pub chat: Option<tools::ChatTurn>,
    /// The ACP agent (`agents.external`) that does the work, if not ours.
    pub external: Option<String>,
    /// The model chosen (`:Chimera model`, else `llm.model`) when the task
    /// was given; `None`: the one chosen when it starts.
    pub model: Option<String>,
}

impl Job {
    /// The job of a task a client gave (checked already: a mode that is
    /// not one runs in the default mode).
    pub fn new(id: String, spec: crate::task::TaskSpec) -> Self {
        Job {
            cursor_line: spec.cursor_line(),
            mode: spec.agent_mode().ok().flatten(),
            id,
            task: spec.task,
            context: spec.context,
            file: spec.file,
            capabilities: spec.capabilities,
            external: spec.external,
            ..Job::default()
        }
    }

    /// The cursor's line when the task was typed in `path`'s buffer.
    fn cursor_in(&self, path: &str) -> Option<usize> {
        self.cursor_line
            .filter(|_| self.file.as_deref() == Some(path))
    }
}

impl From<crate::store::AgentRecord> for Job {
    /// The job of a stored agent, to run it (again).
    fn from(rec: crate::store::AgentRecord) -> Self {
        Self {
            id: rec.id,
            task: rec.task,
            context: rec.context,
            file: rec.file,
            cursor_line: rec.cursor_line,
            feedback: rec.feedback,
            node: None,
            mode: rec.mode,
            capabilities: rec.capabilities,
            external: rec.external,
            // The conversation is not part of the record: a turn run again
            // after a restart is a plain tool-mode task.
            chat: None,
            // Run again: with the model chosen then.
            model: None,
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
    let reply = llm.chat_reply(messages, opts, cancel, on_delta).await;
    let output = match &reply {
        Ok(r) => match &r.tool_call {
            Some(call) => format!("{}{}", r.text, call.as_text()),
            None => r.text.clone(),
        },
        Err(e) => format!("error: {e}"),
    };
    store.effect_record(
        "llm",
        Some(agent),
        label,
        &output,
        started.elapsed().as_millis() as i64,
    );
    reply
}

/// What a failed model call means for the agent.
fn llm_error(e: LlmError) -> AgentError {
    match e {
        LlmError::Cancelled => AgentError::Cancelled,
        e => AgentError::Llm(e),
    }
}

/// The capabilities `job` runs under.
pub fn capabilities(
    config: &Config,
    job: &Job,
    services: &Services,
) -> Result<crate::capabilities::Capabilities, AgentError> {
    crate::capabilities::Capabilities::new(&config.capabilities, job.capabilities.as_deref())
        .map(|caps| caps.on_disk(services.root.clone()))
        .map_err(|e| AgentError::Denied(e.to_string()))
}

/// The role `job` plays for `llm.roles` (one of [`crate::config::ROLES`]).
pub fn role(job: &Job, config: &Config) -> &'static str {
    if job.node.is_some() {
        "node"
    } else if job.chat.is_some() {
        "chat"
    } else if job.mode.unwrap_or(config.agents.mode) == crate::config::AgentMode::Tools {
        "tools"
    } else {
        "task"
    }
}

/// The form the prompt asks for.
pub fn choose_form(config: &Config, has_target: bool) -> EditForm {
    match config.llm.edit_form_for_model() {
        EditFormSetting::Program => EditForm::Program,
        EditFormSetting::Definitions if has_target => EditForm::Definitions,
        EditFormSetting::Definitions => EditForm::Program,
        EditFormSetting::Auto => match config.llm.model_size_b() {
            Some(size) if size >= 7.0 => EditForm::Program,
            _ if has_target => EditForm::Definitions,
            _ => EditForm::Program,
        },
    }
}

/// JSON schema of a constrained definitions reply.
fn reply_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "summary": { "type": "string" },
            "code": { "type": "string" }
        },
        "required": ["summary", "code"]
    })
}

/// The text of one model reply: its code and, when it said so, its summary.
fn read_reply(reply: &str, json: bool, language: &Language) -> (String, Option<String>) {
    if json {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(reply.trim()) {
            if let Some(code) = v["code"].as_str() {
                let code = if code.contains("```") {
                    prompt::extract_code_as(code, language)
                } else {
                    code.to_owned()
                };
                return (
                    code,
                    v["summary"]
                        .as_str()
                        .map(str::to_owned)
                        .filter(|s| !s.trim().is_empty()),
                );
            }
        }
    }
    (prompt::extract_code_as(reply, language), None)
}

/// Runs `job` to completion: on success the agent's overlay holds its
/// changes. `progress` hears short status lines.
pub async fn run(
    store: Arc<Store>,
    config: &Config,
    llm: &LlmClient,
    services: &Services,
    job: &Job,
    cancel: &CancellationToken,
    progress: &(dyn Fn(String) + Send + Sync),
) -> Result<Done, AgentError> {
    let caps = capabilities(config, job, services)?;
    if job.node.is_none()
        && job.mode.unwrap_or(config.agents.mode) == crate::config::AgentMode::Tools
    {
        return tools::run(store, config, llm, services, job, cancel, progress).await;
    }
    let max_bytes = config.sync.max_file_bytes;
    let (tree, mut place) = Scene::find(&store, &caps, job, max_bytes)?;
    // Nothing in the project fits new code the task names: ask the model
    // where it goes rather than guess.
    if job.node.is_none() && locate::ask_where(&job.task, place.as_ref()) {
        let sources: Vec<&String> = tree.iter().filter(|f| lang::is_source(f)).collect();
        if let [only] = sources.as_slice() {
            place = Some(locate::Place::existing((*only).clone(), vec![]));
        } else if sources.len() > 1 {
            progress("asking the model which file this goes in".into());
            if let Some(answer) =
                ask_for_file(&store, config, llm, job, &tree, max_bytes, cancel).await?
            {
                place = Some(answer);
            }
        }
    }
    let scene = Scene::at(&store, &caps, job, max_bytes, tree, place)?;
    // A node agent answers with its new source (its rewrite_self) or a
    // program calling its tools.
    let form = if job.node.is_some() {
        EditForm::Definitions
    } else {
        choose_form(config, scene.target.is_some())
    };
    let json = config.llm.json_output && form == EditForm::Definitions;
    let language = scene.language();
    let window = llm.context_window().await as usize;
    // Characters the file may take: the window minus the reply and the
    // instructions, at about 3 characters per token.
    let budget = window
        .saturating_sub(config.llm.max_tokens as usize + 700)
        .max(500)
        * 3;
    let mut view = scene.view(job, budget, form);
    // A task to fix something starts from what fails, as a person would.
    if let Some(v) = view
        .as_mut()
        .filter(|v| !v.new && checks::asks_to_fix(&job.task))
    {
        progress("running the project's tests".into());
        let file = v.path.clone();
        v.failing_tests = checks::off_runtime(
            &store,
            &config.tests,
            &caps,
            cancel,
            move |s, t, c, stop| checks::failing_now(s, t, c, max_bytes, &file, stop),
        )
        .await
        .flatten();
    }
    let more = match (form, &job.node) {
        (EditForm::Program, None) => prompt::more_functions(&services.mcp, &caps),
        _ => String::new(),
    };
    let (system, mut messages) = opening(job, &scene, view.as_ref(), form, json, language, &more);
    // A task to fix what the tests show failing is tried afresh each
    // round, the tests judging every try, rather than repaired in
    // conversation: shown its failed answer, Qwen2.5-Coder 1.5B gave it
    // back nearly word for word. On 25 real bugs, independent tries
    // fixed 5 where three conversation rounds fixed 2.
    let fresh_tries = view.as_ref().is_some_and(|v| v.failing_tests.is_some());
    let question = messages.clone();
    // A fix is about as long as the code it mends: a reply much longer is
    // the model writing on (1.5B went on from the fixed function to write
    // its callers anew, a minute and a half of tokens on 2 cores).
    let mut opts = ChatOptions {
        json_schema: json.then(reply_schema),
        ..Default::default()
    };
    if let Some(v) = view.as_ref().filter(|_| fresh_tries) {
        let shown_tokens = (v.shown.len() / 3) as u32;
        opts.max_tokens = Some(shown_tokens + 256);
    }
    let turn = Turn {
        store: &store,
        config,
        llm,
        services,
        job,
        caps: &caps,
        cancel,
        progress,
        scene: &scene,
    };
    if let Some(intent) = scene.intent.as_ref().filter(|i| i.alone) {
        progress(format!("{} on the syntax tree", intent.verb()));
        if let Ok(made) = turn.refactor_alone(intent)? {
            match gate::finish(&store, config, job, &caps, cancel, false, progress).await {
                Ok(notes) => return turn.done(made, notes, 0),
                // Not done alone (the tests say so): the model tries.
                Err(_) => store.overlay_clear(&job.id)?,
            }
        }
    }
    let max_rounds = config.agents.repair_rounds + 1;
    let mut last_problem = String::new();
    let mut only_unchanged = true;
    let mut asked_anew = false;
    for round in 1..=max_rounds {
        // Every answer so far was the function unchanged: the last round
        // starts over and asks for it anew, without the old code to copy.
        // Not when tests fail: then the old code is nearly right and only
        // it says what the tests expect (on 25 real bugs, writing anew
        // fixed none and made the suite fail more in most).
        let last_of_several = round == max_rounds && round > 1;
        let anew = match (&view, &job.node) {
            (Some(v), None)
                if last_of_several
                    && only_unchanged
                    && form == EditForm::Definitions
                    && v.failing_tests.is_none() =>
            {
                v.focus_function.as_deref()
            }
            _ => None,
        };
        if let Some(signature) = anew {
            messages = vec![
                system.clone(),
                prompt::anew_message(&job.task, signature, language),
            ];
            asked_anew = true;
        }
        progress(match round {
            1 => "asking the model".into(),
            _ if fresh_tries => format!("try {round}: the tests failed, asking afresh"),
            _ => format!("repair round {}", round - 1),
        });
        // Small models tend to repeat a failed answer word for word: each
        // repair round samples a little more freely.
        opts.temperature =
            (round > 1).then(|| (config.llm.temperature + 0.3 * (round - 1) as f64).min(1.0));
        let asked = messages.last().map_or("", |m| m.content.as_str());
        let label = format!(
            "{} {}: {asked}",
            config.llm.provider_name(),
            config.llm.model
        );
        let reply = logged_chat(&store, &job.id, &label, llm, &messages, &opts, cancel)
            .await
            .map_err(llm_error)?;
        let (code, said) = read_reply(&reply, json, language);
        // Cut off at the token limit inside a definition: the ones before it
        // are an answer.
        let code = match splice::without_cut_tail(language, &code) {
            Some(head)
                if form == EditForm::Definitions && reply.matches("```").count() % 2 == 1 =>
            {
                head.to_owned()
            }
            _ => code,
        };
        messages.push(ChatMessage::assistant(reply.clone()));
        store.overlay_clear(&job.id)?;
        let attempt = match job.node.as_ref() {
            Some(_) => turn.node_attempt(&reply, code).await?,
            None if scene.several() => turn.files_attempt(&reply, code).await?,
            None => turn.code_attempt(code).await?,
        };
        // The one step every form ends in: what reaches the human is
        // kept to the task, parses, removes nothing unnamed, passes the tests.
        let attempt = match attempt {
            Ok(ok) => gate::finish(
                &store,
                config,
                job,
                &caps,
                cancel,
                round == max_rounds,
                progress,
            )
            .await
            .map(|notes| (ok, notes)),
            Err(problem) => Err(problem),
        };
        match attempt {
            Ok((made, notes)) => {
                let mut notes = notes;
                if asked_anew {
                    notes.push("written anew without the old code: review what it dropped".into());
                }
                let summary = said.or(made.summary);
                return turn.done(Made { summary, ..made }, notes, round);
            }
            Err(problem) => {
                if cancel.is_cancelled() {
                    return Err(AgentError::Cancelled);
                }
                store.overlay_clear(&job.id)?;
                only_unchanged &= problem == UNCHANGED;
                last_problem = problem.clone();
                if fresh_tries {
                    messages = question.clone();
                } else {
                    messages.push(prompt::repair_message(form, &problem, language));
                }
            }
        }
    }
    store.overlay_clear(&job.id)?;
    Err(AgentError::GaveUp {
        rounds: max_rounds - 1,
        last: last_problem,
    })
}

/// What a code-mode agent works on: the file its task is about (found by
/// [`locate`]), the other files the task names, and the project's files.
struct Scene {
    tree: Vec<String>,
    target: Option<(ProjectPath, String)>,
    place: Option<locate::Place>,
    /// Files that fit the task as well as the target, for the model to read.
    references: Vec<(String, String)>,
    /// Other files the answer may change: the ones the task names, and
    /// for a rename or a move the files that use the name.
    editable: Vec<(ProjectPath, String)>,
    /// The rename or move the task asks for, finished after the model's edit.
    intent: Option<refactor::Intent>,
}

impl Scene {
    /// The project's files the agent may see, and the place its task is
    /// about by the task's words (see [`locate`]).
    fn find(
        store: &Store,
        caps: &crate::capabilities::Capabilities,
        job: &Job,
        max_bytes: u64,
    ) -> Result<(Vec<String>, Option<locate::Place>), AgentError> {
        let ov = Overlay::new(store, &job.id, max_bytes);
        let mut tree = ov
            .files()
            .map_err(|e| AgentError::Internal(e.to_string()))?;
        // Names of files the agent may not read are not shown either.
        tree.retain(|f| caps.may_see(f));
        let node_file = job
            .node
            .as_ref()
            .and_then(|n| n.view.node.as_ref())
            .map(|n| n.file_path.clone());
        // A task about a file outside the project is refused before the
        // model is asked: it would otherwise land in some other file.
        if node_file.is_none() {
            if let Some((path, why)) = locate::outside_the_project(&job.task, &tree) {
                return Err(AgentError::Denied(format!(
                    "the task is about `{path}`, which Chimera may not change: {why}"
                )));
            }
        }
        // The task's own words decide; the buffer it was typed in is evidence.
        let place = match node_file {
            Some(file) => Some(locate::Place {
                file,
                new: false,
                also: vec![],
                only_the_buffer: false,
            }),
            None => locate::locate(&job.task, &tree, job.file.as_deref(), |f| {
                ProjectPath::parse(f)
                    .ok()
                    .and_then(|p| ov.read_text(&p).ok())
            }),
        };
        Ok((tree, place))
    }

    /// The scene at `place` (see [`Scene::find`]).
    fn at(
        store: &Store,
        caps: &crate::capabilities::Capabilities,
        job: &Job,
        max_bytes: u64,
        tree: Vec<String>,
        place: Option<locate::Place>,
    ) -> Result<Scene, AgentError> {
        let ov = Overlay::new(store, &job.id, max_bytes);
        // A file the agent may not read never reaches the model.
        if let Some(p) = &place {
            if let Err(denied) = caps.check_read(&p.file) {
                return Err(AgentError::Denied(denied.to_string()));
            }
        }
        let target = place.as_ref().and_then(|p| {
            let pp = ProjectPath::parse(&p.file).ok()?;
            match ov.read_text(&pp) {
                Ok(t) => Some((pp, t)),
                // A file the task creates starts empty.
                Err(_) if p.new => Some((pp, String::new())),
                Err(_) => None,
            }
        });
        // Renames and moves on the syntax tree are Python's.
        let python_target = target
            .as_ref()
            .is_none_or(|(p, _)| lang::of_file(p.as_str()) == &lang::PYTHON);
        let intent =
            refactor::intent(&job.task, &tree).filter(|_| job.node.is_none() && python_target);
        let may_change = others_to_change(
            job,
            &tree,
            place.as_ref(),
            intent.as_ref(),
            |f| caps.check_read(f).is_ok() && caps.check_write(f).is_ok(),
            |f| ov.read_text(&ProjectPath::parse(f).ok()?).ok(),
        );
        let read = |f: &String| {
            let p = ProjectPath::parse(f).ok()?;
            let text = match ov.read_text(&p) {
                Ok(t) => t,
                // A move's destination may be a file the task creates.
                Err(_) if !tree.contains(f) => String::new(),
                Err(_) => return None,
            };
            Some((p, text))
        };
        let editable: Vec<(ProjectPath, String)> = may_change.iter().filter_map(read).collect();
        let references = place
            .iter()
            .flat_map(|p| &p.also)
            .filter(|f| !may_change.contains(f) && caps.check_read(f).is_ok())
            .filter_map(|f| read(f).map(|(_, t)| (f.clone(), t)))
            .collect();
        Ok(Scene {
            tree,
            target,
            place,
            references,
            editable,
            intent,
        })
    }

    /// The language of the file the task is about (Python without one).
    fn language(&self) -> &'static Language {
        self.target
            .as_ref()
            .map_or(&lang::PYTHON, |(p, _)| lang::of_file(p.as_str()))
    }

    /// Whether an answer may change more than the target, or finishes a
    /// rename or a move.
    fn several(&self) -> bool {
        !self.editable.is_empty() || self.intent.is_some()
    }

    /// The target as the model sees it, within `budget` characters shared
    /// with the files named beside it.
    fn view(&self, job: &Job, budget: usize, form: EditForm) -> Option<prompt::TargetView> {
        let (p, t) = self.target.as_ref()?;
        let cursor = job.cursor_in(p.as_str());
        let focused = form == EditForm::Definitions;
        let mut v = context::target_view(p.as_str(), t, &job.task, cursor, budget, focused);
        v.new = self
            .place
            .as_ref()
            .is_some_and(|pl| pl.new && pl.file == p.as_str());
        let mut room = budget.saturating_sub(v.shown.len()) / 2;
        let editable = self.editable.iter().map(|(p, t)| (p.as_str(), t, true));
        let read_only = self.references.iter().map(|(p, t)| (p.as_str(), t, false));
        for (path, text, may_change) in editable.chain(read_only) {
            let shown: String = text.chars().take(room).collect();
            room = room.saturating_sub(shown.len());
            match may_change {
                true => v.editable.push((path.to_owned(), shown)),
                false => v.references.push((path.to_owned(), shown)),
            }
        }
        Some(v)
    }
}

/// The files besides the target that `job`'s answer may change (see
/// [`Scene::editable`]), at most [`MAX_EDITABLE`]. `allowed`: the agent may
/// read and write it; `read`: a file's text.
fn others_to_change(
    job: &Job,
    tree: &[String],
    place: Option<&locate::Place>,
    intent: Option<&refactor::Intent>,
    allowed: impl Fn(&str) -> bool,
    read: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let Some(place) = place.filter(|_| job.node.is_none()) else {
        return vec![];
    };
    let mut out: Vec<String> = Vec::new();
    // A file being created is written from the files named beside it,
    // which stay as they are, unless the task moves code out of them.
    if !place.new || intent.is_some() {
        out.extend(locate::named_files(&locate::mentions(&job.task), tree));
    }
    if let Some(intent) = intent {
        if let refactor::Change::Move { to, .. } = &intent.change {
            out.push(to.clone());
        }
        let name = intent.name();
        for f in tree.iter().filter(|f| f.ends_with(".py")).take(5000) {
            if read(f).is_some_and(|t| python::has_identifier(&t, name)) {
                out.push(f.clone());
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|f| f != &place.file && seen.insert(f.clone()) && allowed(f));
    out.truncate(MAX_EDITABLE);
    out
}

/// The most files besides the target one answer may change: each is shown
/// to the model, which reads about 60 tokens a second on 2 cores.
const MAX_EDITABLE: usize = 6;

/// Asks the model which file `job`'s task belongs in, showing it the
/// project's source files with what they define.
async fn ask_for_file(
    store: &Arc<Store>,
    config: &Config,
    llm: &LlmClient,
    job: &Job,
    tree: &[String],
    max_bytes: u64,
    cancel: &CancellationToken,
) -> Result<Option<locate::Place>, AgentError> {
    let ov = Overlay::new(store, &job.id, max_bytes);
    let listing: Vec<String> = tree
        .iter()
        .filter(|f| lang::is_source(f))
        .take(60)
        .map(|f| {
            let text = ProjectPath::parse(f)
                .ok()
                .and_then(|p| ov.read_text(&p).ok())
                .unwrap_or_default();
            let names: Vec<String> = lang::definitions(lang::of_file(f), &text)
                .into_iter()
                .filter(|d| d.parent.is_none())
                .take(10)
                .map(|d| d.name)
                .collect();
            format!("- {f}: {}", names.join(", "))
        })
        .collect();
    if listing.is_empty() {
        return Ok(None);
    }
    let messages = vec![
        ChatMessage::system(
            "You choose the file of a software project where a change belongs. Answer with the file's path only.",
        ),
        ChatMessage::user(format!(
            "The project's files and what they define:\n{}\n\nChange: {}\n\nWhich file should it go in? If none fits, give the path of a new file.",
            listing.join("\n"),
            job.task.trim()
        )),
    ];
    let opts = ChatOptions {
        temperature: Some(0.0),
        ..Default::default()
    };
    let label = format!(
        "{} {}: which file",
        config.llm.provider_name(),
        config.llm.model
    );
    let answer = logged_chat(store, &job.id, &label, llm, &messages, &opts, cancel)
        .await
        .map_err(llm_error)?;
    Ok(locate::file_in_answer(&answer, tree))
}

/// The system prompt and the first messages of a code-mode conversation.
fn opening(
    job: &Job,
    scene: &Scene,
    view: Option<&prompt::TargetView>,
    form: EditForm,
    json: bool,
    language: &Language,
    more_functions: &str,
) -> (ChatMessage, Vec<ChatMessage>) {
    let mut system = match &job.node {
        Some(n) => node::system_prompt(&n.view),
        None => prompt::system(form, language),
    };
    system.push_str(more_functions);
    if json {
        let code = match form {
            EditForm::Program => "Python",
            EditForm::Definitions => language.name,
        };
        system.push_str(&format!("\nAnswer as JSON: {{\"summary\": one line saying what you changed, \"code\": the {code} code}}."));
    }
    let task_message = match &job.node {
        Some(_) => ChatMessage::user(format!("# Request\n{}", job.task.trim())),
        None => prompt::task_message(form, &job.task, job.context.as_deref(), view, &scene.tree),
    };
    let system = ChatMessage::system(system);
    let mut messages = vec![system.clone(), task_message];
    if !job.feedback.is_empty() {
        messages.push(prompt::feedback_message(&job.feedback));
    }
    (system, messages)
}

/// One reply turned into a change in the overlay: a node agent's (its own
/// source, a tool call, a message to a neighbour) or a code-mode agent's
/// (a program, definitions, a whole file).
struct Turn<'a> {
    store: &'a Arc<Store>,
    config: &'a Config,
    llm: &'a LlmClient,
    services: &'a Services,
    job: &'a Job,
    caps: &'a crate::capabilities::Capabilities,
    cancel: &'a CancellationToken,
    progress: &'a (dyn Fn(String) + Send + Sync),
    scene: &'a Scene,
}

impl Turn<'_> {
    fn target_text(&self) -> Option<&str> {
        self.scene.target.as_ref().map(|(_, t)| t.as_str())
    }

    fn write(&self, path: &ProjectPath, old: &str, new: &str, form: &'static str) -> Attempt {
        let max_bytes = self.config.sync.max_file_bytes;
        let language = lang::of_file(path.as_str());
        let new = &lang::docs_moved_out_of_bodies(language, old, new);
        let new = &packages::without_needless_imports(
            language,
            self.store.root(),
            path.as_str(),
            Some(old),
            new,
            &self.job.task,
        );
        write_checked(
            self.store,
            self.caps,
            &self.job.id,
            max_bytes,
            path,
            old,
            new,
            form,
        )
    }

    async fn code_attempt(&self, code: String) -> Result<Attempt, AgentError> {
        let form = splice::classify(self.scene.language(), &code, self.target_text());
        self.attempt_form(form).await
    }

    /// What a reply without usable code is told.
    fn no_code(&self) -> String {
        format!(
            "Your reply has no {} code block with the change.",
            self.scene.language().name
        )
    }

    async fn attempt_form(&self, form: ReplyForm) -> Result<Attempt, AgentError> {
        let job = self.job;
        let target = &self.scene.target;
        Ok(match form {
            ReplyForm::Program(code) => {
                (self.progress)("running the program".into());
                run_program(self.store, self.config, self.llm, self.services, job, self.cancel, code)
                    .await?
            }
            ReplyForm::Definitions(code) => match target {
                Some((path, text)) => {
                    let language = lang::of_file(path.as_str());
                    match splice::splice_definitions(language, text, &code, job.cursor_in(path.as_str())) {
                        Ok(new) => self.write(path, text, &new, "definitions"),
                        Err(e) => Err(e.to_string()),
                    }
                }
                None => Err("It is not clear which file to change: name the file and write a program that calls write_file(path, content).".into()),
            },
            ReplyForm::WholeFile(code) => match target {
                Some((path, text)) => {
                    let code = splice::keep_imports(lang::of_file(path.as_str()), text, &code);
                    self.write(path, text, &code, "whole file")
                }
                None => Err("It is not clear which file this is: write a program that calls write_file(path, content).".into()),
            },
            ReplyForm::Nothing => Err(self.no_code()),
        })
    }

    /// The proposal of `made`, which passed the gate: its summary (what
    /// the model said, else what the diff does) with its notes and the
    /// gate's `checked`.
    fn done(&self, made: Made, checked: Vec<String>, rounds: u32) -> Result<Done, AgentError> {
        let (store, job, scene) = (self.store, self.job, self.scene);
        let summary = scope::summary(store, &job.id, made.summary, &job.task)?;
        let mut notes = made.notes;
        notes.extend(checked);
        // Where the task could have meant another file too, say which was chosen.
        let editable: Vec<&str> = scene.editable.iter().map(|(p, _)| p.as_str()).collect();
        let also: Vec<&str> = scene
            .place
            .iter()
            .flat_map(|p| &p.also)
            .map(String::as_str)
            .filter(|f| !editable.contains(f))
            .collect();
        // (A file being created is written from the files named beside it.)
        if let (Some(p), false) = (scene.place.as_ref().filter(|p| !p.new), also.is_empty()) {
            notes.push(format!(
                "in {}; {} fit the task too",
                p.file,
                also.join(", ")
            ));
        }
        // New code that only the buffer pointed to: say where it went.
        if let Some(p) = scene
            .place
            .as_ref()
            .filter(|p| p.only_the_buffer && !locate::mentions(&job.task).code.is_empty())
        {
            notes.push(format!(
                "put in {}, the file it was asked in: nothing in the task names a place",
                p.file
            ));
        }
        Ok(Done {
            summary: notes.iter().fold(summary, |s, n| format!("{s} [{n}]")),
            changed_files: store
                .overlay_entries(&job.id)?
                .into_iter()
                .map(|(p, _)| p)
                .collect(),
            rounds,
            form: made.form,
        })
    }

    /// A reply that may change several files: each block goes to the file
    /// it names (the target when it names none), as definitions or the
    /// whole file; then the rename or move the task asks for is finished.
    async fn files_attempt(&self, reply: &str, code: String) -> Result<Attempt, AgentError> {
        let Some((target_path, target_text)) = &self.scene.target else {
            return self.code_attempt(code).await;
        };
        let mut edits = self.edits();
        let paths: Vec<String> = edits.iter().map(|e| e.path.clone()).collect();
        let mut blocks = prompt::file_blocks(reply, &paths);
        if blocks.is_empty() && !code.trim().is_empty() {
            // A JSON answer: its code is one block.
            blocks.push((None, code));
        }
        // One block for the target may be a program, as in a one-file task.
        if let [(None, only)] = blocks.as_slice() {
            if let form @ (ReplyForm::Program(_) | ReplyForm::Nothing) =
                splice::classify(self.scene.language(), only, Some(target_text))
            {
                return self.attempt_form(form).await;
            }
        }
        if blocks.is_empty() {
            return Ok(Err(self.no_code()));
        }
        for (file, code) in blocks {
            let path = file.unwrap_or_else(|| target_path.as_str().to_owned());
            let Some(e) = edits.iter_mut().find(|e| e.path == path) else {
                return Ok(Err(format!(
                    "`{path}` is not one of the files this task changes ({}). Give each block the `# file:` line of one of them.",
                    paths.join(", ")
                )));
            };
            let focus_line = self.job.cursor_in(&path);
            let language = lang::of_file(&path);
            e.new = match splice::classify(language, &code, Some(&e.new)) {
                ReplyForm::WholeFile(whole) => splice::keep_imports(language, &e.new, &whole),
                ReplyForm::Definitions(defs) => {
                    match splice::splice_definitions(language, &e.new, &defs, focus_line) {
                        Ok(new) => new,
                        Err(err) => return Ok(Err(format!("`{path}`: {err}"))),
                    }
                }
                ReplyForm::Program(_) | ReplyForm::Nothing => {
                    return Ok(Err(format!(
                        "The block for `{path}` holds no definitions. Give each file's changed functions and classes in full."
                    )))
                }
            };
        }
        let mut notes = match &self.scene.intent {
            Some(intent) => refactor::finish(intent, &mut edits),
            None => vec![],
        };
        let moved = match self.scene.intent.as_ref().map(|i| &i.change) {
            Some(refactor::Change::Move { name, .. }) => Some(name.as_str()),
            _ => None,
        };
        notes.extend(refactor::tidy(&mut edits, moved));
        self.write_edits(&edits, notes, "definitions")
    }

    /// The files this task may change, each as it is now.
    fn edits(&self) -> Vec<refactor::FileEdit> {
        self.scene
            .target
            .iter()
            .chain(&self.scene.editable)
            .map(|(p, t)| refactor::FileEdit {
                path: p.as_str().to_owned(),
                old: t.clone(),
                new: t.clone(),
            })
            .collect()
    }

    /// Writes the changed `edits` into the overlay; `notes` say what was
    /// done beyond the model's edit.
    fn write_edits(
        &self,
        edits: &[refactor::FileEdit],
        notes: Vec<String>,
        form: &'static str,
    ) -> Result<Attempt, AgentError> {
        if edits.iter().all(|e| e.new == e.old) {
            return Ok(Err(UNCHANGED.into()));
        }
        for e in edits.iter().filter(|e| e.new != e.old) {
            let path =
                ProjectPath::parse(&e.path).map_err(|err| AgentError::Internal(err.to_string()))?;
            if let Err(problem) = self.write(&path, &e.old, &e.new, form) {
                return Ok(Err(problem));
            }
        }
        Ok(Ok(Made {
            summary: None,
            form,
            notes,
        }))
    }

    /// A task that only renames or moves is done on the syntax tree,
    /// without the model: exact, and in a blink.
    fn refactor_alone(&self, intent: &refactor::Intent) -> Result<Attempt, AgentError> {
        let mut edits = self.edits();
        let notes = refactor::finish(intent, &mut edits);
        self.write_edits(&edits, notes, intent.verb())
    }

    async fn node_attempt(&self, reply: &str, code: String) -> Result<Attempt, AgentError> {
        let (job, store) = (self.job, self.store);
        let Some(j) = job.node.as_ref() else {
            return self.code_attempt(code).await;
        };
        let node = j.view.node.as_ref();
        // Small models wrap their new source in a rewrite_self call, often
        // with triple quotes inside it: take the source out of the call.
        let code = match node {
            Some(n) => {
                let code = node::unwrap_rewrite_call(&code).unwrap_or(code);
                node::own_definition(&code, n).unwrap_or(code)
            }
            None => code,
        };
        // A tool call as JSON (`{"tool": …, "args": {…}}`) runs that tool.
        // It goes through the agent's host, as a program's calls do: its
        // capabilities, its audit log.
        if let Some((tool, args)) = node::parse_tool_call(reply) {
            if !j.has_tool(&tool) {
                return Ok(Err(format!(
                    "There is no tool `{tool}`; the tools are: {}.",
                    node::TOOLS.join(", ")
                )));
            }
            let host = AgentHost::new(
                store,
                self.config,
                self.llm,
                self.services,
                job,
                self.cancel,
                self.caps.clone(),
            );
            let (called, _) = host
                .off_runtime(move |h| {
                    sandbox::Host::call(h, &tool, vec![], args).map(|v| (tool, v))
                })
                .await?;
            return Ok(match called {
                Ok((_, sandbox::Value::String(s))) if s.starts_with(node::SENT) => Ok(Made::new(Some(s), "message")),
                Ok(_) if !store.overlay_entries(&job.id)?.is_empty() => Ok(Made::new(None, "tool call")),
                Ok((tool, v)) => Err(format!("{tool} returned {v}; now change yourself (rewrite_self) or ask another node (message_node).")),
                Err(e) => Err(e.to_string()),
            });
        }
        let form = splice::classify(self.scene.language(), &code, self.target_text());
        let code = match (form, node) {
            (ReplyForm::Definitions(code) | ReplyForm::WholeFile(code), Some(_)) => code,
            (form, _) => return self.attempt_form(form).await,
        };
        Ok(match &self.scene.target {
            Some((path, text)) => match node::apply_reply(text, j, &code) {
                Ok(new) => self.write(path, text, &new, "rewrite_self"),
                // A node may not edit another: what it wrote for a
                // neighbour goes to that neighbour as a request.
                Err(e) => match j.redirect(&job.task, &code).or_else(|| {
                    e.contains(node::UNCHANGED)
                        .then(|| j.forward(&job.task))
                        .flatten()
                }) {
                    Some(Ok(sent)) => Ok(Made::new(Some(sent), "message")),
                    Some(Err(refused)) => Err(refused.to_string()),
                    None => Err(e),
                },
            },
            _ => Err("Your node's file is gone.".into()),
        })
    }
}

/// A change an attempt left in the overlay, before the gate.
struct Made {
    /// What the model said it did, if it did.
    summary: Option<String>,
    /// The reply form that produced it.
    form: &'static str,
    /// What was done beyond the model's edit (a rename finished), for the
    /// summary.
    notes: Vec<String>,
}

impl Made {
    fn new(summary: Option<String>, form: &'static str) -> Self {
        Made {
            summary,
            form,
            notes: vec![],
        }
    }
}

/// A change made, or what to tell the model about why none was.
type Attempt = Result<Made, String>;

use gate::UNCHANGED;

/// Writes `new` for `path` into the overlay if it may and changes something
/// (the gate checks the rest).
#[allow(clippy::too_many_arguments)]
fn write_checked(
    store: &Store,
    caps: &crate::capabilities::Capabilities,
    agent: &str,
    max_bytes: u64,
    path: &ProjectPath,
    old: &str,
    new: &str,
    form: &'static str,
) -> Attempt {
    caps.check_write(path.as_str()).map_err(|d| d.to_string())?;
    if new == old {
        return Err(UNCHANGED.into());
    }
    let ov = Overlay::new(store, agent, max_bytes);
    // The file moved on while the model answered (the human typed, Remora
    // wrote its IDs into the buffer): the change goes onto what is there
    // now, or the proposal would undo what happened meanwhile.
    let merged = match ov.read_text(path) {
        Ok(now) if now != old => Some(crate::diff::merge3(old, &now, new).ok_or_else(|| {
            format!("`{path}` changed while you answered, in the lines you changed; answer again for the file as it is now.")
        })?),
        _ => None,
    };
    let new = merged.as_deref().unwrap_or(new);
    ov.write(path, new.as_bytes()).map_err(|e| e.to_string())?;
    Ok(Made::new(None, form))
}

/// Runs a program reply in the sandbox; checks what it wrote.
async fn run_program(
    store: &Arc<Store>,
    config: &Config,
    llm: &LlmClient,
    services: &Services,
    job: &Job,
    cancel: &CancellationToken,
    code: String,
) -> Result<Attempt, AgentError> {
    let limits = Limits {
        cpu_time: Duration::from_millis(config.agents.sandbox_timeout_ms),
        max_recursion: config.agents.max_recursion,
        max_memory: usize::try_from(config.agents.sandbox_memory_mb.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        ..Limits::default()
    };
    let host = AgentHost::new(
        store,
        config,
        llm,
        services,
        job,
        cancel,
        capabilities(config, job, services)?,
    );
    let (result, host) = host
        .off_runtime(move |h| sandbox::run(&code, h, limits))
        .await?;
    // What the program said stays with the agent, whatever became of it.
    if !host.logs.is_empty() {
        store.agent_log_append(&job.id, &host.logs)?;
    }
    match result {
        Err(SandboxError::Cancelled) => return Err(AgentError::Cancelled),
        Err(e) => return Ok(Err(e.to_string())),
        Ok(_) => {}
    }
    let entries = store.overlay_entries(&job.id)?;
    // A node agent's program may only have asked other nodes for changes.
    if host.node.is_some() && host.submitted.is_none() {
        if entries.is_empty() && !host.messages_sent.is_empty() {
            return Ok(Ok(Made::new(
                Some(host.messages_sent.join("; ")),
                "message",
            )));
        }
        if entries.is_empty() {
            let name = host
                .node
                .as_ref()
                .and_then(|n| n.view.node.as_ref())
                .map_or("yourself", |n| n.name.as_str());
            return Ok(Err(format!(
                "The program changed nothing and sent no message. Answer with your complete new source in one ```{fence} block starting with your own `{name}` definition, or with message_node(target_id, request).",
                fence = host.node.as_ref().and_then(|n| n.view.node.as_ref()).map_or("python", |n| lang::of_file(&n.file_path).fence)
            )));
        }
    }
    let summary = match host.submitted {
        Some((summary, _)) => summary,
        None if host.node.is_some() => "rewrite_self".to_owned(),
        None => {
            return Ok(Err(
                "The program ended without calling submit_result(summary, changed_files).".into(),
            ))
        }
    };
    if entries.is_empty() {
        return Ok(Err(
            "The program called submit_result but changed no file: write the changed file with write_file(path, content)."
                .into(),
        ));
    }
    Ok(Ok(Made::new(Some(summary), "program")))
}

#[cfg(test)]
mod tests;
