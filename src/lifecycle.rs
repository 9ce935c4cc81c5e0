//! The one owner of every agent and proposal transition: spawn, start,
//! complete, fail, rebase (the human's text moved), accept (whole or one
//! hunk), reject (with or without feedback), cancel, recover, snapshot,
//! rollback and purge. Each returns an [`Outcome`] — what changed, in the
//! order clients must learn it — and [`announce`] is the one function
//! that turns an outcome into [`Event`]s (and the editor's buffer edits). The runtime runs every
//! transition on one thread, so no two of them interleave.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::accept::{self, AcceptError};
use crate::diff::{FileDiff, HunkRef};
use crate::event::Event;
use crate::event::Level;
use crate::paths::ProjectPath;
use crate::rootfs::DiskError;
use crate::store::{now_ms, AgentRecord, AgentState, Store};
use crate::sync::{self, OpenBuffers};

mod announce;
mod history;
pub use crate::port::{Refusal, RefusalKind, Told};
pub use announce::{announce, Announced};

/// How often blobs nothing refers to are collected: a core started for
/// one `chimera` command purges as it starts, and on a large project the
/// collection costs more than the command.
pub const COLLECT_BLOBS_EVERY_MS: i64 = 3_600_000;

/// What the editor shows of an agent's proposal after a transition.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// As before.
    Unchanged,
    /// These hunks (paths relative to the root).
    Proposal(Vec<FileDiff>),
    /// Nothing any more.
    Cleared,
}

/// One agent as the editor must see it now.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub agent: AgentRecord,
    pub shown: Shown,
}

/// The human's verdict on (part of) a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accepted {
        /// Project paths written.
        files: Vec<String>,
        /// Those of them changed in an editor's open buffer, not yet
        /// written on disk (the human saves them).
        unsaved: Vec<String>,
        hunk: Option<HunkRef>,
        /// Nothing of the proposal remains.
        done: bool,
    },
    Rejected {
        hunk: Option<HunkRef>,
        feedback: Option<String>,
        /// Nothing of the proposal remains.
        done: bool,
    },
}

/// A change to a loaded buffer, made by the editor as one undoable step:
/// lines `[start, end)` of `path` become `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferEdit {
    pub agent: String,
    pub path: String,
    pub start: usize,
    pub end: usize,
    pub lines: Vec<String>,
    /// The buffer's text the edit was computed for.
    pub base: String,
    /// The editor writes the buffer after the edit (`chimera accept --write`).
    pub write: bool,
}

impl BufferEdit {
    /// The edit that turns `base` (a buffer's text) into `wanted`.
    fn between(agent: &str, path: &str, base: &str, wanted: &str) -> Self {
        let (start, end, lines) = crate::diff::minimal_edit(base, wanted);
        Self {
            agent: agent.to_owned(),
            path: path.to_owned(),
            start,
            end,
            lines,
            base: base.to_owned(),
            write: false,
        }
    }
}

/// Everything one transition changed, in the order it must be announced.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Buffer edits of an accept or a rollback (first: the text changes
    /// before the proposal that described it disappears).
    pub buffer_edits: Vec<BufferEdit>,
    /// Agents whose record or proposal changed.
    pub changes: Vec<Change>,
    /// Verdicts, by agent.
    pub verdicts: Vec<(String, Verdict)>,
    /// Project paths whose stable content changed (Remora re-indexes them).
    pub changed_paths: Vec<String>,
    /// Agents to run now (a retry after feedback, a recovery).
    pub run: Vec<AgentRecord>,
    /// The snapshots, newest first, when their list changed.
    pub snapshots: Option<Vec<crate::store::Snapshot>>,
    /// Other events (a rollback's report, the files it wrote).
    pub replies: Vec<Event>,
    pub notices: Vec<(Level, String)>,
    /// The command was refused (also said among `notices`).
    pub refused: Option<Refusal>,
}

impl Outcome {
    fn notice(level: Level, message: impl Into<String>) -> Self {
        Self {
            notices: vec![(level, message.into())],
            ..Self::default()
        }
    }

