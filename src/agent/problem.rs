//! Why an attempt is not yet a proposal, typed so that the loop decides by
//! kind; its `Display` is what the model is told for its next round.

/// What is wrong with an attempt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Every file written back as it was.
    #[error("The change leaves the file exactly as it was. Change the code as the task asks.")]
    Unchanged,
    /// A changed file no longer parses.
    #[error("`{path}` does not parse after your change.\n{detail}")]
    Unparsable { path: String, detail: String },
    /// Asked for docstrings, the change leaves a file the task names
    /// as it was, with a named definition undocumented there.
    #[error(
        "The task asks for documentation of {}, which {} no docstring yet: the change leaves that file as it was. Write each one's docstring too.",
        names.join(", "), if names.len() == 1 { "has" } else { "have" }
    )]
    DocsMissing { names: Vec<String> },
    /// Asked for docstrings, the change gives none of the named
    /// definitions in the files it touches one.
    #[error(
        "The task asks for a docstring, and the change adds none to {}. Write the docstring as the first line of its body, a string in triple quotes, and change nothing else.",
        names.join(", ")
    )]
    NothingDocumented { names: Vec<String> },
    /// A changed file calls names that nothing defines or imports.
    #[error(
        "`{path}` calls {}{}, which nothing in it defines or imports: it would fail with a NameError. Import each from where it is defined, define it, or use a function that exists.",
        shown(names), more(names)
    )]
    UndefinedCalls { path: String, names: Vec<String> },
    /// Definitions the task does not name are gone.
    #[error(
        "The change removes {}{} from `{path}`, which the task does not ask to remove. Answer with only the definitions you change, each complete; everything you leave out stays as it is.",
        shown(names), more(names)
    )]
    OutOfScope { path: String, names: Vec<String> },
    /// A file the task does not name is deleted.
    #[error(
        "The change deletes the file `{path}`, which the task does not ask to remove. Change only what the task asks."
    )]
    DeletesFile { path: String },
    /// The project's tests pass without the change and fail with it.
    #[error("The project's tests fail with your change ({said}):\n{output}\nFix the code so that they pass.")]
    TestsFail { said: String, output: String },
    /// Asked to fix what fails, and the same tests fail.
    #[error("Your change fixed none of the failing tests ({said}):\n{output}\nFix the code so that they pass.")]
    TestsStillFail { said: String, output: String },
    /// Asked for tests, and the tests the change writes fail on the code
    /// as it is: the tests are what to correct (the task does not ask to
    /// change the code).
    #[error("The tests you wrote fail on the code as it is ({said}):\n{output}\nThe task asks for tests, not for a change of the code: a test must expect what the code does. Correct the expected values that are wrong, or leave out the tests you are unsure of.")]
    WrittenTestsFail {
        path: String,
        said: String,
        output: String,
    },
    /// Asked to fix or change definitions, and every one of them is as
    /// it was.
    #[error(
        "The change leaves {} as it was, and the task is about {}. Change {} as the task asks.",
        shown(names),
        them(names),
        them(names)
    )]
    NamedUntouched { names: Vec<String> },
    /// A test file the change adds does not load the way `pytest` loads it.
    #[error("`{path}` does not load when `pytest {path}` runs it:\n{output}\nA test file is loaded from its own folder: put the project's folder on `sys.path` at its top (`sys.path.insert(0, os.path.join(os.path.dirname(__file__), \"..\"))` for a file in `tests/`) before importing the project's modules.")]
    TestFileDoesNotLoad { path: String, output: String },
    /// A test file the change adds holds no test the project's runner finds.
    #[error("`{path}` has no test that {runner} finds. {}", runner.how_to_write())]
    NoTestFound { path: String, runner: Runner },
    /// The file moved on under the lines the answer changed.
    #[error("`{path}` changed while you answered, in the lines you changed; answer again for the file as it is now.")]
    Moved { path: String },
    /// Outside the agent's capabilities.
    #[error("{0}")]
    Refused(String),
    /// Anything else, told as it is (a reply without code, a program's
    /// traceback, an import of a package the project lacks).
    #[error("{0}")]
    Other(String),
}

/// At most five of `names`, quoted.
fn shown(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

/// "it" or "them", as `names` counts.
fn them(names: &[String]) -> &'static str {
    if names.len() == 1 {
        "it"
    } else {
        "them"
    }
}

/// How many of `names` [`shown`] leaves out, said.
fn more(names: &[String]) -> String {
    match names.len().saturating_sub(5) {
        0 => String::new(),
        n => format!(" and {n} more"),
    }
}

impl Problem {
    /// The new file whose next version the model writes whole: a test
    /// file it wrote that fails, finds no test or does not load. (The
    /// round starts from the project as it is, where that file is not.)
    pub fn whole_file(&self) -> Option<&str> {
        match self {
            Problem::WrittenTestsFail { path, .. }
            | Problem::NoTestFound { path, .. }
            | Problem::TestFileDoesNotLoad { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl From<String> for Problem {
    fn from(said: String) -> Self {
        Problem::Other(said)
    }
}

impl From<&str> for Problem {
    fn from(said: &str) -> Self {
        Problem::Other(said.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_names_five_and_counts_the_rest() {
        let names: Vec<String> = (1..=7).map(|i| format!("f{i}")).collect();
        let said = Problem::OutOfScope {
            path: "m.py".into(),
            names,
        }
        .to_string();
        assert!(
            said.starts_with(
                "The change removes `f1`, `f2`, `f3`, `f4`, `f5` and 2 more from `m.py`"
            ),
            "{said}"
        );
        let one = Problem::OutOfScope {
            path: "m.py".into(),
            names: vec!["f".into()],
        }
        .to_string();
        assert!(
            one.starts_with("The change removes `f` from `m.py`,"),
            "{one}"
        );
    }
}

/// The program that runs a Python project's tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    Pytest,
    /// The standard library's, when pytest is not installed.
    Unittest,
}

impl std::fmt::Display for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Runner::Pytest => "pytest",
            Runner::Unittest => "unittest",
        })
    }
}

impl Runner {
    /// How a test is written for it to be found.
    fn how_to_write(self) -> &'static str {
        match self {
            Runner::Pytest => "pytest runs the functions whose names start with `test_`, at the top level of the file or in a class whose name starts with `Test`; name each test so.",
            Runner::Unittest => "The tests run with unittest (pytest is not installed): it runs only the methods whose names start with `test_` of a class that subclasses `unittest.TestCase`. Write each test as such a method, with `import unittest` at the top.",
        }
    }
}
