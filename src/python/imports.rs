//! A Python file's top-level imports and the names it uses, read from its
//! syntax tree: what puts back the imports a whole file written anew left
//! out (a hook of Python's row in the language table), and what a rename
//! or a move edits. Below the table: it is given the row.

use std::ops::Range;

use super::splice::{node_text, splice_definitions};
use crate::lang::definitions::definitions;
use crate::lang::language::Language;

/// Byte spans of the identifiers of `text` spelled `name` that refer to a
/// name in scope: not an attribute after a dot (`obj.name`), not a
/// keyword argument's name (`f(name=1)`).
pub(crate) fn identifier_spans(lang: &Language, text: &str, name: &str) -> Vec<(usize, usize)> {
    let Some(tree) = lang.parse(text) else {
        return vec![];
    };
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" && node_text(node, text) == name {
            let parent = node.parent();
            let is_attribute = parent.is_some_and(|p| {
                p.kind() == "attribute"
                    && p.child_by_field_name("attribute").map(|a| a.id()) == Some(node.id())
            });
            let is_keyword = parent.is_some_and(|p| {
                p.kind() == "keyword_argument"
                    && p.child_by_field_name("name").map(|a| a.id()) == Some(node.id())
            });
            if !is_attribute && !is_keyword {
                out.push((node.start_byte(), node.end_byte()));
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out.sort_unstable();
    out
}

/// One top-level import statement.
pub(crate) struct Import<'a> {
    pub span: Range<usize>,
    /// `m` of `from m import …` as written (`.m` when relative); `None`
    /// for `import m`.
    pub from: Option<&'a str>,
    /// Each name: what it imports, the name it binds, and as written
    /// (`median as med`: `median`, `med`; `import a.b`: `a.b`, `a`).
    pub names: Vec<(&'a str, &'a str, &'a str)>,
}

impl Import<'_> {
    pub fn binds(&self, name: &str) -> bool {
        self.names.iter().any(|(_, bound, _)| *bound == name)
    }

    /// Whether it is `from <module> import …`; a relative import
    /// (`.mathutil`) names the module by its last part.
    fn is_from(&self, module: &str) -> bool {
        self.from.is_some_and(|from| {
            from == module
                || (from.starts_with('.')
                    && module.rsplit('.').next() == Some(from.trim_start_matches('.')))
        })
    }
}

/// The top-level imports of `text`.
pub(crate) fn imports<'a>(lang: &Language, text: &'a str) -> Vec<Import<'a>> {
    let Some(tree) = lang.parse(text) else {
        return vec![];
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut out = Vec::new();
    for stmt in root.children(&mut cursor) {
        let from = match stmt.kind() {
            "import_statement" => None,
            "import_from_statement" => match stmt.child_by_field_name("module_name") {
                Some(m) => Some(node_text(m, text)),
                None => continue,
            },
            _ => continue,
        };
        let mut c = stmt.walk();
        let names = stmt
            .children_by_field_name("name", &mut c)
            .map(|n| {
                let written = node_text(n, text);
                match n.kind() {
                    "aliased_import" => {
                        let field = |f| n.child_by_field_name(f).map_or("", |x| node_text(x, text));
                        (field("name"), field("alias"), written)
                    }
                    // `import a.b` binds `a`; `from m import a` binds `a`.
                    _ => (
                        written,
                        written.split('.').next().unwrap_or(written),
                        written,
                    ),
                }
            })
            .collect();
        out.push(Import {
            span: stmt.byte_range(),
            from,
            names,
        });
    }
    out
}

/// The `from <module> import …` statements of `text` importing `name`:
/// each span, with the other names it imports as written.
pub(crate) fn imports_of<'a>(
    lang: &Language,
    text: &'a str,
    module: &str,
    name: &str,
) -> Vec<(Range<usize>, Vec<&'a str>)> {
    imports(lang, text)
        .into_iter()
        .filter(|i| i.is_from(module) && i.names.iter().any(|(n, _, _)| *n == name))
        .map(|i| {
            let rest = i
                .names
                .iter()
                .filter(|(n, _, _)| *n != name)
                .map(|(_, _, w)| *w);
            (i.span.clone(), rest.collect())
        })
        .collect()
}

/// `new` with the imports of `old` it dropped but still needs put back: a
/// whole file written anew by a small model often leaves its imports out.
pub fn keep_imports(lang: &Language, old: &str, new: &str) -> String {
    let defined: Vec<String> = definitions(lang, new)
        .into_iter()
        .filter(|d| d.parent.is_none())
        .map(|d| d.name)
        .collect();
    let new_imports = imports(lang, new);
    let bound = |n: &str| new_imports.iter().any(|i| i.binds(n)) || defined.iter().any(|d| d == n);
    let mut out = new.to_owned();
    for import in imports(lang, old) {
        let needed = import
            .names
            .iter()
            .any(|(_, n, _)| !bound(n) && !identifier_spans(lang, new, n).is_empty());
        if needed {
            out = splice_definitions(lang, &out, &format!("{}\n", &old[import.span]), None)
                .unwrap_or(out);
        }
    }
    out
}
