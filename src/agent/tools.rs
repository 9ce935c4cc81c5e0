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

use std::sync::Arc;

use serde_json::{json, Value as Json};
use tokio_util::sync::CancellationToken;

use super::{AgentError, AgentHost, Done, Job, Services};
use crate::capabilities::Capabilities;
use crate::config::{Config, Provider, ToolCalls};
use crate::llm::{ChatMessage, ChatOptions, LlmClient};
use crate::sandbox::{self, Host, HostError, Value};
use crate::store::Store;

/// A turn of the free chat (seed 002's REPL): the conversation so far, and
/// where the turn's streamed text, tool steps and reply go as they happen.
#[derive(Debug, Clone)]
pub struct ChatTurn {
    /// Earlier turns, oldest first, as the model sees them.
    pub history: Vec<ChatMessage>,
    pub events: tokio::sync::mpsc::UnboundedSender<ChatEvent>,
}

/// What a chat turn shows while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    /// A piece of the model's reply as it streams (a step starts afresh
    /// after each [`ChatEvent::Step`]).
    Delta(String),
    /// A tool call (in the text protocol's form) and its result.
    Step { call: String, result: String },
    /// The turn's answer to the human.
    Reply(String),
}

/// One tool: its name, what it does, and its arguments as a JSON schema.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Json,
}

/// A tool with its arguments' JSON schema; `params` are `(name, JSON
/// type, description)`, a type ending in `?` optional.
pub(crate) fn spec(name: &str, description: &str, params: &[(&str, &str, &str)]) -> ToolSpec {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (pname, ptype, doc) in params {
        let (ptype, optional) = match ptype.strip_suffix('?') {
            Some(t) => (t, true),
            None => (*ptype, false),
        };
        let schema = if ptype == "array" {
            json!({"type": "array", "items": {"type": "string"}, "description": doc})
        } else {
            json!({"type": ptype, "description": doc})
        };
        properties.insert((*pname).to_owned(), schema);
        if !optional {
            required.push(*pname);
        }
    }
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
    }
}

/// The tools of the registry, with their schemas.
pub fn registry() -> Vec<ToolSpec> {
    vec![
        spec(
            "read_file",
            "Read a project file (path relative to the root).",
            &[("path", "string", "project path")],
        ),
        spec(
            "write_file",
            "Write a whole file (into your overlay; the human reviews it).",
            &[
                ("path", "string", "project path"),
                ("content", "string", "the complete new content"),
            ],
        ),
        spec(
            "run_command",
            "Run a program (no shell) in a scratch copy of the project with your changes, e.g. the tests. Only allowed programs run.",
            &[("argv", "array", "the program and its arguments")],
        ),
        spec(
            "write_definitions",
            "Replace functions/classes in a Python file by their new versions (same names), or add new ones.",
            &[
                ("path", "string", "project path"),
                ("code", "string", "the new definitions, complete"),
            ],
        ),
        spec(
            "delete_file",
            "Delete a file.",
            &[("path", "string", "project path")],
        ),
        spec(
            "list_dir",
            "List a directory (\"\" for the root).",
            &[("path", "string?", "directory")],
        ),
        spec(
            "file_exists",
            "Whether a file exists.",
            &[("path", "string", "project path")],
        ),
        spec(
            "search_files",
            "Files whose path matches a glob (with * or ?), else files containing the text.",
            &[("pattern", "string", "glob or text")],
        ),
        spec(
            "get_file_tree",
            "Every file of the project, one per line.",
            &[],
        ),
        spec("get_task", "The task, again.", &[]),
        spec(
            "system_stats",
            "The machine's CPUs, load averages, memory, uptime, the project's disk, and the processes using the most CPU and memory.",
            &[],
        ),
        spec(
            "submit_result",
            "Finish: say what you changed. Call it once, last.",
            &[
                ("summary", "string", "one line"),
                ("changed_files", "array", "paths you wrote"),
            ],
        ),
    ]
}

fn reply_spec() -> ToolSpec {
    spec(
        "reply",
        "Answer the human in the chat and end your turn (no file change needed).",
        &[("text", "string", "your answer")],
    )
}