    /// An accept held back for the human's sake (their text moved): a
    /// warning to the editor, a conflict to other clients.
    fn held_back(message: String) -> Self {
        Self {
            notices: vec![(Level::Warn, format!("Chimera: {message}"))],
            refused: Some(Refusal::new(RefusalKind::Conflict, message)),
            ..Self::default()
        }
    }

    /// A refusal of `kind`: said to the editor as an error, and typed for
    /// other clients.
    fn refuse(kind: impl Into<RefusalKind>, message: String) -> Self {
        Self {
            notices: vec![(Level::Error, format!("Chimera: {message}"))],
            refused: Some(Refusal::new(kind.into(), message)),
            ..Self::default()
        }
    }

    /// A refusal said only to the client that asked (the human has
    /// nothing to act on: an MCP host's work that does not parse).
    pub fn refused_to_client(kind: RefusalKind, message: String) -> Self {
        Self {
            refused: Some(Refusal::new(kind, message)),
            ..Self::default()
        }
    }

    /// `agent` as the editor must see it now, with its proposal `shown`.
    fn shows(agent: AgentRecord, shown: Shown) -> Self {
        Self {
            changes: vec![Change { agent, shown }],
            ..Self::default()
        }
    }

    /// An event of its own.
    fn reply(msg: Event) -> Self {
        Self {
            replies: vec![msg],
            ..Self::default()
        }
    }

    /// This outcome with the human's verdict on `id`.
    fn verdict(mut self, id: &str, verdict: Verdict) -> Self {
        self.verdicts.push((id.to_owned(), verdict));
        self
    }

    /// This outcome followed by `other`.
    pub fn then(mut self, other: Outcome) -> Self {
        self.buffer_edits.extend(other.buffer_edits);
        self.changes.extend(other.changes);
        self.verdicts.extend(other.verdicts);
        self.changed_paths.extend(other.changed_paths);
        self.run.extend(other.run);
        self.snapshots = other.snapshots.or(self.snapshots);
        self.replies.extend(other.replies);
        self.notices.extend(other.notices);
        self.refused = self.refused.or(other.refused);
        self
    }
}

/// The lifecycle of one project's agents and proposals.
pub struct Lifecycle {
    pub store: Arc<Store>,
    pub root: PathBuf,
    pub buffers: OpenBuffers,
    pub max_file_bytes: u64,
    /// Times a proposal rejected with feedback is attempted again.
    pub feedback_rounds: usize,
    /// This instance's name in the store.
    pub owner: String,
}

impl Lifecycle {
    fn change(&self, id: &str, shown: Shown) -> Outcome {
        match self.store.agent(id) {
            Ok(agent) => Outcome::shows(agent, shown),
            Err(e) => Outcome::refuse(&e, format!("agent {id}: {e}")),
        }
    }

    fn proposal(&self, id: &str) -> Result<Shown, AcceptError> {
        accept::proposal_diffs(&self.store, id).map(Shown::Proposal)
    }

    /// Saves `state` for `id` (with what `f` sets) and returns the record.
    fn set_state(
        &self,
        id: &str,
        state: AgentState,
        f: impl FnOnce(&mut AgentRecord),
    ) -> Result<AgentRecord, crate::store::StoreError> {
        let mut rec = self.store.agent(id)?;
        rec.state = state;
        rec.updated_at = now_ms();
        f(&mut rec);
        self.store.agent_update(&rec)?;
        Ok(rec)
    }

    fn state_change(
        &self,
        id: &str,
        state: AgentState,
        shown: Shown,
        f: impl FnOnce(&mut AgentRecord),
    ) -> Outcome {
        match self.set_state(id, state, f) {
            Ok(agent) => Outcome::shows(agent, shown),
            Err(e) => Outcome::refuse(&e, format!("cannot record agent {id}: {e}")),
        }
    }

