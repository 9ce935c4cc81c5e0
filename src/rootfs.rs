//! The project's files on disk, reached without following symbolic links.
//! Every directory on the way to a file is opened relative to its parent
//! with `O_NOFOLLOW`, so no link — not even one swapped in after a check —
//! can lead a read or a write outside the root. A batch of writes is all
//! or nothing, and each file is checked against the content the caller
//! expects right before it is replaced.

use std::collections::HashMap;
use std::io::{Read, Write as _};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::hash::hash_bytes;
use crate::paths::ProjectPath;

mod release;

/// Why a file of the project could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("`{0}` goes through a symbolic link; Chimera never reads or writes through links (edit the link's target by its own path)")]
    Symlink(String),
    #[error("`{0}` is not a regular file (a directory or a device is in its place)")]
    NotAFile(String),
    #[error("`{0}` changed on disk since the proposal was made; nothing was written")]
    Changed(String),
    #[error("`{path}` is larger than {limit} bytes")]
    TooLarge { path: String, limit: u64 },
    #[error("cannot write `{path}`: {source}; nothing was changed")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// A batch failed midway and some of the files it had already replaced
    /// could not be put back. Every batch of more than one file has an
    /// intent journal (`store::journal`), which puts them back.
    #[error("cannot write `{path}`: {source}; {} could not be put back right away: Chimera's intent journal puts {} back when the write is abandoned, or at the next start", left.join(", "), if left.len() == 1 { "it" } else { "them" })]
    NotUndone {
        path: String,
        source: std::io::Error,
        left: Vec<String>,
    },
}

/// What a file must hold right before it is replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Whatever it holds (the caller has no base to compare with).
    Anything,
    /// No file at the path.
    Absent,
    /// Content with this hash.
    Content(String),
}

/// One file to write (`data`) or delete (`None`).
#[derive(Debug, Clone)]
pub struct Write {
    pub path: String,
    pub data: Option<Vec<u8>>,
    pub mode: u32,
    pub expect: Expect,
}

fn io_err(path: &str, source: impl Into<std::io::Error>) -> DiskError {
    DiskError::Io {
        path: path.to_owned(),
        source: source.into(),
    }
}

/// The project root, opened as a directory.
fn open_root(root: &Path, path: &str) -> Result<OwnedFd, DiskError> {
    rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(path, e))
}

/// Why opening `name` under `dir` without following links failed.
fn classify(dir: &OwnedFd, name: &str, path: &str, errno: Errno) -> DiskError {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            DiskError::Symlink(path.to_owned())
        }
        Ok(_) if matches!(errno, Errno::NOTDIR | Errno::ISDIR) => {
            DiskError::NotAFile(path.to_owned())
        }
        _ => io_err(path, errno),
    }
}

/// The directory holding `path` and the file's name in it; `None` when a
/// directory on the way does not exist (and `create` is false).
fn open_parent(
    root: &Path,
    path: &ProjectPath,
    create: bool,
) -> Result<Option<(OwnedFd, String)>, DiskError> {
    let p = path.as_str();
    let mut dir = open_root(root, p)?;
    let mut parts: Vec<&str> = p.split('/').collect();
    let name = parts.pop().unwrap_or_default().to_owned();
    for part in parts {
        let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
        let next = match rustix::fs::openat(&dir, part, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io_err(p, e)),
                }
                rustix::fs::openat(&dir, part, flags, Mode::empty())
            }
            other => other,
        };
        dir = match next {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(classify(&dir, part, p, e)),
        };
    }
    Ok(Some((dir, name)))
}

/// Opens the regular file `name` in `dir` for reading, never through a
/// link; with its size then.
fn open_file(
    dir: &OwnedFd,
    name: &str,
    path: &str,
) -> Result<Option<(std::fs::File, u64)>, DiskError> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(classify(dir, name, path, e)),
    };
    regular_file(fd, path).map(Some)
}

