//! The last step before an agent's overlay becomes a proposal, whatever
//! produced it (a program, definitions, a whole file, tool calls): changes
//! outside the task are put back ([`super::scope`]), every changed file
//! in a language Chimera knows ([`crate::lang`]) parses and imports no
//! package the project lacks ([`super::packages`]), something changed,
//! nothing the task did not name was removed — a reply that echoes an outline or answers with one function
//! must never be proposed as the deletion of the rest — and the project's
//! tests pass ([`super::checks`]).

use std::collections::BTreeSet;

use std::path::Path;

use super::brain::Run;
use super::{checks, corrections, scope, Problem};
use crate::lang::{self, Language};
use crate::store::Store;
use crate::workspace::{Change, FileChange};

/// What the gate makes of an attempt that may be proposed; `change` is
/// the overlay as corrected and written.
#[derive(Debug)]
pub enum Gated {
    /// Proposed, with notes for its summary.
    Pass { notes: Vec<String>, change: Change },
    /// A fix that mends failing tests and breaks others: proposed, marked,
    /// only when no try does better. `fixed` and `broke` count tests.
    Fallback {
        notes: Vec<String>,
        problem: Problem,
        fixed: usize,
        broke: usize,
        change: Change,
    },
}

/// Brings the run's overlay to what may be proposed, or says what is wrong
/// (the repair message): the change is read once, corrected
/// ([`corrections`]), written once, then checked and tested. On the `last`
/// round a change that breaks tests is still proposed, marked — unless the
/// task is a fix the tests can judge: then a change after which the same
/// tests fail is never proposed, and one that breaks tests only as a
/// [`Gated::Fallback`].
pub async fn finish(run: &Run<'_>, last: bool) -> Result<Gated, Problem> {
    let (job, task, root) = (run.job, run.job.spec.task.as_str(), run.store.root());
    let ws = run.workspace();
    let mut change = ws.change().map_err(failed)?;
    let asked = corrections::Asked {
        task,
        root,
        node: job.node.is_some(),
    };
    let mut notes = corrections::apply(&mut change, &asked);
    ws.put(&mut change).map_err(failed)?;
    // A node agent can only rewrite itself (checked when it does).
    if job.node.is_some() {
        check_change(&change, root, None)?;
        return Ok(Gated::Pass { notes, change });
    }
    check_change(&change, root, Some(task))?;
    let fixing = checks::asks_to_fix(task);
    left_undone(&run.store, &change, task, fixing)?;
    let mut tested = run_tests(run, &change).await;
    let written_tests = only_test_files(&change);
    if let (Some(path), false, checks::Verdict::Broke { broke, .. }) =
        (&written_tests, fixing, &tested)
    {
        let read = |p: &str| ws.path(p).ok().and_then(|p| ws.read_text(&p).ok());
        let left = change.get_mut(path).and_then(|file| {
            let (kept, left) = super::unasked::leave_out(file.now()?, task, broke, &read)?;
            file.set(kept);
            Some(left)
        });
        if let Some(left) = left {
            ws.put(&mut change).map_err(failed)?;
            notes.push(format!(
                "left out tests the task did not ask for, which fail on the code as it is: {}",
                left.join(", ")
            ));
            tested = run_tests(run, &change).await;
        }
    }
    notes.extend(tested.note());
    let gated = judge(tested, fixing, last, written_tests, notes, change)?;
    let Gated::Pass { mut notes, change } = gated else {
        return Ok(gated);
    };
    // The tests it adds must also load as a person runs them, and test
    // something.
    let added: Vec<String> = change
        .files()
        .iter()
        .filter(|f| f.was.is_none() && f.written())
        .map(|f| f.path.clone())
        .collect();
    let fault = run
        .tests()
        .off_runtime(run.cancel, move |t, stop| t.new_test_problem(&added, stop))
        .await
        .flatten();
    match fault {
        None => Ok(Gated::Pass { notes, change }),
        Some(problem) if !last => Err(problem),
        // The last round: proposed, and the human told.
        Some(problem) => {
            notes.push(match problem {
                Problem::TestFileDoesNotLoad { path, .. } => {
                    format!("`{path}` DOES NOT LOAD under `pytest {path}`")
                }
                Problem::NoTestFound { path, runner } => {
                    format!("`{path}` HAS NO TEST that {runner} finds")
                }
                other => other.to_string(),
            });
            Ok(Gated::Pass { notes, change })
        }
    }
}

