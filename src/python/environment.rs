//! Where a Python project's tests run, found as editors' language servers
//! find it: the project's own virtual environment (`.venv` or `venv`
//! holding a `pyvenv.cfg`, in the folder of the task's file or the
//! nearest above it within the project: a subproject of a monorepo has
//! its own, which is also where uv puts it), else poetry's environment
//! for the project (under poetry's cache, named by the project's name and
//! folder), else the activated one (`VIRTUAL_ENV`), else conda's
//! (`CONDA_PREFIX`), else the pyenv version a `.python-version` names,
//! else the `python3` on `PATH`. Whether it has pytest is read from its
//! files, never by running it: a cloned repository's `.venv/bin/python`
//! is the repository's program, and runs only confined, with the tests. A
//! project's `.venv` that is a link is not taken: the run may read the
//! environment, and a link could make that any folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::lang::environment::Environment;

/// The environment the tests of the project at `root` run in, for a task
/// about folder `start` (inside `root`); `var` reads the user's
/// environment (`std::env::var_os` outside tests). Always `Some`: a
/// Python file's tests run with `python3` at least.
pub fn find(
    root: &Path,
    start: &Path,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Environment> {
    let start = if start.starts_with(root) { start } else { root };
    let within = || start.ancestors().take_while(|dir| dir.starts_with(root));
    let project = within().find(|d| d.join("pyproject.toml").is_file());
    let manager = project.map_or(Manager::Pip, Manager::of);
    let in_project = within()
        .flat_map(|dir| [dir.join(".venv"), dir.join("venv")])
        .find(|d| real_dir(d) && d.join("pyvenv.cfg").is_file())
        .map(|d| {
            let name = d.strip_prefix(root).unwrap_or(&d).display().to_string();
            (d, format!("the project's {name}"))
        });
    let named = |name: &str, said: &str| {
        var(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.join("bin").is_dir())
            .map(|p| {
                let said = format!("{said} ({})", p.display());
                (p, said)
            })
    };
    let poetry = || {
        let project = project.filter(|_| manager == Manager::Poetry)?;
        let env = poetry_environment(project, var)?;
        let said = format!("poetry's environment ({})", env.display());
        Some((env, said))
    };
    let found = in_project
        .or_else(poetry)
        .or_else(|| named("VIRTUAL_ENV", "the activated environment"))
        .or_else(|| named("CONDA_PREFIX", "the conda environment"))
        .or_else(|| pyenv_version(root, start, var));
    let mut env = match found {
        Some((prefix, said)) => of_prefix(&prefix, said, var),
        None => Environment {
            program: PathBuf::from("python3"),
            found: manager.without_environment().into(),
            ..Environment::default()
        },
    };
    env.adds = manager.adds(&env.program);
    Some(env)
}

/// Whether `path` is a folder and no link to one.
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// What manages a Python project's packages, by its files: what the
/// user would type to add one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Manager {
    Uv,
    Poetry,
    Pip,
}

impl Manager {
    /// The manager of the project whose `pyproject.toml` is in `dir`.
    fn of(dir: &Path) -> Manager {
        if dir.join("uv.lock").is_file() {
            return Manager::Uv;
        }
        let poetry = dir.join("poetry.lock").is_file()
            || std::fs::read_to_string(dir.join("pyproject.toml"))
                .is_ok_and(|t| t.contains("[tool.poetry"));
        if poetry {
            Manager::Poetry
        } else {
            Manager::Pip
        }
    }

    /// Where the tests run when the project's manager has made it no
    /// environment yet, and what makes one.
    fn without_environment(self) -> &'static str {
        match self {
            Manager::Uv => "python3 on PATH (this uv project has no .venv yet: `uv sync` makes it)",
            Manager::Poetry => {
                "python3 on PATH (poetry has made no environment for this project yet: `poetry install` makes it)"
            }
            Manager::Pip => "python3 on PATH",
        }
    }

    /// The command that adds a test package (`uv add --dev`), for
    /// `python` (pip's is run by the environment's interpreter).
    fn adds(self, python: &Path) -> String {
        match self {
            Manager::Uv => "uv add --dev".into(),
            Manager::Poetry => "poetry add --group dev".into(),
            Manager::Pip => format!("{} -m pip install", python.display()),
        }
    }
}

/// The environment poetry made for the project in `dir`, as poetry names
/// it: `{cache}/virtualenvs/{name}-{hash}-py{version}`, the hash the
/// first 8 characters of the URL-safe base64 of the SHA-256 of the
/// folder's path. Poetry's cache is `POETRY_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/pypoetry`, else `~/.cache/pypoetry`.
fn poetry_environment(dir: &Path, var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("pyproject.toml")).ok()?;
    let name = toml_name(&text)?;
    let cache = var("POETRY_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("pypoetry")))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache/pypoetry")))?;
    let real = dir.canonicalize().ok()?;
    let prefix = format!("{}-py", poetry_name(&name, &real));
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join("virtualenvs"))
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .filter(|p| p.join("pyvenv.cfg").is_file())
        .collect();
    // The newest Python first, as poetry prefers.
    found.sort();
    found.pop()
}

