//! Runs the project's tests on an agent's change before it is proposed: the
//! test files that import a changed module (or the user's own command), in
//! a scratch copy of the agent's view of the project — the human's files
//! are never touched. When they fail, the same tests run on the project
//! without the change, so only a failure the change brought in is held
//! against it.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::capabilities::Capabilities;
use crate::command;
use crate::config::{TestCommand, TestsConfig, TestsMode};
use crate::overlay::Overlay;
use crate::paths::ProjectPath;
use crate::store::Store;

use super::problem::{Problem, Runner};
use super::runner::missing_package;
pub use super::runner::{Auto, Way};
use super::test_output::{digest, failures, names, ran_no_test, refused_access, summary_line};

/// How the tests went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Tests are off, or none covers the change.
    NotRun,
    Passed {
        said: String,
    },
    /// Tests that failed without the change pass with it, none that
    /// passed fails, and `still` fail as before.
    Mends {
        said: String,
        fixed: Vec<String>,
        still: Vec<String>,
    },
    /// Tests that pass without the change fail with it (`broke`); of those
    /// that failed without it, `fixed` pass. `failed_before`: some failed
    /// without the change, so the tests can judge a fix.
    Broke {
        said: String,
        output: String,
        fixed: Vec<String>,
        broke: Vec<String>,
        failed_before: bool,
    },
    /// The same tests fail with and without the change.
    AlreadyFailing {
        said: String,
        output: String,
    },
    /// They could not be run (no scratch copy, no program).
    Unavailable {
        said: String,
    },
}

impl Verdict {
    /// What the proposal's summary says of the tests.
    pub fn note(&self) -> Option<String> {
        match self {
            Verdict::NotRun => None,
            Verdict::Passed { said } => Some(format!("tests passed: {said}")),
            Verdict::Mends { said, fixed, still } => Some(format!(
                "fixes {} failing test{}; still failing: {}",
                fixed.len(),
                if fixed.len() == 1 { "" } else { "s" },
                if still.is_empty() {
                    said.clone()
                } else {
                    names(still)
                }
            )),
            Verdict::Broke { said, broke, .. } if broke.is_empty() => {
                Some(format!("TESTS FAIL with this change: {said}"))
            }
            Verdict::Broke { said, broke, .. } => Some(format!(
                "TESTS FAIL with this change: {said}; newly failing: {}",
                names(broke)
            )),
            Verdict::AlreadyFailing { said, .. } => {
                Some(format!("tests fail with and without this change: {said}"))
            }
            Verdict::Unavailable { said } => Some(format!("tests could not run: {said}")),
        }
    }
}

/// Whether `task` asks to mend something that does not work — then the
/// tests failing now are what the model starts from, and a change after
/// which they still fail is not done.
pub fn asks_to_fix(task: &str) -> bool {
    const WORDS: &[&str] = &[
        "fix", "fixes", "bug", "bugs", "buggy", "broken", "fail", "fails", "failing", "failure",
        "crash", "crashes", "wrong", "repair", "mend",
    ];
    super::locate::has_word(task, WORDS)
}

/// Whether `task` asks to change how something named works ("make clamp
/// raise ValueError …"), so that a change leaving it as it was does
/// nothing asked.
pub fn asks_to_change(task: &str) -> bool {
    const WORDS: &[&str] = &["make", "change", "update", "modify", "adjust"];
    super::locate::has_word(task, WORDS)
}

/// The tests a task to fix `file` starts from: their failing output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failing {
    /// The runner's last line ("2 failed, 40 passed in 0.3s").
    pub said: String,
    /// The end of the output, where runners put the failures.
    pub output: String,
}

