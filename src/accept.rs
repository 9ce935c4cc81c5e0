//! Proposals from overlays, and their two ends: accept (one transaction:
//! stable first, then the buffer or the file on disk, written atomically)
//! and reject (the overlay is discarded). When the human edits a file under
//! a proposal, the proposal is rebased with a three-way merge; an overlap
//! marks it conflicted and accept is refused.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;

use crate::diff::{self, FileChange, FileDiff, HunkRef};
use crate::rootfs::{self, DiskError, Expect};
use crate::store::{self, now_ms, AgentState, ProposalFile, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("agent {id} has no proposal to {action} (it is {state})")]
    NotReady {
        id: String,
        state: &'static str,
        action: &'static str,
    },
    #[error("the proposal for `{0}` conflicts with your edits since it was made: take its hunks clear of your edits one by one (accept --hunk N), reject it with feedback, or reject it and ask again")]
    Conflict(String),
    #[error("proposal {id} has no hunk {n}; hunks are counted from 1 in file order")]
    NoHunk { id: String, n: usize },
    #[error("hunk {key} of proposal {id} is no longer there (the proposal changed since it was drawn); look at it again")]
    HunkGone { id: String, key: String },
    #[error(transparent)]
    Disk(#[from] DiskError),
}

fn text(conn: &Connection, hash: Option<&str>) -> Result<String, StoreError> {
    match hash {
        None => Ok(String::new()),
        Some(h) => Ok(String::from_utf8_lossy(&store::blob(conn, h)?).into_owned()),
    }
}

/// Why an agent ended `settled` when the human's text caught up with it.
pub const SETTLED_BY_THE_HUMAN: &str = "your text already holds every change it made";

/// Turns `agent`'s overlay into a proposal against the current stable
/// layer. Changes the human made meanwhile are merged in; returns the files
/// that could not be merged (a conflict) — their proposal is left as the
/// agent wrote it, marked conflicted.
pub fn build_proposal(store: &Store, agent: &str) -> Result<Vec<String>, AcceptError> {
    let entries = store.overlay_entries(agent)?;
    store.transaction(|tx| {
        let mut files = Vec::new();
        let mut conflicts = Vec::new();
        for (path, entry) in entries {
            let current = store.stable_entry_in(tx, &path)?.map(|e| e.hash);
            let mut new_hash = entry.hash.clone();
            if let Some(h) = &entry.hash {
                let base_text = text(tx, entry.base_hash.as_deref())?;
                let agent_text = diff::match_line_endings(&base_text, &text(tx, Some(h))?);
                let merged = if current == entry.base_hash {
                    Some(agent_text)
                } else if entry.base_hash.is_none() || current.is_none() {
                    None // created or deleted on one side only: never silently re-create
                } else {
                    diff::merge3(&base_text, &text(tx, current.as_deref())?, &agent_text)
                };
                match merged {
                    Some(m) => new_hash = Some(store::put_blob(tx, m.as_bytes())?),
                    None => conflicts.push(path.clone()),
                }
            } else if current != entry.base_hash {
                conflicts.push(path.clone());
            }
            if new_hash == current && !conflicts.contains(&path) {
                continue; // no change left after the merge
            }
            let base_hash = if conflicts.contains(&path) {
                entry.base_hash.clone()
            } else {
                current
            };
            files.push(ProposalFile {
                path,
                base_hash,
                new_hash,
            });
        }
        store::set_proposal_files(tx, agent, &files)?;
        Ok(conflicts)
    })
}

/// The text of `path` with `agent`'s proposal merged into the human's
/// `human` text, its clashes between conflict markers for the human to
/// settle; `None` when the file is not in the proposal or nothing clashes
/// (then an accept does it).
pub fn with_conflict_markers(
    store: &Store,
    agent: &str,
    path: &str,
    human: &str,
) -> Result<Option<String>, AcceptError> {
    let Some(f) = store
        .proposal_files(agent)?
        .into_iter()
        .find(|f| f.path == path)
    else {
        return Ok(None);
    };
    let (Some(base), Some(new)) = (f.base_hash.as_deref(), f.new_hash.as_deref()) else {
        return Ok(None);
    };
    let (base, new) = (store.blob_text(base)?, store.blob_text(new)?);
    if diff::merge3(&base, human, &new).is_some() {
        return Ok(None);
    }
    Ok(Some(diff::merge3_marked(
        &base,
        human,
        &new,
        &format!("chimera {agent}"),
    )))
}