    /// A new agent, `queued`. One the store cannot record (a read-only
    /// project, a broken database) is announced `failed` with the reason
    /// at once — the editor already shows it queued — and `created` is false.
    pub fn spawn(&self, rec: AgentRecord) -> (Outcome, bool) {
        let id = rec.id.clone();
        match self.store.agent_insert(&rec) {
            Ok(()) => (Outcome::shows(rec, Shown::Unchanged), true),
            Err(e) => {
                let failed = AgentRecord {
                    state: AgentState::Failed,
                    error: Some(format!("cannot record the agent: {e}")),
                    ..rec
                };
                let out = Outcome::shows(failed, Shown::Unchanged).then(Outcome::refuse(
                    RefusalKind::Failed,
                    format!("cannot create agent {id}: {e}"),
                ));
                (out, false)
            }
        }
    }

    /// A queued agent got its place and starts working.
    pub fn start(&self, id: &str) -> Outcome {
        self.state_change(id, AgentState::Running, Shown::Unchanged, |_| {})
    }

    /// An agent's run ended well: its overlay becomes a proposal, shown
    /// together with the state that makes it reviewable. A run that
    /// changed nothing (an answer, messages to other nodes) has nothing to
    /// review and ends `settled`.
    pub fn complete(&self, id: &str, summary: &str, rounds: u32) -> Outcome {
        // The agent fails, said as such; a client that asked for the
        // proposal (an MCP session) is refused.
        let failed = |kind: RefusalKind, e: &dyn std::fmt::Display| {
            let mut out = self.fail(id, &e.to_string());
            out.refused = Some(Refusal::new(kind, format!("cannot propose {id}: {e}")));
            out
        };
        let conflicts = match accept::build_proposal(&self.store, id) {
            Ok(c) => c,
            Err(e) => return failed((&e).into(), &e),
        };
        let files: Vec<String> = match self.store.proposal_files(id) {
            Ok(f) => f.into_iter().map(|f| f.path).collect(),
            Err(e) => return failed((&e).into(), &e),
        };
        if files.is_empty() {
            return self.state_change(id, AgentState::Settled, Shown::Unchanged, |r| {
                r.summary = Some(summary.to_owned());
                r.rounds = rounds;
            });
        }
        let shown = match self.proposal(id) {
            Ok(shown) => shown,
            Err(e) => return failed((&e).into(), &e),
        };
        self.state_change(id, AgentState::Completed, shown, |r| {
            r.summary = Some(summary.to_owned());
            r.rounds = rounds;
            r.changed_files = files;
            r.conflicted = !conflicts.is_empty();
        })
    }

    /// An agent's run ended with an error (or its time ran out): its
    /// overlay is dropped and the reason kept.
    pub fn fail(&self, id: &str, reason: &str) -> Outcome {
        // Recording the failure matters more than dropping the overlay:
        // a failed agent's overlay is no proposal, and nothing is accepted
        // from it.
        let _ = self.store.overlay_clear(id);
        let mut out = self.state_change(id, AgentState::Failed, Shown::Cleared, |r| {
            r.error = Some(reason.to_owned())
        });
        out.notices
            .push((Level::Error, format!("Chimera agent {id} failed: {reason}")));
        out
    }

    /// The human's text of `path` changed (a buffer, the disk, an accept):
    /// every proposal on it is rebased; one whose every change the human
    /// already has ends `settled`, and is said so.
    pub fn stable_changed(&self, path: &str) -> Outcome {
        let mut out = Outcome {
            changed_paths: vec![path.to_owned()],
            ..Outcome::default()
        };
        // Runs on every buffer change: ask only for the proposals on `path`.
        for id in self.store.proposals_on(path).unwrap_or_default() {
            out = out.then(self.rebase(&id));
        }
        out
    }

    /// Rebases `id`'s proposal onto the human's text; empty when nothing moved.
    fn rebase(&self, id: &str) -> Outcome {
        match accept::rebase(&self.store, id) {
            Ok((false, _)) => Outcome::default(),
            Ok((true, _)) => {
                let ended = self
                    .store
                    .agent(id)
                    .is_ok_and(|rec| rec.state == AgentState::Settled);
                if ended {
                    // Nobody accepted anything: no verdict, only what happened.
                    let mut out = self.change(id, Shown::Cleared);
                    out.notices.push((
                        Level::Info,
                        format!(
                            "Chimera: agent {id} settled: {}; nothing is left to review",
                            accept::SETTLED_BY_THE_HUMAN
                        ),
                    ));
                    out
                } else {
                    match self.proposal(id) {
                        Ok(shown) => self.change(id, shown),
                        Err(e) => Outcome::refuse(&e, format!("cannot show proposal {id}: {e}")),
                    }
                }
            }
            Err(e) => Outcome::notice(
                Level::Warn,
                format!("Chimera: cannot rebase proposal {id}: {e}"),
            ),
        }
    }