/// Poetry's name for the environment of project `name` in folder `dir`
/// (its real path), without the Python version.
fn poetry_name(name: &str, dir: &Path) -> String {
    let sanitized: String = name
        .to_lowercase()
        .chars()
        .map(|c| match c {
            ' ' | '$' | '`' | '!' | '*' | '@' | '"' | '\\' | '\r' | '\n' | '\t' => '_',
            c => c,
        })
        .take(42)
        .collect();
    let digest = ring::digest::digest(&ring::digest::SHA256, dir.as_os_str().as_encoded_bytes());
    format!("{sanitized}-{}", base64_url(&digest.as_ref()[..6]))
}

/// The `name` of a `pyproject.toml`'s `[project]` or `[tool.poetry]`.
fn toml_name(text: &str) -> Option<String> {
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some(value) = line.strip_prefix("name") else {
            continue;
        };
        let Some(value) = value.trim_start().strip_prefix('=') else {
            continue;
        };
        if section == "[project]" || section == "[tool.poetry]" {
            return Some(value.trim().trim_matches(['"', '\'']).to_owned());
        }
    }
    None
}

/// `bytes` (a multiple of 3 long) in URL-safe base64.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    bytes
        .chunks(3)
        .flat_map(|c| {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            [18, 12, 6, 0].map(|s| char::from(ALPHABET[(n >> s & 63) as usize]))
        })
        .collect()
}

