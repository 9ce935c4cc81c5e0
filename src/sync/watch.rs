//! The file watcher: one inotify watch per folder of the project that git
//! would see (ignored folders such as `node_modules/` or `target/` never get
//! one), each added by the import's walk as it lists the folder (the
//! project is walked once, not once for each), folders that appear watched
//! as they come; what changed is reported after a quiet moment.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::folders::Folders;
use super::{outside_reserved, tracked_at, Ignores, SyncError};
use crate::paths::ProjectPath;

/// A running file watcher; dropping it stops watching.
pub struct WatchHandle {
    watching: Watching,
    task: tokio::task::JoinHandle<()>,
}

impl WatchHandle {
    /// What the import's walk adds each folder to (`import_watching`).
    pub fn watching(&self) -> &Watching {
        &self.watching
    }
}

/// The folders a watcher watches, which the import's walk adds one by
/// one; the first the system refuses (its limit of watches reached) stops
/// the watcher, and is kept for the caller to tell.
#[derive(Clone)]
pub struct Watching {
    folders: Folders,
    root: PathBuf,
    refused: Arc<Mutex<Option<std::io::Error>>>,
}

impl Watching {
    /// Watches `folder` from now on, unless a folder was refused before.
    pub(super) fn add(&self, folder: &Path) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if refused.is_some() {
            return;
        }
        if let Err(e) = self.folders.add(folder) {
            self.folders.stop();
            *refused = Some(e);
        }
    }

    /// Why the watcher stopped while its folders were added, once.
    pub fn refused(&self) -> Option<SyncError> {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.take().map(|source| SyncError::Watch {
            path: self.root.clone(),
            source,
        })
    }
}

