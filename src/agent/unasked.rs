//! Tests an agent wrote that the task did not ask for and that fail on the
//! code as it is. Asked for "a unittest test case for slugify",
//! Qwen2.5-Coder 1.5B also tested `truncate` and `title_case` with wrong
//! expectations, and told so it gave the file back unchanged twice (eval,
//! new-text-tests); those tests are left out and the rest stands.

use crate::lang::{self, DefKind};
use crate::python::imports::imports;

use super::locate;

/// The test file `text` without the tests of `failing` that are about no
/// definition `task` names, and which those were; `read` gives a project
/// file's text. `None` when the task names no file that defines what it
/// names, when every failing test is about it, or when no test would be
/// left.
pub fn leave_out(
    text: &str,
    task: &str,
    failing: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, Vec<String>)> {
    let asked = asked_names(task, text, read);
    if asked.is_empty() {
        return None;
    }
    let tests: Vec<_> = lang::definitions(&lang::PYTHON, text)
        .into_iter()
        .filter(|d| matches!(d.kind, DefKind::Function | DefKind::Method))
        .filter(|d| d.name.starts_with("test"))
        .collect();
    let unasked = |name: &str| !asked.iter().any(|a| name.contains(a.as_str()));
    let failing: Vec<&str> = failing.iter().map(|id| test_name(id)).collect();
    let gone: Vec<_> = tests
        .iter()
        .filter(|d| failing.contains(&d.name.as_str()) && unasked(&d.name))
        .collect();
    if gone.is_empty() || gone.len() == tests.len() {
        return None;
    }
    let mut kept = text.to_owned();
    for d in gone.iter().rev() {
        kept.replace_range(crate::python::refactor::removal_span(text, d), "");
    }
    Some((kept, gone.iter().map(|d| d.qualified_name()).collect()))
}

/// The names `task` mentions that the files it names, or the modules the
/// test file `tests` imports, define (`slugify` in "… a test case for
/// slugify in inventory/text.py").
fn asked_names(task: &str, tests: &str, read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let m = locate::mentions(task);
    let mut files: Vec<String> = m
        .files
        .iter()
        .filter(|f| f.ends_with(".py"))
        .cloned()
        .collect();
    for i in imports(&lang::PYTHON, tests) {
        let modules = match i.from {
            Some(from) => vec![from],
            None => i.names.iter().map(|(module, _, _)| *module).collect(),
        };
        for module in modules.into_iter().filter(|m| !m.starts_with('.')) {
            let stem = module.replace('.', "/");
            files.extend([format!("{stem}.py"), format!("{stem}/__init__.py")]);
        }
    }
    let mut defined = Vec::new();
    for file in &files {
        if let Some(text) = read(file) {
            defined.extend(lang::definitions(&lang::PYTHON, &text));
        }
    }
    m.names()
        .filter(|n| defined.iter().any(|d| d.is_named(n)))
        .map(|n| n.rsplit('.').next().unwrap_or(n).to_owned())
        .collect()
}

/// A test's own name in a failing test's id (`FAIL: test_x (m.T.test_x)`,
/// `FAILED tests/t.py::test_x[1]`).
fn test_name(id: &str) -> &str {
    let id = super::test_output::short_id(id);
    id.split('[').next().unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_id_is_reduced_to_its_name() {
        assert_eq!(test_name("FAILED tests/test_t.py::test_x[a-b]"), "test_x");
        assert_eq!(
            test_name("FAIL: test_title_case (tests.test_text.TextTestCase.test_title_case)"),
            "test_title_case"
        );
        assert_eq!(
            test_name("ERROR: test_truncate (t.T.test_truncate)"),
            "test_truncate"
        );
    }
}
