//! Stores for tests: a project of one file, and agents that change it.

use super::{AgentRecord, Store};
use crate::overlay::Overlay;
use crate::paths::ProjectPath;

/// A store whose project holds `path` with `text`.
pub fn with_file(path: &str, text: &str) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    (dir, store)
}

/// A new agent `agent` that wrote `text` to `path` in its overlay.
pub fn agent_writes(store: &Store, agent: &str, path: &str, text: &str) {
    store.agent_insert(&AgentRecord::new(agent, "t")).unwrap();
    Overlay::new(store, agent, 1 << 20)
        .write(&ProjectPath::parse(path).unwrap(), text.as_bytes())
        .unwrap();
}