    /// A loaded buffer's text (it is now the ground truth of its file).
    pub fn buffer_text(&self, path: &ProjectPath, text: &str) -> Outcome {
        self.buffers.insert(path.as_str());
        let mode = self
            .store
            .stable_entry(path.as_str())
            .ok()
            .flatten()
            .map_or(0o644, |e| e.mode);
        let put = self
            .store
            .stable_put(
                path.as_str(),
                text.as_bytes(),
                mode,
                now_ms() * 1_000_000,
                self.max_file_bytes,
            )
            .and_then(|changed| {
                self.store.stable_mark_buffer(path.as_str(), &self.owner)?;
                Ok(changed)
            });
        match put {
            Ok(true) => self.stable_changed(path.as_str()),
            Ok(false) => Outcome::default(),
            Err(e) => Outcome::notice(Level::Warn, format!("Chimera: cannot record {path}: {e}")),
        }
    }

    /// A buffer was unloaded (or a file changed on disk): the disk is the
    /// ground truth of `path` again.
    pub fn buffer_closed(&self, path: &ProjectPath) -> Outcome {
        self.buffers.remove(path.as_str());
        self.disk_changed(path)
    }

    /// The file at `path` changed on disk (ignored while a buffer holds it).
    pub fn disk_changed(&self, path: &ProjectPath) -> Outcome {
        if self.buffers.contains(path.as_str()) {
            return Outcome::default();
        }
        match sync::sync_from_disk(&self.store, &self.root, path, self.max_file_bytes) {
            Ok(true) => self.stable_changed(path.as_str()),
            _ => Outcome::default(),
        }
    }

    /// Accepts `id`'s proposal, or hunk `hunk` of it, after a snapshot (so
    /// every accept can be rolled back). `buffers`: the text of the loaded
    /// buffers among its files, as the human sees them now.
    pub fn accept(
        &self,
        id: &str,
        buffers: HashMap<String, String>,
        hunk: Option<HunkRef>,
    ) -> Outcome {
        let mut out = self.snapshot(None, &format!("before accepting {id}"));
        let mut buffers = buffers;
        // A loaded buffer the editor did not send (it accepted before it
        // knew the proposal's files): its last pushed text is in stable.
        for f in self.store.proposal_files(id).unwrap_or_default() {
            if self.buffers.contains(&f.path) && !buffers.contains_key(&f.path) {
                let text = self
                    .store
                    .stable_entry(&f.path)
                    .ok()
                    .flatten()
                    .and_then(|e| self.store.blob(&e.hash).ok());
                if let Some(text) = text {
                    buffers.insert(f.path.clone(), String::from_utf8_lossy(&text).into_owned());
                }
            }
        }
        let accepted = accept::accept_some(&self.store, &self.root, id, &buffers, hunk.as_ref());
        out = out.then(match accepted {
            Ok(done) => self.accepted(id, done, hunk),
            Err(AcceptError::Disk(DiskError::Changed(path))) => {
                self.changed_under_accept(id, &path)
            }
            Err(e) => {
                let shown = match e {
                    AcceptError::Conflict(_) => self.proposal(id).unwrap_or(Shown::Unchanged),
                    _ => Shown::Unchanged,
                };
                self.change(id, shown)
                    .then(Outcome::refuse(&e, format!("cannot accept {id}: {e}")))
            }
        });
        out
    }

