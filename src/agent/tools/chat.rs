//! The free chat (seed 002's REPL) as tool mode sees it: what a turn is,
//! whether it asks something or asks for something, the message it sends
//! the model, and a question answered in prose without tools.

use crate::agent::brain::Run;
use crate::agent::{AgentError, Done};
use crate::config::Config;
use crate::llm::{ChatMessage, ChatOptions};

/// A turn of the free chat (seed 002's REPL): the conversation so far, and
/// where the turn's streamed text, tool steps and reply go as they happen.
#[derive(Debug, Clone)]
pub struct ChatTurn {
    /// Earlier turns, oldest first, as the model sees them.
    pub history: Vec<ChatMessage>,
    pub events: tokio::sync::mpsc::UnboundedSender<ChatEvent>,
}

impl ChatTurn {
    /// Shows `event` in the turn's window; a window closed meanwhile
    /// misses it, and the turn goes on (its answer is stored).
    pub fn show(&self, event: ChatEvent) {
        self.events.send(event).ok();
    }
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

/// What a chat turn is for, said first: small models follow the first
/// rule they read.
pub(super) const CHAT_RULES: &str =
    "You are a coding assistant chatting with the human in their editor.\n\
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

/// Earlier turns a chat turn shows the model (small models copy a long
/// history instead of answering).
const CHAT_HISTORY: usize = 6;

/// Largest file a chat turn shows the model unasked, in bytes.
const CHAT_FILE_BYTES: usize = 8000;

/// A chat turn's message: the file the human is in (so a question about it
/// needs no tool call), the last turns as a transcript, then what the human
/// says now.
pub(super) fn chat_message(run: &Run, chat: &ChatTurn, said: String) -> String {
    let job = run.job;
    let mut out = String::new();
    let file = job.spec.file.as_ref().and_then(|f| {
        let p = crate::paths::ProjectPath::parse(f).ok()?;
        let text = run.workspace().read_text(&p).ok()?;
        (text.len() <= CHAT_FILE_BYTES).then_some((f, text))
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
pub(super) async fn answer_in_prose(
    run: &Run<'_>,
    chat: &ChatTurn,
    message: String,
) -> Result<Done, AgentError> {
    let messages = [
        ChatMessage::system(
            "You are a coding assistant in the human's editor. Answer their question about \
             their code briefly and precisely, from the code you are shown. Show code only \
             when it helps; change nothing.",
        ),
        ChatMessage::user(message),
    ];
    let on_delta = |piece: &str| chat.show(ChatEvent::Delta(piece.to_owned()));
    let reply = run
        .reply(
            " (chat answer)",
            &messages,
            &ChatOptions::default(),
            &on_delta,
        )
        .await?;
    let text = reply.into_text();
    chat.show(ChatEvent::Reply(text.trim().to_owned()));
    Ok(Done {
        summary: text.trim().to_owned(),
        changed_files: vec![],
        rounds: 1,
        form: "chat",
    })
}
