//! The store's reads and writes on a connection, usable inside a
//! transaction ([`Store::transaction`]).

use super::*;
use crate::task::TaskSpec;

pub fn put_blob(conn: &Connection, data: &[u8]) -> Result<Hash> {
    let hash = hash_bytes(data);
    conn.prepare_cached("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?1, ?2)")?
        .execute(params![hash, data])?;
    Ok(hash)
}

pub fn blob(conn: &Connection, hash: &str) -> Result<Vec<u8>> {
    conn.prepare_cached("SELECT data FROM blobs WHERE hash = ?1")?
        .query_row([hash], |r| r.get(0))
        .optional()?
        .ok_or_else(|| StoreError::MissingBlob(hash.to_owned()))
}

/// Deletes every blob nothing references any more; returns how many.
pub(crate) fn delete_unreferenced_blobs(tx: &Transaction<'_>) -> Result<usize> {
    // A snapshot's contents are named inside its manifest blob, which
    // SQL cannot read: gather them first, so a rollback or a fork from
    // any snapshot still finds every file.
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS purge_keep (hash TEXT PRIMARY KEY);
         DELETE FROM purge_keep;",
    )?;
    {
        let manifests: Vec<String> = tx
            .prepare("SELECT manifest FROM snapshots")?
            .query_map([], |r| r.get(0))?
            .collect::<std::result::Result<_, _>>()?;
        let mut keep = tx.prepare("INSERT OR IGNORE INTO purge_keep (hash) VALUES (?1)")?;
        for manifest in manifests {
            keep.execute([&manifest])?;
            let text = blob(tx, &manifest)?;
            for entry in history::parse_manifest(&String::from_utf8_lossy(&text)) {
                keep.execute([&entry.hash])?;
            }
        }
    }
    let blobs = tx.execute(
        "DELETE FROM blobs WHERE hash NOT IN (
             SELECT hash FROM stable
             UNION SELECT hash FROM overlays WHERE hash IS NOT NULL
             UNION SELECT base_hash FROM overlays WHERE base_hash IS NOT NULL
             UNION SELECT base_hash FROM proposal_files WHERE base_hash IS NOT NULL
             UNION SELECT new_hash FROM proposal_files WHERE new_hash IS NOT NULL
             UNION SELECT hash FROM agent_bases WHERE hash IS NOT NULL
             UNION SELECT base_hash FROM agent_bases WHERE base_hash IS NOT NULL
             UNION SELECT hash FROM checkpoint_files WHERE hash IS NOT NULL
             UNION SELECT base_hash FROM checkpoint_files WHERE base_hash IS NOT NULL
             UNION SELECT hash FROM purge_keep)",
        [],
    )?;
    tx.execute("DELETE FROM purge_keep", [])?;
    Ok(blobs)
}

/// The row of `path` as it is, unread or not (outside the store, rows are
/// read through [`Store::stable_entry_in`], which reads an unread file).
pub(super) fn stable_row(conn: &Connection, path: &str) -> Result<Option<StableEntry>> {
    Ok(conn
        .prepare_cached(
            "SELECT hash, mode, size, mtime_ns, too_large, unread FROM stable WHERE path = ?1",
        )?
        .query_row([path], |r| {
            Ok(StableEntry {
                hash: r.get(0)?,
                mode: r.get(1)?,
                size: r.get::<_, i64>(2)? as u64,
                mtime_ns: r.get(3)?,
                too_large: r.get(4)?,
                unread: r.get(5)?,
            })
        })
        .optional()?)
}

/// Puts a file from the disk in the stable layer (its content, its size
/// alone, or its look alone); returns whether it changed.
pub(super) fn stable_put_file(conn: &Connection, f: &DiskFile, max_bytes: u64) -> Result<bool> {
    match &f.data {
        Content::Read(data) => stable_put(conn, &f.path, data, f.mode, f.mtime_ns, max_bytes),
        Content::TooLarge => stable_put_too_large(conn, &f.path, f.size, f.mode, f.mtime_ns),
        Content::Unread => stable_put_unread(conn, f),
    }
}

/// Records `f` by its look alone: its "hash" stands for its size and
/// modification time, and never equals a content's (hex digits only). The
/// import records only what it found changed, so it is not looked up first.
fn stable_put_unread(conn: &Connection, f: &DiskFile) -> Result<bool> {
    let hash = format!("unread:{}:{}", f.size, f.mtime_ns);
    conn.prepare_cached(
        "INSERT INTO stable (path, hash, mode, size, mtime_ns, too_large, unread) VALUES (?1, ?2, ?3, ?4, ?5, 0, 1)
         ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, mode = excluded.mode, size = excluded.size,
                                          mtime_ns = excluded.mtime_ns, too_large = 0, unread = 1,
                                          buffer_owner = NULL",
    )?
    .execute(params![f.path, hash, f.mode, f.size as i64, f.mtime_ns])?;
    Ok(true)
}

