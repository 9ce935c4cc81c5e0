//! A proposal as a client draws it: each file counted (to list it) or
//! spelled out with numbered hunks and their context (to show it).

use serde::Serialize;

use crate::diff::{FileChange, FileDiff};

/// One file of a proposal, counted rather than spelled out: what a client
/// lists and numbers without drawing it. Its hunks are fetched when a
/// buffer shows the file (a proposal of hundreds of files must not stall
/// the editor's main thread).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProposedFile {
    pub path: String,
    pub change: FileChange,
    /// Number of hunks; the first is numbered one more than the hunks of
    /// the files before it.
    pub hunk_count: usize,
    /// Lines added and removed.
    pub added: usize,
    pub removed: usize,
    /// The human changed this file since the proposal's base.
    pub conflicted: bool,
}

impl From<&FileDiff> for ProposedFile {
    fn from(f: &FileDiff) -> Self {
        ProposedFile {
            path: f.path.clone(),
            change: f.change,
            hunk_count: f.hunks.len(),
            added: f.hunks.iter().map(|h| h.new_lines.len()).sum(),
            removed: f.hunks.iter().map(|h| h.old_lines.len()).sum(),
            conflicted: !f.human_hunks.is_empty(),
        }
    }
}

/// A hunk with its stable key, as a client draws it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HunkView {
    /// What an accept or reject of this hunk names ([`crate::diff::HunkRef::Key`]).
    pub key: String,
    /// Its number in the proposal (from 1, in file order).
    pub number: usize,
    pub old_start: usize,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// The unchanged lines right above it and right below it (up to
    /// [`CONTEXT_LINES`] each; filled where a client shows the hunk alone).
    pub before: Vec<String>,
    pub after: Vec<String>,
}

/// Lines of context around a hunk shown alone, as `:Chimera diff` and
/// unified diffs show them.
pub const CONTEXT_LINES: usize = 3;

/// One file of a proposal spelled out: its hunks and, when the human
/// changed it since, theirs.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileView {
    pub path: String,
    pub change: FileChange,
    pub hunks: Vec<HunkView>,
    pub human_hunks: Vec<crate::diff::Hunk>,
}

impl FileView {
    /// This file's hunks with the lines of `base` (the text the proposal
    /// was made against) right around each.
    pub fn with_context(mut self, base: &str) -> Self {
        let lines: Vec<&str> = base.lines().collect();
        let owned = |r: std::ops::Range<usize>| lines[r].iter().map(|l| (*l).to_owned()).collect();
        for h in &mut self.hunks {
            let start = h.old_start.min(lines.len());
            let end = (start + h.old_lines.len()).min(lines.len());
            h.before = owned(start.saturating_sub(CONTEXT_LINES)..start);
            h.after = owned(end..(end + CONTEXT_LINES).min(lines.len()));
        }
        self
    }

    /// File `index` of `files` (a whole proposal, in order), numbered as in it.
    pub fn of(files: &[FileDiff], index: usize) -> Option<FileView> {
        let f = files.get(index)?;
        let before: usize = files[..index].iter().map(|f| f.hunks.len()).sum();
        Some(FileView {
            path: f.path.clone(),
            change: f.change,
            hunks: f
                .hunks
                .iter()
                .zip(&f.keys)
                .enumerate()
                .map(|(i, (h, key))| HunkView {
                    key: key.clone(),
                    number: before + i + 1,
                    old_start: h.old_start,
                    old_lines: h.old_lines.clone(),
                    new_lines: h.new_lines.clone(),
                    before: Vec::new(),
                    after: Vec::new(),
                })
                .collect(),
            human_hunks: f.human_hunks.clone(),
        })
    }
}
