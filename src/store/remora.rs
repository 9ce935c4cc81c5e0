//! The Remora tables: nodes, edges, indexed files and project settings.

use rusqlite::{params, Connection, OptionalExtension};

use super::{Result, Store};
use crate::remora::events::{self, Event, EventRecord, Pattern, Trigger};
use crate::remora::topology::{FileChange, Loading, Ref, Topology};
use crate::remora::{Edge, EdgeKind, Node, NodeStatus, NodeType};

/// Writes one update of the topology.
pub fn apply_change(conn: &Connection, change: &FileChange) -> Result<()> {
    if change.removed {
        conn.prepare_cached("DELETE FROM remora_files WHERE path = ?1")?
            .execute([&change.path])?;
    } else if let Some(refs) = &change.refs {
        conn.prepare_cached(
            "INSERT INTO remora_files (path, hash, refs) VALUES (?1, ?2, ?3)
             ON CONFLICT(path) DO UPDATE SET hash = excluded.hash, refs = excluded.refs",
        )?
        .execute(params![
            change.path,
            change.hash,
            serde_json::to_string(refs)?
        ])?;
    } else if !change.hash.is_empty() {
        conn.prepare_cached("UPDATE remora_files SET hash = ?2 WHERE path = ?1")?
            .execute(params![change.path, change.hash])?;
    }
    let mut upsert = conn.prepare_cached(
        "INSERT INTO nodes (id, node_type, name, qualname, parent_id, file_path,
                            start_line, end_line, status, source_hash, ord)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT(id) DO UPDATE SET node_type = excluded.node_type,
             name = excluded.name, qualname = excluded.qualname,
             parent_id = excluded.parent_id, file_path = excluded.file_path,
             start_line = excluded.start_line, end_line = excluded.end_line,
             status = excluded.status, source_hash = excluded.source_hash,
             ord = excluded.ord",
    )?;
    for (ord, n) in &change.nodes {
        upsert.execute(params![
            n.id,
            n.node_type.as_str(),
            n.name,
            n.qualname,
            n.parent_id,
            n.file_path,
            n.start_line as i64,
            n.end_line as i64,
            n.status.as_str(),
            n.source_hash,
            *ord as i64
        ])?;
    }
    let mut orphan =
        conn.prepare_cached("UPDATE nodes SET status = 'orphaned', ord = -1 WHERE id = ?1")?;
    for id in &change.orphaned {
        orphan.execute([id])?;
    }
    let mut del = conn
        .prepare_cached("DELETE FROM edges WHERE from_id = ?1 AND to_id = ?2 AND edge_type = ?3")?;
    for e in &change.removed_edges {
        del.execute(params![e.from, e.to, e.kind.as_str()])?;
    }
    let mut ins = conn.prepare_cached(
        "INSERT OR IGNORE INTO edges (from_id, to_id, edge_type) VALUES (?1, ?2, ?3)",
    )?;
    for e in &change.added_edges {
        ins.execute(params![e.from, e.to, e.kind.as_str()])?;
    }
    Ok(())
}

fn node_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Node> {
    let node_type: String = r.get(1)?;
    let status: String = r.get(8)?;
    Ok(Node {
        id: r.get(0)?,
        node_type: NodeType::parse(&node_type).unwrap_or(NodeType::Function),
        name: r.get(2)?,
        qualname: r.get(3)?,
        parent_id: r.get(4)?,
        file_path: r.get(5)?,
        start_line: r.get::<_, i64>(6)? as usize,
        end_line: r.get::<_, i64>(7)? as usize,
        status: if status == "orphaned" {
            NodeStatus::Orphaned
        } else {
            NodeStatus::Active
        },
        source_hash: r.get(9)?,
    })
}

const NODE_COLUMNS: &str = "id, node_type, name, qualname, parent_id, file_path,
     start_line, end_line, status, source_hash";

/// The whole topology as stored, row by row.
pub fn load_topology(conn: &Connection) -> Result<Topology> {
    let mut loading = Loading::default();
    let mut stmt = conn.prepare(&format!(
        "SELECT {NODE_COLUMNS}, ord FROM nodes ORDER BY file_path, ord"
    ))?;
    let rows = stmt.query_map([], |r| Ok((node_from_row(r)?, r.get::<_, i64>(10)?)))?;
    for row in rows {
        let (node, ord) = row?;
        loading.node(&node, ord >= 0 && node.status == NodeStatus::Active);
    }
    let mut stmt = conn.prepare("SELECT path, hash, refs FROM remora_files")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for row in rows {
        let (path, hash, refs) = row?;
        let refs: Vec<Ref> = serde_json::from_str(&refs)?;
        loading.file(&path, hash, refs);
    }
    let mut stmt = conn.prepare("SELECT from_id, to_id, edge_type FROM edges")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for row in rows {
        let (from, to, kind) = row?;
        if let Some(kind) = EdgeKind::parse(&kind) {
            loading.edge(&Edge { from, to, kind });
        }
    }
    Ok(loading.finish())
}

impl Store {
    /// Writes several topology updates in one transaction.
    pub fn remora_apply(&self, changes: &[FileChange]) -> Result<()> {
        self.remora_apply_with(|write| changes.iter().try_for_each(write))
    }

    /// Writes in one transaction every update `make` hands its writer, as
    /// it makes them: a bulk index writes a monorepo's changes without
    /// holding them all.
    pub fn remora_apply_with(
        &self,
        make: impl FnOnce(&mut dyn FnMut(&FileChange) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        self.transaction(|tx| make(&mut |c| apply_change(tx, c)))
    }

    /// `path → hash` of every indexed file.
    pub fn remora_file_hashes(&self) -> Result<std::collections::HashMap<String, String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, hash FROM remora_files")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn remora_load(&self) -> Result<Topology> {
        load_topology(&self.conn())
    }

