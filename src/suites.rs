//! How "auto" finds a project's tests in the languages whose own tool
//! runs them (`npm test`, `cargo test`, `go test`, `busted`): one finder
//! per tool, each a hook on its languages' rows of the table
//! ([`crate::lang::Language::test_environment`]). Python's, which picks
//! test files itself, is [`crate::python::environment`].

pub mod busted;
pub mod cargo;
pub mod go;
pub mod node;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The nearest folder from `start` up to `root` (both included) that
/// holds a file `name` whose text `accept` takes, with what it made of it.
pub(crate) fn nearest<T>(
    root: &Path,
    start: &Path,
    name: &str,
    accept: impl Fn(&str) -> Option<T>,
) -> Option<(PathBuf, T)> {
    let start = if start.starts_with(root) { start } else { root };
    start
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .find_map(|d| {
            let file = d.join(name);
            // Never a link: the project's file, not one it points at.
            if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
                return None;
            }
            let taken = accept(&std::fs::read_to_string(&file).ok()?)?;
            Some((d.to_path_buf(), taken))
        })
}

/// `dir` as a project path of `root` ("" for the root itself).
pub(crate) fn folder_of(root: &Path, dir: &Path) -> String {
    dir.strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A build cache of Chimera's own for the project at `root`, named `what`:
/// `$XDG_CACHE_HOME/chimera/build/<project>/<what>` (else under
/// `~/.cache`), reused by every run of the project's tests.
pub(crate) fn own_cache(
    root: &Path,
    what: &str,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    let base = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let project = crate::hash::hash_bytes(root.as_os_str().as_encoded_bytes());
    Some(base.join("chimera/build").join(&project[..16]).join(what))
}

/// A variable's value as a folder, when it is an absolute path.
pub(crate) fn folder_var(var: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<PathBuf> {
    var(name).map(PathBuf::from).filter(|p| p.is_absolute())
}
