//! The corrections Chimera makes to what a model wrote before anything is
//! checked, in the one order they apply. Each has one shape: a changed
//! file in memory in, its corrected text out (with what it did, in words),
//! or nothing. Small models move doc comments into bodies, import what the
//! language has built in, "improve" functions the task never named and
//! copy the prompt's import lines; every brain's change goes through the
//! same list ([`super::gate::finish`]), then the overlay is written once.

use std::path::Path;

use super::{echo, locate, packages, scope};
use crate::lang;
use crate::workspace::{Change, FileChange};

/// What the corrections know of the run.
pub(super) struct Asked<'a> {
    pub task: &'a str,
    /// The project's root, where installed packages are looked for.
    pub root: &'a Path,
    /// The change is a Remora node's rewrite of its own source.
    pub node: bool,
}

/// One correction (see the module's comment).
struct Correction {
    /// What the proposal's summary says before the list of what it did;
    /// `None`: it goes unsaid (a form made right, nothing of the change
    /// left out).
    said: Option<&'static str>,
    /// Whether it holds for a node's own source too, which names nothing
    /// of a task.
    nodes: bool,
    /// The file's corrected text and what was done, in words.
    apply: fn(&Asked, &FileChange) -> Option<(String, String)>,
}

/// Every correction, in the order it applies.
const CORRECTIONS: &[Correction] = &[
    Correction {
        said: None,
        nodes: true,
        apply: docs_out_of_bodies,
    },
    Correction {
        said: None,
        nodes: true,
        apply: needless_imports,
    },
    Correction {
        said: Some("left out changes the task did not ask for"),
        nodes: false,
        apply: out_of_scope,
    },
    Correction {
        said: Some("dropped imports copied from what the model was shown"),
        nodes: false,
        apply: echoed_imports,
    },
];

/// Applies every correction to `change`'s written files, in order; what
/// the summary says of them.
pub(super) fn apply(change: &mut Change, asked: &Asked) -> Vec<String> {
    let mut notes = Vec::new();
    for c in CORRECTIONS.iter().filter(|c| c.nodes || !asked.node) {
        let mut did = Vec::new();
        for file in change.files_mut().filter(|f| f.changed() && f.written()) {
            if let Some((text, what)) = (c.apply)(asked, file) {
                file.set(text);
                did.push(format!("{}: {what}", file.path));
            }
        }
        if let (Some(said), false) = (c.said, did.is_empty()) {
            notes.push(format!("{said}: {}", did.join("; ")));
        }
    }
    notes
}

/// `text` as the correction's result when it differs from `file`'s.
fn differs(file: &FileChange, text: String, what: String) -> Option<(String, String)> {
    (Some(text.as_str()) != file.now()).then_some((text, what))
}

/// A doc comment written first in a body goes above its definition.
fn docs_out_of_bodies(_: &Asked, file: &FileChange) -> Option<(String, String)> {
    let language = file.language()?;
    let was = file.was.as_deref().unwrap_or("");
    let text = lang::docs_moved_out_of_bodies(language, was, file.now()?);
    differs(
        file,
        text,
        "doc comments moved above their definitions".into(),
    )
}

/// An import that binds only what the language has built in, from a
/// package the project lacks, goes ([`packages::without_needless_imports`]).
fn needless_imports(asked: &Asked, file: &FileChange) -> Option<(String, String)> {
    let language = file.language()?;
    let text = packages::without_needless_imports(
        language,
        asked.root,
        &file.path,
        file.was.as_deref(),
        file.now()?,
        asked.task,
    );
    differs(file, text, "needless imports dropped".into())
}

/// A function the task does not name goes back as it was
/// ([`scope::keep_to_task`]).
fn out_of_scope(asked: &Asked, file: &FileChange) -> Option<(String, String)> {
    let m = locate::mentions(asked.task);
    let names: Vec<&str> = m.names().collect();
    let (was, now) = file.rewritten()?;
    if names.is_empty() {
        return None;
    }
    let (kept, put_back) = scope::keep_to_task(file.language()?, was, now, &names);
    let named = match put_back.len() {
        0 => return None,
        1..=5 => put_back.join(", "),
        n => format!("{} and {} more", put_back[..3].join(", "), n - 3),
    };
    differs(file, kept, named)
}

/// A Python import that only echoes the prompt goes
/// ([`echo::drop_echoed_imports`]).
fn echoed_imports(asked: &Asked, file: &FileChange) -> Option<(String, String)> {
    if file.language() != Some(&lang::PYTHON) {
        return None;
    }
    let was = file.was.as_deref().unwrap_or("");
    let (kept, dropped) = echo::drop_echoed_imports(&file.path, was, file.now()?, asked.task);
    match dropped.is_empty() {
        true => None,
        false => differs(file, kept, format!("`{}`", dropped.join("`, `"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str =
        "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef greet(n):\n    return 'hi ' + n\n";

    fn asked(task: &str, node: bool) -> Asked<'_> {
        Asked {
            task,
            root: Path::new("/nonexistent"),
            node,
        }
    }

    #[test]
    fn each_correction_applies_in_order_and_says_what_it_did() {
        let new = format!(
            "from mathx import mean\n{}",
            OLD.replace("sum(xs) / len(xs)", "sum(xs) / max(len(xs), 1)")
                .replace("'hi ' + n", "f'hi {n}'")
        );
        let mut change = Change::of(&[("mathx.py", Some(OLD), Some(&new))]);
        let notes = apply(&mut change, &asked("make mean safe for empty lists", false));
        let now = change.files()[0].now().unwrap();
        assert!(now.contains("max(len(xs), 1)"), "the asked change stays");
        assert!(now.contains("'hi ' + n"), "greet goes back: {now}");
        assert!(!now.contains("from mathx"), "the echoed import goes: {now}");
        assert_eq!(
            notes,
            [
                "left out changes the task did not ask for: mathx.py: greet",
                "dropped imports copied from what the model was shown: mathx.py: `from mathx import mean`",
            ]
        );
        assert!(change.files()[0].edited());
    }

    #[test]
    fn a_nodes_own_source_is_not_kept_to_a_task_it_is_not_named_in() {
        let new = OLD.replace("'hi ' + n", "f'hi {n}'");
        let mut change = Change::of(&[("mathx.py", Some(OLD), Some(&new))]);
        assert!(apply(&mut change, &asked("make mean safe", true)).is_empty());
        assert_eq!(change.files()[0].now(), Some(new.as_str()));
        assert!(!change.files()[0].edited(), "nothing to write");
    }

    #[test]
    fn a_doc_comment_written_into_a_body_moves_above_it_in_every_brain() {
        let old = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
        let new = "fn add(a: i32, b: i32) -> i32 {\n    /// Adds two numbers.\n    a + b\n}\n";
        let mut change = Change::of(&[("src/lib.rs", Some(old), Some(new))]);
        apply(&mut change, &asked("document add", false));
        let now = change.files()[0].now().unwrap();
        assert!(now.starts_with("/// Adds two numbers.\nfn add"), "{now}");
    }
}
