//! Snapshots of the stable layer and the effect log (seed 004): a snapshot
//! is a manifest blob naming the content of every file, so taking one
//! copies no file; an effect is an action no rollback can undo.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{hash_bytes, now_ms, put_blob, Result, Store, StoreError};

/// One snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    pub id: String,
    pub message: String,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    pub files: usize,
    /// The branches whose head it is.
    pub branches: Vec<String>,
}

/// A branch: a name for a line of snapshots, and its head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Branch {
    pub name: String,
    pub snapshot_id: String,
    pub updated_at: i64,
}

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    pub path: String,
    pub hash: String,
    pub mode: u32,
    /// Too large to keep: its content is not in the store.
    pub too_large: bool,
}

/// One irreversible action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub seq: i64,
    /// `llm`, `command`, `network`, `mcp`.
    pub kind: String,
    pub agent_id: Option<String>,
    pub input: String,
    pub output: String,
    pub duration_ms: i64,
    /// The latest snapshot when it happened.
    pub snapshot_id: Option<String>,
    pub created_at: i64,
}

/// Effect inputs and outputs are kept up to this many bytes.
pub const EFFECT_CAP: usize = 4096;

fn cap(s: &str) -> String {
    if s.len() <= EFFECT_CAP {
        return s.to_owned();
    }
    let mut end = EFFECT_CAP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &s[..end], s.len())
}

const SNAPSHOT_SELECT: &str = "SELECT s.id, s.message, s.created_at, s.files,
    (SELECT group_concat(b.name, ' ') FROM branches b WHERE b.snapshot_id = s.id)
    FROM snapshots s";

fn snapshot_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Snapshot> {
    let branches: Option<String> = r.get(4)?;
    let mut branches: Vec<String> = branches
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    branches.sort();
    Ok(Snapshot {
        id: r.get(0)?,
        message: r.get(1)?,
        created_at: r.get(2)?,
        files: r.get::<_, i64>(3)? as usize,
        branches,
    })
}

/// One file's line of a manifest (read back by [`parse_manifest`]).
pub(super) fn manifest_line(e: &ManifestEntry) -> String {
    format!(
        "{:o} {} {} {}\n",
        e.mode,
        if e.too_large { "L" } else { "-" },
        e.hash,
        e.path
    )
}

pub(super) fn parse_manifest(text: &str) -> Vec<ManifestEntry> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(4, ' ');
            let mode = u32::from_str_radix(parts.next()?, 8).ok()?;
            let too_large = parts.next()? == "L";
            let hash = parts.next()?.to_owned();
            let path = parts.next()?.to_owned();
            Some(ManifestEntry {
                path,
                hash,
                mode,
                too_large,
            })
        })
        .collect()
}

impl Store {
    /// Snapshots the stable layer as it is now.
    pub fn snapshot_create(&self, message: &str) -> Result<Snapshot> {
        self.snapshot_create_as(None, message)
    }

    /// [`Store::snapshot_create`] with the ID the editor chose (so its API
    /// can return it at once), or a content-derived one.
    pub fn snapshot_create_as(&self, id: Option<&str>, message: &str) -> Result<Snapshot> {
        self.fill_all()?;
        self.transaction(|tx| {
            let mut manifest = String::new();
            let mut files = 0;
            {
                let mut stmt = tx.prepare_cached(
                    "SELECT path, hash, mode, too_large FROM stable ORDER BY path",
                )?;
                let mut rows = stmt.query([])?;
                while let Some(r) = rows.next()? {
                    let (path, hash, mode, large): (String, String, u32, bool) =
                        (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
                    manifest.push_str(&manifest_line(&ManifestEntry {
                        path,
                        hash,
                        mode,
                        too_large: large,
                    }));
                    files += 1;
                }
            }
            let blob = put_blob(tx, manifest.as_bytes())?;
            let effect_seq: i64 = tx
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM effects")?
                .query_row([], |r| r.get(0))?;
            let created_at = now_ms();
            let id = match id {
                Some(id) => id.to_owned(),
                None => {
                    // Two snapshots of the same text with the same message in
                    // the same millisecond (a rollback right after another)
                    // still get two IDs.
                    static TAKEN: std::sync::atomic::AtomicU64 =
                        std::sync::atomic::AtomicU64::new(0);
                    let n = TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let pid = std::process::id();
                    hash_bytes(format!("{blob}{created_at}{message}{pid}:{n}").as_bytes())[..12]
                        .to_owned()
                }
            };
            tx.prepare_cached(
                "INSERT INTO snapshots (id, message, manifest, files, created_at, effect_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                id,
                message,
                blob,
                files as i64,
                created_at,
                effect_seq
            ])?;
            Ok(Snapshot {
                id,
                message: message.to_owned(),
                created_at,
                files,
                branches: Vec::new(),
            })
        })
    }

