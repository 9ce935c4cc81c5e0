//! Putting a model's code into a file of any language. A reply of
//! definitions replaces the ones with the same name (and type) in the file
//! or joins them, its imports are merged, and a reply holding most of the
//! file replaces it. A language whose row has its own rules
//! ([`super::OwnSplice`]: Python's) is spliced by them; every other
//! language is read through its `definitions.scm` and `imports.scm`
//! queries here.

use std::collections::HashSet;

use tree_sitter::{Node, QueryCursor, StreamingIterator, Tree};

pub use super::reply::{dedent, reindent, ReplyForm, SpliceError};
use super::reply::{holds_most_of, method_named, top_level_names, Edits};
use super::{definitions_in, syntax_problem, DefKind, Definition, Language, SyntaxProblem};

mod file;
use file::File;

/// Classifies the code of a reply in `lang` against `target`, the text of
/// the file the task is about (if known).
pub fn classify(lang: &Language, code: &str, target: Option<&str>) -> ReplyForm {
    if let Some(own) = lang.own_splice {
        return (own.classify)(lang, code, target);
    }
    // The program form is Python whatever the file's language.
    if crate::python::calls_host(code) && crate::python::syntax_problem(code).is_none() {
        return ReplyForm::Program(code.to_owned());
    }
    let code = dedent(code);
    if code.trim().is_empty() {
        return ReplyForm::Nothing;
    }
    let Ok(reply) = Reply::read(lang, &code) else {
        // Broken code: splicing names the broken line for the model.
        return ReplyForm::Definitions(code);
    };
    let names: HashSet<&str> = reply.outer().map(|d| d.name.as_str()).collect();
    let Some(target) = target else {
        return match names.is_empty() {
            true => ReplyForm::Nothing,
            false => ReplyForm::Definitions(code),
        };
    };
    let target_top = top_level_names(lang, target);
    let whole = !reply.lone_methods && holds_most_of(&target_top, &names, &code, target);
    if whole || (target_top.is_empty() && names.is_empty()) {
        ReplyForm::WholeFile(code)
    } else {
        ReplyForm::Definitions(code)
    }
}

/// `code` without a last top-level definition the reply was cut off in
/// (at the model's token limit), when what comes before it parses and
/// defines something; `None` when `code` parses or no such cut helps.
pub fn without_cut_tail<'c>(lang: &Language, code: &'c str) -> Option<&'c str> {
    if let Some(own) = lang.own_splice {
        return (own.without_cut_tail)(lang, code);
    }
    syntax_problem(lang, code)?;
    let tree = lang.parse(code)?;
    let root = tree.root_node();
    let last = root.named_child(root.named_child_count().checked_sub(1)?)?;
    let head = &code[..line_start(code, last.start_byte())];
    let parsed = lang.parse(head)?;
    (!parsed.root_node().has_error() && !definitions_in(lang, &parsed, head).is_empty())
        .then_some(head)
}

