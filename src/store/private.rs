//! The store's files are its owner's alone: `.chimera/` is 0700 and the
//! database 0600, made so before SQLite opens it (SQLite gives the WAL and
//! shared-memory files the database's mode). A `.chimera` a cloned
//! repository ships as a link, or one another account owns, is refused:
//! SQLite would follow the link and write wherever it leads.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::{Result, StoreError};

fn create_error(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Create {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks an existing entry: not a link, of the expected kind, ours; then
/// closes it to everyone else.
fn make_private(path: &Path, meta: &std::fs::Metadata, dir: bool, mode: u32) -> Result<()> {
    let unsafe_because = |why| StoreError::Unsafe {
        path: path.to_path_buf(),
        why,
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_because(
            "is a symbolic link (a cloned repository may ship one); remove it",
        ));
    }
    if meta.is_dir() != dir {
        return Err(unsafe_because(if dir {
            "is not a folder; remove it"
        } else {
            "is not a file; remove it"
        }));
    }
    if meta.uid() != rustix::process::getuid().as_raw() {
        return Err(unsafe_because(
            "belongs to another account; remove it or run as its owner",
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| create_error(path, e))?;
    }
    Ok(())
}

/// `dir` as a folder only its owner can open, created if missing.
pub(super) fn make_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => make_private(dir, &meta, true, 0o700),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| create_error(dir, e)),
        Err(e) => Err(create_error(dir, e)),
    }
}

/// The database `db` and its WAL and shared-memory files readable by
/// their owner only; the database is created empty (0600) if missing.
pub(super) fn make_files(db: &Path) -> Result<()> {
    for (i, suffix) in ["", "-wal", "-shm"].into_iter().enumerate() {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let path = Path::new(&name);
        match std::fs::symlink_metadata(path) {
            Ok(meta) => make_private(path, &meta, false, 0o600)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && i == 0 => {
                let made = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path);
                match made {
                    Ok(_) => {}
                    // Another process opening the project at the same moment
                    // made it first: check theirs as any existing one.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let meta =
                            std::fs::symlink_metadata(path).map_err(|e| create_error(path, e))?;
                        make_private(path, &meta, false, 0o600)?;
                    }
                    Err(e) => return Err(create_error(path, e)),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(create_error(path, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().mode() & 0o777
    }

    #[test]
    fn the_store_and_its_folder_are_the_owners_alone_even_when_made_open_before() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(".chimera");
        // An older Chimera left them as the umask made them.
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("chimera.db-wal"), "").unwrap();
        std::fs::set_permissions(
            dir.join("chimera.db-wal"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let store = Store::open(root.path()).unwrap();
        store
            .stable_put("a.py", b"x = 1\n", 0o644, 0, 1 << 20)
            .unwrap();
        assert_eq!(mode(&dir), 0o700);
        for name in ["chimera.db", "chimera.db-wal", "chimera.db-shm"] {
            assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
        }
        let fresh = tempfile::tempdir().unwrap();
        let store = Store::open(fresh.path()).unwrap();
        store
            .stable_put("a.py", b"x = 1\n", 0o644, 0, 1 << 20)
            .unwrap();
        assert_eq!(mode(&fresh.path().join(".chimera")), 0o700);
        for name in ["chimera.db", "chimera.db-wal", "chimera.db-shm"] {
            assert_eq!(
                mode(&fresh.path().join(".chimera").join(name)),
                0o600,
                "{name}"
            );
        }
    }

    #[test]
    fn a_store_folder_or_database_that_is_a_link_is_refused_and_nothing_is_written_there() {
        let elsewhere = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".chimera")).unwrap();
        let err = Store::open(root.path())
            .err()
            .expect("a linked .chimera was used");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);

        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".chimera")).unwrap();
        let target = elsewhere.path().join("bashrc");
        std::fs::write(&target, "echo hi\n").unwrap();
        std::os::unix::fs::symlink(&target, root.path().join(".chimera/chimera.db")).unwrap();
        assert!(Store::open(root.path()).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "echo hi\n");
    }
}
