//! What happened in the core, as every client hears it: typed, with
//! project paths and no words meant for one screen. The editor's messages
//! are made of it ([`crate::nvim::messages::ToEditor::of`], absolute paths), and
//! so is the API's feed (JSON); neither reads the other's form.

use serde::Serialize;

use crate::diff::{FileDiff, HunkRef};
use crate::store::{AgentRecord, AgentState};

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The core is running; `files` were imported from the project.
    Ready { files: usize },
    /// An agent's record changed, and with it what its proposal shows:
    /// `proposal` when it is new or was recomputed, `cleared` when it is
    /// gone, neither when it stays as it was.
    Agent {
        agent: AgentView,
        proposal: Option<Vec<FileDiff>>,
        cleared: bool,
    },
    /// A proposal (or one hunk of it) was accepted or rejected; `files`
    /// are those an accept wrote.
    Resolved {
        id: String,
        accepted: bool,
        files: Vec<String>,
        /// Those of `files` changed in an editor's open buffer, not yet
        /// written on disk.
        unsaved: Vec<String>,
        hunk: Option<HunkRef>,
    },
    /// The core wrote these files on disk, not through a buffer.
    FilesWritten { paths: Vec<String> },
    /// The snapshots, newest first, when their list changed.
    Snapshots {
        snapshots: Vec<crate::store::Snapshot>,
    },
    /// What a rollback did (or, with `dry_run`, would do): its report.
    Rollback {
        id: String,
        dry_run: bool,
        ok: bool,
        report: String,
    },
    /// Something a person should know.
    Notice { level: Level, message: String },
    /// The Remora topology changed (for one file, or `None`: all of it).
    Topology { path: Option<String> },
    /// A new entry of the free chat.
    Chat { entry: crate::store::ChatEntry },
    /// A Remora event was logged.
    Remora {
        record: crate::remora::events::EventRecord,
    },
    /// What agent `agent` is doing now, in a line ("asking the model (3 s,
    /// 40 tokens)"); each replaces the last.
    Progress { agent: String, message: String },
    /// A piece of a chat turn's reply as it streams (the whole reply
    /// follows as a [`Event::Chat`] entry).
    ChatDelta { agent: String, text: String },
    /// A streamed piece of an ACP agent's turn (its words, thoughts, plan,
    /// tool calls).
    AgentSaid {
        agent: String,
        piece: crate::acp::transcript::Piece,
    },
    /// Agent `agent` asks the human's permission (`capabilities.ask`);
    /// any client may answer question `id`, the first answer counts.
    Permission {
        id: u64,
        agent: String,
        question: String,
    },
    /// Question `id` is closed: allowed or refused by someone, or, `None`,
    /// unanswered in its time (refused). A client still showing it stops.
    Answered { id: u64, allow: Option<bool> },
}

impl Event {
    /// A notice of `level`.
    pub fn notice(level: Level, message: impl Into<String>) -> Self {
        Event::Notice {
            level,
            message: message.into(),
        }
    }
}

/// Hears every event of a core (the API's feed), before the editor does.
pub trait Listener: Send + Sync + 'static {
    fn heard(&self, event: &Event);
    /// Whether a person follows it now and can answer a question
    /// ([`Event::Permission`]).
    fn answers(&self) -> bool {
        false
    }
}

impl Event {
    /// Its kind as clients name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Ready { .. } => "ready",
            Event::Agent { .. } => "agent",
            Event::Resolved { .. } => "resolved",
            Event::FilesWritten { .. } => "files_written",
            Event::Snapshots { .. } => "snapshots",
            Event::Rollback { .. } => "rollback",
            Event::Notice { .. } => "notice",
            Event::Topology { .. } => "topology",
            Event::Chat { .. } => "chat",
            Event::Remora { .. } => "remora",
            Event::Progress { .. } => "progress",
            Event::ChatDelta { .. } => "chat_delta",
            Event::AgentSaid { .. } => "agent_said",
            Event::Permission { .. } => "permission",
            Event::Answered { .. } => "answered",
        }
    }

    /// Whether it only matters while it is fresh: a line of progress, a
    /// piece of a stream. A client that reconnects is not owed it (what it
    /// adds up to arrives as an event of its own).
    pub fn passing(&self) -> bool {
        matches!(
            self,
            Event::Progress { .. } | Event::ChatDelta { .. } | Event::AgentSaid { .. }
        )
    }
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// An agent as its clients see it: what it was asked, where it is, what it
/// said. The store's row also holds its owner and the full text of earlier
/// attempts; those stay in the core.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentView {
    pub id: String,
    pub state: AgentState,
    /// The task as the client gave it (its file a project path).
    #[serde(flatten)]
    pub spec: crate::task::TaskSpec,
    pub summary: Option<String>,
    pub error: Option<String>,
    /// Project paths the proposal changes.
    pub changed_files: Vec<String>,
    /// The proposal no longer applies cleanly to the human's files.
    pub conflicted: bool,
    /// Model round trips used (1 = no repair needed).
    pub rounds: u32,
    /// Times it was re-queued after its owner died.
    pub recoveries: u32,
    /// The feedback given with each rejection, oldest first.
    pub feedback: Vec<String>,
    /// What its programs said with `log()` (the last lines).
    pub log: Vec<String>,
    /// The tokens its model calls used, and their price (boxed: most
    /// events carry no agent).
    pub usage: Box<crate::store::TokenUse>,
    /// Accepted, then undone by the human in the buffer it went into.
    pub undone: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&AgentRecord> for AgentView {
    fn from(r: &AgentRecord) -> Self {
        AgentView {
            id: r.id.clone(),
            state: r.state,
            spec: r.spec.clone(),
            summary: r.summary.clone(),
            error: r.error.clone(),
            changed_files: r.changed_files.clone(),
            conflicted: r.conflicted,
            rounds: r.rounds,
            recoveries: r.recoveries,
            feedback: r.feedback.iter().map(|f| f.feedback.clone()).collect(),
            log: r.log.clone(),
            usage: Box::new(r.usage),
            undone: r.undone,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}
