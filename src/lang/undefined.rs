//! Functions a change calls by a name that nothing defines: a small
//! model's invented helper (`if not file_exists(path):`), refused with
//! what to do before the tests meet it as a `NameError` — or, where no
//! test runs that line, the human does. Only for languages whose row
//! lists every name a file may call without binding it
//! ([`Language::builtins`]).

use std::collections::BTreeSet;

use tree_sitter::{Node, QueryCursor, StreamingIterator, Tree};

use super::Language;

/// The names `new` calls bare (`name(…)`) that it neither defines,
/// imports, binds nor mentions in any other place, that are no builtin of
/// `language`, and that `old` (the file before the change) did not
/// mention already. Deliberately lenient: a name anywhere else in the
/// file counts as defined, whatever its scope. Empty when the language
/// lists no builtins or the file imports a whole module's names (`from m
/// import *`).
pub fn undefined_calls(language: &Language, old: Option<&str>, new: &str) -> Vec<String> {
    let Some(builtins) = language.builtins else {
        return vec![];
    };
    if new.contains("import *") {
        return vec![];
    }
    let (Some(tree), Ok(queries)) = (language.parse(new), language.queries()) else {
        return vec![];
    };
    let query = &queries.calls;
    let (Some(name_ix), scope_ix) = (
        query.capture_index_for_name("call.name"),
        query.capture_index_for_name("call.scope"),
    ) else {
        return vec![];
    };
    // Each bare call's name node, by its start.
    let mut bare = BTreeSet::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), new.as_bytes());
    while let Some(m) = matches.next() {
        if m.captures.iter().any(|c| Some(c.index) == scope_ix) {
            continue;
        }
        bare.extend(
            m.captures
                .iter()
                .filter(|c| c.index == name_ix)
                .map(|c| c.node.start_byte()),
        );
    }
    let (called, elsewhere): (Vec<Node>, Vec<Node>) = identifiers(&tree)
        .into_iter()
        .partition(|n| bare.contains(&n.start_byte()));
    let text_of = |text: &'_ str, nodes: Vec<Node>| -> BTreeSet<String> {
        nodes
            .iter()
            .map(|n| text[n.byte_range()].to_owned())
            .collect()
    };
    let (called, elsewhere) = (text_of(new, called), text_of(new, elsewhere));
    let before = old
        .and_then(|old| Some(text_of(old, identifiers(&language.parse(old)?))))
        .unwrap_or_default();
    called
        .into_iter()
        .filter(|n| {
            !elsewhere.contains(n) && !before.contains(n) && !builtins.contains(&n.as_str())
        })
        .collect()
}

/// Every identifier of `tree`.
fn identifiers(tree: &Tree) -> Vec<Node<'_>> {
    let mut cursor = tree.walk();
    let (mut stack, mut out) = (vec![tree.root_node()], vec![]);
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" {
            out.push(n);
        }
        stack.extend(n.children(&mut cursor));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::{PYTHON, RUST};

    const OLD: &str = "import json\n\n\ndef parse_config(path):\n    with open(path) as f:\n        return json.load(f)\n";

    #[test]
    fn an_invented_helper_is_found_and_what_exists_is_not() {
        // 1.5B, eval config-missing: `file_exists` exists nowhere.
        let new = "import json\n\n\ndef parse_config(path):\n    if not file_exists(path):\n        return {}\n    with open(path) as f:\n        return json.load(f)\n";
        assert_eq!(undefined_calls(&PYTHON, Some(OLD), new), ["file_exists"]);
        let imported = format!("from os.path import exists as file_exists\n{new}");
        assert!(undefined_calls(&PYTHON, Some(OLD), &imported).is_empty());
        let defined = format!("{new}\n\ndef file_exists(p):\n    return True\n");
        assert!(undefined_calls(&PYTHON, Some(OLD), &defined).is_empty());
    }

    #[test]
    fn builtins_methods_parameters_and_old_calls_are_no_finding() {
        let new = "def f(g, xs):\n    print(len(xs), sorted(xs))\n    xs.append(1)\n    return g(helper(xs))\n";
        assert!(
            undefined_calls(&PYTHON, Some("def f(g, xs):\n    return helper(xs)\n"), new)
                .is_empty()
        );
        assert_eq!(undefined_calls(&PYTHON, None, new), ["helper"]);
        let star = format!("from util import *\n{new}");
        assert!(undefined_calls(&PYTHON, None, &star).is_empty());
    }

    #[test]
    fn a_language_without_a_list_of_builtins_is_not_checked() {
        assert!(undefined_calls(&RUST, None, "fn f() { invented(); }\n").is_empty());
    }
}