/// Splices the definitions of `reply` into `target`, both in `lang`.
/// `focus_line` (0-based) is where the user's cursor was: it decides the
/// class a lone method belongs to.
pub fn splice_definitions(
    lang: &Language,
    target: &str,
    reply: &str,
    focus_line: Option<usize>,
) -> Result<String, SpliceError> {
    if let Some(own) = lang.own_splice {
        return (own.splice)(lang, target, reply, focus_line);
    }
    let reply = dedent(reply);
    let reply = Reply::read(lang, &reply).map_err(SpliceError::Syntax)?;
    // A file with nothing in it yet (a new one): the reply is its content.
    if target.trim().is_empty() && !reply.code.trim().is_empty() {
        return Ok(format!("{}\n", reply.code.trim_end()));
    }
    let file = File::read(lang, target).ok_or(SpliceError::NoDefinitions)?;
    let mut edits = Edits::default();
    file.splice_defs(&reply, focus_line, &mut edits);
    file.splice_statements(&reply, &mut edits);
    // An import of a name the file or the reply defines is the model's
    // header echoed back (`import { Item } from './item'` over the file
    // that declares `Item`): it would clash with the definition (tsc's
    // TS2440; a SyntaxError in a module), so it is not carried over.
    let defined = defined_at_top(file.defs.iter().chain(&reply.defs));
    let imports: Vec<String> = reply
        .import_nodes(&defined)
        .map(|n| node_text(n, &reply.code).to_owned())
        .collect();
    file.add_imports(&imports, &mut edits);
    if edits.0.is_empty() {
        return Err(SpliceError::NoDefinitions);
    }
    let mut out = edits.apply(target);
    if target.ends_with('\n') && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// `new`, the whole new text of a file in `lang` that was `old`, with the
/// imports (and Go's package clause) it dropped but still needs put back.
pub fn keep_imports(lang: &Language, old: &str, new: &str) -> String {
    if let Some(own) = lang.own_splice {
        return (own.keep_imports)(lang, old, new);
    }
    let (Some(was), Some(now)) = (File::read(lang, old), File::read(lang, new)) else {
        return new.to_owned();
    };
    // A new import of names the file itself defines clashes with them
    // (as in a definitions reply, see `splice_definitions`): it goes.
    let defined = defined_at_top(&now.defs);
    let clashing: Vec<(usize, usize)> = now
        .imports
        .iter()
        .filter(|i| i.binds_only(|b| defined.contains(b)))
        .map(|i| i.span)
        .filter(|&(a, b)| !old.contains(&new[a..b]))
        .collect();
    if !clashing.is_empty() {
        return keep_imports(lang, old, &without_statements(new, &clashing));
    }
    let mut out = new.to_owned();
    let package = |f: &File<'_>| {
        let root = f.tree.root_node();
        let mut c = root.walk();
        let found = root
            .named_children(&mut c)
            .find(|n| n.kind() == "package_clause");
        found.map(|n| node_text(n, f.text).to_owned())
    };
    if let (Some(p), None) = (package(&was), package(&now)) {
        out = format!("{p}\n\n{}", out.trim_start());
    }
    let bound: HashSet<String> = now.imports.iter().flat_map(|i| i.binds.clone()).collect();
    let modules: HashSet<&str> = now
        .imports
        .iter()
        .flat_map(|i| &i.modules)
        .map(String::as_str)
        .collect();
    let needed: Vec<String> = was
        .imports
        .iter()
        .filter(|i| {
            if i.binds.is_empty() {
                return i.modules.iter().any(|m| !modules.contains(m.as_str()));
            }
            i.binds
                .iter()
                .any(|b| !bound.contains(b) && crate::python::has_identifier(new, b))
        })
        .map(|i| old[i.span.0..i.span.1].to_owned())
        .collect();
    if needed.is_empty() {
        return out;
    }
    match File::read(lang, &out) {
        Some(f) => {
            let mut edits = Edits::default();
            f.add_imports(&needed, &mut edits);
            edits.apply(&out)
        }
        None => out,
    }
}

/// A parsed reply.
struct Reply<'l> {
    code: String,
    tree: Tree,
    defs: Vec<Definition>,
    /// The reply is methods without their class.
    lone_methods: bool,
    lang: &'l Language,
}

impl<'l> Reply<'l> {
    fn read(lang: &'l Language, code: &str) -> Result<Reply<'l>, SyntaxProblem> {
        let problem = syntax_problem(lang, code);
        let Some(tree) = lang.parse(code) else {
            return Err(problem.unwrap_or_else(|| unparsable(lang)));
        };
        let mut reply = Reply {
            code: code.to_owned(),
            defs: definitions_in(lang, &tree, code),
            tree,
            lone_methods: false,
            lang,
        };
        // Methods alone (`add(x) { … }`) parse only inside a class body.
        match super::lone_methods(lang, code) {
            Some(alone) if alone.parse => {
                reply.defs = alone.methods;
                reply.lone_methods = true;
                Ok(reply)
            }
            _ => match problem {
                Some(p) => Err(p),
                None => Ok(reply),
            },
        }
    }

    /// The definitions not inside another one.
    fn outer(&self) -> impl Iterator<Item = &Definition> {
        super::outermost(&self.defs).into_iter()
    }

    /// The top-level nodes that import something (none in methods alone,
    /// whose tree is only their text misread at the top), but those that
    /// bind only names in `defined`.
    fn import_nodes(&self, defined: &HashSet<&str>) -> impl Iterator<Item = Node<'_>> {
        let spans: Vec<(usize, usize)> = match self.lone_methods {
            true => vec![],
            false => import_statements(self.lang, &self.tree, &self.code)
                .into_iter()
                .filter(|i| !i.binds_only(|b| defined.contains(b)))
                .map(|i| i.span)
                .collect(),
        };
        top_nodes(&self.tree)
            .into_iter()
            .filter(move |n| spans.contains(&(n.start_byte(), n.end_byte())))
    }

