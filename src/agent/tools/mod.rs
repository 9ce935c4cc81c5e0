//! Tool mode (seed 002): the model calls one tool per reply, as one JSON
//! object `{"tool": …, "args": {…}}` (asked for with the server's
//! constrained JSON output, fences stripped otherwise); each result goes
//! back as success or error so the model can correct itself, until it
//! calls `submit_result` or the iteration limit. The tools are the host
//! functions code mode uses, each with a JSON schema, plus `web_search`
//! when an endpoint is configured and the MCP tools the agent's
//! capabilities allow. Where the server has native tool calling (and is
//! not llama.cpp, whose small models do better with constrained JSON),
//! the tools go out as the provider's `tools` and its `tool_calls` come
//! back; a reply without one is still read as the text protocol.

mod blocks;
mod chat;
pub mod files;
mod registry;
pub mod table;
mod told;

use serde_json::{json, Value as Json};

pub(crate) use chat::is_question;
pub use chat::{chat_path, ChatEvent, ChatPath, ChatTurn};
pub(crate) use registry::spec;
pub use registry::{call_parts, parse_call, registry, reply_schema, ToolSpec};

use super::attempt::Turn;
use super::brain::Run;
use super::gate::Gated;
use super::problem::Problem;
use super::scene::Scene;
use super::{AgentError, AgentHost, Done, Job};
use crate::config::{Config, Provider, ToolCalls};
use crate::llm::{ChatMessage, ChatOptions, LlmClient};
use crate::sandbox::{self, Host, HostError, Value};
use crate::store::Store;
use blocks::{ask_for_block, ask_for_file_block, path_only_writes, JSON_CODE_FROM_B};
use chat::CHAT_RULES;
use files::WriteRefused;
use registry::{args_object, cut_write_path, native_tools, reply_spec, signature, wire_name};
use told::{next_step, result_message};

/// The tools that change files: after a write that changed nothing or a
/// refused submit_result, the next step may only call one of them.
const WRITE_TOOLS: &[&str] = &["write_definitions", "write_file"];

/// The tools a question's first step may call.
const QUESTION_TOOLS: &[&str] = &[
    "reply",
    "read_file",
    "search_files",
    "list_dir",
    "get_file_tree",
];

fn system_prompt(tools: &[ToolSpec], native: bool, chat: bool) -> String {
    let role = if chat {
        CHAT_RULES
    } else {
        "You are a coding agent working on a project. "
    };
    if native {
        return format!(
            "{role}You act by calling the tools you are given, one call at a time. Each result \
             comes back as {{\"ok\": true, \"result\": ...}} or {{\"ok\": false, \"error\": ...}}; \
             fix your call after an error. Read a file before you change it. When a change is \
             done, call submit_result."
        );
    }
    let mut s = role.to_owned();
    s.push_str(
        "You act by calling tools.\n\
         Answer with exactly ONE JSON object per reply, nothing else:\n\
         {\"tool\": \"<name>\", \"args\": {<argument>: <value>, ...}}\n\
         You get each result back as {\"ok\": true, \"result\": ...} or {\"ok\": false, \"error\": ...}; \
         fix your call after an error. Read a file before you change it; write whole files. \
         When the change is done, call submit_result.\n\nTools:\n",
    );
    for t in tools {
        s.push_str(&format!("- {}: {}\n", signature(t), t.description));
    }
    s.push_str(if chat {
        "\nExample reply: {\"tool\": \"reply\", \"args\": {\"text\": \"<your answer>\"}}\n"
    } else {
        "\nExample reply: {\"tool\": \"read_file\", \"args\": {\"path\": \"path/of/the/file.py\"}}\n"
    });
    s.push_str("Argument values are plain strings (or a list of strings), never objects.\n");
    s
}

/// Keeps the system prompt, the task and the newest exchanges within
/// `budget` characters, dropping the oldest exchanges first.
fn trim_history(messages: &mut Vec<ChatMessage>, budget: usize) {
    let size = |m: &[ChatMessage]| m.iter().map(|x| x.content.len()).sum::<usize>();
    while messages.len() > 4 && size(messages) > budget {
        // An exchange is the model's call and the result after it.
        messages.drain(2..4);
    }
}

/// The files of `agent`'s overlay that differ from their base (a file
/// written back as it was is no change).
pub(crate) fn changed_files(store: &Store, agent: &str) -> Result<Vec<String>, AgentError> {
    Ok(store
        .overlay_entries(agent)?
        .into_iter()
        .filter(|(_, e)| e.hash != e.base_hash)
        .map(|(p, _)| p)
        .collect())
}

