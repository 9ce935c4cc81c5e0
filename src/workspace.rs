//! What one agent may do with the project's files, in one place: its
//! overlay behind its capabilities — a path of the project (no `..`, no
//! `.git`), reached through no link, readable or writable as the
//! capabilities say, never a secret, never over the size limit. Every
//! front end goes through it: host functions (code and tool mode), node
//! tools, extension tools (through the host functions), a diff an A2A
//! peer sent back, MCP sessions, and what an ACP agent left in its folder.

use crate::capabilities::Capabilities;
use crate::overlay::{Overlay, OverlayError};
use crate::paths::ProjectPath;
use crate::store::{Store, StoreError};
use crate::workdir::{Change as FolderChange, Workdir, WorkdirError};

mod change;
mod kept;
pub use change::{Change, FileChange};
pub use kept::Kept;

/// The human's text of each file as an agent last read it (by hash; `None`:
/// not there), so that a whole file it writes later is taken as a change of
/// that text and merged onto what the human typed since, never written
/// over it: a model takes seconds between reading and writing.
#[derive(Debug, Clone, Default)]
pub struct ReadFrom(std::collections::HashMap<String, Option<String>>);

impl ReadFrom {
    /// What `newer` noted, over what this holds.
    pub fn merge(&mut self, newer: ReadFrom) {
        self.0.extend(newer.0);
    }
}

