//! The exact half of a rename or a move, done on the syntax tree: every
//! use of a renamed name follows it, and imports follow a definition that
//! moves to another module. A small model writes the new definition well
//! and forgets a caller or an import; these steps never forget.

use std::ops::Range;

use super::imports::{identifier_spans, imports, imports_of};
use super::splice::assigned_names;
use super::{definitions, splice_definitions, DefKind, Definition};
use crate::lang::PYTHON;

/// The module a project path imports as: `pkg/io.py` → `pkg.io`,
/// `pkg/__init__.py` → `pkg`. `None` for a file that is not Python.
pub fn module_of(path: &str) -> Option<String> {
    let stem = path
        .strip_suffix(".py")
        .or_else(|| path.strip_suffix(".pyi"))?;
    let stem = stem
        .strip_suffix("/__init__")
        .unwrap_or(stem)
        .trim_start_matches("./");
    (!stem.is_empty() && stem != "__init__").then(|| stem.replace('/', "."))
}

/// `text` with every use of the name `from` (see [`identifier_spans`])
/// spelled `to`.
pub fn rename_identifier(text: &str, from: &str, to: &str) -> String {
    let mut out = text.to_owned();
    for (s, e) in identifier_spans(&PYTHON, text, from).into_iter().rev() {
        out.replace_range(s..e, to);
    }
    out
}

/// Whether `text` uses the name `name` (not as an attribute).
pub fn uses_name(text: &str, name: &str) -> bool {
    !identifier_spans(&PYTHON, text, name).is_empty()
}

/// The span `d` takes in `text` with the blank lines that part it from
/// what follows, or, for the last definition of the file, from what comes
/// before: what to cut so that the rest stays laid out as it was.
pub fn removal_span(text: &str, d: &Definition) -> Range<usize> {
    // The rest of its last line, then the blank lines after it.
    let mut end = text[d.end..]
        .find('\n')
        .map_or(text.len(), |i| d.end + i + 1);
    while let Some(next) = text[end..].find('\n') {
        if !text[end..end + next].trim().is_empty() {
            break;
        }
        end += next + 1;
    }
    let start = match end >= text.len() {
        true => (text[..d.start].trim_end().len() + 1).min(d.start),
        false => d.start,
    };
    start..end
}

/// `text` without its top-level definition `name` (see [`removal_span`]);
/// `None` when there is none.
pub fn remove_definition(text: &str, name: &str) -> Option<String> {
    let d = definitions(text)
        .into_iter()
        .find(|d| d.parent.is_none() && d.name == name && d.kind != DefKind::Method)?;
    let cut = removal_span(text, &d);
    Some(format!("{}{}", &text[..cut.start], &text[cut.end..]))
}

/// Whether `text` binds `name` at its top level by an import or an
/// assignment (definitions aside).
pub fn binds(text: &str, name: &str) -> bool {
    imports(&PYTHON, text).iter().any(|i| i.binds(name))
        || assigned_names(&PYTHON, text).iter().any(|n| n == name)
}

/// Whether `text` imports `name` from `module`.
pub fn imports_from(text: &str, module: &str, name: &str) -> bool {
    !imports_of(&PYTHON, text, module, name).is_empty()
}

/// `text` without `name` in its imports from `module` (a statement left
/// importing nothing goes, with its line).
pub fn drop_import(text: &str, module: &str, name: &str) -> String {
    let mut out = text.to_owned();
    for (span, rest) in imports_of(&PYTHON, text, module, name).into_iter().rev() {
        if rest.is_empty() {
            let end = out[span.end..]
                .find('\n')
                .map_or(out.len(), |i| span.end + i + 1);
            out.replace_range(span.start..end, "");
        } else {
            let stmt = &text[span.clone()];
            let head = &stmt[..stmt.find(" import ").map_or(0, |i| i + 8)];
            out.replace_range(span, &format!("{head}{}", rest.join(", ")));
        }
    }
    // The blank lines that separated a removed first import stay at the top.
    let lead = out.len() - out.trim_start_matches('\n').len();
    out.drain(..lead);
    out
}

