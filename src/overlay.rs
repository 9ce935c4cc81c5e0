//! An agent's copy-on-write view of the project. Reads fall through to the
//! stable layer; writes and deletes (whiteouts) stay in the agent's overlay
//! and are invisible to the human and to every other agent.

use std::collections::BTreeSet;

use crate::paths::ProjectPath;
use crate::store::{Store, StoreError};

/// The paths of `stable` with an agent's entries over them, both sorted
/// by path (as SQLite orders them, byte by byte): a file the agent wrote
/// is there, one it deleted is not. One pass over a monorepo's paths; a
/// set of them cost a task more than the listing itself.
fn over(stable: Vec<String>, mine: Vec<(String, crate::store::OverlayEntry)>) -> Vec<String> {
    let mut out = Vec::with_capacity(stable.len() + mine.len());
    let mut mine = mine.into_iter().peekable();
    for path in stable {
        while let Some((added, e)) = mine.next_if(|(p, _)| *p < path) {
            out.extend(e.hash.is_some().then_some(added));
        }
        match mine.next_if(|(p, _)| *p == path) {
            Some((_, e)) if e.hash.is_none() => {}
            _ => out.push(path),
        }
    }
    out.extend(mine.filter(|(_, e)| e.hash.is_some()).map(|(p, _)| p));
    out
}

/// Why an overlay operation failed; the message goes back to the model.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("file `{0}` does not exist")]
    NotFound(String),
    #[error("file `{0}` is binary or not UTF-8; only text files can be read")]
    Binary(String),
    #[error("file `{path}` is too large ({size} bytes, limit {limit}); it cannot be read or edited by agents")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One agent's view of the project.
pub struct Overlay<'a> {
    store: &'a Store,
    agent: &'a str,
    max_bytes: u64,
}

impl<'a> Overlay<'a> {
    pub fn new(store: &'a Store, agent: &'a str, max_bytes: u64) -> Self {
        Self {
            store,
            agent,
            max_bytes,
        }
    }

    /// The project's root.
    pub fn root(&self) -> &std::path::Path {
        self.store.root()
    }