/// Whether tool calls go through the provider's native tool calling.
async fn use_native(config: &Config, llm: &LlmClient) -> bool {
    match config.agents.tool_calls {
        ToolCalls::Native => true,
        ToolCalls::Text => false,
        ToolCalls::Auto => config.llm.provider == Provider::Openai && !llm.is_llama_cpp().await,
    }
}

/// The file `job`'s task is about (see [`super::locate`]) and its text,
/// cut to a third of the model's window, if the agent may read it.
fn the_file(run: &Run, scene: &Scene) -> Option<(String, String)> {
    // A file it may not read, or one still to create: nothing to show.
    let (path, text) = scene
        .target
        .as_ref()
        .filter(|_| !scene.place.as_ref().is_some_and(|p| p.new))?;
    let limit = (run.config.llm.context_tokens as usize).max(2048);
    Some((path.to_string(), text.chars().take(limit).collect()))
}

/// Runs a task in tool mode; on success the agent's overlay holds its
/// changes.
pub async fn run(run: &Run<'_>) -> Result<Done, AgentError> {
    let (job, config) = (run.job, run.config);
    let (mut tools, mcp_tools) = registry::offered(run).await;
    if job.chat.is_some() {
        tools.push(reply_spec());
    }
    let native = use_native(config, run.llm()?).await;
    let scene = Scene::find(run).and_then(|(tree, place)| Scene::at(run, tree, place));
    if let (Ok(scene), None) = (&scene, &job.chat) {
        // A rename or a move alone is exact on the syntax tree; a small
        // model asked to do it renames the definition and forgets its uses.
        if let Some(done) = super::code::refactor_alone(&Turn { run, scene }).await? {
            return Ok(done);
        }
    }
    // The file the task is about, found as for code mode, is given with
    // the task: small models otherwise read a path from the example.
    let located = scene.ok().and_then(|scene| the_file(run, &scene));
    let mut task = task_text(job, located.as_ref());
    if let Some(chat) = &job.chat {
        task = chat::chat_message(run, chat, task);
        if chat_path(config, &job.spec.task) == ChatPath::Prose {
            return chat::answer_in_prose(run, chat, task).await;
        }
    }
    let mut host = AgentHost::new(run);
    host.mcp_tools = mcp_tools;
    let mut steps = Steps::new(run, host, tools, native, located, task).await?;
    run.workspace().clear()?;
    let limit = config.agents.max_iterations.max(1);
    for step in 1..=limit {
        if let Some(done) = steps.step(step, step >= limit).await? {
            return Ok(done);
        }
    }
    // What the model wrote before it ran out of calls, if the gate passes
    // it; nothing that does not pass is proposed.
    let wrote = !changed_files(&run.store, &job.id)?.is_empty();
    if let Some(done) = steps.cut_short(limit).await? {
        return Ok(done);
    }
    run.workspace().clear()?;
    // Nothing written, or nothing that passes: the change asked for once
    // more, in code mode's form (a small model that keeps reading, or
    // writes its file back as it was, in tool mode often writes the
    // change when asked for the code alone).
    if job.chat.is_none() {
        run.say(format!(
            "nothing to propose after {limit} tool calls: asking once for the code itself"
        ));
        let what = match wrote {
            true => "and what it wrote did not pass the checks",
            false => "with nothing written",
        };
        if let Ok(done) = super::code::last_try(run).await {
            return Ok(Done {
                summary: format!(
                    "{} [tool mode ran out of calls (agents.max_iterations) {what}; this came from one request for the code itself]",
                    done.summary
                ),
                ..done
            });
        }
        run.workspace().clear()?;
    }
    Err(AgentError::TooManySteps(limit))
}

/// The first message of a tool-mode run: the task with the file it is
/// about, the human's selection and the feedback on rejected attempts.
fn task_text(job: &Job, located: Option<&(String, String)>) -> String {
    let mut task = job.spec.task.clone();
    match located {
        Some((path, text)) => task.push_str(&format!(
            "\n\nThe file this task is about is `{path}`:\n```{}\n{text}\n```",
            crate::lang::of_file(path).fence
        )),
        None => {
            if let Some(file) = &job.spec.file {
                task.push_str(&format!("\n(The human is in {file}.)"));
            }
        }
    }
    if let Some(ctx) = &job.spec.context {
        task.push_str(&format!("\nSelected text:\n{ctx}"));
    }
    for f in &job.feedback {
        task.push_str(&format!(
            "\nAn earlier attempt was rejected with this feedback: {}\nThat attempt:\n{}",
            f.feedback, f.attempt
        ));
    }
    task
}

