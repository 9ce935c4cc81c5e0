//! The lifecycle's steps on the project's history: snapshots, the
//! branches that name them, rollbacks to them and agents forked from them.

use std::collections::HashMap;

use super::{BufferEdit, Lifecycle, Outcome, Shown};
use crate::event::Event;
use crate::event::Level;
use crate::store::AgentRecord;

impl Lifecycle {
    /// Snapshots the project; `None` as the id lets the store choose one.
    pub fn snapshot(&self, id: Option<&str>, message: &str) -> Outcome {
        match self
            .store
            .snapshot_create_as(id, message)
            .and_then(|_| self.store.snapshots())
        {
            Ok(snapshots) => Outcome {
                snapshots: Some(snapshots),
                ..Outcome::default()
            },
            Err(e) => Outcome::refuse(&e, format!("cannot snapshot the project: {e}")),
        }
    }

    /// Points branch `name` at `snapshot` (default: the newest), creating
    /// it or moving it there.
    pub fn branch(&self, name: &str, snapshot: Option<&str>) -> Outcome {
        match self
            .store
            .branch_set(name, snapshot)
            .and_then(|b| Ok((b, self.store.snapshots()?)))
        {
            Ok((b, snapshots)) => Outcome {
                snapshots: Some(snapshots),
                notices: vec![(
                    Level::Info,
                    format!(
                        "Chimera: branch {} -> snapshot {} (fork and rollback take its name)",
                        b.name, b.snapshot_id
                    ),
                )],
                ..Outcome::default()
            },
            Err(e) => Outcome::refuse(&e, e.to_string()),
        }
    }

    /// Rolls the project back to snapshot `id` (with `dry_run`, only says
    /// what would change). `buffers`: the loaded buffers' texts, by path.
    pub fn rollback(&self, id: &str, dry_run: bool, buffers: &HashMap<String, String>) -> Outcome {
        let reply = |ok: bool, report: String| Event::Rollback {
            id: id.to_owned(),
            dry_run,
            ok,
            report,
        };
        let plan = match crate::rollback::plan(&self.store, id) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("cannot roll back to {id}: {e}");
                return Outcome::reply(reply(false, why));
            }
        };
        if dry_run {
            return Outcome::reply(reply(true, plan.describe(true)));
        }
        let applied = match crate::rollback::apply(&self.store, &self.root, &plan, buffers) {
            Ok(a) => a,
            Err(e) => {
                let why = format!("rollback to {id} failed, nothing was changed on disk: {e}");
                return Outcome::reply(reply(false, why));
            }
        };
        let mut out = Outcome::default();
        for (path, text) in &applied.buffers {
            let now = buffers.get(path).map_or("", String::as_str);
            out.buffer_edits.push(BufferEdit::between(
                &format!("rollback-{id}"),
                path,
                now,
                text,
            ));
        }
        for p in plan.restore.iter().chain(&plan.delete) {
            out = out.then(self.stable_changed(p));
        }
        out.snapshots = self.store.snapshots().ok();
        let written: Vec<String> = plan
            .restore
            .iter()
            .chain(&plan.delete)
            .filter(|p| !buffers.contains_key(*p))
            .cloned()
            .collect();
        out.replies.push(Event::FilesWritten { paths: written });
        let undo = applied
            .before
            .map(|s| format!("\n(A rollback to {} undoes it.)", s.id))
            .unwrap_or_default();
        let in_buffers: Vec<String> = applied.buffers.iter().map(|(p, _)| p.clone()).collect();
        out.replies.push(reply(
            true,
            format!("{}{undo}", plan.describe_with(false, &in_buffers)),
        ));
        out
    }

    /// A new agent whose overlay starts as the project was in `snapshot`,
    /// so its proposal takes the project there plus its own change.
    pub fn fork(&self, rec: AgentRecord, snapshot: &str) -> Outcome {
        let id = rec.id.clone();
        let result = (|| -> Result<(), crate::store::StoreError> {
            let manifest = self.store.snapshot_manifest(snapshot)?;
            self.store.agent_insert(&rec)?;
            let now: HashMap<String, String> = self.store.stable_hashes()?.into_iter().collect();
            let mut in_snapshot = std::collections::HashSet::new();
            for e in &manifest {
                in_snapshot.insert(e.path.clone());
                let base = now.get(&e.path);
                if base != Some(&e.hash) && !e.too_large {
                    self.store.agent_base_set(
                        &id,
                        &e.path,
                        Some(&e.hash),
                        base.map(String::as_str),
                    )?;
                }
            }
            for (path, hash) in &now {
                if !in_snapshot.contains(path) {
                    self.store.agent_base_set(&id, path, None, Some(hash))?;
                }
            }
            self.store.overlay_clear(&id)
        })();
        match result {
            Ok(()) => self.change(&id, Shown::Unchanged),
            Err(e @ crate::store::StoreError::NoSnapshot(_)) => Outcome::refuse(
                &e,
                format!("no snapshot {snapshot}; the history lists them (:Chimera history, chimera history)"),
            ),
            Err(e) => Outcome::refuse(&e, format!("cannot fork snapshot {snapshot}: {e}")),
        }
    }
}
