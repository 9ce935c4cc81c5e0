//! What one agent may do with the project's files, in one place: its
//! overlay behind its capabilities — a path of the project (no `..`, no
//! `.git`), reached through no link, readable or writable as the
//! capabilities say, never a secret, never over the size limit. Every
//! front end goes through it: host functions (code and tool mode), MCP
//! sessions, and what an ACP agent left in its folder.

use crate::capabilities::Capabilities;
use crate::overlay::{Overlay, OverlayError};
use crate::paths::ProjectPath;
use crate::store::{Store, StoreError};

/// Why an agent's file operation was refused or failed; the message says
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// Not a path of the project (absolute, `..`, empty, reserved).
    #[error("{0}")]
    Invalid(String),
    /// The capabilities or the link rule forbid it.
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    TooLarge(String),
    /// Binary or not UTF-8 where text is wanted.
    #[error("{0}")]
    NotText(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<OverlayError> for WorkspaceError {
    fn from(e: OverlayError) -> Self {
        let text = e.to_string();
        match e {
            OverlayError::NotFound(_) => WorkspaceError::NotFound(text),
            OverlayError::Binary(_) => WorkspaceError::NotText(text),
            OverlayError::TooLarge { .. } => WorkspaceError::TooLarge(text),
            OverlayError::Store(s) => WorkspaceError::Store(s),
        }
    }
}

/// One agent's files as it may touch them.
pub struct Workspace<'a> {
    overlay: Overlay<'a>,
    caps: &'a Capabilities,
}

impl<'a> Workspace<'a> {
    pub fn new(store: &'a Store, agent: &'a str, caps: &'a Capabilities, max_bytes: u64) -> Self {
        Workspace {
            overlay: Overlay::new(store, agent, max_bytes),
            caps,
        }
    }

    /// The overlay underneath, for what needs no rule (listings the
    /// caller filters, proposals).
    pub fn overlay(&self) -> &Overlay<'a> {
        &self.overlay
    }

    /// The project path `raw` names, reached through no link.
    pub fn path(&self, raw: &str) -> Result<ProjectPath, WorkspaceError> {
        let p = ProjectPath::parse(raw).map_err(|e| WorkspaceError::Invalid(e.to_string()))?;
        crate::rootfs::check_no_links(self.overlay.root(), &p)
            .map_err(|e| WorkspaceError::Denied(e.to_string()))?;
        Ok(p)
    }

    /// The text of `p` as the agent sees it, if it may read it.
    pub fn read_text(&self, p: &ProjectPath) -> Result<String, WorkspaceError> {
        self.caps
            .check_read(p.as_str())
            .map_err(|d| WorkspaceError::Denied(d.to_string()))?;
        Ok(self.overlay.read_text(p)?)
    }

    /// Writes `data` to `p` in the agent's overlay, if it may.
    pub fn write(&self, p: &ProjectPath, data: &[u8]) -> Result<(), WorkspaceError> {
        self.may_write(p)?;
        Ok(self.overlay.write(p, data)?)
    }

    /// Deletes `p` for the agent (a whiteout), if it may.
    pub fn delete(&self, p: &ProjectPath) -> Result<(), WorkspaceError> {
        self.may_write(p)?;
        Ok(self.overlay.delete(p)?)
    }

    /// Refuses a write the capabilities forbid.
    pub fn may_write(&self, p: &ProjectPath) -> Result<(), WorkspaceError> {
        self.caps
            .check_write(p.as_str())
            .map_err(|d| WorkspaceError::Denied(d.to_string()))
    }

    /// The entries directly in `dir` that the agent may know of.
    pub fn list_dir(&self, dir: &str) -> Result<Vec<String>, WorkspaceError> {
        Ok(self.overlay.list_dir(dir, |f| self.caps.may_see(f))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::CapabilitiesConfig;

    #[test]
    fn one_set_of_rules_for_reads_writes_links_and_secrets() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(t.path(), root.join("out")).unwrap();
        let store = Store::open_in_memory(&root).unwrap();
        store
            .stable_put("a.py", b"x = 1\n", 0o644, 1, 1 << 20)
            .unwrap();
        store
            .agent_insert(&crate::store::AgentRecord::new("ag", "t"))
            .unwrap();
        let config = CapabilitiesConfig {
            preset: "sandbox".into(),
            ..Default::default()
        };
        let caps = Capabilities::new(&config, None)
            .unwrap()
            .on_disk(root.clone());
        let ws = Workspace::new(&store, "ag", &caps, 1 << 20);
        let a = ws.path("a.py").unwrap();
        assert_eq!(ws.read_text(&a).unwrap(), "x = 1\n");
        ws.write(&a, b"x = 2\n").unwrap();
        assert_eq!(ws.read_text(&a).unwrap(), "x = 2\n");
        assert!(matches!(
            ws.path("../a.py"),
            Err(WorkspaceError::Invalid(_))
        ));
        assert!(matches!(
            ws.path(".git/config"),
            Err(WorkspaceError::Invalid(_))
        ));
        assert!(matches!(
            ws.path("out/x.py"),
            Err(WorkspaceError::Denied(_))
        ));
        let env = ws.path(".env").unwrap();
        assert!(matches!(
            ws.write(&env, b"K=1"),
            Err(WorkspaceError::Denied(_))
        ));
        assert!(matches!(ws.read_text(&env), Err(WorkspaceError::Denied(_))));
        let none = ws.path("none.py").unwrap();
        assert!(matches!(
            ws.read_text(&none),
            Err(WorkspaceError::NotFound(_))
        ));
        let big = vec![b'x'; 2 << 20];
        assert!(matches!(
            ws.write(&none, &big),
            Err(WorkspaceError::TooLarge(_))
        ));
    }
}
