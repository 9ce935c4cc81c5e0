//! Using a reply that carries code but is not a program: definitions
//! (functions, methods, classes) replace the ones with the same name (and
//! class) in the target file, or are added when new; imports and
//! module-level assignments are merged; a reply holding most of the file
//! replaces it. Small models answer this way far more reliably than with a
//! program, so their answers are used instead of refused.

use std::collections::HashSet;

use tree_sitter::Node;

use crate::lang::definitions::{definitions, DefKind, Definition};
use crate::lang::language::Language;
pub use crate::lang::reply::{dedent, reindent, ReplyForm, SpliceError};
use crate::lang::reply::{holds_most_of, method_named, top_level_names, Edits};
use crate::lang::syntax::syntax_problem;

const HOST_CALLS: &[&str] = &[
    "write_file(",
    "submit_result(",
    "delete_file(",
    "read_file(",
    "list_dir(",
    "file_exists(",
    "search_files(",
    "get_file_tree(",
    "get_task(",
    "ask_llm(",
    // Remora node tools.
    "rewrite_self(",
    "message_node(",
    "ask_parent(",
    "propose_new_node(",
    "read_node(",
    "get_my_callers(",
    "get_my_callees(",
];

/// Whether `code` calls a host function: a program, not definitions.
pub fn calls_host(code: &str) -> bool {
    HOST_CALLS.iter().any(|c| {
        code.match_indices(c).any(|(i, _)| {
            let before = code[..i].chars().next_back();
            !before.is_some_and(|b| b.is_alphanumeric() || b == '_' || b == '.')
                && !code[..i].trim_end().ends_with("def")
        })
    })
}

/// Classifies the code of a reply against `target`, the text of the file
/// the task is about (if known).
pub fn classify(lang: &Language, code: &str, target: Option<&str>) -> ReplyForm {
    if calls_host(code) {
        return ReplyForm::Program(code.to_owned());
    }
    let code = dedent(code);
    let items = items(lang, &code);
    let def_names: HashSet<&str> = items
        .iter()
        .filter_map(|i| match i {
            Item::Def { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let Some(target) = target else {
        return if !def_names.is_empty() {
            ReplyForm::Definitions(code)
        } else if !code.trim().is_empty() && syntax_problem(lang, &code).is_none() {
            ReplyForm::Program(code)
        } else {
            ReplyForm::Nothing
        };
    };
    let target_top = top_level_names(lang, target);
    // Signatures without bodies (an outline echoed back) make it a partial answer.
    let stubs = without_stubs(lang, &code).1 > 0;
    if holds_most_of(&target_top, &def_names, &code, target) && !stubs {
        return ReplyForm::WholeFile(code);
    }
    let usable = items
        .iter()
        .any(|i| matches!(i, Item::Def { .. } | Item::Assign { .. } | Item::Import(_)));
    let broken_definitions = syntax_problem(lang, &code).is_some()
        && code
            .lines()
            .any(|l| l.trim_start().starts_with("def ") || l.trim_start().starts_with("class "));
    if usable || broken_definitions {
        // Broken definitions too: splicing reports the syntax error with its line.
        ReplyForm::Definitions(code)
    } else if code.trim().is_empty() || syntax_problem(lang, &code).is_some() {
        ReplyForm::Nothing
    } else if target_top.is_empty() {
        // A file without definitions (a script, a package __init__): the reply is the file.
        ReplyForm::WholeFile(code)
    } else {
        // Statements only: a program that forgot its host calls; running it
        // tells the model exactly what is missing.
        ReplyForm::Program(code)
    }
}

/// `code` without a last top-level definition the reply was cut off in
/// (at the model's token limit), when what comes before it parses and
/// defines something; `None` when `code` parses or no such cut helps.
pub fn without_cut_tail<'a>(lang: &Language, code: &'a str) -> Option<&'a str> {
    syntax_problem(lang, code)?;
    let mut starts = code.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| {
        ["def ", "async def ", "class ", "@"]
            .iter()
            .any(|k| code[i..].starts_with(k))
    });
    let last = starts.next_back()?;
    let head = &code[..last];
    (syntax_problem(lang, head).is_none() && !definitions(lang, head).is_empty()).then_some(head)
}

/// One top-level statement of a reply that can go into a file.
#[derive(Debug, Clone)]
enum Item {
    Def {
        name: String,
        is_class: bool,
        text: String,
    },
    Import(String),
    Assign {
        name: String,
        text: String,
    },
}