/// `fd` as a file, when it is a regular one; with its size.
fn regular_file(fd: OwnedFd, path: &str) -> Result<(std::fs::File, u64), DiskError> {
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(DiskError::NotAFile(path.to_owned()));
    }
    Ok((std::fs::File::from(fd), st.st_size as u64))
}

/// Reads at most `limit` bytes of `file`; more is [`DiskError::TooLarge`].
/// `size`: what the file held when opened, so that a file that did not
/// change since is read in one call, not in growing steps from a small
/// first one.
fn read_capped(file: impl Read, size: u64, path: &str, limit: u64) -> Result<Vec<u8>, DiskError> {
    // One byte more than the file: the read that finds its end needs room.
    let room = size.min(limit).min(MAX_FILE_BYTES).saturating_add(1);
    let mut data = Vec::with_capacity(room as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| io_err(path, e))?;
    if data.len() as u64 > limit {
        return Err(DiskError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    Ok(data)
}

/// The size of the largest file read whole unless the options say
/// otherwise (`sync.max_file_bytes`).
pub const MAX_FILE_BYTES: u64 = 2 << 20;

/// The content of `path` under `root` (`None` if there is no such file),
/// read without following any link and never more than `limit` bytes.
pub fn read(root: &Path, path: &ProjectPath, limit: u64) -> Result<Option<Vec<u8>>, DiskError> {
    Root::open(root)?.read(path, limit)
}

/// The root held open for many reads (an import reads every file): each
/// then costs the kernel one `openat2` that follows no link and leaves no
/// path outside the root, where the kernel has it (Linux 5.6), instead of
/// an open per folder on the way.
pub struct Root<'a> {
    path: &'a Path,
    fd: OwnedFd,
}

impl<'a> Root<'a> {
    pub fn open(path: &'a Path) -> Result<Self, DiskError> {
        Ok(Root {
            fd: open_root(path, &path.display().to_string())?,
            path,
        })
    }

    /// [`read`] under this root.
    pub fn read(&self, path: &ProjectPath, limit: u64) -> Result<Option<Vec<u8>>, DiskError> {
        let file = match self.open_in_one_step(path) {
            Some(opened) => opened?,
            None => match open_parent(self.path, path, false)? {
                Some((dir, name)) => open_file(&dir, &name, path.as_str())?,
                None => None,
            },
        };
        file.map(|(f, size)| read_capped(f, size, path.as_str(), limit))
            .transpose()
    }

    /// The file at `path` opened by one `openat2`; `None` when the kernel
    /// lacks it, or when it refused for a reason the walk of folders
    /// names better (a link on the way, a file where a folder should be).
    #[cfg(target_os = "linux")]
    fn open_in_one_step(
        &self,
        path: &ProjectPath,
    ) -> Option<Result<Option<(std::fs::File, u64)>, DiskError>> {
        use rustix::fs::ResolveFlags;
        use std::sync::atomic::{AtomicBool, Ordering};
        static MISSING: AtomicBool = AtomicBool::new(false);
        if MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&self.fd, path.as_str(), flags, Mode::empty(), resolve) {
            Ok(fd) => Some(regular_file(fd, path.as_str()).map(Some)),
            Err(Errno::NOENT) => Some(Ok(None)),
            Err(Errno::NOSYS) => {
                MISSING.store(true, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn open_in_one_step(
        &self,
        _path: &ProjectPath,
    ) -> Option<Result<Option<(std::fs::File, u64)>, DiskError>> {
        None
    }
}

/// Makes the folders `path` lies in under `root` that do not exist yet,
/// never through a link: a buffer of a new file in a new folder can then
/// be written by the editor (Neovim's `:w` does not make folders).
pub fn make_parent_dirs(root: &Path, path: &ProjectPath) -> Result<(), DiskError> {
    open_parent(root, path, true).map(drop)
}

/// Refuses a path that an existing symbolic link (a folder on the way, or
/// the file itself) would lead through: such a path is not part of the
/// project as Chimera sees it, so nothing may be written there.
pub fn check_no_links(root: &Path, path: &ProjectPath) -> Result<(), DiskError> {
    let Some((dir, name)) = open_parent(root, path, false)? else {
        return Ok(());
    };
    match rustix::fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            Err(DiskError::Symlink(path.to_string()))
        }
        _ => Ok(()),
    }
}

/// Writes `data` to `path` under `root` in place — no temporary file, no
/// sync — never through a link: for a scratch folder whose content is not
/// the human's (an agent's working folder), where a program may have
/// swapped a folder for a link meanwhile.
pub fn write_scratch(
    root: &Path,
    path: &ProjectPath,
    data: &[u8],
    mode: u32,
) -> Result<(), DiskError> {
    let p = path.as_str();
    let (dir, name) = open_parent(root, path, true)?.ok_or_else(|| io_err(p, Errno::NOENT))?;
    let fd = rustix::fs::openat(
        &dir,
        name.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode & 0o777),
    )
    .map_err(|e| classify(&dir, &name, p, e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(p, e))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(DiskError::NotAFile(p.to_owned()));
    }
    let mut f = std::fs::File::from(fd);
    f.write_all(data).map_err(|e| io_err(p, e))?;
    rustix::fs::fchmod(&f, Mode::from_raw_mode(mode & 0o777)).map_err(|e| io_err(p, e))
}

/// [`write_scratch`] for many files: each folder on their way is opened
/// once and kept, so a fill of thousands of files walks no path twice.
/// For a scratch folder no program works in meanwhile (a folder it swapped
/// for a link would still be written through the descriptor kept, which
/// lies inside `root`).
pub struct ScratchWriter<'a> {
    root: &'a Path,
    dirs: std::collections::HashMap<String, OwnedFd>,
    /// The modification time every file written gets.
    stamp: rustix::fs::Timestamps,
}

