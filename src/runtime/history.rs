//! Snapshots, rollback, the effect log and forks in the runtime.

use std::collections::HashMap;
use std::sync::Arc;

use super::{start_agent, Core};
use crate::agent::Job;
use crate::messages::{BufferText, Level, ToEditor};
use crate::rollback;
use crate::store::AgentRecord;

impl Core {
    /// Sends the list of snapshots to the editor.
    pub(super) fn send_snapshots(&self) {
        match self.store.snapshots() {
            Ok(snapshots) => self.sink.send(ToEditor::Snapshots { snapshots }),
            Err(e) => self.notify(Level::Warn, format!("Chimera: cannot list snapshots: {e}")),
        }
    }

    /// Takes a snapshot; `None` when it failed (the human is told).
    pub(super) fn take_snapshot(&self, id: Option<&str>, message: &str) -> Option<String> {
        match self.store.snapshot_create_as(id, message) {
            Ok(s) => {
                self.send_snapshots();
                Some(s.id)
            }
            Err(e) => {
                self.notify(
                    Level::Error,
                    format!("Chimera: cannot snapshot the project: {e}"),
                );
                None
            }
        }
    }
}

/// `:Chimera rollback {id} [--dry-run]`.
pub(super) fn rollback(core: &Arc<Core>, id: &str, dry_run: bool, buffers: Vec<BufferText>) {
    let reply = |ok: bool, message: String| {
        core.sink.send(ToEditor::Rollback {
            id: id.to_owned(),
            dry_run,
            ok,
            message,
        })
    };
    let plan = match rollback::plan(&core.store, id) {
        Ok(p) => p,
        Err(e) => return reply(false, format!("Chimera: cannot roll back to {id}: {e}")),
    };
    if dry_run {
        return reply(true, plan.describe());
    }
    let buffers: HashMap<String, String> = buffers
        .into_iter()
        .filter_map(|b| core.rel(&b.path).map(|p| (p.to_string(), b.text)))
        .collect();
    match rollback::apply(&core.store, &core.root, &plan, &buffers) {
        Ok(applied) => {
            for (path, text) in &applied.buffers {
                let lines: Vec<String> = text
                    .strip_suffix('\n')
                    .unwrap_or(text)
                    .split('\n')
                    .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
                    .collect();
                let end = buffers
                    .get(path)
                    .map_or(0, |t| t.strip_suffix('\n').unwrap_or(t).split('\n').count());
                core.sink.send(ToEditor::EditBuffer {
                    id: format!("rollback-{id}"),
                    path: core.abs(path),
                    start: 0,
                    end,
                    lines,
                });
            }
            for p in plan.restore.iter().chain(&plan.delete) {
                core.stable_changed(p);
            }
            core.send_snapshots();
            let undo = applied
                .before
                .map(|s| format!("\n(:Chimera rollback {} undoes it.)", s.id))
                .unwrap_or_default();
            reply(true, format!("{}{undo}", plan.describe()));
        }
        Err(e) => reply(false, format!("Chimera: rollback to {id} failed, nothing was changed on disk after the error: {e}")),
    }
}

/// `:Chimera fork {snapshot} {task}`: an agent whose overlay starts as the
/// project was in the snapshot, so its proposal takes the project there
/// plus its own change.
pub(super) fn fork(core: &Arc<Core>, id: String, snapshot: &str, task: String) {
    let result = (|| -> Result<(), String> {
        let manifest = core
            .store
            .snapshot_manifest(snapshot)
            .map_err(|e| e.to_string())?;
        let rec = AgentRecord {
            owner: core.owner.clone(),
            context: Some(format!("forked from snapshot {snapshot}")),
            ..AgentRecord::new(id.clone(), task.clone())
        };
        core.store.agent_insert(&rec).map_err(|e| e.to_string())?;
        let now: HashMap<String, String> = core
            .store
            .stable_hashes()
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        let mut in_snapshot = std::collections::HashSet::new();
        for e in &manifest {
            in_snapshot.insert(e.path.clone());
            let base = now.get(&e.path);
            if base != Some(&e.hash) && !e.too_large {
                core.store
                    .agent_base_set(&id, &e.path, Some(&e.hash), base.map(String::as_str))
                    .map_err(|e| e.to_string())?;
            }
        }
        for (path, hash) in &now {
            if !in_snapshot.contains(path) {
                core.store
                    .agent_base_set(&id, path, None, Some(hash))
                    .map_err(|e| e.to_string())?;
            }
        }
        core.store.overlay_clear(&id).map_err(|e| e.to_string())
    })();
    match result {
        Ok(()) => {
            core.send_agent(&id);
            start_agent(
                core,
                Job {
                    id,
                    task,
                    ..Job::default()
                },
            );
        }
        Err(e) => core.notify(
            Level::Error,
            format!("Chimera: cannot fork snapshot {snapshot}: {e}"),
        ),
    }
}
