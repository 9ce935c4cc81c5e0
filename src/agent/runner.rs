//! Where and with what "auto" runs a project's tests: the environment the
//! language table's row for the task's file finds (Python: the project's
//! `.venv`, the activated one…, with pytest when that environment has it,
//! else unittest; JavaScript: `package.json`'s test script; Rust: `cargo
//! test`…), and what a run says of the environment rather than of the
//! change (a package it cannot import).

use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;

use super::problem::Runner;
use crate::command;
use crate::lang::{Environment, Language};
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

/// How "auto" picks and runs the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Python's: the test files that exercise the change, by `Runner`.
    Files(Runner),
    /// The language's own tool picks them: the environment's `command`.
    Tool,
    /// Nothing this knows runs the tests of files in this language here
    /// (a Rust file with no `Cargo.toml` above it).
    Nothing(&'static str),
}

/// Where "auto" runs the tests and with what: the project's environment
/// ([`crate::lang::Environment`], found by the row of the language table
/// for the task's file) and how it picks them ([`Way`]).
#[derive(Debug, Clone)]
pub struct Auto {
    pub env: Environment,
    /// How it picks them ([`Auto::way`]), but for whether the system's
    /// Python has pytest …
    way: Way,
    /// … which is asked the first time it matters: a process each time
    /// (a tenth of a second or more), where most tasks find no test file.
    ask_system: bool,
}

impl Auto {
    /// The project at `root`'s, for a task about file `near` (a project
    /// path, or an absolute one inside `root`), in the user's environment.
    pub fn of(root: &Path, near: Option<&str>) -> Auto {
        Auto::with(root, near, &|n| std::env::var_os(n))
    }

    /// [`Auto::of`], the user's variables read by `var`. With no file (or
    /// one of no language), the project's own tool when it has one
    /// (`package.json`'s test script, a `Cargo.toml`…), else Python's.
    pub fn with(root: &Path, near: Option<&str>, var: &dyn Fn(&str) -> Option<OsString>) -> Auto {
        let file = near.and_then(|f| {
            let abs = Path::new(f);
            match abs.is_absolute() {
                true => crate::paths::ProjectPath::from_absolute(root, abs),
                false => crate::paths::ProjectPath::parse(f).ok(),
            }
        });
        let start = file
            .as_ref()
            .and_then(|p| root.join(p.as_str()).parent().map(Path::to_path_buf))
            .unwrap_or_else(|| root.to_path_buf());
        let find = |l: &Language| (l.test_environment?)(root, &start, var);
        let row = file
            .as_ref()
            .and_then(|p| crate::lang::for_path(p.as_str()));
        let (language, env) = match row {
            Some(l) => (l, find(l)),
            None => crate::lang::LANGUAGES
                .iter()
                .filter(|l| l.id != crate::lang::PYTHON.id)
                .find_map(|l| Some((*l, Some(find(l)?))))
                .unwrap_or_else(|| (&crate::lang::PYTHON, find(&crate::lang::PYTHON))),
        };
        let Some(env) = env else {
            return Auto {
                env: Environment::default(),
                way: Way::Nothing(language.name),
                ask_system: false,
            };
        };
        if env.command.is_some() {
            return Auto {
                env,
                way: Way::Tool,
                ask_system: false,
            };
        }
        let runner = match env.has_runner {
            true => Runner::Pytest,
            false => Runner::Unittest,
        };
        Auto {
            ask_system: !env.has_runner && env.readable.is_empty(),
            env,
            way: Way::Files(runner),
        }
    }

    /// How it picks and runs the tests; with the system's Python, this
    /// asks whether it has pytest (once a process).
    pub fn way(&self) -> Way {
        match self.way {
            Way::Files(Runner::Unittest) if self.ask_system && pytest_installed() => {
                Way::Files(Runner::Pytest)
            }
            way => way,
        }
    }

    /// Whether the project's own tool picks the tests.
    pub fn is_tool(&self) -> bool {
        self.way == Way::Tool
    }

    /// Whether the tests are Python's test files, whatever runs them.
    pub fn picks_files(&self) -> bool {
        matches!(self.way, Way::Files(_))
    }

