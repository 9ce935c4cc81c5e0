//! The kernel's watches, one per folder, and the paths their events name.
//! On Linux they are inotify watches asked for changes only: notify's ask
//! for opens too, so every file a reader opened (the import reading the
//! whole project, a test run, a grep) woke its thread for an event the
//! watcher then dropped. Elsewhere, notify's watcher.

use std::io;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

#[cfg(target_os = "linux")]
pub use linux::Folders;
#[cfg(not(target_os = "linux"))]
pub use portable::Folders;

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use futures_util::StreamExt;
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

    /// What changes a folder's watch reports: no open, read or close of
    /// a file that was only read.
    const CHANGES: WatchMask = WatchMask::ATTRIB
        .union(WatchMask::CREATE)
        .union(WatchMask::DELETE)
        .union(WatchMask::CLOSE_WRITE)
        .union(WatchMask::MODIFY)
        .union(WatchMask::MOVED_FROM)
        .union(WatchMask::MOVED_TO)
        .union(WatchMask::DELETE_SELF)
        .union(WatchMask::MOVE_SELF);

    /// The folders watched, by the kernel's name for each watch.
    struct Watched {
        watches: inotify::Watches,
        folders: HashMap<WatchDescriptor, PathBuf>,
    }

    /// Watches folders one by one; the paths events name go to the
    /// channel given at the start, until the reading task is dropped.
    #[derive(Clone)]
    pub struct Folders {
        watched: Arc<Mutex<Watched>>,
        reading: tokio::task::AbortHandle,
    }

    impl Folders {
        /// Starts reading events (on the runtime) for folders added later;
        /// `top` is what a lost burst of events (the kernel's queue full)
        /// names, so that everything is looked at again.
        pub fn start(top: &Path, tx: mpsc::UnboundedSender<PathBuf>) -> io::Result<Folders> {
            let inotify = Inotify::init()?;
            let watches = inotify.watches();
            let mut events = inotify.into_event_stream(vec![0u8; 64 << 10])?;
            let watched = Arc::new(Mutex::new(Watched {
                watches,
                folders: HashMap::new(),
            }));
            let (names, top) = (watched.clone(), top.to_path_buf());
            let task = tokio::spawn(async move {
                while let Some(Ok(event)) = events.next().await {
                    if event.mask.contains(EventMask::Q_OVERFLOW) {
                        tx.send(top.clone()).ok();
                        continue;
                    }
                    let mut w = names.lock().unwrap_or_else(|p| p.into_inner());
                    if event.mask.contains(EventMask::IGNORED) {
                        w.folders.remove(&event.wd);
                        continue;
                    }
                    let Some(folder) = w.folders.get(&event.wd) else {
                        continue;
                    };
                    let path = match &event.name {
                        Some(name) => folder.join(name),
                        None => folder.clone(),
                    };
                    // The judging task ended with the core: nothing to tell.
                    if tx.send(path).is_err() {
                        return;
                    }
                }
            });
            Ok(Folders {
                watched,
                reading: task.abort_handle(),
            })
        }

        /// Watches `folder` itself (not what lies below it).
        pub fn add(&self, folder: &Path) -> io::Result<()> {
            let mut w = self.watched.lock().unwrap_or_else(|p| p.into_inner());
            let wd = w.watches.add(folder, CHANGES)?;
            w.folders.insert(wd, folder.to_path_buf());
            Ok(())
        }

        /// Stops reading events; the watches end with the last copy.
        pub fn stop(&self) {
            self.reading.abort();
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod portable {
    use super::*;
    use std::sync::{Arc, Mutex};

    use notify::{RecursiveMode, Watcher};

    /// notify's watcher, folder by folder.
    #[derive(Clone)]
    pub struct Folders(Arc<Mutex<notify::RecommendedWatcher>>);

    impl Folders {
        pub fn start(_top: &Path, tx: mpsc::UnboundedSender<PathBuf>) -> io::Result<Folders> {
            let watcher =
                notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                    if let Ok(event) = event {
                        // Reads change nothing, and a steady stream of them
                        // would keep the debounce from ending.
                        if matches!(event.kind, notify::EventKind::Access(_)) {
                            return;
                        }
                        for p in event.paths {
                            tx.send(p).ok();
                        }
                    }
                })
                .map_err(io::Error::other)?;
            Ok(Folders(Arc::new(Mutex::new(watcher))))
        }

        pub fn add(&self, folder: &Path) -> io::Result<()> {
            let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
            w.watch(folder, RecursiveMode::NonRecursive)
                .map_err(io::Error::other)
        }

        pub fn stop(&self) {}
    }
}