/// One thing a program left in its folder: taken into the overlay, or
/// not and why.
#[derive(Debug)]
pub struct Taken {
    pub what: String,
    pub result: Result<(), String>,
}

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

    /// The text of each of `paths` the agent may read, given to `each` in
    /// no set order; a file that is gone, binary or too large is left out.
    /// Many files cost one read of the store, not one each.
    pub fn read_texts(
        &self,
        paths: &[&str],
        each: &mut dyn FnMut(String, String),
    ) -> Result<(), WorkspaceError> {
        let readable: Vec<&str> = paths
            .iter()
            .copied()
            .filter(|p| self.caps.check_read(p).is_ok())
            .collect();
        Ok(self.overlay.read_each(&readable, &mut |path, bytes| {
            if let Some(text) = crate::overlay::as_text(bytes) {
                each(path, text);
            }
        })?)
    }

    /// Writes `data` to `p` in the agent's overlay, if it may.
    pub fn write(&self, p: &ProjectPath, data: &[u8]) -> Result<(), WorkspaceError> {
        self.may_write(p)?;
        Ok(self.overlay.write(p, data)?)
    }

    /// Writes `data` to `p` as a change of the text whose hash is `base`
    /// ([`Overlay::write_from`]), if it may.
    pub fn write_from(
        &self,
        p: &ProjectPath,
        data: &[u8],
        base: Option<&str>,
    ) -> Result<(), WorkspaceError> {
        self.may_write(p)?;
        Ok(self.overlay.write_from(p, data, base)?)
    }

    /// Reads `p` as [`Workspace::read_text`] does, remembering in `read`
    /// which text of the human's it was.
    pub fn read_noted(
        &self,
        p: &ProjectPath,
        read: &mut ReadFrom,
    ) -> Result<String, WorkspaceError> {
        let text = self.read_text(p)?;
        let human = self
            .overlay
            .store()
            .stable_entry(p.as_str())?
            .map(|e| e.hash);
        read.0.insert(p.as_str().to_owned(), human);
        Ok(text)
    }

    /// Writes `data` to `p` as a change of the text the agent last read of
    /// it (see [`ReadFrom`]); of the human's text now if it never read it.
    pub fn write_read(
        &self,
        p: &ProjectPath,
        data: &[u8],
        read: &ReadFrom,
    ) -> Result<(), WorkspaceError> {
        match read.0.get(p.as_str()) {
            Some(base) => self.write_from(p, data, base.as_deref()),
            None => self.write(p, data),
        }
    }

    /// Deletes `p` for the agent (a whiteout), if it may.
    pub fn delete(&self, p: &ProjectPath) -> Result<(), WorkspaceError> {
        self.may_write(p)?;
        Ok(self.overlay.delete(p)?)
    }

    /// The project's files the agent may see.
    pub fn files(&self) -> Result<Vec<String>, WorkspaceError> {
        let mut files = self.overlay.files()?;
        files.retain(|f| self.caps.may_see(f));
        Ok(files)
    }

    /// Whether `p` is there for the agent and one it may see.
    pub fn exists(&self, p: &ProjectPath) -> Result<bool, WorkspaceError> {
        Ok(self.caps.may_see(p.as_str()) && self.overlay.exists(p)?)
    }

    /// The agent's change as a value, read once ([`Change`]).
    pub fn change(&self) -> Result<Change, StoreError> {
        Change::read(self.overlay.store(), self.overlay.agent())
    }

    /// Writes the files of `change` corrected since it was read. No rule
    /// is asked again: a correction only rewrites a file the agent wrote.
    pub fn put(&self, change: &mut Change) -> Result<(), WorkspaceError> {
        for (path, text) in change.take_edited() {
            let p =
                ProjectPath::parse(&path).map_err(|e| WorkspaceError::Invalid(e.to_string()))?;
            self.overlay.write(&p, text.as_bytes())?;
        }
        Ok(())
    }

    /// A copy of the agent's change, to put back with [`Workspace::restore`]
    /// after later tries.
    pub fn keep(&self) -> Result<Kept, StoreError> {
        Kept::take(self.overlay.store(), self.overlay.agent())
    }

    /// Makes the agent's overlay what it was when `kept` was taken.
    pub fn restore(&self, kept: &Kept) -> Result<(), StoreError> {
        kept.restore(self.overlay.store(), self.overlay.agent())
    }

    /// Writes `new`, the agent's text of `p` made from `old`, if it may.
    /// When the file moved on meanwhile (the human typed, Remora wrote its
    /// IDs into the buffer) the change goes onto what is there now, or it
    /// would undo what happened; `Ok(false)` when the two cannot be merged.
    pub fn write_merged(
        &self,
        p: &ProjectPath,
        old: &str,
        new: &str,
    ) -> Result<bool, WorkspaceError> {
        let merged = match self.read_text(p) {
            Ok(now) if now != old => match crate::diff::merge3(old, &now, new) {
                Some(merged) => Some(merged),
                None => return Ok(false),
            },
            _ => None,
        };
        self.write(p, merged.as_deref().unwrap_or(new).as_bytes())?;
        Ok(true)
    }

    /// Empties the agent's overlay: its change is gone.
    pub fn clear(&self) -> Result<(), StoreError> {
        self.overlay.store().overlay_clear(self.overlay.agent())
    }

    /// Whether the agent's overlay touches no file.
    pub fn untouched(&self) -> Result<bool, StoreError> {
        Ok(self
            .overlay
            .store()
            .overlay_entries(self.overlay.agent())?
            .is_empty())
    }

    /// Refuses a write the capabilities forbid.
    pub fn may_write(&self, p: &ProjectPath) -> Result<(), WorkspaceError> {
        self.caps
            .check_write(p.as_str())
            .map_err(|d| WorkspaceError::Denied(d.to_string()))
    }

    /// Takes what a program changed in the agent's folder since the last
    /// look ([`Workdir::read_back`]) into the overlay, each change checked
    /// as a write is. What was taken or refused, in words, for the log.
    pub fn take_back(&self, work: &mut Workdir) -> Result<Vec<Taken>, WorkdirError> {
        let (changes, refused) = work.read_back(self.overlay.max_bytes())?;
        let mut said = Vec::with_capacity(changes.len() + refused.len());
        // A change is of the text the folder held: what the human typed
        // since is merged with it, never written over.
        for change in changes {
            said.push(match &change {
                FolderChange::Write { path, data, was } => Taken {
                    what: format!("changed {path} ({} bytes)", data.len()),
                    result: self
                        .write_from(path, data, was.as_deref())
                        .map_err(|e| e.to_string()),
                },
                FolderChange::Delete { path, was } => Taken {
                    what: format!("deleted {path}"),
                    result: self
                        .may_write(path)
                        .and_then(|()| self.delete_taken(path, was.as_deref()))
                        .map_err(|e| e.to_string()),
                },
            });
        }
        said.extend(refused.into_iter().map(|r| Taken {
            what: format!("left {}", r.path),
            result: Err(r.why),
        }));
        Ok(said)
    }

    /// A deletion in the agent's folder, as a change of the file it was
    /// given (`was`); a file the human deleted meanwhile is gone already.
    fn delete_taken(&self, path: &ProjectPath, was: Option<&str>) -> Result<(), WorkspaceError> {
        if !self.overlay.exists(path)? {
            return Ok(());
        }
        Ok(self.overlay.delete_from(path, was)?)
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

#[cfg(test)]
mod take_back_tests {
    use super::*;

    /// A project of `files` under `t`, and agent `ag`'s folder filled from it.
    fn filled(t: &tempfile::TempDir, files: &[(&str, &str)]) -> (Store, Capabilities, Workdir) {
        let store = Store::open_in_memory(t.path()).unwrap();
        for (path, text) in files {
            store
                .stable_put(path, text.as_bytes(), 0o644, 1, 1 << 20)
                .unwrap();
        }
        store
            .agent_insert(&crate::store::AgentRecord::new("ag", "t"))
            .unwrap();
        let caps = Capabilities::new(&Default::default(), None).unwrap();
        let mut w = Workdir::create(&t.path().join("work"), "ag").unwrap();
        w.fill(&store, "ag", &|_| true).unwrap();
        (store, caps, w)
    }

    /// The human types in a file while a program works on its copy in the
    /// agent's folder: the proposal is the program's change merged onto
    /// the human's text, not the copy written over it.
    #[test]
    fn what_a_program_changed_is_merged_onto_what_the_human_typed_meanwhile() {
        let t = tempfile::tempdir().unwrap();
        let (store, caps, mut w) = filled(
            &t,
            &[("app.py", "a = 1\nb = 2\nc = 3\n"), ("gone.py", "g = 1\n")],
        );
        std::fs::write(w.files().join("app.py"), "a = 1\nb = 2\nc = 30\n").unwrap();
        std::fs::remove_file(w.files().join("gone.py")).unwrap();
        // Meanwhile the human's text moves on.
        store
            .stable_put(
                "app.py",
                b"# mine\na = 1\nb = 2\nc = 3\n",
                0o644,
                2,
                1 << 20,
            )
            .unwrap();
        store
            .stable_put("gone.py", b"g = 2\n", 0o644, 2, 1 << 20)
            .unwrap();
        let ws = Workspace::new(&store, "ag", &caps, 1 << 20);
        let taken = ws.take_back(&mut w).unwrap();
        assert!(taken.iter().all(|t| t.result.is_ok()), "{taken:?}");
        let conflicts = crate::accept::build_proposal(&store, "ag").unwrap();
        assert_eq!(
            conflicts,
            ["gone.py"],
            "a deletion of what the human changed"
        );
        let files = store.proposal_files("ag").unwrap();
        let app = files.iter().find(|f| f.path == "app.py").unwrap();
        assert_eq!(
            store.blob(app.new_hash.as_deref().unwrap()).unwrap(),
            b"# mine\na = 1\nb = 2\nc = 30\n",
            "the human's line is kept"
        );
    }

    /// Found by `make sim` (seed 12, step 619): the human deleted a file
    /// while a program deleted its copy too. That deletion is already
    /// done, not refused as "does not exist".
    #[test]
    fn a_file_both_the_human_and_the_program_deleted_is_no_refusal() {
        let t = tempfile::tempdir().unwrap();
        let (store, caps, mut w) = filled(&t, &[("gone.py", "g = 1\n")]);
        std::fs::remove_file(w.files().join("gone.py")).unwrap();
        store.stable_delete("gone.py").unwrap();
        let ws = Workspace::new(&store, "ag", &caps, 1 << 20);
        let taken = ws.take_back(&mut w).unwrap();
        assert!(taken.iter().all(|t| t.result.is_ok()), "{taken:?}");
        assert!(store.overlay_entries("ag").unwrap().is_empty());
    }
}