    fn accepted(&self, id: &str, done: accept::Accepted, hunk: Option<HunkRef>) -> Outcome {
        let shown = if done.done {
            Shown::Cleared
        } else {
            self.proposal(id).unwrap_or(Shown::Unchanged)
        };
        let mut out = self.change(id, shown);
        let unsaved = done.buffer_edits.iter().map(|e| e.path.clone()).collect();
        out.buffer_edits = done
            .buffer_edits
            .into_iter()
            .map(|e| BufferEdit::between(id, &e.path, &e.base, &e.wanted))
            .collect();
        // Other proposals on these files now stand on the accepted text.
        for path in &done.files {
            out = out.then(self.stable_changed(path));
        }
        out.verdict(
            id,
            Verdict::Accepted {
                files: done.files,
                unsaved,
                hunk,
                done: done.done,
            },
        )
    }

    /// The human undid (or redid) accepted agent `id`'s change in the
    /// buffer it went into: it stays accepted, marked `undone`, so that
    /// every client shows what the human's text holds. Nothing for an
    /// agent in another state.
    pub fn accept_undone(&self, id: &str, undone: bool) -> Outcome {
        match self.store.agent(id) {
            Ok(rec) if rec.state == AgentState::Accepted && rec.undone != undone => self
                .state_change(id, AgentState::Accepted, Shown::Unchanged, |r| {
                    r.undone = undone
                }),
            _ => Outcome::default(),
        }
    }

    /// Someone changed `path` after the watcher last looked: their text is
    /// the ground truth, the proposal is rebased onto it, nothing written.
    fn changed_under_accept(&self, id: &str, path: &str) -> Outcome {
        if self.unsaved_elsewhere(path) {
            return self.change(id, Shown::Unchanged).then(Outcome::held_back(
                format!("{path} has unsaved changes in another Neovim on this project; nothing was written (writing the accept would write them too). Save or undo them there, then accept again"),
            ));
        }
        let rebased = match ProjectPath::parse(path) {
            Ok(p) => self.disk_changed(&p),
            Err(_) => Outcome::default(),
        };
        self.change(id, Shown::Unchanged)
            .then(rebased)
            .then(Outcome::held_back(format!("{path} changed on disk just before the accept of {id}; nothing was written. The proposal now includes that change: review it and accept again")))
    }

    /// Whether the stable text of `path` is another instance's loaded
    /// buffer: another Neovim on the project has unsaved changes there.
    fn unsaved_elsewhere(&self, path: &str) -> bool {
        !self.buffers.contains(path)
            && self
                .store
                .stable_buffer_owner(path)
                .ok()
                .flatten()
                .is_some_and(|owner| owner != self.owner)
    }

    /// A buffer edit of `id` (an accept or a rollback) found the buffer
    /// changed: it was to turn `base` into `wanted`, the buffer holds `now`.
    /// The two are merged and the edit sent again for `now`; when the human
    /// typed into the same lines, their text wins and they are told.
    pub fn buffer_moved(
        &self,
        id: &str,
        path: &ProjectPath,
        base: &str,
        wanted: &str,
        now: &str,
    ) -> Outcome {
        let merged = crate::diff::merge3(base, now, wanted);
        let text = merged.as_deref().unwrap_or(now);
        let mut out = self.buffer_text(path, text);
        match merged {
            Some(m) => out
                .buffer_edits
                .push(BufferEdit::between(id, path.as_str(), now, &m)),
            None => out.notices.push((
                Level::Warn,
                format!("Chimera: you changed {path} in the same lines while {id} was being applied; your text was kept and the change was not applied. :Chimera history has the snapshot taken before it"),
            )),
        }
        out
    }

    /// Drops hunk `hunk` of `id`'s proposal.
    pub fn reject_hunk(&self, id: &str, hunk: HunkRef) -> Outcome {
        match accept::reject_hunk(&self.store, id, &hunk) {
            Ok(done) => {
                let shown = if done {
                    Shown::Cleared
                } else {
                    self.proposal(id).unwrap_or(Shown::Unchanged)
                };
                self.change(id, shown).verdict(
                    id,
                    Verdict::Rejected {
                        hunk: Some(hunk),
                        feedback: None,
                        done,
                    },
                )
            }
            Err(e) => Outcome::refuse(&e, format!("cannot reject a hunk of {id}: {e}")),
        }
    }

