//! Files a batch of writes replaced or deleted, closed off the writer's
//! path. The last close of a file no name points to frees its blocks, and
//! on ext4 that costs ten times the rename that unlinked it (about 0.2 ms
//! a file, measured): held open through the renames, such files are let go
//! once the write is done, on one thread that only closes them.

use std::fs::File;
use std::sync::mpsc::{self, Sender};
use std::sync::OnceLock;

/// The most files a write holds open. Each target already holds its
/// folder open; a larger write holds none, so it needs no more descriptors
/// than it did (a large accept must not run out of them).
pub(super) const HELD_PER_WRITE: usize = 256;

/// Closes `files` on the closing thread, or here when it cannot start.
pub(super) fn let_go(files: Vec<File>) {
    if files.is_empty() {
        return;
    }
    static CLOSER: OnceLock<Option<Sender<Vec<File>>>> = OnceLock::new();
    let closer = CLOSER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Vec<File>>();
        // The thread lives as long as the process and holds nothing but
        // the files it is given; each batch is dropped as it arrives.
        std::thread::Builder::new()
            .name("chimera-close".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| tx)
    });
    match closer {
        // A send fails only once the thread is gone: the files come back
        // in the error and close as it drops.
        Some(tx) => drop(tx.send(files)),
        None => drop(files),
    }
}
