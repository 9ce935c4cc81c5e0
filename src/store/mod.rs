//! One SQLite database per project (`<root>/.chimera/chimera.db`, WAL):
//! content-addressed blobs, the stable layer (the human's ground truth),
//! per-agent overlays, agent records, proposals and an append-only event log.
//! One database means an accept or a recovery is a single transaction.

mod audit;
mod bulk;
mod calls;
mod chat;
mod checkpoints;
mod disk;
#[cfg(test)]
pub mod fixture;
mod forget;
mod history;
mod instances;
pub mod journal;
mod private;
mod records;
mod remora;
mod rows;
mod schema;
mod unread;

pub use crate::hash::{hash_bytes, random_token, unique_digest, Hash};
pub use audit::Unrecorded;
pub use calls::ToolCall;
pub use chat::ChatEntry;
pub use checkpoints::Checkpoint;
pub use disk::{read_file, unread_file, Content, DiskFile, Look};
pub use history::{Branch, Effect, ManifestEntry, Snapshot};
pub use records::{AgentRecord, AgentState, Feedback, ProposalFile, TokenUse};
pub use rows::*;
use rows::{agent_from_row, AGENT_SELECT};

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot create `{path}`: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to use `{path}`: it {why}")]
    Unsafe { path: PathBuf, why: &'static str },
    #[error("blob {0} is missing from the store; run `:Chimera` again to re-import the project")]
    MissingBlob(String),
    #[error("no agent with id `{0}`")]
    NoAgent(String),
    #[error(
        "no snapshot or branch `{0}`; the history lists them (:Chimera history, chimera history)"
    )]
    NoSnapshot(String),
    #[error("no snapshot yet: `:Chimera snapshot` (or `chimera snapshot`) takes one")]
    NoSnapshotYet,
    #[error("`{0}` is not a branch name: 1 to 64 letters, digits, `.`, `_`, `-` or `/`, and no snapshot's ID")]
    BadBranch(String),
    #[error("no checkpoint `{name}`; the checkpoints are: {have}")]
    NoCheckpoint { name: String, have: String },
    #[error("agent {id} cannot go from {from} to {to}")]
    IllegalTransition {
        id: String,
        from: &'static str,
        to: &'static str,
    },
    #[error("bad JSON in the store: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot read the project's files: {0}")]
    Disk(crate::rootfs::DiskError),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// `log()` lines kept per agent, and bytes kept per line.
pub const AGENT_LOG_LINES: usize = 200;
pub const AGENT_LOG_LINE_BYTES: usize = 1_000;

/// SQLite's default: the WAL is copied into the database file once it holds
/// this many pages.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 1000;

/// The bytes of WAL file kept on the disk once it starts again.
const WAL_SIZE_LIMIT: i64 = 4 << 20;

/// The page cache, in KiB: indexing a large project writes ~10⁵ rows.
const CACHE_KIB: i64 = 32_000;

/// How long an open waits for another connection's lock (several Neovim
/// instances and `chimera` commands may share the file).
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// This machine's name, to tell whether an instance's pid is one of ours.
pub fn this_host() -> String {
    static HOST: once_cell::sync::Lazy<String> = once_cell::sync::Lazy::new(|| {
        rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned()
    });
    HOST.clone()
}

/// Whether process `pid` runs on this machine (a process we may not
/// signal runs too).
pub fn process_runs(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One event of the log: `(seq, agent, kind, data as JSON)`.
pub type EventRow = (i64, Option<String>, String, String);

/// One file of the stable layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StableEntry {
    pub hash: Hash,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    /// The content is not stored because the file is larger than the limit.
    pub too_large: bool,
    /// Recorded by the import by its look alone: `hash` stands for its
    /// size and time, not its content ([`Store::stable_entry`] reads it
    /// first, so only a row read inside a transaction is ever this).
    pub unread: bool,
}

/// One file of an agent's view ([`Store::view`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewEntry {
    pub path: String,
    pub hash: Hash,
    pub mode: u32,
    /// Its content is not stored (larger than `sync.max_file_bytes`).
    pub too_large: bool,
}