    /// The agent whose view this is.
    pub fn agent(&self) -> &'a str {
        self.agent
    }

    /// The store it lies in.
    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// The largest file it holds (`sync.max_file_bytes`).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The bytes of `path` as this agent sees them; `None` if absent.
    pub fn read(&self, path: &ProjectPath) -> Result<Option<Vec<u8>>, OverlayError> {
        let p = path.as_str();
        if let Some(entry) = self.store.overlay_entry(self.agent, p)? {
            return match entry.hash {
                Some(hash) => Ok(Some(self.store.blob(&hash)?)),
                None => Ok(None),
            };
        }
        match self.store.stable_entry(p)? {
            None => Ok(None),
            Some(e) if e.too_large => Err(OverlayError::TooLarge {
                path: p.to_owned(),
                size: e.size,
                limit: self.max_bytes,
            }),
            Some(e) => Ok(Some(self.store.blob(&e.hash)?)),
        }
    }

    /// What [`Overlay::read`] gives for each of `paths` that is there,
    /// given to `each` in no set order; a file too large for agents is
    /// left out. The files this agent did not write are read in one go.
    pub fn read_each(
        &self,
        paths: &[&str],
        each: &mut dyn FnMut(String, Vec<u8>),
    ) -> Result<(), OverlayError> {
        let mine: std::collections::HashMap<String, crate::store::OverlayEntry> = self
            .store
            .overlay_entries(self.agent)?
            .into_iter()
            .collect();
        let mut from_stable = Vec::with_capacity(paths.len());
        for &p in paths {
            match mine.get(p).map(|e| e.hash.as_deref()) {
                Some(Some(hash)) => each(p.to_owned(), self.store.blob(hash)?),
                // Deleted by the agent.
                Some(None) => {}
                None => from_stable.push(p),
            }
        }
        Ok(self.store.stable_contents(&from_stable, each)?)
    }

    /// The text of `path`; binary and non-UTF-8 files are refused.
    pub fn read_text(&self, path: &ProjectPath) -> Result<String, OverlayError> {
        let bytes = self
            .read(path)?
            .ok_or_else(|| OverlayError::NotFound(path.to_string()))?;
        as_text(bytes).ok_or_else(|| OverlayError::Binary(path.to_string()))
    }

    pub fn exists(&self, path: &ProjectPath) -> Result<bool, OverlayError> {
        let p = path.as_str();
        if let Some(entry) = self.store.overlay_entry(self.agent, p)? {
            return Ok(entry.hash.is_some());
        }
        Ok(self.store.stable_entry(p)?.is_some())
    }

    /// Writes `data` to `path` in the overlay.
    pub fn write(&self, path: &ProjectPath, data: &[u8]) -> Result<(), OverlayError> {
        let base = self.store.stable_entry(path.as_str())?.map(|e| e.hash);
        self.write_from(path, data, base.as_deref())
    }

    /// Writes `data` to `path` as a change of the human's text whose hash
    /// is `base` (what the agent worked from; `None`: a file that was not
    /// there), when the overlay has no entry for `path` yet (one it has
    /// keeps its base). The proposal merges the change onto the human's
    /// text as it is by then.
    pub fn write_from(
        &self,
        path: &ProjectPath,
        data: &[u8],
        base: Option<&str>,
    ) -> Result<(), OverlayError> {
        if data.len() as u64 > self.max_bytes {
            return Err(OverlayError::TooLarge {
                path: path.to_string(),
                size: data.len() as u64,
                limit: self.max_bytes,
            });
        }
        let hash = self.store.put_blob(data)?;
        self.store
            .overlay_set(self.agent, path.as_str(), Some(&hash), base)?;
        Ok(())
    }

    /// Deletes `path` for this agent only (a whiteout over stable).
    pub fn delete(&self, path: &ProjectPath) -> Result<(), OverlayError> {
        let base = self.store.stable_entry(path.as_str())?.map(|e| e.hash);
        self.delete_from(path, base.as_deref())
    }

    /// Deletes `path` for this agent as a change of the human's text whose
    /// hash is `base`, as [`Overlay::write_from`] writes.
    pub fn delete_from(&self, path: &ProjectPath, base: Option<&str>) -> Result<(), OverlayError> {
        if !self.exists(path)? {
            return Err(OverlayError::NotFound(path.to_string()));
        }
        self.store
            .overlay_set(self.agent, path.as_str(), None, base)?;
        Ok(())
    }

    /// Every file this agent sees, sorted, each once.
    pub fn files(&self) -> Result<Vec<String>, OverlayError> {
        self.files_under("")
    }

    /// Every file below `dir` ("" = the root) this agent sees, sorted.
    pub fn files_under(&self, dir: &str) -> Result<Vec<String>, OverlayError> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut mine = self.store.overlay_entries(self.agent)?;
        mine.retain(|(path, _)| path.starts_with(&prefix));
        Ok(over(self.store.stable_paths_under(dir)?, mine))
    }

    /// The files this agent sees that `keep` accepts, sorted. `like`: an
    /// SQL `LIKE` pattern that every path `keep` accepts matches, which
    /// the stable layer's paths are narrowed by first.
    pub fn files_where(
        &self,
        like: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, OverlayError> {
        let mut files = over(
            self.store.stable_paths_like(like)?,
            self.store.overlay_entries(self.agent)?,
        );
        files.retain(|f| keep(f));
        Ok(files)
    }

    /// The entries directly inside `dir`: files by name, directories with a
    /// trailing `/`, merged over both layers, each once, sorted.
    pub fn list_dir(
        &self,
        dir: &str,
        visible: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, OverlayError> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out = BTreeSet::new();
        for path in self.files_under(dir)?.into_iter().filter(|p| visible(p)) {
            let rest = &path[prefix.len()..];
            match rest.split_once('/') {
                Some((sub, _)) => out.insert(format!("{sub}/")),
                None => out.insert(rest.to_owned()),
            };
        }
        Ok(out.into_iter().collect())
    }
}

