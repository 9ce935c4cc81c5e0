//! The core's port: what any client asks the core to do ([`Command`]) or
//! to say ([`Query`]), in the project's own words — files are project
//! paths, never a client's absolute ones — and what it answers: a
//! command's [`Told`] (its events, or the [`Refusal`] with its reason), a
//! query's [`Reply`] or its refusal.
//!
//! Neovim, the HTTP API, the `chimera` command, MCP sessions and A2A peers
//! all speak it; an editor attached to a core speaks it both ways
//! ([`FromEditor`] in, [`Said`] out) and puts it into its own words
//! (Neovim's: `nvim::messages::hand`, `nvim::messages::ToEditor::heard`).

use crate::diff::HunkRef;
use crate::paths::ProjectPath;
use crate::store::{Branch, ChatEntry, Effect, Snapshot, Store, StoreError, ToolCall};
use crate::task::TaskSpec;

mod editor;
mod refusal;
mod view;
pub use editor::{EditorSink, EditorWords, ForEditor, FromEditor, Said};
pub use refusal::{Refusal, RefusalKind, Told};
pub use view::{FileView, HunkView, ProposedFile, CONTEXT_LINES};

/// What a client asks the core to do. Each is a step of the lifecycle
/// (answered once it ran, or refused with the reason) or is handed to the
/// part of the core that owns it.
#[derive(Debug, Clone)]
pub enum Command {
    /// Start an agent with the ID the client chose (so it knows it at once).
    /// `spec.file` is a project path ([`TaskSpec::check`] was done by the client).
    Spawn { id: String, spec: TaskSpec },
    /// Accept proposal `id` (only `hunk`, if named). `buffers`: the text a
    /// client shows of the proposal's files, unsaved edits included, so
    /// that the accept lands on what the human sees.
    Accept {
        id: String,
        buffers: Vec<Buffer>,
        hunk: Option<HunkRef>,
        /// What lands in a file open in the editor is written there too (a
        /// client other than that editor asked for it).
        write: bool,
    },
    /// The human undid (`undone`) or redid an accepted change in the
    /// editor: the agent stays accepted, marked so.
    AcceptUndone { id: String, undone: bool },
    /// Drop one hunk from a proposal.
    RejectHunk { id: String, hunk: HunkRef },
    /// Reject a proposal (or stop a working agent), with what to tell the
    /// agent when it tries again.
    Reject {
        id: String,
        feedback: Option<String>,
    },
    /// Stop a queued or working agent at once.
    Cancel { id: String },
    /// An MCP host's session wrote for the first time: agent `id` is
    /// recorded `running`, its overlay the session's.
    SessionStart {
        id: String,
        task: String,
        /// The MCP host's name, as it introduced itself.
        client: String,
        /// The capabilities preset the session was opened with.
        capabilities: String,
    },
    /// The session proposes what agent `id` wrote.
    SessionPropose { id: String, summary: String },
    /// The session ended (or the host went away) before it proposed.
    SessionEnd { id: String, reason: String },
    /// Snapshot the project now, under the client's ID.
    Snapshot { id: String, message: String },
    /// Start agent `id` on `task` with the project as it was in `snapshot`.
    Fork {
        id: String,
        snapshot: String,
        task: String,
    },
    /// Roll the project back to snapshot `id`; with `dry_run`, only say
    /// what would change.
    Rollback {
        id: String,
        dry_run: bool,
        buffers: Vec<Buffer>,
    },
    /// Point branch `name` at `snapshot` (default: the newest); without a
    /// name, say which branches there are.
    Branch {
        name: Option<String>,
        snapshot: Option<String>,
    },
    /// Index the project as Remora nodes; with inline IDs, ask first
    /// (`confirmed` false) how many files will change.
    RemoraEnable { confirmed: bool },
    /// The human says `message` to the agent of node `node`.
    NodeChat { node: String, message: String },
    /// A new `kind` node `name` in the scope at 1-based `line` of `file`,
    /// written by its own agent.
    NodeNew {
        file: ProjectPath,
        line: usize,
        kind: String,
        name: String,
        description: String,
    },
    /// The human says `message` in the free chat; agent `id` takes the turn.
    Chat {
        id: String,
        message: String,
        file: Option<ProjectPath>,
        /// 0-based, as the editor's cursor counts.
        cursor_line: Option<usize>,
        /// What the message's references (`#buffer`, `@file`) point at.
        context: Option<String>,
    },
    /// Forget the free chat's conversation.
    ChatClear,
    /// Question `question` (an agent asking permission) is answered.
    Answer { question: u64, allow: bool },
    /// The model new agents ask when their role names none (empty: back to
    /// `llm.model`); working agents keep theirs.
    SetModel { model: String },
    /// Check that the LLM server answers and has the configured model.
    CheckLlm,
    /// What the human did to a file's buffer.
    Buffer(BufferChange),
}

/// A file's text as a client shows it (unsaved edits included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    pub path: ProjectPath,
    pub text: String,
}