/// One path in an agent's overlay: new content, or a whiteout (`hash: None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayEntry {
    pub hash: Option<Hash>,
    /// The stable content this change was based on (`None`: the file did not exist).
    pub base_hash: Option<Hash>,
}

/// The project's database. A std `Mutex` guards the connection: every
/// critical section is one short SQL statement or transaction, never held
/// across an `.await`.
pub struct Store {
    conn: Mutex<Connection>,
    root: PathBuf,
    /// Files whose content never enters the store (`capabilities.secrets`).
    secrets: crate::capabilities::Secrets,
    /// Signs this store's write journals, so that one a cloned repository
    /// ships is not taken for ours (`journal`).
    journal_key: [u8; 32],
    /// Effect and audit records that could not be written.
    unrecorded: Mutex<audit::Unrecorded>,
    /// The size of file whose content the stable layer keeps, for the
    /// files the import recorded unread ([`Store::set_file_limit`]).
    file_limit: std::sync::atomic::AtomicU64,
}

impl Store {
    /// Opens (creating if needed) `<root>/.chimera/chimera.db`, keeping
    /// out the default secrets.
    pub fn open(root: &Path) -> Result<Self> {
        Self::open_with(root, crate::capabilities::Secrets::default())
    }

    /// Opens the store of `root`, keeping out the files `secrets` names.
    /// `.chimera/` and the database are its owner's alone (0700, 0600): they
    /// hold the project's text and the agents' transcripts.
    pub fn open_with(root: &Path, secrets: crate::capabilities::Secrets) -> Result<Self> {
        let dir = root.join(".chimera");
        private::make_dir(&dir)?;
        let ignore = dir.join(".gitignore");
        if std::fs::symlink_metadata(&ignore).is_err() {
            std::fs::write(&ignore, "*\n").map_err(|source| StoreError::Create {
                path: ignore,
                source,
            })?;
        }
        let db = dir.join("chimera.db");
        private::make_files(&db)?;
        let conn = Connection::open(&db)?;
        Self::init(conn, root, secrets)
    }

    /// An in-memory store, for tests and benchmarks.
    pub fn open_in_memory(root: &Path) -> Result<Self> {
        Self::init(
            Connection::open_in_memory()?,
            root,
            crate::capabilities::Secrets::default(),
        )
    }

    fn init(
        mut conn: Connection,
        root: &Path,
        secrets: crate::capabilities::Secrets,
    ) -> Result<Self> {
        // Several Neovim instances may share the file: wait for a lock rather
        // than fail at once.
        conn.busy_timeout(BUSY_WAIT)?;
        // A transaction takes the write lock when it begins: one that read
        // first and wrote later would fail at once (SQLITE_BUSY_SNAPSHOT,
        // no waiting) if another process had written in between.
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
        // A bulk write (an import, every file read for a snapshot) grows
        // the WAL to its size; once copied, the WAL starts again and is cut
        // back to this rather than left on the disk.
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
        Self::make_schema(&mut conn)?;
        let read_key = |conn: &Connection| {
            conn.query_row(
                "SELECT value FROM settings WHERE key = 'journal_key'",
                [],
                |r| r.get::<_, String>(0),
            )
            .optional()
        };
        // Made once, by the first open; a read-only open writes nothing.
        let key = match read_key(&conn)? {
            Some(key) => key,
            None => {
                let key = random_token().map_err(|source| StoreError::Create {
                    path: root.join(".chimera"),
                    source,
                })?;
                conn.execute(
                    "INSERT OR IGNORE INTO settings (key, value) VALUES ('journal_key', ?1)",
                    [key],
                )?;
                // A new store has no blob to collect: the first purge (at
                // the end of the first import, which wrote every blob)
                // would read them all for nothing.
                conn.execute(
                    "INSERT OR IGNORE INTO settings (key, value) VALUES (?1, ?2)",
                    params![instances::BLOBS_COLLECTED_AT, now_ms().to_string()],
                )?;
                read_key(&conn)?.unwrap_or_default()
            }
        };
        Ok(Self {
            conn: Mutex::new(conn),
            root: root.to_path_buf(),
            secrets,
            journal_key: *blake3::hash(key.as_bytes()).as_bytes(),
            unrecorded: Mutex::default(),
            file_limit: crate::rootfs::MAX_FILE_BYTES.into(),
        })
    }