impl<'a> ScratchWriter<'a> {
    /// A writer under `root` whose files are dated `stamp`: a time before
    /// any program works in the folder, so that whatever a program writes
    /// there later has another date, even within one tick of the clock,
    /// and a file's date alone says it is still as written.
    pub fn new(root: &'a Path, stamp: std::time::SystemTime) -> Self {
        let since = stamp
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let at = rustix::fs::Timespec {
            tv_sec: since.as_secs() as i64,
            tv_nsec: since.subsec_nanos().into(),
        };
        ScratchWriter {
            root,
            dirs: std::collections::HashMap::new(),
            stamp: rustix::fs::Timestamps {
                last_access: at,
                last_modification: at,
            },
        }
    }

    /// Writes `data` to `path` with `mode`; the file's state once written.
    pub fn write(
        &mut self,
        path: &ProjectPath,
        data: &[u8],
        mode: u32,
    ) -> Result<std::fs::Metadata, DiskError> {
        let p = path.as_str();
        let (dir, name) = p.rsplit_once('/').unwrap_or(("", p));
        if !self.dirs.contains_key(dir) {
            let (fd, _) =
                open_parent(self.root, path, true)?.ok_or_else(|| io_err(p, Errno::NOENT))?;
            self.dirs.insert(dir.to_owned(), fd);
        }
        let dir = self.dirs.get(dir).ok_or_else(|| io_err(p, Errno::NOENT))?;
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode & 0o777),
        )
        .map_err(|e| classify(dir, name, p, e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io_err(p, e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(DiskError::NotAFile(p.to_owned()));
        }
        let mut f = std::fs::File::from(fd);
        f.write_all(data).map_err(|e| io_err(p, e))?;
        // A new file got `mode` less the umask: set only where that differs.
        if st.st_mode & 0o7777 != mode & 0o777 {
            rustix::fs::fchmod(&f, Mode::from_raw_mode(mode & 0o777)).map_err(|e| io_err(p, e))?;
        }
        rustix::fs::futimens(&f, &self.stamp).map_err(|e| io_err(p, e))?;
        f.metadata().map_err(|e| io_err(p, e))
    }

    /// Forgets the folders kept (after the folder's layout changed).
    pub fn forget(&mut self) {
        self.dirs.clear();
    }
}

