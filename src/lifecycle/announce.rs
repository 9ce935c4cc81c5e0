//! The one place where an [`Outcome`] becomes what clients are told, in
//! this order: the editor's buffer edits (the text changes first), then
//! the snapshots (taken before the change), each agent with its proposal
//! in the same event (a state and the proposal it makes reviewable never
//! arrive apart), then verdicts, then replies and notices.

use super::{Outcome, Shown, Verdict};
use crate::event::AgentView;
use crate::event::Event;
use crate::port::ForEditor;

/// What `out` tells: the edits only the editor makes, then the events
/// every client hears.
#[derive(Debug, Default)]
pub struct Announced {
    /// Accepted changes to apply to loaded buffers.
    pub edits: Vec<ForEditor>,
    pub events: Vec<Event>,
}

/// What `out` tells.
pub fn announce(out: &Outcome) -> Announced {
    let edits = out
        .buffer_edits
        .iter()
        .map(|e| ForEditor::EditBuffer {
            id: e.agent.clone(),
            path: e.path.clone(),
            start: e.start,
            end: e.end,
            lines: e.lines.clone(),
            expect: e.base.clone(),
            write: e.write,
        })
        .collect();
    let mut events = Vec::new();
    if let Some(snapshots) = &out.snapshots {
        events.push(Event::Snapshots {
            snapshots: snapshots.clone(),
        });
    }
    for c in &out.changes {
        let (proposal, cleared) = match &c.shown {
            Shown::Unchanged => (None, false),
            Shown::Cleared => (None, true),
            Shown::Proposal(files) => (Some(files.clone()), false),
        };
        events.push(Event::Agent {
            agent: AgentView::from(&c.agent),
            proposal,
            cleared,
        });
    }
    for (id, v) in &out.verdicts {
        let (accepted, files, unsaved, hunk) = match v {
            Verdict::Accepted {
                files,
                unsaved,
                hunk,
                ..
            } => (true, files.clone(), unsaved.clone(), hunk.clone()),
            Verdict::Rejected { hunk, .. } => (false, vec![], vec![], hunk.clone()),
        };
        events.push(Event::Resolved {
            id: id.clone(),
            accepted,
            files,
            unsaved,
            hunk,
        });
    }
    events.extend(out.replies.iter().cloned());
    for (level, message) in &out.notices {
        events.push(Event::notice(*level, message.clone()));
    }
    Announced { edits, events }
}
