//! Renames and moves a task asks for ("rename mean to average", "move
//! total_value from items.py to report.py"), finished after the model's
//! edit the way a person expects them done: the definition keeps its place
//! under its new name, every use and import in the files the agent may
//! change follows, and a moved definition leaves its old file. The model
//! writes what the task adds; these steps are exact (see
//! [`crate::python::refactor`]).

use crate::python::{self, refactor as tree};

use super::locate;

/// A refactoring the task asks for, by its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    pub change: Change,
    /// The task asks for nothing else ("rename mean to average
    /// everywhere"): it is done without the model.
    pub alone: bool,
}

/// What a refactoring changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A top-level function or class gets a new name.
    Rename { from: String, to: String },
    /// A top-level definition moves to the file `to`.
    Move { name: String, to: String },
}

/// Words between the verb and the name ("rename the function mean").
const FILLER: &[&str] = &[
    "the", "function", "class", "def", "method", "constant", "helper",
];

/// Words after the verb that say the renamed thing is no definition.
const NOT_DEFINITIONS: &[&str] = &[
    "parameter",
    "parameters",
    "argument",
    "arguments",
    "variable",
    "variables",
    "attribute",
    "field",
    "key",
    "file",
    "module",
];

/// The name a token spells, without quotes, backticks or `()`.
fn name_in(token: &str) -> Option<String> {
    let t = token
        .trim_matches(|c: char| "`'\"(),;:.!?".contains(c))
        .trim_end_matches("()");
    let ok = t
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_alphanumeric() || c == '_');
    ok.then(|| t.to_owned())
}

/// The refactoring `task` asks for, if it is one; `files`: the project's
/// files (a move's destination is one of them, or a new path).
pub fn intent(task: &str, files: &[String]) -> Option<Intent> {
    let tokens: Vec<&str> = task.split_whitespace().collect();
    let lower: Vec<String> = tokens.iter().map(|t| t.to_lowercase()).collect();
    let verb = lower.iter().position(|t| t == "rename" || t == "move")?;
    let mut i = verb + 1;
    while i < tokens.len() && FILLER.contains(&lower[i].as_str()) {
        i += 1;
    }
    // "rename the parameter lst of median": not a definition's name.
    if NOT_DEFINITIONS.contains(&lower.get(i)?.as_str()) {
        return None;
    }
    let name = name_in(tokens.get(i)?)?;
    let after = |words: &[&str]| {
        (i + 1..tokens.len()).find(|&j| words.contains(&lower[j].trim_end_matches(':')))
    };
    if lower[verb] == "rename" {
        let to = after(&["to", "as", "into"])?;
        let new = name_in(tokens.get(to + 1)?)?;
        let alone = nothing_else(&lower, &[&name, &new]);
        return (new != name).then_some(Intent {
            change: Change::Rename {
                from: name,
                to: new,
            },
            alone,
        });
    }
    let to = after(&["to", "into"])?;
    let rest = tokens[to + 1..].join(" ");
    let m = locate::mentions(&rest);
    let dest = locate::named_files(&m, files)
        .into_iter()
        .next()
        .or_else(|| {
            m.files
                .first()
                .map(|f| f.trim_start_matches("./").to_owned())
                .filter(|f| f.ends_with(".py") && crate::paths::ProjectPath::parse(f).is_ok())
        })?;
    let alone = nothing_else(&lower, &[&name]);
    Some(Intent {
        change: Change::Move { name, to: dest },
        alone,
    })
}

/// Words a task that only renames or moves may have besides its names
/// and paths.
#[rustfmt::skip]
const REFACTOR_WORDS: &[&str] = &[
    "rename", "move", "to", "as", "into", "from", "in", "everywhere", "a", "new", "module",
    "file", "the", "project", "all", "its", "uses", "callers", "and", "across", "code", "please",
    "package", "it", "of", "whole",
];

/// Whether `words` (the task, lowercased) say nothing but the refactoring
/// of `names`.
fn nothing_else(words: &[String], names: &[&str]) -> bool {
    words.iter().all(|w| {
        let w = w.trim_matches(|c: char| "`'\"(),;:.!?".contains(c));
        let w = w.trim_end_matches("()");
        w.is_empty()
            || REFACTOR_WORDS.contains(&w)
            || FILLER.contains(&w)
            || names.iter().any(|n| n.to_lowercase() == w)
            || w.contains('/')
            || w.ends_with(".py")
    })
}

impl Intent {
    /// The name whose uses decide which files the change reaches.
    pub fn name(&self) -> &str {
        match &self.change {
            Change::Rename { from, .. } => from,
            Change::Move { name, .. } => name,
        }
    }

