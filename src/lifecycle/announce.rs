//! The one place where an [`Outcome`] becomes the messages the editor
//! receives, in this order: the snapshots (taken before the change), buffer
//! edits (the text changes first), then
//! each agent with its proposal in the same message (a state and the
//! proposal it makes reviewable never arrive apart), then verdicts, then
//! replies and notices.

use std::path::Path;

use super::{Outcome, Shown, Verdict};
use crate::diff::FileDiff;
use crate::messages::{AgentView, ToEditor};

fn abs(root: &Path, path: &str) -> String {
    root.join(path).to_string_lossy().into_owned()
}

/// The messages that tell the editor about `out`; paths made absolute under `root`.
pub fn announce(out: &Outcome, root: &Path) -> Vec<ToEditor> {
    let mut msgs = Vec::new();
    if let Some(snapshots) = &out.snapshots {
        msgs.push(ToEditor::Snapshots {
            snapshots: snapshots.clone(),
        });
    }
    for e in &out.buffer_edits {
        msgs.push(ToEditor::EditBuffer {
            id: e.agent.clone(),
            path: abs(root, &e.path),
            start: e.start,
            end: e.end,
            lines: e.lines.clone(),
            expect: e.base.clone(),
        });
    }
    for c in &out.changes {
        let (proposal, cleared) = match &c.shown {
            Shown::Unchanged => (None, false),
            Shown::Cleared => (None, true),
            Shown::Proposal(files) => (
                Some(
                    files
                        .iter()
                        .map(|f| FileDiff {
                            path: abs(root, &f.path),
                            ..f.clone()
                        })
                        .collect(),
                ),
                false,
            ),
        };
        msgs.push(ToEditor::Agent {
            agent: AgentView::from(&c.agent),
            proposal,
            cleared,
        });
    }
    for (id, v) in &out.verdicts {
        let (accepted, files, hunk) = match v {
            Verdict::Accepted { files, hunk, .. } => (
                true,
                files.iter().map(|f| abs(root, f)).collect(),
                hunk.clone(),
            ),
            Verdict::Rejected { hunk, .. } => (false, vec![], hunk.clone()),
        };
        msgs.push(ToEditor::Resolved {
            id: id.clone(),
            accepted,
            files,
            hunk,
        });
    }
    msgs.extend(out.replies.iter().cloned());
    for (level, message) in &out.notices {
        msgs.push(ToEditor::Notify {
            level: *level,
            message: message.clone(),
        });
    }
    msgs
}