/// What the store or the overlay failing is told as.
fn failed(e: impl std::fmt::Display) -> Problem {
    Problem::Other(e.to_string())
}

/// What the task names and the change leaves undone: a fix or a change
/// that touches none of the definitions it names, docstrings asked for in a file left
/// as it was or given to none of the named definitions.
fn left_undone(store: &Store, change: &Change, task: &str, fixing: bool) -> Result<(), Problem> {
    // (A fix is strict; "make X …" lets a new named helper be the change.)
    if fixing || checks::asks_to_change(task) {
        let names = scope::untouched_named(change, task, fixing);
        if !names.is_empty() {
            return Err(Problem::NamedUntouched { names });
        }
    }
    let names = scope::undocumented_in_untouched(store, change, task).map_err(failed)?;
    if !names.is_empty() {
        return Err(Problem::DocsMissing { names });
    }
    let names = scope::documents_nothing_named(change, task);
    match names.is_empty() {
        true => Ok(()),
        false => Err(Problem::NothingDocumented { names }),
    }
}

/// The tests' verdict on `change`, written in the run's overlay.
async fn run_tests(run: &Run<'_>, change: &Change) -> checks::Verdict {
    run.say("running the project's tests");
    let changed = change.changed_paths();
    run.tests()
        .off_runtime(run.cancel, move |t, stop| t.check(&changed, stop))
        .await
        .unwrap_or(checks::Verdict::Unavailable {
            said: "the test run stopped unexpectedly".into(),
        })
}

/// The first test file the change writes, when it changes nothing else.
fn only_test_files(change: &Change) -> Option<String> {
    let mut written = change.changed().filter(|f| f.written()).map(|f| &f.path);
    let first = written.next()?;
    let only_tests = checks::is_test_file(first) && written.all(|p| checks::is_test_file(p));
    only_tests.then(|| first.clone())
}

/// What the tests' verdict makes of an attempt with `notes`: `fixing`,
/// the task asks to fix something; `last`, no round follows;
/// `written_tests`, the test file the change writes when it changes only
/// tests.
fn judge(
    tested: checks::Verdict,
    fixing: bool,
    last: bool,
    written_tests: Option<String>,
    notes: Vec<String>,
    change: Change,
) -> Result<Gated, Problem> {
    let asked_for_tests = written_tests.filter(|_| !fixing && !last);
    match (tested, asked_for_tests) {
        // Asked for tests: the code is as the human has it, so the tests
        // are what is wrong.
        (
            checks::Verdict::Broke { said, output, .. }
            | checks::Verdict::AlreadyFailing { said, output },
            Some(path),
        ) => Err(Problem::WrittenTestsFail { path, said, output }),
        (tested, _) => judge_change(tested, fixing, last, notes, change),
    }
}

/// [`judge`] for a change of code.
fn judge_change(
    tested: checks::Verdict,
    fixing: bool,
    last: bool,
    notes: Vec<String>,
    change: Change,
) -> Result<Gated, Problem> {
    match tested {
        checks::Verdict::Broke {
            said,
            output,
            fixed,
            broke,
            failed_before: true,
        } if fixing => {
            let problem = Problem::TestsFail { said, output };
            if fixed.is_empty() {
                return Err(problem);
            }
            Ok(Gated::Fallback {
                notes,
                problem,
                fixed: fixed.len(),
                broke: broke.len(),
                change,
            })
        }
        checks::Verdict::Broke { said, output, .. } if !last => {
            Err(Problem::TestsFail { said, output })
        }
        // Asked to fix what fails: the same tests failing is no fix.
        checks::Verdict::AlreadyFailing { said, output } if fixing => {
            Err(Problem::TestsStillFail { said, output })
        }
        _ => Ok(Gated::Pass { notes, change }),
    }
}