    /// "rename" or "move", as a proposal's form.
    pub fn verb(&self) -> &'static str {
        match self.change {
            Change::Rename { .. } => "rename",
            Change::Move { .. } => "move",
        }
    }
}

/// One file the agent may change: its text before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    pub path: String,
    pub old: String,
    pub new: String,
}

fn defines(text: &str, name: &str) -> bool {
    python::definitions(text)
        .iter()
        .any(|d| d.parent.is_none() && d.name == name)
}

/// Finishes `intent` on `edits`; says what it did beyond the model's edit.
pub fn finish(intent: &Intent, edits: &mut [FileEdit]) -> Vec<String> {
    match &intent.change {
        Change::Rename { from, to } => finish_rename(from, to, edits),
        Change::Move { name, to } => finish_move(name, to, edits),
    }
}

fn finish_rename(from: &str, to: &str, edits: &mut [FileEdit]) -> Vec<String> {
    let Some(home) = edits.iter().position(|e| defines(&e.old, from)) else {
        return vec![];
    };
    let module = tree::module_of(&edits[home].path);
    // The model wrote the definition anew under its new name, beside the
    // old one: the new one takes the old one's place.
    let e = &mut edits[home];
    if defines(&e.new, from) && defines(&e.new, to) && !defines(&e.old, to) {
        let new_def = python::definitions(&e.new)
            .into_iter()
            .find(|d| d.parent.is_none() && d.name == to);
        if let Some(text) = new_def.map(|d| e.new[d.start..d.end].to_owned()) {
            if let Some(without) = tree::remove_definition(&e.new, to) {
                if let Some(old_def) = python::definitions(&without)
                    .into_iter()
                    .find(|d| d.parent.is_none() && d.name == from)
                {
                    let mut out = without.clone();
                    out.replace_range(old_def.start..old_def.end, &text);
                    e.new = out;
                }
            }
        }
    }
    let mut touched = Vec::new();
    for (i, e) in edits.iter_mut().enumerate() {
        // The old text too: a whole-file answer may have dropped the import.
        let reaches = i == home
            || module.as_deref().is_some_and(|m| {
                tree::imports_from(&e.new, m, from) || tree::imports_from(&e.old, m, from)
            });
        if reaches && tree::uses_name(&e.new, from) {
            e.new = tree::rename_identifier(&e.new, from, to);
            touched.push(e.path.clone());
        }
    }
    if touched.is_empty() {
        return vec![];
    }
    vec![format!(
        "`{from}` renamed to `{to}` in {}",
        touched.join(", ")
    )]
}

fn finish_move(name: &str, to: &str, edits: &mut [FileEdit]) -> Vec<String> {
    let Some(dst) = edits.iter().position(|e| e.path == to) else {
        return vec![];
    };
    let Some(src) = edits
        .iter()
        .position(|e| e.path != to && defines(&e.old, name))
    else {
        return vec![];
    };
    let (Some(src_mod), Some(dst_mod)) = (
        tree::module_of(&edits[src].path),
        tree::module_of(&edits[dst].path),
    ) else {
        return vec![];
    };
    let mut notes = Vec::new();
    // The definition as the model left it, else as it was.
    let def_text = [&edits[src].new, &edits[src].old]
        .into_iter()
        .find_map(|t| {
            python::definitions(t)
                .into_iter()
                .find(|d| d.parent.is_none() && d.name == name)
                .map(|d| t[d.start..d.end].to_owned())
        });
    if !defines(&edits[dst].new, name) {
        let Some(def_text) = &def_text else {
            return vec![];
        };
        let Ok(moved) = python::splice_definitions(&edits[dst].new, def_text, None) else {
            return vec![];
        };
        edits[dst].new = moved;
        notes.push(format!("`{name}` written into {to}"));
    }
    if let Some(without) = tree::remove_definition(&edits[src].new, name) {
        edits[src].new = without;
        notes.push(format!("`{name}` taken out of {}", edits[src].path));
    }
    // What the moved code uses from its old module comes along as imports.
    let needs: Vec<String> = python::definitions(&edits[src].new)
        .into_iter()
        .filter(|d| d.parent.is_none())
        .map(|d| d.name)
        .filter(|n| {
            def_text.as_deref().is_some_and(|t| tree::uses_name(t, n))
                && !defines(&edits[dst].new, n)
        })
        .collect();
    let d = &mut edits[dst];
    d.new = tree::drop_import(&d.new, &src_mod, name);
    for n in &needs {
        d.new = tree::add_import(&d.new, &src_mod, n);
    }
    for (i, e) in edits.iter_mut().enumerate() {
        if i == dst {
            continue;
        }
        let imported = tree::imports_from(&e.new, &src_mod, name);
        if imported {
            e.new = tree::drop_import(&e.new, &src_mod, name);
        }
        if imported || (i == src && tree::uses_name(&e.new, name)) {
            e.new = tree::add_import(&e.new, &dst_mod, name);
            if i != src {
                notes.push(format!("{} imports it from {dst_mod}", e.path));
            }
        }
    }
    notes
}