/// `text` importing `name` from `module` (unchanged when it already does).
pub fn add_import(text: &str, module: &str, name: &str) -> String {
    if imports_from(text, module, name) {
        return text.to_owned();
    }
    splice_definitions(text, &format!("from {module} import {name}\n"), None)
        .unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_named_by_their_path() {
        assert_eq!(
            module_of("inventory/report.py").as_deref(),
            Some("inventory.report")
        );
        assert_eq!(module_of("pkg/__init__.py").as_deref(), Some("pkg"));
        assert_eq!(module_of("tool.py").as_deref(), Some("tool"));
        assert_eq!(module_of("README.md"), None);
    }

    #[test]
    fn a_rename_follows_uses_but_not_attributes_strings_or_longer_names() {
        let text = "from m import mean\n\n\ndef f(xs, mean_of=None):\n    \"\"\"mean of xs\"\"\"\n    return mean(xs) + obj.mean + g(mean=1) + meaner\n";
        assert_eq!(
            rename_identifier(text, "mean", "average"),
            "from m import average\n\n\ndef f(xs, mean_of=None):\n    \"\"\"mean of xs\"\"\"\n    return average(xs) + obj.mean + g(mean=1) + meaner\n"
        );
        assert!(uses_name(text, "mean") && !uses_name(text, "meaner_x"));
    }

    #[test]
    fn a_definition_goes_with_the_blank_lines_after_it() {
        let text =
            "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n";
        assert_eq!(
            remove_definition(text, "b").unwrap(),
            "def a():\n    return 1\n\n\ndef c():\n    return 3\n"
        );
        assert_eq!(
            remove_definition(text, "c").unwrap(),
            "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
        );
        assert_eq!(remove_definition(text, "zz"), None);
    }

    #[test]
    fn a_whole_file_that_dropped_imports_it_still_needs_gets_them_back() {
        let old = "import json\nimport os.path\nfrom m import mean, median as med\n\n\ndef f():\n    return mean(json.loads('1'))\n";
        let new = "def f():\n    \"\"\"F.\"\"\"\n    return mean(json.loads('1'))\n";
        assert_eq!(
            crate::python::imports::keep_imports(&PYTHON, old, new),
            format!("import json\nfrom m import mean, median as med\n\n\n{new}")
        );
        assert_eq!(
            crate::python::imports::keep_imports(&PYTHON, old, old),
            old,
            "nothing dropped"
        );
        let own = "def mean(xs):\n    return 0\n\n\ndef f():\n    return mean(json.loads('1'))\n";
        assert!(
            !crate::python::imports::keep_imports(&PYTHON, old, own).contains("from m import"),
            "a name the file now defines needs no import"
        );
    }

    #[test]
    fn imports_are_dropped_added_and_found_by_module() {
        let text = "import json\nfrom inventory.mathutil import mean, median as med\nfrom .items import Item\n\n\ndef f():\n    pass\n";
        assert!(imports_from(text, "inventory.mathutil", "median"));
        assert!(imports_from(text, "inventory.items", "Item"), "relative");
        assert!(!imports_from(text, "inventory.other", "mean"));
        let dropped = drop_import(text, "inventory.mathutil", "mean");
        assert!(
            dropped.contains("from inventory.mathutil import median as med\n"),
            "{dropped}"
        );
        let dropped = drop_import(text, "inventory.items", "Item");
        assert!(
            !dropped.contains("Item")
                && dropped.starts_with("import json\nfrom inventory.mathutil"),
            "{dropped}"
        );
        let added = add_import(
            "def f():\n    return mean([1])\n",
            "inventory.report",
            "mean",
        );
        assert!(
            added.starts_with("from inventory.report import mean\n"),
            "{added}"
        );
        assert_eq!(add_import(text, "inventory.mathutil", "mean"), text);
    }
}