pub fn stable_put(
    conn: &Connection,
    path: &str,
    data: &[u8],
    mode: u32,
    mtime_ns: i64,
    max_bytes: u64,
) -> Result<bool> {
    let too_large = data.len() as u64 > max_bytes;
    let hash = if too_large {
        hash_bytes(data)
    } else {
        put_blob(conn, data)?
    };
    if let Some(old) = stable_row(conn, path)? {
        if old.hash == hash && old.mode == mode {
            if old.mtime_ns != mtime_ns {
                conn.prepare_cached(
                    "UPDATE stable SET mtime_ns = ?2, buffer_owner = NULL WHERE path = ?1",
                )?
                .execute(params![path, mtime_ns])?;
            }
            return Ok(false);
        }
    }
    conn.prepare_cached(
        "INSERT INTO stable (path, hash, mode, size, mtime_ns, too_large) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, mode = excluded.mode, size = excluded.size,
                                          mtime_ns = excluded.mtime_ns, too_large = excluded.too_large,
                                          unread = 0, buffer_owner = NULL",
    )?
    .execute(params![path, hash, mode, data.len() as i64, mtime_ns, too_large])?;
    Ok(true)
}

/// Records `path` as too large to keep without reading it: its "hash"
/// stands for its size and modification time, so it changes when the file
/// does.
pub fn stable_put_too_large(
    conn: &Connection,
    path: &str,
    size: u64,
    mode: u32,
    mtime_ns: i64,
) -> Result<bool> {
    let hash = hash_bytes(format!("too large: {size} bytes, modified {mtime_ns}").as_bytes());
    if stable_row(conn, path)?.is_some_and(|old| old.hash == hash && old.mode == mode) {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT INTO stable (path, hash, mode, size, mtime_ns, too_large) VALUES (?1, ?2, ?3, ?4, ?5, 1)
         ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, mode = excluded.mode, size = excluded.size,
                                          mtime_ns = excluded.mtime_ns, too_large = 1, unread = 0, buffer_owner = NULL",
    )?
    .execute(params![path, hash, mode, size as i64, mtime_ns])?;
    Ok(true)
}

/// Points `path` of the stable layer at an existing blob `hash` (an accept:
/// the content is already stored, so it is neither re-read nor re-hashed).
pub fn stable_set(
    conn: &Connection,
    path: &str,
    hash: &str,
    size: u64,
    mode: u32,
    mtime_ns: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO stable (path, hash, mode, size, mtime_ns, too_large) VALUES (?1, ?2, ?3, ?4, ?5, 0)
         ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, mode = excluded.mode, size = excluded.size,
                                          mtime_ns = excluded.mtime_ns, too_large = 0, unread = 0, buffer_owner = NULL",
    )?
    .execute(params![path, hash, mode, size as i64, mtime_ns])?;
    Ok(())
}

pub fn overlay_entry(conn: &Connection, agent: &str, path: &str) -> Result<Option<OverlayEntry>> {
    Ok(conn
        .prepare_cached("SELECT hash, base_hash FROM overlays WHERE agent_id = ?1 AND path = ?2")?
        .query_row([agent, path], |r| {
            Ok(OverlayEntry {
                hash: r.get(0)?,
                base_hash: r.get(1)?,
            })
        })
        .optional()?)
}

pub(super) const AGENT_SELECT: &str = "SELECT id, state, task, context, summary, error, changed_files, conflicted,
                                   owner_pid, created_at, updated_at, rounds, owner, recoveries, file,
                                   cursor_line, feedback, mode, capabilities, log, external, spec, usage, undone FROM agents";

pub(super) fn agent_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AgentRecord> {
    let state: String = r.get(1)?;
    let files: String = r.get(6)?;
    Ok(AgentRecord {
        id: r.get(0)?,
        state: AgentState::parse(&state).unwrap_or(AgentState::Failed),
        spec: r
            .get::<_, Option<String>>(21)?
            .and_then(|spec| serde_json::from_str(&spec).ok())
            .map_or_else(|| spec_of_older_row(r), Ok)?,
        summary: r.get(4)?,
        error: r.get(5)?,
        changed_files: serde_json::from_str(&files).unwrap_or_default(),
        conflicted: r.get(7)?,
        owner_pid: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        rounds: r.get(11)?,
        owner: r.get(12)?,
        recoveries: r.get(13)?,
        feedback: serde_json::from_str(&r.get::<_, String>(16)?).unwrap_or_default(),
        log: serde_json::from_str(&r.get::<_, String>(19)?).unwrap_or_default(),
        usage: r
            .get::<_, Option<String>>(22)?
            .and_then(|u| serde_json::from_str(&u).ok())
            .unwrap_or_default(),
        undone: r.get(23)?,
    })
}