/// What the human did to a buffer: its text is now the ground truth of its
/// file, or no longer is, or it changed under an accept being applied.
#[derive(Debug, Clone)]
pub enum BufferChange {
    /// Typed, loaded or written.
    Text(Buffer),
    /// Unloaded: the file on disk is the ground truth again.
    Closed(ProjectPath),
    /// An edit of accept `id`, computed for `base` to become `wanted`,
    /// found `now` in the buffer: the core merges and sends it again.
    Moved {
        id: String,
        path: ProjectPath,
        base: String,
        wanted: String,
        now: String,
    },
}

/// What a client asks the core to say. Answered from the store alone, so
/// a client answers it the same with or without a running core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// Every agent's record.
    Agents,
    /// Agent `id`'s record.
    Agent { id: String },
    /// Agent `id`'s proposal: each file's hunks and the text they were
    /// made against (while it waits for review), and its unified diff.
    Proposal { id: String },
    /// The snapshots, newest first.
    Snapshots,
    /// The named snapshot lines.
    Branches,
    /// The effects after `since` (of `kind`, if named).
    Effects {
        since: EffectsSince,
        kind: Option<String>,
    },
    /// Agent `agent`'s tool calls after sequence `since` (0: all).
    Calls { agent: String, since: i64 },
    /// The Remora events from or to `node` after sequence `since`, oldest
    /// first.
    NodeHistory { node: String, since: i64 },
    /// The sequence number of the latest Remora event (0: none yet):
    /// where a client starts to read what a command it sends causes.
    LatestEvent,
    /// The free chat's conversation.
    ChatHistory,
    /// The effect and audit records that could not be written (the work
    /// they record went on): a gap in the logs is said, not hidden.
    Unrecorded,
    /// Proposal `id` merged into `text` (what the human has of `path`),
    /// the clashes between conflict markers.
    ConflictMarkers {
        id: String,
        path: ProjectPath,
        text: String,
    },
}

/// Where a list of effects starts (seed 004: `effects --since <snapshot>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectsSince {
    /// After this sequence number (0: all).
    Seq(i64),
    /// After this snapshot was taken.
    Snapshot(String),
}

/// The answer to a [`Query`], one variant each; as JSON, just what it holds.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum Reply {
    Agents(Vec<crate::event::AgentView>),
    Agent(Box<crate::store::AgentRecord>),
    Proposal {
        files: Vec<crate::diff::FileDiff>,
        /// The text each file's hunks were made against, in order.
        bases: Vec<String>,
        diff: String,
    },
    Snapshots(Vec<Snapshot>),
    Branches(Vec<Branch>),
    Effects(Vec<Effect>),
    Calls(Vec<ToolCall>),
    NodeHistory(Vec<crate::remora::events::EventRecord>),
    ChatHistory(Vec<ChatEntry>),
    /// The merged text, or `None` when nothing clashes.
    Marked(Option<String>),
    Unrecorded(crate::store::Unrecorded),
    /// A sequence number.
    Seq(i64),
}

/// How many of a node's events one answer holds at most.
pub const NODE_HISTORY_LIMIT: usize = 10_000;

/// The conversation of the free chat (one per project).
pub const CHAT: &str = "free";

/// Answers `query` from `store`; what it names that does not exist is a
/// [`RefusalKind::NotFound`], a store that fails is [`RefusalKind::Failed`].
pub fn ask(store: &Store, query: Query) -> Result<Reply, Refusal> {
    let failed = |what: &str, e: StoreError| {
        Refusal::new(RefusalKind::from(&e), format!("cannot read {what}: {e}"))
    };
    Ok(match query {
        Query::Agents => Reply::Agents(
            store
                .agents()
                .map_err(|e| failed("the agents", e))?
                .iter()
                .map(crate::event::AgentView::from)
                .collect(),
        ),
        Query::Agent { id } => Reply::Agent(Box::new(agent(store, &id)?)),
        Query::Proposal { id } => proposal(store, &id)?,
        Query::Snapshots => {
            Reply::Snapshots(store.snapshots().map_err(|e| failed("the snapshots", e))?)
        }
        Query::Branches => {
            Reply::Branches(store.branches().map_err(|e| failed("the branches", e))?)
        }
        Query::Effects { since, kind } => {
            let seq = match since {
                EffectsSince::Seq(seq) => seq,
                EffectsSince::Snapshot(id) => store.snapshot_effect_seq(&id).map_err(|_| {
                    Refusal::new(
                        RefusalKind::NotFound,
                        format!("no snapshot {id}; `chimera history` lists them"),
                    )
                })?,
            };
            Reply::Effects(
                store
                    .effects(seq, kind.as_deref())
                    .map_err(|e| failed("the effect log", e))?,
            )
        }
        Query::Calls { agent: id, since } => {
            agent(store, &id)?;
            let agent = id;
            let calls = store.tool_calls(&agent, since);
            Reply::Calls(calls.map_err(|e| failed(&format!("the tool calls of {agent}"), e))?)
        }
        Query::NodeHistory { node, since } => Reply::NodeHistory(
            store
                .remora_events_since(since, Some(&node), NODE_HISTORY_LIMIT)
                .map_err(|e| failed(&format!("the history of {node}"), e))?,
        ),
        Query::ChatHistory => Reply::ChatHistory(
            store
                .chat_entries(CHAT)
                .map_err(|e| failed("the chat", e))?,
        ),
        Query::Unrecorded => Reply::Unrecorded(store.unrecorded()),
        Query::LatestEvent => Reply::Seq(
            store
                .last_event_seq()
                .map_err(|e| failed("the latest event", e))?,
        ),
        Query::ConflictMarkers { id, path, text } => Reply::Marked(
            crate::accept::with_conflict_markers(store, &id, path.as_str(), &text)
                .map_err(|e| Refusal::new(RefusalKind::from(&e), e.to_string()))?,
        ),
    })
}

