//! Forks in the runtime: an agent that starts from a snapshot. (Snapshots
//! and rollbacks are transitions of [`crate::lifecycle`].)

use std::sync::Arc;

use super::{start_agent, Core};
use crate::agent::Job;
use crate::store::AgentRecord;
use crate::task::TaskSpec;

/// `:Chimera fork {snapshot} {task}`: runs on the lifecycle thread.
pub(super) fn fork(core: &Arc<Core>, id: String, snapshot: &str, task: String) {
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
    let created = !out.changes.is_empty();
    core.publish(out);
    if created {
        start_agent(
            core,
            Job {
                id,
                spec,
                ..Job::default()
            },
        );
    }
}
