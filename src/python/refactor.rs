//! The exact half of a rename or a move, done on the syntax tree: every
//! use of a renamed name follows it, and imports follow a definition that
//! moves to another module. A small model writes the new definition well
//! and forgets a caller or an import; these steps never forget.

use tree_sitter::Node;

use super::{definitions, parse, splice_definitions, DefKind};

/// The module a project path imports as: `pkg/io.py` → `pkg.io`,
/// `pkg/__init__.py` → `pkg`. `None` for a file that is not Python.
pub fn module_of(path: &str) -> Option<String> {
    let stem = path
        .strip_suffix(".py")
        .or_else(|| path.strip_suffix(".pyi"))?;
    let stem = stem
        .strip_suffix("/__init__")
        .unwrap_or(stem)
        .trim_start_matches("./");
    (!stem.is_empty() && stem != "__init__").then(|| stem.replace('/', "."))
}

fn node_text<'a>(node: Node<'_>, text: &'a str) -> &'a str {
    &text[node.byte_range()]
}

/// Byte spans of the identifiers of `text` spelled `name` that refer to a
/// name in scope: not an attribute after a dot (`obj.name`), not a
/// keyword argument's name (`f(name=1)`).
fn identifier_spans(text: &str, name: &str) -> Vec<(usize, usize)> {
    let Some(tree) = parse(text) else {
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

/// `text` with every use of the name `from` (see [`identifier_spans`])
/// spelled `to`.
pub fn rename_identifier(text: &str, from: &str, to: &str) -> String {
    let mut out = text.to_owned();
    for (s, e) in identifier_spans(text, from).into_iter().rev() {
        out.replace_range(s..e, to);
    }
    out
}

/// Whether `text` uses the name `name` (not as an attribute).
pub fn uses_name(text: &str, name: &str) -> bool {
    !identifier_spans(text, name).is_empty()
}

/// `text` without its top-level definition `name` and the blank lines
/// after it; `None` when there is none.
pub fn remove_definition(text: &str, name: &str) -> Option<String> {
    let d = definitions(text)
        .into_iter()
        .find(|d| d.parent.is_none() && d.name == name && d.kind != DefKind::Method)?;
    let mut end = d.end;
    // The rest of its last line, then the blank lines that separated it.
    end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    while let Some(next) = text[end..].find('\n') {
        if !text[end..end + next].trim().is_empty() {
            break;
        }
        end += next + 1;
    }
    let mut out = format!("{}{}", &text[..d.start], &text[end..]);
    // Removing the last definition leaves the blank lines before it.
    if end >= text.len() {
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push('\n');
    }
    Some(out)
}

/// The `from … import …` statements of `text` that import `name` from
/// `module`: (statement span, the other names it imports, as written).
fn imports_of(text: &str, module: &str, name: &str) -> Vec<(usize, usize, Vec<String>)> {
    let Some(tree) = parse(text) else {
        return vec![];
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut out = Vec::new();
    for stmt in root.children(&mut cursor) {
        if stmt.kind() != "import_from_statement" {
            continue;
        }
        let Some(from) = stmt.child_by_field_name("module_name") else {
            continue;
        };
        let from = node_text(from, text);
        // A relative import (`.mathutil`) names the module by its last part.
        let same = from == module
            || (from.starts_with('.')
                && module.rsplit('.').next() == Some(from.trim_start_matches('.')));
        if !same {
            continue;
        }
        let mut names = Vec::new();
        let mut found = false;
        let mut c = stmt.walk();
        for n in stmt.children_by_field_name("name", &mut c) {
            let imported = match n.kind() {
                "aliased_import" => n
                    .child_by_field_name("name")
                    .map_or("", |x| node_text(x, text)),
                _ => node_text(n, text),
            };
            if imported == name {
                found = true;
            } else {
                names.push(node_text(n, text).to_owned());
            }
        }
        if found {
            out.push((stmt.start_byte(), stmt.end_byte(), names));
        }
    }
    out
}

/// Whether `text` binds `name` at its top level by an import or an
/// assignment (definitions aside).
pub fn binds(text: &str, name: &str) -> bool {
    imports(text)
        .iter()
        .any(|(_, names)| names.iter().any(|n| n == name))
        || text
            .lines()
            .filter(|l| !l.starts_with([' ', '\t']))
            .any(|l| {
                l.strip_prefix(name).is_some_and(|rest| {
                    rest.trim_start().starts_with('=') && !rest.trim_start().starts_with("==")
                })
            })
}

/// Whether `text` imports `name` from `module`.
pub fn imports_from(text: &str, module: &str, name: &str) -> bool {
    !imports_of(text, module, name).is_empty()
}

/// `text` without `name` in its imports from `module` (a statement left
/// importing nothing goes, with its line).
pub fn drop_import(text: &str, module: &str, name: &str) -> String {
    let mut out = text.to_owned();
    for (s, e, rest) in imports_of(text, module, name).into_iter().rev() {
        if rest.is_empty() {
            let e = out[e..].find('\n').map_or(out.len(), |i| e + i + 1);
            out.replace_range(s..e, "");
        } else {
            let from = &text[s..e];
            let head = &from[..from.find(" import ").map_or(0, |i| i + 8)];
            out.replace_range(s..e, &format!("{head}{}", rest.join(", ")));
        }
    }
    // The blank lines that separated a removed first import stay at the top.
    let lead = out.len() - out.trim_start_matches('\n').len();
    out.drain(..lead);
    out
}

/// `text` importing `name` from `module` (unchanged when it already does).
pub fn add_import(text: &str, module: &str, name: &str) -> String {
    if imports_from(text, module, name) {
        return text.to_owned();
    }
    splice_definitions(text, &format!("from {module} import {name}\n"), None)
        .unwrap_or_else(|_| text.to_owned())
}

/// The top-level imports of `text`: each statement with the names it binds.
fn imports(text: &str) -> Vec<(String, Vec<String>)> {
    let Some(tree) = parse(text) else {
        return vec![];
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut out = Vec::new();
    for stmt in root.children(&mut cursor) {
        let names: Vec<String> = match stmt.kind() {
            "import_statement" | "import_from_statement" => {
                let mut c = stmt.walk();
                stmt.children_by_field_name("name", &mut c)
                    .map(|n| match n.kind() {
                        "aliased_import" => n
                            .child_by_field_name("alias")
                            .map_or("", |a| node_text(a, text))
                            .to_owned(),
                        // `import a.b` binds `a`.
                        _ => node_text(n, text)
                            .split('.')
                            .next()
                            .unwrap_or("")
                            .to_owned(),
                    })
                    .filter(|n| !n.is_empty())
                    .collect()
            }
            _ => continue,
        };
        out.push((node_text(stmt, text).to_owned(), names));
    }
    out
}

/// `new` with the imports of `old` it dropped but still needs put back: a
/// whole file written anew by a small model often leaves its imports out.
pub fn keep_imports(old: &str, new: &str) -> String {
    let bound: Vec<String> = imports(new)
        .into_iter()
        .flat_map(|(_, names)| names)
        .chain(
            definitions(new)
                .into_iter()
                .filter(|d| d.parent.is_none())
                .map(|d| d.name),
        )
        .collect();
    let mut out = new.to_owned();
    for (stmt, names) in imports(old) {
        let needed = names
            .iter()
            .any(|n| !bound.contains(n) && uses_name(new, n));
        if needed {
            out = splice_definitions(&out, &format!("{stmt}\n"), None).unwrap_or(out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_named_by_their_path() {
        assert_eq!(
            module_of("inventory/report.py").as_deref(),
            Some("inventory.report")
        );
        assert_eq!(module_of("pkg/__init__.py").as_deref(), Some("pkg"));
        assert_eq!(module_of("tool.py").as_deref(), Some("tool"));
        assert_eq!(module_of("README.md"), None);
    }

    #[test]
    fn a_rename_follows_uses_but_not_attributes_strings_or_longer_names() {
        let text = "from m import mean\n\n\ndef f(xs, mean_of=None):\n    \"\"\"mean of xs\"\"\"\n    return mean(xs) + obj.mean + g(mean=1) + meaner\n";
        assert_eq!(
            rename_identifier(text, "mean", "average"),
            "from m import average\n\n\ndef f(xs, mean_of=None):\n    \"\"\"mean of xs\"\"\"\n    return average(xs) + obj.mean + g(mean=1) + meaner\n"
        );
        assert!(uses_name(text, "mean") && !uses_name(text, "meaner_x"));
    }

    #[test]
    fn a_definition_goes_with_the_blank_lines_after_it() {
        let text =
            "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n";
        assert_eq!(
            remove_definition(text, "b").unwrap(),
            "def a():\n    return 1\n\n\ndef c():\n    return 3\n"
        );
        assert_eq!(
            remove_definition(text, "c").unwrap(),
            "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
        );
        assert_eq!(remove_definition(text, "zz"), None);
    }

    #[test]
    fn a_whole_file_that_dropped_imports_it_still_needs_gets_them_back() {
        let old = "import json\nimport os.path\nfrom m import mean, median as med\n\n\ndef f():\n    return mean(json.loads('1'))\n";
        let new = "def f():\n    \"\"\"F.\"\"\"\n    return mean(json.loads('1'))\n";
        assert_eq!(
            keep_imports(old, new),
            format!("import json\nfrom m import mean, median as med\n\n\n{new}")
        );
        assert_eq!(keep_imports(old, old), old, "nothing dropped");
        let own = "def mean(xs):\n    return 0\n\n\ndef f():\n    return mean(json.loads('1'))\n";
        assert!(
            !keep_imports(old, own).contains("from m import"),
            "a name the file now defines needs no import"
        );
    }

    #[test]
    fn imports_are_dropped_added_and_found_by_module() {
        let text = "import json\nfrom inventory.mathutil import mean, median as med\nfrom .items import Item\n\n\ndef f():\n    pass\n";
        assert!(imports_from(text, "inventory.mathutil", "median"));
        assert!(imports_from(text, "inventory.items", "Item"), "relative");
        assert!(!imports_from(text, "inventory.other", "mean"));
        let dropped = drop_import(text, "inventory.mathutil", "mean");
        assert!(
            dropped.contains("from inventory.mathutil import median as med\n"),
            "{dropped}"
        );
        let dropped = drop_import(text, "inventory.items", "Item");
        assert!(
            !dropped.contains("Item")
                && dropped.starts_with("import json\nfrom inventory.mathutil"),
            "{dropped}"
        );
        let added = add_import(
            "def f():\n    return mean([1])\n",
            "inventory.report",
            "mean",
        );
        assert!(
            added.starts_with("from inventory.report import mean\n"),
            "{added}"
        );
        assert_eq!(add_import(text, "inventory.mathutil", "mean"), text);
    }
}