pub(super) fn node_text<'a>(n: Node<'_>, src: &'a str) -> &'a str {
    &src[n.start_byte()..n.end_byte()]
}

fn items(lang: &Language, code: &str) -> Vec<Item> {
    let Some(tree) = lang.parse(code) else {
        return vec![];
    };
    let root = tree.root_node();
    let mut out = Vec::new();
    let mut cursor = root.walk();
    for child in root.children(&mut cursor) {
        if child.has_error() {
            continue;
        }
        match child.kind() {
            "function_definition" | "class_definition" | "decorated_definition" => {
                let def = if child.kind() == "decorated_definition" {
                    child.child_by_field_name("definition")
                } else {
                    Some(child)
                };
                let Some(def) = def else { continue };
                let Some(name) = def.child_by_field_name("name") else {
                    continue;
                };
                out.push(Item::Def {
                    name: node_text(name, code).to_owned(),
                    is_class: def.kind() == "class_definition",
                    text: node_text(child, code).to_owned(),
                });
            }
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                out.push(Item::Import(node_text(child, code).to_owned()));
            }
            "expression_statement" => {
                let Some(first) = child.named_child(0) else {
                    continue;
                };
                if first.kind() == "assignment" {
                    if let Some(left) = first
                        .child_by_field_name("left")
                        .filter(|l| l.kind() == "identifier")
                    {
                        out.push(Item::Assign {
                            name: node_text(left, code).to_owned(),
                            text: node_text(child, code).to_owned(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Top-level statements of the target that matter for placement.
struct Layout {
    /// End of the last top-level import (byte offset), if any.
    imports_end: Option<usize>,
    /// End of the module docstring, if any.
    docstring_end: Option<usize>,
    /// Start of `if __name__ == "__main__":`, if any.
    main_guard: Option<usize>,
    /// Top-level assignments: (name, start, end).
    assigns: Vec<(String, usize, usize)>,
}

/// The names `text` assigns at its top level (`VERSION = "1.0"`).
pub(super) fn assigned_names(lang: &Language, text: &str) -> Vec<String> {
    layout(lang, text)
        .assigns
        .into_iter()
        .map(|(name, _, _)| name)
        .collect()
}

fn layout(lang: &Language, text: &str) -> Layout {
    let mut l = Layout {
        imports_end: None,
        docstring_end: None,
        main_guard: None,
        assigns: vec![],
    };
    let Some(tree) = lang.parse(text) else {
        return l;
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    for (i, child) in root.children(&mut cursor).enumerate() {
        match child.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                l.imports_end = Some(child.end_byte())
            }
            "expression_statement" => {
                let Some(first) = child.named_child(0) else {
                    continue;
                };
                if i == 0 && first.kind() == "string" {
                    l.docstring_end = Some(child.end_byte());
                } else if first.kind() == "assignment" {
                    if let Some(left) = first
                        .child_by_field_name("left")
                        .filter(|x| x.kind() == "identifier")
                    {
                        l.assigns.push((
                            node_text(left, text).to_owned(),
                            child.start_byte(),
                            child.end_byte(),
                        ));
                    }
                }
            }
            "if_statement" if node_text(child, text).contains("__name__") => {
                l.main_guard.get_or_insert(child.start_byte());
            }
            _ => {}
        }
    }
    l
}

/// The class body's docstring statement span, if any.
fn class_docstring(lang: &Language, text: &str, class: &Definition) -> Option<(usize, usize)> {
    let tree = lang.parse(text)?;
    let node = tree
        .root_node()
        .descendant_for_byte_range(class.end.saturating_sub(1), class.end.saturating_sub(1))?;
    let mut n = Some(node);
    while let Some(cur) = n {
        if cur.kind() == "class_definition"
            && cur.start_byte() >= class.start
            && cur.end_byte() == class.end
        {
            let body = cur.child_by_field_name("body")?;
            let first = body.named_child(0)?;
            if first.kind() == "expression_statement"
                && first.named_child(0).is_some_and(|s| s.kind() == "string")
            {
                return Some((first.start_byte(), first.end_byte()));
            }
            return None;
        }
        n = cur.parent();
    }
    None
}

/// The function definition in `text` (decorators looked through) and the
/// statements of its body.
fn function_body(tree: &tree_sitter::Tree) -> Option<Vec<Node<'_>>> {
    let mut def = tree.root_node().named_child(0)?;
    if def.kind() == "decorated_definition" {
        def = def.child_by_field_name("definition")?;
    }
    if def.kind() != "function_definition" {
        return None;
    }
    let body = def.child_by_field_name("body")?;
    let mut c = body.walk();
    let statements = body
        .named_children(&mut c)
        .filter(|n| n.kind() != "comment")
        .collect();
    Some(statements)
}

fn is_docstring(n: Node<'_>) -> bool {
    n.kind() == "expression_statement" && n.named_child(0).is_some_and(|s| s.kind() == "string")
}

/// `new` (a dedented function), unless it is only a docstring (bar `...`
/// or `pass`) standing for `old`'s real body: then `old` with that
/// docstring. Small models asked for a docstring often send just that, and
/// replacing the body would drop the code.
fn keep_body(lang: &Language, old: &str, new: &str) -> String {
    let merged = (|| {
        let new_tree = lang.parse(new)?;
        let new_body = function_body(&new_tree)?;
        let (doc, rest) = new_body.split_first()?;
        let filler = |n: &Node<'_>| {
            n.kind() == "pass_statement"
                || (n.kind() == "expression_statement"
                    && n.named_child(0).is_some_and(|e| e.kind() == "ellipsis"))
        };
        if !is_docstring(*doc) || !rest.iter().all(filler) {
            return None;
        }
        let old_tree = lang.parse(old)?;
        let old_body = function_body(&old_tree)?;
        let first = *old_body.first()?;
        if old_body.iter().all(|n| is_docstring(*n) || filler(n)) {
            return None; // the old body was a stub too: the new one wins
        }
        // The docstring's continuation lines keep their indentation
        // relative to the body they move into.
        let new_indent = doc.start_position().column;
        let old_indent = " ".repeat(first.start_position().column);
        let doc_text = node_text(*doc, new)
            .split('\n')
            .enumerate()
            .map(|(i, line)| {
                if i == 0 {
                    return line.to_owned();
                }
                let cut = line.len() - line.trim_start().len();
                let rel = &line[cut.min(new_indent)..];
                if line.trim().is_empty() {
                    String::new()
                } else {
                    format!("{old_indent}{rel}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut out = old.to_owned();
        if is_docstring(first) {
            out.replace_range(first.start_byte()..first.end_byte(), &doc_text);
        } else {
            out.insert_str(first.start_byte(), &format!("{doc_text}\n{old_indent}"));
        }
        Some(out)
    })();
    merged.unwrap_or_else(|| new.to_owned())
}

fn first_param(def_text: &str) -> Option<String> {
    let open = def_text.find('(')?;
    let rest = &def_text[open + 1..];
    let end = rest.find([',', ')', ':', '='])?;
    Some(rest[..end].trim().to_owned())
}

/// `code` without its definitions that have no statement in their body
/// (`def f(x):  # line 12` alone), and how many there were. A class left
/// with nothing but such methods goes too.
fn without_stubs(lang: &Language, code: &str) -> (String, usize) {
    let mut code = code.to_owned();
    let mut removed = 0;
    // A class emptied by one pass is a stub in the next.
    for _ in 0..3 {
        let Some(tree) = lang.parse(&code) else {
            break;
        };
        let mut spans = Vec::new();
        stub_spans(tree.root_node(), &mut spans);
        if spans.is_empty() {
            break;
        }
        removed += spans.len();
        for (start, end) in spans.into_iter().rev() {
            // Whole lines: from the start of the `def` line to the end of its last.
            let start = code[..start].rfind('\n').map_or(0, |i| i + 1);
            let end = code[end..].find('\n').map_or(code.len(), |i| end + i + 1);
            code.replace_range(start..end, "");
        }
    }
    (code, removed)
}

fn stub_spans(node: Node<'_>, out: &mut Vec<(usize, usize)>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let def = match child.kind() {
            "decorated_definition" => child.child_by_field_name("definition"),
            "function_definition" | "class_definition" => Some(child),
            _ => None,
        };
        match def.and_then(|d| d.child_by_field_name("body").map(|b| (d, b))) {
            Some((_, body)) if !has_statement(body) => {
                out.push((child.start_byte(), child.end_byte()));
            }
            Some((_, body)) => stub_spans(body, out),
            None => {}
        }
    }
}

fn has_statement(block: Node<'_>) -> bool {
    let mut cursor = block.walk();
    let found = block
        .named_children(&mut cursor)
        .any(|n| n.kind() != "comment");
    found
}

/// Splices the definitions of `reply` into `target`. `focus_line` (0-based)
/// is where the user's cursor was: it decides the class a lone method
/// belongs to.
pub fn splice_definitions(
    lang: &Language,
    target: &str,
    reply: &str,
    focus_line: Option<usize>,
) -> Result<String, SpliceError> {
    let reply = dedent(reply);
    // Signatures without bodies are an outline echoed back, not a change:
    // the definitions they name stay as they are.
    let (reply, stubs) = without_stubs(lang, &reply);
    if let Some(problem) = syntax_problem(lang, &reply) {
        return Err(SpliceError::Syntax(problem));
    }
    // A file with nothing in it yet (a new one): the reply is its content.
    if target.trim().is_empty() && !reply.trim().is_empty() {
        return Ok(format!("{}\n", reply.trim_end()));
    }
    let mut items = items(lang, &reply);
    if items.is_empty() {
        return Err(if stubs > 0 {
            SpliceError::OnlyOutline
        } else {
            SpliceError::NoDefinitions
        });
    }
    // A definition given twice: the last one wins.
    let mut seen = HashSet::new();
    items.reverse();
    items.retain(|i| match i {
        Item::Def { name, .. } => seen.insert(name.clone()),
        _ => true,
    });
    items.reverse();

    let mut splice = Splice::new(lang, target, focus_line);
    for item in &items {
        match item {
            Item::Import(text) => {
                if !target.lines().any(|l| l.trim() == text.trim()) {
                    splice.import_inserts.push(text.clone());
                }
            }
            Item::Assign { name, text } => {
                match splice.lay.assigns.iter().find(|(n, _, _)| n == name) {
                    Some((_, s, e)) => splice.edits.push((*s, *e, text.clone())),
                    None => splice.import_inserts.push(text.clone()),
                }
            }
            Item::Def {
                name,
                is_class: false,
                text,
            } => splice.function(name, text),
            Item::Def {
                name,
                is_class: true,
                text,
            } => splice.class(name, text),
        }
    }
    splice.finish()
}

/// The edits that splice a reply's items into `target`, gathered item by
/// item and applied at once.
struct Splice<'t> {
    lang: &'t Language,
    target: &'t str,
    defs: Vec<Definition>,
    lay: Layout,
    /// The class a lone method belongs to: the one the cursor is in, else
    /// the file's only class.
    focus_class: Option<Definition>,
    /// `(start, end, text)` replacements of `target`.
    edits: Vec<(usize, usize, String)>,
    /// New top-level definitions, added before a main guard or at the end.
    top_inserts: Vec<String>,
    /// New imports and assignments, added after the imports.
    import_inserts: Vec<String>,
}

impl<'t> Splice<'t> {
    fn new(lang: &'t Language, target: &'t str, focus_line: Option<usize>) -> Self {
        let defs = definitions(lang, target);
        let focus_class = focus_line
            .and_then(|line| {
                defs.iter().rfind(|d| {
                    d.kind == DefKind::Class && d.start_line <= line && line <= d.end_line
                })
            })
            .or_else(|| {
                let classes: Vec<&Definition> = defs
                    .iter()
                    .filter(|d| d.kind == DefKind::Class && d.parent.is_none())
                    .collect();
                (classes.len() == 1).then(|| classes[0])
            })
            .cloned();
        Splice {
            lang,
            target,
            lay: layout(lang, target),
            defs,
            focus_class,
            edits: Vec::new(),
            top_inserts: Vec::new(),
            import_inserts: Vec::new(),
        }
    }

    /// A function of the reply: it replaces the method or the function of
    /// its name (a method when it takes `self`), else goes into the focus
    /// class (a method) or the module.
    fn function(&mut self, name: &str, text: &str) {
        let (target, defs) = (self.target, &self.defs);
        let top = defs
            .iter()
            .find(|d| d.parent.is_none() && d.kind == DefKind::Function && d.name == name);
        let focus = self.focus_class.as_ref();
        let method = method_named(defs, name, focus.map(|c| c.name.as_str()));
        let is_method_like = matches!(first_param(text).as_deref(), Some("self" | "cls"));
        let replace = |d: &Definition| {
            let merged = keep_body(self.lang, &dedent(&target[d.start..d.end]), text);
            (d.start, d.end, reindent(&merged, &d.indent, "\n"))
        };
        let edit = if let (Some(m), true) = (method, is_method_like || top.is_none()) {
            replace(m)
        } else if let Some(t) = top {
            replace(t)
        } else if let (true, Some(c)) = (is_method_like, focus) {
            let indent = method_indent(defs, c);
            let added = format!("\n\n{}", reindent(text, &indent, "\n"));
            (c.end, c.end, added)
        } else {
            self.top_inserts.push(text.to_owned());
            return;
        };
        self.edits.push(edit);
    }

    /// A class of the reply: the whole class when it has every method of
    /// the one in `target`, else merged method by method with its
    /// docstring; a new class goes into the module.
    fn class(&mut self, name: &str, text: &str) {
        let (target, defs) = (self.target, &self.defs);
        let Some(class) = defs
            .iter()
            .find(|d| d.kind == DefKind::Class && d.name == name)
        else {
            self.top_inserts.push(text.to_owned());
            return;
        };
        let methods_of = |defs: &'_ [Definition]| -> Vec<Definition> {
            defs.iter()
                .filter(|d| d.kind == DefKind::Method && d.parent.as_deref() == Some(name))
                .cloned()
                .collect()
        };
        let target_methods = methods_of(defs);
        let reply_defs = definitions(self.lang, text);
        let reply_methods = methods_of(&reply_defs);
        let all_there = target_methods
            .iter()
            .all(|t| reply_methods.iter().any(|r| r.name == t.name));
        if all_there {
            let whole = reindent(text, &class.indent, "\n");
            self.edits.push((class.start, class.end, whole));
            return;
        }
        // A partial class: merge method by method, and its docstring.
        let indent = method_indent(defs, class);
        let mut edits = Vec::new();
        for rm in &reply_methods {
            let body = dedent(&text[rm.start..rm.end]);
            match target_methods.iter().find(|t| t.name == rm.name) {
                Some(t) => {
                    let merged = keep_body(self.lang, &dedent(&target[t.start..t.end]), &body);
                    edits.push((t.start, t.end, reindent(&merged, &t.indent, "\n")))
                }
                None => edits.push((
                    class.end,
                    class.end,
                    format!("\n\n{}", reindent(&body, &indent, "\n")),
                )),
            }
        }
        let reply_class = reply_defs
            .iter()
            .find(|d| d.kind == DefKind::Class && d.name == name);
        if let Some(edit) =
            reply_class.and_then(|rc| docstring_edit(self.lang, target, class, text, rc, &indent))
        {
            edits.push(edit);
        }
        self.edits.extend(edits);
    }

    /// `target` with every edit made, the new imports after its imports
    /// and the new definitions before its main guard or at its end.
    fn finish(mut self) -> Result<String, SpliceError> {
        let (target, lay) = (self.target, &self.lay);
        let import_at = lay.imports_end.or(lay.docstring_end);
        if !self.import_inserts.is_empty() {
            let block = self.import_inserts.join("\n");
            match import_at {
                Some(at) => self.edits.push((at, at, format!("\n{block}"))),
                None => self.edits.push((0, 0, format!("{block}\n\n\n"))),
            }
        }
        let new_def_at = lay.main_guard.unwrap_or(target.trim_end().len());
        if !self.top_inserts.is_empty() {
            let block = self.top_inserts.join("\n\n\n");
            let text = match lay.main_guard {
                Some(_) => format!("{block}\n\n\n"),
                None => format!("\n\n\n{block}"),
            };
            self.edits.push((new_def_at, new_def_at, text));
        }
        if self.edits.is_empty() {
            return Err(SpliceError::NoDefinitions);
        }
        let mut out = Edits(self.edits).apply(target);
        if target.ends_with('\n') && !out.ends_with('\n') {
            out.push('\n');
        }
        Ok(out)
    }
}

/// The edit that gives `class` of `target` the docstring of `reply_class`
/// in `reply`, if the reply's class has one.
fn docstring_edit(
    lang: &Language,
    target: &str,
    class: &Definition,
    reply: &str,
    reply_class: &Definition,
    indent: &str,
) -> Option<(usize, usize, String)> {
    let (ds, de) = class_docstring(lang, reply, reply_class)?;
    let doc = reindent(&dedent(&reply[ds..de]), indent, "\n");
    match class_docstring(lang, target, class) {
        Some((ts, te)) => {
            let line_start = target[..ts].rfind('\n').map_or(0, |i| i + 1);
            Some((line_start, te, doc))
        }
        None => {
            let header_end = target[class.start..].find(":\n")? + class.start + 1;
            Some((header_end, header_end, format!("\n{doc}")))
        }
    }
}

fn method_indent(defs: &[Definition], class: &Definition) -> String {
    defs.iter()
        .find(|d| d.kind == DefKind::Method && d.parent.as_deref() == Some(class.name.as_str()))
        .map_or_else(|| format!("{}    ", class.indent), |m| m.indent.clone())
}

#[cfg(test)]
#[path = "splice_tests.rs"]
mod tests;