/// The hunks of `agent`'s proposal, one entry per file.
pub fn proposal_diffs(store: &Store, agent: &str) -> Result<Vec<FileDiff>, AcceptError> {
    Ok(proposal_diffs_and_bases(store, agent)?
        .into_iter()
        .map(|(f, _)| f)
        .collect())
}

/// [`proposal_diffs`], each file with the text it was proposed on (what a
/// client shows around a hunk).
pub fn proposal_diffs_and_bases(
    store: &Store,
    agent: &str,
) -> Result<Vec<(FileDiff, String)>, AcceptError> {
    let files = store.proposal_files(agent)?;
    store.transaction(|tx| {
        let mut out = Vec::new();
        for f in files {
            let old = text(tx, f.base_hash.as_deref())?;
            let new = text(tx, f.new_hash.as_deref())?;
            let change = match (&f.base_hash, &f.new_hash) {
                (None, _) => FileChange::Added,
                (_, None) => FileChange::Deleted,
                _ => FileChange::Modified,
            };
            let current = store.stable_entry_in(tx, &f.path)?.map(|e| e.hash);
            let human_hunks = if current != f.base_hash {
                diff::hunks(&old, &text(tx, current.as_deref())?)
            } else {
                vec![]
            };
            let hunks = diff::hunks(&old, &new);
            out.push((FileDiff::new(f.path, change, hunks, human_hunks), old));
        }
        Ok(out)
    })
}

/// `agent`'s proposal as one unified diff against the base each file was
/// proposed on (empty when it proposes nothing).
pub fn proposal_unified(store: &Store, agent: &str) -> Result<String, AcceptError> {
    let blob = |h: Option<&str>| -> Result<String, AcceptError> {
        Ok(match h {
            Some(h) => String::from_utf8_lossy(&store.blob(h)?).into_owned(),
            None => String::new(),
        })
    };
    let mut out = String::new();
    for f in store.proposal_files(agent)? {
        let (old, new) = (blob(f.base_hash.as_deref())?, blob(f.new_hash.as_deref())?);
        out.push_str(&diff::unified(&f.path, &old, &new));
    }
    Ok(out)
}

/// Rebases every file of `agent`'s proposal whose stable content moved on
/// (the human typed). Returns whether anything changed and whether the
/// proposal is now conflicted. A proposal left with nothing to change ends
/// `accepted`.
pub fn rebase(store: &Store, agent: &str) -> Result<(bool, bool), AcceptError> {
    let files = store.proposal_files(agent)?;
    store.transaction(|tx| {
        let mut changed = false;
        let mut conflicted = false;
        let mut out = Vec::with_capacity(files.len());
        for f in files {
            let current = store.stable_entry_in(tx, &f.path)?.map(|e| e.hash);
            if current == f.base_hash {
                out.push(f);
                continue;
            }
            changed = true;
            let merged = match (&f.base_hash, &current, &f.new_hash) {
                (Some(_), Some(cur), Some(new)) => diff::merge3(
                    &text(tx, f.base_hash.as_deref())?,
                    &text(tx, Some(cur))?,
                    &text(tx, Some(new))?,
                ),
                _ => None,
            };
            match merged {
                Some(m) => {
                    let new_hash = Some(store::put_blob(tx, m.as_bytes())?);
                    if new_hash != current {
                        out.push(ProposalFile {
                            path: f.path,
                            base_hash: current,
                            new_hash,
                        });
                    }
                }
                None => {
                    conflicted = true;
                    out.push(f);
                }
            }
        }
        if changed {
            store::set_proposal_files(tx, agent, &out)?;
            if let Some(mut rec) = store::agent(tx, agent)? {
                rec.conflicted = conflicted;
                rec.changed_files = out.iter().map(|f| f.path.clone()).collect();
                rec.updated_at = now_ms();
                // Every change is already in the human's files (they typed
                // it, or an accept was cut short after its writes): nothing
                // is left to review, so the agent is done, not pending.
                let nothing_left = out.is_empty() && rec.state == AgentState::Completed;
                if nothing_left {
                    rec.state = AgentState::Settled;
                    store::discard_changes(tx, agent)?;
                }
                store::agent_update(tx, &rec)?;
                if nothing_left {
                    store::append_event(
                        tx,
                        Some(agent),
                        "settled",
                        &serde_json::json!({"files": [], "reason": SETTLED_BY_THE_HUMAN}),
                    )?;
                }
            }
        }
        Ok((changed, conflicted))
    })
}

