//! What every language's splicer shares: the shape of a model's reply,
//! why it could not be spliced, and the text tools (indentation, the
//! names a file defines, edits by byte range). A leaf below the generic
//! splicer ([`super::splice`]) and Python's own ([`crate::python`]).

use std::collections::HashSet;

use super::definitions::{definitions, DefKind, Definition};
pub use super::forms::{ReplyForm, SpliceError};
use super::language::Language;

/// The method `name` a reply means: the one of `class` (the class at the
/// cursor), else the only method of that name.
pub(crate) fn method_named<'d>(
    defs: &'d [Definition],
    name: &str,
    class: Option<&str>,
) -> Option<&'d Definition> {
    let methods: Vec<&Definition> = defs
        .iter()
        .filter(|d| d.kind == DefKind::Method && d.name == name)
        .collect();
    class
        .and_then(|c| {
            methods
                .iter()
                .find(|m| m.parent.as_deref() == Some(c))
                .copied()
        })
        .or_else(|| (methods.len() == 1).then(|| methods[0]))
}

/// The names of `text`'s definitions that belong to nothing.
pub(crate) fn top_level_names(lang: &Language, text: &str) -> Vec<String> {
    definitions(lang, text)
        .into_iter()
        .filter(|d| d.parent.is_none())
        .map(|d| d.name)
        .collect()
}

/// Whether a reply `code` defining `names` is most of the file `target`,
/// whose top-level definitions are `target_top`: then it is the whole new
/// file rather than definitions to splice.
pub(crate) fn holds_most_of(
    target_top: &[String],
    names: &HashSet<&str>,
    code: &str,
    target: &str,
) -> bool {
    let covered = target_top
        .iter()
        .filter(|n| names.contains(n.as_str()))
        .count();
    let most_defs = target_top.len() >= 2 && covered * 10 >= target_top.len() * 7;
    most_defs && code.trim().len() * 10 >= target.trim().len() * 6
}

/// Removes the indentation common to every non-blank line.
pub fn dedent(code: &str) -> String {
    let common = code
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    if common == 0 {
        return code.to_owned();
    }
    let mut out: Vec<&str> = Vec::new();
    for l in code.lines() {
        out.push(if l.len() >= common {
            &l[common..]
        } else {
            l.trim_start()
        });
    }
    let mut s = out.join("\n");
    if code.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// `text` with `indent` before every non-blank line, lines joined with
/// `newline`.
pub fn reindent(text: &str, indent: &str, newline: &str) -> String {
    if indent.is_empty() && newline == "\n" {
        return text.to_owned();
    }
    text.lines()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                format!("{indent}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join(newline)
}

/// Text to replace or insert: (start, end, new text), byte offsets.
#[derive(Default)]
pub(crate) struct Edits(pub(crate) Vec<(usize, usize, String)>);

impl Edits {
    pub(crate) fn push(&mut self, start: usize, end: usize, text: String) {
        self.0.push((start, end, text));
    }

    /// `text` with the edits made, in file order; an edit starting inside
    /// an earlier one is dropped (the outer edit already carries it).
    /// Insertions at one point keep their order, and come before a
    /// replacement starting there.
    pub(crate) fn apply(mut self, text: &str) -> String {
        self.0.sort_by_key(|(s, e, _)| (*s, *e));
        let mut kept: Vec<(usize, usize, String)> = Vec::new();
        for e in self.0 {
            if kept.last().is_some_and(|last| e.0 < last.1) {
                continue;
            }
            kept.push(e);
        }
        let mut out = text.to_owned();
        for (s, e, t) in kept.into_iter().rev() {
            out.replace_range(s..e, &t);
        }
        out
    }
}