/// One agent's test runs: where they read the project, whose effect log
/// they are in, and under which options and capabilities.
#[derive(Clone)]
pub struct Tests {
    pub store: Arc<Store>,
    pub agent: String,
    pub config: TestsConfig,
    pub caps: Capabilities,
    /// The largest file a view holds (`sync.max_file_bytes`).
    pub max_bytes: u64,
    /// The runs on the project as it is, kept for the agent's next try.
    pub as_is: AsIsRuns,
    /// Runs them unconfined where the kernel cannot confine
    /// (`agents.run_unconfined`).
    pub unconfined: bool,
    /// The task's file (a project path): the environment nearest it runs
    /// the tests.
    pub near: Option<String>,
}

/// A command, as it is run.
type Argv = Vec<String>;

/// Test runs on the project as the human has it, by command, each with
/// the state of the project it ran on: the tries of one agent ask for the
/// same run, which only a change of the project makes different (on the
/// `inflection` package, 0.4–1.3 s a try).
#[derive(Clone, Default)]
pub struct AsIsRuns(Arc<std::sync::Mutex<std::collections::HashMap<Argv, (String, command::Ran)>>>);

impl AsIsRuns {
    fn kept(&self, argv: &[String], state: &str) -> Option<command::Ran> {
        let runs = self.0.lock().ok()?;
        runs.get(argv)
            .filter(|(s, _)| s == state)
            .map(|(_, ran)| ran.clone())
    }

    fn keep(&self, argv: &[String], state: String, ran: &command::Ran) {
        if let Ok(mut runs) = self.0.lock() {
            runs.insert(argv.to_vec(), (state, ran.clone()));
        }
    }
}

impl Tests {
    /// Runs `run` (a check, the failing tests…) on a blocking thread, as
    /// the runtime's workers must not wait on a child process; it stops
    /// when `cancel` fires. `None` if the thread died.
    pub async fn off_runtime<T: Send + 'static>(
        self,
        cancel: &CancellationToken,
        run: impl FnOnce(&Tests, &dyn Fn() -> bool) -> T + Send + 'static,
    ) -> Option<T> {
        let cancel = cancel.clone();
        tokio::task::spawn_blocking(move || run(&self, &|| cancel.is_cancelled()))
            .await
            .ok()
    }

    /// The project as the human has it, or as the agent's change has it.
    pub(super) fn view(&self, with_change: bool) -> Overlay<'_> {
        let agent = if with_change {
            &self.agent
        } else {
            PROJECT_AS_IS
        };
        Overlay::new(&self.store, agent, self.max_bytes)
    }

    pub(super) fn limit(&self) -> Duration {
        Duration::from_millis(self.config.timeout_ms)
    }

    /// Where and with what "auto" runs the tests of this project: for
    /// the task's file, else for `file` (a changed one).
    pub fn auto(&self, file: Option<&str>) -> Auto {
        Auto::of(self.store.root(), self.near.as_deref().or(file))
    }

    /// Runs the tests of `file` on the project as the human has it; `Some`
    /// with their output when they fail.
    pub fn failing_now(&self, file: &str, cancelled: &dyn Fn() -> bool) -> Option<Failing> {
        let project = self.view(false);
        let auto = self.auto(Some(file));
        let argv = argv_for(&self.config, &project, &[file.to_owned()], &auto)?;
        let ran = self.run_as_is(&argv, &auto, cancelled).ok()?;
        // Tests that cannot load for want of a package, or that do not
        // finish in time, say nothing of the code: nothing to start a fix
        // from.
        if missing_package(&ran, &project).is_some() || ran.status.is_none() {
            return None;
        }
        (ran.status != Some(0)).then(|| Failing {
            said: summary_line(&ran),
            output: digest(&ran, 2000),
        })
    }

    /// Runs `argv` on the project as the human has it, unless it ran on
    /// the project as it is now already.
    pub(super) fn run_as_is(
        &self,
        argv: &[String],
        auto: &Auto,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<command::Ran, command::CommandError> {
        // What the scratch copy is made of.
        let state = self.store.stable_digest().ok();
        if let Some(ran) = state.as_deref().and_then(|s| self.as_is.kept(argv, s)) {
            return Ok(ran);
        }
        let ran = self.run_in_copy(&self.view(false), AS_IS, (argv, auto), cancelled)?;
        if let Some(state) = state {
            self.as_is.keep(argv, state, &ran);
        }
        Ok(ran)
    }

    /// Runs `argv` in a confined scratch copy of `view`, in the project's
    /// environment `auto` found (for "auto" and the user's own command
    /// alike): the project's own code runs, so the run is in the agent's
    /// effect log, `what` saying on which files.
    fn run_in_copy(
        &self,
        view: &Overlay<'_>,
        what: &str,
        (argv, auto): (&[String], &Auto),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<command::Ran, command::CommandError> {
        let started = std::time::Instant::now();
        let visible = |f: &str| self.caps.may_see(f);
        let how = command::How {
            limit: self.limit(),
            unconfined: self.unconfined,
            environment: Some(&auto.env),
        };
        let ran = command::run_in_checkout(view, visible, argv, &how, cancelled);
        let said = match &ran {
            Ok(r) => summary_line(r),
            Err(e) => format!("error: {e}"),
        };
        self.store.effect_record(
            "command",
            Some(&self.agent),
            &format!("{} ({what})", argv.join(" ")),
            &said,
            started.elapsed().as_millis() as i64,
        );
        ran
    }
}

/// An agent ID no overlay has: an overlay of it reads the project as the
/// human has it.
pub(super) const PROJECT_AS_IS: &str = "\u{0}project";

/// A test run on the project as the human has it, as the effect log says.
const AS_IS: &str = "the project as it is";

/// An SQL `LIKE` pattern every path [`is_test_file`] accepts matches.
const TEST_FILE_LIKE: &str = "%test%.py";

/// Whether `path` is a test file by the usual names.
pub(super) fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if !name.ends_with(".py") || name == "__init__.py" || name == "conftest.py" {
        return false;
    }
    name.starts_with("test_")
        || name.ends_with("_test.py")
        || path.split('/').any(|dir| dir == "tests" || dir == "test") && name.starts_with("test")
}