    /// Brings the schema up to date in one write transaction: processes that
    /// open a new database at once (Neovim's core, a shell's `chimera task`)
    /// each find the other's tables and columns rather than adding them twice.
    fn make_schema(conn: &mut Connection) -> Result<()> {
        let tx = conn.transaction()?;
        tx.execute_batch(schema::SCHEMA)?;
        for (table, column, kind) in schema::ADDED_COLUMNS {
            let exists: bool = tx
                .prepare(&format!(
                    "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
                ))?
                .exists([column])?;
            if !exists {
                tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
            }
        }
        tx.execute_batch(schema::LATE_INDEXES)?;
        tx.commit()?;
        Ok(())
    }

    /// Copies what the WAL holds into the database file (a passive
    /// checkpoint: it waits for no reader or writer).
    pub fn checkpoint(&self) -> Result<()> {
        self.conn()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (the
        // transaction rolls back on drop), so a poisoned lock is still usable.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` in one transaction, committed only if `f` succeeds.
    pub fn transaction<T, E>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(StoreError::from)?;
        let out = f(&tx)?;
        tx.commit().map_err(StoreError::from)?;
        Ok(out)
    }

    // ---- blobs -----------------------------------------------------------

    pub fn put_blob(&self, data: &[u8]) -> Result<Hash> {
        put_blob(&self.conn(), data)
    }

    /// A blob as text (not UTF-8: with replacement characters).
    pub fn blob_text(&self, hash: &str) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.blob(hash)?).into_owned())
    }

    pub fn blob(&self, hash: &str) -> Result<Vec<u8>> {
        blob(&self.conn(), hash)
    }

    // ---- stable layer ----------------------------------------------------

    /// The stable layer's file at `path`, read from the disk first when
    /// the import recorded it unread.
    pub fn stable_entry(&self, path: &str) -> Result<Option<StableEntry>> {
        self.stable_entry_in(&self.conn(), path)
    }

    /// [`Store::stable_entry`] on `conn` (a transaction: a file read for
    /// it is written in it).
    pub fn stable_entry_in(&self, conn: &Connection, path: &str) -> Result<Option<StableEntry>> {
        match stable_row(conn, path)? {
            Some(e) if e.unread => {
                self.fill_in(conn, &[path.to_owned()])?;
                stable_row(conn, path)
            }
            row => Ok(row),
        }
    }

    /// Whether `path` is a secret, whose content the store never keeps.
    pub fn is_secret(&self, path: &str) -> bool {
        self.secrets.is_match(path)
    }

    /// Puts a file read from disk in the stable layer; returns whether it
    /// changed. A secret is not kept.
    pub fn stable_store(&self, f: &DiskFile, max_bytes: u64) -> Result<bool> {
        if self.is_secret(&f.path) {
            return self.stable_delete(&f.path);
        }
        stable_put_file(&self.conn(), f, max_bytes)
    }

    /// Puts `data` at `path` in the stable layer; returns whether it
    /// changed. A secret is not kept.
    pub fn stable_put(
        &self,
        path: &str,
        data: &[u8],
        mode: u32,
        mtime_ns: i64,
        max_bytes: u64,
    ) -> Result<bool> {
        if self.is_secret(path) {
            return self.stable_delete(path);
        }
        let conn = self.conn();
        stable_put(&conn, path, data, mode, mtime_ns, max_bytes)
    }

    /// Records that the stable text of `path` is instance `owner`'s loaded
    /// buffer (cleared by any other write of it).
    pub fn stable_mark_buffer(&self, path: &str, owner: &str) -> Result<()> {
        self.conn()
            .prepare_cached("UPDATE stable SET buffer_owner = ?2 WHERE path = ?1")?
            .execute(params![path, owner])?;
        Ok(())
    }

    /// The instance whose loaded buffer the stable text of `path` is.
    pub fn stable_buffer_owner(&self, path: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .prepare_cached("SELECT buffer_owner FROM stable WHERE path = ?1")?
            .query_row([path], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .flatten())
    }

    /// Removes `path` from the stable layer; returns whether it was there.
    pub fn stable_delete(&self, path: &str) -> Result<bool> {
        Ok(self
            .conn()
            .execute("DELETE FROM stable WHERE path = ?1", [path])?
            > 0)
    }

    /// Every path of the stable layer, sorted.
    pub fn stable_paths(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path FROM stable ORDER BY path")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// `(path, hash)` of every file of the stable layer.
    pub fn stable_hashes(&self) -> Result<Vec<(String, String)>> {
        self.fill_all()?;
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, hash FROM stable ORDER BY path")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// `(path, hash, mode)` of every file of the stable layer.
    pub fn stable_modes(&self) -> Result<Vec<(String, String, u32)>> {
        self.fill_all()?;
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, hash, mode FROM stable ORDER BY path")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The stable layer as one hash of every file's path, content and
    /// mode: equal only while the project is as it was.
    pub fn stable_digest(&self) -> Result<String> {
        let mut h = blake3::Hasher::new();
        for (path, hash, mode) in self.stable_modes()? {
            h.update(format!("{path}\0{hash}\0{mode}\n").as_bytes());
        }
        Ok(h.finalize().to_hex().to_string())
    }

    /// Every path of the stable layer that matches the SQL `LIKE`
    /// pattern `like`, sorted: a few of a monorepo's paths without a
    /// string made for each of the others.
    pub fn stable_paths_like(&self, like: &str) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached("SELECT path FROM stable WHERE path LIKE ?1 ORDER BY path")?;
        let rows = stmt.query_map([like], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Paths of the stable layer directly under or below `dir` ("" = root).
    pub fn stable_paths_under(&self, dir: &str) -> Result<Vec<String>> {
        let conn = self.conn();
        if dir.is_empty() {
            drop(conn);
            return self.stable_paths();
        }
        let mut stmt = conn.prepare_cached(
            "SELECT path FROM stable WHERE path >= ?1 AND path < ?2 ORDER BY path",
        )?;
        let lo = format!("{dir}/");
        let hi = format!("{dir}0"); // '0' sorts right after '/'
        let rows = stmt.query_map(params![lo, hi], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    // ---- overlays --------------------------------------------------------

    pub fn overlay_entry(&self, agent: &str, path: &str) -> Result<Option<OverlayEntry>> {
        overlay_entry(&self.conn(), agent, path)
    }

    /// Records `hash` (`None`: a whiteout) for `path` in `agent`'s overlay.
    /// The base is remembered from the first write only: later writes by the
    /// same agent are still based on the stable content it first saw.
    pub fn overlay_set(
        &self,
        agent: &str,
        path: &str,
        hash: Option<&str>,
        base_hash: Option<&str>,
    ) -> Result<()> {
        self.conn().execute(
            "INSERT INTO overlays (agent_id, path, hash, base_hash) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (agent_id, path) DO UPDATE SET hash = excluded.hash",
            params![agent, path, hash, base_hash],
        )?;
        Ok(())
    }

    /// Every file `agent` sees, sorted: the stable layer with the agent's
    /// overlay over it (whiteouts remove a file, new files have mode 0644).
    pub fn view(&self, agent: &str) -> Result<Vec<ViewEntry>> {
        self.fill_all()?;
        let mut files: std::collections::BTreeMap<String, ViewEntry> = {
            let conn = self.conn();
            let mut stmt = conn
                .prepare_cached("SELECT path, hash, mode, too_large FROM stable ORDER BY path")?;
            let rows = stmt.query_map([], |r| {
                Ok(ViewEntry {
                    path: r.get(0)?,
                    hash: r.get(1)?,
                    mode: r.get(2)?,
                    too_large: r.get(3)?,
                })
            })?;
            rows.map(|r| r.map(|e| (e.path.clone(), e)))
                .collect::<std::result::Result<_, _>>()?
        };
        for (path, entry) in self.overlay_entries(agent)? {
            match entry.hash {
                None => {
                    files.remove(&path);
                }
                Some(hash) => {
                    let mode = files.get(&path).map_or(0o644, |e| e.mode);
                    files.insert(
                        path.clone(),
                        ViewEntry {
                            path,
                            hash,
                            mode,
                            too_large: false,
                        },
                    );
                }
            }
        }
        Ok(files.into_values().collect())
    }

    pub fn overlay_entries(&self, agent: &str) -> Result<Vec<(String, OverlayEntry)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT path, hash, base_hash FROM overlays WHERE agent_id = ?1 ORDER BY path",
        )?;
        let rows = stmt.query_map([agent], |r| {
            Ok((
                r.get(0)?,
                OverlayEntry {
                    hash: r.get(1)?,
                    base_hash: r.get(2)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Empties an agent's overlay, back to where it started: nothing, or
    /// for a forked agent, its base.
    pub fn overlay_clear(&self, agent: &str) -> Result<()> {
        self.transaction(|tx| {
            tx.execute("DELETE FROM overlays WHERE agent_id = ?1", [agent])?;
            tx.execute(
                "INSERT INTO overlays (agent_id, path, hash, base_hash)
                 SELECT agent_id, path, hash, base_hash FROM agent_bases WHERE agent_id = ?1",
                [agent],
            )?;
            Ok(())
        })
    }

    /// Adds to the base a forked agent's overlay starts from (and returns
    /// to at every [`Store::overlay_clear`]).
    pub fn agent_base_set(
        &self,
        agent: &str,
        path: &str,
        hash: Option<&str>,
        base_hash: Option<&str>,
    ) -> Result<()> {
        self.conn().execute(
            "INSERT OR REPLACE INTO agent_bases (agent_id, path, hash, base_hash) VALUES (?1, ?2, ?3, ?4)",
            params![agent, path, hash, base_hash],
        )?;
        Ok(())
    }

    // ---- agents ----------------------------------------------------------

    pub fn agent_insert(&self, rec: &AgentRecord) -> Result<()> {
        self.conn().execute(
            "INSERT INTO agents (id, state, task, spec, summary, error, changed_files, conflicted,
                                 owner_pid, created_at, updated_at, rounds, owner, recoveries, feedback)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                rec.id,
                rec.state.as_str(),
                // Kept beside the spec for whoever reads the file with sqlite3.
                rec.spec.task,
                serde_json::to_string(&rec.spec)?,
                rec.summary,
                rec.error,
                serde_json::to_string(&rec.changed_files)?,
                rec.conflicted,
                rec.owner_pid,
                rec.created_at,
                rec.updated_at,
                rec.rounds,
                rec.owner,
                rec.recoveries,
                serde_json::to_string(&rec.feedback)?,
            ],
        )?;
        append_event(
            &self.conn(),
            Some(&rec.id),
            "agent_created",
            &serde_json::json!({"task": rec.spec.task}),
        )?;
        Ok(())
    }

    /// Keeps what a program of agent `id` said with `log()`, the last
    /// [`AGENT_LOG_LINES`] lines of at most [`AGENT_LOG_LINE_BYTES`] each.
    pub fn agent_log_append(&self, id: &str, lines: &[String]) -> Result<()> {
        let conn = self.conn();
        let old: String = conn
            .prepare_cached("SELECT log FROM agents WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?
            .ok_or_else(|| StoreError::NoAgent(id.to_owned()))?;
        let mut log: Vec<String> = serde_json::from_str(&old).unwrap_or_default();
        log.extend(lines.iter().map(|l| {
            let mut end = l.len().min(AGENT_LOG_LINE_BYTES);
            while !l.is_char_boundary(end) {
                end -= 1;
            }
            l[..end].to_owned()
        }));
        let skip = log.len().saturating_sub(AGENT_LOG_LINES);
        let log: Vec<String> = log.into_iter().skip(skip).collect();
        conn.prepare_cached("UPDATE agents SET log = ?2 WHERE id = ?1")?
            .execute(params![id, serde_json::to_string(&log)?])?;
        Ok(())
    }

    /// Adds one model call's tokens to agent `id`'s totals (kept apart
    /// from its state, which only the lifecycle writes); nothing for an id
    /// that is no agent. A failure is counted among the unrecorded, as an
    /// effect's is.
    pub fn agent_usage_add(&self, id: &str, used: TokenUse) -> Option<()> {
        let r = (|| -> Result<()> {
            let conn = self.conn();
            let tx = conn.unchecked_transaction()?;
            // A node's chat is no agent of the lifecycle: nothing to add to.
            let Some(old) = tx
                .prepare_cached("SELECT usage FROM agents WHERE id = ?1")?
                .query_row([id], |r| r.get::<_, Option<String>>(0))
                .optional()?
            else {
                return Ok(());
            };
            let was: TokenUse = old
                .and_then(|u| serde_json::from_str(&u).ok())
                .unwrap_or_default();
            tx.prepare_cached("UPDATE agents SET usage = ?2 WHERE id = ?1")?
                .execute(params![id, serde_json::to_string(&was.plus(used))?])?;
            tx.commit()?;
            Ok(())
        })();
        self.noted(r)
    }

    pub fn agent(&self, id: &str) -> Result<AgentRecord> {
        agent(&self.conn(), id)?.ok_or_else(|| StoreError::NoAgent(id.to_owned()))
    }

    pub fn agents(&self) -> Result<Vec<AgentRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("{AGENT_SELECT} ORDER BY created_at, id"))?;
        let rows = stmt.query_map([], agent_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Saves every field of `rec` (state, summary, error, files) and logs the
    /// state in the event log.
    pub fn agent_update(&self, rec: &AgentRecord) -> Result<()> {
        let conn = self.conn();
        agent_update(&conn, rec)
    }

    // ---- proposals -------------------------------------------------------

    pub fn proposal_files(&self, agent: &str) -> Result<Vec<ProposalFile>> {
        proposal_files(&self.conn(), agent)
    }

    /// The agents whose pending (completed) proposal touches `path`.
    pub fn proposals_on(&self, path: &str) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT p.agent_id FROM proposal_files p JOIN agents a ON a.id = p.agent_id
             WHERE p.path = ?1 AND a.state = 'completed' ORDER BY p.agent_id",
        )?;
        let rows = stmt.query_map([path], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    // ---- events ----------------------------------------------------------

    pub fn append_event(
        &self,
        agent: Option<&str>,
        kind: &str,
        data: &serde_json::Value,
    ) -> Result<i64> {
        append_event(&self.conn(), agent, kind, data)
    }

    /// Events from sequence `after` on, oldest first: `(seq, agent, kind, data)`.
    pub fn events_since(&self, after: i64) -> Result<Vec<EventRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, agent_id, kind, data FROM events WHERE seq > ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([after], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Whether the database of the project at `root` can be read and is
    /// sound (`PRAGMA quick_check`), opened read-only beside a running
    /// core; the reason when not. For `:checkhealth`.
    pub fn check_file(root: &Path) -> std::result::Result<(), String> {
        let path = root.join(".chimera").join("chimera.db");
        let conn = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let verdict: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(format!("{}: {verdict}", path.display()))
        }
    }

    /// `PRAGMA integrity_check`, "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self
            .conn()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests;

/// Puts the database in WAL mode. The switch of a new database needs it
/// alone, and SQLite answers "database is locked" at once, without
/// waiting, to a connection that would otherwise deadlock with another
/// making the same switch (a core and a `chimera` command opening a new
/// project together): it is tried again until the lock's usual wait.
fn wal(conn: &Connection) -> Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < BUSY_WAIT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            done => return Ok(done?),
        }
    }
}
