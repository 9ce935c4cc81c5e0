//! A real folder holding one agent's view of the project, for programs
//! that work on files themselves (an ACP agent and what it runs): filled
//! from the view — the human's files and unsaved text, the agent's own
//! changes, no secrets, no `.git` or `.chimera` — kept between the agent's
//! runs, and read back: what a program changed there becomes the agent's
//! overlay writes. It lies outside the project; the core reaches into it
//! through no link, so nothing a program plants there leads the core out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::paths::ProjectPath;
use crate::rootfs::{self, DiskError};
use crate::store::{Store, StoreError};

/// Why an agent's folder could not be filled or read.
#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    #[error("the agent's folder {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the agent's folder: {0}")]
    Disk(#[from] DiskError),
    /// A program filled its folder beyond reason (a hostile agent, a
    /// runaway loop): the walk stops rather than take seconds per turn.
    #[error(
        "the agent's folder holds more than {limit} files or folders (not counting what the project's ignore rules leave out); nothing more is taken from it"
    )]
    TooMany { limit: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a program changed in its folder, to be taken into the overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `was`: the hash of what the folder held there before (`None`: a
    /// new file), the text the program changed.
    Write {
        path: ProjectPath,
        data: Vec<u8>,
        was: Option<String>,
    },
    Delete {
        path: ProjectPath,
        was: Option<String>,
    },
}

/// Something a program left that is not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub path: String,
    pub why: String,
}

/// How a file looked when the folder last agreed with the view.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    hash: String,
    stat: Stat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    len: u64,
    mtime: SystemTime,
    ino: u64,
}

impl Stat {
    fn of(m: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat {
            len: m.len(),
            mtime: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            ino: m.ino(),
        }
    }
}

/// A change within this long of the last look may share its timestamp
/// (file times tick coarsely): such a file is read, not trusted by stat.
const RACY: Duration = Duration::from_millis(50);

/// How many entries beyond its view a folder may hold before a walk
/// gives up on it (a 1,500-file project walks in about 10 ms; this is
/// over a second).
const MAX_EXTRA_ENTRIES: usize = 200_000;

/// One agent's folder.
#[derive(Debug)]
pub struct Workdir {
    /// Holds `files`, `tmp` and `stderr`: removed whole with the agent.
    base: PathBuf,
    files: PathBuf,
    tmp: PathBuf,
    /// What the program says on stderr, for the errors that name it.
    stderr: PathBuf,
    seen: BTreeMap<String, Seen>,
    /// Files of the view left out of the folder (secrets, files the agent
    /// may not see, files too large): a program cannot write them blind.
    hidden: BTreeSet<String>,
    /// What was refused at the last read-back (not said again until it
    /// changes).
    refused: BTreeMap<String, Option<Stat>>,
    /// When the folder and `seen` last agreed.
    looked: SystemTime,
    /// Entries beyond the view's files a walk accepts.
    max_entries: usize,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkdirError + '_ {
    move |source| WorkdirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes `dir` and its parents, readable by their owner only.
fn private_dir(dir: &Path) -> Result<(), WorkdirError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))
}

/// What a walk of the folder found: regular files by project path with
/// their stat; anything else (a link, a device, a reserved name, a name
/// that is no project path) in `odd`, with why it is not taken.
#[derive(Default)]
struct Found {
    files: BTreeMap<String, Stat>,
    odd: Vec<(String, &'static str)>,
}

impl Found {
    /// Sorts one entry (not followed if a link); whether to descend.
    fn entry(
        &mut self,
        rel: String,
        kind: std::fs::FileType,
        meta: impl FnOnce() -> Option<std::fs::Metadata>,
    ) -> bool {
        if ProjectPath::parse(&rel).is_err() {
            self.odd.push((rel, "a reserved name (.git, .chimera)"));
        } else if kind.is_dir() {
            return true;
        } else if kind.is_symlink() {
            self.odd
                .push((rel, "a symbolic link (links are not taken)"));
        } else if !kind.is_file() {
            self.odd.push((rel, "not a regular file"));
        } else if let Some(m) = meta() {
            self.files.insert(rel, Stat::of(&m));
        }
        false
    }
}

/// Everything under `dir`, without following links, at most `limit`
/// entries.
fn walk(dir: &Path, limit: usize) -> Result<Found, WorkdirError> {
    let mut found = Found::default();
    let mut budget = limit;
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io(&dir))?;
            budget = budget
                .checked_sub(1)
                .ok_or(WorkdirError::TooMany { limit })?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                found.odd.push((
                    format!("{prefix}{}", name.to_string_lossy()),
                    "its name is not UTF-8",
                ));
                continue;
            };
            let rel = format!("{prefix}{name}");
            let kind = entry.file_type().map_err(io(&entry.path()))?;
            if found.entry(rel.clone(), kind, || entry.metadata().ok()) {
                stack.push((entry.path(), format!("{rel}/")));
            }
        }
    }
    Ok(found)
}