/// A tool call as read from a reply: the tool and its arguments, or what
/// is wrong with the reply.
type Call = Result<(String, serde_json::Map<String, Json>), String>;

/// How a call's result goes back: as the `tool` message of a native call
/// (with its ID), else as the next user message.
struct Answer(Option<String>);

impl Answer {
    fn with(&self, text: String) -> ChatMessage {
        match &self.0 {
            Some(id) => ChatMessage::tool_result(id, text),
            None => ChatMessage::user(text),
        }
    }
}

/// The steps of a tool-mode run: the conversation, the host that runs
/// the calls, and what the small-model tactics remember between steps.
struct Steps<'r, 'a> {
    run: &'r Run<'a>,
    tools: Vec<ToolSpec>,
    native: bool,
    /// A chat turn that asks something rather than asks for something.
    question: bool,
    /// The file the task is about and its text, as shown with the task.
    located: Option<(String, String)>,
    messages: Vec<ChatMessage>,
    opts: ChatOptions,
    /// Characters the conversation may take.
    budget: usize,
    /// Away while a call runs on it off the async threads.
    host: Option<AgentHost>,
    /// Each call made so far, in canonical JSON.
    calls_made: Vec<String>,
    /// Tools whose same call the model repeated: no longer offered.
    worn: Vec<String>,
    /// A write changed nothing or submit_result was refused: small models
    /// then submit the same nothing again until the step limit, so the
    /// next step can only write.
    must_write: bool,
    /// Under the JSON grammar small models copy the code they were shown
    /// into a write unchanged, again and again; in a ```python block they
    /// make the change (the definitions form of code mode). After a write
    /// that failed, the next reply is asked as a block and written to this
    /// path with write_definitions.
    block_for: Option<String>,
    /// The block asked for is the whole file (write_file), not definitions.
    block_whole: bool,
    /// The last call came from such a block.
    from_block: bool,
    /// Writes take only a path and their code comes next as a block: a
    /// small model's code inside a JSON string loses line ends, quotes and
    /// the change itself far more often than in a block.
    code_in_blocks: bool,
}

impl<'r, 'a> Steps<'r, 'a> {
    async fn new(
        run: &'r Run<'a>,
        host: AgentHost,
        tools: Vec<ToolSpec>,
        native: bool,
        located: Option<(String, String)>,
        task: String,
    ) -> Result<Self, AgentError> {
        let job = run.job;
        let code_in_blocks = !native
            && run
                .config
                .llm
                .model_size_b()
                .is_none_or(|b| b < JSON_CODE_FROM_B);
        let tools = if code_in_blocks {
            path_only_writes(tools)
        } else {
            tools
        };
        let mut system = system_prompt(&tools, native, job.chat.is_some());
        system.push_str(&run.rules(located.as_ref().map(|(p, _)| p.as_str())));
        let opts = ChatOptions {
            tools: native.then(|| native_tools(&tools)),
            ..Default::default()
        };
        let window = run.llm()?.context_window().await as usize;
        let budget = window
            .saturating_sub(run.config.llm.max_tokens as usize)
            .max(1000)
            * 3;
        Ok(Steps {
            run,
            tools,
            native,
            question: job.chat.is_some() && is_question(&job.spec.task),
            located,
            messages: vec![ChatMessage::system(system), ChatMessage::user(task)],
            opts,
            budget,
            host: Some(host),
            calls_made: Vec::new(),
            worn: Vec::new(),
            must_write: false,
            block_for: None,
            block_whole: false,
            from_block: false,
            code_in_blocks,
        })
    }

    /// Shows `event` in the chat, when the run is a chat turn.
    fn show(&self, event: ChatEvent) {
        if let Some(chat) = &self.run.job.chat {
            chat.show(event);
        }
    }

