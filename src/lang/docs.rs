//! Doc comments a model wrote inside a function's body, moved above it.
//! Small models learn docstrings from Python and put a JSDoc block, a
//! Rust `///` or a Lua `---` first in the body, where the language's
//! tools never see it; `docs.scm` finds those, and a new one (not already
//! in the file) goes above its definition at the definition's indentation.

use tree_sitter::{Node, QueryCursor, StreamingIterator};

use super::definitions::line_start;
use super::language::Language;
use super::reply::{dedent, reindent, Edits};

/// `new`, the text a change proposes for a file that was `old`, with each
/// doc comment `docs.scm` finds first in a body, and that `old` does not
/// have, moved above its definition. Unchanged when nothing is to move,
/// when `new` does not parse, or when a definition already has a comment
/// right above it.
pub fn docs_moved_out_of_bodies(lang: &Language, old: &str, new: &str) -> String {
    let Ok(queries) = lang.queries() else {
        return new.to_owned();
    };
    let query = &queries.docs;
    let (Some(doc_index), Some(def_index)) = (
        query.capture_index_for_name("doc"),
        query.capture_index_for_name("definition"),
    ) else {
        return new.to_owned();
    };
    let Some(tree) = lang.parse(new) else {
        return new.to_owned();
    };
    if tree.root_node().has_error() {
        return new.to_owned();
    }
    let old_words = words(old);
    let newline = if new.contains("\r\n") { "\r\n" } else { "\n" };
    let mut edits = Edits::default();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), new.as_bytes());
    while let Some(m) = matches.next() {
        let node = |index| m.captures.iter().find(|c| c.index == index).map(|c| c.node);
        let (Some(doc), Some(def)) = (node(doc_index), node(def_index)) else {
            continue;
        };
        let Some(moved) = doc_move(lang, new, doc, def, newline) else {
            continue;
        };
        if old_words.contains(&words(&new[doc.start_byte()..moved.doc_end])) {
            continue;
        }
        // One doc, one move, however many patterns found it.
        if edits.0.iter().any(|e| e.0 == moved.remove.0) {
            continue;
        }
        edits.push(moved.remove.0, moved.remove.1, String::new());
        edits.push(moved.above, moved.above, moved.text);
    }
    edits.apply(new)
}

/// One doc comment to move: the lines it takes out of the body, where it
/// goes, and what it becomes there.
struct DocMove {
    remove: (usize, usize),
    doc_end: usize,
    above: usize,
    text: String,
}

fn doc_move(
    lang: &Language,
    text: &str,
    doc: Node<'_>,
    def: Node<'_>,
    newline: &str,
) -> Option<DocMove> {
    // A run of line comments (`///`, `---`) is one doc.
    let opener = text.get(doc.start_byte()..doc.start_byte() + 3)?;
    let mut last = doc;
    while let Some(next) = last.next_sibling() {
        let between = &text[last.end_byte()..next.start_byte()];
        let same = next.kind() == doc.kind() && text[next.start_byte()..].starts_with(opener);
        if !same || !between.trim().is_empty() || between.matches('\n').count() > 1 {
            break;
        }
        last = next;
    }
    let doc_start = line_start(text, doc.start_byte());
    let doc_end = last.end_byte();
    let rest = &text[doc_end..];
    // Some grammars end a line comment after its newline (Rust's docs).
    let line_end = if text[..doc_end].ends_with('\n') {
        doc_end
    } else {
        doc_end + rest.find('\n').map_or(rest.len(), |i| i + 1)
    };
    // The doc has lines of its own: nothing before it or after it on them.
    if !text[doc_start..doc.start_byte()].trim().is_empty()
        || !text[doc_end..line_end].trim().is_empty()
    {
        return None;
    }
    let above = line_start(text, def.start_byte());
    let def_line = &text[above..];
    let indent = &def_line[..def_line.len() - def_line.trim_start_matches([' ', '\t']).len()];
    // A definition documented already keeps what it has.
    let before = text[..above].trim_end_matches(['\r', '\n']);
    let previous = before[line_start(before, before.len())..].trim();
    if previous.ends_with("*/") || previous.starts_with(lang.line_comment) {
        return None;
    }
    let body = text[doc_start..doc_end].trim_end_matches(['\r', '\n']);
    let moved = reindent(&dedent(body), indent, newline);
    Some(DocMove {
        remove: (doc_start, line_end),
        doc_end,
        above,
        text: format!("{moved}{newline}"),
    })
}