/// Removes entry `name` (any name, `.git` too) of folder `dir` (a project
/// path, "" for the root) under `root` — a file, a link (not what it
/// points to) or a folder with all it holds — reaching it through no link.
pub fn remove_entry(root: &Path, dir: &str, name: &str) -> Result<(), DiskError> {
    let mut fd = open_root(root, dir)?;
    for part in dir
        .split('/')
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
    {
        let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
        fd = match rustix::fs::openat(&fd, part, flags, Mode::empty()) {
            Ok(next) => next,
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(classify(&fd, part, dir, e)),
        };
    }
    let cname = std::ffi::CString::new(name).map_err(|e| io_err(dir, std::io::Error::other(e)))?;
    remove_raw(&fd, &cname, dir)
}

/// Removes entry `name` of `dir` and, for a folder, all it holds, by
/// descriptors only.
fn remove_raw(dir: &OwnedFd, name: &std::ffi::CStr, path: &str) -> Result<(), DiskError> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(io_err(path, e)),
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
            let inner = rustix::fs::openat(
                dir,
                name,
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io_err(path, e))?;
            let mut names = Vec::new();
            for entry in rustix::fs::Dir::read_from(&inner).map_err(|e| io_err(path, e))? {
                let entry = entry.map_err(|e| io_err(path, e))?;
                let n = entry.file_name();
                if n != c"." && n != c".." {
                    names.push(n.to_owned());
                }
            }
            for n in names {
                remove_raw(&inner, &n, path)?;
            }
            rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).map_err(|e| io_err(path, e))
        }
        Ok(_) => rustix::fs::unlinkat(dir, name, AtFlags::empty()).map_err(|e| io_err(path, e)),
    }
}

/// One file of a batch, its directory open, between the steps of [`write_all`].
struct Target<'a> {
    write: &'a Write,
    /// Its folder, opened once for every target in it: a write of a
    /// thousand files holds as many descriptors as it has folders.
    dir: Arc<OwnedFd>,
    name: String,
    /// The synced temporary file with the new content, in `dir`.
    temp: Option<String>,
    /// What the file held right before it was replaced (for the undo).
    old: Option<Vec<u8>>,
    /// That file, held open so that its blocks are freed after the write
    /// ([`release`]).
    held: Option<std::fs::File>,
}

/// A temporary name beside `name`, unique in this process: two writers of
/// one file (an accept and Remora's ID comments) never share one.
fn temp_name(name: &str, tag: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{name}.chimera-{}-{n}{tag}.tmp", std::process::id())
}

/// Writes `data` to a new synced temporary file in `dir`; returns its name.
fn stage(
    dir: &OwnedFd,
    name: &str,
    path: &str,
    data: &[u8],
    mode: u32,
    tag: &str,
) -> Result<String, DiskError> {
    let temp = temp_name(name, tag);
    let fd = rustix::fs::openat(
        dir,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| io_err(path, e))?;
    let mut f = std::fs::File::from(fd);
    let written = (|| {
        f.write_all(data)?;
        rustix::fs::fchmod(&f, Mode::from_raw_mode(mode & 0o7777))?;
        f.sync_all()
    })();
    match written {
        Ok(()) => Ok(temp),
        Err(e) => {
            // The write's own error is the one worth telling; a temporary
            // file that cannot be removed is named as Chimera's (`temp_name`).
            let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
            Err(io_err(path, e))
        }
    }
}

