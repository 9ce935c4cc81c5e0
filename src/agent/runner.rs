//! Where and with what "auto" runs a project's tests: the environment the
//! language table's Python row finds (the project's `.venv`, the
//! activated one…), pytest when that environment has it, else unittest —
//! and what a run says of the environment rather than of the change (a
//! package it cannot import).

use std::sync::OnceLock;

use super::problem::Runner;
use crate::command;
use crate::overlay::Overlay;

fn pytest_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        std::process::Command::new("python3")
            .args(["-c", "import pytest"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Where "auto" runs the tests and with what: the project's environment
/// ([`crate::lang::Environment`], found by the Python row of the language
/// table) and pytest when that environment has it (for `python3` on
/// `PATH`: when it can import it), else unittest.
#[derive(Debug, Clone)]
pub struct Auto {
    pub env: crate::lang::Environment,
    pub runner: Runner,
}

impl Auto {
    /// The project at `root`'s, for a task about file `near` (a project
    /// path, or an absolute one inside `root`), in the user's environment.
    pub fn of(root: &std::path::Path, near: Option<&str>) -> Auto {
        let start = near
            .and_then(|f| {
                let abs = std::path::Path::new(f);
                match abs.is_absolute() {
                    true => crate::paths::ProjectPath::from_absolute(root, abs),
                    false => crate::paths::ProjectPath::parse(f).ok(),
                }
            })
            .and_then(|p| {
                root.join(p.as_str())
                    .parent()
                    .map(std::path::Path::to_path_buf)
            })
            .unwrap_or_else(|| root.to_path_buf());
        let env = match crate::lang::PYTHON.test_environment {
            Some(find) => find(root, &start, &|n| std::env::var_os(n)),
            None => crate::python::environment::find(root, &start, &|_| None),
        };
        let system = env.readable.is_empty();
        let runner = if env.has_runner || (system && pytest_installed()) {
            Runner::Pytest
        } else {
            Runner::Unittest
        };
        Auto { env, runner }
    }

    pub(super) fn python(&self) -> String {
        self.env.program.display().to_string()
    }

    /// "`pytest` is not installed in the project's .venv — …", for the
    /// user: what is missing where, and the command that mends it.
    pub fn not_installed(&self, package: &str) -> String {
        let auto = self;
        format!(
            "`{package}` is not installed in {} — install it there: `{} -m pip install {package}`",
            auto.env.found,
            auto.env.program.display()
        )
    }
}

/// The package a test run could not import that is none of the project's
/// own modules (`view`'s files): `ModuleNotFoundError: No module named
/// 'pytest'` names `pytest`.
pub(super) fn missing_package(ran: &command::Ran, view: &Overlay<'_>) -> Option<String> {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    let name = text.lines().find_map(|l| {
        let rest = l.split("No module named '").nth(1)?;
        rest.split('\'').next()
    })?;
    let top = name.split('.').next()?.to_owned();
    let files = view.files().ok()?;
    let own = files.iter().any(|f| {
        let f = format!("/{f}");
        f.ends_with(&format!("/{top}.py")) || f.contains(&format!("/{top}/"))
    });
    (!own && !top.is_empty()).then_some(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use std::time::Duration;

    #[test]
    fn a_package_the_tests_cannot_import_is_missing_unless_the_project_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory(dir.path()).unwrap();
        for f in ["calc.py", "pkg/util/__init__.py"] {
            store.stable_put(f, b"x = 1\n", 0o644, 0, 1 << 20).unwrap();
        }
        let view = Overlay::new(&store, "a", 1 << 20);
        let ran = |err: &str| command::Ran {
            status: Some(1),
            stdout: String::new(),
            stderr: err.into(),
            duration: Duration::ZERO,
        };
        let said = |m: &str| format!("ModuleNotFoundError: No module named '{m}'\n");
        assert_eq!(
            missing_package(&ran(&said("pytest")), &view).as_deref(),
            Some("pytest")
        );
        assert_eq!(
            missing_package(&ran(&said("requests.adapters")), &view).as_deref(),
            Some("requests")
        );
        // The project's own module failing to import is the code's matter.
        assert_eq!(missing_package(&ran(&said("calc")), &view), None);
        assert_eq!(missing_package(&ran(&said("util")), &view), None);
        assert_eq!(missing_package(&ran("AssertionError\n"), &view), None);
    }
}