    /// The language nothing here runs the tests of, if so.
    pub fn runs_nothing(&self) -> Option<&'static str> {
        match self.way {
            Way::Nothing(language) => Some(language),
            _ => None,
        }
    }

    /// Python's runner, when the tests are Python's.
    pub fn runner(&self) -> Option<Runner> {
        match self.way() {
            Way::Files(r) => Some(r),
            _ => None,
        }
    }

    pub(super) fn python(&self) -> String {
        self.env.program.display().to_string()
    }

    /// What "auto" runs, in words: "pytest with .venv/bin/python (the
    /// project's .venv)", "package.json's test script `node --test`…".
    pub fn describe(&self) -> String {
        let env = &self.env;
        match self.way() {
            Way::Files(runner) => {
                format!("{runner} with {} ({})", env.program.display(), env.found)
            }
            Way::Tool => env.found.clone(),
            Way::Nothing(language) => format!("none: {}", nothing_runs(language)),
        }
    }

    /// "`pytest` is not installed in the project's .venv — …", for the
    /// user: what is missing where, and the command that mends it.
    pub fn not_installed(&self, package: &str) -> String {
        let adds = &self.env.adds;
        match self.way {
            Way::Tool => {
                let folder = match self.env.folder.as_str() {
                    "" => "the project".to_owned(),
                    f => format!("`{f}`"),
                };
                format!(
                    "`{package}` is not installed for {folder} — install it: `{adds} {package}`"
                )
            }
            _ => format!(
                "`{package}` is not installed in {} — install it there: `{adds} {package}`",
                self.env.found
            ),
        }
    }
}

/// Why "auto" runs no test of a `language` file, and what mends it.
pub fn nothing_runs(language: &str) -> String {
    format!(
        "nothing here says how this project's {language} tests run (no Cargo.toml, go.mod, package.json test script or .busted above the file) — set tests.command"
    )
}

/// The package a test run could not import that is none of the project's
/// own modules (`view`'s files): Python's `No module named 'pytest'`
/// names `pytest`, Node's `Cannot find module 'left-pad'` (or `package`,
/// from an ES module) names `left-pad`; a relative path is the code's.
/// Or the program a test script runs that the shell did not find
/// (`sh: 1: vitest: not found`): nothing is installed yet.
pub(super) fn missing_package(ran: &command::Ran, view: &Overlay<'_>) -> Option<String> {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    if let Some(program) = text.lines().find_map(missing_program) {
        return Some(program);
    }
    let quoted = |l: &str, after: &str| {
        let rest = l.split(after).nth(1)?;
        rest.split('\'').next().map(str::to_owned)
    };
    let (name, python) = text.lines().find_map(|l| {
        quoted(l, "No module named '")
            .map(|n| (n, true))
            .or_else(|| quoted(l, "Cannot find module '").map(|n| (n, false)))
            .or_else(|| quoted(l, "Cannot find package '").map(|n| (n, false)))
            // Lua's `require`: `module 'lpeg' not found:`; dotted as Python's.
            .or_else(|| {
                quoted(l, "module '")
                    .filter(|_| l.contains("' not found"))
                    .map(|n| (n, true))
            })
    })?;
    if name.starts_with(['.', '/']) {
        return None;
    }
    let top = match (python, name.starts_with('@')) {
        (true, _) => name.split('.').next()?.to_owned(),
        (false, false) => name.split('/').next()?.to_owned(),
        (false, true) => name.splitn(3, '/').take(2).collect::<Vec<_>>().join("/"),
    };
    let files = view.files().ok()?;
    let own = files.iter().any(|f| {
        let f = format!("/{f}");
        let stem = f.rsplit_once('.').map_or(f.as_str(), |(s, _)| s);
        stem.ends_with(&format!("/{top}")) || f.contains(&format!("/{top}/"))
    });
    (!own && !top.is_empty()).then_some(top)
}

/// The program a shell's line says it could not find: `sh: 1: vitest:
/// not found` (dash), `bash: jest: command not found`.
fn missing_program(line: &str) -> Option<String> {
    let rest = line
        .strip_suffix(": command not found")
        .or_else(|| line.strip_suffix(": not found"))?;
    if !(rest.starts_with("sh:") || rest.contains("sh: ")) {
        return None;
    }
    let name = rest.rsplit(": ").next()?.trim();
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    plain.then(|| name.to_owned())
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
        let node = |m: &str| format!("Error: Cannot find module '{m}'\nRequire stack:\n");
        assert_eq!(
            missing_package(&ran(&node("left-pad")), &view).as_deref(),
            Some("left-pad")
        );
        assert_eq!(
            missing_package(&ran("Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@acme/util' imported from /x/t.mjs\n"), &view).as_deref(),
            Some("@acme/util")
        );
        assert_eq!(missing_package(&ran(&node("../calc")), &view), None);
        assert_eq!(
            missing_package(&ran("> vitest run\n\nsh: 1: vitest: not found\n"), &view).as_deref(),
            Some("vitest")
        );
        assert_eq!(
            missing_package(&ran("bash: jest: command not found\n"), &view).as_deref(),
            Some("jest")
        );
        assert_eq!(
            missing_package(&ran("Error: config.json: not found\n"), &view),
            None
        );
        assert_eq!(missing_package(&ran(&node("calc")), &view), None);
        let lua =
            |m: &str| format!("# Failure message: spec/a_spec.lua:1: module '{m}' not found:\n");
        assert_eq!(
            missing_package(&ran(&lua("lpeg")), &view).as_deref(),
            Some("lpeg")
        );
        assert_eq!(missing_package(&ran(&lua("calc")), &view), None);
    }
}
