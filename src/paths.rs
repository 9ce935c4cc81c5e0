//! The project root and project-relative paths. Every path an agent names
//! goes through [`ProjectPath::parse`], which refuses `..`, absolute paths
//! and anything inside a `.git` or `.chimera` folder at any depth;
//! [`crate::rootfs`] then reaches it on disk without following any
//! symbolic link.

use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("path `{0}` is absolute; give a path relative to the project root")]
    Absolute(String),
    #[error("path `{0}` leaves the project root; `..` is not allowed")]
    Escapes(String),
    #[error("path `{0}` is empty")]
    Empty(String),
    #[error("path `{0}` is inside a `.git` or `.chimera` folder, which agents may not touch")]
    Reserved(String),
    #[error("path {0:?} holds a control character (a line break, a tab…): a file name with one would break every list and diff that shows it; rename it")]
    Control(String),
}

/// A normalised path relative to the project root, with `/` separators and
/// no `.`, `..` or empty components.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProjectPath(String);

impl ProjectPath {
    /// Normalises `raw` (as an agent or user wrote it) into a project path.
    pub fn parse(raw: &str) -> Result<Self, PathError> {
        let trimmed = raw.trim();
        if trimmed.starts_with('/') || trimmed.starts_with('\\') || Path::new(trimmed).is_absolute()
        {
            return Err(PathError::Absolute(raw.to_owned()));
        }
        let mut parts: Vec<&str> = Vec::new();
        for part in trimmed.split(['/', '\\']) {
            match part {
                "" | "." => {}
                ".." => return Err(PathError::Escapes(raw.to_owned())),
                other => parts.push(other),
            }
        }
        if parts.is_empty() {
            return Err(PathError::Empty(raw.to_owned()));
        }
        if parts.iter().any(|p| is_reserved_name(p)) {
            return Err(PathError::Reserved(raw.to_owned()));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(PathError::Control(raw.to_owned()));
        }
        Ok(Self(parts.join("/")))
    }

    /// The project path of `abs`, if `abs` lies under `root`.
    pub fn from_absolute(root: &Path, abs: &Path) -> Option<Self> {
        let rel = abs.strip_prefix(root).ok()?;
        let mut parts = Vec::new();
        for comp in rel.components() {
            match comp {
                Component::Normal(s) => parts.push(s.to_str()?.to_owned()),
                Component::CurDir => {}
                _ => return None,
            }
        }
        Self::parse(&parts.join("/")).ok()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent directory as a project path ("" for the root).
    pub fn parent_dir(&self) -> &str {
        self.0.rsplit_once('/').map_or("", |(dir, _)| dir)
    }
}

impl std::fmt::Display for ProjectPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether a file or folder name is a repository's or a store's own
/// folder: `.git` (a nested clone's hooks and config run code and hold
/// tokens) or `.chimera`. Compared as the file systems people use compare
/// them: in any case (macOS, Windows), without trailing dots and spaces
/// (Windows) and without the characters HFS+ ignores, as git itself does
/// (CVE-2014-9390); `git~1` is `.git`'s short name on Windows.
pub fn is_reserved_name(name: &str) -> bool {
    const IGNORED_BY_HFS: &[char] = &[
        '\u{200c}', '\u{200d}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}',
        '\u{202d}', '\u{202e}', '\u{206a}', '\u{206b}', '\u{206c}', '\u{206d}', '\u{206e}',
        '\u{206f}', '\u{feff}',
    ];
    let bare: String = name
        .chars()
        .filter(|c| !IGNORED_BY_HFS.contains(c))
        .collect();
    let bare = bare.trim_end_matches(['.', ' ']).to_ascii_lowercase();
    matches!(bare.as_str(), ".git" | ".chimera" | "git~1")
}

/// Normalises a directory argument ("", ".", "src/", "./src") for listing;
/// returns "" for the root.
pub fn parse_dir(raw: &str) -> Result<String, PathError> {
    let t = raw.trim();
    if t.is_empty() || t == "." || t == "./" {
        return Ok(String::new());
    }
    Ok(ProjectPath::parse(t)?.0)
}

/// The project root for `start`: the nearest ancestor holding `.git`,
/// else `start` itself.
pub fn find_root(start: &Path) -> PathBuf {
    let mut dir = start.to_path_buf();
    loop {
        if dir.join(".git").exists() {
            return dir;
        }
        if !dir.pop() {
            return start.to_path_buf();
        }
    }
}

/// Why a folder cannot be a project root.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RootError {
    #[error("the project root `{0}` does not exist; fix the `root` option (or remove it to use the nearest folder with .git)")]
    Missing(String),
    #[error("the project root `{0}` is a file, not a folder; fix the `root` option")]
    NotAFolder(String),
    #[error("refusing to make `{0}` a project: Chimera would import and watch every file under it. Start Neovim inside a project (a folder with .git), or set the `root` option")]
    TooWide(String),
}