    /// Every snapshot, newest first.
    pub fn snapshots(&self) -> Result<Vec<Snapshot>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "{SNAPSHOT_SELECT} ORDER BY s.created_at DESC, s.rowid DESC"
        ))?;
        let rows = stmt.query_map([], snapshot_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Snapshot `id`, or the head of branch `id`.
    pub fn snapshot(&self, id: &str) -> Result<Option<Snapshot>> {
        let id = self.head(id)?;
        Ok(self
            .conn()
            .prepare_cached(&format!("{SNAPSHOT_SELECT} WHERE s.id = ?1"))?
            .query_row([id], snapshot_from_row)
            .optional()?)
    }

    /// The snapshot `name` means: itself, else the head of the branch so
    /// named (unknown names are left as they are, for the caller's error).
    fn head(&self, name: &str) -> Result<String> {
        let conn = self.conn();
        let is_snapshot = conn
            .prepare_cached("SELECT 1 FROM snapshots WHERE id = ?1")?
            .exists([name])?;
        if is_snapshot {
            return Ok(name.to_owned());
        }
        let head: Option<String> = conn
            .prepare_cached("SELECT snapshot_id FROM branches WHERE name = ?1")?
            .query_row([name], |r| r.get(0))
            .optional()?;
        Ok(head.unwrap_or_else(|| name.to_owned()))
    }

    /// Points branch `name` at `snapshot` (a snapshot or branch; default:
    /// the newest snapshot), creating it or moving it on.
    pub fn branch_set(&self, name: &str, snapshot: Option<&str>) -> Result<Branch> {
        let valid = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
            && !name.starts_with(['-', '/', '.']);
        let is_snapshot = self
            .conn()
            .prepare_cached("SELECT 1 FROM snapshots WHERE id = ?1")?
            .exists([name])?;
        if !valid || is_snapshot {
            return Err(StoreError::BadBranch(name.to_owned()));
        }
        let head = match snapshot {
            Some(s) => {
                self.snapshot(s)?
                    .ok_or_else(|| StoreError::NoSnapshot(s.to_owned()))?
                    .id
            }
            None => {
                self.snapshots()?
                    .into_iter()
                    .next()
                    .ok_or(StoreError::NoSnapshotYet)?
                    .id
            }
        };
        let updated_at = now_ms();
        self.conn()
            .prepare_cached(
                "INSERT INTO branches (name, snapshot_id, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET snapshot_id = excluded.snapshot_id, updated_at = excluded.updated_at",
            )?
            .execute(params![name, head, updated_at])?;
        Ok(Branch {
            name: name.to_owned(),
            snapshot_id: head,
            updated_at,
        })
    }

    /// Every branch, by name.
    pub fn branches(&self) -> Result<Vec<Branch>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT name, snapshot_id, updated_at FROM branches ORDER BY name")?;
        let rows = stmt.query_map([], |r| {
            Ok(Branch {
                name: r.get(0)?,
                snapshot_id: r.get(1)?,
                updated_at: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The files of snapshot `id` (or of branch `id`'s head), by path.
    pub fn snapshot_manifest(&self, id: &str) -> Result<Vec<ManifestEntry>> {
        let id = &self.head(id)?;
        let blob: Option<String> = self
            .conn()
            .prepare_cached("SELECT manifest FROM snapshots WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        let blob = blob.ok_or_else(|| StoreError::NoSnapshot(id.to_owned()))?;
        let data = self.blob(&blob)?;
        Ok(parse_manifest(&String::from_utf8_lossy(&data)))
    }

    /// Records an irreversible action after the latest snapshot; its
    /// sequence, or `None` when it could not be written (kept, see
    /// [`Store::unrecorded`]).
    pub fn effect_record(
        &self,
        kind: &str,
        agent: Option<&str>,
        input: &str,
        output: &str,
        duration_ms: i64,
    ) -> Option<i64> {
        let r = (|| {
            let conn = self.conn();
            let snapshot: Option<String> = conn
                .prepare_cached(
                    "SELECT id FROM snapshots ORDER BY created_at DESC, rowid DESC LIMIT 1",
                )?
                .query_row([], |r| r.get(0))
                .optional()?;
            conn.prepare_cached(
                "INSERT INTO effects (kind, agent_id, input, output, duration_ms, snapshot_id, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                kind,
                agent,
                cap(input),
                cap(output),
                duration_ms,
                snapshot,
                now_ms()
            ])?;
            Ok(conn.last_insert_rowid())
        })();
        self.noted(r)
    }

    /// Effects after sequence `since` (0: all), of `kind` if given, oldest first.
    pub fn effects(&self, since: i64, kind: Option<&str>) -> Result<Vec<Effect>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, kind, agent_id, input, output, duration_ms, snapshot_id, created_at
             FROM effects WHERE seq > ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![since, kind], |r| {
            Ok(Effect {
                seq: r.get(0)?,
                kind: r.get(1)?,
                agent_id: r.get(2)?,
                input: r.get(3)?,
                output: r.get(4)?,
                duration_ms: r.get(5)?,
                snapshot_id: r.get(6)?,
                created_at: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The last effect's sequence number when snapshot `id` was taken.
    pub fn snapshot_effect_seq(&self, id: &str) -> Result<i64> {
        let id = &self.head(id)?;
        let after: Option<i64> = self
            .conn()
            .prepare_cached("SELECT effect_seq FROM snapshots WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        after.ok_or_else(|| StoreError::NoSnapshot(id.to_owned()))
    }

    /// Effects that happened after snapshot `id` was taken.
    pub fn effects_after_snapshot(&self, id: &str) -> Result<Vec<Effect>> {
        let after = self.snapshot_effect_seq(id)?;
        self.effects(after, None)
    }
}
