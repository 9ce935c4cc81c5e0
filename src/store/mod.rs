//! One SQLite database per project (`<root>/.chimera/chimera.db`, WAL):
//! content-addressed blobs, the stable layer (the human's ground truth),
//! per-agent overlays, agent records, proposals and an append-only event log.
//! One database means an accept or a recovery is a single transaction.

mod audit;
mod calls;
mod chat;
mod checkpoints;
mod forget;
mod history;
pub mod journal;
mod private;
mod remora;
mod schema;

pub use crate::hash::{hash_bytes, random_token, unique_digest, Hash};
pub use audit::Unrecorded;
pub use calls::ToolCall;
pub use chat::ChatEntry;
pub use checkpoints::Checkpoint;
pub use history::{Branch, Effect, ManifestEntry, Snapshot};

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};

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
    #[error("no snapshot or branch `{0}`; :Chimera history lists them")]
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
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// `log()` lines kept per agent, and bytes kept per line.
pub const AGENT_LOG_LINES: usize = 200;
pub const AGENT_LOG_LINE_BYTES: usize = 1_000;

/// SQLite's default: the WAL is copied into the database file once it holds
/// this many pages.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 1000;

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

/// A file read from disk for the stable layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFile {
    pub path: String,
    /// `None`: larger than the limit, so never read.
    pub data: Option<Vec<u8>>,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
}

/// One file of the stable layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StableEntry {
    pub hash: Hash,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    /// The content is not stored because the file is larger than the limit.
    pub too_large: bool,
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

/// Lifecycle state of an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Queued,
    Running,
    Completed,
    Accepted,
    /// Ended with nothing to review, and nobody accepted anything: the
    /// run changed no file (an answer, messages to other nodes), or the
    /// human's text already holds every change it made.
    Settled,
    Rejected,
    Failed,
    Cancelled,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Accepted => "accepted",
            Self::Settled => "settled",
            Self::Rejected => "rejected",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "accepted" => Self::Accepted,
            "settled" => Self::Settled,
            "rejected" => Self::Rejected,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Still working: neither a proposal nor an end.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Queued | Self::Running)
    }

    /// An end state: nothing more happens to the agent.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Accepted | Self::Settled | Self::Rejected | Self::Failed | Self::Cancelled
        )
    }

    /// The lifecycle: `queued → running → completed → accepted | rejected`,
    /// plus `failed` and `cancelled`. A running agent whose owner died goes
    /// back to `queued` (recovery); a completed one may run again (reject
    /// with feedback). Only a human (or a script of theirs) makes an agent
    /// `accepted`; a run that changed nothing, or whose every change the
    /// human's text already holds, ends `settled`.
    pub fn can_become(self, to: Self) -> bool {
        use AgentState::*;
        self == to
            || matches!(
                (self, to),
                (Queued, Running | Cancelled | Failed)
                    | (Running, Completed | Settled | Failed | Cancelled | Queued)
                    | (Completed, Accepted | Settled | Rejected | Queued | Cancelled | Failed)
                    // The human accepts what their text already holds.
                    | (Settled, Accepted)
            )
    }
}

/// The record of one agent, as shown to users (`require("chimera").agent(id)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: String,
    pub state: AgentState,
    pub task: String,
    /// Extra context given with the task (a selection, the current file).
    pub context: Option<String>,
    pub summary: Option<String>,
    pub error: Option<String>,
    pub changed_files: Vec<String>,
    /// The proposal no longer applies cleanly to the human's files.
    pub conflicted: bool,
    /// Model round trips the agent used (1 = no repair needed).
    pub rounds: u32,
    /// The Neovim instance running it.
    #[serde(default)]
    pub owner: String,
    /// Times it was re-queued because its owner died while it ran.
    #[serde(default)]
    pub recoveries: u32,
    /// The project file the task concerns, and the cursor line in it.
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub cursor_line: Option<usize>,
    /// Earlier attempts the user rejected with feedback, oldest first.
    #[serde(default)]
    pub feedback: Vec<Feedback>,
    /// Code or tool mode, when the task chose one.
    #[serde(default)]
    pub mode: Option<crate::config::AgentMode>,
    /// The capabilities preset the task chose (default: the configured one).
    #[serde(default)]
    pub capabilities: Option<String>,
    /// The ACP agent (`agents.external`) doing the work; `None`: Chimera's own.
    pub external: Option<String>,
    /// What its programs said with `log()`, oldest first (the last
    /// [`AGENT_LOG_LINES`] lines).
    #[serde(default)]
    pub log: Vec<String>,
    pub owner_pid: u32,
    pub created_at: i64,
    pub updated_at: i64,
}