/// Agent `id`'s proposal: its files' hunks and bases while it waits for
/// review, and its unified diff.
fn proposal(store: &Store, id: &str) -> Result<Reply, Refusal> {
    let waits = agent(store, id)?.state == crate::store::AgentState::Completed;
    let refused = |e: crate::accept::AcceptError| {
        Refusal::new(
            RefusalKind::from(&e),
            format!("cannot read the proposal of {id}: {e}"),
        )
    };
    let (files, bases) = match waits {
        true => crate::accept::proposal_diffs_and_bases(store, id)
            .map_err(refused)?
            .into_iter()
            .unzip(),
        false => (Vec::new(), Vec::new()),
    };
    let diff = crate::accept::proposal_unified(store, id).map_err(refused)?;
    Ok(Reply::Proposal { files, bases, diff })
}

/// Agent `id`'s record; one the store does not know is not found.
fn agent(store: &Store, id: &str) -> Result<crate::store::AgentRecord, Refusal> {
    store.agent(id).map_err(|e| match e {
        StoreError::NoAgent(_) => Refusal::new(
            RefusalKind::NotFound,
            format!("no agent {id}; `chimera agents` lists them"),
        ),
        e => Refusal::new(RefusalKind::Failed, format!("cannot read agent {id}: {e}")),
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The clients outside the editor, and the one file among them that
    /// starts and serves a core (it hands the others the port).
    const CLIENTS: &[&str] = &["api", "cli", "mcp", "a2a.rs"];
    const SERVES_A_CORE: &str = "api/core.rs";
    /// What a client names only through the port: the editor's messages,
    /// the runtime's insides, the lifecycle's answers.
    const BEHIND_THE_PORT: &[&str] = &[
        "ToCore",
        "ToEditor",
        "crate::nvim",
        "crate::runtime",
        "crate::lifecycle",
    ];

    fn sources(at: &Path, out: &mut Vec<PathBuf>) {
        if at.is_file() {
            out.push(at.to_owned());
            return;
        }
        for entry in std::fs::read_dir(at).unwrap() {
            sources(&entry.unwrap().path(), out);
        }
    }

    /// Where in `dirs` (under `src/`) a line of code names one of
    /// `names`, the files ending in `exempt` and the tests left out.
    fn named(dirs: &[&str], names: &[&str], exempt: &[&str]) -> Vec<String> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        for dir in dirs {
            sources(&src.join(dir), &mut files);
        }
        assert!(files.len() > 10, "the files of {dirs:?} were not found");
        let mut found = Vec::new();
        let kept = files
            .iter()
            .filter(|f| !exempt.iter().any(|e| f.ends_with(e)) && !f.ends_with("tests.rs"));
        for file in kept {
            let text = std::fs::read_to_string(file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (n, line) in code.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for name in names.iter().filter(|name| code.contains(*name)) {
                    let at = file.strip_prefix(&src).unwrap().display();
                    found.push(format!("{at}:{}: {name}", n + 1));
                }
            }
        }
        found
    }

    #[test]
    fn clients_reach_the_core_through_the_port_alone() {
        let found = named(CLIENTS, BEHIND_THE_PORT, &[SERVES_A_CORE]);
        assert!(
            found.is_empty(),
            "clients name what is behind the port (use crate::port):\n{}",
            found.join("\n")
        );
    }

    /// The core hears and says in its own words (`FromEditor` in; events,
    /// and `ForEditor` for the editor alone, out); the editor translates
    /// its messages both ways.
    #[test]
    fn the_core_speaks_to_the_editor_in_its_own_words() {
        let core = ["runtime", "runtime.rs", "lifecycle", "lifecycle.rs"];
        let found = named(&core, &["ToEditor", "ToCore", "crate::nvim"], &[]);
        assert!(
            found.is_empty(),
            "the core names the editor's messages (the port's FromEditor, Event, ForEditor say it):\n{}",
            found.join("\n")
        );
    }
}