/// Words of a task whose change may be blank space alone.
const SPACE_WORDS: &[&str] = &[
    "whitespace",
    "space",
    "spaces",
    "blank",
    "newline",
    "newlines",
    "trailing",
    "indent",
    "indentation",
    "tabs",
    "format",
    "formatting",
    "reformat",
];

/// Whether every file of `change` is as it was, or changes only blank
/// space (the change only when the task is about it). Small models send
/// a file back so, as their change.
fn changes_nothing(change: &Change, task: Option<&str>) -> bool {
    let about_space = task.is_some_and(|t| super::locate::has_word(t, SPACE_WORDS));
    let blank_only = |f: &FileChange| {
        f.rewritten()
            .is_some_and(|(was, now)| crate::diff::only_blank_space_differs(was, now))
    };
    let unchanged = |f: &FileChange| !f.changed() || (!about_space && blank_only(f));
    !change.is_empty() && change.files().iter().all(unchanged)
}

/// Checks `agent`'s overlay as [`check_change`] does.
pub fn check(store: &Store, agent: &str, task: Option<&str>) -> Result<(), Problem> {
    let change = Change::read(store, agent).map_err(failed)?;
    check_change(&change, store.root(), task)
}

/// Checks `change` to the project at `root`. `task`: the words that may
/// name what is removed (`None`: removals are not checked, as for a node
/// agent, which can only rewrite itself).
fn check_change(change: &Change, root: &Path, task: Option<&str>) -> Result<(), Problem> {
    if changes_nothing(change, task) {
        return Err(Problem::Unchanged);
    }
    let written: BTreeSet<String> = change
        .files()
        .iter()
        .filter(|f| f.written())
        .map(|f| f.path.clone())
        .collect();
    for file in change.changed() {
        let (path, old, new) = (&file.path, file.was.as_deref(), file.now());
        let language = file.language();
        if let (Some(task), Some(old), None) = (task, old, new) {
            // A file goes only when the task names it, and names nothing
            // in it: "delete legacy_helper from mathx.py" is about a
            // function, not the file. A file's own name names no
            // definition ("delete gone.py" where `gone()` lives).
            let words = without_file_names(task);
            let about_a_definition = language.is_some_and(|l| {
                removed_definitions(l, old, "", &words).len() < lang::definitions(l, old).len()
            });
            if !names_file(task, path) || about_a_definition {
                return Err(Problem::DeletesFile { path: path.clone() });
            }
        }
        let (Some(language), Some(new)) = (language, new) else {
            continue;
        };
        if let Some(detail) = lang::syntax_problem(language, new) {
            return Err(Problem::Unparsable {
                path: path.clone(),
                detail: detail.to_string(),
            });
        }
        undefined(language, path, old, new)?;
        let missing = super::packages::missing(language, root, path, old, new, task.unwrap_or(""));
        if !missing.is_empty() {
            return Err(super::packages::message(path, &missing).into());
        }
        let missing = super::packages::missing_files(language, root, path, old, new, &written);
        if !missing.is_empty() {
            return Err(super::packages::files_message(path, &missing).into());
        }
        if let (Some(task), Some(old)) = (task, old) {
            let names = removed_definitions(language, old, new, task);
            if !names.is_empty() {
                return Err(Problem::OutOfScope {
                    path: path.clone(),
                    names,
                });
            }
        }
    }
    Ok(())
}

/// Refuses a change of `path` that calls names nothing defines.
fn undefined(language: &Language, path: &str, old: Option<&str>, new: &str) -> Result<(), Problem> {
    let names = lang::undefined_calls(language, old, new);
    match names.is_empty() {
        true => Ok(()),
        false => Err(Problem::UndefinedCalls {
            path: path.to_owned(),
            names,
        }),
    }
}