/// The module name a test would import `path` by (`pkg/io.py` → `io`,
/// `pkg/__init__.py` → `pkg`).
fn module_name(path: &str) -> Option<&str> {
    let stem = path.strip_suffix(".py")?;
    let mut parts = stem.rsplit('/');
    match parts.next()? {
        "__init__" => parts.next(),
        name => Some(name),
    }
}

/// The test files among `files` that exercise `changed`: changed test
/// files, and those that name a changed module.
pub fn relevant_tests(
    files: &[String],
    changed: &[String],
    read: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let modules: Vec<&str> = changed
        .iter()
        .filter(|c| !is_test_file(c))
        .filter_map(|c| module_name(c))
        .collect();
    files
        .iter()
        .filter(|f| is_test_file(f))
        .filter(|f| {
            changed.contains(f)
                || read(f).is_some_and(|text| {
                    modules
                        .iter()
                        .any(|m| crate::python::has_identifier(&text, m))
                })
        })
        .cloned()
        .collect()
}

/// The command to run for `tests`, or `None` when tests are off.
pub(super) fn command_for(
    config: &TestsConfig,
    tests: &[String],
    auto: &Auto,
) -> Option<Vec<String>> {
    let python = auto.python();
    let mut argv: Vec<String> = match (&config.command, auto.way()) {
        (TestCommand::Named(TestsMode::Off), _) => return None,
        (TestCommand::Argv(argv), _) => return Some(argv.clone()),
        (TestCommand::Named(TestsMode::Auto), Way::Tool) => return auto.env.command.clone(),
        (TestCommand::Named(TestsMode::Auto), Way::Nothing(_)) => return None,
        (TestCommand::Named(TestsMode::Auto), Way::Files(Runner::Pytest)) => {
            // Short tracebacks, and the test's variables
            // ([`super::assertion::explain`] puts them in the call): what
            // [`digest`] reads.
            [
                python.as_str(),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--tb=short",
                "-l",
            ]
            .map(String::from)
            .to_vec()
        }
        (TestCommand::Named(TestsMode::Auto), Way::Files(Runner::Unittest)) => {
            [python.as_str(), "-m", "unittest"]
                .map(String::from)
                .to_vec()
        }
    };
    // Paths, never options, whatever their names.
    argv.push("--".into());
    argv.extend(tests.iter().cloned());
    Some(argv)
}