impl AgentRecord {
    /// A new `queued` agent for `task`, owned by this process, with
    /// nothing done yet.
    pub fn new(id: impl Into<String>, task: impl Into<String>) -> Self {
        let now = now_ms();
        Self {
            id: id.into(),
            state: AgentState::Queued,
            task: task.into(),
            context: None,
            summary: None,
            error: None,
            changed_files: vec![],
            conflicted: false,
            rounds: 0,
            owner: String::new(),
            recoveries: 0,
            file: None,
            cursor_line: None,
            feedback: vec![],
            mode: None,
            capabilities: None,
            external: None,
            log: vec![],
            owner_pid: std::process::id(),
            created_at: now,
            updated_at: now,
        }
    }
}

/// A rejected attempt and what the user said about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// The rejected proposal as a unified diff.
    pub attempt: String,
    pub feedback: String,
}

/// One file of a proposal: the stable content it was diffed against and the
/// agent's content (`None` on either side: the file does not exist there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposalFile {
    pub path: String,
    pub base_hash: Option<Hash>,
    pub new_hash: Option<Hash>,
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
        conn.busy_timeout(Duration::from_secs(5))?;
        // A transaction takes the write lock when it begins: one that read
        // first and wrote later would fail at once (SQLITE_BUSY_SNAPSHOT,
        // no waiting) if another process had written in between.
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // 32 MB of page cache: indexing a large project writes ~10⁵ rows.
        conn.pragma_update(None, "cache_size", -32_000)?;
        conn.execute_batch(schema::SCHEMA)?;
        for (table, column, kind) in schema::ADDED_COLUMNS {
            let exists: bool = conn
                .prepare(&format!(
                    "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
                ))?
                .exists([column])?;
            if !exists {
                conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
            }
        }
        conn.execute_batch(schema::LATE_INDEXES)?;
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
                read_key(&conn)?.unwrap_or_default()
            }
        };
        Ok(Self {
            conn: Mutex::new(conn),
            root: root.to_path_buf(),
            secrets,
            journal_key: *blake3::hash(key.as_bytes()).as_bytes(),
            unrecorded: Mutex::default(),
        })
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

    pub fn stable_entry(&self, path: &str) -> Result<Option<StableEntry>> {
        stable_entry(&self.conn(), path)
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
        let conn = self.conn();
        match &f.data {
            Some(data) => stable_put(&conn, &f.path, data, f.mode, f.mtime_ns, max_bytes),
            None => stable_put_too_large(&conn, &f.path, f.size, f.mode, f.mtime_ns),
        }
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
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, hash FROM stable ORDER BY path")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// `(path, hash, mode)` of every file of the stable layer.
    pub fn stable_modes(&self) -> Result<Vec<(String, String, u32)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, hash, mode FROM stable ORDER BY path")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
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

    /// Imports many files in one transaction (the initial import).
    pub fn stable_import(&self, files: &[DiskFile], max_bytes: u64) -> Result<usize> {
        let mut conn = self.conn();
        // A whole project's contents would cross the WAL's checkpoint size in
        // this one commit and make it copy them all into the database file
        // before returning (half the import's time). The copy is left to
        // `checkpoint`, which the runtime runs after the project is ready.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let imported = (|| {
            let tx = conn.transaction()?;
            let mut changed = 0;
            for f in files.iter().filter(|f| !self.secrets.is_match(&f.path)) {
                let put = match &f.data {
                    Some(data) => stable_put(&tx, &f.path, data, f.mode, f.mtime_ns, max_bytes)?,
                    None => stable_put_too_large(&tx, &f.path, f.size, f.mode, f.mtime_ns)?,
                };
                if put {
                    changed += 1;
                }
            }
            tx.commit()?;
            Ok(changed)
        })();
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
        imported
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
            "INSERT INTO agents (id, state, task, context, summary, error, changed_files, conflicted,
                                 owner_pid, created_at, updated_at, rounds, owner, recoveries, file, cursor_line, feedback, mode,
                                 capabilities, external)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
            params![
                rec.id,
                rec.state.as_str(),
                rec.task,
                rec.context,
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
                rec.file,
                rec.cursor_line.map(|l| l as i64),
                serde_json::to_string(&rec.feedback)?,
                rec.mode.map(|m| m.as_str()),
                rec.capabilities,
                rec.external
            ],
        )?;
        append_event(
            &self.conn(),
            Some(&rec.id),
            "agent_created",
            &serde_json::json!({"task": rec.task}),
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

    // ---- instances, recovery, retention ----------------------------------

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
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let cutoff = now_ms() - older_than_ms;
        let agents = tx.execute(
            "DELETE FROM agents WHERE state IN ('accepted', 'settled', 'rejected', 'failed', 'cancelled') AND updated_at < ?1",
            [cutoff],
        )?;
        // The effect log keeps the same window of history.
        tx.execute("DELETE FROM effects WHERE created_at < ?1", [cutoff])?;
        tx.execute("DELETE FROM tool_calls WHERE created_at < ?1", [cutoff])?;
        let blobs = delete_unreferenced_blobs(&tx)?;
        tx.commit()?;
        Ok((agents, blobs))
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

// ---- free functions usable inside a transaction ---------------------------

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

pub fn stable_entry(conn: &Connection, path: &str) -> Result<Option<StableEntry>> {
    Ok(conn
        .prepare_cached("SELECT hash, mode, size, mtime_ns, too_large FROM stable WHERE path = ?1")?
        .query_row([path], |r| {
            Ok(StableEntry {
                hash: r.get(0)?,
                mode: r.get(1)?,
                size: r.get::<_, i64>(2)? as u64,
                mtime_ns: r.get(3)?,
                too_large: r.get(4)?,
            })
        })
        .optional()?)
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
    if let Some(old) = stable_entry(conn, path)? {
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
                                          buffer_owner = NULL",
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
    if stable_entry(conn, path)?.is_some_and(|old| old.hash == hash && old.mode == mode) {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT INTO stable (path, hash, mode, size, mtime_ns, too_large) VALUES (?1, ?2, ?3, ?4, ?5, 1)
         ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, mode = excluded.mode, size = excluded.size,
                                          mtime_ns = excluded.mtime_ns, too_large = 1, buffer_owner = NULL",
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
                                          mtime_ns = excluded.mtime_ns, too_large = 0, buffer_owner = NULL",
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

const AGENT_SELECT: &str = "SELECT id, state, task, context, summary, error, changed_files, conflicted,
                                   owner_pid, created_at, updated_at, rounds, owner, recoveries, file,
                                   cursor_line, feedback, mode, capabilities, log, external FROM agents";

fn agent_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AgentRecord> {
    let state: String = r.get(1)?;
    let files: String = r.get(6)?;
    Ok(AgentRecord {
        id: r.get(0)?,
        state: AgentState::parse(&state).unwrap_or(AgentState::Failed),
        task: r.get(2)?,
        context: r.get(3)?,
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
        file: r.get(14)?,
        cursor_line: r.get::<_, Option<i64>>(15)?.map(|l| l as usize),
        feedback: serde_json::from_str(&r.get::<_, String>(16)?).unwrap_or_default(),
        mode: r
            .get::<_, Option<String>>(17)?
            .and_then(|m| crate::config::AgentMode::parse(&m)),
        capabilities: r.get(18)?,
        log: serde_json::from_str(&r.get::<_, String>(19)?).unwrap_or_default(),
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
                           updated_at = ?7, rounds = ?8, owner = ?9, recoveries = ?10, feedback = ?11 WHERE id = ?1",
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
        serde_json::to_string(&rec.feedback)?
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

#[cfg(test)]
mod tests;
