//! Keeps the stable layer equal to the human's ground truth: a loaded
//! buffer's text (pushed by the editor), else the file on disk (imported at
//! start, then followed by a debounced file watcher that honours
//! `.gitignore` and skips every `.git/` and `.chimera/`, nested ones too).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::paths::ProjectPath;
use crate::rootfs;
use crate::store::{read_file, unread_file, DiskFile, Look, Store, StoreError};

mod folders;
mod watch;
pub use watch::{watch, WatchHandle, Watching};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot watch `{path}` for changes: {source}")]
    Watch {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Paths whose ground truth is a loaded buffer, not the disk.
#[derive(Default, Clone)]
pub struct OpenBuffers(Arc<Mutex<HashSet<String>>>);

impl OpenBuffers {
    pub fn insert(&self, path: &str) {
        self.lock().insert(path.to_owned());
    }
    pub fn remove(&self, path: &str) {
        self.lock().remove(path);
    }
    pub fn contains(&self, path: &str) -> bool {
        self.lock().contains(path)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether a walk may enter `e`: not a `.git` or `.chimera` folder.
fn outside_reserved(e: &ignore::DirEntry) -> bool {
    !e.file_name()
        .to_str()
        .is_some_and(crate::paths::is_reserved_name)
}

/// A temporary file of an accept that was cut short (see `accept::write_files`).
pub fn is_accept_leftover(name: &str) -> bool {
    name.starts_with('.') && name.contains(".chimera-") && name.ends_with(".tmp")
}

/// A walk of the project from `top` as git sees it: `.gitignore` (nested
/// ones too) and `.git/info/exclude` honoured, every `.git/` and
/// `.chimera/` skipped (a clone inside the project has its own).
fn project_walk(top: &Path) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(top);
    walk.hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .filter_entry(outside_reserved);
    walk
}

/// How many files the import records in one transaction, as the walk
/// goes on (it reads none: see `store/unread.rs`).
const IMPORT_CHUNK_FILES: usize = 4096;

/// Imports the project into the stable layer, skipping files whose ground
/// truth is a buffer and dropping files that are gone. Files are found and
/// compared on every core while what changed is recorded, unread: the
/// store reads a file when something first needs it (`store/unread.rs`).
/// Returns the number of files in the project.
pub fn import(
    store: &Store,
    root: &Path,
    max_bytes: u64,
    buffers: &OpenBuffers,
) -> Result<usize, SyncError> {
    import_watching(store, root, max_bytes, buffers, None)
}

/// [`import`], its walk adding each folder it lists to `watching`'s.
pub fn import_watching(
    store: &Store,
    root: &Path,
    max_bytes: u64,
    buffers: &OpenBuffers,
    watching: Option<&Watching>,
) -> Result<usize, SyncError> {
    store.set_file_limit(max_bytes);
    let known = OnceLock::new();
    let count = AtomicUsize::new(0);
    let (found, files) = std::sync::mpsc::sync_channel(4);
    std::thread::scope(|scope| {
        let walk = Walk {
            root,
            known: &known,
            buffers,
            max_bytes,
            watching,
            count: &count,
        };
        // The walk starts at once: it looks at files while what the
        // stable layer holds is read here, and compares them once it is.
        scope.spawn(move || find_changed(walk, found));
        let mut looks = Known::new();
        let read = store.stable_looks(&mut |path, look| {
            looks.insert(path, (look, AtomicBool::new(false)));
        });
        // Set even when the read failed: the walk waits for it.
        known.get_or_init(|| looks);
        read?;
        store.bulk_write(|| {
            let write = |part: &mut Vec<DiskFile>| {
                // In the order of the table's index, which SQLite fills
                // fastest.
                part.sort_unstable_by(|a, b| a.path.cmp(&b.path));
                store.stable_import(part, max_bytes)?;
                part.clear();
                Ok::<_, StoreError>(())
            };
            let mut part = Vec::new();
            for file in files.into_iter().flatten() {
                part.push(file);
                if part.len() >= IMPORT_CHUNK_FILES {
                    write(&mut part)?;
                }
            }
            write(&mut part)
        })
    })?;
    // What the walk did not find is gone (a buffer keeps its file).
    for (old, (_, found)) in known.into_inner().unwrap_or_default() {
        if !found.into_inner() && !buffers.contains(&old) {
            store.stable_delete(&old)?;
        }
    }
    Ok(count.into_inner())
}

/// What the stable layer holds, by path: each file's look, and whether
/// the import's walk found it (what it did not is gone). The walk marks
/// what it finds, so the files that did not change cost no message.
type Known = HashMap<String, (Look, AtomicBool)>;

/// Changed files are sent in batches of this many: one message a file
/// costs more than comparing it.
const FOUND_BATCH: usize = 256;

/// What the import's walk shares between its threads.
#[derive(Clone, Copy)]
struct Walk<'a> {
    root: &'a Path,
    /// Set once the stable layer's looks are read.
    known: &'a OnceLock<Known>,
    buffers: &'a OpenBuffers,
    max_bytes: u64,
    /// Each folder is added before it is listed.
    watching: Option<&'a Watching>,
    /// How many files the walk found.
    count: &'a AtomicUsize,
}

/// Walks the project on every core, marks in `known` each file found and
/// sends each that the stable layer does not hold as it is, as it should
/// record it (unread: see `store/unread.rs`); stops when nobody listens.
fn find_changed(walk: Walk<'_>, found: std::sync::mpsc::SyncSender<Vec<DiskFile>>) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut finders = Finders(walk, found);
    project_walk(walk.root)
        .threads(threads)
        .build_parallel()
        .visit(&mut finders);
}

/// What one thread of the import's walk does with each entry.
struct Finder<'a> {
    walk: Walk<'a>,
    found: std::sync::mpsc::SyncSender<Vec<DiskFile>>,
    batch: Vec<DiskFile>,
    /// Files looked at before the stable layer's looks were read, to
    /// compare once they are (`None`: a buffer's, or gone).
    early: Vec<(ProjectPath, Option<Look>)>,
    /// Files found by this thread, added to the walk's count at its end.
    count: usize,
    /// The folder the walk is in on this thread, held open for the look
    /// at each of its files.
    folder: Option<(PathBuf, std::os::fd::OwnedFd)>,
}