/// The command that tests `changed` as `view` has it: the user's own, or
/// the test files that exercise it; `None` when tests are off or none does.
fn argv_for(
    config: &TestsConfig,
    view: &Overlay<'_>,
    changed: &[String],
    auto: &Auto,
) -> Option<Vec<String>> {
    let tests = match (&config.command, auto.is_tool()) {
        (TestCommand::Argv(_), _) | (TestCommand::Named(_), true) => vec![],
        (TestCommand::Named(_), false) => {
            let files = view.files_where(TEST_FILE_LIKE, is_test_file).ok()?;
            let read = |f: &str| {
                ProjectPath::parse(f)
                    .ok()
                    .and_then(|p| view.read_text(&p).ok())
            };
            let tests = relevant_tests(&files, changed, read);
            if tests.is_empty() {
                return None;
            }
            tests
        }
    };
    command_for(config, &tests, auto)
}

/// `pytest` as a person runs it: unlike `python3 -m pytest`, it does not
/// put the project's folder on the import path, so `tests/test_x.py`
/// finds `x.py` only if the project says how (a `conftest.py`, its
/// options) or the test file does.
const AS_PYTEST_RUNS: &str =
    "import sys; del sys.path[0]; import pytest; sys.exit(pytest.main(sys.argv[1:]))";

impl Tests {
    /// A test file the change adds that `pytest`, run as a person runs
    /// it, cannot load: its path and why. `None` when it loads, when tests
    /// are not pytest's, or when the project's own test files beside it
    /// do not load that way either (its tests are run another way).
    fn unloadable_new_test(
        &self,
        new: &[String],
        cancelled: &dyn Fn() -> bool,
    ) -> Option<(String, String)> {
        let auto = self.auto(new.first().map(String::as_str));
        if auto.runner() != Some(Runner::Pytest) {
            return None;
        }
        let folder = |p: &str| p.rsplit_once('/').map_or("", |(dir, _)| dir).to_owned();
        let folders: Vec<String> = new.iter().map(|p| folder(p)).collect();
        let after = self.view(true);
        let beside: Vec<String> = after
            .files_where(TEST_FILE_LIKE, |f| {
                is_test_file(f) && !new.iter().any(|n| n == f) && folders.contains(&folder(f))
            })
            .ok()?;
        let python = auto.python();
        let mut argv: Vec<String> = [
            python.as_str(),
            "-c",
            AS_PYTEST_RUNS,
            "-q",
            "-p",
            "no:cacheprovider",
        ]
        .map(String::from)
        .to_vec();
        argv.extend(["--collect-only".into(), "--".into()]);
        argv.extend(beside.iter().chain(new).cloned());
        let what = "the test files it adds, loaded as `pytest` loads them";
        let ran = self
            .run_in_copy(&after, what, (&argv, &auto), cancelled)
            .ok()?;
        if ran.status == Some(0) {
            return None;
        }
        let failed = failures(&ran);
        let fails = |f: &String| failed.contains(&format!("ERROR {f}"));
        if beside.iter().any(fails) {
            return None;
        }
        let path = new.iter().find(|f| fails(f))?;
        Some((path.clone(), digest(&ran, 1500)))
    }

