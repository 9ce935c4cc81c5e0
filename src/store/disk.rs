//! A project file as the stable layer takes it from the disk: read whole
//! and never through a link, kept by its size alone when larger than the
//! limit, or recorded by its look alone until something reads it
//! ([`Content::Unread`], the import's way).

use std::path::Path;

use crate::paths::ProjectPath;
use crate::rootfs;

/// A file of the project for the stable layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFile {
    pub path: String,
    pub data: Content,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
}

/// What of a file's content the stable layer is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Read(Vec<u8>),
    /// Larger than the limit, so never read.
    TooLarge,
    /// Not read yet: read from the disk the first time anything needs it.
    Unread,
}

/// What the import compares a file by: its size, mode bits and
/// modification time (ns since the epoch; 0 before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
}

impl Look {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            meta.permissions().mode() & 0o7777
        };
        #[cfg(not(unix))]
        let mode = 0o644;
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64);
        Look {
            size: meta.len(),
            mode,
            mtime_ns,
        }
    }

    /// The same look from a `stat` (an import's, relative to its folder).
    #[cfg(unix)]
    // The fields' types differ from one system to another.
    #[allow(clippy::unnecessary_cast)]
    pub fn of_stat(st: &rustix::fs::Stat) -> Self {
        let (secs, nanos) = (st.st_mtime as i64, st.st_mtime_nsec as i64);
        Look {
            size: st.st_size as u64,
            mode: st.st_mode as u32 & 0o7777,
            mtime_ns: if secs < 0 {
                0
            } else {
                secs * 1_000_000_000 + nanos
            },
        }
    }
}

/// The file `look` describes, recorded without reading it: by its size
/// alone when larger than `max_bytes`, else as [`Content::Unread`].
pub fn unread_file(path: &ProjectPath, look: Look, max_bytes: u64) -> DiskFile {
    DiskFile {
        path: path.as_str().to_owned(),
        data: if look.size > max_bytes {
            Content::TooLarge
        } else {
            Content::Unread
        },
        size: look.size,
        mode: look.mode,
        mtime_ns: look.mtime_ns,
    }
}

/// Reads `path` under `disk` for the stable layer, never more than
/// `max_bytes` and never through a link: a larger file is recorded by its
/// size alone. `None` when it is gone.
pub fn read_file(
    disk: &rootfs::Root<'_>,
    path: &ProjectPath,
    meta: &std::fs::Metadata,
    max_bytes: u64,
) -> Result<Option<DiskFile>, rootfs::DiskError> {
    let large = |size| DiskFile {
        size,
        data: Content::TooLarge,
        ..unread_file(path, Look::of(meta), max_bytes)
    };
    if meta.len() > max_bytes {
        return Ok(Some(large(meta.len())));
    }
    match disk.read(path, max_bytes) {
        Ok(data) => Ok(data.map(|data| DiskFile {
            size: data.len() as u64,
            data: Content::Read(data),
            ..large(0)
        })),
        // It grew between the look and the read.
        Err(rootfs::DiskError::TooLarge { .. }) => Ok(Some(large(max_bytes + 1))),
        Err(e) => Err(e),
    }
}

/// What the disk holds now at `path` under `root` (held open as `disk`),
/// for a row the import recorded unread: `None` when it is no longer a
/// file of the project (gone, a folder, behind a link, or unreadable).
pub fn read_now(
    root: &Path,
    disk: &rootfs::Root<'_>,
    path: &str,
    max_bytes: u64,
) -> Option<DiskFile> {
    let path = ProjectPath::parse(path).ok()?;
    let meta = std::fs::symlink_metadata(root.join(path.as_str())).ok()?;
    if !meta.is_file() {
        return None;
    }
    read_file(disk, &path, &meta, max_bytes).ok().flatten()
}
