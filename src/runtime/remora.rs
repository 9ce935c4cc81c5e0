//! The Remora worker: one thread owns every change to the index, so changes
//! apply in order, and the editor reads the topology in memory (a read lock,
//! never I/O). A whole-project index is built beside the live one and
//! swapped in, so readers never wait for it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

use crate::config::{IdMode, RemoraConfig};
use crate::event::Event;
use crate::event::Level;
use crate::port::ForEditor;
use crate::remora::index::Indexer;
use crate::remora::inject::{self, IdEdit};
use crate::remora::is_indexed;
pub use crate::remora::shared::SharedIndex;
use crate::store::Store;
use crate::sync::OpenBuffers;

/// Work for the worker.
pub enum Job {
    /// Build the index of the whole stable layer, unless it is built (or
    /// being built: jobs run in order).
    IndexAll,
    /// The human's text of this project path changed (or the file went);
    /// ignored until the index is built, which then reads the file as it is.
    Changed(String),
    /// `:Chimera remora enable`: index everything; in inline mode, count
    /// the files that will get ID comments and, once confirmed, write them.
    Enable { confirmed: bool },
    /// Run once the index holds what was asked before (a request typed
    /// right after a file was opened sees that file's nodes).
    Then(Box<dyn FnOnce() + Send>),
}

/// Setting key: the user ran `:Chimera remora enable` in this project.
pub const ENABLED: &str = "remora_enabled";

pub struct Worker {
    tx: mpsc::Sender<Job>,
}

/// What the worker works with.
pub struct Context {
    /// Remora events for the core to log (and to wake subscribers).
    pub events: tokio::sync::mpsc::UnboundedSender<crate::remora::events::Event>,
    pub store: Arc<Store>,
    pub root: PathBuf,
    pub config: RemoraConfig,
    pub buffers: OpenBuffers,
    pub out: Arc<super::outlet::Outlet>,
    pub shared: SharedIndex,
}

impl Worker {
    /// Starts the worker thread; it ends when the worker is dropped.
    pub fn start(ctx: Context) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("chimera-remora".into())
            .spawn(move || run(ctx, rx))?;
        Ok(Self { tx })
    }

    pub fn send(&self, job: Job) {
        // The indexing thread stopped with the core: no job is left to do.
        let _ = self.tx.send(job);
    }
}