    /// Why a test file the change adds (`added`, the files it creates)
    /// tests nothing: it does not load as `pytest` loads it
    /// ([`Tests::unloadable_new_test`]), or the project's runner finds no
    /// test in it. `None` for a project's own test command, which this
    /// cannot run one file at a time.
    pub fn new_test_problem(
        &self,
        added: &[String],
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Problem> {
        if self.config.command != TestCommand::Named(TestsMode::Auto) {
            return None;
        }
        let new: Vec<String> = added.iter().filter(|p| is_test_file(p)).cloned().collect();
        if new.is_empty() {
            return None;
        }
        if let Some((path, output)) = self.unloadable_new_test(&new, cancelled) {
            return Some(Problem::TestFileDoesNotLoad { path, output });
        }
        let after = self.view(true);
        let auto = self.auto(new.first().map(String::as_str));
        let runner = auto.runner()?;
        new.into_iter().find_map(|path| {
            let argv = command_for(&self.config, std::slice::from_ref(&path), &auto)?;
            let ran = self
                .run_in_copy(&after, "the test file it adds", (&argv, &auto), cancelled)
                .ok()?;
            ran_no_test(&ran).then_some(Problem::NoTestFound { path, runner })
        })
    }

    /// Tests the agent's change, which changes the files `changed` (see
    /// the module's comment).
    pub fn check(&self, changed: &[String], cancelled: &dyn Fn() -> bool) -> Verdict {
        let first_source = changed.iter().find(|p| crate::lang::is_source(p));
        let auto = self.auto(first_source.map(String::as_str));
        if let (Some(language), Some(_), TestCommand::Named(TestsMode::Auto)) =
            (auto.runs_nothing(), first_source, &self.config.command)
        {
            return Verdict::Unavailable {
                said: super::runner::nothing_runs(language),
            };
        }
        let after = self.view(true);
        let Some(argv) = argv_for(&self.config, &after, changed, &auto) else {
            return Verdict::NotRun;
        };
        let with = match self.run_in_copy(&after, "with the change", (&argv, &auto), cancelled) {
            Ok(ran) => ran,
            Err(e) => {
                return Verdict::Unavailable {
                    said: e.to_string(),
                }
            }
        };
        if ran_no_test(&with) {
            return Verdict::Unavailable {
                said: self.no_test_ran(&with, &auto),
            };
        }
        if with.status == Some(0) {
            return Verdict::Passed {
                said: summary_line(&with),
            };
        }
        let without = self.run_as_is(&argv, &auto, cancelled);
        // The tests as they are never finished: nothing to compare with.
        if without.as_ref().is_ok_and(|w| w.status.is_none()) {
            return Verdict::Unavailable {
                said: format!(
                    "the tests as they are did not finish within tests.timeout_ms ({}) — raise it",
                    seconds(self.limit())
                ),
            };
        }
        // A package the tests import missing with and without the change
        // is the environment's fault, said to the user, never the change's.
        let missing = missing_package(&with, &after).filter(|m| {
            without
                .as_ref()
                .is_ok_and(|w| missing_package(w, &after).as_ref() == Some(m))
        });
        if let Some(package) = missing {
            return Verdict::Unavailable {
                said: auto.not_installed(&package),
            };
        }
        // Tests refused the same access with and without the change reach
        // outside the project: the confinement's matter, never the change's.
        let refused = refused_access(&with).filter(|_| {
            without.as_ref().is_ok_and(|w| {
                w.status != Some(0) && refused_access(w).is_some() && failures(w) == failures(&with)
            })
        });
        if let Some(line) = refused {
            return Verdict::Unavailable {
                said: format!(
                    "the confined run was refused `{line}` with and without the change: the tests reach outside the project, which they may not (:help chimera-confinement)"
                ),
            };
        }
        failing_verdict(&with, without.ok().as_ref(), self.limit())
    }

    /// Why a run found no test, for the user: with "auto" falling back to
    /// unittest, that it finds only `unittest.TestCase` tests, and how to
    /// get pytest where the tests run.
    pub(super) fn no_test_ran(&self, ran: &command::Ran, auto: &Auto) -> String {
        let said = format!("no test ran ({})", summary_line(ran));
        if self.config.command != TestCommand::Named(TestsMode::Auto)
            || auto.runner() != Some(Runner::Unittest)
        {
            return said;
        }
        format!(
            "{said}: unittest finds only tests in unittest.TestCase classes, and {}",
            auto.not_installed("pytest")
        )
    }
}

/// A time limit as a person reads it: "60 s", "1.5 s".
pub(super) fn seconds(limit: Duration) -> String {
    let s = limit.as_secs_f64();
    match s.fract() == 0.0 {
        true => format!("{s:.0} s"),
        false => format!("{s:.1} s"),
    }
}

/// The verdict on a change whose test run `with` failed, by the tests that
/// fail `without` it (`None`: that run did not happen).
fn failing_verdict(
    with: &command::Ran,
    without: Option<&command::Ran>,
    limit: Duration,
) -> Verdict {
    let output = digest(with, 3000);
    let said = match with.status {
        None => format!("killed at the time limit ({})", seconds(limit)),
        Some(_) => summary_line(with),
    };
    let before = match without {
        Some(w) if w.status != Some(0) => failures(w),
        // Nothing failed without the change: whatever fails, it broke.
        _ => {
            return Verdict::Broke {
                said,
                output,
                fixed: vec![],
                broke: failures(with),
                failed_before: false,
            }
        }
    };
    let after = failures(with);
    let (fixed, broke) = compare(&before, &after);
    if !broke.is_empty() {
        Verdict::Broke {
            said,
            output,
            fixed,
            broke,
            failed_before: true,
        }
    } else if !fixed.is_empty() {
        Verdict::Mends {
            said,
            fixed,
            still: after,
        }
    } else {
        Verdict::AlreadyFailing { said, output }
    }
}

/// Of the tests failing `before` and `after` a change: those it fixed,
/// and those it broke.
fn compare(before: &[String], after: &[String]) -> (Vec<String>, Vec<String>) {
    let broke: Vec<String> = after
        .iter()
        .filter(|f| !before.contains(f))
        .cloned()
        .collect();
    // A test file that no longer imports fails as one error in place of
    // its tests: they are not fixed, they no longer run.
    if broke.iter().any(|f| whole_file_error(f)) {
        return (vec![], broke);
    }
    let fixed = before
        .iter()
        .filter(|f| !after.contains(f))
        .cloned()
        .collect();
    (fixed, broke)
}

/// Whether a failure [`failures`] read is a whole test file that did not
/// load (pytest's collection error, unittest's `_FailedTest`) rather
/// than one test.
fn whole_file_error(failure: &str) -> bool {
    (failure.starts_with("ERROR ") && !failure.contains("::")) || failure.contains("_FailedTest")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_that_name_a_changed_module_are_the_relevant_ones() {
        let files: Vec<String> = [
            "mathx.py",
            "pkg/__init__.py",
            "pkg/io.py",
            "tests/test_mathx.py",
            "tests/test_io.py",
            "tests/test_other.py",
            "tests/conftest.py",
            "util_test.py",
        ]
        .map(String::from)
        .to_vec();
        let text = |f: &str| match f {
            "tests/test_mathx.py" => Some("from mathx import mean\n".to_owned()),
            "tests/test_io.py" => Some("import pkg.io as io\n".to_owned()),
            "tests/test_other.py" => Some("import mathxtra\n".to_owned()),
            _ => Some(String::new()),
        };
        assert_eq!(
            relevant_tests(&files, &["mathx.py".into()], text),
            ["tests/test_mathx.py"]
        );
        assert_eq!(
            relevant_tests(&files, &["pkg/io.py".into()], text),
            ["tests/test_io.py"]
        );
        assert_eq!(
            relevant_tests(&files, &["util_test.py".into()], text),
            ["util_test.py"],
            "a changed test file runs itself"
        );
        assert!(relevant_tests(&files, &["nothing.py".into()], text).is_empty());
    }

    #[test]
    fn the_test_files_listed_by_their_pattern_are_every_test_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory(dir.path()).unwrap();
        let paths = [
            "tests/test_a.py",
            "pkg/b_test.py",
            "test_c.py",
            "tests/testing_d.py",
            "test/TestE.py",
            "Test_f.py",
            "contest.py",
            "tests/conftest.py",
            "tests/test_g.pyc",
            "src/a.py",
        ];
        for path in paths {
            store.stable_put(path, b"x\n", 0o644, 0, 1 << 20).unwrap();
        }
        store
            .agent_insert(&crate::store::AgentRecord::new("a", "t"))
            .unwrap();
        let view = Overlay::new(&store, "a", 1 << 20);
        view.write(&ProjectPath::parse("new_test.py").unwrap(), b"y\n")
            .unwrap();
        view.delete(&ProjectPath::parse("test_c.py").unwrap())
            .unwrap();
        let every: Vec<String> = view
            .files()
            .unwrap()
            .into_iter()
            .filter(|f| is_test_file(f))
            .collect();
        assert_eq!(
            every,
            [
                "new_test.py",
                "pkg/b_test.py",
                "tests/test_a.py",
                "tests/testing_d.py"
            ]
        );
        assert_eq!(
            view.files_where(TEST_FILE_LIKE, is_test_file).unwrap(),
            every
        );
    }