/// What a chat turn is for, said first: small models follow the first
/// rule they read.
const CHAT_RULES: &str = "You are a coding assistant chatting with the human in their editor.\n\
    - A question: answer it with reply(text). The file the human is in comes with their \
    message; read other files only when you need them. Change nothing.\n\
    - A change they ask for: call write_definitions(path, code) with the new version of \
    each function you change (or write_file with the whole file), then \
    submit_result(summary, changed_files). Your change becomes a proposal the human reviews.\n";

/// Whether the human asks something rather than asks for something: a
/// question's first step may only read or answer.
pub(crate) fn is_question(said: &str) -> bool {
    let s = said.trim().to_lowercase();
    let request = ["can you", "could you", "would you", "will you", "please"]
        .iter()
        .any(|p| s.starts_with(p));
    s.ends_with('?') && !request
}

/// How a chat turn is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatPath {
    /// In prose, without tools: small models answer questions well and
    /// call tools badly.
    Prose,
    /// Through the tool loop.
    Tools,
    /// In code mode: models under 1B get through it and not the tool loop.
    Code,
}

/// The path for `said`, by what it is and the model's size (a name
/// without one counts as a small model of 1B or more).
pub fn chat_path(config: &Config, said: &str) -> ChatPath {
    let size = config.llm.model_size_b();
    if is_question(said) {
        if size.is_none_or(|b| b < 7.0) {
            ChatPath::Prose
        } else {
            ChatPath::Tools
        }
    } else if size.is_some_and(|b| b < 1.0) {
        ChatPath::Code
    } else {
        ChatPath::Tools
    }
}

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

fn web_search_spec() -> ToolSpec {
    spec(
        "web_search",
        "Search the web; the top results with title, URL and snippet.",
        &[("query", "string", "what to search for")],
    )
}

fn delegate_spec(peers: &[&str]) -> ToolSpec {
    let mut s = spec(
        "delegate",
        "Hand a task to another agent (A2A) and wait for its answer; a change it proposes is applied to your files (your overlay).",
        &[
            ("peer", "string", "the agent's name"),
            ("task", "string", "what it should do, in words"),
        ],
    );
    s.description = format!("{} Agents: {}.", s.description, peers.join(", "));
    s
}

/// The tools `job` is offered: the registry, `web_search` when an
/// endpoint is configured and its host allowed, and the MCP tools the
/// capabilities allow (servers no pattern reaches are not started).
/// Returns the tools and the MCP tool names among them.
async fn offered(
    services: &Services,
    caps: &Capabilities,
    cancel: &CancellationToken,
    progress: &(dyn Fn(String) + Send + Sync),
) -> (Vec<ToolSpec>, Vec<String>) {
    let mut tools = registry();
    if caps.may_read_env() {
        tools.push(spec(
            "env",
            "An environment variable you may read (no name: all of them).",
            &[
                ("name", "string?", "the variable's name"),
                ("default", "string?", "what an unset one gives"),
            ],
        ));
    }
    if caps.check_snapshot().is_ok() {
        tools.push(spec(
            "snapshot",
            "Checkpoint your changes so far; returns the checkpoint's name.",
            &[("name", "string?", "a name for it")],
        ));
    }
    if caps.check_rollback().is_ok() {
        tools.push(spec(
            "rollback",
            "Undo your changes made since a checkpoint (e.g. when the tests fail after them).",
            &[("name", "string", "the checkpoint's name")],
        ));
    }
    if let Some(url) = services
        .web_search_url
        .as_deref()
        .and_then(|u| reqwest::Url::parse(u).ok())
    {
        if caps
            .check_endpoint(url.host_str().unwrap_or(""), url.port())
            .is_ok()
        {
            tools.push(web_search_spec());
        }
    }
    let reachable = services.a2a_peers.values().any(|p| {
        reqwest::Url::parse(&p.url).is_ok_and(|u| {
            caps.check_endpoint(u.host_str().unwrap_or(""), u.port())
                .is_ok()
        })
    });
    if reachable {
        let names: Vec<&str> = services.a2a_peers.keys().map(String::as_str).collect();
        tools.push(delegate_spec(&names));
    }
    let (mcp, errors) = services
        .mcp
        .tools(|server| caps.may_use_mcp_server(server), cancel)
        .await;
    for e in errors {
        progress(format!("MCP: {e}"));
    }
    let mut names = Vec::new();
    for t in mcp.into_iter().filter(|t| caps.check_mcp(&t.name).is_ok()) {
        names.push(t.name.clone());
        tools.push(ToolSpec {
            description: if t.description.is_empty() {
                format!("The MCP tool {}.", t.name)
            } else {
                t.description
            },
            name: t.name,
            parameters: t.input_schema,
        });
    }
    (tools, names)
}