/// A loaded buffer an accept changes: from the text the editor sent to
/// the accepted text.
#[derive(Debug, PartialEq, Eq)]
pub struct BufferChange {
    pub path: String,
    pub base: String,
    pub wanted: String,
}

/// What the editor must do after an accept: edit these loaded buffers
/// (as one undoable change each).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Accepted {
    pub buffer_edits: Vec<BufferChange>,
    pub files: Vec<String>,
    /// Nothing of the proposal remains (the agent is `accepted`).
    pub done: bool,
}

/// Accepts `agent`'s proposal. `buffers` maps project paths of loaded
/// buffers to their current text: those files are changed in the buffer
/// (by the editor), every other file on disk by temp file + rename. Stable
/// and the agent record change in one transaction, committed only after
/// every disk write succeeded.
pub fn accept(
    store: &Store,
    root: &Path,
    agent: &str,
    buffers: &HashMap<String, String>,
) -> Result<Accepted, AcceptError> {
    accept_some(store, root, agent, buffers, None)
}

/// The hunk `which` of `agent`'s proposal `diffs`, or the error that names it.
fn find_hunk(
    diffs: &[FileDiff],
    agent: &str,
    which: &HunkRef,
) -> Result<(usize, diff::Hunk), AcceptError> {
    diff::find_hunk(diffs, which).ok_or_else(|| match which {
        HunkRef::Number(n) => AcceptError::NoHunk {
            id: agent.to_owned(),
            n: *n,
        },
        HunkRef::Key(key) => AcceptError::HunkGone {
            id: agent.to_owned(),
            key: key.clone(),
        },
    })
}

/// Makes the missing folders of the files `edits` change in buffers:
/// Neovim's `:w` of a new file's buffer cannot (E212).
fn make_buffer_folders(root: &Path, edits: &[BufferChange]) -> Result<(), DiskError> {
    for edit in edits {
        if let Ok(path) = crate::paths::ProjectPath::parse(&edit.path) {
            rootfs::make_parent_dirs(root, &path)?;
        }
    }
    Ok(())
}

/// Accepts `agent`'s whole proposal, or only hunk `hunk` (by number, from 1
/// in file order). What remains of a partly accepted proposal stays
/// reviewable; the agent is `accepted` once nothing remains.
pub fn accept_some(
    store: &Store,
    root: &Path,
    agent: &str,
    buffers: &HashMap<String, String>,
    hunk: Option<&HunkRef>,
) -> Result<Accepted, AcceptError> {
    // The buffers are the ground truth: bring stable up to date, then rebase.
    for (path, content) in buffers {
        let mode = store.stable_entry(path)?.map_or(0o644, |e| e.mode);
        let mtime = now_ms() * 1_000_000;
        store.stable_put(path, content.as_bytes(), mode, mtime, u64::MAX)?;
    }
    let rec = store.agent(agent)?;
    if rec.state != AgentState::Completed {
        return Err(AcceptError::NotReady {
            id: agent.to_owned(),
            state: rec.state.as_str(),
            action: "accept",
        });
    }
    let (_, conflicted) = rebase(store, agent)?;
    let rec = store.agent(agent)?;
    if rec.state == AgentState::Settled {
        return accept_settled(store, rec);
    }
    let all_files = store.proposal_files(agent)?;
    if conflicted && hunk.is_none() {
        // The whole of it cannot go in; its hunks that touch none of the
        // human's changes can, one by one.
        let mut conflicting = Vec::new();
        for f in &all_files {
            if store.stable_entry(&f.path)?.map(|e| e.hash) != f.base_hash {
                conflicting.push(f.path.clone());
            }
        }
        return Err(AcceptError::Conflict(conflicting.join(", ")));
    }
    let chosen = match hunk {
        None => Chosen {
            files: all_files.clone(),
            partial: None,
            onto_human: None,
        },
        Some(which) => Chosen::one_hunk(store, agent, &all_files, which)?,
    };
    let mut intent: Option<store::journal::Pending> = None;
    let accepted = store.transaction(|tx| {
        let mut out = Accepted::default();
        let disk = chosen.stage(store, tx, buffers, &mut out)?;
        // Before any file is written: a folder that cannot be made (a
        // link on the way) refuses the accept with nothing changed.
        make_buffer_folders(root, &out.buffer_edits)?;
        rootfs::write_all_when(root, &disk, || {
            intent = store.intend_writes(&format!("the accept of agent {agent}"), &disk)?;
            Ok::<(), AcceptError>(())
        })?;
        let remaining = chosen.remaining(&all_files);
        out.done = remaining.is_empty();
        let mut rec = rec.clone();
        rec.updated_at = now_ms();
        if remaining.is_empty() {
            rec.state = AgentState::Accepted;
            store::discard_changes(tx, agent)?;
        } else {
            rec.changed_files = remaining.iter().map(|f| f.path.clone()).collect();
        }
        store::agent_update(tx, &rec)?;
        store::set_proposal_files(tx, agent, &remaining)?;
        let event = serde_json::json!({"files": out.files, "hunk": hunk});
        store::append_event(tx, Some(agent), "accepted", &event)?;
        Ok(out)
    });
    settle(intent, accepted, store, root)
}

