//! The file a reply goes into, parsed: where each definition, method
//! holder and import is, and how a reply's definitions, methods and
//! imports are spliced into it by name.

use super::*;

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
pub(super) struct File<'t> {
    pub(super) lang: &'t Language,
    pub(super) text: &'t str,
    pub(super) tree: Tree,
    pub(super) defs: Vec<Definition>,
    pub(super) imports: Vec<Import>,
}

impl<'t> File<'t> {
    pub(super) fn read(lang: &'t Language, text: &'t str) -> Option<File<'t>> {
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
    pub(super) fn splice_defs(
        &self,
        reply: &Reply<'_>,
        focus_line: Option<usize>,
        edits: &mut Edits,
    ) {
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
    pub(super) fn splice_statements(&self, reply: &Reply<'_>, edits: &mut Edits) {
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
    pub(super) fn add_imports(&self, wanted: &[String], edits: &mut Edits) {
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
