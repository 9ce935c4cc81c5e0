//! An agent's checkpoints of its own overlay (seed 004's snapshot and
//! rollback, for agents): a checkpoint copies the overlay's rows — file
//! contents are blobs already — and a rollback puts them back. The human's
//! files are never touched.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{now_ms, Result, Store, StoreError};

/// One checkpoint of an agent's overlay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    pub name: String,
    pub created_at: i64,
    /// Files the overlay held (changed, created or deleted).
    pub files: usize,
    /// The last effect before it: later effects of the agent happened after.
    pub effect_seq: i64,
}

impl Store {
    /// Checkpoints `agent`'s overlay as `name` (taken again if it exists).
    pub fn checkpoint_take(&self, agent: &str, name: &str) -> Result<Checkpoint> {
        self.transaction(|tx| {
            let effect_seq: i64 =
                tx.query_row("SELECT COALESCE(MAX(seq), 0) FROM effects", [], |r| {
                    r.get(0)
                })?;
            let created_at = now_ms();
            tx.execute(
                "DELETE FROM checkpoints WHERE agent_id = ?1 AND name = ?2",
                params![agent, name],
            )?;
            tx.execute(
                "INSERT INTO checkpoints (agent_id, name, created_at, effect_seq) VALUES (?1, ?2, ?3, ?4)",
                params![agent, name, created_at, effect_seq],
            )?;
            let files = tx.execute(
                "INSERT INTO checkpoint_files (agent_id, name, path, hash, base_hash)
                 SELECT agent_id, ?2, path, hash, base_hash FROM overlays WHERE agent_id = ?1",
                params![agent, name],
            )?;
            Ok(Checkpoint {
                name: name.to_owned(),
                created_at,
                files,
                effect_seq,
            })
        })
    }

    /// Brings `agent`'s overlay back to checkpoint `name`: what it wrote
    /// since is gone, what it deleted since is back. The checkpoint stays.
    pub fn checkpoint_restore(&self, agent: &str, name: &str) -> Result<Checkpoint> {
        let found = self.checkpoint_find(agent, name)?;
        let Some(found) = found else {
            let have: Vec<String> = self
                .checkpoints(agent)?
                .into_iter()
                .map(|c| c.name)
                .collect();
            return Err(StoreError::NoCheckpoint {
                name: name.to_owned(),
                have: if have.is_empty() {
                    "none yet (snapshot() takes one)".into()
                } else {
                    have.join(", ")
                },
            });
        };
        self.transaction(|tx| {
            tx.execute("DELETE FROM overlays WHERE agent_id = ?1", [agent])?;
            tx.execute(
                "INSERT INTO overlays (agent_id, path, hash, base_hash)
                 SELECT agent_id, path, hash, base_hash FROM checkpoint_files
                 WHERE agent_id = ?1 AND name = ?2",
                params![agent, name],
            )?;
            Ok::<_, StoreError>(())
        })?;
        Ok(found)
    }

    pub fn checkpoint_find(&self, agent: &str, name: &str) -> Result<Option<Checkpoint>> {
        Ok(self
            .conn()
            .prepare_cached(&format!("{SELECT} WHERE c.agent_id = ?1 AND c.name = ?2"))?
            .query_row(params![agent, name], from_row)
            .optional()?)
    }

    /// `agent`'s checkpoints, oldest first.
    pub fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "{SELECT} WHERE c.agent_id = ?1 ORDER BY c.created_at, c.rowid"
        ))?;
        let rows = stmt.query_map([agent], from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

const SELECT: &str = "SELECT c.name, c.created_at, c.effect_seq,
    (SELECT COUNT(*) FROM checkpoint_files f WHERE f.agent_id = c.agent_id AND f.name = c.name)
    FROM checkpoints c";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Checkpoint> {
    Ok(Checkpoint {
        name: r.get(0)?,
        created_at: r.get(1)?,
        effect_seq: r.get(2)?,
        files: r.get::<_, i64>(3)? as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::Overlay;
    use crate::paths::ProjectPath;
    use crate::store::AgentRecord;

    #[test]
    fn a_rollback_brings_the_overlay_back_and_never_the_humans_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .stable_put("a.py", b"a = 1\n", 0o644, 0, 1 << 20)
            .unwrap();
        store
            .stable_put("b.py", b"b = 1\n", 0o644, 0, 1 << 20)
            .unwrap();
        for id in ["ag", "other"] {
            store.agent_insert(&AgentRecord::new(id, "t")).unwrap();
        }
        let p = |s: &str| ProjectPath::parse(s).unwrap();
        let ov = Overlay::new(&store, "ag", 1 << 20);
        ov.write(&p("a.py"), b"a = 2\n").unwrap();
        let first = store.checkpoint_take("ag", "first").unwrap();
        assert_eq!(first.files, 1);
        ov.write(&p("a.py"), b"a = 3\n").unwrap();
        ov.write(&p("new.py"), b"n = 1\n").unwrap();
        ov.delete(&p("b.py")).unwrap();
        Overlay::new(&store, "other", 1 << 20)
            .write(&p("a.py"), b"other\n")
            .unwrap();

        let back = store.checkpoint_restore("ag", "first").unwrap();
        assert_eq!(back.name, "first");
        assert_eq!(ov.read_text(&p("a.py")).unwrap(), "a = 2\n");
        assert!(!ov.exists(&p("new.py")).unwrap());
        assert_eq!(ov.read_text(&p("b.py")).unwrap(), "b = 1\n");
        // The checkpoint stays: a second try can go back to it again.
        assert_eq!(store.checkpoints("ag").unwrap().len(), 1);
        // Another agent's overlay and the human's files are as they were.
        assert_eq!(
            Overlay::new(&store, "other", 1 << 20)
                .read_text(&p("a.py"))
                .unwrap(),
            "other\n"
        );
        let human = store.stable_entry("a.py").unwrap().unwrap();
        assert_eq!(store.blob(&human.hash).unwrap(), b"a = 1\n");
        // No checkpoint of that name: the error names those there are.
        let err = store.checkpoint_restore("ag", "nosuch").unwrap_err();
        assert!(err.to_string().contains("are: first"), "{err}");
        let err = store.checkpoint_restore("other", "first").unwrap_err();
        assert!(err.to_string().contains("none yet"), "{err}");
        // Purging keeps what only a checkpoint still needs.
        ov.write(&p("a.py"), b"a = 9\n").unwrap();
        store.purge(0).unwrap();
        store.checkpoint_restore("ag", "first").unwrap();
        assert_eq!(ov.read_text(&p("a.py")).unwrap(), "a = 2\n");
    }
}