    /// One step: a reply, its call run, its result told. `Some` when the
    /// run is done.
    async fn step(&mut self, step: usize, last: bool) -> Result<Option<Done>, AgentError> {
        let run = self.run;
        run.say(format!("tool step {step}"));
        trim_history(&mut self.messages, self.budget);
        // Small models tend to repeat a call word for word: after the
        // first, they sample a little more freely.
        self.opts.temperature = (step > 1).then(|| (run.config.llm.temperature + 0.4).min(1.0));
        if !self.native {
            self.opts.json_schema = match self.block_for {
                Some(_) => None,
                None => Some(reply_schema(&self.allowed(step))),
            };
        }
        let (call, answer_id) = self.ask(step).await?;
        let answer = Answer(answer_id);
        if let Some(outcome) = self.chat_reply(&call, step, &answer)? {
            return Ok(outcome);
        }
        let write_path = call
            .as_ref()
            .ok()
            .filter(|(tool, _)| WRITE_TOOLS.contains(&tool.as_str()))
            .and_then(|(_, args)| args.get("path")?.as_str().map(str::to_owned));
        if let (Some(path), Ok((tool, args))) = (&write_path, &call) {
            if self.code_in_blocks && !args.contains_key("code") && !args.contains_key("content") {
                // Words, not the `{"ok": …}` small models copy as the code.
                let whole = tool == "write_file";
                let text = match self.meant_path(tool, path) {
                    Ok((path, notes)) => {
                        format!(
                            "{tool}(`{path}`): ready.{notes}{}",
                            self.ask_block(&path, whole)
                        )
                    }
                    Err(e) => result_message(Err(e)),
                };
                self.messages.push(answer.with(text));
                return Ok(None);
            }
        }
        let called = call.as_ref().ok().map(|(tool, args)| {
            (
                tool.clone(),
                json!({"tool": tool, "args": args}).to_string(),
            )
        });
        let result = self.call(call).await?;
        if run.cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        let submitted = self.host.as_mut().and_then(|h| h.submitted.take());
        if let Some((summary, _)) = submitted {
            return self.submitted(summary, step, last, &answer).await;
        }
        let text = self.told(result, called, write_path);
        self.messages.push(answer.with(text));
        Ok(None)
    }

    /// The tools the next step may call under the grammar: a tool whose
    /// same call the model repeated is left out; a question's first step
    /// reads or answers; a request's first step acts (small models
    /// otherwise "reply" with it); after a write that changed nothing,
    /// only a write.
    fn allowed(&self, step: usize) -> Vec<ToolSpec> {
        let question = self.question;
        let may = |t: &ToolSpec| {
            let name = t.name.as_str();
            if self.must_write {
                return WRITE_TOOLS.contains(&name);
            }
            !self.worn.contains(&t.name)
                && (!(question && step == 1) || QUESTION_TOOLS.contains(&name))
                && (question || step > 1 || name != "reply")
        };
        self.tools.iter().filter(|t| may(t)).cloned().collect()
    }

    /// Asks the model for step `step`'s call; a native call comes with
    /// the ID its result is answered with.
    async fn ask(&mut self, step: usize) -> Result<(Call, Option<String>), AgentError> {
        let show = |piece: &str| self.show(ChatEvent::Delta(piece.to_owned()));
        let reply = self
            .run
            .reply(
                &format!(" (tools, step {step})"),
                &self.messages,
                &self.opts,
                &show,
            )
            .await?;
        Ok(match reply.tool_call {
            Some(native_call) => {
                self.messages
                    .push(ChatMessage::assistant_call(reply.text, &native_call));
                let name = self
                    .tools
                    .iter()
                    .find(|t| wire_name(&t.name) == native_call.name)
                    .map_or(native_call.name.clone(), |t| t.name.clone());
                let call = args_object(Some(&native_call.arguments)).map(|args| (name, args));
                (call, Some(native_call.id))
            }
            None => {
                let block_for = self.block_for.take().filter(|_| !self.native);
                let whole = std::mem::take(&mut self.block_whole);
                self.from_block = block_for.is_some();
                let call = match block_for {
                    // (A reply cut for a loop is told as such below.)
                    Some(path) => match blocks::why_not_code(&path, &reply.text)
                        .filter(|_| reply.looped.is_none())
                    {
                        // Small models copy an answer or a note instead.
                        Some(why) => {
                            self.messages.push(ChatMessage::assistant(reply.text));
                            let told = format!("{why}{}", self.ask_block(&path, whole));
                            return Ok((Err(told), None));
                        }
                        None => Ok(blocks::write_call(path, whole, &reply.text)),
                    },
                    None => parse_call(&reply.text),
                };
                // Blank space after a whole call cost time, not the call.
                let blank_after_call =
                    call.is_ok() && reply.looped.as_deref() == Some(super::runaway::BLANK);
                if let Some(looped) = reply.looped.as_ref().filter(|_| !blank_after_call) {
                    return Ok((self.looped(&reply.text, looped, call), None));
                }
                self.messages.push(ChatMessage::assistant(reply.text));
                (call, None)
            }
        })
    }