/// The pyenv version a `.python-version` names, in the task's folder or
/// above it within the project: `$PYENV_ROOT/versions/X`.
fn pyenv_version(
    root: &Path,
    start: &Path,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<(PathBuf, String)> {
    let file = start
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .map(|d| d.join(".python-version"))
        .find(|f| f.is_file())?;
    let version = std::fs::read_to_string(&file).ok()?;
    let version = version
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    // A name, never a path out of the versions folder.
    if version.contains('/') || version.starts_with('.') {
        return None;
    }
    let pyenv = var("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".pyenv")))?;
    let prefix = pyenv.join("versions").join(version);
    prefix
        .join("bin")
        .is_dir()
        .then(|| (prefix, format!("pyenv's {version} (.python-version)")))
}

/// The environment at `prefix`: its `bin/python`, readable whole, first
/// on `PATH`.
fn of_prefix(prefix: &Path, found: String, var: &dyn Fn(&str) -> Option<OsString>) -> Environment {
    let bin = prefix.join("bin");
    let python = ["python", "python3"]
        .iter()
        .map(|n| bin.join(n))
        .find(|p| p.exists())
        .unwrap_or_else(|| bin.join("python"));
    let mut path = vec![bin.clone()];
    path.extend(var("PATH").iter().flat_map(std::env::split_paths));
    let path = std::env::join_paths(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| bin.display().to_string());
    Environment {
        program: python,
        readable: vec![prefix.to_path_buf()],
        env: vec![
            ("VIRTUAL_ENV".into(), prefix.display().to_string()),
            ("PATH".into(), path),
        ],
        found,
        has_runner: has_pytest(prefix),
        ..Environment::default()
    }
}

/// Whether the environment at `prefix` holds pytest: in its own
/// `site-packages` (`lib/pythonX.Y/` on Unix).
fn has_pytest(prefix: &Path) -> bool {
    let Ok(libs) = std::fs::read_dir(prefix.join("lib")) else {
        return false;
    };
    libs.flatten().any(|lib| {
        let site = lib.path().join("site-packages");
        site.join("pytest").is_dir() || site.join("pytest.py").is_file()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn venv(dir: &Path, pytest: bool) {
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(dir.join("bin/python"), "").unwrap();
        let site = dir.join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        if pytest {
            std::fs::create_dir_all(site.join("pytest")).unwrap();
        }
    }

    #[test]
    fn the_projects_own_environment_first_then_the_activated_one_then_python3() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("proj");
        let outside = t.path().join("env");
        venv(&outside, false);
        std::fs::create_dir_all(&root).unwrap();
        let activated = outside.clone().into_os_string();
        let var = |n: &str| match n {
            "VIRTUAL_ENV" => Some(activated.clone()),
            "PATH" => Some("/usr/bin".into()),
            _ => None,
        };
        let e = find(&root, &root, &var).unwrap();
        assert_eq!(e.program, outside.join("bin/python"));
        assert!(
            e.found.starts_with("the activated environment"),
            "{}",
            e.found
        );
        assert!(!e.has_runner);
        assert_eq!(e.readable, std::slice::from_ref(&outside));
        let path = &e.env.iter().find(|(k, _)| k == "PATH").unwrap().1;
        assert!(path.starts_with(&outside.join("bin").display().to_string()));
        // The project's own .venv wins, with its pytest.
        venv(&root.join(".venv"), true);
        let e = find(&root, &root, &var).unwrap();
        assert_eq!(e.program, root.join(".venv/bin/python"));
        assert_eq!(e.found, "the project's .venv");
        assert!(e.has_runner);
        // A .venv that is a link (to the home folder, say) is not taken.
        std::fs::remove_dir_all(root.join(".venv")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".venv")).unwrap();
        assert!(find(&root, &root, &|_| None).unwrap().readable.is_empty());
        // Nothing: python3 from PATH.
        let bare = t.path().join("bare");
        let e = find(&bare, &bare, &|_| None).unwrap();
        assert_eq!(e.program, PathBuf::from("python3"));
        assert!(e.readable.is_empty() && e.env.is_empty());
    }

    #[test]
    fn a_subprojects_own_environment_is_nearer_than_the_roots() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("mono");
        venv(&root.join(".venv"), false);
        venv(&root.join("services/api/.venv"), true);
        let deep = root.join("services/api/src/app");
        std::fs::create_dir_all(&deep).unwrap();
        let e = find(&root, &deep, &|_| None).unwrap();
        assert_eq!(e.program, root.join("services/api/.venv/bin/python"));
        assert_eq!(e.found, "the project's services/api/.venv");
        assert!(e.has_runner);
        let other = root.join("services/web");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(
            find(&root, &other, &|_| None).unwrap().found,
            "the project's .venv"
        );
        // Never above the project.
        venv(&t.path().join(".venv"), true);
        let lone = t.path().join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(
            find(&lone, &lone, &|_| None).unwrap().found,
            "python3 on PATH"
        );
    }

    #[test]
    fn poetrys_environment_is_found_by_poetrys_own_name_for_it() {
        // Poetry's generate_env_name for "My App" in /home/u/proj.
        assert_eq!(
            poetry_name("My App", Path::new("/home/u/proj")),
            "my_app-nAn4BVom"
        );
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.poetry]\nname = \"My App\"\nversion = \"1\"\n",
        )
        .unwrap();
        let cache = t.path().join("cache");
        let name = poetry_name("My App", &root.canonicalize().unwrap());
        let env = cache.join(format!("pypoetry/virtualenvs/{name}-py3.11"));
        venv(&env, true);
        // Another project's environment of the same name is not it.
        venv(
            &cache.join("pypoetry/virtualenvs/my_app-AAAAAAAA-py3.12"),
            false,
        );
        let cache_var = cache.clone().into_os_string();
        let var = |n: &str| (n == "XDG_CACHE_HOME").then(|| cache_var.clone());
        let e = find(&root, &root, &var).unwrap();
        assert_eq!(e.program, env.join("bin/python"));
        assert!(e.found.starts_with("poetry's environment"), "{}", e.found);
        assert!(e.has_runner);
        assert_eq!(e.adds, "poetry add --group dev");
    }

    #[test]
    fn uv_projects_add_with_uv_and_a_python_version_picks_pyenvs() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("proj");
        venv(&root.join(".venv"), false);
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"a\"\n").unwrap();
        std::fs::write(root.join("uv.lock"), "version = 1\n").unwrap();
        let e = find(&root, &root, &|_| None).unwrap();
        assert_eq!(e.adds, "uv add --dev");
        assert_eq!(e.found, "the project's .venv");
        // Before `uv sync`, the user is told what makes the environment.
        std::fs::remove_dir_all(root.join(".venv")).unwrap();
        let e = find(&root, &root, &|_| None).unwrap();
        assert!(e.found.contains("`uv sync` makes it"), "{}", e.found);
        // No environment: the version .python-version names, in pyenv.
        let plain = t.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::write(plain.join(".python-version"), "3.12.4\n").unwrap();
        let pyenv = t.path().join("pyenv");
        venv(&pyenv.join("versions/3.12.4"), true);
        let pyenv_var = pyenv.clone().into_os_string();
        let var = |n: &str| (n == "PYENV_ROOT").then(|| pyenv_var.clone());
        let e = find(&plain, &plain, &var).unwrap();
        assert_eq!(e.program, pyenv.join("versions/3.12.4/bin/python"));
        assert_eq!(e.found, "pyenv's 3.12.4 (.python-version)");
        assert!(
            e.adds.ends_with("3.12.4/bin/python -m pip install"),
            "{}",
            e.adds
        );
        // A version that names a path is no version.
        std::fs::write(plain.join(".python-version"), "../../etc\n").unwrap();
        assert_eq!(find(&plain, &plain, &var).unwrap().found, "python3 on PATH");
    }
}
