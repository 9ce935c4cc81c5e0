//! Neovim's messages to and from the core it runs, one enum per direction
//! (`ToCore` from its main thread, `ToEditor` back to it), and their
//! translation from and into the port's words. Built without Neovim too:
//! the core's tests drive a core the way the editor does.

use serde::Serialize;

use crate::diff::{FileDiff, HunkRef};
use crate::event::Event;
pub use crate::event::{AgentView, Level};
use crate::paths::ProjectPath;
use crate::port::{EditorSink, EditorWords, FromEditor, Said};
use crate::runtime::RuntimeError;
use std::path::Path;

mod translate;

/// Hands `msg` to `core`, which puts it into the port's words on its own
/// thread ([`ToCore::into_port`]: absolute paths become project paths; a
/// buffer outside the project is not the core's, a request about a file
/// outside it is said to the human).
pub fn hand(core: &crate::runtime::CoreHandle, msg: ToCore) -> Result<(), RuntimeError> {
    core.enter(FromEditor::Unread(Box::new(msg)))
}

impl EditorWords for ToCore {
    fn into_port(
        self: Box<Self>,
        project: &dyn Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Option<FromEditor>, String> {
        ToCore::into_port(*self, project).map_err(|e| e.to_string())
    }
}

/// From the editor to the core.
#[derive(Debug, Clone)]
pub enum ToCore {
    /// Start an agent with the id the editor chose (so `spawn()` can return it at once).
    Spawn {
        id: String,
        /// Checked by the client ([`crate::task::TaskSpec::check`]).
        spec: crate::task::TaskSpec,
    },
    /// Accept a proposal. `buffers` holds the current text of every loaded
    /// buffer among the proposal's files, so the accept sees what the human sees.
    /// `hunk`: only that hunk.
    Accept {
        id: String,
        buffers: Vec<BufferText>,
        hunk: Option<HunkRef>,
        /// What lands in an open buffer is written there too (a client
        /// other than that editor asked for it).
        write: bool,
    },
    /// The human undid (`undone`) or redid an accepted change in the
    /// buffer it went into: the agent stays accepted, marked so.
    AcceptUndone { id: String, undone: bool },
    /// Drop one hunk from a proposal.
    RejectHunk { id: String, hunk: HunkRef },
    /// Reject a proposal (or cancel a running agent).
    Reject {
        id: String,
        feedback: Option<String>,
    },
    /// Stop a queued or running agent at once (LLM request and sandbox included).
    Cancel { id: String },
    /// The human's answer to [`ToEditor::Permission`] `id`.
    PermissionAnswer { id: u64, allow: bool },
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
    /// `:Chimera model`: the model new agents ask when their role names
    /// none (empty: back to `llm.model`); working agents keep theirs.
    SetModel { model: String },
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
    /// Point branch `name` at `snapshot` (default: the newest), then send
    /// the snapshots; without `name`, say which branches there are.
    Branch {
        name: Option<String>,
        snapshot: Option<String>,
    },
    /// Send agent `agent_id`'s audit log ([`ToEditor::Calls`]).
    Calls { agent_id: String },
    /// Merge proposal `id` into `text`, the buffer of `path` (absolute),
    /// with the clashes between conflict markers
    /// ([`ToEditor::ConflictMarkers`]).
    ConflictMarkers {
        id: String,
        path: String,
        text: String,
    },
    /// Start agent `id` on `task` with the project as in snapshot `snapshot`.
    Fork {
        id: String,
        snapshot: String,
        task: String,
    },
    /// The human says `message` to the agent of node `node_id`.
    NodeChat { node_id: String, message: String },
    /// The human asks for a new `kind` node `name` in the scope at 1-based
    /// `line` of `file` (a ghost node); its agent writes it.
    NodeNew {
        file: String,
        line: usize,
        kind: String,
        name: String,
        description: String,
    },
    /// The human says `message` in the free chat; agent `id` takes the turn.
    Chat {
        id: String,
        message: String,
        file: Option<String>,
        cursor_line: Option<usize>,
        /// What the message's references (`#buffer`, `@file`) point at.
        context: Option<String>,
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

pub use crate::port::EffectsSince;

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
        agent: AgentView,
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
        /// Write the buffer after the edit, unless it held other unsaved
        /// changes before it.
        write: bool,
    },
    /// The outcome of an accept or reject, for `User ChimeraAccepted`/`ChimeraRejected`.
    Resolved {
        id: String,
        accepted: bool,
        files: Vec<String>,
        hunk: Option<HunkRef>,
    },
    /// The core wrote these files on disk (absolute paths): a buffer that
    /// shows one unmodified is reloaded, so it is never left stale.
    FilesWritten { paths: Vec<String> },
    /// Text streamed from the LLM for an agent (progress display).
    Progress { id: String, message: String },
    /// An agent asks the human's permission (`capabilities.ask`); answered
    /// with [`ToCore::PermissionAnswer`] and this `id`.
    Permission {
        id: u64,
        agent: String,
        question: String,
    },
    /// Question [`ToEditor::Permission`] `id` is closed (answered by any
    /// client, or out of time: `None`).
    Answered { id: u64, allow: Option<bool> },
    /// Answer to [`ToCore::CheckLlm`].
    LlmStatus(crate::llm::health::Health),
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
    /// A ghost node's agent `agent_id` is writing it: shown in `path` as a
    /// placeholder at 1-based `line` until the agent ends.
    GhostNode {
        agent_id: String,
        path: String,
        line: usize,
        label: String,
        /// The whitespace its siblings are indented with.
        indent: String,
    },
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
    /// Answer to [`ToCore::Calls`]: every tool call of the agent.
    Calls {
        agent_id: String,
        calls: Vec<crate::store::ToolCall>,
    },
    /// Answer to [`ToCore::ConflictMarkers`]: the merged text (`None`:
    /// nothing clashes), or why there is none.
    ConflictMarkers {
        id: String,
        path: String,
        marked: Option<String>,
        error: Option<String>,
    },
    /// A new entry of the free chat.
    ChatEntry { entry: crate::store::ChatEntry },
    /// A piece of a chat turn's reply as it streams.
    ChatDelta { agent_id: String, text: String },
    /// A streamed piece of an ACP agent's turn (its words, thoughts, plan,
    /// tool calls); the turn's lines reach its log when it ends.
    AgentSaid {
        id: String,
        piece: crate::acp::transcript::Piece,
    },
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

impl ToEditor {
    /// What the editor is told of `event`: its paths made absolute under
    /// `root`, as buffers are named.
    pub fn of(event: Event, root: &Path) -> ToEditor {
        let abs = |path: &str| root.join(path).to_string_lossy().into_owned();
        match event {
            Event::Ready { files } => ToEditor::Ready {
                root: root.to_string_lossy().into_owned(),
                files,
            },
            Event::Agent {
                agent,
                proposal,
                cleared,
            } => ToEditor::Agent {
                agent,
                proposal: proposal.map(|files| {
                    files
                        .into_iter()
                        .map(|f| FileDiff {
                            path: abs(&f.path),
                            ..f
                        })
                        .collect()
                }),
                cleared,
            },
            Event::Resolved {
                id,
                accepted,
                files,
                hunk,
                ..
            } => ToEditor::Resolved {
                id,
                accepted,
                files: files.iter().map(|f| abs(f)).collect(),
                hunk,
            },
            Event::FilesWritten { paths } => ToEditor::FilesWritten {
                paths: paths.iter().map(|f| abs(f)).collect(),
            },
            Event::Snapshots { snapshots } => ToEditor::Snapshots { snapshots },
            Event::Rollback {
                id,
                dry_run,
                ok,
                report,
            } => ToEditor::Rollback {
                id,
                dry_run,
                ok,
                message: report,
            },
            Event::Notice { level, message } => ToEditor::Notify { level, message },
            Event::Topology { path } => ToEditor::Topology { path },
            Event::Chat { entry } => ToEditor::ChatEntry { entry },
            Event::Remora { record } => ToEditor::RemoraEvent { record },
            Event::Progress { agent, message } => ToEditor::Progress { id: agent, message },
            Event::ChatDelta { agent, text } => ToEditor::ChatDelta {
                agent_id: agent,
                text,
            },
            Event::AgentSaid { agent, piece } => ToEditor::AgentSaid { id: agent, piece },
            Event::Permission {
                id,
                agent,
                question,
            } => ToEditor::Permission {
                id,
                agent,
                question,
            },
            Event::Answered { id, allow } => ToEditor::Answered { id, allow },
        }
    }
}

/// An editor that reads Neovim's messages from a channel (the core's
/// tests).
impl EditorSink for tokio::sync::mpsc::UnboundedSender<ToEditor> {
    fn asks_the_human(&self) -> bool {
        true
    }
    fn hear(&self, said: Said, root: &std::path::Path) {
        if let Some(msg) = ToEditor::heard(said, root) {
            // The editor closed its side: nobody is left to show it to.
            let _ = tokio::sync::mpsc::UnboundedSender::send(self, msg);
        }
    }
}