    /// Says that the next reply is to be the code for `path` (the whole
    /// file when `whole`) as a block, and makes it so.
    fn ask_block(&mut self, path: &str, whole: bool) -> String {
        let task = &self.run.job.spec.task;
        self.block_for = Some(path.to_owned());
        self.block_whole = whole;
        match whole {
            true => ask_for_file_block(path, task),
            false => ask_for_block(path, task),
        }
    }

    /// The file a path-only write of `path` goes to ([`AgentHost::meant_path`]),
    /// with what the model is to be told of it.
    fn meant_path(&mut self, tool: &str, path: &str) -> Result<(String, String), HostError> {
        let Some(host) = self.host.as_mut() else {
            return Ok((path.to_owned(), String::new()));
        };
        let meant = host.meant_path(tool, path)?;
        let notes: String = host
            .path_notes
            .drain(..)
            .map(|n| format!(" {}", n.to_model()))
            .collect();
        Ok((meant.to_string(), notes))
    }

    /// Asks (in `said`) for the next reply as a code block written to the
    /// file the task is about, when there is one and calls are text.
    fn ask_block_for_located(&mut self, said: &mut String) {
        if let Some((path, _)) = self.located.as_ref().filter(|_| !self.native) {
            said.push_str(&ask_for_block(path, &self.run.job.spec.task));
            self.block_for = Some(path.clone());
        }
    }

    /// A reply cut for going round in a loop (`looped`: the first line it
    /// repeated): kept short in the conversation, told as an error, and,
    /// when it was a write (small models under the grammar copy the file
    /// into it again and again), the next reply asked as a code block.
    fn looped(&mut self, text: &str, looped: &str, call: Call) -> Call {
        // No start of the cut reply stays: small models copy it as it is.
        let what = match text.trim_start().starts_with('{') {
            true => "a tool call",
            false => "code",
        };
        self.messages.push(ChatMessage::assistant(format!(
            "({what} that went round in a loop, cut)"
        )));
        let mut told = if looped == super::runaway::BLANK {
            "Your reply ran on into blank space and was cut. End the JSON object right after its \
             last value."
                .to_owned()
        } else {
            format!(
                "Your reply went round in a loop, writing `{looped}` and what follows again and \
                 again, and was cut. Write each thing once."
            )
        };
        // (A whole file cut so is asked for whole again.)
        let write = match call {
            Ok((tool, args)) if WRITE_TOOLS.contains(&tool.as_str()) => args
                .get("path")
                .and_then(Json::as_str)
                .map(|p| (p.to_owned(), tool == "write_file")),
            Ok(call) => return Ok(call),
            Err(_) => cut_write_path(text).map(|p| (p, false)),
        };
        if let Some((path, whole)) = write.filter(|_| !self.native) {
            told.push_str(&self.ask_block(&path, whole));
        }
        Err(told)
    }

    /// A chat turn's `reply` call, which no host runs: the turn's answer
    /// (with the files it wrote as its proposal), or `None` with the model
    /// told that it only echoed the human. `None` for any other call.
    fn chat_reply(
        &mut self,
        call: &Call,
        step: usize,
        answer: &Answer,
    ) -> Result<Option<Option<Done>>, AgentError> {
        let job = self.run.job;
        let (Some(_), Ok((tool, args))) = (&job.chat, call) else {
            return Ok(None);
        };
        if tool != "reply" {
            return Ok(None);
        }
        let text = args
            .get("text")
            .map(|t| t.as_str().map_or_else(|| t.to_string(), str::to_owned))
            .unwrap_or_default();
        if text.trim().eq_ignore_ascii_case(job.spec.task.trim()) {
            self.messages.push(answer.with(result_message(Err(
                "reply: that is the human's own message. Do what it asks (write the change, then submit_result), or reply why you cannot.".into(),
            ))));
            return Ok(Some(None));
        }
        self.show(ChatEvent::Reply(text.clone()));
        // Files written without submit_result still become a proposal.
        let changed = changed_files(&self.run.store, &job.id)?;
        Ok(Some(Some(Done {
            summary: text,
            changed_files: changed,
            rounds: step as u32,
            form: "chat",
        })))
    }

