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
            Verdict::Unavailable { said } => Some(format!("tests not run: {said}")),
        }
    }
}

/// Failing tests as a person names them: `test_single`, not the
/// runner's whole line; at most five, then how many more.
/// A failing test as [`failures`] reads it, without the runner's words
/// and path: `test_x[1]`.
pub(super) fn short_id(id: &str) -> &str {
    let t = [
        "FAILED ",
        "ERROR ",
        "FAIL: ",
        "ERROR: ",
        "test ",
        "--- FAIL: ",
        "not ok - ",
    ]
    .iter()
    .find_map(|p| id.strip_prefix(p))
    .unwrap_or(id);
    // unittest: `test_x (module.Class.test_x)`; pytest: `file::Class::test_x`.
    let t = t.split(" (").next().unwrap_or(t);
    t.rsplit("::").next().unwrap_or(t)
}

pub(super) fn names(tests: &[String]) -> String {
    let short: Vec<&str> = tests.iter().take(5).map(|t| short_id(t)).collect();
    match tests.len().saturating_sub(5) {
        0 => short.join(", "),
        n => format!("{} and {n} more", short.join(", ")),
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
    task.split(|c: char| !c.is_alphanumeric())
        .any(|w| WORDS.iter().any(|k| k.eq_ignore_ascii_case(w)))
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

    fn limit(&self) -> Duration {
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
        // Tests that cannot load for want of a package say nothing of the
        // code: nothing to start a fix from.
        if missing_package(&ran, &project).is_some() {
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
    let mut argv: Vec<String> = match (&config.command, auto.way) {
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
    let tests = match (&config.command, auto.way) {
        (TestCommand::Argv(_), _) | (TestCommand::Named(_), Way::Tool) => vec![],
        (TestCommand::Named(_), _) => {
            let files = view.files().ok()?;
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

/// The lines of a test run's output that name a failing test, the same
/// test the same way in every run: pytest's and unittest's, cargo's
/// (`test m::t ... FAILED`), Go's (`--- FAIL: TestX (0.01s)`) and TAP's
/// (`not ok 3 - adds`, as `node --test` reports).
pub(super) fn failures(ran: &command::Ran) -> Vec<String> {
    let mut out: Vec<String> = format!("{}\n{}", ran.stdout, ran.stderr)
        .lines()
        .filter_map(failing_test)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The failing test a line of output names, as [`failures`] says it.
fn failing_test(line: &str) -> Option<String> {
    if (line.starts_with("FAILED ") && !line.starts_with("FAILED ("))
        || line.starts_with("ERROR ")
        || line.starts_with("FAIL: ")
        || line.starts_with("ERROR: ")
    {
        return Some(line.split(" - ").next().unwrap_or(line).trim().to_owned());
    }
    let t = line.trim();
    if let Some(test) = t
        .strip_prefix("test ")
        .and_then(|r| r.strip_suffix(" ... FAILED"))
    {
        return Some(format!("test {test}"));
    }
    if let Some(rest) = t.strip_prefix("--- FAIL: ") {
        return Some(format!(
            "--- FAIL: {}",
            rest.split(" (").next().unwrap_or(rest)
        ));
    }
    // TAP numbers tests by their order: a new test renumbers the rest.
    let rest = t.strip_prefix("not ok ")?;
    let name = rest.split_once(" - ").map_or("", |(_, name)| name);
    Some(format!(
        "not ok - {}",
        name.split(" # ").next().unwrap_or(name)
    ))
}

/// The most failing tests a [`digest`] describes.
const DIGEST_TESTS: usize = 3;

/// A test run's failures for a model to read: from pytest, each failing
/// test's name, the line that failed and its error, for the first
/// [`DIGEST_TESTS`]; from any other runner, the output's last `chars`.
/// Shown pytest's full tracebacks (diff markers, the same test ten times
/// with other parameters), Qwen2.5-Coder 1.5B lost the point of the
/// failure, and read 2,000 characters for it.
fn digest(ran: &command::Ran, chars: usize) -> String {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    let header = |l: &str| {
        let t = l.trim();
        t.starts_with("___") && t.ends_with("___") && !t.trim_matches('_').trim().is_empty()
    };
    let mut tests = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if !header(line) {
            continue;
        }
        let name = line.trim().trim_matches('_').trim();
        let mut body = Vec::new();
        while let Some(l) = lines.next_if(|l| !header(l) && !l.starts_with("====")) {
            body.push(l);
        }
        let first_error = body.iter().position(|l| l.starts_with("E "));
        let before = &body[..first_error.unwrap_or(body.len())];
        // Long tracebacks mark the failing line with `>`; short ones end
        // with it, indented, right above the error.
        let failed = before
            .iter()
            .rev()
            .find(|l| l.starts_with('>'))
            .map(|l| &l[1..])
            .or_else(|| before.iter().rev().find(|l| l.starts_with("    ")).copied())
            .map(str::trim);
        let error = first_error.map(|i| body[i][1..].trim());
        let explained = failed.zip(error).and_then(|(line, error)| {
            super::assertion::explain(line, error, &super::assertion::locals(body.iter().copied()))
        });
        tests.push(
            std::iter::once(name)
                .chain(failed)
                .chain(error)
                .chain(explained.as_deref())
                .collect::<Vec<_>>()
                .join("\n    "),
        );
    }
    if tests.is_empty() {
        return tap_digest(&text).unwrap_or_else(|| tail(ran, chars));
    }
    let more = tests.len().saturating_sub(DIGEST_TESTS);
    tests.truncate(DIGEST_TESTS);
    let mut out = tests.join("\n\n");
    if more > 0 {
        out.push_str(&format!("\n\n(and {more} more failing tests)"));
    }
    out
}

/// A TAP report's failures (`node --test`'s): each failing test's
/// `not ok` line with where it failed and its error, without the stack;
/// the first [`DIGEST_TESTS`]. `None` when no test failed so.
fn tap_digest(text: &str) -> Option<String> {
    let mut tests = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("not ok ") {
            continue;
        }
        let mut kept = vec![line.trim().to_owned()];
        // The YAML block after it, up to `...`: `location:`, and `error:`
        // with the lines indented under it.
        let indent = |l: &str| l.len() - l.trim_start().len();
        let mut error: Option<usize> = None;
        while let Some(l) =
            lines.next_if(|l| !l.trim_start().starts_with("not ok ") && l.trim() != "...")
        {
            let t = l.trim();
            match error {
                Some(_) if t.is_empty() => continue,
                Some(key) if indent(l) > key => {
                    kept.push(t.to_owned());
                    continue;
                }
                _ => error = None,
            }
            if t.starts_with("location:") {
                kept.push(t.to_owned());
            }
            if t.starts_with("error:") {
                error = Some(indent(l));
            }
        }
        tests.push(kept.join("\n    "));
    }
    if tests.is_empty() {
        return None;
    }
    let more = tests.len().saturating_sub(DIGEST_TESTS);
    tests.truncate(DIGEST_TESTS);
    let mut out = tests.join("\n\n");
    if more > 0 {
        out.push_str(&format!("\n\n(and {more} more failing tests)"));
    }
    Some(out)
}

/// The last lines of a run's output: where test runners put the summary.
fn tail(ran: &command::Ran, chars: usize) -> String {
    let all = format!("{}\n{}", ran.stdout.trim_end(), ran.stderr.trim_end());
    let all = all.trim();
    let start = all.char_indices().rev().nth(chars).map_or(0, |(i, _)| i);
    all[start..].to_owned()
}

/// The one-line result a test runner printed last ("3 passed in 0.1s",
/// "Ran 4 tests … OK"); cargo's and TAP's counts added up.
pub(super) fn summary_line(ran: &command::Ran) -> String {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    if let Some((passed, failed)) = counts(&text) {
        return format!("{passed} passed, {failed} failed");
    }
    // `go test`: a line per package, `ok  \tpath\t0.01s` or `FAIL\tpath…`.
    let packages: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("ok  \t") || l.starts_with("FAIL\t"))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    if !packages.is_empty() {
        return packages.join("; ");
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let ran_line = lines.iter().rev().find(|l| l.starts_with("Ran "));
    let last = lines.last().copied().unwrap_or("");
    match ran_line {
        Some(r) if *r != last => format!("{r}, {last}"),
        _ => last.to_owned(),
    }
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
            .files()
            .ok()?
            .into_iter()
            .filter(|f| is_test_file(f) && !new.contains(f) && folders.contains(&folder(f)))
            .collect();
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

    /// Why a test file the change adds tests nothing: it does not load as
    /// `pytest` loads it ([`Tests::unloadable_new_test`]), or the
    /// project's runner finds no test in it. `None` for a project's own
    /// test command, which this cannot run one file at a time.
    pub fn new_test_problem(&self, cancelled: &dyn Fn() -> bool) -> Option<Problem> {
        if self.config.command != TestCommand::Named(TestsMode::Auto) {
            return None;
        }
        let new: Vec<String> = self
            .store
            .overlay_entries(&self.agent)
            .ok()?
            .into_iter()
            .filter(|(p, e)| e.base_hash.is_none() && e.hash.is_some() && is_test_file(p))
            .map(|(p, _)| p)
            .collect();
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

    /// Tests the agent's change (see the module's comment).
    pub fn check(&self, cancelled: &dyn Fn() -> bool) -> Verdict {
        let Ok(entries) = self.store.overlay_entries(&self.agent) else {
            return Verdict::NotRun;
        };
        let changed: Vec<String> = entries
            .into_iter()
            .filter(|(_, e)| e.hash != e.base_hash)
            .map(|(p, _)| p)
            .collect();
        let first_source = changed.iter().find(|p| crate::lang::is_source(p));
        let auto = self.auto(first_source.map(String::as_str));
        if let (Way::Nothing(language), Some(_), TestCommand::Named(TestsMode::Auto)) =
            (auto.way, first_source, &self.config.command)
        {
            return Verdict::Unavailable {
                said: super::runner::nothing_runs(language),
            };
        }
        let after = self.view(true);
        let Some(argv) = argv_for(&self.config, &after, &changed, &auto) else {
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

/// The verdict on a change whose test run `with` failed, by the tests that
/// fail `without` it (`None`: that run did not happen).
fn failing_verdict(
    with: &command::Ran,
    without: Option<&command::Ran>,
    limit: Duration,
) -> Verdict {
    let output = digest(with, 3000);
    let said = match with.status {
        None => format!("killed at the time limit ({} s)", limit.as_secs()),
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

/// How many tests passed and failed, from the counts cargo (`test
/// result: ok. 3 passed; 1 failed; …`, once per test program) and TAP
/// (`# pass 3`, `# fail 1`) print; `None` from other runners.
fn counts(text: &str) -> Option<(u64, u64)> {
    let number = |s: &str| s.trim().split(' ').next()?.parse::<u64>().ok();
    let mut seen = false;
    let (mut passed, mut failed) = (0, 0);
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("test result: ") {
            seen = true;
            for part in rest.split(';') {
                let part = part.rsplit(". ").next().unwrap_or(part).trim();
                match part.split_once(' ') {
                    Some((n, "passed")) => passed += number(n).unwrap_or(0),
                    Some((n, "failed")) => failed += number(n).unwrap_or(0),
                    _ => {}
                }
            }
        } else if let Some(n) = line.strip_prefix("# pass ").and_then(number) {
            seen = true;
            passed += n;
        } else if let Some(n) = line.strip_prefix("# fail ").and_then(number) {
            failed += n;
        }
    }
    seen.then_some((passed, failed))
}

/// Whether a run found no test to run: unittest's "Ran 0 tests" (a
/// pytest-style file under unittest passes so), pytest's exit code 5, a
/// cargo or TAP run that counted none.
pub(super) fn ran_no_test(ran: &command::Ran) -> bool {
    let said = summary_line(ran);
    (ran.status == Some(5) && said.contains("no tests ran"))
        || said.starts_with("Ran 0 tests")
        || (ran.status == Some(0) && said == "0 passed, 0 failed")
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
    fn a_digest_names_each_failing_test_its_line_and_its_error() {
        let block = |name: &str, want: &str| {
            format!("____________ {name} ____________\ntest_x.py:3: in {name}\n    assert camelize('a_b') == 'AB'\nE   AssertionError: assert {want} == 'AB'\nE     \nE     - ab\n")
        };
        let mut stdout = String::from("FF.\n================= FAILURES =================\n");
        for i in 0..5 {
            stdout.push_str(&block(&format!("test_c[{i}]"), "'ab'"));
        }
        stdout.push_str("========== short test summary info ==========\nFAILED test_x.py::test_c[0] - Asser...\n5 failed, 1 passed in 0.1s\n");
        let ran = command::Ran {
            status: Some(1),
            stdout,
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let d = digest(&ran, 2000);
        assert_eq!(
            d.split("\n\n").next().unwrap(),
            "test_c[0]\n    assert camelize('a_b') == 'AB'\n    AssertionError: assert 'ab' == 'AB'\n    camelize('a_b') returned 'ab'; the test expects 'AB'"
        );
        assert_eq!(d.matches("AssertionError").count(), DIGEST_TESTS);
        assert!(d.ends_with("(and 2 more failing tests)"), "{d}");
        // A long traceback marks the failing line with `>`.
        let long = command::Ran {
            stdout: "___ test_m ___\n\n    def test_m():\n>       assert mean([1]) == 1\nE       assert 0.5 == 1\n\ntest_m.py:4: AssertionError\n".into(),
            ..ran.clone()
        };
        assert_eq!(
            digest(&long, 2000),
            "test_m\n    assert mean([1]) == 1\n    assert 0.5 == 1\n    mean([1]) returned 0.5; the test expects 1"
        );
        // Another runner's output is kept as it ends.
        let other = command::Ran {
            stdout: "FAIL: test_median (t.T)\nAssertionError: 2 != 3\n".into(),
            ..ran
        };
        assert_eq!(
            digest(&other, 2000),
            "FAIL: test_median (t.T)\nAssertionError: 2 != 3"
        );
    }

    #[test]
    fn a_run_that_found_no_test_is_no_pass() {
        let ran = |status, stdout: &str| command::Ran {
            status: Some(status),
            stdout: stdout.into(),
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        assert!(ran_no_test(&ran(
            0,
            "\n----\nRan 0 tests in 0.000s\n\nOK\n"
        )));
        assert!(ran_no_test(&ran(5, "\nno tests ran in 0.01s\n")));
        assert!(!ran_no_test(&ran(0, "Ran 2 tests in 0.001s\n\nOK\n")));
        assert!(!ran_no_test(&ran(0, "3 passed in 0.02s\n")));
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

    #[test]
    fn failures_and_counts_are_read_from_cargo_go_and_tap_output() {
        let ran = |stdout: &str| command::Ran {
            status: Some(1),
            stdout: stdout.into(),
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let cargo = ran("running 2 tests\ntest tests::shows ... ok\ntest tests::adds ... FAILED\n\nfailures:\n    tests::adds\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.06s\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n");
        assert_eq!(failures(&cargo), ["test tests::adds"]);
        assert_eq!(summary_line(&cargo), "1 passed, 1 failed");
        assert_eq!(names(&failures(&cargo)), "adds");
        let tap = ran("TAP version 13\n# Subtest: adds\nnot ok 1 - adds\n  ---\n  ...\nok 2 - zero\n1..2\n# tests 2\n# pass 1\n# fail 1\n# duration_ms 76.7\n");
        assert_eq!(failures(&tap), ["not ok - adds"]);
        let yaml = "not ok 1 - adds\n  ---\n  duration_ms: 1.6\n  location: '/x/test/calc.test.js:7:1'\n  failureType: 'testCodeFailure'\n  error: |-\n    Expected values to be strictly equal:\n    \n    -1 !== 5\n    \n  code: 'ERR_ASSERTION'\n  stack: |-\n    TestContext.<anonymous> (/x/test/calc.test.js:8:10)\n  ...\nok 2 - zero\n";
        assert_eq!(
            tap_digest(yaml).unwrap(),
            "not ok 1 - adds\n    location: '/x/test/calc.test.js:7:1'\n    Expected values to be strictly equal:\n    -1 !== 5"
        );
        assert_eq!(summary_line(&tap), "1 passed, 1 failed");
        let go = ran("--- FAIL: TestAdd (0.00s)\n    calc_test.go:6: got 0\nFAIL\nFAIL\texample.com/calc\t0.002s\n");
        assert_eq!(failures(&go), ["--- FAIL: TestAdd"]);
        assert_eq!(summary_line(&go), "FAIL example.com/calc");
        let two = ran("ok  \texample.com/a\t0.01s\nFAIL\texample.com/b\t0.02s\nFAIL\n");
        assert_eq!(summary_line(&two), "ok example.com/a; FAIL example.com/b");
        assert_eq!(names(&failures(&go)), "TestAdd");
        let none = command::Ran {
            status: Some(0),
            ..ran("running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored\n")
        };
        assert!(ran_no_test(&none));
    }

    #[test]
    fn failures_are_read_from_pytest_and_unittest_output() {
        let ran = command::Ran {
            status: Some(1),
            stdout: "FAILED tests/test_a.py::test_mean - assert 3 == 2\n1 failed in 0.1s\n".into(),
            stderr: "FAIL: test_median (test_b.T.test_median)\n----\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n".into(),
            duration: Duration::ZERO,
        };
        assert_eq!(
            failures(&ran),
            [
                "FAIL: test_median (test_b.T.test_median)",
                "FAILED tests/test_a.py::test_mean"
            ]
        );
        assert_eq!(
            summary_line(&ran),
            "Ran 2 tests in 0.001s, FAILED (failures=1)"
        );
    }
}