    /// Rejects `id`'s proposal, or stops it while it works. With feedback,
    /// a proposal is attempted again (up to `feedback_rounds` times): the
    /// outcome's `run` holds the agent to restart.
    pub fn reject(&self, id: &str, feedback: Option<&str>) -> Outcome {
        let feedback = feedback.filter(|f| !f.trim().is_empty());
        let completed = self
            .store
            .agent(id)
            .is_ok_and(|r| r.state == AgentState::Completed);
        // With feedback, a proposal runs again (`again`); else it ends.
        let again = match (feedback, completed) {
            (Some(text), true) => {
                accept::reject_with_feedback(&self.store, id, text, self.feedback_rounds)
            }
            _ => accept::reject(&self.store, id, feedback).map(|()| None),
        };
        match again {
            Ok(again) => {
                let mut out = self.change(id, Shown::Cleared).verdict(
                    id,
                    Verdict::Rejected {
                        hunk: None,
                        feedback: feedback.map(str::to_owned),
                        done: true,
                    },
                );
                out.run.extend(again);
                out
            }
            Err(e) => Outcome::refuse(&e, format!("cannot reject {id}: {e}")),
        }
    }

    /// Stops a queued or running agent (`:Chimera cancel`).
    pub fn cancel(&self, id: &str) -> Outcome {
        match self.store.agent(id) {
            Ok(rec) if rec.state.is_active() => self.reject(id, None),
            Ok(rec) => Outcome::notice(
                Level::Warn,
                format!(
                    "Chimera: agent {id} is {}, not working; use :Chimera reject for a proposal",
                    rec.state.as_str()
                ),
            ),
            Err(e) => Outcome::refuse(&e, e.to_string()),
        }
    }

    /// After a start: purge what is past `retention_ms`, take over the
    /// agents left queued or running by instances gone for `stale_ms`
    /// (returned in `run`), and show every agent and pending proposal.
    pub fn recover(&self, retention_ms: i64, stale_ms: i64) -> Outcome {
        let mut out = self.purge(retention_ms).then(self.take_over(stale_ms));
        for agent in self.store.agents().unwrap_or_default() {
            let id = agent.id.clone();
            if out.run.iter().any(|r| r.id == id) {
                continue; // announced by the take-over
            }
            if agent.state != AgentState::Completed {
                out.changes.push(Change {
                    agent,
                    shown: Shown::Unchanged,
                });
                continue;
            }
            // The files may have changed while Neovim was away (or an
            // accept was cut short): rebase onto what is there now.
            let rebased = self.rebase(&id);
            if rebased.changes.is_empty() && rebased.notices.is_empty() {
                let shown = self.proposal(&id).unwrap_or(Shown::Unchanged);
                out.changes.push(Change { agent, shown });
            } else {
                out = out.then(rebased);
            }
        }
        out
    }

    /// Takes over the agents of instances that stopped (their process is
    /// gone, or their heartbeat is older than `stale_ms`): they run here.
    pub fn take_over(&self, stale_ms: i64) -> Outcome {
        match self.store.recover(&self.owner, stale_ms) {
            Ok(runnable) => {
                let announced = runnable
                    .iter()
                    .cloned()
                    .map(|a| Outcome::shows(a, Shown::Unchanged));
                let mut out = announced.fold(Outcome::default(), Outcome::then);
                out.run = runnable;
                out
            }
            Err(e) => Outcome::notice(Level::Error, format!("Chimera: cannot recover agents: {e}")),
        }
    }

    /// Purges ended agents older than `retention_ms` and what only they
    /// used (the blobs, at most once in [`COLLECT_BLOBS_EVERY_MS`]).
    pub fn purge(&self, retention_ms: i64) -> Outcome {
        match self
            .store
            .purge_collecting_every(retention_ms, COLLECT_BLOBS_EVERY_MS)
        {
            Ok(_) => Outcome::default(),
            Err(e) => Outcome::notice(
                Level::Warn,
                format!("Chimera: cannot purge old agents: {e}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests;