    /// Runs `call` on the host, off the async threads.
    async fn call(&mut self, call: Call) -> Result<Result<Value, HostError>, AgentError> {
        let Some(mut host) = self.host.take() else {
            return Err(AgentError::Internal("the agent's host was lost".into()));
        };
        host.write_refused = None;
        let (tool, args) = match call {
            Err(problem) => {
                self.host = Some(host);
                return Ok(Err(HostError::Failed(problem)));
            }
            Ok(call) => call,
        };
        if !self.tools.iter().any(|t| t.name == tool) {
            self.host = Some(host);
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
            return Ok(Err(format!(
                "There is no tool `{tool}`. The tools are: {}.",
                names.join(", ")
            )
            .into()));
        }
        let (result, host) = if host.mcp_tools.contains(&tool) {
            host.off_runtime(move |h| h.call_mcp(&tool, Json::Object(args)).map(Value::String))
                .await?
        } else {
            let kwargs: Vec<(Value, Value)> = args
                .into_iter()
                .map(|(k, v)| (Value::String(k), sandbox::from_json(v)))
                .collect();
            host.off_runtime(move |h| h.call(&tool, vec![], kwargs))
                .await?
        };
        self.host = Some(host);
        Ok(result)
    }

    /// After submit_result: the run's proposal once the gate passes it,
    /// else `None` with the model told what is wrong. A question's turn
    /// that changed nothing is its answer.
    async fn submitted(
        &mut self,
        summary: String,
        step: usize,
        last: bool,
        answer: &Answer,
    ) -> Result<Option<Done>, AgentError> {
        let run = self.run;
        let changed = changed_files(&run.store, &run.job.id)?;
        let sent = self
            .host
            .as_ref()
            .is_some_and(|h| !h.messages_sent.is_empty());
        if changed.is_empty() && !sent && self.question {
            self.show(ChatEvent::Reply(summary.clone()));
            return Ok(Some(Done {
                summary,
                changed_files: vec![],
                rounds: step as u32,
                form: "chat",
            }));
        }
        if changed.is_empty() && !sent {
            let mut said = result_message(Err(
                "submit_result: no file is changed yet; write the changed file with write_file first (its whole new content)".into(),
            ));
            self.must_write = true;
            self.ask_block_for_located(&mut said);
            self.messages.push(answer.with(said));
            return Ok(None);
        }
        // The step every form ends in (kept to the task, parses, removes
        // nothing unnamed, passes the tests).
        let (notes, change) = match super::gate::finish(run, last).await {
            Ok(Gated::Pass { notes, change }) => (notes, change),
            Ok(Gated::Fallback { notes, change, .. }) if last => (notes, change),
            Ok(Gated::Fallback { problem, .. }) | Err(problem) => {
                let mut said =
                    result_message(Err(HostError::Failed(format!("submit_result: {problem}"))));
                // Nothing left of the change (written back as it was, or
                // only outside the task, or nothing done to what the task
                // names): under the grammar small models write and submit
                // the same again; asked for a block, they make the change.
                if matches!(
                    problem,
                    Problem::Unchanged
                        | Problem::NamedUntouched { .. }
                        | Problem::NothingDocumented { .. }
                ) {
                    self.ask_block_for_located(&mut said);
                }
                self.messages.push(answer.with(said));
                self.must_write = true;
                return Ok(None);
            }
        };
        let summary = super::scope::summary(&change, Some(summary), &run.job.spec.task);
        let summary = notes
            .iter()
            .fold(summary, |s, note| format!("{s} [{note}]"));
        self.show(ChatEvent::Reply(summary.clone()));
        Ok(Some(Done {
            summary,
            changed_files: change.changed_paths(),
            rounds: step as u32,
            form: "tools",
        }))
    }

    /// At the call limit: what the overlay holds, through the same gate as
    /// a submitted change (kept to the task, parses, removes nothing
    /// unnamed, passes the tests), proposed and said to be cut. Small
    /// models write the change and then keep reading instead of
    /// submitting (6 of 20 tool-mode tasks, Qwen2.5-Coder 1.5B). `None`
    /// when nothing was written or the gate refuses it.
    async fn cut_short(&mut self, limit: usize) -> Result<Option<Done>, AgentError> {
        let run = self.run;
        let changed = changed_files(&run.store, &run.job.id)?;
        if changed.is_empty() {
            return Ok(None);
        }
        let (notes, change) = match super::gate::finish(run, true).await {
            Ok(Gated::Pass { notes, change } | Gated::Fallback { notes, change, .. }) => {
                (notes, change)
            }
            Err(_) => return Ok(None),
        };
        let summary = super::scope::summary(&change, None, &run.job.spec.task);
        let summary = notes.iter().fold(
            format!(
                "{summary} [the model did not finish within {limit} tool calls (agents.max_iterations): this is what it had written, checked as any proposal]"
            ),
            |s, note| format!("{s} [{note}]"),
        );
        self.show(ChatEvent::Reply(summary.clone()));
        Ok(Some(Done {
            summary,
            changed_files: change.changed_paths(),
            rounds: limit as u32,
            form: "tools",
        }))
    }