/// Refuses a root no one means: one that does not exist or is a file, the
/// file system's root, or the home folder when it is not a git project.
pub fn check_root(root: &Path) -> Result<(), RootError> {
    let shown = root.display().to_string();
    match std::fs::metadata(root) {
        Err(_) => return Err(RootError::Missing(shown)),
        Ok(m) if !m.is_dir() => return Err(RootError::NotAFolder(shown)),
        Ok(_) => {}
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let is_home = home
        .and_then(|h| h.canonicalize().ok())
        .is_some_and(|h| h == root);
    if root.parent().is_none() || (is_home && !root.join(".git").exists()) {
        return Err(RootError::TooWide(shown));
    }
    Ok(())
}

/// The project root: `configured` (relative to `cwd`) if set, else the
/// nearest ancestor of `cwd` holding `.git`; symlinks resolved.
pub fn project_root(configured: Option<&Path>, cwd: &Path) -> PathBuf {
    let root = match configured {
        Some(dir) => cwd.join(dir),
        None => find_root(cwd),
    };
    root.canonicalize().unwrap_or(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_relative_paths() {
        assert_eq!(
            ProjectPath::parse("./src//a.py").unwrap().as_str(),
            "src/a.py"
        );
        assert_eq!(
            ProjectPath::parse("src/./b/c.py").unwrap().as_str(),
            "src/b/c.py"
        );
    }

    #[test]
    fn refuses_escapes_absolute_and_reserved() {
        assert!(matches!(
            ProjectPath::parse("../x"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(
            ProjectPath::parse("a/../../x"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(
            ProjectPath::parse("/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            ProjectPath::parse(".git/config"),
            Err(PathError::Reserved(_))
        ));
        assert!(matches!(
            ProjectPath::parse(".chimera/chimera.db"),
            Err(PathError::Reserved(_))
        ));
        assert!(matches!(ProjectPath::parse(""), Err(PathError::Empty(_))));
        for raw in ["a\nb.py", "dir/x\ty.py", "c\u{7}.py", "d\r.py"] {
            assert!(
                matches!(ProjectPath::parse(raw), Err(PathError::Control(_))),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn a_git_or_chimera_folder_is_reserved_at_any_depth_and_in_any_spelling() {
        for raw in [
            "vendor/lib/.git/config",
            "vendor/lib/.GIT/config",
            "a/.Git",
            "a/.git./hooks/x",
            "a/.git /x",
            "a/.g\u{200c}it/config",
            "a/GIT~1/config",
            "sub/.chimera/api.json",
            "sub/.CHIMERA/chimera.db",
            ".Git/config",
        ] {
            assert!(
                matches!(ProjectPath::parse(raw), Err(PathError::Reserved(_))),
                "{raw:?} was not refused"
            );
        }
        for fine in [
            ".gitignore",
            "a/.github/workflows/x.yml",
            "git/x",
            "a/.gitmodules",
            "chimera/x",
        ] {
            assert!(ProjectPath::parse(fine).is_ok(), "{fine:?} was refused");
        }
    }

    #[test]
    fn roots_no_one_means_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(check_root(&root), Ok(()));
        assert!(matches!(
            check_root(&root.join("typo")),
            Err(RootError::Missing(_))
        ));
        std::fs::write(root.join("file"), "x").unwrap();
        assert!(matches!(
            check_root(&root.join("file")),
            Err(RootError::NotAFolder(_))
        ));
        assert!(matches!(
            check_root(Path::new("/")),
            Err(RootError::TooWide(_))
        ));
        if let Some(home) =
            std::env::var_os("HOME").and_then(|h| PathBuf::from(h).canonicalize().ok())
        {
            if !home.join(".git").exists() {
                assert!(matches!(check_root(&home), Err(RootError::TooWide(_))));
            }
        }
    }

    #[test]
    fn finds_the_git_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".git")).unwrap();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        assert_eq!(find_root(&root.path().join("a/b")), root.path());
        let real = root.path().canonicalize().unwrap();
        assert_eq!(project_root(None, &root.path().join("a/b")), real);
        assert_eq!(
            project_root(Some(Path::new("a")), root.path()),
            real.join("a")
        );
    }
}