/// `f` of every item, in order, on up to 8 threads when there are many:
/// file-system syncs issued together are committed together.
fn on_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < 8 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { return };
                let r = f(item);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    // Every slot is filled: the threads ran to the end of `items`.
    slots
        .into_iter()
        .filter_map(|s| s.into_inner().ok().flatten())
        .collect()
}

/// Whether `current` (what the file holds now) is what `expect` allows.
fn matches(expect: &Expect, current: Option<&[u8]>) -> bool {
    match (expect, current) {
        (Expect::Anything, _) => true,
        (Expect::Absent, None) => true,
        (Expect::Content(h), Some(data)) => *h == hash_bytes(data),
        _ => false,
    }
}

/// Puts back what `t` held before it was replaced: the undo of a batch
/// that failed midway.
fn restore(t: &Target<'_>) -> Result<(), DiskError> {
    if crate::failpoint::hit("undo") {
        return Err(io_err(&t.write.path, Errno::IO));
    }
    match &t.old {
        Some(old) => {
            let temp = stage(&t.dir, &t.name, &t.write.path, old, t.write.mode, "-undo")?;
            rustix::fs::renameat(&t.dir, temp.as_str(), &t.dir, t.name.as_str())
                .map_err(|e| io_err(&t.write.path, e))
        }
        None => match rustix::fs::unlinkat(&t.dir, t.name.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(io_err(&t.write.path, e)),
        },
    }
}

/// Writes and deletes `writes` so that either every one happens or none
/// does, and so that each file is wholly old or wholly new even if the
/// process dies midway (temporary file, fsync, rename, directory fsync).
/// Right before the first rename, every file is compared with its
/// [`Expect`]: a file changed by someone else since the caller read it
/// fails the whole batch with [`DiskError::Changed`].
pub fn write_all(root: &Path, writes: &[Write]) -> Result<(), DiskError> {
    write_all_when(root, writes, || Ok(()))
}

/// [`write_all`], with `ready` done on this thread while the new contents
/// are written and synced on others (a journal of the write, itself
/// synced): no file is replaced before it returns, and its error stops the
/// write with nothing changed.
pub fn write_all_when<E>(
    root: &Path,
    writes: &[Write],
    ready: impl FnOnce() -> Result<(), E>,
) -> Result<(), E>
where
    E: From<DiskError>,
{
    let mut targets = targets(root, writes)?;
    let (staged, ready) = std::thread::scope(|scope| {
        let staging = scope.spawn(|| {
            on_threads(&targets, |t| match &t.write.data {
                Some(data) => {
                    stage(&t.dir, &t.name, &t.write.path, data, t.write.mode, "").map(Some)
                }
                None => Ok(None),
            })
        });
        let ready = ready();
        (staging.join(), ready)
    });
    let staged = staged.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let mut failed = None;
    for (t, s) in targets.iter_mut().zip(staged) {
        match s {
            Ok(temp) => t.temp = temp,
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    if let Err(e) = ready {
        discard(&targets);
        return Err(e);
    }
    // The check comes after the slow part (the syncs), as close to the
    // renames as it can be.
    if let Some(e) = failed.map_or_else(|| check_expected(&mut targets).err(), Some) {
        discard(&targets);
        return Err(e.into());
    }
    replace(&targets)?;
    // The renames are durable once their directories are synced; syncs
    // that wait together are committed together.
    let mut seen = std::collections::HashSet::new();
    let dirs: Vec<&OwnedFd> = targets
        .iter()
        .filter(|t| seen.insert(Arc::as_ptr(&t.dir)))
        .map(|t| &*t.dir)
        .collect();
    on_threads(&dirs, |dir| {
        // A directory that cannot be synced keeps its renames until the
        // system syncs it; nothing is lost to the process.
        rustix::fs::fsync(dir).ok();
    });
    release::let_go(targets.iter_mut().filter_map(|t| t.held.take()).collect());
    Ok(())
}

/// Where each of `writes` goes: its folder opened (made for a file
/// written), its name in it.
fn targets<'w>(root: &Path, writes: &'w [Write]) -> Result<Vec<Target<'w>>, DiskError> {
    let mut targets = Vec::with_capacity(writes.len());
    let mut folders: HashMap<String, Arc<OwnedFd>> = HashMap::new();
    for w in writes {
        let path =
            ProjectPath::parse(&w.path).map_err(|e| io_err(&w.path, std::io::Error::other(e)))?;
        let (folder, name) = path
            .as_str()
            .rsplit_once('/')
            .unwrap_or(("", path.as_str()));
        let dir = match folders.get(folder) {
            Some(dir) => Some(Arc::clone(dir)),
            None => open_parent(root, &path, w.data.is_some())?.map(|(dir, _)| {
                let dir = Arc::new(dir);
                folders.insert(folder.to_owned(), Arc::clone(&dir));
                dir
            }),
        };
        match dir {
            Some(dir) => targets.push(Target {
                write: w,
                dir,
                name: name.to_owned(),
                temp: None,
                old: None,
                held: None,
            }),
            // Deleting a file whose folder is gone: already done, unless
            // the caller expected it to be there.
            None if matches(&w.expect, None) => {}
            None => return Err(DiskError::Changed(w.path.clone())),
        }
    }
    Ok(targets)
}

