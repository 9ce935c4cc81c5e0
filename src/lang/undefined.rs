//! Functions a change calls by a name that nothing defines: a small
//! model's invented helper (`if not file_exists(path):`), refused with
//! what to do before the tests meet it as a `NameError` — or, where no
//! test runs that line, the human does. Only for languages whose row
//! lists every name a file may call without binding it
//! ([`Language::builtins`]).

use std::collections::BTreeSet;

use tree_sitter::{Node, QueryCursor, StreamingIterator};

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
    let mut called = BTreeSet::new();
    let mut elsewhere = BTreeSet::new();
    each_identifier(tree.root_node(), &mut |node| {
        let text = &new[node.byte_range()];
        match bare.contains(&node.start_byte()) {
            true => called.insert(text),
            false => elsewhere.insert(text),
        };
    });
    let before: BTreeSet<&str> = old
        .and_then(|old| Some((old, language.parse(old)?)))
        .map(|(old, tree)| {
            let mut seen = BTreeSet::new();
            each_identifier(tree.root_node(), &mut |n| {
                seen.insert(&old[n.byte_range()]);
            });
            seen
        })
        .unwrap_or_default();
    called
        .into_iter()
        .filter(|n| !elsewhere.contains(n) && !before.contains(n) && !builtins.contains(n))
        .map(str::to_owned)
        .collect()
}

/// Calls `f` on every identifier under `node`.
fn each_identifier<'t>(node: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    let mut cursor = node.walk();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" {
            f(n);
        }
        stack.extend(n.children(&mut cursor));
    }
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
