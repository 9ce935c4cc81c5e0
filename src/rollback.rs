//! Rolling the project back to a snapshot: which files change, restoring
//! them (loaded buffers by the editor, the others on disk atomically) and
//! the stable layer, and which effects since the snapshot cannot be undone.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use crate::accept::AcceptError;
use crate::rootfs::{self, Expect};
use crate::store::{self, Effect, Snapshot, Store};

/// What a rollback does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub snapshot: Option<Snapshot>,
    /// Files that get the snapshot's content (changed or gone since).
    pub restore: Vec<String>,
    /// Files created since the snapshot: deleted.
    pub delete: Vec<String>,
    /// Files that cannot be restored, with the reason.
    pub skipped: Vec<(String, String)>,
    /// What happened outside the project since the snapshot.
    pub effects: Vec<Effect>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.restore.is_empty() && self.delete.is_empty()
    }

    /// The plan in plain words, for the human: what a rollback did, or
    /// with `dry_run` what it would do.
    pub fn describe(&self, dry_run: bool) -> String {
        self.describe_with(dry_run, &[])
    }

    /// [`Plan::describe`] of a rollback done, whose files `in_buffers` were
    /// restored in open buffers: those wait for a write, and it says so.
    pub fn describe_with(&self, dry_run: bool, in_buffers: &[String]) -> String {
        let unsaved = |p: &String| in_buffers.contains(p);
        let mut out = String::new();
        let id = self.snapshot.as_ref().map_or("?", |s| s.id.as_str());
        if self.is_empty() {
            out.push_str(&format!(
                "The project is as in snapshot {id}; nothing to restore."
            ));
        } else {
            out.push_str(&format!(
                "Rollback to {id}: restore {} file(s), delete {} file(s).",
                self.restore.len(),
                self.delete.len()
            ));
            for p in &self.restore {
                out.push_str(&format!("\n  restore {p}"));
                if unsaved(p) {
                    out.push_str(" (in its open buffer, not yet written)");
                }
            }
            for p in &self.delete {
                out.push_str(&format!("\n  delete  {p}"));
                if unsaved(p) {
                    out.push_str(" (emptied in its open buffer, not yet deleted)");
                }
            }
        }
        for (p, why) in &self.skipped {
            out.push_str(&format!("\n  cannot restore {p}: {why}"));
        }
        let waiting = self
            .restore
            .iter()
            .chain(&self.delete)
            .filter(|p| unsaved(p))
            .count();
        if waiting > 0 {
            out.push_str(&format!(
                "\n{waiting} file(s) were restored in their open buffers: on disk they change when you write them (:w); u in a buffer undoes its part."
            ));
        }
        if self.effects.is_empty() {
            out.push_str(match (dry_run, waiting) {
                (true, _) => "\nNo outside effect happened since; everything would be undone.",
                (false, 0) => "\nNo outside effect happened since; everything is undone.",
                (false, _) => "\nNo outside effect happened since; everything is undone once those buffers are written.",
            });
        } else {
            let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
            for e in &self.effects {
                *kinds.entry(e.kind.as_str()).or_default() += 1;
            }
            let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            out.push_str(&format!(
                "\nThese effects since the snapshot cannot be undone: {} (the effect log lists them: :Chimera effects, chimera effects).",
                list.join(", ")
            ));
        }
        out
    }
}

/// What rolling back to snapshot `id` would change now.
pub fn plan(store: &Store, id: &str) -> Result<Plan, AcceptError> {
    let snapshot = store
        .snapshot(id)?
        .ok_or_else(|| store::StoreError::NoSnapshot(id.to_owned()))?;
    let manifest = store.snapshot_manifest(id)?;
    let now: HashMap<String, (String, u32)> = store
        .stable_modes()?
        .into_iter()
        .map(|(p, h, m)| (p, (h, m)))
        .collect();
    let mut plan = Plan {
        snapshot: Some(snapshot),
        effects: store.effects_after_snapshot(id)?,
        ..Plan::default()
    };
    let mut in_snapshot = std::collections::HashSet::new();
    for e in &manifest {
        in_snapshot.insert(e.path.as_str());
        match now.get(&e.path) {
            Some((h, m)) if *h == e.hash && *m == e.mode => {}
            _ if e.too_large => plan.skipped.push((
                e.path.clone(),
                "it was too large to keep (sync.max_file_bytes)".into(),
            )),
            _ => plan.restore.push(e.path.clone()),
        }
    }
    plan.delete = now
        .keys()
        .filter(|p| !in_snapshot.contains(p.as_str()))
        .cloned()
        .collect();
    plan.delete.sort();
    Ok(plan)
}

