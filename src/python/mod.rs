//! Python source as the agents see it: parsing with tree-sitter-python,
//! syntax checks that point at the broken line, and the definitions
//! (functions, classes, methods) of a file with their spans.

pub mod refactor;
mod splice;

pub use splice::{classify, dedent, reindent, splice_definitions, ReplyForm, SpliceError};

use tree_sitter::{Node, Parser, Tree};

/// A syntax error in Python text, for the model to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    /// 1-based line of the first error.
    pub line: usize,
    /// What is wrong, when it is more than "a syntax error".
    pub what: Option<String>,
    /// The lines around it, numbered.
    pub excerpt: String,
}

impl std::fmt::Display for SyntaxProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.what {
            Some(what) => write!(
                f,
                "SyntaxError on line {}: {what}:\n{}",
                self.line, self.excerpt
            ),
            None => write!(f, "SyntaxError near line {}:\n{}", self.line, self.excerpt),
        }
    }
}

/// Parses `text`; `None` only if tree-sitter itself fails (it never should).
pub fn parse(text: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    parser.parse(text, None)
}

/// The first syntax error of `text`, if any: what tree-sitter cannot parse,
/// and what it accepts but Python does not — a `def`, `class`, `if`, … with
/// no statement in its body (`def f(x):  # line 5` alone: an outline echoed
/// back by a model).
pub fn syntax_problem(text: &str) -> Option<SyntaxProblem> {
    let tree = parse(text)?;
    let root = tree.root_node();
    let error = root.has_error().then(|| {
        let node = first_error(root).unwrap_or(root);
        (node.start_position().row, None)
    });
    let empty = first_empty_body(root).map(|(row, what)| (row, Some(what)));
    let (line, what) = match (error, empty) {
        (Some(e), Some(m)) => std::cmp::min_by_key(m, e, |p| p.0),
        (e, m) => e.or(m)?,
    };
    let lines: Vec<&str> = text.lines().collect();
    let from = line.saturating_sub(3);
    let to = (line + 3).min(lines.len());
    let excerpt = (from..to)
        .map(|i| {
            format!(
                "{}{:>4} | {}",
                if i == line { ">" } else { " " },
                i + 1,
                lines[i]
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    Some(SyntaxProblem {
        line: line + 1,
        what,
        excerpt,
    })
}

/// The first compound statement whose body holds no statement (comments
/// are not statements): its row and what Python would say.
fn first_empty_body(node: Node<'_>) -> Option<(usize, String)> {
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
        if let Some(found) = first_empty_body(child) {
            return Some(found);
        }
    }
    None
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

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Function,
    Class,
    /// A function defined directly in a class body.
    Method,
}

/// One definition in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    pub kind: DefKind,
    /// The enclosing class or function, if any.
    pub parent: Option<String>,
    /// Byte span, decorators included, from the start of its first line.
    pub start: usize,
    pub end: usize,
    /// 0-based first and last line.
    pub start_line: usize,
    pub end_line: usize,
    /// The indentation of its first line.
    pub indent: String,
}

impl Definition {
    /// `Class.method` for a method, else the name.
    pub fn qualified_name(&self) -> String {
        match (&self.parent, self.kind) {
            (Some(class), DefKind::Method) => format!("{class}.{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// Whether `name`, as a task writes it (`mean`, `Store.add`), is this.
    pub fn is_named(&self, name: &str) -> bool {
        match name.split_once('.') {
            Some((class, own)) => self.name == own && self.parent.as_deref() == Some(class),
            None => self.name == name,
        }
    }
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
    let Some(tree) = parse(text) else {
        return vec![];
    };
    let mut out = Vec::new();
    collect(tree.root_node(), text, None, false, &mut out);
    out
}

fn collect(
    node: Node<'_>,
    text: &str,
    parent: Option<&str>,
    in_class: bool,
    out: &mut Vec<Definition>,
) {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        let (outer, def) = match child.kind() {
            "decorated_definition" => match child.child_by_field_name("definition") {
                Some(d) => (child, d),
                None => continue,
            },
            "function_definition" | "class_definition" => (child, child),
            "block" | "module" => {
                collect(child, text, parent, in_class, out);
                continue;
            }
            _ => continue,
        };
        let Some(name) = def
            .child_by_field_name("name")
            .and_then(|n| n.utf8_text(text.as_bytes()).ok())
        else {
            continue;
        };
        let is_class = def.kind() == "class_definition";
        let kind = match (is_class, in_class) {
            (true, _) => DefKind::Class,
            (false, true) => DefKind::Method,
            (false, false) => DefKind::Function,
        };
        let line_start = text[..outer.start_byte()].rfind('\n').map_or(0, |i| i + 1);
        let indent: String = text[line_start..outer.start_byte()]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        // Extend to the end of the last line (trailing comments stay outside).
        let end = outer.end_byte();
        out.push(Definition {
            name: name.to_owned(),
            kind,
            parent: parent.map(str::to_owned),
            start: line_start,
            end,
            start_line: outer.start_position().row,
            end_line: outer.end_position().row,
            indent,
        });
        if let Some(body) = def.child_by_field_name("body") {
            collect(body, text, Some(name), is_class, out);
        }
    }
}

/// The innermost definition containing 0-based `line`.
pub fn definition_at(defs: &[Definition], line: usize) -> Option<&Definition> {
    defs.iter()
        .filter(|d| d.start_line <= line && line <= d.end_line)
        .min_by_key(|d| d.end_line - d.start_line)
}

#[cfg(test)]
mod tests;
