//! Keeps the stable layer equal to the human's ground truth: a loaded
//! buffer's text (pushed by the editor), else the file on disk (imported at
//! start, then followed by a debounced file watcher that honours
//! `.gitignore` and skips every `.git/` and `.chimera/`, nested ones too).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::paths::ProjectPath;
use crate::rootfs;
use crate::store::{DiskFile, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot watch `{path}` for changes: {source}")]
    Watch {
        path: PathBuf,
        source: notify::Error,
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

/// Mode bits and modification time of a file on disk.
pub fn file_meta(meta: &std::fs::Metadata) -> (u32, i64) {
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o7777
    };
    #[cfg(not(unix))]
    let mode = 0o644;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);
    (mode, mtime)
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

/// Every file of the project that git would see: `.gitignore` (nested ones
/// too) and `.git/info/exclude` honoured, every `.git/` and `.chimera/`
/// skipped (a clone inside the project has its own).
pub fn project_files(root: &Path) -> Vec<(ProjectPath, PathBuf)> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .filter_entry(outside_reserved)
        .build();
    walker
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter(|e| {
            let leftover = e.file_name().to_str().is_some_and(is_accept_leftover);
            if leftover {
                // Nothing refers to it: the accept that wrote it never committed.
                let _ = std::fs::remove_file(e.path());
            }
            !leftover
        })
        .filter_map(|e| ProjectPath::from_absolute(root, e.path()).map(|p| (p, e.into_path())))
        .collect()
}

/// Imports the project into the stable layer in one transaction, skipping
/// files whose ground truth is a buffer and dropping files that are gone.
/// Returns the number of files imported.
pub fn import(
    store: &Store,
    root: &Path,
    max_bytes: u64,
    buffers: &OpenBuffers,
) -> Result<usize, SyncError> {
    let files = project_files(root);
    let mut batch = Vec::with_capacity(files.len());
    let mut seen = HashSet::with_capacity(files.len());
    for (path, abs) in files {
        seen.insert(path.as_str().to_owned());
        if buffers.contains(path.as_str()) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(&abs) else {
            continue;
        };
        // Unchanged since the last import (same size and mtime): skip the read.
        let (mode, mtime) = file_meta(&meta);
        if let Ok(Some(old)) = store.stable_entry(path.as_str()) {
            if old.mtime_ns == mtime && old.size == meta.len() && old.mode == mode {
                continue;
            }
        }
        let Ok(Some(file)) = read_file(root, &path, &meta, max_bytes) else {
            continue;
        };
        batch.push(file);
    }
    store.stable_import(&batch, max_bytes)?;
    for old in store.stable_paths()? {
        if !seen.contains(&old) && !buffers.contains(&old) {
            store.stable_delete(&old)?;
        }
    }
    Ok(seen.len())
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
    match read_file(root, path, &meta, max_bytes) {
        Ok(Some(f)) => Ok(store.stable_store(&f, max_bytes)?),
        // Gone meanwhile, or reached through a linked folder.
        Ok(None) | Err(rootfs::DiskError::Symlink(_)) => Ok(store.stable_delete(path.as_str())?),
        Err(_) => Ok(false),
    }
}