/// Removes the staged temporary files of `targets`.
fn discard(targets: &[Target<'_>]) {
    for t in targets {
        if let Some(temp) = &t.temp {
            // Best effort: a temporary file left behind is named as one.
            rustix::fs::unlinkat(&t.dir, temp.as_str(), AtFlags::empty()).ok();
        }
    }
}

/// Checks that every target still holds what its write expects, keeping
/// what it holds to put back on a failure.
fn check_expected(targets: &mut [Target<'_>]) -> Result<(), DiskError> {
    let hold = targets.len() <= release::HELD_PER_WRITE;
    for t in targets.iter_mut() {
        let file = open_file(&t.dir, &t.name, &t.write.path)?;
        let current = match &file {
            Some((f, size)) => Some(read_capped(f, *size, &t.write.path, u64::MAX)?),
            None => None,
        };
        if !matches(&t.write.expect, current.as_deref()) {
            return Err(DiskError::Changed(t.write.path.clone()));
        }
        t.old = current;
        t.held = file.map(|(f, _)| f).filter(|_| hold);
    }
    Ok(())
}

/// Renames the staged files into place, then deletes; a failure puts back
/// every file already replaced.
fn replace(targets: &[Target<'_>]) -> Result<(), DiskError> {
    let order: Vec<usize> = (0..targets.len())
        .filter(|&i| targets[i].temp.is_some())
        .chain((0..targets.len()).filter(|&i| targets[i].temp.is_none()))
        .collect();
    for (k, &i) in order.iter().enumerate() {
        let t = &targets[i];
        let done = match &t.temp {
            // The crash harness fails a rename here, or kills the process
            // right after one.
            _ if crate::failpoint::hit("rename") => Err(Errno::IO),
            Some(temp) => rustix::fs::renameat(&t.dir, temp.as_str(), &t.dir, t.name.as_str()),
            None => match rustix::fs::unlinkat(&t.dir, t.name.as_str(), AtFlags::empty()) {
                Err(Errno::NOENT) => Ok(()),
                other => other,
            },
        };
        if let Err(e) = done {
            let left: Vec<String> = order[..k]
                .iter()
                .filter(|&&j| restore(&targets[j]).is_err())
                .map(|&j| targets[j].write.path.clone())
                .collect();
            discard(targets);
            if !left.is_empty() {
                return Err(DiskError::NotUndone {
                    path: t.write.path.clone(),
                    source: e.into(),
                    left,
                });
            }
            return Err(match classify(&t.dir, &t.name, &t.write.path, e) {
                DiskError::Io { .. } => io_err(&t.write.path, e),
                other => other,
            });
        }
        crate::failpoint::hit("after-rename");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