/// `task` without the file names it mentions.
fn without_file_names(task: &str) -> String {
    super::locate::mentions(task)
        .files
        .iter()
        .fold(task.to_owned(), |t, f| t.replace(f.as_str(), " "))
}

/// Whether `task` names `path` (its path or its file name).
fn names_file(task: &str, path: &str) -> bool {
    !super::locate::named_files(&super::locate::mentions(task), &[path.to_owned()]).is_empty()
}

/// Definitions of `old` missing from `new` (as `name` or `Class.name`)
/// that the task does not name.
pub fn removed_definitions(language: &Language, old: &str, new: &str, task: &str) -> Vec<String> {
    let kept: BTreeSet<String> = lang::definitions(language, new)
        .iter()
        .map(lang::Definition::qualified_name)
        .collect();
    let named: BTreeSet<String> = task
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut gone = Vec::new();
    for d in lang::definitions(language, old) {
        let k = d.qualified_name();
        let parent_named = d
            .parent
            .as_ref()
            .is_some_and(|p| named.contains(&p.to_lowercase()));
        if !kept.contains(&k) && !named.contains(&d.name.to_lowercase()) && !parent_named {
            gone.push(k);
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef legacy_helper():\n    return 1\n\n\nclass Inventory:\n    def add(self, x):\n        pass\n\n    def remove(self, x):\n        pass\n";

    #[test]
    fn removing_what_the_task_does_not_name_is_caught_and_named() {
        let only_mean = "def mean(xs):\n    \"\"\"Mean.\"\"\"\n    return sum(xs) / len(xs)\n";
        assert_eq!(
            removed_definitions(
                &lang::PYTHON,
                OLD,
                only_mean,
                "add a docstring to mean in mathx.py"
            ),
            // `add` is a word of the task: the class is what gets caught.
            ["legacy_helper", "Inventory", "Inventory.remove"]
        );
        let without_helper = OLD.replace("def legacy_helper():\n    return 1\n\n\n", "");
        assert!(removed_definitions(
            &lang::PYTHON,
            OLD,
            &without_helper,
            "delete the unused function legacy_helper"
        )
        .is_empty());
        let without_class = &OLD[..OLD.find("class").unwrap()];
        assert!(
            removed_definitions(
                &lang::PYTHON,
                OLD,
                without_class,
                "remove the Inventory class"
            )
            .is_empty(),
            "a named class goes with its methods"
        );
        let renamed = OLD.replace("def mean(", "def average(");
        assert!(
            removed_definitions(&lang::PYTHON, OLD, &renamed, "rename mean to average").is_empty()
        );
        assert_eq!(
            removed_definitions(&lang::PYTHON, OLD, &renamed, "tidy up"),
            ["mean"]
        );
        let msg = Problem::OutOfScope {
            path: "m.py".into(),
            names: removed_definitions(&lang::PYTHON, OLD, only_mean, "x"),
        }
        .to_string();
        assert!(
            msg.contains("`legacy_helper`, `Inventory`")
                && msg.contains("only the definitions you change"),
            "{msg}"
        );
    }

    /// A store where agent `ag` deleted `path`, which held `text`.
    fn deleted(path: &str, text: &str) -> (tempfile::TempDir, Store) {
        let (dir, store) = crate::store::fixture::with_file(path, text);
        store
            .agent_insert(&crate::store::AgentRecord::new("ag", "t"))
            .unwrap();
        crate::overlay::Overlay::new(&store, "ag", 1 << 20)
            .delete(&crate::paths::ProjectPath::parse(path).unwrap())
            .unwrap();
        (dir, store)
    }

    #[test]
    fn a_file_written_back_with_only_blank_space_changed_is_unchanged() {
        // eval, slugify-underscore with 0.5B: the whole file sent back as
        // it was, one blank line more at its end, was proposed (and in
        // truncate-negative, with the blank lines between functions gone).
        let (_dir, store) = crate::store::fixture::with_file("m.py", OLD);
        let written = |agent: &str, new: String| {
            crate::store::fixture::agent_writes(&store, agent, "m.py", &new)
        };
        written("blank", format!("{OLD}\n\n"));
        written("spaces", OLD.replace("pass\n", "pass   \n"));
        written("lines", OLD.replace("\n\n\n", "\n"));
        written("real", OLD.replace("return 1", "return 2"));
        let task = Some("make mean skip None");
        assert_eq!(check(&store, "blank", task), Err(Problem::Unchanged));
        assert_eq!(check(&store, "spaces", task), Err(Problem::Unchanged));
        assert_eq!(check(&store, "lines", task), Err(Problem::Unchanged));
        assert_ne!(check(&store, "real", task), Err(Problem::Unchanged));
        assert_eq!(
            check(&store, "spaces", Some("strip trailing whitespace in m.py")),
            Ok(()),
            "blank space is the change a task about it asks for"
        );
    }

    #[test]
    fn a_file_is_deleted_only_when_the_task_names_it_and_nothing_in_it() {
        let (_dir, store) = deleted("mathx.py", OLD);
        let err = check(
            &store,
            "ag",
            Some("delete the unused function legacy_helper from mathx.py"),
        )
        .unwrap_err();
        assert_eq!(
            err,
            Problem::DeletesFile {
                path: "mathx.py".into()
            }
        );
        assert!(check(&store, "ag", Some("tidy up")).is_err());
        assert_eq!(
            check(&store, "ag", Some("delete mathx.py, nothing uses it")),
            Ok(())
        );
    }

    /// The file's name is no definition's: "delete gone.py" asks for the
    /// file even when it defines `gone()`.
    #[test]
    fn a_file_named_by_the_task_goes_even_when_its_stem_names_a_definition_in_it() {
        let (_dir, store) = deleted("gone.py", "def gone():\n    return 1\n");
        assert_eq!(check(&store, "ag", Some("delete gone.py")), Ok(()));
        assert_eq!(
            check(&store, "ag", Some("delete the function gone in gone.py")),
            Err(Problem::DeletesFile {
                path: "gone.py".into()
            })
        );
    }

    #[test]
    fn every_known_language_is_parsed_and_kept_whole_before_it_is_proposed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let go = "package store\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n";
        store
            .stable_put("store/store.go", go.as_bytes(), 0o644, 0, 1 << 20)
            .unwrap();
        store
            .stable_put("notes.txt", b"anything\n", 0o644, 0, 1 << 20)
            .unwrap();
        for agent in ["broken", "dropped", "text"] {
            store
                .agent_insert(&crate::store::AgentRecord::new(agent, "t"))
                .unwrap();
        }
        let path = |p: &str| crate::paths::ProjectPath::parse(p).unwrap();
        let broken = crate::overlay::Overlay::new(&store, "broken", 1 << 20);
        broken
            .write(
                &path("store/store.go"),
                go.replace("a + b }", "a + }").as_bytes(),
            )
            .unwrap();
        let err = check(&store, "broken", Some("fix Add in store/store.go"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Go syntax error") && err.contains("line 3"),
            "{err}"
        );

        let dropped = crate::overlay::Overlay::new(&store, "dropped", 1 << 20);
        let only_add = "package store\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n";
        dropped
            .write(&path("store/store.go"), only_add.as_bytes())
            .unwrap();
        let err = check(&store, "dropped", Some("document Add"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("removes `Sub`"), "{err}");

        // A file of no known language is not parsed.
        let text = crate::overlay::Overlay::new(&store, "text", 1 << 20);
        text.write(&path("notes.txt"), b"func ( {\n").unwrap();
        assert_eq!(check(&store, "text", Some("edit notes.txt")), Ok(()));
    }

    #[test]
    fn a_file_is_named_by_its_path_or_its_name() {
        assert!(names_file("delete pkg/old.py", "pkg/old.py"));
        assert!(names_file("remove OLD.PY, it is unused", "pkg/old.py"));
        assert!(
            !names_file("delete bold.py", "old.py"),
            "a name inside another is not it"
        );
        assert!(!names_file(
            "delete the unused function f from mathx.py",
            "old.py"
        ));
    }
}