    /// The text of `d`, dedented, from its attached comments on when
    /// `with_attached`.
    fn text_of(&self, d: &Definition, with_attached: bool) -> String {
        let start = if with_attached { d.start } else { d.own_start };
        dedent(&self.code[start..d.end])
    }
}

fn unparsable(lang: &Language) -> SyntaxProblem {
    SyntaxProblem {
        language: lang.name,
        line: 1,
        what: Some("the parser gave up".into()),
        excerpt: String::new(),
    }
}

/// One import statement of a file: its span, what it makes visible and
/// which modules it names.
pub struct Import {
    pub span: (usize, usize),
    pub binds: Vec<String>,
    pub modules: Vec<String>,
}

impl Import {
    /// Whether it binds names, every one of them `wanted`.
    pub fn binds_only(&self, wanted: impl Fn(&str) -> bool) -> bool {
        !self.binds.is_empty() && self.binds.iter().all(|b| wanted(b))
    }
}

/// The names of those of `defs` that belong to nothing (as
/// [`top_level_names`], for a file already read).
fn defined_at_top<'d>(defs: impl IntoIterator<Item = &'d Definition>) -> HashSet<&'d str> {
    defs.into_iter()
        .filter(|d| d.parent.is_none())
        .map(|d| d.name.as_str())
        .collect()
}

/// `text` without the statements at `spans` (in file order), each with the
/// rest of its line; blank lines a removal leaves at the top go too.
pub fn without_statements(text: &str, spans: &[(usize, usize)]) -> String {
    let mut out = text.to_owned();
    for &(start, end) in spans.iter().rev() {
        let end = end + out[end..].find('\n').map_or(out.len() - end, |i| i + 1);
        out.replace_range(start..end, "");
    }
    if spans.first().is_some_and(|&(start, _)| start == 0) {
        out = out.trim_start_matches(['\r', '\n']).to_owned();
    }
    out
}

/// The top-level import statements of `text` in `lang`.
pub fn imports_of(lang: &Language, text: &str) -> Vec<Import> {
    lang.parse(text)
        .map(|tree| import_statements(lang, &tree, text))
        .unwrap_or_default()
}

/// The top-level import statements of a parsed file, by its imports query.
fn import_statements(lang: &Language, tree: &Tree, text: &str) -> Vec<Import> {
    let Ok(queries) = lang.queries() else {
        return vec![];
    };
    let query = &queries.imports;
    let tops = top_nodes(tree);
    let mut out: Vec<Import> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = matches.next() {
        for c in m.captures {
            let what = query.capture_names()[c.index as usize];
            let Some(top) = tops.iter().find(|t| {
                t.start_byte() <= c.node.start_byte() && c.node.end_byte() <= t.end_byte()
            }) else {
                continue;
            };
            let span = (top.start_byte(), top.end_byte());
            let at = match out.iter().position(|i| i.span == span) {
                Some(at) => at,
                None => {
                    out.push(Import {
                        span,
                        binds: vec![],
                        modules: vec![],
                    });
                    out.len() - 1
                }
            };
            let word = node_text(c.node, text)
                .trim_matches(['"', '\'', '`'])
                .to_owned();
            let list = match what {
                "import.module" => &mut out[at].modules,
                "import.name" | "import.alias" => &mut out[at].binds,
                _ => continue,
            };
            if !list.contains(&word) {
                list.push(word);
            }
        }
    }
    // A Go import binds its path's last part unless it is aliased.
    for i in &mut out {
        if i.binds.is_empty() && lang.id == "go" {
            i.binds = i
                .modules
                .iter()
                .map(|m| m.rsplit('/').next().unwrap_or(m).to_owned())
                .collect();
        }
    }
    out
}

/// The root's named children.
fn top_nodes(tree: &Tree) -> Vec<Node<'_>> {
    let root = tree.root_node();
    let mut c = root.walk();
    root.named_children(&mut c).collect()
}

fn node_text<'a>(n: Node<'_>, src: &'a str) -> &'a str {
    &src[n.start_byte()..n.end_byte()]
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

#[cfg(test)]
#[path = "splice_tests.rs"]
mod tests;