/// The accept of a proposal the rebase found already in the human's
/// files: the human asked to accept it, so it is theirs — accepted,
/// nothing written.
fn accept_settled(store: &Store, mut rec: store::AgentRecord) -> Result<Accepted, AcceptError> {
    rec.state = AgentState::Accepted;
    rec.updated_at = now_ms();
    store.agent_update(&rec)?;
    store.append_event(
        Some(&rec.id),
        "accepted",
        &serde_json::json!({"files": [], "reason": SETTLED_BY_THE_HUMAN}),
    )?;
    Ok(Accepted {
        done: true,
        ..Accepted::default()
    })
}

/// What an accept takes: whole files, or one hunk of one file.
struct Chosen {
    files: Vec<ProposalFile>,
    /// One hunk: the file's new content, its base with that hunk.
    partial: Option<String>,
    /// A hunk of a file the human changed goes onto their text; the rest
    /// of the file's proposal stays against its old base (without that
    /// hunk), for the next rebase to settle.
    onto_human: Option<ProposalFile>,
}

impl Chosen {
    /// Hunk `which` of `agent`'s proposal, alone.
    fn one_hunk(
        store: &Store,
        agent: &str,
        all_files: &[ProposalFile],
        which: &HunkRef,
    ) -> Result<Chosen, AcceptError> {
        let diffs = proposal_diffs(store, agent)?;
        let (i, h) = find_hunk(&diffs, agent, which)?;
        let mut f = all_files[i].clone();
        let conflict = || AcceptError::Conflict(all_files[i].path.clone());
        let mut onto_human = None;
        let partial = if !diffs[i].human_hunks.is_empty() {
            let (merged, rest) = onto_humans_text(store, &diffs[i], &f, h)?;
            onto_human = Some(rest);
            f.base_hash = store.stable_entry(&f.path)?.map(|e| e.hash);
            Some(merged)
        } else if diffs[i].change == FileChange::Modified {
            let base = store.blob_text(f.base_hash.as_deref().unwrap_or_default())?;
            let (eol, final_nl) = diff::line_style(&base);
            let text = diff::apply(&base, &[h], eol, final_nl).ok_or_else(conflict)?;
            Some(store.put_blob(text.as_bytes())?)
        } else {
            None // an added or deleted file is taken whole
        };
        Ok(Chosen {
            files: vec![f],
            partial,
            onto_human,
        })
    }