    #[test]
    fn a_users_command_runs_as_given_and_off_runs_nothing() {
        let own = TestsConfig {
            command: TestCommand::Argv(vec!["make".into(), "test".into()]),
            ..TestsConfig::default()
        };
        assert_eq!(
            command_for(&own, &["t.py".into()], &system()),
            Some(vec!["make".into(), "test".into()])
        );
        let off = TestsConfig {
            command: TestCommand::Named(TestsMode::Off),
            ..TestsConfig::default()
        };
        assert_eq!(command_for(&off, &["t.py".into()], &system()), None);
        let auto = command_for(
            &TestsConfig::default(),
            &["tests/test_a.py".into()],
            &system(),
        )
        .unwrap();
        assert_eq!(auto.last().map(String::as_str), Some("tests/test_a.py"));
        // A file an agent names like an option (`-p_test.py` would load a
        // plugin) is still a file to the runner.
        let odd = command_for(&TestsConfig::default(), &["-p_test.py".into()], &system()).unwrap();
        assert_eq!(&odd[odd.len() - 2..], ["--", "-p_test.py"]);
    }

    /// "auto" in a folder with no environment of its own.
    fn system() -> Auto {
        Auto::of(std::path::Path::new("/nonexistent-project"), None)
    }

    #[test]
    fn a_test_file_that_no_longer_loads_fixes_none_of_its_tests() {
        let before: Vec<String> = [
            "FAILED tests/test_i.py::test_camelize",
            "FAILED tests/test_i.py::test_plural",
        ]
        .map(String::from)
        .to_vec();
        let (fixed, broke) = compare(&before, &["ERROR tests/test_i.py".into()]);
        assert!(fixed.is_empty());
        assert_eq!(broke, ["ERROR tests/test_i.py"]);
        let unittest = ["ERROR: test_i (unittest.loader._FailedTest.test_i)".to_owned()];
        assert!(compare(&before, &unittest).0.is_empty());
        // One test fixed, the other still failing, nothing broken.
        let (fixed, broke) = compare(&before, &before[1..]);
        assert_eq!((fixed.len(), broke.len()), (1, 0));
        assert_eq!(names(&fixed), "test_camelize");
        assert_eq!(
            names(&["FAIL: test_single (test_mathx.MeanTest.test_single)".into()]),
            "test_single"
        );
    }
}
