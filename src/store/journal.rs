//! The intent of a write to many project files (an accept, a rollback),
//! recorded in `.chimera/intent-*.json` before the first rename and removed
//! once the store has committed what the renames did. A crash in between
//! leaves it behind: the next start ([`recover`]) puts back every file that
//! was already replaced, so the project is wholly as it was before and the
//! store — which never committed — agrees with it. A journal whose writer
//! still runs is locked and left alone; one this store did not sign (a
//! cloned repository's) is dropped unread.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{hash_bytes, Result, Store, StoreError};
use crate::paths::ProjectPath;
use crate::rootfs::{self, Expect};

/// One file of the write: what it held before and what it is to hold
/// (`None`: no file), by content hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    /// `None` with `before_known`: the file did not exist.
    pub before: Option<String>,
    /// Whether `before` is in the store (a file too large to keep is not,
    /// and cannot be put back).
    pub before_known: bool,
    pub after: Option<String>,
    pub mode: u32,
}

impl Entry {
    /// The entry of one disk write of `rootfs::write_all`.
    pub fn of(w: &rootfs::Write) -> Self {
        let (before, before_known) = match &w.expect {
            Expect::Content(h) => (Some(h.clone()), true),
            Expect::Absent => (None, true),
            Expect::Anything => (None, false),
        };
        Entry {
            path: w.path.clone(),
            before,
            before_known,
            after: w.data.as_deref().map(hash_bytes),
            mode: w.mode,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Intent {
    /// What was being done, for the human ("the accept of agent 1a2b…").
    what: String,
    entries: Vec<Entry>,
}

/// A recorded intent, held (locked) by this process until [`Pending::done`].
#[derive(Debug)]
pub struct Pending {
    path: PathBuf,
    _lock: std::fs::File,
}

impl Pending {
    /// The store has committed: the intent is fulfilled.
    pub fn done(self) {
        // Left behind, it is dropped at the next start, which finds the
        // store committed and puts nothing back.
        let _ = std::fs::remove_file(&self.path);
    }

    /// The write failed (and undid what it had done): any file still
    /// replaced is put back, and the intent removed. Left for the next
    /// start if that cannot be done now.
    pub fn abandon(self, store: &Store, root: &Path) {
        let undone = read_signed(store, &self.path).map(|intent| undo(store, root, intent));
        if matches!(undone, Some(Ok(_))) {
            // Left behind, the next start's undo finds nothing to put back.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What a recovery did with one intent left by a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub what: String,
    /// Files put back as they were before.
    pub restored: Vec<String>,
    /// Files of the write.
    pub files: usize,
    /// Files changed since by someone else, left as they are.
    pub changed: Vec<String>,
    /// The write had been committed: nothing to undo.
    pub committed: bool,
}

impl Recovered {
    /// In words, for the human.
    pub fn describe(&self) -> String {
        if self.committed {
            return format!(
                "{} had finished before Chimera stopped; nothing to undo",
                self.what
            );
        }
        let mut out = format!(
            "{} was cut short after {} of its {} files; {} put back: the project is as it was before",
            self.what,
            self.restored.len(),
            self.files,
            if self.restored.len() == 1 { "it was" } else { "they were" },
        );
        if !self.changed.is_empty() {
            out.push_str(&format!(
                " except {}, changed since and left as it is",
                self.changed.join(", ")
            ));
        }
        out
    }
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Create {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// The journal of `writes` about to be done for `what`, when there are
    /// several: one rename is whole by itself, several are not, and a crash
    /// between two leaves the journal for the next start to undo.
    pub fn intend_writes(&self, what: &str, writes: &[rootfs::Write]) -> Result<Option<Pending>> {
        if writes.len() < 2 {
            return Ok(None);
        }
        self.intend(what, writes.iter().map(Entry::of).collect())
            .map(Some)
    }

    /// Records that `entries` are about to be written, for `what`; durable
    /// before this returns.
    fn intend(&self, what: &str, entries: Vec<Entry>) -> Result<Pending> {
        let dir = self.root.join(".chimera");
        let unique = super::unique_digest().to_hex()[..12].to_owned();
        let path = dir.join(format!("intent-{}-{unique}.json", std::process::id()));
        let tmp = path.with_extension("tmp");
        let body = serde_json::to_vec(&Intent {
            what: what.to_owned(),
            entries,
        })?;
        let mut text = blake3::keyed_hash(&self.journal_key, &body)
            .to_hex()
            .as_bytes()
            .to_vec();
        text.push(b'\n');
        text.extend(body);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| io(&tmp, e))?;
        f.write_all(&text).map_err(|e| io(&tmp, e))?;
        f.sync_all().map_err(|e| io(&tmp, e))?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io(&tmp, e.into()))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
        if let Ok(d) = std::fs::File::open(&dir) {
            // The rename is durable once the directory is synced; a file system
            // that cannot sync a directory has no better way to be asked.
            let _ = d.sync_all();
        }
        Ok(Pending { path, _lock: f })
    }
}

/// Finishes what crashed writers left: every intent no running process
/// holds is undone (or found committed) and removed.
pub fn recover(store: &Store, root: &Path) -> Result<Vec<Recovered>> {
    let dir = root.join(".chimera");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(vec![]);
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("intent-"))
        })
        .collect();
    found.sort();
    let mut out = Vec::new();
    for path in found {
        if path.extension().is_some_and(|e| e == "tmp") {
            // Never became an intent: no rename followed it.
            if let Ok(f) = std::fs::File::open(&path) {
                if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .is_ok()
                {
                    // Best effort: a leftover temporary file is removed at the next start.
                    let _ = std::fs::remove_file(&path);
                }
            }
            continue;
        }
        let Ok(f) = std::fs::File::open(&path) else {
            continue;
        };
        // Its writer still runs.
        if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        // Written whole (temp file and rename) or not at all; signed by
        // this store, or not ours.
        let Some(intent) = read_signed(store, &path) else {
            // Best effort: one this store did not sign is dropped unread at
            // every start, never acted on.
            let _ = std::fs::remove_file(&path);
            continue;
        };
        let done = undo(store, root, intent)?;
        // The files are back: a journal left behind would only undo nothing
        // at the next start.
        let _ = std::fs::remove_file(&path);
        // A write that failed and undid itself leaves nothing to say.
        if !done.committed && (!done.restored.is_empty() || !done.changed.is_empty()) {
            out.push(done);
        }
    }
    Ok(out)
}

/// The intent at `path` if this store signed it.
fn read_signed(store: &Store, path: &Path) -> Option<Intent> {
    let text = std::fs::read(path).ok()?;
    let split = text.iter().position(|b| *b == b'\n')?;
    let (mac, body) = (&text[..split], &text[split + 1..]);
    // `Hash`'s `==` takes the same time wherever the two differ.
    let given = blake3::Hash::from_hex(mac).ok()?;
    (given == blake3::keyed_hash(&store.journal_key, body))
        .then(|| serde_json::from_slice(body).ok())
        .flatten()
}

/// Puts back the files of `intent` that its write replaced, unless the
/// store committed it.
fn undo(store: &Store, root: &Path, intent: Intent) -> Result<Recovered> {
    let mut committed = true;
    for e in &intent.entries {
        if store.stable_entry(&e.path)?.map(|s| s.hash) != e.after {
            committed = false;
        }
    }
    let mut done = Recovered {
        what: intent.what,
        restored: vec![],
        files: intent.entries.len(),
        changed: vec![],
        committed,
    };
    if committed {
        return Ok(done);
    }
    let mut writes = Vec::new();
    for e in &intent.entries {
        let Ok(p) = ProjectPath::parse(&e.path) else {
            continue;
        };
        let now = rootfs::read(root, &p, u64::MAX)
            .ok()
            .map(|d| d.map(|d| hash_bytes(&d)));
        let Some(now) = now else {
            done.changed.push(e.path.clone());
            continue;
        };
        if e.before_known && now == e.before {
            continue; // never replaced
        }
        if now != e.after || !e.before_known {
            done.changed.push(e.path.clone());
            continue;
        }
        let data = match &e.before {
            Some(h) => Some(store.blob(h)?),
            None => None,
        };
        writes.push(rootfs::Write {
            path: e.path.clone(),
            data,
            mode: e.mode,
            expect: match &e.after {
                Some(h) => Expect::Content(h.clone()),
                None => Expect::Absent,
            },
        });
        done.restored.push(e.path.clone());
    }
    rootfs::write_all(root, &writes).map_err(|e| StoreError::Create {
        path: root.to_path_buf(),
        source: std::io::Error::other(format!("cannot put back the files of a cut write: {e}")),
    })?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_this_store_did_not_write_changes_nothing() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("app.py"), "x = 1\n").unwrap();
        let store = Store::open(root.path()).unwrap();
        // What a cloned repository could ship: "undo" the creation of a
        // file whose content it knows, that is, delete it.
        let planted = Intent {
            what: "an accept".into(),
            entries: vec![Entry {
                path: "app.py".into(),
                before: None,
                before_known: true,
                after: Some(hash_bytes(b"x = 1\n")),
                mode: 0o644,
            }],
        };
        let path = root.path().join(".chimera/intent-1-planted.json");
        std::fs::write(&path, serde_json::to_vec(&planted).unwrap()).unwrap();
        assert!(recover(&store, root.path()).unwrap().is_empty());
        assert_eq!(
            std::fs::read_to_string(root.path().join("app.py")).unwrap(),
            "x = 1\n"
        );
        assert!(!path.exists(), "the foreign journal is dropped");
    }

    #[test]
    fn a_journal_of_this_store_is_undone() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("app.py"), "x = 2\n").unwrap();
        let store = Store::open(root.path()).unwrap();
        let pending = store
            .intend(
                "an accept",
                vec![Entry {
                    path: "app.py".into(),
                    before: None,
                    before_known: true,
                    after: Some(hash_bytes(b"x = 2\n")),
                    mode: 0o644,
                }],
            )
            .unwrap();
        drop(pending); // the process died: its lock goes, the journal stays
        let done = recover(&store, root.path()).unwrap();
        assert_eq!(done.len(), 1);
        assert!(
            !root.path().join("app.py").exists(),
            "the created file is undone"
        );
    }
}