/// Ties the files of a change together the way a person would: a
/// definition the model copied from another file it was shown becomes an
/// import of the original, and a call to a function another of the files
/// defines, which the file neither defines nor imports, gets its import.
/// `keep`: a name the change moves (its copy is the point).
pub fn tidy(edits: &mut [FileEdit], keep: Option<&str>) -> Vec<String> {
    let mut notes = Vec::new();
    let defs_of = |text: &str| -> Vec<(String, String)> {
        python::definitions(text)
            .into_iter()
            .filter(|d| d.parent.is_none())
            .map(|d| (d.name.clone(), text[d.start..d.end].trim().to_owned()))
            .collect()
    };
    let originals: Vec<(String, Vec<(String, String)>)> = edits
        .iter()
        .filter_map(|e| Some((tree::module_of(&e.path)?, defs_of(&e.old))))
        .collect();
    // A file the model left as it was has neither copies nor new calls.
    for e in edits.iter_mut().filter(|e| e.new != e.old) {
        let own = tree::module_of(&e.path);
        let before: Vec<String> = defs_of(&e.old).into_iter().map(|(n, _)| n).collect();
        for (module, defs) in originals.iter().filter(|(m, _)| Some(m) != own.as_ref()) {
            for (name, text) in defs.iter().filter(|(n, _)| Some(n.as_str()) != keep) {
                let now = defs_of(&e.new);
                if !before.contains(name) && now.iter().any(|(n, t)| n == name && t == text) {
                    if let Some(without) = tree::remove_definition(&e.new, name) {
                        e.new = tree::add_import(&without, module, name);
                        notes.push(format!(
                            "{}: imports `{name}` from {module} instead of a copy",
                            e.path
                        ));
                    }
                    continue;
                }
                let calls = |t: &str| t.contains(&format!("{name}(")) && tree::uses_name(t, name);
                let bound = now.iter().any(|(n, _)| n == name) || tree::binds(&e.new, name);
                if calls(&e.new) && !calls(&e.old) && !bound {
                    e.new = tree::add_import(&e.new, module, name);
                    notes.push(format!("{}: imports `{name}` from {module}", e.path));
                }
            }
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<String> {
        [
            "inventory/items.py",
            "inventory/report.py",
            "inventory/mathutil.py",
        ]
        .map(String::from)
        .to_vec()
    }

    fn rename(from: &str, to: &str, alone: bool) -> Intent {
        Intent {
            change: Change::Rename {
                from: from.into(),
                to: to.into(),
            },
            alone,
        }
    }

    fn moved(name: &str, to: &str, alone: bool) -> Intent {
        Intent {
            change: Change::Move {
                name: name.into(),
                to: to.into(),
            },
            alone,
        }
    }

    #[test]
    fn renames_and_moves_are_read_from_the_task() {
        let f = files();
        assert_eq!(
            intent("rename mean to average everywhere", &f),
            Some(rename("mean", "average", true))
        );
        assert_eq!(
            intent("Rename the function `find_item()` as lookup", &f),
            Some(rename("find_item", "lookup", true))
        );
        assert_eq!(
            intent("rename mean to average and make it skip None", &f),
            Some(rename("mean", "average", false))
        );
        assert_eq!(
            intent("move total_value from items.py to report.py", &f),
            Some(moved("total_value", "inventory/report.py", true))
        );
        assert_eq!(
            intent("move the function clamp into inventory/bounds.py", &f),
            Some(moved("clamp", "inventory/bounds.py", true))
        );
        assert_eq!(intent("add a docstring to mean", &f), None);
        assert_eq!(intent("rename mean", &f), None);
        assert_eq!(
            intent("rename the parameter lst of median to values", &f),
            None
        );
        assert_eq!(intent("move fast and break things", &f), None);
        // A destination outside the project is no destination.
        for outside in ["../outside.py", "/tmp/outside.py", "inventory/../../x.py"] {
            assert_eq!(
                intent(&format!("move mean into {outside}"), &f),
                None,
                "{outside}"
            );
        }
        let huge = format!("rename mean to average {}", "and more ".repeat(100_000));
        assert_eq!(intent(&huge, &f), Some(rename("mean", "average", false)));
    }

    fn edit(path: &str, text: &str) -> FileEdit {
        FileEdit {
            path: path.into(),
            old: text.into(),
            new: text.into(),
        }
    }

    const MATH: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - mean(xs)\n";
    const REPORT: &str = "from inventory.mathutil import mean\n\n\ndef average_price(items):\n    return mean([i.price for i in items])\n";

    #[test]
    fn a_rename_puts_the_new_definition_in_the_old_place_and_every_use_follows() {
        // The model added `average` at the end and left `mean` and its uses.
        let mut edits = vec![
            edit("inventory/mathutil.py", MATH),
            edit("inventory/report.py", REPORT),
        ];
        edits[0].new = format!(
            "{MATH}\n\ndef average(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n"
        );
        let notes = finish(&rename("mean", "average", false), &mut edits);
        assert_eq!(
            edits[0].new,
            "def average(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - average(xs)\n"
        );
        assert_eq!(edits[1].new, REPORT.replace("mean", "average"));
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn a_move_takes_the_definition_out_and_brings_imports_along() {
        let mut edits = vec![
            edit("inventory/mathutil.py", MATH),
            edit("inventory/report.py", REPORT),
            edit(
                "inventory/other.py",
                "from inventory.mathutil import mean, spread\n\nx = mean([1])\n",
            ),
        ];
        // The model wrote `mean` into report.py and touched nothing else.
        edits[1].new = format!("{REPORT}\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n");
        finish(&moved("mean", "inventory/report.py", false), &mut edits);
        assert!(!defines(&edits[0].new, "mean"), "{}", edits[0].new);
        assert!(
            edits[0]
                .new
                .starts_with("from inventory.report import mean\n"),
            "spread still uses it: {}",
            edits[0].new
        );
        assert!(
            !edits[1].new.contains("import mean") && defines(&edits[1].new, "mean"),
            "{}",
            edits[1].new
        );
        assert!(
            edits[2]
                .new
                .contains("from inventory.mathutil import spread")
                && edits[2].new.contains("from inventory.report import mean"),
            "{}",
            edits[2].new
        );
        for e in &edits {
            assert_eq!(python::syntax_problem(&e.new), None, "{}", e.new);
        }
    }

    #[test]
    fn copies_become_imports_and_calls_get_theirs() {
        let store = "class Store:\n    def __init__(self):\n        self.items = {}\n";
        let mut edits = vec![
            edit("inventory/mathutil.py", MATH),
            edit("inventory/report.py", REPORT),
            edit("inventory/store.py", store),
        ];
        // report.py got a copy of `spread`; store.py calls `mean` unimported.
        edits[1].new = format!("{REPORT}\n\ndef spread(xs):\n    return max(xs) - mean(xs)\n\n\ndef rng(xs):\n    return spread(xs)\n");
        edits[2].new = format!(
            "{store}\n    def avg(self):\n        return mean(list(self.items.values()))\n"
        );
        let notes = tidy(&mut edits, None);
        assert_eq!(
            edits[1].new,
            "from inventory.mathutil import mean\nfrom inventory.mathutil import spread\n\n\ndef average_price(items):\n    return mean([i.price for i in items])\n\n\ndef rng(xs):\n    return spread(xs)\n"
        );
        assert!(
            edits[2]
                .new
                .starts_with("from inventory.mathutil import mean\n"),
            "{}",
            edits[2].new
        );
        assert_eq!(edits[0].new, MATH);
        assert_eq!(notes.len(), 2, "{notes:?}");
        // A moved definition is the point of its move.
        let mut moved = vec![
            edit("inventory/mathutil.py", MATH),
            edit("inventory/stats.py", ""),
        ];
        moved[1].new = "def mean(xs):\n    return sum(xs) / len(xs)\n".into();
        assert!(tidy(&mut moved, Some("mean")).is_empty());
    }

    #[test]
    fn a_move_the_model_did_not_write_is_done_from_the_old_definition() {
        let mut edits = vec![
            edit("inventory/mathutil.py", MATH),
            edit("inventory/stats.py", ""),
        ];
        finish(&moved("spread", "inventory/stats.py", false), &mut edits);
        assert_eq!(
            edits[0].new,
            "def mean(xs):\n    return sum(xs) / len(xs)\n"
        );
        assert_eq!(
            edits[1].new,
            "from inventory.mathutil import mean\n\n\ndef spread(xs):\n    return max(xs) - mean(xs)\n"
        );
    }
}