/// [`walk`], leaving out what the folder's ignore rules (its
/// `.gitignore` files, as the project's import reads them) leave out:
/// a test run's caches and a build's products are not the agent's
/// proposal.
fn walk_kept(dir: &Path, limit: usize) -> Result<Found, WorkdirError> {
    use std::sync::{Arc, Mutex};
    let reserved = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&reserved);
    let root = dir.to_path_buf();
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(false)
        .git_global(false)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            let reserved = e
                .file_name()
                .to_str()
                .is_some_and(crate::paths::is_reserved_name);
            if reserved {
                if let (Ok(mut r), Ok(rel)) = (seen.lock(), e.path().strip_prefix(&root)) {
                    r.push(rel.to_string_lossy().into_owned());
                }
            }
            !reserved
        })
        .build();
    let mut found = Found::default();
    let mut budget = limit;
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => match e.io_error() {
                Some(io_e) if io_e.kind() == std::io::ErrorKind::NotFound => continue,
                _ => return Err(io(dir)(std::io::Error::other(e.to_string()))),
            },
        };
        if entry.depth() == 0 {
            continue;
        }
        budget = budget
            .checked_sub(1)
            .ok_or(WorkdirError::TooMany { limit })?;
        let Ok(rel) = entry.path().strip_prefix(dir) else {
            continue;
        };
        let Some(rel) = rel.to_str() else {
            found
                .odd
                .push((rel.to_string_lossy().into_owned(), "its name is not UTF-8"));
            continue;
        };
        let Some(kind) = entry.file_type() else {
            continue;
        };
        found.entry(rel.to_owned(), kind, || entry.metadata().ok());
    }
    for rel in reserved.lock().map(|r| r.clone()).unwrap_or_default() {
        found.odd.push((rel, "a reserved name (.git, .chimera)"));
    }
    Ok(found)
}

impl Workdir {
    /// A new, empty folder `name` under `parent` (made if missing).
    pub fn create(parent: &Path, name: &str) -> Result<Workdir, WorkdirError> {
        let base = parent.join(name);
        let (files, tmp) = (base.join("files"), base.join("tmp"));
        private_dir(&files)?;
        private_dir(&tmp)?;
        Ok(Workdir {
            base: base.clone(),
            files,
            tmp,
            stderr: base.join("stderr.log"),
            seen: BTreeMap::new(),
            hidden: BTreeSet::new(),
            refused: BTreeMap::new(),
            looked: SystemTime::UNIX_EPOCH,
            max_entries: MAX_EXTRA_ENTRIES,
        })
    }

    /// Removes the folder and all in it (once its agent has ended);
    /// nothing in it is followed out of it.
    pub fn remove(self) -> Result<(), WorkdirError> {
        let parent = self.base.parent().unwrap_or(&self.base).to_path_buf();
        let name = self
            .base
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(rootfs::remove_entry(&parent, "", &name)?)
    }

    /// The project as the agent sees it.
    pub fn files(&self) -> &Path {
        &self.files
    }

    /// The programs' own temporary folder (`TMPDIR`).
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// Where the program's stderr goes (beside the folder, not in it).
    pub fn stderr(&self) -> &Path {
        &self.stderr
    }