/// Reads `path` for the stable layer, never more than `max_bytes` and never
/// through a link: a larger file is recorded by its size alone. `None`
/// when it is gone.
fn read_file(
    root: &Path,
    path: &ProjectPath,
    meta: &std::fs::Metadata,
    max_bytes: u64,
) -> Result<Option<DiskFile>, rootfs::DiskError> {
    let (mode, mtime_ns) = file_meta(meta);
    let large = |size| DiskFile {
        path: path.as_str().to_owned(),
        data: None,
        size,
        mode,
        mtime_ns,
    };
    if meta.len() > max_bytes {
        return Ok(Some(large(meta.len())));
    }
    match rootfs::read(root, path, max_bytes) {
        Ok(data) => Ok(data.map(|data| DiskFile {
            size: data.len() as u64,
            data: Some(data),
            ..large(0)
        })),
        // It grew between the look and the read.
        Err(rootfs::DiskError::TooLarge { .. }) => Ok(Some(large(max_bytes + 1))),
        Err(e) => Err(e),
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

/// A running file watcher; dropping it stops watching.
pub struct WatchHandle {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The longest a burst of file-system events is gathered before it is reported.
const MAX_BURST: Duration = Duration::from_secs(1);

/// The paths of a burst of events starting with `first`, gathered until
/// it has been quiet for `debounce` but never longer than [`MAX_BURST`];
/// `None` when the watcher is gone.
async fn burst(
    first: PathBuf,
    rx: &mut mpsc::UnboundedReceiver<PathBuf>,
    debounce: Duration,
) -> Option<HashMap<PathBuf, ()>> {
    let mut pending: HashMap<PathBuf, ()> = HashMap::new();
    pending.insert(first, ());
    let burst_end = tokio::time::Instant::now() + MAX_BURST.max(debounce);
    loop {
        let quiet = debounce.min(burst_end - tokio::time::Instant::now().min(burst_end));
        match tokio::time::timeout(quiet, rx.recv()).await {
            Ok(Some(p)) => {
                pending.insert(p, ());
            }
            Ok(None) => return None,
            Err(_) => return Some(pending),
        }
    }
}

/// Watches `root`: after `debounce` of quiet, `on_change` is told of the
/// tracked project paths (`.gitignore` honoured) that changed on disk. The
/// caller brings the stable layer in line ([`sync_from_disk`]) where its
/// transitions run, so no write to it happens behind their back.
pub fn watch(
    root: PathBuf,
    debounce: Duration,
    on_change: impl Fn(Vec<ProjectPath>) + Send + 'static,
) -> Result<WatchHandle, SyncError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            // Reads (another tool opening a file) change nothing, and a
            // steady stream of them would keep the debounce from ending.
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            for p in event.paths {
                // The watching task ended with the core: nothing to tell.
                tx.send(p).ok();
            }
        }
    })
    .map_err(|source| SyncError::Watch {
        path: root.clone(),
        source,
    })?;
    watcher
        .watch(&root, RecursiveMode::Recursive)
        .map_err(|source| SyncError::Watch {
            path: root.clone(),
            source,
        })?;
    let task = tokio::spawn(async move {
        let mut ignore = Ignores::new(&root);
        while let Some(first) = rx.recv().await {
            let Some(pending) = burst(first, &mut rx, debounce).await else {
                return;
            };
            if pending
                .keys()
                .any(|p| p.file_name().is_some_and(|n| n == ".gitignore"))
            {
                ignore.forget();
            }
            let root2 = root.clone();
            // `is_tracked` looks at the disk: off the async threads.
            let judged = tokio::task::spawn_blocking(move || {
                let changed = pending
                    .into_keys()
                    .flat_map(|abs| tracked_at(&root2, &mut ignore, &abs))
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>();
                (changed, ignore)
            })
            .await;
            let changed = match judged {
                Ok((changed, kept)) => {
                    ignore = kept;
                    changed
                }
                Err(_) => {
                    ignore = Ignores::new(&root);
                    vec![]
                }
            };
            if !changed.is_empty() {
                on_change(changed);
            }
        }
    });
    Ok(WatchHandle {
        _watcher: watcher,
        task,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Store) {
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watcher_follows_disk_changes() {
        let (dir, store) = project();
        let store = Arc::new(store);
        let root = dir.path().canonicalize().unwrap();
        import(&store, &root, 1 << 20, &OpenBuffers::default()).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (store2, root2) = (store.clone(), root.clone());
        let _w = watch(root.clone(), Duration::from_millis(50), move |paths| {
            for p in paths {
                if let Ok(true) = sync_from_disk(&store2, &root2, &p, 1 << 20) {
                    let _ = tx.send(p.to_string());
                }
            }
        })
        .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::fs::write(root.join("src/a.py"), "a = 2\n").unwrap();
        std::fs::write(root.join("ignored.log"), "x").unwrap();
        std::fs::write(root.join("src/new.py"), "n\n").unwrap();
        let mut seen = HashSet::new();
        while seen.len() < 2 {
            let p = tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .unwrap()
                .unwrap();
            seen.insert(p);
        }
        assert!(
            seen.contains("src/a.py") && seen.contains("src/new.py"),
            "{seen:?}"
        );
        let e = store.stable_entry("src/a.py").unwrap().unwrap();
        assert_eq!(store.blob(&e.hash).unwrap(), b"a = 2\n");
        assert!(store.stable_entry("ignored.log").unwrap().is_none());
        std::fs::remove_file(root.join("src/new.py")).unwrap();
        let p = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(p, "src/new.py");
        assert!(store.stable_entry("src/new.py").unwrap().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_watcher_honours_nested_gitignore_files_as_the_import_does() {
        let (dir, store) = project();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("src/.gitignore"), "gen_*.py\n!keep.log\n").unwrap();
        import(&store, &root, 1 << 20, &OpenBuffers::default()).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _w = watch(root.clone(), Duration::from_millis(50), move |paths| {
            for p in paths {
                let _ = tx.send(p.to_string());
            }
        })
        .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::fs::write(root.join("src/gen_x.py"), "x\n").unwrap();
        std::fs::write(root.join("src/keep.log"), "kept\n").unwrap();
        std::fs::write(root.join("gen_top.py"), "t\n").unwrap();
        let mut seen = HashSet::new();
        while seen.len() < 2 {
            let batch = tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .expect("the watcher reported")
                .unwrap();
            seen.insert(batch);
        }
        // Give a wrongly reported path time to arrive.
        tokio::time::sleep(Duration::from_millis(300)).await;
        while let Ok(p) = rx.try_recv() {
            seen.insert(p);
        }
        // The nested rules apply below src/ only; a deeper `!` wins over
        // the root's `*.log`.
        assert_eq!(
            seen,
            HashSet::from(["src/keep.log".to_owned(), "gen_top.py".to_owned()])
        );
        // The walk of the import agrees.
        import(&store, &root, 1 << 20, &OpenBuffers::default()).unwrap();
        let paths = store.stable_paths().unwrap();
        assert!(paths.contains(&"src/keep.log".to_owned()), "{paths:?}");
        assert!(!paths.contains(&"src/gen_x.py".to_owned()), "{paths:?}");
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