/// Watches `top` and every folder under it that git would see, each
/// alone. Fails on the first folder the system refuses (its limit of
/// watches reached).
fn watch_folders(watching: &Folders, top: &Path) -> std::io::Result<()> {
    let folders = super::project_walk(top)
        .filter_entry(|e| e.file_type().is_some_and(|t| t.is_dir()) && outside_reserved(e))
        .build()
        .filter_map(Result::ok);
    for folder in folders {
        watching.add(folder.path())?;
    }
    Ok(())
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.watching.folders.stop();
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
/// transitions run, so no write to it happens behind their back. No folder
/// is watched until the import's walk adds it ([`WatchHandle::watching`]):
/// each is watched before it is listed, so a file written meanwhile is
/// seen by the walk or by the watcher, never by neither.
pub fn watch(
    root: PathBuf,
    debounce: Duration,
    on_change: impl Fn(Vec<ProjectPath>) + Send + 'static,
) -> Result<WatchHandle, SyncError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let failed = |source| SyncError::Watch {
        path: root.clone(),
        source,
    };
    let folders = Folders::start(&root, tx).map_err(failed)?;
    let (watching, top) = (folders.clone(), root.clone());
    let task = tokio::spawn(async move {
        let root = top;
        let mut ignore = Ignores::new(&root);
        while let Some(first) = rx.recv().await {
            let Some(pending) = burst(first, &mut rx, debounce).await else {
                return;
            };
            let rules_changed = pending
                .keys()
                .any(|p| p.file_name().is_some_and(|n| n == ".gitignore"));
            if rules_changed {
                ignore.forget();
            }
            let (root2, watching) = (root.clone(), watching.clone());
            // `is_tracked` looks at the disk: off the async threads.
            let judged = tokio::task::spawn_blocking(move || {
                let changed = judge(&root2, &watching, &mut ignore, pending, rules_changed);
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
        watching: Watching {
            folders,
            root,
            refused: Default::default(),
        },
        task,
    })
}

/// The tracked project paths a burst of events for `pending` concerns;
/// the folders among them are watched from now on, and every folder no
/// longer ignored when the rules changed.
fn judge(
    root: &Path,
    watching: &Folders,
    ignore: &mut Ignores,
    pending: HashMap<PathBuf, ()>,
    rules_changed: bool,
) -> Vec<ProjectPath> {
    if rules_changed {
        unwatched(watch_folders(watching, root));
    }
    let changed: HashSet<ProjectPath> = pending
        .into_keys()
        .flat_map(|abs| {
            if is_watched_folder(root, ignore, &abs) {
                unwatched(watch_folders(watching, &abs));
            }
            tracked_at(root, ignore, &abs)
        })
        .collect();
    changed.into_iter().collect()
}

/// Whether `abs` is a folder of the project git would see: one that just
/// appeared is watched (its files, written before, are reported by
/// [`tracked_at`]); one watched already is watched once all the same.
fn is_watched_folder(root: &Path, ignore: &mut Ignores, abs: &Path) -> bool {
    std::fs::symlink_metadata(abs).is_ok_and(|m| m.is_dir())
        && ProjectPath::from_absolute(root, abs).is_some()
        && !ignore.ignored(abs, true)
}

/// A folder that could not be watched after the start (the system's limit
/// of watches reached, or the folder gone already) is left unwatched: its
/// changes are seen at the next import, as changes made while no core ran.
fn unwatched(result: std::io::Result<()>) {
    let _ = result;
}

#[cfg(test)]
mod tests {
    use super::super::tests::project;
    use super::super::{import, import_watching, sync_from_disk, OpenBuffers};
    use super::*;
    use std::sync::Arc;

    /// The import of `root`, its folders added to `w`; how many files.
    fn import_into(store: &crate::store::Store, root: &std::path::Path, w: &WatchHandle) -> usize {
        import_watching(
            store,
            root,
            1 << 20,
            &OpenBuffers::default(),
            Some(w.watching()),
        )
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watcher_follows_disk_changes() {
        let (dir, store) = project();
        let store = Arc::new(store);
        let root = dir.path().canonicalize().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (store2, root2) = (store.clone(), root.clone());
        let w = watch(root.clone(), Duration::from_millis(50), move |paths| {
            for p in paths {
                if let Ok(true) = sync_from_disk(&store2, &root2, &p, 1 << 20) {
                    let _ = tx.send(p.to_string());
                }
            }
        })
        .unwrap();
        import_into(&store, &root, &w);
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
        let (tx, mut rx) = mpsc::unbounded_channel();
        let w = watch(root.clone(), Duration::from_millis(50), move |paths| {
            for p in paths {
                let _ = tx.send(p.to_string());
            }
        })
        .unwrap();
        import_into(&store, &root, &w);
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_folder_stops_the_watcher_but_not_the_import() {
        use std::os::unix::fs::MetadataExt;
        let (dir, store) = project();
        let root = dir.path().canonicalize().unwrap();
        let w = watch(root.clone(), Duration::from_millis(50), |_| {}).unwrap();
        // As the system refuses a watch past its limit: a folder gone.
        w.watching().add(&root.join("gone"));
        let files = import_into(&store, &root, &w);
        assert!(files > 0 && store.stable_entry("src/a.py").unwrap().is_some());
        let src = std::fs::metadata(root.join("src")).unwrap().ino();
        assert!(
            !watched_inodes().contains_key(&src),
            "no folder is watched after one was refused"
        );
        let told = w
            .watching()
            .refused()
            .expect("the refusal is kept")
            .to_string();
        assert!(told.contains(&root.display().to_string()), "{told}");
        assert!(w.watching().refused().is_none(), "told once");
    }

    /// The inodes every inotify instance of this process watches, with
    /// the events each watch asks for.
    fn watched_inodes() -> HashMap<u64, u32> {
        let mut inodes = HashMap::new();
        for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
            let inotify = std::fs::read_link(fd.path())
                .is_ok_and(|l| l.to_string_lossy().contains("inotify"));
            let info = std::fs::read_to_string(format!(
                "/proc/self/fdinfo/{}",
                fd.file_name().to_string_lossy()
            ));
            if let (true, Ok(info)) = (inotify, info) {
                for watch in info.lines().filter(|l| l.starts_with("inotify ")) {
                    let field = |name: &str| {
                        let hex = watch.split_whitespace().find_map(|w| w.strip_prefix(name));
                        u64::from_str_radix(hex.unwrap(), 16).unwrap()
                    };
                    inodes.insert(field("ino:"), field("mask:") as u32);
                }
            }
        }
        inodes
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn folders_that_appear_are_watched_and_ignored_ones_never_are() {
        use std::os::unix::fs::MetadataExt;
        let (dir, store) = project();
        let root = dir.path().canonicalize().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let w = watch(root.clone(), Duration::from_millis(50), move |paths| {
            for p in paths {
                let _ = tx.send(p.to_string());
            }
        })
        .unwrap();
        let ino = |p: &str| std::fs::metadata(root.join(p)).unwrap().ino();
        assert!(
            !watched_inodes().contains_key(&ino("src")),
            "nothing is watched before the import's walk"
        );
        import_into(&store, &root, &w);
        let inodes = watched_inodes();
        assert!(inodes.contains_key(&ino("src")) && inodes.contains_key(&ino("")));
        assert!(
            !inodes.contains_key(&ino("build")),
            "an ignored folder is not watched"
        );
        assert!(!inodes.contains_key(&ino(".git")));
        // IN_ACCESS, IN_CLOSE_NOWRITE, IN_OPEN: a file only read (the
        // import reads every one) wakes nobody.
        let reads = 0x01 | 0x10 | 0x20;
        assert_eq!(inodes[&ino("src")] & reads, 0, "{:x}", inodes[&ino("src")]);
        // A folder, then a folder in it, each given time to be seen, then
        // a file in the inner one: only a watch on it reports the file.
        let settle = Duration::from_millis(400);
        std::fs::create_dir(root.join("pkg")).unwrap();
        tokio::time::sleep(settle).await;
        std::fs::create_dir(root.join("pkg/sub")).unwrap();
        tokio::time::sleep(settle).await;
        std::fs::write(root.join("pkg/sub/b.py"), "b = 1\n").unwrap();
        let seen = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a file in a folder made after the start is reported")
            .unwrap();
        assert_eq!(seen, "pkg/sub/b.py");
        assert!(watched_inodes().contains_key(&ino("pkg/sub")));
    }
}