fn run(ctx: Context, rx: mpsc::Receiver<Job>) {
    // A file indexed alone into a topology not yet loaded would get new
    // node IDs; the whole index, built later, compares every file's hash.
    let mut built = false;
    while let Ok(first) = rx.recv() {
        // A burst of changes (typing, a checkout) is handled once per file.
        let mut all = false;
        let mut enable = None;
        let mut changed = BTreeSet::new();
        let mut then = Vec::new();
        for job in std::iter::once(first).chain(rx.try_iter()) {
            match job {
                Job::IndexAll => all = true,
                Job::Changed(p) => {
                    changed.insert(p);
                }
                Job::Enable { confirmed } => enable = Some(confirmed),
                Job::Then(f) => then.push(f),
            }
        }
        let result = (|| -> Result<(), WorkerError> {
            if (all && !built) || enable.is_some() {
                index_all(&ctx)?;
                built = true;
            }
            if built {
                for path in &changed {
                    changed_file(&ctx, path)?;
                }
            }
            if let Some(confirmed) = enable {
                enable_remora(&ctx, confirmed)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            ctx.out
                .notify(Level::Warn, format!("Chimera: Remora index: {e}"));
        }
        for f in then {
            f();
        }
    }
}

/// Why the worker could not index or write IDs.
#[derive(Debug, thiserror::Error)]
enum WorkerError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Disk(#[from] crate::rootfs::DiskError),
}

/// The text of `path` in the stable layer, if it is there and not too large.
fn stable_text(store: &Store, path: &str) -> Option<String> {
    let entry = store.stable_entry(path).ok()??;
    if entry.too_large {
        return None;
    }
    let data = store.blob(&entry.hash).ok()?;
    Some(String::from_utf8_lossy(&data).into_owned())
}

fn index_all(ctx: &Context) -> Result<(), WorkerError> {
    let files: Vec<(String, Option<String>)> = ctx
        .store
        .stable_hashes()?
        .into_iter()
        .filter(|(p, _)| is_indexed(p))
        .map(|(p, h)| (p, Some(h)))
        .collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut fresh = Indexer::open(&ctx.store)?;
    fresh.index_all(&ctx.store, &files, threads, |p| stable_text(&ctx.store, p))?;
    fresh.hydrate(&ctx.store)?;
    *ctx.shared.write() = fresh;
    ctx.out.event(Event::Topology { path: None });
    Ok(())
}

fn inline_enabled(ctx: &Context) -> bool {
    ctx.config.ids == IdMode::Inline
        && ctx.store.setting(ENABLED).ok().flatten().as_deref() == Some("1")
}

fn changed_file(ctx: &Context, path: &str) -> Result<(), WorkerError> {
    if !is_indexed(path) {
        return Ok(());
    }
    let Some(text) = stable_text(&ctx.store, path) else {
        let removed = ctx.shared.write().remove(&ctx.store, path)?;
        if let Some(change) = &removed {
            ctx.out.event(Event::Topology {
                path: Some(path.to_owned()),
            });
            topology_event(ctx, change);
        }
        return Ok(());
    };
    let indexed = ctx.shared.write().index_text(&ctx.store, path, &text)?;
    if let Some(change) = &indexed.change {
        ctx.out.event(Event::Topology {
            path: Some(path.to_owned()),
        });
        topology_event(ctx, change);
    }
    if inline_enabled(ctx) {
        write_ids(ctx, path, &text)?;
    }
    Ok(())
}

/// A `TopologyChangedEvent` when nodes came or went (not for line moves).
fn topology_event(ctx: &Context, change: &crate::remora::topology::FileChange) {
    if change.added.is_empty() && change.orphaned.is_empty() {
        return;
    }
    // No listener (Remora's bus is off): the event has no one to tell.
    let _ = ctx
        .events
        .send(crate::remora::events::Event::TopologyChanged {
            file_path: change.path.clone(),
            added_nodes: change.added.clone(),
            removed_nodes: if change.removed {
                change.orphaned.clone()
            } else {
                vec![]
            },
            orphaned_nodes: change.orphaned.clone(),
        });
}

/// Gives `path` its missing ID comments: in its buffer when it is loaded
/// (the editor applies them as one undoable change), else on disk.
/// Returns whether anything was missing.
fn write_ids(ctx: &Context, path: &str, text: &str) -> Result<bool, WorkerError> {
    let edits = ctx.shared.read().id_edits(path, text);
    if edits.is_empty() {
        return Ok(false);
    }
    if ctx.buffers.contains(path) {
        let lines: Vec<&str> = text.split('\n').collect();
        let edits = inject::buffer_edits(text, &edits)
            .into_iter()
            .map(|edit| {
                let line = lines.get(edit.start_row).copied().unwrap_or("");
                IdEdit {
                    expect: line.strip_suffix('\r').unwrap_or(line).to_owned(),
                    edit,
                }
            })
            .collect();
        ctx.out.direct(ForEditor::InjectIds {
            path: path.to_owned(),
            edits,
        });
        return Ok(true);
    }
    // On disk only if the file still holds the text the edits were made
    // for (checked right before the rename); otherwise the watcher brings
    // the newer text and we come back.
    let mode = ctx
        .store
        .stable_entry(path)
        .ok()
        .flatten()
        .map_or(0o644, |e| e.mode);
    let new = inject::apply(text, &edits);
    let write = crate::rootfs::Write {
        path: path.to_owned(),
        data: Some(new.clone().into_bytes()),
        mode,
        expect: crate::rootfs::Expect::Content(crate::store::hash_bytes(text.as_bytes())),
    };
    match crate::rootfs::write_all(&ctx.root, &[write]) {
        // A buffer Neovim loaded just before the write (the core had not
        // heard of it yet) would be left stale: the editor reloads it.
        Ok(()) => ctx.out.event(Event::FilesWritten {
            paths: vec![path.to_owned()],
        }),
        Err(crate::rootfs::DiskError::Changed(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    // Index the new text now rather than when the watcher reports it.
    ctx.shared.write().index_text(&ctx.store, path, &new)?;
    Ok(true)
}

fn enable_remora(ctx: &Context, confirmed: bool) -> Result<(), WorkerError> {
    let (files, nodes) = {
        let ix = ctx.shared.read();
        let t = ix.topology();
        (t.file_paths().count(), t.counts().0)
    };
    if ctx.config.ids == IdMode::Shadow {
        ctx.store.set_setting(ENABLED, "1")?;
        ctx.out.notify(Level::Info, format!(
                "Chimera: Remora is on: {nodes} nodes in {files} Python files (IDs kept in the database; set remora.ids = \"inline\" for `# rm_…` comments)"
            ));
        return Ok(());
    }
    let paths: Vec<String> = ctx
        .shared
        .read()
        .topology()
        .file_paths()
        .map(str::to_owned)
        .collect();
    if !confirmed {
        let pending = paths
            .iter()
            .filter(|p| {
                stable_text(&ctx.store, p)
                    .is_some_and(|t| !ctx.shared.read().id_edits(p, &t).is_empty())
            })
            .count();
        ctx.out.direct(ForEditor::RemoraConfirm {
            files: pending,
            nodes,
        });
        return Ok(());
    }
    ctx.store.set_setting(ENABLED, "1")?;
    let mut written = 0;
    for p in &paths {
        if let Some(text) = stable_text(&ctx.store, p) {
            if write_ids(ctx, p, &text)? {
                written += 1;
            }
        }
    }
    ctx.out.notify(
        Level::Info,
        format!("Chimera: Remora is on: {nodes} nodes; ID comments written to {written} files"),
    );
    Ok(())
}