/// Native tool names allow no dots: `server.tool` goes out as `server__tool`.
fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

/// The tools in OpenAI's shape, for native tool calling.
fn native_tools(tools: &[ToolSpec]) -> Json {
    Json::Array(
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": wire_name(&t.name),
                    "description": t.description,
                    "parameters": t.parameters,
                }})
            })
            .collect(),
    )
}

/// The JSON schema of a reply: one call of one of `tools`, with that
/// tool's arguments (so a constrained server cannot produce wrong types).
pub fn reply_schema(tools: &[ToolSpec]) -> Json {
    let calls: Vec<Json> = tools
        .iter()
        .map(|t| {
            let mut args = t.parameters.clone();
            args["additionalProperties"] = json!(false);
            json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "const": t.name},
                    "args": args
                },
                "required": ["tool", "args"]
            })
        })
        .collect();
    json!({"anyOf": calls})
}

/// `name(arg: type, …)` for the prompt: small models copy a schema's
/// shape into their arguments, but not a signature's.
fn signature(t: &ToolSpec) -> String {
    let props = t.parameters["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = t.parameters["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let args: Vec<String> = props
        .iter()
        .map(|(name, p)| {
            let ty = match p["type"].as_str() {
                Some("array") => "list of strings",
                Some(other) => other,
                None => "value",
            };
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                ", optional"
            };
            format!("{name}: {ty}{opt}")
        })
        .collect();
    format!("{}({})", t.name, args.join(", "))
}

/// The tool a JSON call names and its arguments, in any of the shapes
/// models write: `{"tool", "args"}`, the seed's `{"tool_to_use",
/// "parameters"}`, OpenAI's `{"name", "arguments"}`.
pub fn call_parts(v: &Json) -> (Option<&str>, Option<&Json>) {
    let tool = ["tool", "tool_to_use", "name"]
        .iter()
        .find_map(|k| v.get(*k))
        .and_then(Json::as_str);
    let args = ["args", "parameters", "arguments"]
        .iter()
        .find_map(|k| v.get(*k));
    (tool, args)
}

/// The tool call a reply makes, or what is wrong with it, for the model.
pub fn parse_call(reply: &str) -> Result<(String, serde_json::Map<String, Json>), String> {
    let t = reply.trim();
    let t = match t.find("```") {
        Some(start) => {
            let body = &t[start + 3..];
            let body = body.strip_prefix("json").unwrap_or(body);
            body.split("```").next().unwrap_or(body).trim()
        }
        None => t,
    };
    let start = t.find('{').ok_or("Your reply has no JSON object. Answer with exactly one: {\"tool\": name, \"args\": {...}}.")?;
    let end = t.rfind('}').ok_or("Your JSON object is not closed.")?;
    let v: Json = serde_json::from_str(&t[start..=end])
        .map_err(|e| format!("Your reply is not valid JSON ({e}). Answer with exactly one object: {{\"tool\": name, \"args\": {{...}}}}."))?;
    let (tool, args) = call_parts(&v);
    let tool = tool
        .ok_or("Your JSON object has no \"tool\" naming the tool to call.")?
        .to_owned();
    Ok((tool, args_object(args)?))
}

/// A call's arguments as an object: given as one, as JSON text, or absent.
fn args_object(args: Option<&Json>) -> Result<serde_json::Map<String, Json>, String> {
    let wrong = || "\"args\" must be a JSON object of argument names to values.".to_owned();
    match args {
        None | Some(Json::Null) => Ok(serde_json::Map::new()),
        Some(Json::Object(m)) => Ok(m.clone()),
        Some(Json::String(s)) => match serde_json::from_str(s) {
            Ok(Json::Object(m)) => Ok(m),
            _ => Err(wrong()),
        },
        Some(_) => Err(wrong()),
    }
}

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

