//! Where a Python project's tests run, found as editors' language servers
//! find it: the project's own virtual environment (`.venv` or `venv`
//! holding a `pyvenv.cfg`, in the folder of the task's file or the
//! nearest above it within the project: a subproject of a monorepo has
//! its own), else the activated one (`VIRTUAL_ENV`), else
//! conda's (`CONDA_PREFIX`), else the `python3` on `PATH`. Whether it has
//! pytest is read from its files, never by running it: a cloned
//! repository's `.venv/bin/python` is the repository's program, and runs
//! only confined, with the tests. A project's `.venv` that is a link is
//! not taken: the run may read the environment, and a link could make
//! that any folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::lang::environment::Environment;

/// The environment the tests of the project at `root` run in, for a task
/// about folder `start` (inside `root`); `var` reads the user's
/// environment (`std::env::var_os` outside tests).
pub fn find(root: &Path, start: &Path, var: &dyn Fn(&str) -> Option<OsString>) -> Environment {
    let start = if start.starts_with(root) { start } else { root };
    let in_project = start
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .flat_map(|dir| [dir.join(".venv"), dir.join("venv")])
        .find(|d| {
            std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) && d.join("pyvenv.cfg").is_file()
        })
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
    let found = in_project
        .or_else(|| named("VIRTUAL_ENV", "the activated environment"))
        .or_else(|| named("CONDA_PREFIX", "the conda environment"));
    match found {
        Some((prefix, said)) => of_prefix(&prefix, said, var),
        None => Environment {
            program: PathBuf::from("python3"),
            readable: Vec::new(),
            env: Vec::new(),
            found: "python3 on PATH".into(),
            has_runner: false,
        },
    }
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
        let e = find(&root, &root, &var);
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
        let e = find(&root, &root, &var);
        assert_eq!(e.program, root.join(".venv/bin/python"));
        assert_eq!(e.found, "the project's .venv");
        assert!(e.has_runner);
        // A .venv that is a link (to the home folder, say) is not taken.
        std::fs::remove_dir_all(root.join(".venv")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".venv")).unwrap();
        assert!(find(&root, &root, &|_| None).readable.is_empty());
        // Nothing: python3 from PATH.
        let bare = t.path().join("bare");
        let e = find(&bare, &bare, &|_| None);
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
        let e = find(&root, &deep, &|_| None);
        assert_eq!(e.program, root.join("services/api/.venv/bin/python"));
        assert_eq!(e.found, "the project's services/api/.venv");
        assert!(e.has_runner);
        let other = root.join("services/web");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(find(&root, &other, &|_| None).found, "the project's .venv");
        // Never above the project.
        venv(&t.path().join(".venv"), true);
        let lone = t.path().join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(find(&lone, &lone, &|_| None).found, "python3 on PATH");
    }
}