/// Makes a [`Finder`] for each thread of the walk.
struct Finders<'a>(Walk<'a>, std::sync::mpsc::SyncSender<Vec<DiskFile>>);

impl<'a> ignore::ParallelVisitorBuilder<'a> for Finders<'a> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 'a> {
        Box::new(Finder::new(self.0, self.1.clone()))
    }
}

impl ignore::ParallelVisitor for Finder<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        let Ok(e) = entry else {
            return ignore::WalkState::Continue;
        };
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        if let Some(watching) = self.walk.watching.filter(|_| is_dir) {
            // The walk has opened the folder but lists it only after this
            // visit: what is written in it from now on is seen by the
            // listing or by the watch.
            watching.add(e.path());
        }
        if !e.file_type().is_some_and(|t| t.is_file()) {
            return ignore::WalkState::Continue;
        }
        if e.file_name().to_str().is_some_and(is_accept_leftover) {
            // Nothing refers to it: the accept that wrote it never committed.
            let _ = std::fs::remove_file(e.path());
            return ignore::WalkState::Continue;
        }
        let Some(path) = ProjectPath::from_absolute(self.walk.root, e.path()) else {
            return ignore::WalkState::Continue;
        };
        self.count += 1;
        let look = self.look_unless_buffer(&path, &e);
        let Some(known) = self.walk.known.get() else {
            self.early.push((path, look));
            return ignore::WalkState::Continue;
        };
        for (path, look) in std::mem::take(&mut self.early) {
            self.compare(known, &path, look);
        }
        self.compare(known, &path, look);
        if self.batch.len() < FOUND_BATCH {
            return ignore::WalkState::Continue;
        }
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(FOUND_BATCH));
        match self.found.send(full) {
            Ok(()) => ignore::WalkState::Continue,
            Err(_) => ignore::WalkState::Quit,
        }
    }
}

impl Drop for Finder<'_> {
    fn drop(&mut self) {
        self.walk.count.fetch_add(self.count, Ordering::Relaxed);
        if !self.early.is_empty() {
            // A walk faster than the read: what it found waits for it.
            let known = self.walk.known.wait();
            for (path, look) in std::mem::take(&mut self.early) {
                self.compare(known, &path, look);
            }
        }
        let last = std::mem::take(&mut self.batch);
        if !last.is_empty() {
            // Nobody listens when the import stopped on an error.
            let _ = self.found.send(last);
        }
    }
}

impl<'a> Finder<'a> {
    fn new(walk: Walk<'a>, found: std::sync::mpsc::SyncSender<Vec<DiskFile>>) -> Self {
        Finder {
            walk,
            found,
            batch: Vec::with_capacity(FOUND_BATCH),
            early: Vec::new(),
            count: 0,
            folder: None,
        }
    }

    /// The look of the file `e` at `path`; `None` when a buffer is its
    /// ground truth, or it is gone.
    fn look_unless_buffer(&mut self, path: &ProjectPath, e: &ignore::DirEntry) -> Option<Look> {
        if self.walk.buffers.contains(path.as_str()) {
            return None;
        }
        self.look(e)
    }