    /// What the model is told of a call's `result`, with the next step
    /// for small models; remembers the call.
    fn told(
        &mut self,
        result: Result<Value, HostError>,
        called: Option<(String, String)>,
        write_path: Option<String>,
    ) -> String {
        let was_write = called
            .as_ref()
            .is_some_and(|(tool, _)| WRITE_TOOLS.contains(&tool.as_str()));
        if was_write {
            // Only a write that changed something lets the model move on.
            self.must_write = result.is_err();
        }
        // Only a write refused for its code (it changed nothing, or does
        // not parse: a small model's code in a JSON string often lost its
        // line ends, and it sends the same again and again): other errors
        // (a bad path, a wrong argument) are the call's, answered as such.
        // Code that did not parse in a block is asked for in JSON again.
        let code_refused = match self.host.as_ref().and_then(|h| h.write_refused) {
            Some(WriteRefused::Unchanged) => true,
            Some(WriteRefused::Unparsable) => !self.from_block,
            None => false,
        };
        let block_path = write_path.filter(|_| result.is_err() && code_refused && !self.native);
        let mut text = result_message(result);
        if let Some(host) = self.host.as_mut() {
            for note in host.path_notes.drain(..) {
                text.push('\n');
                text.push_str(&note.to_model());
            }
        }
        if let Some(path) = block_path {
            text.push_str(&ask_for_block(&path, &self.run.job.spec.task));
            self.block_for = Some(path);
        }
        let Some((tool, canonical)) = called else {
            return text;
        };
        self.show(ChatEvent::Step {
            call: canonical.clone(),
            result: text.clone(),
        });
        let repeated = self.calls_made.contains(&canonical);
        self.calls_made.push(canonical);
        // After a failed write the error says what to do, not "submit".
        let hint = next_step(&tool, repeated, self.run.job.chat.is_some())
            .filter(|_| self.block_for.is_none() && !(was_write && self.must_write));
        if let Some(hint) = hint {
            text.push('\n');
            text.push_str(hint);
        }
        // A small model under a grammar repeats calls it likes.
        let finishing = matches!(tool.as_str(), "submit_result" | "reply");
        if repeated && !finishing && !self.worn.contains(&tool) {
            self.worn.push(tool);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_of_a_write_cut_short_is_read_from_its_start() {
        let cut = r#"{"tool": "write_definitions", "args": {"path": "inventory/te\"xt.py", "code": "def f():\n    return 1\n\ndef f():\n  "#;
        assert_eq!(cut_write_path(cut).as_deref(), Some("inventory/te\"xt.py"));
        let read = r#"{"tool": "read_file", "args": {"path": "a.py"#;
        assert_eq!(cut_write_path(read), None);
        assert_eq!(
            cut_write_path(r#"{"tool": "write_file", "args": {"pa"#),
            None
        );
    }

    #[test]
    fn a_fence_inside_a_calls_string_is_not_taken_for_one_around_it() {
        // 1.5B, asked for a path-only write (eval, doc-load-defaults).
        let reply = r#"{"tool": "write_definitions", "args": {"path": "inventory/config.py"}, "result": "```python\nconfig = {}\n```"}"#;
        let (t, a) = parse_call(reply).unwrap();
        assert_eq!(
            (t.as_str(), a["path"].as_str()),
            ("write_definitions", Some("inventory/config.py"))
        );
        let schema = registry::reply_schema(&registry::registry());
        assert!(
            schema["anyOf"]
                .as_array()
                .is_some_and(|calls| calls.iter().all(|c| c["additionalProperties"] == false)),
            "nothing beside tool and args: {schema}"
        );
    }

    #[test]
    fn a_call_cut_just_before_its_closing_braces_is_whole_with_them() {
        let (t, a) = parse_call(
            "{\"tool\": \"write_file\", \"args\": {\"path\": \"a.py\", \"content\": \"x = {}\"} ",
        )
        .unwrap();
        assert_eq!(
            (t.as_str(), a["content"].as_str()),
            ("write_file", Some("x = {}"))
        );
        let (t, a) = parse_call("{\"tool\": \"read_file\", \"args\": {\"path\": \"a.py\"").unwrap();
        assert_eq!(
            (t.as_str(), a["path"].as_str()),
            ("read_file", Some("a.py"))
        );
        assert!(
            parse_call("{\"tool\": \"read_file\", \"args\": {\"path\": \"a.p")
                .unwrap_err()
                .contains("not closed")
        );
    }

    #[test]
    fn calls_are_read_with_or_without_fences_and_errors_say_what_to_do() {
        let (t, a) =
            parse_call("```json\n{\"tool\": \"read_file\", \"args\": {\"path\": \"a.py\"}}\n```")
                .unwrap();
        assert_eq!(
            (t.as_str(), a["path"].as_str()),
            ("read_file", Some("a.py"))
        );
        let (t, a) = parse_call("Sure! {\"tool\": \"get_file_tree\"}").unwrap();
        assert_eq!((t.as_str(), a.len()), ("get_file_tree", 0));
        assert!(parse_call("I will read the file")
            .unwrap_err()
            .contains("no JSON object"));
        assert!(
            parse_call("{\"tool\": \"read_file\", \"args\": {\"path\": }")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(parse_call("{\"args\": {}}")
            .unwrap_err()
            .contains("no \"tool\""));
        assert!(parse_call("{\"tool\": \"x\", \"args\": [1]}")
            .unwrap_err()
            .contains("must be a JSON object"));
        // The seed's own shape, and OpenAI's.
        let (t, a) =
            parse_call("{\"tool_to_use\": \"read_file\", \"parameters\": {\"path\": \"b.py\"}}")
                .unwrap();
        assert_eq!(
            (t.as_str(), a["path"].as_str()),
            ("read_file", Some("b.py"))
        );
        let (t, a) =
            parse_call("{\"name\": \"list_dir\", \"arguments\": \"{\\\"path\\\": \\\".\\\"}\"}")
                .unwrap();
        assert_eq!((t.as_str(), a["path"].as_str()), ("list_dir", Some(".")));
    }

    #[test]
    fn every_registry_tool_is_a_host_function_with_a_schema() {
        let schema = reply_schema(&registry());
        assert_eq!(schema["anyOf"].as_array().unwrap().len(), registry().len());
        for t in registry() {
            assert_eq!(t.parameters["type"], "object", "{}", t.name);
            assert!(
                super::super::host::is_function(&t.name),
                "{} is not a host function",
                t.name
            );
        }
        // Parameters in the order they are declared (what the model reads).
        assert_eq!(
            signature(&registry()[1]),
            "write_file(path: string, content: string)"
        );
    }

    #[test]
    fn questions_are_told_from_requests() {
        assert!(is_question("What does parse_config return?"));
        assert!(is_question("  why is this slow? "));
        assert!(!is_question("Can you add a docstring?"));
        assert!(!is_question("please explain and fix it?"));
        assert!(!is_question("add a docstring to greet"));
        let path = |model: &str, said: &str| {
            let mut config = Config::default();
            config.llm.model = model.into();
            chat_path(&config, said)
        };
        assert_eq!(path("qwen2.5-coder:1.5b", "why?"), ChatPath::Prose);
        assert_eq!(path("gpt-4o", "why?"), ChatPath::Prose);
        assert_eq!(path("qwen2.5-coder:7b", "why?"), ChatPath::Tools);
        assert_eq!(path("qwen2.5-coder:0.5b", "fix it"), ChatPath::Code);
        assert_eq!(path("qwen2.5-coder:1.5b", "fix it"), ChatPath::Tools);
        assert_eq!(path("gpt-4o", "fix it"), ChatPath::Tools);
    }

    #[test]
    fn history_is_trimmed_oldest_exchange_first() {
        let mut m = vec![ChatMessage::system("s"), ChatMessage::user("task")];
        for i in 0..10 {
            m.push(ChatMessage::assistant(format!(
                "call {i} {}",
                "x".repeat(100)
            )));
            m.push(ChatMessage::user(format!("result {i} {}", "y".repeat(100))));
        }
        trim_history(&mut m, 1000);
        assert_eq!(m[1].content, "task");
        assert!(m.iter().map(|x| x.content.len()).sum::<usize>() <= 1000);
        assert!(m.last().unwrap().content.starts_with("result 9"));
        assert!(m[2].content.starts_with("call "));
    }
}
