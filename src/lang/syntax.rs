//! Syntax checks that point at the broken line, for the model to fix: what
//! the grammar cannot parse, and what a language's own rule adds (Python: a
//! `def` with no statement in its body, which tree-sitter accepts).

use tree_sitter::Node;

use super::Language;

/// A syntax error in source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    /// The language's name (`Python`).
    pub language: &'static str,
    /// 1-based line of the first error.
    pub line: usize,
    /// What is wrong, when it is more than "a syntax error".
    pub what: Option<String>,
    /// The lines around it, numbered.
    pub excerpt: String,
}

impl std::fmt::Display for SyntaxProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Python's own word, which the models know from tracebacks.
        let error = match self.language {
            "Python" => "SyntaxError".to_owned(),
            other => format!("{other} syntax error"),
        };
        match &self.what {
            Some(what) => write!(
                f,
                "{error} on line {}: {what}:\n{}",
                self.line, self.excerpt
            ),
            None => write!(f, "{error} near line {}:\n{}", self.line, self.excerpt),
        }
    }
}

/// The first syntax error of `text` in `lang`, if any.
pub fn syntax_problem(lang: &Language, text: &str) -> Option<SyntaxProblem> {
    let tree = lang.parse(text)?;
    let root = tree.root_node();
    let error = root.has_error().then(|| {
        let node = first_error(root).unwrap_or(root);
        (node.start_position().row, None)
    });
    let own = lang
        .own_rule
        .and_then(|rule| rule(root))
        .map(|(row, what)| (row, Some(what)));
    let (line, what) = match (error, own) {
        (Some(e), Some(m)) => std::cmp::min_by_key(m, e, |p| p.0),
        (e, m) => e.or(m)?,
    };
    let lines: Vec<&str> = text.lines().collect();
    let from = line.saturating_sub(3);
    let to = (line + 3).min(lines.len());
    let excerpt = (from..to)
        .map(|i| {
            let mark = if i == line { ">" } else { " " };
            format!("{mark}{:>4} | {}", i + 1, lines[i])
        })
        .collect::<Vec<_>>()
        .join("\n");
    Some(SyntaxProblem {
        language: lang.name,
        line: line + 1,
        what,
        excerpt,
    })
}

fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.has_error() {
            return first_error(child).or(Some(child));
        }
    }
    None
}

/// Python's rule: the first compound statement whose body holds no
/// statement (comments are not statements), its row and what Python would
/// say (`def f(x):  # line 5` alone: an outline echoed back by a model).
pub(super) fn python_empty_body(node: Node<'_>) -> Option<(usize, String)> {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.kind() == "block" {
            let mut c = child.walk();
            let statements = child
                .named_children(&mut c)
                .filter(|n| n.kind() != "comment")
                .count();
            if statements == 0 {
                let what = match node.kind() {
                    "function_definition" => "a function definition",
                    "class_definition" => "a class definition",
                    _ => "this line",
                };
                return Some((
                    node.start_position().row,
                    format!("expected an indented block after {what}"),
                ));
            }
        }
        if let Some(found) = python_empty_body(child) {
            return Some(found);
        }
    }
    None
}
