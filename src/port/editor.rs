//! What the core asks of an editor alone, in the core's words (project
//! paths): the buffer edits of an accept, the node IDs a loaded buffer
//! lacks, a ghost node's placeholder, a question before IDs are written,
//! the model's health, an answer to the editor's own query. Every client
//! hears the core's [`crate::event::Event`]s; these only an editor acts on.
//! An editor hears both as [`Said`]; `nvim::messages::ToEditor::heard` puts
//! them into Neovim's words.

use std::path::Path;

use super::{Query, Refusal, Reply};
use crate::event::{Event, Level};
use crate::paths::ProjectPath;
use crate::remora::inject::IdEdit;

#[derive(Debug, Clone)]
pub enum ForEditor {
    /// Apply an accepted change of agent `id` to the loaded buffer of
    /// `path` as one undoable change: lines `[start, end)` become `lines`,
    /// only if its text is still `expect`; written after when `write`.
    EditBuffer {
        id: String,
        path: String,
        start: usize,
        end: usize,
        lines: Vec<String>,
        expect: String,
        write: bool,
    },
    /// Give the loaded buffer of `path` its missing node-ID comments.
    InjectIds { path: String, edits: Vec<IdEdit> },
    /// Ask the human before ID comments are written into `files` files.
    RemoraConfirm { files: usize, nodes: usize },
    /// A ghost node's agent `agent_id` writes it: a placeholder in `path`
    /// at 1-based `line` until the agent ends.
    GhostNode {
        agent_id: String,
        path: String,
        line: usize,
        label: String,
        indent: String,
    },
    /// The model's health, as the editor asked.
    LlmStatus(crate::llm::health::Health),
    /// Something only the human at the editor asked to know.
    Notice { level: Level, message: String },
    /// The answer to a query the editor asked.
    Answer {
        query: Query,
        answer: Result<Reply, Refusal>,
    },
}

/// What an editor hands the core it runs: a command, a query whose
/// answer it is told ([`ForEditor::Answer`]), its leaving, or a message
/// still in its own words.
pub enum FromEditor {
    Command(super::Command),
    Query(Query),
    /// The editor is quitting.
    Shutdown,
    /// Put into the port's words by the core, on its own thread: naming a
    /// project file reads the disk (a link on the way), which the editor's
    /// thread must not wait for.
    Unread(Box<dyn EditorWords>),
}

impl std::fmt::Debug for FromEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FromEditor::Command(c) => f.debug_tuple("Command").field(c).finish(),
            FromEditor::Query(q) => f.debug_tuple("Query").field(q).finish(),
            FromEditor::Shutdown => f.write_str("Shutdown"),
            FromEditor::Unread(_) => f.write_str("Unread(..)"),
        }
    }
}

/// An editor's message the core puts into the port's words.
pub trait EditorWords: Send + 'static {
    /// The message as the port says it (`None`: nothing the core has, a
    /// buffer outside the project), or what the human is told instead.
    /// `project` names the project file an absolute path is, if it is one.
    fn into_port(
        self: Box<Self>,
        project: &dyn Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Option<FromEditor>, String>;
}

/// What the core says to an editor attached to it.
// Moved once, from the outlet into the editor: boxing the event would
// cost an allocation per event for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Said {
    /// What every client hears.
    Event(Event),
    /// What it asks of the editor alone.
    Asked(ForEditor),
}

/// An editor attached to a core — Neovim, the terminal of a `chimera`
/// command that runs its own core, a channel in tests: it hears the core
/// in the core's words and puts them into its own.
pub trait EditorSink: Send + Sync + 'static {
    /// `said` about the project at `root`.
    fn hear(&self, said: Said, root: &Path);
    /// Whether a person reads this editor and can answer a question
    /// ([`Event::Permission`]).
    fn asks_the_human(&self) -> bool {
        false
    }
}
