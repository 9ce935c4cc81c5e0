//! A scratch checkout made ready for the project's environment
//! ([`crate::lang::Environment`]): where it is made (a fresh folder, or
//! one of a few kept at the same paths for a build cache that remembers
//! paths), Chimera's build cache made (and filled once from the user's),
//! the project's package folders linked in, and the folder the command
//! runs in.

use std::path::{Path, PathBuf};

use super::CommandError;
use crate::lang::Environment;
use crate::paths::ProjectPath;

/// How many checkouts at fixed paths a project's test runs share: more
/// runs at once get fresh folders.
const SLOTS: usize = 4;

/// The folder a scratch checkout is made in, removed (or emptied) when
/// dropped.
pub(super) enum Scratch {
    Fresh(tempfile::TempDir),
    /// `checkouts/N`, held by its lock file until dropped.
    Slot {
        path: PathBuf,
        _lock: std::fs::File,
    },
}

impl Scratch {
    /// A fresh temporary folder, or under `checkouts` the first free slot
    /// (emptied first: what a previous run left is never seen).
    pub(super) fn new(checkouts: Option<&Path>) -> std::io::Result<Scratch> {
        if let Some(base) = checkouts {
            make_private(base)?;
            for n in 0..SLOTS {
                let lock = std::fs::File::create(base.join(format!("{n}.lock")))?;
                use rustix::fs::{flock, FlockOperation};
                if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
                    continue;
                }
                let path = base.join(n.to_string());
                if std::fs::symlink_metadata(&path).is_ok() {
                    std::fs::remove_dir_all(&path)?;
                }
                make_private(&path)?;
                return Ok(Scratch::Slot { path, _lock: lock });
            }
        }
        let dir = tempfile::Builder::new().prefix("chimera-run-").tempdir()?;
        Ok(Scratch::Fresh(dir))
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            Scratch::Fresh(d) => d.path(),
            Scratch::Slot { path, .. } => path,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // The project's files do not stay in the cache between runs.
        if let Scratch::Slot { path, .. } = self {
            for part in ["files", "tmp"] {
                // A slot left with files is emptied when it is next taken.
                let _ = std::fs::remove_dir_all(path.join(part));
            }
        }
    }
}

/// The parts of a user's cargo target folder a build reuses: what each
/// unit is (fingerprints), what it made (libraries, build scripts'
/// output). Not `incremental/`, which a later build remakes.
const SEEDED: &[&str] = &[".fingerprint", "build", "deps"];

/// Readies checkout `dir` of the project at `root` for `env`; the folder
/// the command runs in.
pub(super) fn prepare(env: &Environment, root: &Path, dir: &Path) -> Result<PathBuf, CommandError> {
    for cache in &env.writable {
        make_private(cache).map_err(CommandError::Scratch)?;
    }
    if let Some((theirs, ours)) = &env.seed {
        seed(theirs, ours);
    }
    for linked in &env.linked {
        let p = ProjectPath::parse(linked).map_err(|e| CommandError::Checkout(e.to_string()))?;
        let link = dir.join(p.as_str());
        // The project's own copy of it, if the checkout holds one, wins.
        if std::fs::symlink_metadata(&link).is_ok() {
            continue;
        }
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent).map_err(CommandError::Scratch)?;
        }
        std::os::unix::fs::symlink(root.join(p.as_str()), &link).map_err(CommandError::Scratch)?;
    }
    match env.folder.as_str() {
        "" => Ok(dir.to_path_buf()),
        f => {
            let p = ProjectPath::parse(f).map_err(|e| CommandError::Checkout(e.to_string()))?;
            let cwd = dir.join(p.as_str());
            std::fs::create_dir_all(&cwd).map_err(CommandError::Scratch)?;
            Ok(cwd)
        }
    }
}

