//! The free chat (seed 002's REPL, `:Chimera chat` outside a node): each
//! message the human sends is one tool-mode agent turn that sees the
//! conversation so far. Its streamed text, tool steps and reply go to the
//! editor as they happen and into the store, so the conversation survives
//! restarts; file changes arrive as a normal proposal.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{spawn_agent, Core};
use crate::agent::tools::{chat_path, ChatEvent, ChatPath, ChatTurn};
use crate::agent::Job;
use crate::config::AgentMode;
use crate::event::Event;
use crate::event::Level;
use crate::llm::ChatMessage;
use crate::store::AgentState;
use crate::task::TaskSpec;

/// The project's one free conversation.
pub(super) const CONVERSATION: &str = crate::port::CHAT;

/// Records and shows one entry of the conversation.
fn append(core: &Core, role: &str, content: &str, agent: Option<&str>) {
    match core.store.chat_append(CONVERSATION, role, content, agent) {
        Ok(entry) => core.out.event(Event::Chat { entry }),
        Err(e) => core.notify(Level::Warn, format!("Chimera: cannot save the chat: {e}")),
    }
}

/// The human says `message`: starts agent `id` on it with the
/// conversation so far.
pub(super) fn send(
    core: &Arc<Core>,
    id: String,
    message: String,
    file: Option<crate::paths::ProjectPath>,
    cursor_line: Option<usize>,
    context: Option<String>,
) {
    let history: Vec<ChatMessage> = core
        .store
        .chat_entries(CONVERSATION)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| match e.role.as_str() {
            "user" => Some(ChatMessage::user(e.content)),
            "assistant" => Some(ChatMessage::assistant(e.content)),
            _ => None,
        })
        .collect();
    append(core, "user", &message, Some(&id));
    // Measured: Qwen2.5-Coder 0.5B got 0 of 5 requests through the tool
    // loop and 5 of 5 in code mode.
    let mode = match chat_path(&core.config, &message) {
        ChatPath::Code => AgentMode::Code,
        ChatPath::Prose | ChatPath::Tools => AgentMode::Tools,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let job = Job {
        id: id.clone(),
        spec: TaskSpec {
            task: message,
            file: file.map(|f| f.to_string()),
            line: cursor_line.map(|l| l + 1),
            context,
            mode: Some(mode.as_str().to_owned()),
            ..TaskSpec::default()
        },
        chat: Some(ChatTurn {
            history,
            events: tx,
        }),
        ..Job::default()
    };
    // Ends when the turn's job is dropped, after its state is final.
    tokio::spawn(show_turn(core.clone(), id, rx));
    spawn_agent(core, job);
}

/// Shows chat turn `id` as it streams, keeps its steps and reply in the
/// conversation and, once it ended, what became of it.
async fn show_turn(c: Arc<Core>, id: String, mut rx: mpsc::UnboundedReceiver<ChatEvent>) {
    let mut answered = false;
    while let Some(event) = rx.recv().await {
        match event {
            ChatEvent::Delta(text) => c.out.event(Event::ChatDelta {
                agent: id.clone(),
                text,
            }),
            ChatEvent::Step { call, result } => {
                append(&c, "tool", &format!("{call}\n{result}"), Some(&id))
            }
            ChatEvent::Reply(text) => {
                answered = true;
                append(&c, "assistant", &text, Some(&id))
            }
        }
    }
    let Ok(rec) = c.store.agent(&id) else { return };
    let ended_well = matches!(
        rec.state,
        AgentState::Completed | AgentState::Accepted | AgentState::Settled
    );
    if !answered && ended_well {
        // Code mode says what it did only in its summary.
        if let Some(summary) = rec.summary.as_deref().filter(|s| !s.is_empty()) {
            append(&c, "assistant", summary, Some(&id));
        }
    }
    // An answer has nothing to review: the lifecycle ended it `accepted`.
    let status = match rec.state {
        AgentState::Completed if !rec.changed_files.is_empty() => format!(
            "Proposal {id}: {} (<Leader>a / <Leader>r in the file, :Chimera diff {id})",
            rec.changed_files.join(", ")
        ),
        AgentState::Failed => format!(
            "Failed: {}",
            rec.error.unwrap_or_else(|| "no reason given".into())
        ),
        AgentState::Cancelled => "Cancelled.".into(),
        _ => return,
    };
    append(&c, "status", &status, Some(&id));
}

/// Forgets the conversation.
pub(super) fn clear(core: &Arc<Core>) {
    if let Err(e) = core.store.chat_clear(CONVERSATION) {
        core.notify(Level::Warn, format!("Chimera: cannot clear the chat: {e}"));
    }
    // The editor shows what is left.
    super::router::answer_editor(core, crate::port::Query::ChatHistory);
}