/// What to do next after a call of `tool`, for small models that
/// otherwise repeat a call or stop short.
/// In a chat, a read may be all a question needs.
fn next_step(tool: &str, repeated: bool, chat: bool) -> Option<&'static str> {
    Some(match (tool, repeated) {
        (_, true) => "You made this same call before; its result is above. Do the next step instead.",
        ("read_file" | "search_files" | "list_dir" | "get_file_tree", _) if chat => "Next: if the human asked a question, answer it now with reply(text). Only if they asked for a change: call write_definitions with the path and the new version of each function you change.",
        ("read_file", _) => "Next: call write_definitions with the path and the new version of each function you change (or write_file with the whole new content).",
        ("write_file" | "write_definitions", _) => "Next: if the task is done, call submit_result(summary, changed_files).",
        _ => return None,
    })
}

/// What a model is told when its next reply is asked as a code block:
/// the task again, last, where a small model reads it (several steps in,
/// it otherwise changes something else).
fn ask_for_block(path: &str, task: &str) -> String {
    format!(
        "\nThe task: {task}\nNow reply with the new version of each function you change, with \
         the change made, in one ```{} block and nothing else (not JSON): it is written to \
         `{path}` with write_definitions.",
        crate::lang::of_file(path).fence
    )
}

/// The result of a tool as the model sees it (capped).
fn result_message(result: Result<Value, HostError>) -> String {
    const CAP: usize = 6000;
    let json = match result {
        Ok(v) => json!({"ok": true, "result": to_json(&v)}),
        Err(e) => json!({"ok": false, "error": e.to_string()}),
    };
    let mut s = json.to_string();
    if s.len() > CAP {
        let mut end = CAP;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("… (cut)");
    }
    s
}