/// The task of a row written before tasks were stored whole, from the
/// columns it was spread over then.
fn spec_of_older_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskSpec> {
    Ok(TaskSpec {
        task: r.get(2)?,
        context: r.get(3)?,
        file: r.get(14)?,
        line: r.get::<_, Option<i64>>(15)?.map(|l| l as usize + 1),
        mode: r.get(17)?,
        capabilities: r.get(18)?,
        external: r.get(20)?,
    })
}

pub fn agent(conn: &Connection, id: &str) -> Result<Option<AgentRecord>> {
    Ok(conn
        .prepare_cached(&format!("{AGENT_SELECT} WHERE id = ?1"))?
        .query_row([id], agent_from_row)
        .optional()?)
}

pub fn agent_update(conn: &Connection, rec: &AgentRecord) -> Result<()> {
    let old_state: Option<String> = conn
        .prepare_cached("SELECT state FROM agents WHERE id = ?1")?
        .query_row([&rec.id], |r| r.get(0))
        .optional()?;
    let Some(old_state) = old_state else {
        return Err(StoreError::NoAgent(rec.id.clone()));
    };
    let from = AgentState::parse(&old_state).unwrap_or(AgentState::Failed);
    if !from.can_become(rec.state) {
        return Err(StoreError::IllegalTransition {
            id: rec.id.clone(),
            from: from.as_str(),
            to: rec.state.as_str(),
        });
    }
    conn.prepare_cached(
        "UPDATE agents SET state = ?2, summary = ?3, error = ?4, changed_files = ?5, conflicted = ?6,
                           updated_at = ?7, rounds = ?8, owner = ?9, recoveries = ?10, feedback = ?11,
                           undone = ?12 WHERE id = ?1",
    )?
    .execute(params![
        rec.id,
        rec.state.as_str(),
        rec.summary,
        rec.error,
        serde_json::to_string(&rec.changed_files)?,
        rec.conflicted,
        rec.updated_at,
        rec.rounds,
        rec.owner,
        rec.recoveries,
        serde_json::to_string(&rec.feedback)?,
        rec.undone
    ])?;
    if old_state != rec.state.as_str() {
        append_event(
            conn,
            Some(&rec.id),
            "agent_state",
            &serde_json::json!({"from": old_state, "to": rec.state.as_str(), "error": rec.error}),
        )?;
    }
    Ok(())
}

/// Drops everything `agent` wrote and proposed (its overlay and proposal).
pub fn discard_changes(conn: &Connection, agent: &str) -> Result<()> {
    conn.execute("DELETE FROM overlays WHERE agent_id = ?1", [agent])?;
    conn.execute("DELETE FROM proposal_files WHERE agent_id = ?1", [agent])?;
    Ok(())
}

pub fn set_proposal_files(conn: &Connection, agent: &str, files: &[ProposalFile]) -> Result<()> {
    conn.execute("DELETE FROM proposal_files WHERE agent_id = ?1", [agent])?;
    let mut stmt = conn.prepare_cached(
        "INSERT INTO proposal_files (agent_id, path, base_hash, new_hash) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for f in files {
        stmt.execute(params![agent, f.path, f.base_hash, f.new_hash])?;
    }
    Ok(())
}

pub fn proposal_files(conn: &Connection, agent: &str) -> Result<Vec<ProposalFile>> {
    let mut stmt = conn.prepare_cached(
        "SELECT path, base_hash, new_hash FROM proposal_files WHERE agent_id = ?1 ORDER BY path",
    )?;
    let rows = stmt.query_map([agent], |r| {
        Ok(ProposalFile {
            path: r.get(0)?,
            base_hash: r.get(1)?,
            new_hash: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn append_event(
    conn: &Connection,
    agent: Option<&str>,
    kind: &str,
    data: &serde_json::Value,
) -> Result<i64> {
    conn.prepare_cached("INSERT INTO events (ts, agent_id, kind, data) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![now_ms(), agent, kind, data.to_string()])?;
    Ok(conn.last_insert_rowid())
}
