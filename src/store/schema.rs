//! The database schema, applied idempotently at every open.

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS blobs (
    hash TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
-- The human's ground truth: a loaded buffer's text, else the file on disk.
CREATE TABLE IF NOT EXISTS stable (
    path      TEXT PRIMARY KEY,
    hash      TEXT NOT NULL,
    mode      INTEGER NOT NULL,
    size      INTEGER NOT NULL,
    mtime_ns  INTEGER NOT NULL,
    too_large INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS agents (
    id            TEXT PRIMARY KEY,
    state         TEXT NOT NULL,
    task          TEXT NOT NULL,
    context       TEXT,
    summary       TEXT,
    error         TEXT,
    changed_files TEXT NOT NULL DEFAULT '[]',
    conflicted    INTEGER NOT NULL DEFAULT 0,
    rounds        INTEGER NOT NULL DEFAULT 0,
    -- The Neovim instance that runs it (see `instances`).
    owner         TEXT NOT NULL DEFAULT '',
    -- Times it was re-queued after its owner died while it ran.
    recoveries    INTEGER NOT NULL DEFAULT 0,
    -- The file the task concerns and the cursor line, to run it again.
    file          TEXT,
    cursor_line   INTEGER,
    -- Rejected attempts with the user's feedback (JSON list).
    feedback      TEXT NOT NULL DEFAULT '[]',
    owner_pid     INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
-- hash NULL is a whiteout: the agent deleted the file.
CREATE TABLE IF NOT EXISTS overlays (
    agent_id  TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    path      TEXT NOT NULL,
    hash      TEXT,
    base_hash TEXT,
    PRIMARY KEY (agent_id, path)
);
-- Where a forked agent starts: overlay entries that reset its overlay
-- instead of an empty one (the project as in a snapshot).
CREATE TABLE IF NOT EXISTS agent_bases (
    agent_id  TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    path      TEXT NOT NULL,
    hash      TEXT,
    base_hash TEXT,
    PRIMARY KEY (agent_id, path)
);
CREATE TABLE IF NOT EXISTS proposal_files (
    agent_id  TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    path      TEXT NOT NULL,
    base_hash TEXT,
    new_hash  TEXT,
    PRIMARY KEY (agent_id, path)
);
-- Running Neovim instances: an owner is alive while its heartbeat is fresh
-- and, on this machine, its process runs.
CREATE TABLE IF NOT EXISTS instances (
    owner      TEXT PRIMARY KEY,
    pid        INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat  INTEGER NOT NULL
);
-- The event log: agent lifecycle events and the Remora events (whose
-- `kind` is the seed's event type, e.g. `AgentMessageEvent`).
CREATE TABLE IF NOT EXISTS events (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    ts       INTEGER NOT NULL,
    agent_id TEXT,
    kind     TEXT NOT NULL,
    data     TEXT NOT NULL,
    event_id TEXT,
    correlation_id TEXT
);
-- Remora: Python nodes (files, classes, functions, methods) with stable IDs.
-- Queries go to the topology in memory; these tables persist it, so they
-- carry no index beyond their keys (every index slows the first index down).
CREATE TABLE IF NOT EXISTS nodes (
    id          TEXT PRIMARY KEY,
    node_type   TEXT NOT NULL,
    name        TEXT NOT NULL,
    qualname    TEXT NOT NULL,
    parent_id   TEXT,
    file_path   TEXT NOT NULL,
    start_line  INTEGER NOT NULL,
    end_line    INTEGER NOT NULL,
    status      TEXT NOT NULL DEFAULT 'active',
    source_hash TEXT NOT NULL,
    -- Position among the live nodes of its file; -1 once orphaned.
    ord         INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS edges (
    from_id   TEXT NOT NULL,
    to_id     TEXT NOT NULL,
    edge_type TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id, edge_type)
) WITHOUT ROWID;
-- Each indexed file: the hash of the text indexed and its references (JSON),
-- so an unchanged file is never parsed again and edges can be backfilled.
CREATE TABLE IF NOT EXISTS remora_files (
    path TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    refs TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- Snapshots of the stable layer; `manifest` is a blob listing
-- `mode hash path` per file.
CREATE TABLE IF NOT EXISTS snapshots (
    id         TEXT PRIMARY KEY,
    message    TEXT NOT NULL,
    manifest   TEXT NOT NULL,
    files      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    -- The last effect before it: later effects happened after it.
    effect_seq INTEGER NOT NULL DEFAULT 0
);
-- Branches: a name for a line of snapshots, pointing at its head (what a
-- fork, a rollback or `--since` may name instead of a snapshot ID).
CREATE TABLE IF NOT EXISTS branches (
    name        TEXT PRIMARY KEY,
    snapshot_id TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
);
-- Irreversible actions (LLM calls, commands, network, MCP), each after
-- the latest snapshot at the time.
CREATE TABLE IF NOT EXISTS effects (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,
    agent_id    TEXT,
    input       TEXT NOT NULL,
    output      TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    snapshot_id TEXT,
    created_at  INTEGER NOT NULL
);
-- An agent's checkpoints of its own overlay (`snapshot()` in a program):
-- what `rollback(name)` brings the overlay back to. `effect_seq` is the
-- last effect before it.
CREATE TABLE IF NOT EXISTS checkpoints (
    agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    effect_seq INTEGER NOT NULL,
    PRIMARY KEY (agent_id, name)
);
CREATE TABLE IF NOT EXISTS checkpoint_files (
    agent_id  TEXT NOT NULL,
    name      TEXT NOT NULL,
    path      TEXT NOT NULL,
    hash      TEXT,
    base_hash TEXT,
    PRIMARY KEY (agent_id, name, path),
    FOREIGN KEY (agent_id, name) REFERENCES checkpoints(agent_id, name) ON DELETE CASCADE
);
-- The audit log: every tool call an agent made (reads and lists too),
-- with its arguments and result in brief.
CREATE TABLE IF NOT EXISTS tool_calls (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args        TEXT NOT NULL,
    ok          INTEGER NOT NULL,
    result      TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_calls_agent ON tool_calls(agent_id, seq);
-- Remora subscriptions: which events wake which node agent (JSON pattern).
CREATE TABLE IF NOT EXISTS subscriptions (
    agent_id TEXT NOT NULL,
    pattern  TEXT NOT NULL,
    PRIMARY KEY (agent_id, pattern)
);
-- Agents that embody a Remora node, and the chain that woke them.
CREATE TABLE IF NOT EXISTS node_agents (
    agent_id       TEXT PRIMARY KEY,
    node_id        TEXT NOT NULL,
    correlation_id TEXT
);
-- The free chat (`:Chimera chat` outside a node): every message, tool
-- step and reply, so the conversation survives restarts.
CREATE TABLE IF NOT EXISTS chat_messages (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    -- user, assistant, tool (a call and its result) or status.
    role         TEXT NOT NULL,
    content      TEXT NOT NULL,
    agent_id     TEXT,
    created_at   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS chat_messages_conversation ON chat_messages(conversation, seq);
-- Remora activation chains (seed §2c), kept while a chain is live.
CREATE TABLE IF NOT EXISTS activation_chain (
    correlation_id TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    depth          INTEGER NOT NULL,
    timestamp      INTEGER NOT NULL,
    PRIMARY KEY (correlation_id, agent_id)
);
";

/// Columns added to tables of older databases: `(table, column, type)`.
pub const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("events", "event_id", "TEXT"),
    ("events", "correlation_id", "TEXT"),
    ("agents", "mode", "TEXT"),
    ("agents", "capabilities", "TEXT"),
    ("agents", "log", "TEXT NOT NULL DEFAULT '[]'"),
    // The ACP agent (`agents.external`) that does the work, if not Chimera's own.
    ("agents", "external", "TEXT"),
    // The task whole, as JSON (`crate::task::TaskSpec`); rows written
    // before it have their task spread over `task` … `external`.
    ("agents", "spec", "TEXT"),
    // The tokens its model calls used, summed (`TokenUse`, as JSON).
    ("agents", "usage", "TEXT"),
    // Accepted, then undone in the buffer it went into.
    ("agents", "undone", "INTEGER NOT NULL DEFAULT 0"),
    // The machine an instance runs on: its pid means something only there.
    ("instances", "host", "TEXT NOT NULL DEFAULT ''"),
    // The instance whose loaded buffer the stable text is (NULL: the
    // file's, or what an accept or rollback wrote).
    ("stable", "buffer_owner", "TEXT"),
    // Recorded by the import by its size, time and mode alone; the
    // content is read when first needed (`store/unread.rs`).
    ("stable", "unread", "INTEGER NOT NULL DEFAULT 0"),
];

/// Indexes over added columns, created after them.
pub const LATE_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS events_correlation ON events(correlation_id);
CREATE INDEX IF NOT EXISTS events_kind ON events(kind);
-- Small (no path in it): the import may add a row to it for every file.
CREATE INDEX IF NOT EXISTS stable_unread ON stable(unread) WHERE unread = 1;
";