    /// Marks `path` found in `known`, and batches the file as the stable
    /// layer should record it, unread (see `store/unread.rs`), unless it
    /// holds it already (the same size, mtime and mode) or `look` is
    /// `None` (a buffer's, or gone).
    fn compare(&mut self, known: &Known, path: &ProjectPath, look: Option<Look>) {
        let was = known.get(path.as_str()).map(|(was, found)| {
            found.store(true, Ordering::Relaxed);
            was
        });
        if let Some(look) = look.filter(|look| was != Some(look)) {
            self.batch
                .push(unread_file(path, look, self.walk.max_bytes));
        }
    }

    /// The look of the file `e`, by a `stat` relative to its folder (held
    /// open while the walk is in it): a path from the root costs the
    /// kernel a lookup of every folder on the way, for each file.
    fn look(&mut self, e: &ignore::DirEntry) -> Option<Look> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        if let Some(folder) = e.path().parent() {
            if self.folder.as_ref().is_none_or(|(held, _)| held != folder) {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                self.folder = rustix::fs::open(folder, flags, Mode::empty())
                    .ok()
                    .map(|fd| (folder.to_path_buf(), fd));
            }
            if let Some((_, fd)) = &self.folder {
                let st = rustix::fs::statat(fd, e.file_name(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
                return FileType::from_raw_mode(st.st_mode)
                    .is_file()
                    .then(|| Look::of_stat(&st));
            }
        }
        let meta = std::fs::symlink_metadata(e.path()).ok()?;
        meta.is_file().then(|| Look::of(&meta))
    }
}

/// Brings one path of the stable layer in line with the disk. Returns
/// whether stable changed.
pub fn sync_from_disk(
    store: &Store,
    root: &Path,
    path: &ProjectPath,
    max_bytes: u64,
) -> Result<bool, SyncError> {
    let abs = root.join(path.as_str());
    // A symbolic link, or a path through a linked directory, is not part
    // of the project: it may lead out of it, or name a secret by another
    // name.
    let meta = match std::fs::symlink_metadata(&abs) {
        Ok(meta) if meta.is_file() => meta,
        Ok(meta) if meta.is_dir() => return Ok(false),
        _ => return Ok(store.stable_delete(path.as_str())?),
    };
    // A root that cannot be opened leaves stable as it is, as a failed read does.
    let Ok(disk) = rootfs::Root::open(root) else {
        return Ok(false);
    };
    match read_file(&disk, path, &meta, max_bytes) {
        Ok(Some(f)) => Ok(store.stable_store(&f, max_bytes)?),
        // Gone meanwhile, or reached through a linked folder.
        Ok(None) | Err(rootfs::DiskError::Symlink(_)) => Ok(store.stable_delete(path.as_str())?),
        Err(_) => Ok(false),
    }
}

/// The ignore rules watcher events are judged by, as the import's walk
/// applies them: the root's `.gitignore` and `.git/info/exclude`, and every
/// nested `.gitignore` on the way to a file (a deeper one wins, as in git).
/// Each is read once, and again after any `.gitignore` changes.
struct Ignores {
    root: PathBuf,
    by_dir: HashMap<PathBuf, Gitignore>,
}

impl Ignores {
    fn new(root: &Path) -> Self {
        Ignores {
            root: root.to_path_buf(),
            by_dir: HashMap::new(),
        }
    }

    fn forget(&mut self) {
        self.by_dir.clear();
    }

    /// The rules of folder `dir` (the root's include `.git/info/exclude`).
    fn of(&mut self, dir: &Path) -> &Gitignore {
        let root = &self.root;
        self.by_dir.entry(dir.to_path_buf()).or_insert_with(|| {
            let mut b = GitignoreBuilder::new(dir);
            if dir.join(".gitignore").is_file() {
                // A line git cannot parse is skipped, as git itself skips it.
                let _ = b.add(dir.join(".gitignore"));
            }
            if dir == root {
                // As above: git skips what it cannot parse.
                let _ = b.add(root.join(".git/info/exclude"));
            }
            b.build().unwrap_or_else(|_| Gitignore::empty())
        })
    }

