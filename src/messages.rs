//! The typed messages crossing between the editor (Neovim's main thread)
//! and the core (the tokio runtime thread). One enum per direction.

use serde::Serialize;

use crate::diff::FileDiff;
use crate::store::AgentRecord;

/// From the editor to the core.
#[derive(Debug, Clone)]
pub enum ToCore {
    /// Start an agent with the id the editor chose (so `spawn()` can return it at once).
    Spawn {
        id: String,
        task: String,
        context: Option<String>,
        file: Option<String>,
        cursor_line: Option<usize>,
        /// Code or tool mode; `None`: `agents.mode`.
        mode: Option<crate::config::AgentMode>,
        /// A capabilities preset; `None`: `capabilities.preset`.
        capabilities: Option<String>,
    },
    /// Accept a proposal. `buffers` holds the current text of every loaded
    /// buffer among the proposal's files, so the accept sees what the human sees.
    /// `hunk`: only that hunk (numbered from 1 in file order).
    Accept {
        id: String,
        buffers: Vec<BufferText>,
        hunk: Option<usize>,
    },
    /// Drop one hunk (numbered from 1 in file order) from a proposal.
    RejectHunk { id: String, hunk: usize },
    /// Reject a proposal (or cancel a running agent).
    Reject {
        id: String,
        feedback: Option<String>,
    },
    /// Stop a queued or running agent at once (LLM request and sandbox included).
    Cancel { id: String },
    /// A buffer's text changed (or was loaded, or written); it is now the
    /// ground truth for its file.
    BufferText(BufferText),
    /// A buffer was unloaded: its file on disk is the ground truth again.
    BufferClosed { path: String },
    /// An [`ToEditor::EditBuffer`] of `id` found the buffer changed: it was
    /// computed for `base` to become `wanted`, the buffer now holds `now`.
    /// The core merges and sends the edit again (or says why it cannot).
    BufferMoved {
        id: String,
        path: String,
        base: String,
        wanted: String,
        now: String,
    },
    /// Check that the LLM server answers and has the configured model.
    CheckLlm,
    /// `:Chimera remora enable`: index the project; with inline IDs, ask
    /// first (`confirmed` false) how many files will change.
    RemoraEnable { confirmed: bool },
    /// Snapshot the project now (`:Chimera snapshot`), with the editor's ID.
    Snapshot { id: String, message: String },
    /// Send the snapshots ([`ToEditor::Snapshots`]).
    History,
    /// Roll back to snapshot `id`; with `dry_run`, only say what would change.
    Rollback {
        id: String,
        dry_run: bool,
        buffers: Vec<BufferText>,
    },
    /// Send the effects after `since` (of `kind`) ([`ToEditor::Effects`]).
    Effects {
        since: EffectsSince,
        kind: Option<String>,
    },
    /// Start agent `id` on `task` with the project as in snapshot `snapshot`.
    Fork {
        id: String,
        snapshot: String,
        task: String,
    },
    /// The human says `message` to the agent of node `node_id`.
    NodeChat { node_id: String, message: String },
    /// The human says `message` in the free chat; agent `id` takes the turn.
    Chat {
        id: String,
        message: String,
        file: Option<String>,
        cursor_line: Option<usize>,
    },
    /// Send the free chat's conversation ([`ToEditor::ChatHistory`]).
    ChatHistory,
    /// Forget the free chat's conversation.
    ChatClear,
    /// Send the stored Remora events of node `node_id` (its conversation).
    NodeHistory { node_id: String },
    /// Stop everything; Neovim is quitting.
    Shutdown,
}

/// Where a list of effects starts (seed 004: `effects --since <snapshot>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectsSince {
    /// After this sequence number (0: all).
    Seq(i64),
    /// After this snapshot was taken.
    Snapshot(String),
}

/// The full text of a loaded buffer.
#[derive(Debug, Clone)]
pub struct BufferText {
    /// Absolute path of the buffer's file.
    pub path: String,
    pub text: String,
}

/// From the core to the editor.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToEditor {
    /// The core is running; `files` were imported from the project.
    Ready { root: String, files: usize },
    /// An agent's record changed, and with it, in the same message, what
    /// the editor shows of its proposal: `proposal` (hunks per file, paths
    /// absolute) when it is new or was recomputed, `cleared` when it is
    /// gone (accepted, rejected, the agent restarted), neither when it
    /// stays as it was.
    Agent {
        agent: AgentRecord,
        #[serde(skip_serializing_if = "Option::is_none")]
        proposal: Option<Vec<FileDiff>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        cleared: bool,
    },
    /// Apply an accepted change to a loaded buffer as one undoable change:
    /// replace lines `[start, end)` with `lines` — only if the buffer's text
    /// is still `expect` (what the edit was computed against). If the human
    /// typed meanwhile, the editor answers [`ToCore::BufferMoved`] instead.
    EditBuffer {
        id: String,
        path: String,
        start: usize,
        end: usize,
        lines: Vec<String>,
        expect: String,
    },
    /// The outcome of an accept or reject, for `User ChimeraAccepted`/`ChimeraRejected`.
    Resolved {
        id: String,
        accepted: bool,
        files: Vec<String>,
        hunk: Option<usize>,
    },
    /// The core wrote these files on disk (absolute paths): a buffer that
    /// shows one unmodified is reloaded, so it is never left stale.
    FilesWritten { paths: Vec<String> },
    /// Text streamed from the LLM for an agent (progress display).
    Progress { id: String, message: String },
    /// Answer to [`ToCore::CheckLlm`].
    LlmStatus {
        ok: bool,
        message: String,
        models: Vec<String>,
    },
    /// Something the user should know.
    Notify { level: Level, message: String },
    /// The topology changed (for one file, or `None`: all of it).
    Topology { path: Option<String> },
    /// Give a loaded buffer its missing node-ID comments, as one undoable
    /// change; each edit names the line it expects to find.
    InjectIds {
        path: String,
        edits: Vec<crate::remora::inject::IdEdit>,
    },
    /// Ask the user before ID comments are written into `files` files.
    RemoraConfirm { files: usize, nodes: usize },
    /// The snapshots, newest first.
    Snapshots {
        snapshots: Vec<crate::store::Snapshot>,
    },
    /// What a rollback did (or, with `dry_run`, would do), in words.
    Rollback {
        id: String,
        dry_run: bool,
        ok: bool,
        message: String,
    },
    /// Answer to [`ToCore::Effects`].
    Effects { effects: Vec<crate::store::Effect> },
    /// A new entry of the free chat.
    ChatEntry { entry: crate::store::ChatEntry },
    /// A piece of a chat turn's reply as it streams.
    ChatDelta { agent_id: String, text: String },
    /// The free chat's whole conversation.
    ChatHistory {
        entries: Vec<crate::store::ChatEntry>,
    },
    /// A Remora event was logged.
    RemoraEvent {
        record: crate::remora::events::EventRecord,
    },
    /// Answer to [`ToCore::NodeHistory`], oldest first.
    NodeHistory {
        node_id: String,
        events: Vec<crate::remora::events::EventRecord>,
    },
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warn,
    Error,
}