/// The result of a rollback.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The snapshot taken just before, so the rollback itself can be undone.
    pub before: Option<Snapshot>,
    /// Loaded buffers to set to this text (one undoable change each).
    pub buffers: Vec<(String, String)>,
}

/// Rolls back to the snapshot of `plan`: a snapshot of the present first,
/// then every file not loaded in a buffer written (or deleted) on disk,
/// atomically, then the stable layer. Loaded buffers (`buffers`: path →
/// their text) are returned for the editor to set.
pub fn apply(
    store: &Store,
    root: &Path,
    plan: &Plan,
    buffers: &HashMap<String, String>,
) -> Result<Applied, AcceptError> {
    let Some(snapshot) = &plan.snapshot else {
        return Ok(Applied::default());
    };
    let before = store.snapshot_create(&format!("before rollback to {}", snapshot.id))?;
    let manifest: HashMap<String, store::ManifestEntry> = store
        .snapshot_manifest(&snapshot.id)?
        .into_iter()
        .map(|e| (e.path.clone(), e))
        .collect();
    // Each file on disk must still hold what the stable layer says it
    // does: a change the watcher has not reported yet is never lost.
    let expect = |p: &str| -> Result<Expect, AcceptError> {
        Ok(match store.stable_entry(p)? {
            Some(e) if e.too_large => Expect::Anything,
            Some(e) => Expect::Content(e.hash),
            None => Expect::Absent,
        })
    };
    let mut disk: Vec<rootfs::Write> = Vec::new();
    let mut out = Applied {
        before: Some(before),
        buffers: vec![],
    };
    // Each restored file's size, for the stable layer: its blob is read
    // here once.
    let mut sizes: HashMap<&str, u64> = HashMap::new();
    for p in &plan.restore {
        let Some(e) = manifest.get(p) else { continue };
        let data = store.blob(&e.hash)?;
        sizes.insert(p, data.len() as u64);
        if buffers.contains_key(p) {
            out.buffers
                .push((p.clone(), String::from_utf8_lossy(&data).into_owned()));
        } else {
            disk.push(rootfs::Write {
                path: p.clone(),
                data: Some(data),
                mode: e.mode,
                expect: expect(p)?,
            });
        }
    }
    for p in &plan.delete {
        let expect = if buffers.contains_key(p) {
            Expect::Anything
        } else {
            expect(p)?
        };
        disk.push(rootfs::Write {
            path: p.clone(),
            data: None,
            mode: 0o644,
            expect,
        });
    }
    let mut intent = None;
    let written = rootfs::write_all_when(root, &disk, || {
        let what = format!("the rollback to snapshot {}", snapshot.id);
        intent = store.intend_writes(&what, &disk)?;
        Ok::<(), AcceptError>(())
    })
    .and_then(|()| set_stable(store, plan, &manifest, &sizes));
    crate::accept::settle(intent, written, store, root)?;
    Ok(out)
}

/// The stable layer as the rollback left the disk: the restored files
/// (`sizes`: each one's size) at the snapshot's content, the deleted ones
/// gone.
fn set_stable(
    store: &Store,
    plan: &Plan,
    manifest: &HashMap<String, store::ManifestEntry>,
    sizes: &HashMap<&str, u64>,
) -> Result<(), AcceptError> {
    let now = store::now_ms() * 1_000_000;
    store.transaction(|tx| {
        for p in &plan.restore {
            if let (Some(e), Some(&size)) = (manifest.get(p), sizes.get(p.as_str())) {
                store::stable_set(tx, p, &e.hash, size, e.mode, now)?;
            }
        }
        for p in &plan.delete {
            tx.execute("DELETE FROM stable WHERE path = ?1", [p])
                .map_err(store::StoreError::from)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests;
