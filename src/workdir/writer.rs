//! Writes many files of an agent's folder at once, as its fill needs: one
//! thread reads their content from the store while a few others write it
//! (a write waits on the disk, a read on SQLite; both go on together),
//! each writer opening every folder once ([`rootfs::ScratchWriter`]).

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::{remove, Seen, Stat, WorkdirError};
use crate::paths::ProjectPath;
use crate::rootfs::{self, ScratchWriter};
use crate::store::{Store, ViewEntry};

/// Files below this many are written by the calling thread alone.
const ALONE: usize = 64;

/// The most threads that write (the disk, not the cores, is the limit).
const WRITERS: usize = 4;

/// How long before the fill its files are dated: more than the coarsest
/// tick of a file clock (whole seconds on some file systems), so a file
/// a program rewrites in the same tick still changes date.
const STAMP_BEFORE: Duration = Duration::from_secs(2);

/// One file to write, its content read.
struct Job {
    path: ProjectPath,
    hash: crate::store::Hash,
    mode: u32,
    data: Vec<u8>,
}

/// Writes `todo` (paths of the view and their entries) into `files`; what
/// each file is once written.
pub(super) fn write_all(
    files: &Path,
    store: &Store,
    todo: Vec<(String, ViewEntry)>,
) -> Result<Vec<(String, Seen)>, WorkdirError> {
    let jobs = todo.into_iter().filter_map(|(path, e)| {
        // A path the view holds is a project path; one that is not is skipped.
        let path = ProjectPath::parse(&path).ok()?;
        Some((path, e))
    });
    let writers = std::thread::available_parallelism().map_or(1, |n| n.get().min(WRITERS));
    let stamp = SystemTime::now() - STAMP_BEFORE;
    if writers == 1 || jobs.size_hint().1.is_some_and(|n| n < ALONE) {
        let mut w = ScratchWriter::new(files, stamp);
        return jobs
            .map(|(path, e)| {
                let data = store.blob(&e.hash)?;
                write_one(files, &mut w, job(path, e, data))
            })
            .collect();
    }
    let (send, receive) = sync_channel::<Job>(WRITERS * 16);
    // A writer that failed drops the receiver: the reader then stops.
    let receive = Mutex::new(Some(receive));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..writers)
            .map(|_| scope.spawn(|| writer(files, stamp, &receive)))
            .collect();
        let mut read = Ok(());
        for (path, e) in jobs {
            let data = match store.blob(&e.hash) {
                Ok(d) => d,
                Err(err) => {
                    read = Err(WorkdirError::from(err));
                    break;
                }
            };
            if send.send(job(path, e, data)).is_err() {
                break;
            }
        }
        drop(send);
        let mut written = Vec::new();
        for w in workers {
            match w.join() {
                Ok(Ok(mut done)) => written.append(&mut done),
                Ok(Err(e)) => read = read.and(Err(e)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        read.map(|()| written)
    })
}

fn job(path: ProjectPath, e: ViewEntry, data: Vec<u8>) -> Job {
    Job {
        path,
        hash: e.hash,
        mode: e.mode,
        data,
    }
}

/// One writing thread: takes jobs until there are none, or it failed.
fn writer(
    files: &Path,
    stamp: SystemTime,
    receive: &Mutex<Option<Receiver<Job>>>,
) -> Result<Vec<(String, Seen)>, WorkdirError> {
    let mut w = ScratchWriter::new(files, stamp);
    let mut done = Vec::new();
    loop {
        let next = match receive.lock() {
            Ok(r) => r.as_ref().map(|r| r.recv()),
            Err(_) => None,
        };
        let Some(Ok(job)) = next else {
            return Ok(done);
        };
        match write_one(files, &mut w, job) {
            Ok(seen) => done.push(seen),
            Err(e) => {
                if let Ok(mut r) = receive.lock() {
                    r.take();
                }
                return Err(e);
            }
        }
    }
}

/// Writes one file; where a folder stands in its place (or a file in the
/// place of one of its folders), that is removed first.
fn write_one(
    files: &Path,
    w: &mut ScratchWriter<'_>,
    job: Job,
) -> Result<(String, Seen), WorkdirError> {
    let meta = match w.write(&job.path, &job.data, job.mode) {
        Ok(meta) => meta,
        Err(_) => {
            remove(files, job.path.as_str())?;
            w.forget();
            rootfs::write_scratch(files, &job.path, &job.data, job.mode)?;
            std::fs::symlink_metadata(files.join(job.path.as_str())).map_err(super::io(files))?
        }
    };
    let seen = Seen {
        hash: job.hash,
        stat: Stat::of(&meta),
    };
    Ok((job.path.as_str().to_owned(), seen))
}