/// `bytes` as text: `None` for a binary or non-UTF-8 file.
pub fn as_text(bytes: Vec<u8>) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AgentRecord, AgentState};

    fn store_with_agents(agents: &[&str]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory(dir.path()).unwrap();
        for id in agents {
            store
                .agent_insert(&AgentRecord {
                    state: AgentState::Running,
                    ..AgentRecord::new(*id, "t")
                })
                .unwrap();
        }
        (dir, store)
    }

    fn p(s: &str) -> ProjectPath {
        ProjectPath::parse(s).unwrap()
    }

    #[test]
    fn the_files_an_agent_sees_are_the_stable_ones_with_its_own_over_them() {
        let (_d, store) = store_with_agents(&["a", "b"]);
        for path in ["b.py", "d/e.py", "d/f.py", "m.py", "z.py"] {
            store.stable_put(path, b"s\n", 0o644, 0, 1 << 20).unwrap();
        }
        let a = Overlay::new(&store, "a", 1 << 20);
        // Before the first, between two, beside one, after the last; one
        // rewritten, one deleted, the last deleted.
        for path in ["a.py", "c.py", "d/e2.py", "zz.py", "m.py"] {
            a.write(&p(path), b"mine\n").unwrap();
        }
        a.delete(&p("d/f.py")).unwrap();
        a.delete(&p("z.py")).unwrap();
        assert_eq!(
            a.files().unwrap(),
            ["a.py", "b.py", "c.py", "d/e.py", "d/e2.py", "m.py", "zz.py"]
        );
        assert_eq!(a.files_under("d").unwrap(), ["d/e.py", "d/e2.py"]);
        // Another agent sees the stable files alone.
        assert_eq!(
            Overlay::new(&store, "b", 1 << 20).files().unwrap(),
            ["b.py", "d/e.py", "d/f.py", "m.py", "z.py"]
        );
    }

    #[test]
    fn many_files_read_at_once_are_what_each_read_alone_gives() {
        let (_d, store) = store_with_agents(&["a"]);
        for (path, text) in [("x.py", "x\n"), ("y.py", "y\n"), ("gone.py", "g\n")] {
            store
                .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
                .unwrap();
        }
        store
            .stable_put("big.py", &[b'b'; 64], 0o644, 0, 16)
            .unwrap();
        let a = Overlay::new(&store, "a", 1 << 20);
        a.write(&p("y.py"), b"mine\n").unwrap();
        a.write(&p("new.py"), b"new\n").unwrap();
        a.delete(&p("gone.py")).unwrap();
        let asked = ["x.py", "y.py", "new.py", "gone.py", "big.py", "none.py"];
        let mut got = Vec::new();
        a.read_each(&asked, &mut |path, data| got.push((path, data)))
            .unwrap();
        got.sort();
        let want: Vec<(String, Vec<u8>)> = asked
            .iter()
            .filter_map(|f| Some((f.to_string(), a.read(&p(f)).ok()??)))
            .collect();
        let mut want = want;
        want.sort();
        assert_eq!(got, want);
        assert_eq!(
            got.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
            ["new.py", "x.py", "y.py"],
            "the agent's own files, what it did not touch; not what it deleted or what is too large"
        );
    }

    #[test]
    fn reads_fall_through_and_writes_stay_in_the_overlay() {
        let (_d, store) = store_with_agents(&["a", "b"]);
        store
            .stable_put("src/x.py", b"old\n", 0o644, 0, 1 << 20)
            .unwrap();
        let a = Overlay::new(&store, "a", 1 << 20);
        let b = Overlay::new(&store, "b", 1 << 20);
        assert_eq!(a.read_text(&p("src/x.py")).unwrap(), "old\n");
        a.write(&p("src/x.py"), b"new\n").unwrap();
        assert_eq!(a.read_text(&p("src/x.py")).unwrap(), "new\n");
        assert_eq!(
            b.read_text(&p("src/x.py")).unwrap(),
            "old\n",
            "other agents see stable"
        );
        let stable = store.stable_entry("src/x.py").unwrap().unwrap();
        assert_eq!(
            store.blob(&stable.hash).unwrap(),
            b"old\n",
            "stable untouched"
        );
        let entry = store.overlay_entry("a", "src/x.py").unwrap().unwrap();
        assert_eq!(entry.base_hash, Some(stable.hash));
    }

    #[test]
    fn whiteout_hides_a_file_from_one_agent_and_recreate_works() {
        let (_d, store) = store_with_agents(&["a", "b"]);
        store
            .stable_put("gone.py", b"x", 0o644, 0, 1 << 20)
            .unwrap();
        let a = Overlay::new(&store, "a", 1 << 20);
        a.delete(&p("gone.py")).unwrap();
        assert!(!a.exists(&p("gone.py")).unwrap());
        assert!(matches!(
            a.read_text(&p("gone.py")),
            Err(OverlayError::NotFound(_))
        ));
        assert!(!a.files().unwrap().contains(&"gone.py".to_owned()));
        assert!(Overlay::new(&store, "b", 1 << 20)
            .exists(&p("gone.py"))
            .unwrap());
        assert!(matches!(
            a.delete(&p("gone.py")),
            Err(OverlayError::NotFound(_))
        ));
        a.write(&p("gone.py"), b"again").unwrap();
        assert_eq!(a.read_text(&p("gone.py")).unwrap(), "again");
    }

    #[test]
    fn list_dir_merges_layers_each_path_once() {
        let (_d, store) = store_with_agents(&["a"]);
        for path in [
            "README.md",
            "src/a.py",
            "src/b.py",
            "src/pkg/c.py",
            "srcx.py",
        ] {
            store.stable_put(path, b"x", 0o644, 0, 1 << 20).unwrap();
        }
        let a = Overlay::new(&store, "a", 1 << 20);
        a.write(&p("src/a.py"), b"changed").unwrap();
        a.write(&p("src/new.py"), b"new").unwrap();
        a.delete(&p("src/b.py")).unwrap();
        assert_eq!(
            a.list_dir("src", |_| true).unwrap(),
            vec!["a.py", "new.py", "pkg/"]
        );
        assert_eq!(
            a.list_dir("", |p| p != "README.md").unwrap(),
            vec!["src/", "srcx.py"]
        );
    }

    #[test]
    fn binary_and_oversized_files_are_refused_with_a_reason() {
        let (_d, store) = store_with_agents(&["a"]);
        store
            .stable_put("img.png", b"\x89PNG\0\0", 0o644, 0, 1 << 20)
            .unwrap();
        store
            .stable_put("latin1.txt", b"caf\xe9", 0o644, 0, 1 << 20)
            .unwrap();
        store
            .stable_put("big.txt", &[b'a'; 100], 0o644, 0, 10)
            .unwrap();
        let a = Overlay::new(&store, "a", 10);
        assert!(matches!(
            a.read_text(&p("img.png")),
            Err(OverlayError::Binary(_))
        ));
        assert!(matches!(
            a.read_text(&p("latin1.txt")),
            Err(OverlayError::Binary(_))
        ));
        let err = a.read_text(&p("big.txt")).unwrap_err();
        assert!(err.to_string().contains("too large"), "{err}");
        assert!(matches!(
            a.write(&p("w.txt"), &[b'b'; 11]),
            Err(OverlayError::TooLarge { .. })
        ));
    }
}