    /// One node as stored (any status).
    pub fn remora_node(&self, id: &str) -> Result<Option<Node>> {
        Ok(self
            .conn()
            .prepare_cached(&format!("SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?1"))?
            .query_row([id], node_from_row)
            .optional()?)
    }

    /// Stored edges of `kind` as `(from, to)`, in order.
    pub fn remora_edges(&self, kind: EdgeKind) -> Result<Vec<(String, String)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT from_id, to_id FROM edges WHERE edge_type = ?1 ORDER BY from_id, to_id",
        )?;
        let rows = stmt.query_map([kind.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.conn().execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }
}

impl Store {
    /// Appends a Remora event; returns it as stored and the agents its
    /// subscriptions wake.
    pub fn remora_emit(
        &self,
        event: &Event,
        correlation_id: Option<&str>,
    ) -> Result<(EventRecord, Vec<Trigger>)> {
        self.transaction(|tx| {
            let event_id =
                crate::remora::ids::fresh()[crate::remora::ids::PREFIX.len()..].to_owned();
            let ts = super::now_ms();
            tx.prepare_cached(
                "INSERT INTO events (ts, agent_id, kind, data, event_id, correlation_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                ts,
                event.subject(),
                event.event_type(),
                serde_json::to_string(event)?,
                event_id,
                correlation_id
            ])?;
            let seq = tx.last_insert_rowid();
            let subs = subscriptions(tx)?;
            let triggers = events::triggers(&subs, seq, correlation_id, event);
            Ok((
                EventRecord {
                    seq,
                    event_id,
                    timestamp: ts,
                    correlation_id: correlation_id.map(str::to_owned),
                    event: event.clone(),
                },
                triggers,
            ))
        })
    }

    /// The sequence number of the newest logged event (0: none yet).
    pub fn last_event_seq(&self) -> Result<i64> {
        Ok(self
            .conn()
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Remora events after sequence `after`, oldest first, at most `limit`;
    /// with `agent`, only those from or to that node.
    pub fn remora_events_since(
        &self,
        after: i64,
        agent: Option<&str>,
        limit: usize,
    ) -> Result<Vec<EventRecord>> {
        let conn = self.conn();
        let types = events::EVENT_TYPES
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(",");
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT seq, ts, data, event_id, correlation_id FROM events
             WHERE seq > ?1 AND kind IN ({types}) ORDER BY seq"
        ))?;
        let rows = stmt.query_map([after], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, ts, data, event_id, correlation_id) = row?;
            let event: Event = serde_json::from_str(&data)?;
            if let Some(a) = agent {
                if event.from_agent() != Some(a) && event.to_agent() != Some(a) {
                    continue;
                }
            }
            out.push(EventRecord {
                seq,
                event_id: event_id.unwrap_or_default(),
                timestamp: ts,
                correlation_id,
                event,
            });
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    pub fn subscribe(&self, agent: &str, pattern: &Pattern) -> Result<()> {
        self.conn().execute(
            "INSERT OR IGNORE INTO subscriptions (agent_id, pattern) VALUES (?1, ?2)",
            params![agent, serde_json::to_string(pattern)?],
        )?;
        Ok(())
    }

    pub fn unsubscribe(&self, agent: &str) -> Result<()> {
        self.conn()
            .execute("DELETE FROM subscriptions WHERE agent_id = ?1", [agent])?;
        Ok(())
    }

    pub fn subscriptions(&self) -> Result<Vec<(String, Pattern)>> {
        subscriptions(&self.conn())
    }

    /// Records one activation of a chain (for inspection; the checks run
    /// on the chains in memory).
    pub fn chain_record(
        &self,
        correlation: &str,
        agent: &str,
        depth: usize,
        ts: i64,
    ) -> Result<()> {
        self.conn().execute(
            "INSERT OR REPLACE INTO activation_chain (correlation_id, agent_id, depth, timestamp)
             VALUES (?1, ?2, ?3, ?4)",
            params![correlation, agent, depth as i64, ts],
        )?;
        Ok(())
    }

    /// Records that agent `agent` embodies node `node`.
    pub fn set_agent_node(&self, agent: &str, node: &str, correlation: Option<&str>) -> Result<()> {
        self.conn().execute(
            "INSERT OR REPLACE INTO node_agents (agent_id, node_id, correlation_id) VALUES (?1, ?2, ?3)",
            params![agent, node, correlation],
        )?;
        Ok(())
    }

    /// The node agent `agent` embodies and its chain, if it is a node agent.
    pub fn agent_node(&self, agent: &str) -> Result<Option<(String, Option<String>)>> {
        Ok(self
            .conn()
            .prepare_cached("SELECT node_id, correlation_id FROM node_agents WHERE agent_id = ?1")?
            .query_row([agent], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    pub fn chain_forget(&self, correlation: &str) -> Result<()> {
        self.conn().execute(
            "DELETE FROM activation_chain WHERE correlation_id = ?1",
            [correlation],
        )?;
        Ok(())
    }
}

fn subscriptions(conn: &Connection) -> Result<Vec<(String, Pattern)>> {
    let mut stmt = conn.prepare_cached("SELECT agent_id, pattern FROM subscriptions")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (agent, pattern) = row?;
        out.push((agent, serde_json::from_str(&pattern)?));
    }
    Ok(out)
}
