//! Putting a model's code into a file of any language. A reply of
//! definitions replaces the ones with the same name (and type) in the file
//! or joins them, its imports are merged, and a reply holding most of the
//! file replaces it. Python keeps its own, richer rules
//! ([`crate::python::splice_definitions`]); every other language is read
//! through its `definitions.scm` and `imports.scm` queries here.

use std::collections::HashSet;

use tree_sitter::{Node, QueryCursor, StreamingIterator, Tree};

pub use super::reply::{dedent, reindent, ReplyForm, SpliceError};
use super::reply::{holds_most_of, method_named, top_level_names, Edits};
use super::{definitions_in, syntax_problem, DefKind, Definition, Language, SyntaxProblem};

/// Classifies the code of a reply in `lang` against `target`, the text of
/// the file the task is about (if known).
pub fn classify(lang: &Language, code: &str, target: Option<&str>) -> ReplyForm {
    if lang.id == "python" {
        return crate::python::classify(code, target);
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
    if lang.id == "python" {
        return crate::python::without_cut_tail(code);
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
    if lang.id == "python" {
        return crate::python::splice_definitions(target, reply, focus_line);
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
    if lang.id == "python" {
        return crate::python::refactor::keep_imports(old, new);
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

/// Where a type's methods live in the file: a class body, or a block of
/// its own (a Rust `impl`).
struct Holder {
    /// The type the methods belong to.
    name: String,
    /// Its text up to its body (`impl Display for Stack`), spaces squeezed.
    header: String,
    start: usize,
    end: usize,
    /// The end and indentation of its last method, if it has one.
    last_method: Option<(usize, String)>,
}

/// The file a reply goes into, parsed.
struct File<'t> {
    lang: &'t Language,
    text: &'t str,
    tree: Tree,
    defs: Vec<Definition>,
    imports: Vec<Import>,
}

impl<'t> File<'t> {
    fn read(lang: &'t Language, text: &'t str) -> Option<File<'t>> {
        let tree = lang.parse(text)?;
        let defs = definitions_in(lang, &tree, text);
        let imports = import_statements(lang, &tree, text);
        Some(File {
            lang,
            text,
            tree,
            defs,
            imports,
        })
    }

    /// Where new top-level code goes: after the last top-level statement
    /// holding a definition (so before a closing `return M` or
    /// `module.exports = …`), else at the end.
    fn new_top_at(&self) -> usize {
        top_nodes(&self.tree)
            .iter()
            .rev()
            .find(|n| {
                self.defs
                    .iter()
                    .any(|d| n.start_byte() <= d.name_start && d.name_end <= n.end_byte())
            })
            .map_or(self.text.trim_end().len(), |n| n.end_byte())
    }

    /// The class bodies and impl blocks of the file.
    fn holders(&self) -> Vec<Holder> {
        let mut out = Vec::new();
        let methods_in = |start: usize, end: usize, owner: Option<&str>| -> Vec<&Definition> {
            self.defs
                .iter()
                .filter(|m| {
                    m.kind == DefKind::Method
                        && start <= m.start
                        && m.end <= end
                        && owner.is_none_or(|o| m.parent.as_deref() == Some(o))
                })
                .collect()
        };
        let header = |from: usize, to: usize| {
            self.text[from..to]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        for c in self.defs.iter().filter(|d| d.kind == DefKind::Class) {
            let inside = methods_in(c.start, c.end, Some(&c.name));
            let is_class = self.lang.method_context.is_some()
                && self.text[c.own_start..c.name_start].contains("class");
            if inside.is_empty() && !is_class {
                continue;
            }
            let body = self.text[c.name_start..c.end]
                .find('{')
                .map_or(c.end, |i| c.name_start + i);
            out.push(Holder {
                name: c.name.clone(),
                header: header(c.own_start, body),
                start: c.start,
                end: c.end,
                last_method: inside.last().map(|m| (m.end, m.indent.clone())),
            });
        }
        // Blocks that are no definition but hold methods: a Rust `impl`.
        for n in top_nodes(&self.tree) {
            let (start, end) = (n.start_byte(), n.end_byte());
            if self
                .defs
                .iter()
                .any(|d| d.name_start >= start && d.end == end)
            {
                continue;
            }
            let inside = methods_in(start, end, None);
            let Some(name) = inside.first().and_then(|m| m.parent.clone()) else {
                continue;
            };
            let body = n
                .child_by_field_name("body")
                .map_or(end, |b| b.start_byte());
            out.push(Holder {
                name,
                header: header(start, body),
                start,
                end,
                last_method: inside.last().map(|m| (m.end, m.indent.clone())),
            });
        }
        out
    }

    /// The definition of the file the reply's `d` stands for.
    fn counterpart(
        &self,
        d: &Definition,
        parent: Option<&str>,
        method_like: bool,
        focus: Option<&Holder>,
    ) -> Option<&Definition> {
        if let Some(p) = parent {
            return self
                .defs
                .iter()
                .find(|t| t.name == d.name && t.parent.as_deref() == Some(p));
        }
        let top = self
            .defs
            .iter()
            .find(|t| t.parent.is_none() && t.name == d.name && t.kind == d.kind);
        let method = method_named(&self.defs, &d.name, focus.map(|h| h.name.as_str()));
        if method_like {
            method.or(top)
        } else {
            top.or(method)
        }
    }

    /// Replaces `old` with `new_text` (dedented); `new_attached` says
    /// whether the new text carries its own doc comments and attributes:
    /// when not, the old ones stay.
    fn replace(&self, old: &Definition, new_text: &str, new_attached: bool, edits: &mut Edits) {
        let start = if new_attached {
            old.start
        } else {
            old.own_start
        };
        let indent =
            &self.text[start..][..self.text[start..].len() - self.text[start..].trim_start().len()];
        let indent = if indent.contains('\n') {
            &old.indent
        } else {
            indent
        };
        let text = reindent(new_text.trim_end(), indent, "\n");
        edits.push(start, old.end, text);
    }

    /// Adds `method` (dedented) to `holder`: after its last method, else
    /// inside its braces.
    fn add_method(&self, holder: &Holder, method: &str, edits: &mut Edits) {
        let method = method.trim_end();
        if let Some((end, indent)) = &holder.last_method {
            edits.push(
                *end,
                *end,
                format!("\n\n{}", reindent(method, indent, "\n")),
            );
            return;
        }
        let Some(close) = self.text[..holder.end]
            .rfind('}')
            .filter(|&c| c >= holder.start)
        else {
            return;
        };
        let outer = &self.text[line_start(self.text, holder.start)..holder.start];
        let outer: String = outer.chars().take_while(|c| c.is_whitespace()).collect();
        let indent = format!("{outer}    ");
        let body = reindent(method, &indent, "\n");
        let line = line_start(self.text, close);
        if self.text[line..close].trim().is_empty() {
            edits.push(line, line, format!("{body}\n"));
        } else {
            edits.push(close, close, format!("\n{body}\n{outer}"));
        }
    }

    /// Splices the reply's definitions: each replaces its counterpart or
    /// joins the file beside its kin.
    fn splice_defs(&self, reply: &Reply<'_>, focus_line: Option<usize>, edits: &mut Edits) {
        let holders = self.holders();
        let focus = focus_line
            .and_then(|line| {
                holders
                    .iter()
                    .filter(|h| {
                        let (s, e) = (self.line_of(h.start), self.line_of(h.end));
                        s <= line && line <= e
                    })
                    .min_by_key(|h| h.end - h.start)
            })
            .or_else(|| {
                // The only class, else the only block that is not a trait's
                // (`impl Display for Stack` is not where `Stack.len` goes).
                let own: Vec<&Holder> = holders
                    .iter()
                    .filter(|h| !h.header.contains(" for "))
                    .collect();
                match (holders.as_slice(), own.as_slice()) {
                    ([only], _) => Some(only),
                    (_, [only]) => Some(*only),
                    _ => None,
                }
            });
        let new_top_at = self.new_top_at();
        let mut top_inserts: Vec<String> = Vec::new();
        // New methods of a Rust impl the file does not have: the block
        // comes with them, once.
        let mut new_blocks: Vec<(String, Vec<String>)> = Vec::new();
        // A definition given twice: the last one wins.
        let outer: Vec<&Definition> = reply.outer().collect();
        let mut seen = HashSet::new();
        let outer: Vec<&Definition> = outer
            .into_iter()
            .rev()
            .filter(|d| seen.insert((d.parent.clone(), d.name.clone())))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        for d in outer {
            let parent = d.parent.as_deref();
            let method_like = reply.lone_methods || takes_self(&reply.code[d.name_end..d.end]);
            let attached = d.start < d.own_start;
            match self.counterpart(d, parent, method_like, focus) {
                Some(old) if d.kind == DefKind::Class && old.kind == DefKind::Class => {
                    self.merge_class(reply, d, old, &holders, edits)
                }
                Some(old) => self.replace(old, &reply.text_of(d, attached), attached, edits),
                None => {
                    let text = reply.text_of(d, true);
                    // Its container in the reply (a Rust impl block).
                    let block = reply_block(reply, d);
                    let home = match (parent, &block) {
                        (Some(p), Some((header, _))) => holders
                            .iter()
                            .find(|h| h.name == p && &h.header == header)
                            .or_else(|| holders.iter().find(|h| h.name == p && header.is_empty())),
                        (Some(p), None) => holders.iter().find(|h| h.name == p),
                        (None, _) if method_like => focus,
                        (None, _) => None,
                    };
                    match (home, block) {
                        (Some(h), _) => self.add_method(h, &text, edits),
                        (None, Some((header, _))) if !header.is_empty() => {
                            match new_blocks.iter_mut().find(|(h, _)| *h == header) {
                                Some((_, methods)) => methods.push(text),
                                None => new_blocks.push((header, vec![text])),
                            }
                        }
                        (None, _) => top_inserts.push(text.trim_end().to_owned()),
                    }
                }
            }
        }
        for (header, methods) in new_blocks {
            let body: Vec<String> = methods
                .iter()
                .map(|m| reindent(m.trim_end(), "    ", "\n"))
                .collect();
            top_inserts.push(format!("{header} {{\n{}\n}}", body.join("\n\n")));
        }
        if !top_inserts.is_empty() {
            edits.push(
                new_top_at,
                new_top_at,
                format!("\n\n{}", top_inserts.join("\n\n")),
            );
        }
    }

    /// A class of the reply that the file has too: the whole class when it
    /// holds every method the file's does, else method by method.
    fn merge_class(
        &self,
        reply: &Reply<'_>,
        d: &Definition,
        old: &Definition,
        holders: &[Holder],
        edits: &mut Edits,
    ) {
        let inside = |defs: &[Definition], c: &Definition| -> Vec<Definition> {
            defs.iter()
                .filter(|m| {
                    m.kind == DefKind::Method
                        && c.start <= m.start
                        && m.end <= c.end
                        && m.parent.as_deref() == Some(c.name.as_str())
                })
                .cloned()
                .collect()
        };
        let old_methods = inside(&self.defs, old);
        let new_methods = inside(&reply.defs, d);
        let all_there = old_methods
            .iter()
            .all(|o| new_methods.iter().any(|n| n.name == o.name));
        let attached = d.start < d.own_start;
        if all_there {
            self.replace(old, &reply.text_of(d, attached), attached, edits);
            return;
        }
        let holder = holders
            .iter()
            .find(|h| h.start == old.start && h.end == old.end);
        for m in &new_methods {
            let m_attached = m.start < m.own_start;
            match old_methods.iter().find(|o| o.name == m.name) {
                Some(o) => self.replace(o, &reply.text_of(m, m_attached), m_attached, edits),
                None => {
                    if let Some(h) = holder {
                        self.add_method(h, &reply.text_of(m, true), edits);
                    }
                }
            }
        }
    }

    /// Replaces the file's top-level statements the reply gives anew
    /// (`const LIMIT = 10`, `module.exports = {…}`, Lua's `return M`), and
    /// adds the new declarations after the imports.
    fn splice_statements(&self, reply: &Reply<'_>, edits: &mut Edits) {
        if reply.lone_methods {
            return;
        }
        let defs_in = |defs: &[Definition], n: &Node<'_>| {
            defs.iter()
                .any(|d| n.start_byte() <= d.name_start && d.name_end <= n.end_byte())
        };
        // Every import, carried over or not, is no statement to splice.
        let imports: Vec<(usize, usize)> = reply
            .import_nodes(&HashSet::new())
            .map(|n| (n.start_byte(), n.end_byte()))
            .collect();
        let mine = top_nodes(&self.tree);
        let mut declared = Vec::new();
        for n in top_nodes(&reply.tree) {
            if n.kind().contains("comment")
                || defs_in(&reply.defs, &n)
                || imports.contains(&(n.start_byte(), n.end_byte()))
                || n.kind() == "package_clause"
            {
                continue;
            }
            let Some(key) = statement_key(n, &reply.code) else {
                continue;
            };
            let text = node_text(n, &reply.code);
            let same = mine.iter().find(|m| {
                m.kind() == n.kind()
                    && !defs_in(&self.defs, m)
                    && statement_key(**m, self.text).as_ref() == Some(&key)
            });
            match same {
                Some(m) if node_text(*m, self.text) != text => {
                    edits.push(m.start_byte(), m.end_byte(), text.to_owned())
                }
                Some(_) => {}
                None if key.starts_with("name:") => declared.push(text.to_owned()),
                None => {}
            }
        }
        if !declared.is_empty() {
            let at = self.after_imports();
            edits.push(at, at, format!("\n{}\n", declared.join("\n")));
        }
    }

    /// Where a new statement goes after the imports: the end of the line
    /// of the last import, else the end of Go's package clause, else
    /// before the first statement that is not a comment.
    fn after_imports(&self) -> usize {
        if let Some(last) = self.imports.iter().map(|i| i.span.1).max() {
            return last;
        }
        let tops = top_nodes(&self.tree);
        if let Some(p) = tops.iter().find(|n| n.kind() == "package_clause") {
            return p.end_byte();
        }
        tops.iter()
            .find(|n| !n.kind().contains("comment"))
            .map_or(0, |n| n.start_byte())
    }

    /// Adds the import statements in `wanted` the file lacks: Go's specs
    /// into its import block, others after its last import.
    fn add_imports(&self, wanted: &[String], edits: &mut Edits) {
        let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let have: Vec<String> = self
            .imports
            .iter()
            .map(|i| squeeze(&self.text[i.span.0..i.span.1]))
            .collect();
        let mut lines = Vec::new();
        for w in wanted {
            if have.contains(&squeeze(w)) {
                continue;
            }
            if self.lang.id == "go" {
                self.add_go_imports(w, edits);
            } else {
                lines.push(w.trim().to_owned());
            }
        }
        if lines.is_empty() {
            return;
        }
        let block = lines.join("\n");
        let at = self.after_imports();
        if self.imports.is_empty() && !self.text[..at].contains("package") {
            edits.push(at, at, format!("{block}\n\n"));
        } else {
            edits.push(at, at, format!("\n{block}"));
        }
    }

    /// Go: the specs of `decl` (an import declaration) whose paths the
    /// file does not import yet, added to its block.
    fn add_go_imports(&self, decl: &str, edits: &mut Edits) {
        let Some(tree) = self.lang.parse(decl) else {
            return;
        };
        let have: HashSet<&str> = self
            .imports
            .iter()
            .flat_map(|i| &i.modules)
            .map(String::as_str)
            .collect();
        let mut specs = Vec::new();
        collect_kind(tree.root_node(), "import_spec", &mut specs);
        let missing: Vec<&str> = specs
            .iter()
            .map(|s| node_text(*s, decl))
            .filter(|s| {
                let path = s
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .trim_matches(['"', '`']);
                !have.contains(path)
            })
            .collect();
        if missing.is_empty() {
            return;
        }
        let mut lists = Vec::new();
        collect_kind(self.tree.root_node(), "import_spec_list", &mut lists);
        match lists.first() {
            Some(list) => {
                let close = list.end_byte() - 1;
                let line = line_start(self.text, close);
                let block: String = missing.iter().map(|s| format!("\t{s}\n")).collect();
                if self.text[line..close].trim().is_empty() {
                    edits.push(line, line, block);
                } else {
                    edits.push(close, close, format!("\n{block}"));
                }
            }
            None => {
                let at = self.after_imports();
                let block: Vec<String> = missing.iter().map(|s| format!("import {s}")).collect();
                edits.push(at, at, format!("\n\n{}", block.join("\n")));
            }
        }
    }

    fn line_of(&self, byte: usize) -> usize {
        self.text[..byte].matches('\n').count()
    }
}

/// The reply's block around its method `d` that is not a definition (a
/// Rust `impl`): its header (spaces squeezed) and span; `None` for a
/// definition at the top.
fn reply_block(reply: &Reply<'_>, d: &Definition) -> Option<(String, (usize, usize))> {
    let top = top_nodes(&reply.tree)
        .into_iter()
        .find(|n| n.start_byte() <= d.name_start && d.end <= n.end_byte())?;
    if top.end_byte() == d.end || reply.lone_methods {
        return None;
    }
    let body = top.child_by_field_name("body")?;
    let header = reply.code[top.start_byte()..body.start_byte()]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Some((header, (top.start_byte(), top.end_byte())))
}

/// Whether a definition's text after its name takes `self` first (a Rust
/// method written without its `impl`).
fn takes_self(after_name: &str) -> bool {
    let Some(open) = after_name.find('(') else {
        return false;
    };
    let params = &after_name[open + 1..];
    let first = params.split([',', ')']).next().unwrap_or("");
    first
        .split_whitespace()
        .any(|w| w.trim_start_matches('&') == "self")
        || first.trim_start_matches('&').trim_start() == "self"
}

/// What identifies a top-level statement across versions of a file: the
/// name it declares, `return` for a module's closing return, or what it
/// assigns to.
fn statement_key(n: Node<'_>, src: &str) -> Option<String> {
    if let Some(name) = declared_name(n, 3) {
        return Some(format!("name:{}", node_text(name, src)));
    }
    if n.kind().contains("return") {
        return Some("return".into());
    }
    let text = node_text(n, src);
    let first = text.lines().next().unwrap_or("");
    let (lhs, _) = first.split_once('=')?;
    let lhs = lhs.trim();
    (!lhs.is_empty() && !lhs.ends_with(['!', '<', '>', '='])).then(|| format!("lhs:{lhs}"))
}

/// The first `name` field within `depth` levels of `n`.
fn declared_name(n: Node<'_>, depth: usize) -> Option<Node<'_>> {
    if let Some(name) = n.child_by_field_name("name") {
        return Some(name);
    }
    if depth == 0 {
        return None;
    }
    let mut c = n.walk();
    let first = n.named_children(&mut c).next()?;
    declared_name(first, depth - 1)
}

fn collect_kind<'t>(n: Node<'t>, kind: &str, out: &mut Vec<Node<'t>>) {
    if n.kind() == kind {
        out.push(n);
        return;
    }
    let mut c = n.walk();
    for child in n.named_children(&mut c) {
        collect_kind(child, kind, out);
    }
}

#[cfg(test)]
#[path = "splice_tests.rs"]
mod tests;
