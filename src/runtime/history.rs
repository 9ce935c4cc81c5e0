//! Forks in the runtime: an agent that starts from a snapshot. (Snapshots
//! and rollbacks are transitions of [`crate::lifecycle`].)

use std::sync::Arc;

use super::{start_agent, Core};
use crate::agent::Job;
use crate::lifecycle::Outcome;
use crate::store::AgentRecord;
use crate::task::TaskSpec;

/// `:Chimera fork {snapshot} {task}`, a transition: runs on the lifecycle
/// thread; a snapshot that cannot be forked is the client's refusal.
pub(super) fn fork(core: &Arc<Core>, id: String, snapshot: &str, task: String) -> Outcome {
    let spec = TaskSpec::new(task);
    // The record says where it came from; the model is not told.
    let rec = AgentRecord {
        owner: core.owner.clone(),
        ..AgentRecord::new(
            id.clone(),
            TaskSpec {
                context: Some(format!("forked from snapshot {snapshot}")),
                ..spec.clone()
            },
        )
    };
    let out = core.lifecycle.fork(rec, snapshot);
    if !out.changes.is_empty() {
        start_agent(
            core,
            Job {
                id,
                spec,
                ..Job::default()
            },
        );
    }
    out
}