    /// Writes the chosen files into stable (in `tx`) and notes in `out`
    /// what they are; returns the writes for the disk (a file open in a
    /// buffer is changed there instead).
    fn stage(
        &self,
        store: &Store,
        tx: &Connection,
        buffers: &HashMap<String, String>,
        out: &mut Accepted,
    ) -> Result<Vec<rootfs::Write>, AcceptError> {
        let mut disk = Vec::new();
        for f in &self.files {
            // The file on disk must still be what the proposal was made
            // against: an edit made outside Neovim that the watcher has not
            // reported yet is never written over.
            let expect = match &f.base_hash {
                Some(h) => Expect::Content(h.clone()),
                None => Expect::Absent,
            };
            let current = store.stable_entry_in(tx, &f.path)?;
            if current.as_ref().map(|e| &e.hash) != f.base_hash.as_ref() {
                return Err(AcceptError::Conflict(f.path.clone()));
            }
            let mode = current.as_ref().map_or(0o644, |e| e.mode);
            let path = f.path.clone();
            match self.partial.as_ref().or(f.new_hash.as_ref()) {
                Some(h) => {
                    let data = store::blob(tx, h)?;
                    let mtime = now_ms() * 1_000_000;
                    store::stable_set(tx, &path, h, data.len() as u64, mode, mtime)?;
                    match buffers.get(&path) {
                        Some(buf) => out.buffer_edits.push(BufferChange {
                            path: path.clone(),
                            base: buf.clone(),
                            wanted: String::from_utf8_lossy(&data).into_owned(),
                        }),
                        None => disk.push(rootfs::Write {
                            path: path.clone(),
                            data: Some(data),
                            mode,
                            expect,
                        }),
                    }
                }
                None => {
                    tx.execute("DELETE FROM stable WHERE path = ?1", [&path])
                        .map_err(StoreError::from)?;
                    // A loaded buffer's text is its ground truth, not the
                    // disk: the file is deleted whatever it holds.
                    let expect = match buffers.contains_key(&path) {
                        true => Expect::Anything,
                        false => expect,
                    };
                    disk.push(rootfs::Write {
                        path: path.clone(),
                        data: None,
                        mode,
                        expect,
                    });
                }
            }
            out.files.push(path);
        }
        Ok(disk)
    }

    /// What is left to review: the other files, and the rest of a partly
    /// accepted one (its base is now the new stable content).
    fn remaining(&self, all_files: &[ProposalFile]) -> Vec<ProposalFile> {
        let mut remaining: Vec<ProposalFile> = all_files
            .iter()
            .filter(|f| !self.files.iter().any(|taken| taken.path == f.path))
            .cloned()
            .collect();
        let (partial, first) = (&self.partial, self.files.first());
        if let Some(left) = self
            .onto_human
            .as_ref()
            .filter(|l| l.new_hash != l.base_hash)
        {
            remaining.push(left.clone());
        } else if let (Some(p), Some(f), None) = (partial, first, &self.onto_human) {
            if f.new_hash.as_ref() != Some(p) {
                remaining.push(ProposalFile {
                    path: f.path.clone(),
                    base_hash: Some(p.clone()),
                    new_hash: f.new_hash.clone(),
                });
            }
        }
        remaining.sort_by(|a, b| a.path.cmp(&b.path));
        remaining
    }
}

/// Hunk `h` of `f`'s proposal moved onto the human's changed text: the
/// blob of that text with the hunk, and the rest of the proposal (its
/// other hunks, against the old base).
fn onto_humans_text(
    store: &Store,
    file_diff: &FileDiff,
    f: &ProposalFile,
    h: diff::Hunk,
) -> Result<(String, ProposalFile), AcceptError> {
    let conflict = || AcceptError::Conflict(f.path.clone());
    let old_base = f.base_hash.clone();
    let base_text = store.blob_text(old_base.as_deref().unwrap_or_default())?;
    let rest: Vec<diff::Hunk> = file_diff
        .hunks
        .iter()
        .filter(|x| **x != h)
        .cloned()
        .collect();
    let shift = diff::shift_past(&file_diff.human_hunks, &h).ok_or_else(conflict)?;
    let current = store.stable_entry(&f.path)?.map(|e| e.hash);
    let current_hash = current.ok_or_else(conflict)?;
    let text = store.blob_text(&current_hash)?;
    let (eol, final_nl) = diff::line_style(&text);
    let moved = diff::Hunk {
        old_start: h.old_start.saturating_add_signed(shift),
        ..h
    };
    let merged = diff::apply(&text, &[moved], eol, final_nl).ok_or_else(conflict)?;
    let (eol, final_nl) = diff::line_style(&base_text);
    let left = diff::apply(&base_text, &rest, eol, final_nl).ok_or_else(conflict)?;
    let rest = ProposalFile {
        path: f.path.clone(),
        base_hash: old_base,
        new_hash: Some(store.put_blob(left.as_bytes())?),
    };
    Ok((store.put_blob(merged.as_bytes())?, rest))
}

/// After a multi-file write and its transaction: the journal goes once the
/// store committed; else what the write left is put back.
pub(crate) fn settle<T>(
    intent: Option<store::journal::Pending>,
    result: Result<T, AcceptError>,
    store: &Store,
    root: &Path,
) -> Result<T, AcceptError> {
    if let Some(intent) = intent {
        match &result {
            Ok(_) => intent.done(),
            Err(_) => intent.abandon(store, root),
        }
    }
    result
}

