//! Syntax checks that point at the broken line, for the model to fix: what
//! the grammar cannot parse, and what a language's own rule adds (Python: a
//! `def` with no statement in its body; Lua: a keyword as a name; both of
//! which tree-sitter accepts).

use tree_sitter::Node;

pub use super::forms::SyntaxProblem;
use super::language::Language;

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
        .and_then(|rule| rule(root, text))
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
pub(super) fn python_empty_body(root: Node<'_>, _text: &str) -> Option<(usize, String)> {
    empty_body(root)
}

fn empty_body(node: Node<'_>) -> Option<(usize, String)> {
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
        if let Some(found) = empty_body(child) {
            return Some(found);
        }
    }
    None
}

/// Lua's reserved words, which tree-sitter-lua takes as names where a
/// name is expected (`local end = …`).
const LUA_KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// Lua's rule: the first name that is a reserved word, its row and what
/// is wrong (LuaJIT: "'<name>' expected near 'end'").
pub(super) fn lua_keyword_name(root: Node<'_>, text: &str) -> Option<(usize, String)> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.kind() == "identifier" {
            let name = &text[node.byte_range()];
            if LUA_KEYWORDS.contains(&name) {
                return Some((
                    node.start_position().row,
                    format!("`{name}` is a keyword of Lua and cannot be a name"),
                ));
            }
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return None;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}
