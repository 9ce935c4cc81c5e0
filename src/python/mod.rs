//! Python source as the agents see it: parsing with tree-sitter-python,
//! syntax checks that point at the broken line, and the definitions
//! (functions, classes, methods) of a file with their spans.

pub mod refactor;
mod splice;

pub use splice::{
    calls_host, classify, dedent, reindent, splice_definitions, ReplyForm, SpliceError,
};

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

/// `code` without a last top-level definition the reply was cut off in
/// (at the model's token limit), when what comes before it parses and
/// defines something; `None` when `code` parses or no such cut helps.
pub fn without_cut_tail(code: &str) -> Option<&str> {
    syntax_problem(code)?;
    let mut starts = code.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| {
        ["def ", "async def ", "class ", "@"]
            .iter()
            .any(|k| code[i..].starts_with(k))
    });
    let last = starts.next_back()?;
    let head = &code[..last];
    (syntax_problem(head).is_none() && !definitions(head).is_empty()).then_some(head)
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