    /// The last lines the program wrote to stderr, on one line.
    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read(&self.stderr).unwrap_or_default();
        let text = String::from_utf8_lossy(&text[text.len().saturating_sub(600)..]).into_owned();
        // Shown in a terminal and an editor: no escape sequence of its own.
        let text: String = text
            .chars()
            .map(|c| match c {
                '\n' => '\n',
                c if c.is_control() => ' ',
                c => c,
            })
            .collect();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    }

    /// The project path of `abs` if it names a file in this folder.
    pub fn project_path(&self, abs: &Path) -> Option<ProjectPath> {
        ProjectPath::from_absolute(&self.files, abs)
    }

    /// How many entries a walk of the folder accepts.
    fn limit(&self) -> usize {
        self.max_entries + self.seen.len() + self.hidden.len()
    }

    fn unchanged(&self, seen: &Seen, now: Stat) -> bool {
        seen.stat == now && now.mtime + RACY < self.looked
    }

    /// Whether file `path`, now `now`, still holds what was `seen`: by
    /// its stat, or when that is too recent to trust, by its content.
    fn holds(&self, path: &str, seen: &Seen, now: Stat) -> bool {
        if seen.stat != now {
            return false;
        }
        if self.unchanged(seen, now) {
            return true;
        }
        let Ok(p) = ProjectPath::parse(path) else {
            return false;
        };
        matches!(rootfs::read(&self.files, &p, now.len), Ok(Some(d)) if crate::store::hash_bytes(&d) == seen.hash)
    }

    /// Makes the folder hold `agent`'s view of the project, as far as
    /// `visible` lets it see: writes only the files that differ from what
    /// it held, and removes everything else (what a program left there
    /// since the last read-back, links, other files). Call it while no
    /// program works in the folder. The files written.
    pub fn fill(
        &mut self,
        store: &Store,
        agent: &str,
        visible: &dyn Fn(&str) -> bool,
    ) -> Result<usize, WorkdirError> {
        let Found {
            files: on_disk,
            odd,
        } = match walk(&self.files, self.limit()) {
            Ok(found) => found,
            Err(WorkdirError::TooMany { .. }) => {
                // Cheaper to start afresh than to compare.
                rootfs::remove_entry(&self.base, "", "files")?;
                private_dir(&self.files)?;
                self.seen.clear();
                Found::default()
            }
            Err(e) => return Err(e),
        };
        for (path, _) in &odd {
            remove(&self.files, path)?;
        }
        let mut wanted = BTreeMap::new();
        self.hidden.clear();
        for e in store.view(agent)? {
            if e.too_large || !visible(&e.path) {
                self.hidden.insert(e.path);
            } else {
                wanted.insert(e.path.clone(), e);
            }
        }
        for path in on_disk.keys().filter(|p| !wanted.contains_key(*p)) {
            remove(&self.files, path)?;
            self.seen.remove(path);
        }
        let mut seen = BTreeMap::new();
        let mut todo = Vec::new();
        for (path, e) in wanted {
            match (self.seen.get(&path), on_disk.get(&path)) {
                (Some(s), Some(now)) if s.hash == e.hash && self.holds(&path, s, *now) => {
                    let kept = Seen {
                        hash: s.hash.clone(),
                        stat: *now,
                    };
                    seen.insert(path, kept);
                }
                _ => todo.push((path, e)),
            }
        }
        let written = writer::write_all(&self.files, store, todo)?;
        let count = written.len();
        seen.extend(written);
        self.seen = seen;
        self.refused.clear();
        self.looked = SystemTime::now();
        Ok(count)
    }

    /// What the folder holds now: what the walk keeps, and the files of
    /// the view the rules now leave out, which are still there (compared,
    /// not deleted).
    fn found(&self) -> Result<Found, WorkdirError> {
        let mut found = walk_kept(&self.files, self.limit())?;
        let left_out: Vec<(String, Stat)> = self
            .seen
            .keys()
            .filter(|p| !found.files.contains_key(*p))
            .filter_map(|p| {
                let m = std::fs::symlink_metadata(self.files.join(p)).ok()?;
                m.is_file().then(|| (p.clone(), Stat::of(&m)))
            })
            .collect();
        found.files.extend(left_out);
        Ok(found)
    }

    /// What a program changed in the folder since it was filled or last
    /// read back: files written (at most `limit` bytes each) and deleted,
    /// and what is not taken (links, reserved names, files the agent may
    /// not see, files too large), each said once. The folder's state is
    /// from then on the one compared with.
    pub fn read_back(&mut self, limit: u64) -> Result<(Vec<Change>, Vec<Refused>), WorkdirError> {
        let looked = SystemTime::now();
        let Found {
            files: on_disk,
            odd,
        } = self.found()?;
        let mut changes = Vec::new();
        let mut refused = Vec::new();
        let mut refused_now = BTreeMap::new();
        let mut refuse = |path: String, stat: Option<Stat>, why: String| {
            if self.refused.get(&path) != Some(&stat) {
                refused.push(Refused {
                    path: path.clone(),
                    why,
                });
            }
            refused_now.insert(path, stat);
        };
        for (path, why) in odd {
            refuse(path, None, why.to_owned());
        }
        for (path, now) in &on_disk {
            if self.hidden.contains(path) {
                refuse(
                    path.clone(),
                    Some(*now),
                    "this agent may not see that file (a secret, outside capabilities.read, or too large)".into(),
                );
                continue;
            }
            let seen = self.seen.get(path);
            if seen.is_some_and(|s| self.unchanged(s, *now)) {
                continue;
            }
            let Ok(p) = ProjectPath::parse(path) else {
                continue;
            };
            let data = match rootfs::read(&self.files, &p, limit) {
                Ok(Some(d)) => d,
                // Gone or swapped for a link meanwhile: seen next time.
                Ok(None) | Err(DiskError::Symlink(_) | DiskError::NotAFile(_)) => continue,
                Err(DiskError::TooLarge { limit, .. }) => {
                    refuse(
                        path.clone(),
                        Some(*now),
                        format!("larger than {limit} bytes (sync.max_file_bytes)"),
                    );
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let hash = crate::store::hash_bytes(&data);
            if seen.is_none_or(|s| s.hash != hash) {
                changes.push(Change::Write {
                    path: p,
                    data,
                    was: seen.map(|s| s.hash.clone()),
                });
            }
            self.seen.insert(path.clone(), Seen { hash, stat: *now });
        }
        let gone: Vec<String> = self
            .seen
            .keys()
            .filter(|p| !on_disk.contains_key(*p))
            .cloned()
            .collect();
        changes.extend(gone.into_iter().filter_map(|path| {
            let was = self.seen.remove(&path).map(|s| s.hash);
            let path = ProjectPath::parse(&path).ok()?;
            Some(Change::Delete { path, was })
        }));
        self.refused = refused_now;
        self.looked = looked;
        Ok((changes, refused))
    }
}

/// Removes `path` (whatever it is, `.git` too) from the folder `root`,
/// through no link.
fn remove(root: &Path, path: &str) -> Result<(), WorkdirError> {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    Ok(rootfs::remove_entry(root, dir, name)?)
}

mod writer;

#[cfg(test)]
mod tests;
