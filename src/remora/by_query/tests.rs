//! The one walk that indexes a file finds what its three queries find apart.

use super::*;

/// What the definitions, calls and imports queries match, each run alone
/// over `range`, sorted as [`Matched::sort`] sorts.
fn apart(lang: &Language, tree: &Tree, text: &str, range: Option<Range<usize>>) -> Fresh {
    let queries = lang.queries().expect("queries compile");
    let each = |query: &Query, add: &mut dyn FnMut(&QueryMatch<'_, '_>)| {
        let mut cursor = QueryCursor::new();
        if let Some(r) = range.clone() {
            cursor.set_byte_range(r);
        }
        let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
        while let Some(m) = matches.next() {
            add(m);
        }
    };
    let mut fresh = Fresh {
        defs: lang::found_in(lang, tree, text, range.clone()),
        ..Fresh::default()
    };
    let calls = CallCaptures::new(&queries.calls);
    each(&queries.calls, &mut |m| {
        fresh.calls.extend(calls.call(m, m.pattern_index, text));
    });
    let imports = ImportCaptures::new(&queries.imports);
    each(&queries.imports, &mut |m| {
        fresh.imports.push(imports.import(m, m.pattern_index, text));
    });
    sorted(fresh)
}

fn sorted(mut f: Fresh) -> Fresh {
    f.defs.sort_by_key(lang::found_order);
    f.calls.sort_by_key(|c| (c.name.0, c.pattern));
    f.imports.sort_by_key(|i| (i.span.0, i.pattern));
    f
}

const FILES: &[(&str, &str)] = &[
    (
        "a.js",
        "import { h } from './c';\nconst { g } = require('./b');\n\nexport function f(a) {\n  return g(a) + h.k(a);\n}\n\nclass K extends Base {\n  m() { return this.n(); }\n  n() { return f(1); }\n}\nconst k = (x) => f(x);\n",
    ),
    (
        "a.ts",
        "import { g } from \"./b\";\nimport * as ns from \"./ns\";\nexport function f(a: number): number {\n  return g(a) + ns.q();\n}\ninterface I { x: number }\nclass K {\n  m(): void { this.n(); }\n  n(): number { return f(1); }\n}\ntype T = string;\n",
    ),
    (
        "a.go",
        "package a\n\nimport (\n\t\"fmt\"\n\tu \"example.com/m/util\"\n)\n\ntype S struct {\n\tx int\n}\n\n// M does things.\nfunc (s *S) M() int {\n\treturn s.N() + u.Clamp(1)\n}\n\nfunc G(a int) int { fmt.Println(a); return a }\n",
    ),
    (
        "src/a.rs",
        "use crate::b::g;\nuse std::{fmt, io::Read as R};\nmod c;\n\n/// Docs.\n#[derive(Debug)]\npub struct S { x: u8 }\n\nimpl S {\n    fn m(&self) -> u8 { self.n() }\n    fn n(&self) -> u8 {\n        g(S::new(), c::h())\n    }\n}\n\nfn f(a: u8) -> u8 {\n    g(a)\n}\n",
    ),
    (
        "lua/a.lua",
        "local b = require(\"b\")\nlocal M = {}\n\nlocal function f(a)\n  return b.g(a)\nend\n\nfunction M.m(x)\n  return f(x)\nend\n\nM.n = function()\n  return M.m(1)\nend\n\nfunction M:o()\n  return self.n()\nend\n\nreturn M\n",
    ),
];

#[test]
fn one_walk_finds_what_the_three_queries_find_apart() {
    for (path, text) in FILES {
        let lang = lang::for_path(path).expect("a language");
        let tree = lang.parse(text).expect("parses");
        assert!(!tree.root_node().has_error(), "{path} parses");
        let middle = text.len() / 3..text.len() * 2 / 3;
        for range in [None, Some(middle)] {
            let want = apart(lang, &tree, text, range.clone());
            let got = sorted(matches_in(lang, &tree, text, range.clone()));
            assert!(
                !want.defs.is_empty() && !want.calls.is_empty(),
                "{path} {range:?}: the sample has definitions and calls"
            );
            assert_eq!(got.defs, want.defs, "{path} {range:?}");
            assert_eq!(got.calls, want.calls, "{path} {range:?}");
            assert_eq!(got.imports, want.imports, "{path} {range:?}");
            if range.is_none() {
                assert!(!want.imports.is_empty(), "{path}: the sample imports");
            }
        }
    }
}
