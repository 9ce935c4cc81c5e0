//! Python source as the agents see it: parsing with tree-sitter-python,
//! syntax checks that point at the broken line, and the definitions
//! (functions, classes, methods) of a file with their spans.

pub mod builtins;
pub mod environment;
pub(crate) mod imports;
pub mod refactor;
pub(crate) mod splice;

pub use splice::{calls_host, dedent, reindent, ReplyForm, SpliceError};

use tree_sitter::Tree;

use crate::lang;

pub use crate::lang::{DefKind, Definition, SyntaxProblem};

/// Parses `text` as Python; `None` only if tree-sitter itself fails.
pub fn parse(text: &str) -> Option<Tree> {
    lang::PYTHON.parse(text)
}

/// The first syntax error of `text` as Python, if any: what tree-sitter
/// cannot parse, and what it accepts but Python does not — a `def`,
/// `class`, `if`, … with no statement in its body.
pub fn syntax_problem(text: &str) -> Option<SyntaxProblem> {
    lang::syntax_problem(&lang::PYTHON, text)
}

/// Whether the definition `def` of `text` starts its body with a
/// docstring.
pub fn has_docstring(text: &str, def: &Definition) -> bool {
    let Some(tree) = parse(text) else {
        return false;
    };
    let Some(name) = tree
        .root_node()
        .descendant_for_byte_range(def.name_start, def.name_end)
    else {
        return false;
    };
    name.parent()
        .and_then(|d| d.child_by_field_name("body"))
        .and_then(|body| body.named_child(0))
        .filter(|first| first.kind() == "expression_statement")
        .and_then(|first| first.named_child(0))
        .is_some_and(|e| e.kind() == "string")
}

/// Splices the definitions of `reply` into the Python file `target`
/// (see [`splice::splice_definitions`]).
pub fn splice_definitions(
    target: &str,
    reply: &str,
    focus_line: Option<usize>,
) -> Result<String, SpliceError> {
    splice::splice_definitions(&lang::PYTHON, target, reply, focus_line)
}

/// Whether `word` occurs in `text` as a whole identifier (not inside a
/// longer one: `mathx` is not in `mathxtra`).
pub fn has_identifier(text: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(word).any(|(i, _)| {
        !ident(text[..i].chars().next_back()) && !ident(text[i + word.len()..].chars().next())
    })
}

/// Every function, class and method of `text`, outermost first, in order.
pub fn definitions(text: &str) -> Vec<Definition> {
    lang::definitions(&lang::PYTHON, text)
}

/// The innermost definition containing 0-based `line`.
pub fn definition_at(defs: &[Definition], line: usize) -> Option<&Definition> {
    defs.iter()
        .filter(|d| d.start_line <= line && line <= d.end_line)
        .min_by_key(|d| d.end_line - d.start_line)
}

#[cfg(test)]
mod tests;
