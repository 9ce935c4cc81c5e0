//! The cores that use the store (instances and their heartbeats), the
//! agents a stopped core left (recovery) and what ages out (retention).

use super::*;

/// Setting key: when unreferenced blobs were last collected (ms).
pub(super) const BLOBS_COLLECTED_AT: &str = "blobs_collected_at";

impl Store {
    /// Records this Neovim instance as alive (call again as a heartbeat).
    pub fn instance_heartbeat(&self, owner: &str) -> Result<()> {
        self.conn().execute(
            "INSERT INTO instances (owner, pid, started_at, heartbeat, host) VALUES (?1, ?2, ?3, ?3, ?4)
             ON CONFLICT (owner) DO UPDATE SET heartbeat = excluded.heartbeat",
            params![owner, std::process::id(), now_ms(), this_host()],
        )?;
        Ok(())
    }

    /// Forgets this instance (a clean exit).
    pub fn instance_remove(&self, owner: &str) -> Result<()> {
        self.conn()
            .execute("DELETE FROM instances WHERE owner = ?1", [owner])?;
        Ok(())
    }

    /// Takes over the agents of instances that stopped (no heartbeat for
    /// `stale_ms`): queued ones are re-queued under `me`; running ones are
    /// re-queued once, then failed with the reason. Agents of live
    /// instances are not touched. Returns the agents `me` must run.
    pub fn recover(&self, me: &str, stale_ms: i64) -> Result<Vec<AgentRecord>> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let now = now_ms();
        let alive: std::collections::HashSet<String> = {
            let mut stmt =
                tx.prepare("SELECT owner, pid, host FROM instances WHERE heartbeat >= ?1")?;
            let rows = stmt.query_map([now - stale_ms], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            let rows: Vec<_> = rows.collect::<Result<_, _>>()?;
            // A fresh heartbeat of a process that is gone (killed, crashed)
            // is no sign of life: its agents are taken over at once.
            rows.into_iter()
                .filter(|(_, pid, host)| *host != this_host() || process_runs(*pid))
                .map(|(owner, _, _)| owner)
                .collect()
        };
        let candidates: Vec<AgentRecord> = {
            let mut stmt = tx.prepare(&format!(
                "{AGENT_SELECT} WHERE state IN ('queued', 'running') ORDER BY created_at"
            ))?;
            let rows = stmt.query_map([], agent_from_row)?;
            rows.collect::<Result<_, _>>()?
        };
        let mut runnable = Vec::new();
        for mut rec in candidates {
            // Mine already (spawned since this start), or a live instance's.
            if rec.owner == me || alive.contains(&rec.owner) {
                continue;
            }
            rec.updated_at = now;
            match rec.state {
                AgentState::Running if rec.recoveries >= 1 => {
                    rec.state = AgentState::Failed;
                    rec.error = Some("Neovim stopped twice while this agent ran; it was not started a third time".into());
                    discard_changes(&tx, &rec.id)?;
                    agent_update(&tx, &rec)?;
                    continue;
                }
                AgentState::Running => {
                    rec.recoveries += 1;
                    rec.state = AgentState::Queued;
                    discard_changes(&tx, &rec.id)?;
                }
                _ => {}
            }
            rec.owner = me.to_owned();
            agent_update(&tx, &rec)?;
            append_event(
                &tx,
                Some(&rec.id),
                "recovered",
                &serde_json::json!({"recoveries": rec.recoveries}),
            )?;
            runnable.push(rec);
        }
        tx.execute(
            "DELETE FROM instances WHERE heartbeat < ?1",
            [now - stale_ms],
        )?;
        tx.commit()?;
        Ok(runnable)
    }

    /// Purges agents that ended more than `older_than_ms` ago (with their
    /// overlays and proposals), effects logged before then, and every blob
    /// nothing references any more.
    /// Anything still reviewable (completed) or working is kept. Idempotent.
    /// Returns `(agents, blobs)` removed.
    pub fn purge(&self, older_than_ms: i64) -> Result<(usize, usize)> {
        self.purge_collecting_every(older_than_ms, 0)
    }

    /// [`Store::purge`], with the blobs collected only when the last
    /// collection is older than `collect_every_ms`: it reads every blob's
    /// hash and every snapshot's manifest, which on a large project is
    /// more than a `chimera` command that starts a core for itself should
    /// pay each time.
    pub fn purge_collecting_every(
        &self,
        older_than_ms: i64,
        collect_every_ms: i64,
    ) -> Result<(usize, usize)> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let now = now_ms();
        let cutoff = now - older_than_ms;
        let agents = tx.execute(
            "DELETE FROM agents WHERE state IN ('accepted', 'settled', 'rejected', 'failed', 'cancelled') AND updated_at < ?1",
            [cutoff],
        )?;
        // The effect log keeps the same window of history.
        tx.execute("DELETE FROM effects WHERE created_at < ?1", [cutoff])?;
        tx.execute("DELETE FROM tool_calls WHERE created_at < ?1", [cutoff])?;
        let collected: Option<i64> = tx
            .query_row(
                "SELECT value FROM settings WHERE key = ?1",
                [BLOBS_COLLECTED_AT],
                |r| r.get::<_, String>(0),
            )
            .optional()?
            .and_then(|v| v.parse().ok());
        let due = collected.is_none_or(|at| now - at >= collect_every_ms || at > now);
        let blobs = if due {
            let blobs = delete_unreferenced_blobs(&tx)?;
            tx.execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![BLOBS_COLLECTED_AT, now.to_string()],
            )?;
            blobs
        } else {
            0
        };
        tx.commit()?;
        Ok((agents, blobs))
    }
}
