//! One run of a project's tests as they are, before any agent changes
//! anything: what `chimera status --tests` and `:checkhealth chimera`
//! show, so a user learns that the tests pass, fail or cannot run (and
//! why, and what mends it) before the first proposal depends on them.
//! It runs the way an agent's check does — a scratch copy of the
//! project's files, confined, in the environment "auto" finds — on every
//! test file at once, or the project's own command.

use std::path::Path;
use std::sync::Arc;

use crate::config::{Config, TestCommand, TestsMode};
use crate::store::Store;

use super::checks::{self, Tests};
use super::test_output;

/// How the project's tests went, unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Baseline {
    /// `tests.command` is "off".
    Off,
    /// "auto" found no test to run: no test file, or no tool.
    NoTests(String),
    Passing(String),
    /// Tests fail already: the runner's last line and their names.
    Failing {
        said: String,
        failing: String,
    },
    /// The tests could not run, and why (with what mends it).
    CannotRun(String),
    /// Still running at a limit shorter than `tests.timeout_ms` (for
    /// `:checkhealth`, which the user waits on): stopped there.
    Unfinished(String),
}

impl std::fmt::Display for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Baseline::Off => f.write_str("off"),
            Baseline::NoTests(why) => write!(f, "no test to run: {why}"),
            Baseline::Passing(said) => write!(f, "passing: {said}"),
            Baseline::Failing { said, failing } if failing.is_empty() => {
                write!(f, "failing before any change: {said}")
            }
            Baseline::Failing { said, failing } => {
                write!(f, "failing before any change: {said} ({failing})")
            }
            Baseline::CannotRun(why) => write!(f, "cannot run: {why}"),
            Baseline::Unfinished(limit) => write!(
                f,
                "still running after {limit}, stopped there (an agent's change runs only the tests of what changed; `chimera status --tests` waits up to tests.timeout_ms)"
            ),
        }
    }
}

/// Runs the tests of the project at `root` once, as `config` says, on its
/// files as they are on disk now (read into a store of the run's own),
/// for at most `cap` when that is shorter than `tests.timeout_ms`.
pub fn run(
    root: &Path,
    config: &Config,
    cap: Option<std::time::Duration>,
    cancelled: &dyn Fn() -> bool,
) -> Baseline {
    if config.tests.command == TestCommand::Named(TestsMode::Off) {
        return Baseline::Off;
    }
    let max = config.sync.max_file_bytes;
    let store = match Store::open_in_memory(root) {
        Ok(s) => s,
        Err(e) => return Baseline::CannotRun(format!("cannot read the project: {e}")),
    };
    if let Err(e) = crate::sync::import(&store, root, max, &Default::default()) {
        return Baseline::CannotRun(format!("cannot read the project: {e}"));
    }
    let caps = match crate::capabilities::Capabilities::new(&config.capabilities, None) {
        Ok(c) => c,
        Err(e) => return Baseline::CannotRun(e.to_string()),
    };
    let mut tests_config = config.tests.clone();
    let cap = cap
        .map(|c| c.as_millis() as u64)
        .filter(|c| *c < tests_config.timeout_ms);
    if let Some(c) = cap {
        tests_config.timeout_ms = c;
    }
    let tests = Tests {
        store: Arc::new(store),
        agent: checks::PROJECT_AS_IS.to_owned(),
        config: tests_config,
        caps,
        max_bytes: max,
        as_is: Default::default(),
        unconfined: config.agents.run_unconfined,
        near: None,
    };
    tests.baseline(cap.is_some(), cancelled)
}

impl Tests {
    /// The project's tests as it is: every test file ("auto" with
    /// Python), the tool's command, or the user's own.
    /// `capped`: its time limit is shorter than the user's.
    pub fn baseline(&self, capped: bool, cancelled: &dyn Fn() -> bool) -> Baseline {
        let view = self.view(false);
        let Ok(files) = view.files() else {
            return Baseline::CannotRun("cannot list the project's files".into());
        };
        let test_files: Vec<String> = files
            .iter()
            .filter(|f| checks::is_test_file(f))
            .cloned()
            .collect();
        let auto = self.auto(test_files.first().map(String::as_str));
        if let (TestCommand::Named(_), Some(language)) = (&self.config.command, auto.runs_nothing())
        {
            return Baseline::NoTests(super::runner::nothing_runs(language));
        }
        let Some(argv) = checks::command_for(&self.config, &test_files, &auto) else {
            return Baseline::Off;
        };
        if auto.picks_files() && test_files.is_empty() {
            return Baseline::NoTests("no test file (test_*.py, *_test.py, tests/)".into());
        }
        let ran = match self.run_as_is(&argv, &auto, cancelled) {
            Ok(ran) => ran,
            Err(e) => return Baseline::CannotRun(e.to_string()),
        };
        if let Some(package) = super::runner::missing_package(&ran, &view) {
            return Baseline::CannotRun(auto.not_installed(&package));
        }
        if test_output::ran_no_test(&ran) {
            return Baseline::NoTests(self.no_test_ran(&ran, &auto));
        }
        if let Some(line) = test_output::refused_access(&ran).filter(|_| ran.status != Some(0)) {
            return Baseline::CannotRun(format!(
                "the confined run was refused `{line}`: the tests reach outside the project, which they may not (:help chimera-confinement)"
            ));
        }
        let said = test_output::summary_line(&ran);
        match ran.status {
            Some(0) => Baseline::Passing(said),
            None if capped => Baseline::Unfinished(checks::seconds(self.limit())),
            None => Baseline::CannotRun(format!(
                "they did not finish within tests.timeout_ms ({}) — raise it",
                checks::seconds(self.limit())
            )),
            Some(_) => Baseline::Failing {
                said,
                failing: test_output::names(&test_output::failures(&ran)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_suite_still_running_at_a_shorter_limit_is_stopped_there_not_called_broken() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
        std::fs::write(
            root.join("test_calc.py"),
            "import time\nimport unittest\n\nimport calc\n\ntime.sleep(20)\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(1, 1), 2)\n",
        )
        .unwrap();
        let mut config = Config::default();
        config.tests.command = TestCommand::Named(TestsMode::Auto);
        config.tests.timeout_ms = 1500;
        assert_eq!(
            run(root, &config, Some(Duration::from_millis(1000)), &|| false),
            Baseline::Unfinished("1 s".into())
        );
        assert_eq!(
            run(root, &config, None, &|| false),
            Baseline::CannotRun(
                "they did not finish within tests.timeout_ms (1.5 s) — raise it".into()
            )
        );
        // A cap longer than the user's limit is no cap.
        assert!(matches!(
            run(root, &config, Some(Duration::from_secs(60)), &|| false),
            Baseline::CannotRun(_)
        ));
    }
}