    fn ignored(&mut self, abs: &Path, is_dir: bool) -> bool {
        let Ok(rel) = abs.strip_prefix(&self.root) else {
            return false;
        };
        let mut dir = self.root.clone();
        let mut verdict = false;
        let folders: Vec<_> = rel
            .parent()
            .map(|p| p.components().collect())
            .unwrap_or_default();
        for step in std::iter::once(None).chain(folders.into_iter().map(Some)) {
            if let Some(c) = step {
                dir.push(c);
            }
            match self.of(&dir).matched_path_or_any_parents(abs, is_dir) {
                ignore::Match::Ignore(_) => verdict = true,
                ignore::Match::Whitelist(_) => verdict = false,
                ignore::Match::None => {}
            }
        }
        verdict
    }
}

/// Whether a watcher event for `abs` concerns a tracked project file.
fn is_tracked(root: &Path, ignore: &mut Ignores, abs: &Path) -> Option<ProjectPath> {
    let path = ProjectPath::from_absolute(root, abs)?;
    if abs
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_accept_leftover)
    {
        return None;
    }
    let is_dir = abs.is_dir();
    if is_dir {
        return None;
    }
    if ignore.ignored(abs, false) {
        return None;
    }
    Some(path)
}

/// The tracked project files a watcher event for `abs` concerns: the file
/// itself, or every file in a folder that appeared (a `git clone`, an
/// archive unpacked): their own events were sent before the watcher saw
/// the folder, and are lost.
fn tracked_at(root: &Path, ignore: &mut Ignores, abs: &Path) -> Vec<ProjectPath> {
    let is_dir = std::fs::symlink_metadata(abs).is_ok_and(|m| m.is_dir());
    if !is_dir {
        return is_tracked(root, ignore, abs).into_iter().collect();
    }
    if ProjectPath::from_absolute(root, abs).is_none() || ignore.ignored(abs, true) {
        return vec![];
    }
    ignore::WalkBuilder::new(abs)
        .standard_filters(false)
        .filter_entry(outside_reserved)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| is_tracked(root, ignore, e.path()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    pub(super) fn project() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: x").unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
        std::fs::create_dir_all(root.join("src/build")).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::write(root.join("src/a.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("build/out.py"), "x").unwrap();
        std::fs::write(root.join("debug.log"), "x").unwrap();
        let store = Store::open(root).unwrap();
        (dir, store)
    }

    #[test]
    fn import_honours_gitignore_and_skips_git_and_chimera() {
        let (dir, store) = project();
        import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap();
        assert_eq!(
            store.stable_paths().unwrap(),
            vec![".gitignore", "src/a.py"]
        );
    }

    #[test]
    fn import_drops_deleted_files_but_not_buffers() {
        let (dir, store) = project();
        let buffers = OpenBuffers::default();
        store
            .stable_put("scratch.py", b"unsaved", 0o644, 0, 100)
            .unwrap();
        buffers.insert("scratch.py");
        import(&store, dir.path(), 1 << 20, &buffers).unwrap();
        std::fs::remove_file(dir.path().join("src/a.py")).unwrap();
        import(&store, dir.path(), 1 << 20, &buffers).unwrap();
        assert_eq!(
            store.stable_paths().unwrap(),
            vec![".gitignore", "scratch.py"]
        );
    }

    #[test]
    fn links_leading_out_of_the_project_are_not_part_of_it() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "TOP_SECRET\n").unwrap();
        std::fs::create_dir_all(outside.path().join("dir")).unwrap();
        std::fs::write(outside.path().join("dir/f.txt"), "TOP_SECRET\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("link.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path().join("dir"), dir.path().join("linked")).unwrap();
        assert_eq!(
            import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap(),
            0
        );
        for p in ["link.txt", "linked/f.txt"] {
            let pp = ProjectPath::parse(p).unwrap();
            assert!(
                !sync_from_disk(&store, dir.path(), &pp, 1 << 20).unwrap(),
                "{p}"
            );
            assert!(store.stable_entry(p).unwrap().is_none(), "{p} imported");
        }
    }

    #[test]
    fn a_file_over_the_limit_is_recorded_without_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // Sparse: 4 GB on paper, nothing on disk. Reading it whole would
        // take 4 GB of memory.
        let f = std::fs::File::create(dir.path().join("huge.bin")).unwrap();
        f.set_len(4 << 30).unwrap();
        std::fs::write(dir.path().join("small.py"), "x = 1\n").unwrap();
        let started = std::time::Instant::now();
        assert_eq!(
            import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap(),
            2
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let e = store.stable_entry("huge.bin").unwrap().unwrap();
        assert!(e.too_large);
        assert_eq!(e.size, 4 << 30);
        let pp = ProjectPath::parse("huge.bin").unwrap();
        assert!(
            !sync_from_disk(&store, dir.path(), &pp, 1 << 20).unwrap(),
            "unchanged"
        );
        f.set_len(5 << 30).unwrap();
        assert!(
            sync_from_disk(&store, dir.path(), &pp, 1 << 20).unwrap(),
            "grown"
        );
        assert!(store.stable_entry("huge.bin").unwrap().unwrap().too_large);
    }
}
