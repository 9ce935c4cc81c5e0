//! Import lines a small model copies from what it was shown into the file
//! it changes: the test file's `from inflection import camelize, …` put
//! into `inflection/__init__.py` (the package no longer imports), or
//! `import pytest` added to a library module. They never reach the human:
//! dropped before the gate, and the summary says so.

use crate::lang;
use crate::python::imports::{imports, Import};
use crate::python::refactor::module_of;

/// Test frameworks a library module has no business importing unless it
/// did before.
const TEST_FRAMEWORKS: &[&str] = &["pytest", "unittest", "hypothesis", "nose"];

/// Whether `path` is a test file (where a test framework belongs).
fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("test_")
        || name.ends_with("_test.py")
        || name == "conftest.py"
        || path.split('/').any(|d| d == "tests" || d == "test")
}

/// Why the import statement `i`, new in the file at `path`, only echoes
/// the prompt; `None` when it may be meant.
fn echo(i: &Import<'_>, path: &str, own: &str, task: &str) -> Option<&'static str> {
    let named = |m: &str| crate::python::has_identifier(task, m.rsplit('.').next().unwrap_or(m));
    let root = own.split('.').next().unwrap_or(own);
    match i.from {
        Some(m) if m.starts_with('.') => None,
        // Its own module, or its own package from within.
        Some(m) if (m == own || m == root || own.starts_with(&format!("{m}."))) && !named(m) => {
            Some("imports the module itself")
        }
        Some(m) if TEST_FRAMEWORKS.contains(&m) && !is_test_file(path) && !named(m) => {
            Some("imports a test framework")
        }
        Some(_) => None,
        None => i.names.iter().find_map(|(module, _, _)| {
            let top = module.split('.').next().unwrap_or(module);
            if *module == own && !named(module) {
                Some("imports the module itself")
            } else if TEST_FRAMEWORKS.contains(&top) && !is_test_file(path) && !named(top) {
                Some("imports a test framework")
            } else {
                None
            }
        }),
    }
}

/// `new`, the changed text of the Python file at `path` that was `old`,
/// without the import statements it gained that only echo the prompt
/// (see [`echo`]); and those statements, as written.
pub fn drop_echoed_imports(path: &str, old: &str, new: &str, task: &str) -> (String, Vec<String>) {
    let Some(own) = module_of(path) else {
        return (new.to_owned(), vec![]);
    };
    let language = &lang::PYTHON;
    let before: Vec<&str> = imports(language, old)
        .iter()
        .map(|i| old[i.span.clone()].trim())
        .collect();
    let mut cut: Vec<(std::ops::Range<usize>, String)> = imports(language, new)
        .into_iter()
        .filter(|i| !before.contains(&new[i.span.clone()].trim()))
        .filter(|i| echo(i, path, &own, task).is_some())
        .map(|i| {
            // The whole line, with its newline.
            let end = new[i.span.end..]
                .find('\n')
                .map_or(new.len(), |n| i.span.end + n + 1);
            (i.span.start..end, new[i.span.clone()].to_owned())
        })
        .collect();
    if cut.is_empty() {
        return (new.to_owned(), vec![]);
    }
    let mut out = new.to_owned();
    for (span, _) in cut.iter().rev() {
        out.replace_range(span.clone(), "");
    }
    // The blank lines that parted a dropped first import from the code go
    // with it.
    if !old.starts_with('\n') {
        let lead = out.len() - out.trim_start_matches('\n').len();
        out.drain(..lead);
    }
    if lang::syntax_problem(language, &out).is_some() {
        return (new.to_owned(), vec![]);
    }
    (out, cut.drain(..).map(|(_, s)| s).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = "import re\n\n\ndef camelize(s):\n    return s.title()\n";

    #[test]
    fn the_test_files_import_line_copied_into_the_package_is_dropped() {
        let new = format!(
            "import re\nfrom inflection import camelize, humanize\n{}",
            &LIB[10..]
        );
        let (kept, dropped) = drop_echoed_imports(
            "inflection/__init__.py",
            LIB,
            &new,
            "fix camelize: test_camelize fails",
        );
        assert_eq!(dropped, ["from inflection import camelize, humanize"]);
        assert_eq!(kept, LIB);
    }

    #[test]
    fn a_test_framework_new_to_a_library_module_is_dropped_but_not_in_a_test_file() {
        let new = format!("import pytest\n{LIB}");
        let (kept, dropped) = drop_echoed_imports("pkg/text.py", LIB, &new, "fix camelize");
        assert_eq!((kept.as_str(), dropped.len()), (LIB, 1));
        let (kept, dropped) = drop_echoed_imports("tests/test_text.py", LIB, &new, "fix camelize");
        assert_eq!((kept, dropped.len()), (new.clone(), 0));
        // Asked for, it stays.
        let (_, dropped) =
            drop_echoed_imports("pkg/text.py", LIB, &new, "make camelize use pytest.approx");
        assert!(dropped.is_empty());
    }

    #[test]
    fn imports_that_were_there_or_are_new_and_meant_stay() {
        let new = format!("import json\n{LIB}");
        let (kept, dropped) = drop_echoed_imports("pkg/text.py", LIB, &new, "fix camelize");
        assert_eq!((kept, dropped.len()), (new, 0));
        let with_self = format!("from pkg import text\n{LIB}");
        let (_, dropped) = drop_echoed_imports("pkg/text.py", &with_self, &with_self, "x");
        assert!(dropped.is_empty(), "already there: not the model's echo");
    }
}