fn to_json(v: &Value) -> Json {
    match v {
        Value::None => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::String(s) => json!(s),
        Value::List(items) | Value::Tuple(items) => {
            Json::Array(items.iter().map(to_json).collect())
        }
        other => json!(other.to_string()),
    }
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

/// Earlier turns a chat turn shows the model (small models copy a long
/// history instead of answering).
const CHAT_HISTORY: usize = 6;

/// Largest file a chat turn shows the model unasked, in bytes.
const CHAT_FILE_BYTES: usize = 8000;

/// A chat turn's message: the file the human is in (so a question about it
/// needs no tool call), the last turns as a transcript, then what the human
/// says now.
fn chat_message(
    store: &Store,
    config: &Config,
    caps: &Capabilities,
    job: &Job,
    chat: &ChatTurn,
    said: String,
) -> String {
    let mut out = String::new();
    let file = job.file.as_ref().and_then(|f| {
        let p = crate::paths::ProjectPath::parse(f).ok()?;
        let text = crate::overlay::Overlay::new(store, &job.id, config.sync.max_file_bytes)
            .read_text(&p)
            .ok()?;
        (text.len() <= CHAT_FILE_BYTES && caps.check_read(f).is_ok()).then_some((f, text))
    });
    if let Some((path, text)) = file {
        out.push_str(&format!("The human is in {path}:\n```\n{text}```\n\n"));
    }
    let recent = &chat.history[chat.history.len().saturating_sub(CHAT_HISTORY)..];
    if !recent.is_empty() {
        out.push_str("Earlier in this chat:\n");
        for m in recent {
            let who = if m.role == "user" { "Human" } else { "You" };
            out.push_str(&format!("{who}: {}\n", m.content));
        }
        out.push_str("\nNow the human says: ");
    }
    out.push_str(&said);
    out
}

/// A chat turn answered in prose, streamed, without tools.
async fn answer_in_prose(
    store: &Store,
    config: &Config,
    llm: &LlmClient,
    job: &Job,
    chat: &ChatTurn,
    message: String,
    cancel: &CancellationToken,
) -> Result<Done, AgentError> {
    let messages = [
        ChatMessage::system(
            "You are a coding assistant in the human's editor. Answer their question about \
             their code briefly and precisely, from the code you are shown. Show code only \
             when it helps; change nothing.",
        ),
        ChatMessage::user(message),
    ];
    let label = format!(
        "{} {} (chat answer)",
        config.llm.provider_name(),
        config.llm.model
    );
    let on_delta = |piece: &str| {
        let _ = chat.events.send(ChatEvent::Delta(piece.to_owned()));
    };
    let reply = super::logged_reply(
        store,
        &job.id,
        &label,
        llm,
        &messages,
        &ChatOptions::default(),
        cancel,
        &on_delta,
    )
    .await
    .map_err(super::llm_error)?;
    let text = reply.into_text();
    let _ = chat.events.send(ChatEvent::Reply(text.trim().to_owned()));
    Ok(Done {
        summary: text.trim().to_owned(),
        changed_files: vec![],
        rounds: 1,
        form: "chat",
    })
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
fn the_file(
    store: &Store,
    config: &Config,
    job: &Job,
    caps: &crate::capabilities::Capabilities,
) -> Option<(String, String)> {
    let max_bytes = config.sync.max_file_bytes;
    let (tree, place) = super::Scene::find(store, caps, job, max_bytes).ok()?;
    // A file it may not read, or one still to create: nothing to show.
    let scene = super::Scene::at(store, caps, job, max_bytes, tree, place).ok()?;
    let (path, text) = scene
        .target
        .filter(|_| !scene.place.is_some_and(|p| p.new))?;
    let limit = (config.llm.context_tokens as usize).max(2048);
    Some((path.to_string(), text.chars().take(limit).collect()))
}

/// Runs `job` in tool mode; on success the agent's overlay holds its changes.
pub async fn run(
    store: Arc<Store>,
    config: &Config,
    llm: &LlmClient,
    services: &Services,
    job: &Job,
    cancel: &CancellationToken,
    progress: &(dyn Fn(String) + Send + Sync),
) -> Result<Done, AgentError> {
    let caps = super::capabilities(config, job, services)?;
    let (mut tools, mcp_tools) = offered(services, &caps, cancel, progress).await;
    if job.chat.is_some() {
        tools.push(reply_spec());
    }
    let native = use_native(config, llm).await;
    let mut task = job.task.clone();
    // The file the task is about, found as for code mode, is given with
    // the task: small models otherwise read a path from the example.
    let located = the_file(&store, config, job, &caps);
    match &located {
        Some((path, text)) => task.push_str(&format!(
            "\n\nThe file this task is about is `{path}`:\n```{}\n{text}\n```",
            crate::lang::of_file(path).fence
        )),
        None => {
            if let Some(file) = &job.file {
                task.push_str(&format!("\n(The human is in {file}.)"));
            }
        }
    }
    if let Some(ctx) = &job.context {
        task.push_str(&format!("\nSelected text:\n{ctx}"));
    }
    for f in &job.feedback {
        task.push_str(&format!(
            "\nAn earlier attempt was rejected with this feedback: {}\nThat attempt:\n{}",
            f.feedback, f.attempt
        ));
    }
    let system = system_prompt(&tools, native, job.chat.is_some());
    let question = job.chat.is_some() && is_question(&job.task);
    if let Some(chat) = &job.chat {
        task = chat_message(&store, config, &caps, job, chat, task);
        if chat_path(config, &job.task) == ChatPath::Prose {
            return answer_in_prose(&store, config, llm, job, chat, task, cancel).await;
        }
    }
    let mut messages = vec![ChatMessage::system(system), ChatMessage::user(task)];
    let mut opts = if native {
        ChatOptions {
            tools: Some(native_tools(&tools)),
            ..Default::default()
        }
    } else {
        ChatOptions::default()
    };
    let window = llm.context_window().await as usize;
    let budget = window
        .saturating_sub(config.llm.max_tokens as usize)
        .max(1000)
        * 3;
    let mut host = AgentHost::new(&store, config, llm, services, job, cancel, caps.clone());
    host.mcp_tools = mcp_tools;
    store.overlay_clear(&job.id)?;
    let show = |e: ChatEvent| {
        if let Some(chat) = &job.chat {
            let _ = chat.events.send(e);
        }
    };
    let on_delta = |piece: &str| show(ChatEvent::Delta(piece.to_owned()));
    let mut calls_made: Vec<String> = Vec::new();
    // Tools whose same call the model repeated: no longer offered.
    let mut worn: Vec<String> = Vec::new();
    // A write changed nothing or submit_result was refused: small models
    // then submit the same nothing again until the step limit, so the next
    // step can only write.
    let mut must_write = false;
    // Under the JSON grammar small models copy the code they were shown
    // into a write unchanged, again and again; in a ```python block they
    // make the change (the definitions form of code mode). After a write
    // that failed, the next reply is asked as a block and written to this
    // path with write_definitions.
    let mut block_for: Option<String> = None;
    let limit = config.agents.max_iterations.max(1);
    for step in 1..=limit {
        progress(format!("tool step {step}"));
        trim_history(&mut messages, budget);
        // Small models tend to repeat a call word for word: after the
        // first, they sample a little more freely.
        opts.temperature = (step > 1).then(|| (config.llm.temperature + 0.4).min(1.0));
        if !native {
            // The grammar: a tool whose same call the model repeated is left
            // out; a question's first step reads or answers; a request's
            // first step acts (small models otherwise "reply" with it).
            let allowed: Vec<ToolSpec> = if must_write {
                tools
                    .iter()
                    .filter(|t| WRITE_TOOLS.contains(&t.name.as_str()))
                    .cloned()
                    .collect()
            } else {
                tools
                    .iter()
                    .filter(|t| !worn.contains(&t.name))
                    .filter(|t| {
                        !(question && step == 1) || QUESTION_TOOLS.contains(&t.name.as_str())
                    })
                    .filter(|t| question || step > 1 || t.name != "reply")
                    .cloned()
                    .collect()
            };
            opts.json_schema = match block_for {
                Some(_) => None,
                None => Some(reply_schema(&allowed)),
            };
        }
        let label = format!(
            "{} {} (tools, step {step})",
            config.llm.provider_name(),
            config.llm.model
        );
        let reply = super::logged_reply(
            &store, &job.id, &label, llm, &messages, &opts, cancel, &on_delta,
        )
        .await
        .map_err(super::llm_error)?;
        // A native call is answered by a `tool` message with its ID.
        let (call, answer_id) = match reply.tool_call {
            Some(native_call) => {
                messages.push(ChatMessage::assistant_call(reply.text, &native_call));
                let name = tools
                    .iter()
                    .find(|t| wire_name(&t.name) == native_call.name)
                    .map_or(native_call.name.clone(), |t| t.name.clone());
                let call = args_object(Some(&native_call.arguments)).map(|args| (name, args));
                (call, Some(native_call.id))
            }
            None => {
                let call = match block_for.take().filter(|_| !native) {
                    Some(path) => {
                        let language = crate::lang::of_file(&path);
                        let code = super::prompt::extract_code_as(&reply.text, language);
                        let mut args = serde_json::Map::new();
                        args.insert("path".into(), Json::String(path));
                        args.insert("code".into(), Json::String(code));
                        Ok(("write_definitions".to_owned(), args))
                    }
                    None => parse_call(&reply.text),
                };
                messages.push(ChatMessage::assistant(reply.text));
                (call, None)
            }
        };
        let write_path = call
            .as_ref()
            .ok()
            .filter(|(tool, _)| WRITE_TOOLS.contains(&tool.as_str()))
            .and_then(|(_, args)| args.get("path")?.as_str().map(str::to_owned));
        let answer = |text: String| match &answer_id {
            Some(id) => ChatMessage::tool_result(id, text),
            None => ChatMessage::user(text),
        };
        let called = call.as_ref().ok().map(|(tool, args)| {
            (
                tool.clone(),
                json!({"tool": tool, "args": args}).to_string(),
            )
        });
        if let (Some(_), Ok((tool, args))) = (&job.chat, &call) {
            let text = args
                .get("text")
                .map(|t| t.as_str().map_or_else(|| t.to_string(), str::to_owned))
                .unwrap_or_default();
            let echo = text.trim().eq_ignore_ascii_case(job.task.trim());
            if tool == "reply" && echo {
                messages.push(answer(result_message(Err(
                    "reply: that is the human's own message. Do what it asks (write the change, then submit_result), or reply why you cannot.".into(),
                ))));
                continue;
            }
            if tool == "reply" {
                show(ChatEvent::Reply(text.clone()));
                // Files written without submit_result still become a proposal.
                let changed = changed_files(&store, &job.id)?;
                return Ok(Done {
                    summary: text,
                    changed_files: changed,
                    rounds: step as u32,
                    form: "chat",
                });
            }
        }
        host.refused_unchanged = false;
        let result = match call {
            Err(problem) => Err(HostError::Failed(problem)),
            Ok((tool, _)) if !tools.iter().any(|t| t.name == tool) => Err(format!(
                "There is no tool `{tool}`. The tools are: {}.",
                tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .into()),
            Ok((tool, args)) if host.mcp_tools.contains(&tool) => {
                let (r, h) = host
                    .off_runtime(move |h| h.call_mcp(&tool, Json::Object(args)).map(Value::String))
                    .await?;
                host = h;
                r
            }
            Ok((tool, args)) => {
                let kwargs: Vec<(Value, Value)> = args
                    .into_iter()
                    .map(|(k, v)| (Value::String(k), sandbox::from_json(v)))
                    .collect();
                let (r, h) = host
                    .off_runtime(move |h| h.call(&tool, vec![], kwargs))
                    .await?;
                host = h;
                r
            }
        };
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        if let Some((summary, _)) = host.submitted.take() {
            let changed = changed_files(&store, &job.id)?;
            if changed.is_empty() && host.messages_sent.is_empty() && question {
                // Finishing a question without a change is an answer.
                show(ChatEvent::Reply(summary.clone()));
                return Ok(Done {
                    summary,
                    changed_files: vec![],
                    rounds: step as u32,
                    form: "chat",
                });
            }
            if changed.is_empty() && host.messages_sent.is_empty() {
                let mut said = result_message(Err(
                    "submit_result: no file is changed yet; write the changed file with write_file first (its whole new content)".into(),
                ));
                must_write = true;
                if let Some((path, _)) = located.as_ref().filter(|_| !native) {
                    said.push_str(&ask_for_block(path, &job.task));
                    block_for = Some(path.clone());
                }
                messages.push(answer(said));
                continue;
            }
            // The step every form ends in (kept to the task, parses,
            // removes nothing unnamed, passes the tests).
            let last = step >= limit;
            let notes =
                match super::gate::finish(&store, config, job, &caps, cancel, last, progress).await
                {
                    Ok(notes) => notes,
                    Err(problem) => {
                        messages.push(answer(result_message(Err(HostError::Failed(format!(
                            "submit_result: {problem}"
                        ))))));
                        must_write = true;
                        continue;
                    }
                };
            let summary = super::scope::summary(&store, &job.id, Some(summary), &job.task)?;
            let summary = notes
                .iter()
                .fold(summary, |s, note| format!("{s} [{note}]"));
            show(ChatEvent::Reply(summary.clone()));
            return Ok(Done {
                summary,
                changed_files: changed,
                rounds: step as u32,
                form: "tools",
            });
        }
        let was_write = called
            .as_ref()
            .is_some_and(|(tool, _)| WRITE_TOOLS.contains(&tool.as_str()));
        if was_write {
            // Only a write that changed something lets the model move on.
            must_write = result.is_err();
        }
        // Only a write refused for changing nothing: other errors (a bad
        // path, a wrong argument) are the call's, answered as such.
        let unchanged = result.is_err() && host.refused_unchanged;
        let block_path = write_path.filter(|_| unchanged && !native);
        let mut text = result_message(result);
        if let Some(path) = block_path {
            text.push_str(&ask_for_block(&path, &job.task));
            block_for = Some(path);
        }
        if let Some((_, canonical)) = &called {
            show(ChatEvent::Step {
                call: canonical.clone(),
                result: text.clone(),
            });
        }
        if let Some((tool, canonical)) = called {
            let repeated = calls_made.contains(&canonical);
            calls_made.push(canonical);
            // After a failed write the error says what to do, not "submit".
            let hint = next_step(&tool, repeated, job.chat.is_some())
                .filter(|_| block_for.is_none() && !(was_write && must_write));
            if let Some(hint) = hint {
                text.push('\n');
                text.push_str(hint);
            }
            // A small model under a grammar repeats calls it likes.
            let finishing = matches!(tool.as_str(), "submit_result" | "reply");
            if repeated && !finishing && !worn.contains(&tool) {
                worn.push(tool);
            }
        }
        messages.push(answer(text));
    }
    // Nothing half-done is proposed.
    store.overlay_clear(&job.id)?;
    Err(AgentError::TooManySteps(limit))
}

#[cfg(test)]
mod tests {
    use super::*;

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