/// Drops hunk `which` from `agent`'s proposal; the
/// agent is `rejected` once nothing remains. Nothing the human sees changes.
/// Returns whether the proposal is now empty.
pub fn reject_hunk(store: &Store, agent: &str, which: &HunkRef) -> Result<bool, AcceptError> {
    let rec = store.agent(agent)?;
    if rec.state != AgentState::Completed {
        return Err(AcceptError::NotReady {
            id: agent.to_owned(),
            state: rec.state.as_str(),
            action: "reject",
        });
    }
    let diffs = proposal_diffs(store, agent)?;
    let (i, dropped) = find_hunk(&diffs, agent, which)?;
    let mut files = store.proposal_files(agent)?;
    let f = &files[i];
    let base = match &f.base_hash {
        Some(h) => store.blob_text(h)?,
        None => String::new(),
    };
    let keep: Vec<diff::Hunk> = diffs[i]
        .hunks
        .iter()
        .filter(|h| **h != dropped)
        .cloned()
        .collect();
    if keep.is_empty() || diffs[i].change != FileChange::Modified {
        files.remove(i);
    } else {
        let (eol, final_nl) = diff::line_style(&base);
        let text = diff::apply(&base, &keep, eol, final_nl)
            .ok_or_else(|| AcceptError::Conflict(f.path.clone()))?;
        files[i].new_hash = Some(store.put_blob(text.as_bytes())?);
    }
    store.transaction(|tx| {
        let mut rec = rec.clone();
        rec.updated_at = now_ms();
        rec.changed_files = files.iter().map(|f| f.path.clone()).collect();
        if files.is_empty() {
            rec.state = AgentState::Rejected;
            store::discard_changes(tx, agent)?;
        }
        store::agent_update(tx, &rec)?;
        store::set_proposal_files(tx, agent, &files)?;
        store::append_event(
            tx,
            Some(agent),
            "rejected",
            &serde_json::json!({"hunk": which}),
        )?;
        Ok(files.is_empty())
    })
}

/// Rejects `agent`'s proposal with `feedback` and queues the agent to try
/// again with its rejected attempt and the feedback in its prompt — at most
/// `max_attempts` times, then it is simply rejected. Returns the record to
/// run again, or `None` when it was rejected for good.
pub fn reject_with_feedback(
    store: &Store,
    agent: &str,
    feedback: &str,
    max_attempts: usize,
) -> Result<Option<store::AgentRecord>, AcceptError> {
    let rec = store.agent(agent)?;
    if rec.state != AgentState::Completed || rec.feedback.len() >= max_attempts {
        reject(store, agent, Some(feedback))?;
        return Ok(None);
    }
    let attempt = proposal_unified(store, agent)?;
    store.transaction(|tx| {
        let mut rec = rec.clone();
        rec.feedback.push(store::Feedback {
            attempt,
            feedback: feedback.to_owned(),
        });
        rec.state = AgentState::Queued;
        rec.summary = None;
        rec.conflicted = false;
        rec.changed_files.clear();
        rec.updated_at = now_ms();
        store::agent_update(tx, &rec)?;
        store::discard_changes(tx, agent)?;
        store::append_event(
            tx,
            Some(agent),
            "rejected",
            &serde_json::json!({"feedback": feedback, "retry": true}),
        )?;
        Ok(Some(rec))
    })
}

/// Rejects `agent`'s proposal (or stops it if still working): the overlay
/// is discarded; nothing the human sees changes.
pub fn reject(store: &Store, agent: &str, feedback: Option<&str>) -> Result<(), AcceptError> {
    let mut rec = store.agent(agent)?;
    let next = match rec.state {
        AgentState::Completed => AgentState::Rejected,
        AgentState::Queued | AgentState::Running => AgentState::Cancelled,
        other => {
            return Err(AcceptError::NotReady {
                id: agent.to_owned(),
                state: other.as_str(),
                action: "reject",
            })
        }
    };
    store.transaction(|tx| {
        rec.state = next;
        rec.updated_at = now_ms();
        store::agent_update(tx, &rec)?;
        store::discard_changes(tx, agent)?;
        store::append_event(
            tx,
            Some(agent),
            "rejected",
            &serde_json::json!({"feedback": feedback}),
        )?;
        Ok(())
    })
}

#[cfg(test)]
mod tests;