/// Makes folder `path` (and its parents), readable by the user alone.
fn make_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// Fills Chimera's target folder `ours` from the user's `theirs` the
/// first time: `debug/` copied whole into a folder of its own, then
/// renamed into place, so a build never sees half of it and two runs
/// seeding at once keep one. Links are not followed; a failure leaves
/// the cache to be built from nothing.
fn seed(theirs: &Path, ours: &Path) {
    let target = ours.join("debug");
    if std::fs::symlink_metadata(&target).is_ok() {
        return;
    }
    let Ok(part) = tempfile::Builder::new()
        .prefix("debug.seeding-")
        .tempdir_in(ours)
    else {
        return;
    };
    let copied = SEEDED
        .iter()
        .all(|d| copy_tree(&theirs.join("debug").join(d), &part.path().join(d)).is_ok());
    if copied {
        let part = part.keep();
        if std::fs::rename(&part, &target).is_err() {
            // Lost the race to another run that filled the cache: its copy
            // serves, ours is dropped (a leftover is only disk space).
            let _ = std::fs::remove_dir_all(&part);
        }
    }
}

/// Copies the folders and regular files under `from` to `to`; links and
/// anything else are left out. A missing `from` copies nothing.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(from) else {
        return Ok(());
    };
    if meta.is_file() {
        std::fs::copy(from, to)?;
        return Ok(());
    }
    if !meta.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkouts_at_fixed_paths_are_one_per_run_at_once_and_start_empty() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("checkouts");
        let a = Scratch::new(Some(&base)).unwrap();
        std::fs::create_dir_all(a.path().join("files")).unwrap();
        std::fs::write(a.path().join("files/left.txt"), "x").unwrap();
        let b = Scratch::new(Some(&base)).unwrap();
        assert_ne!(a.path(), b.path(), "two runs at once share no folder");
        let first = a.path().to_path_buf();
        drop(a);
        let c = Scratch::new(Some(&base)).unwrap();
        assert_eq!(c.path(), first, "the same path again");
        assert!(!c.path().join("files/left.txt").exists());
        let rest: Vec<Scratch> = (0..SLOTS)
            .map(|_| Scratch::new(Some(&base)).unwrap())
            .collect();
        assert!(
            matches!(rest.last(), Some(Scratch::Fresh(_))),
            "all slots busy: a fresh folder"
        );
    }

    #[test]
    fn the_checkout_links_package_folders_and_the_cache_is_seeded_once() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("proj");
        std::fs::create_dir_all(root.join("web/node_modules/left-pad")).unwrap();
        let theirs = t.path().join("their-target");
        std::fs::create_dir_all(theirs.join("debug/deps")).unwrap();
        std::fs::write(theirs.join("debug/deps/libx.rlib"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", theirs.join("debug/deps/planted")).unwrap();
        std::fs::create_dir_all(theirs.join("debug/incremental/x")).unwrap();
        let ours = t.path().join("cache/target");
        let dir = t.path().join("checkout");
        std::fs::create_dir_all(dir.join("web")).unwrap();
        let env = Environment {
            folder: "web".into(),
            linked: vec!["web/node_modules".into()],
            writable: vec![ours.clone()],
            seed: Some((theirs.clone(), ours.clone())),
            ..Environment::default()
        };
        let cwd = prepare(&env, &root, &dir).unwrap();
        assert_eq!(cwd, dir.join("web"));
        assert_eq!(
            std::fs::read_link(dir.join("web/node_modules")).unwrap(),
            root.join("web/node_modules")
        );
        assert_eq!(
            std::fs::read_to_string(ours.join("debug/deps/libx.rlib")).unwrap(),
            "x"
        );
        assert!(std::fs::symlink_metadata(ours.join("debug/deps/planted")).is_err());
        assert!(!ours.join("debug/incremental").exists());
        // Seeded once: what the builds made since stays.
        std::fs::write(ours.join("debug/deps/libx.rlib"), "built").unwrap();
        std::fs::remove_file(dir.join("web/node_modules")).unwrap();
        prepare(&env, &root, &dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(ours.join("debug/deps/libx.rlib")).unwrap(),
            "built"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&ours).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