/// `text`'s words, one space apart: where a comment is compared with the
/// file it was in, whatever its indentation.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::by_name;

    fn moved(lang: &str, old: &str, new: &str) -> String {
        docs_moved_out_of_bodies(by_name(lang).unwrap(), old, new)
    }

    #[test]
    fn a_jsdoc_first_in_a_body_goes_above_its_function() {
        let new = "function clamp(x, lo, hi) {\n  /**\n   * Clamps x.\n   * @param {number} x\n   */\n  if (x < lo) return lo;\n  return x;\n}\n\nmodule.exports = { clamp };\n";
        assert_eq!(
            moved("javascript", "", new),
            "/**\n * Clamps x.\n * @param {number} x\n */\nfunction clamp(x, lo, hi) {\n  if (x < lo) return lo;\n  return x;\n}\n\nmodule.exports = { clamp };\n"
        );
    }

    #[test]
    fn methods_and_arrow_functions_keep_their_indentation() {
        let new = "class Cart {\n  total(): number {\n    /** The sum. */\n    return 1;\n  }\n}\nexport const f = () => {\n  /** F. */\n  return 2;\n};\n";
        assert_eq!(
            moved("typescript", "", new),
            "class Cart {\n  /** The sum. */\n  total(): number {\n    return 1;\n  }\n}\n/** F. */\nexport const f = () => {\n  return 2;\n};\n"
        );
    }

    #[test]
    fn rust_doc_lines_move_as_one_and_lua_doc_lines_too() {
        let rust = "impl A {\n    pub fn clamp(x: i32) -> i32 {\n        /// Clamps x.\n        ///\n        /// Into 0..9.\n        x.min(9)\n    }\n}\n";
        assert_eq!(
            moved("rust", "", rust),
            "impl A {\n    /// Clamps x.\n    ///\n    /// Into 0..9.\n    pub fn clamp(x: i32) -> i32 {\n        x.min(9)\n    }\n}\n"
        );
        let lua = "local M = {}\n\nfunction M.trim(s)\n  --- Trims s.\n  --- @param s string\n  return s\nend\n\nM.f = function()\n  --- F.\n  return 1\nend\n\nreturn M\n";
        assert_eq!(
            moved("lua", "", lua),
            "local M = {}\n\n--- Trims s.\n--- @param s string\nfunction M.trim(s)\n  return s\nend\n\n--- F.\nM.f = function()\n  return 1\nend\n\nreturn M\n"
        );
    }

    #[test]
    fn what_is_not_a_new_misplaced_doc_stays_where_it_is() {
        let cases = [
            // Already in the file: the human's choice.
            (
                "javascript",
                "function f() {\n    /** kept */\n  return 1;\n}\n",
                "function f() {\n  /** kept */\n  return 2;\n}\n",
            ),
            // Documented above already.
            (
                "javascript",
                "",
                "/** F. */\nfunction f() {\n  /** more */\n  return 1;\n}\n",
            ),
            // A plain comment, and a Rust inner doc (valid there).
            (
                "javascript",
                "",
                "function f() {\n  // why\n  return 1;\n}\n",
            ),
            ("rust", "", "fn f() {\n    //! inner\n    1\n}\n"),
            // Sharing its line with code.
            (
                "javascript",
                "",
                "function f() { /** x */\n  return 1;\n}\n",
            ),
            // Not the first thing in the body.
            (
                "javascript",
                "",
                "function f() {\n  const a = 1;\n  /** x */\n  return a;\n}\n",
            ),
            // Does not parse: the gate says so, nothing is moved.
            (
                "javascript",
                "",
                "function f() {\n  /** x */\n  return (;\n}\n",
            ),
            // Python's docstring is where it belongs; Go cannot tell.
            (
                "python",
                "",
                "def f():\n    \"\"\"Doc.\"\"\"\n    return 1\n",
            ),
            (
                "go",
                "",
                "package a\n\nfunc F() int {\n\t// F is.\n\treturn 1\n}\n",
            ),
        ];
        for (lang, old, new) in cases {
            assert_eq!(moved(lang, old, new), new, "{lang}: {new}");
        }
    }

    #[test]
    fn crlf_stays_crlf() {
        let new = "function f() {\r\n  /** F. */\r\n  return 1;\r\n}\r\n";
        assert_eq!(
            moved("javascript", "", new),
            "/** F. */\r\nfunction f() {\r\n  return 1;\r\n}\r\n"
        );
    }
}
