use super::*;

const SRC: &str = "import os\n\n@cache\ndef load(path):\n    return 1\n\n\nclass Store:\n    \"\"\"A store.\"\"\"\n\n    def add(self, x):\n        pass\n\n    @property\n    def size(self):\n        return 0\n\n    async def fetch(self):\n        def inner():\n            pass\n\n\nasync def main():\n    pass\n";

#[test]
fn a_definition_cut_off_at_the_end_is_dropped_and_the_rest_kept() {
    let cut =
        "def camelize(s):\n    return s.title()\n\ndef underscore(word):\n    \"\"\"Convert\n";
    assert_eq!(
        super::splice::without_cut_tail(&crate::lang::PYTHON, cut),
        Some("def camelize(s):\n    return s.title()\n\n")
    );
    // Whole code, or nothing complete before the cut: nothing to drop.
    assert_eq!(
        super::splice::without_cut_tail(&crate::lang::PYTHON, "def f():\n    return 1\n"),
        None
    );
    assert_eq!(
        super::splice::without_cut_tail(&crate::lang::PYTHON, "def f(:\n    return 1\n"),
        None
    );
    assert_eq!(
        super::splice::without_cut_tail(&crate::lang::PYTHON, "x = (\ndef g():\n    pass\n"),
        None
    );
}

#[test]
fn finds_functions_classes_methods_with_decorators_and_nesting() {
    let defs = definitions(SRC);
    let summary: Vec<(&str, DefKind, Option<&str>)> = defs
        .iter()
        .map(|d| (d.name.as_str(), d.kind, d.parent.as_deref()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("load", DefKind::Function, None),
            ("Store", DefKind::Class, None),
            ("add", DefKind::Method, Some("Store")),
            ("size", DefKind::Method, Some("Store")),
            ("fetch", DefKind::Method, Some("Store")),
            ("inner", DefKind::Function, Some("fetch")),
            ("main", DefKind::Function, None),
        ]
    );
    let load = &defs[0];
    assert_eq!(
        &SRC[load.start..load.end],
        "@cache\ndef load(path):\n    return 1"
    );
    let size = &defs[3];
    assert_eq!(size.indent, "    ");
    assert!(SRC[size.start..size.end].starts_with("    @property\n"));
}

#[test]
fn definition_at_picks_the_innermost() {
    let defs = definitions(SRC);
    assert_eq!(definition_at(&defs, 11).unwrap().name, "add");
    assert_eq!(definition_at(&defs, 8).unwrap().name, "Store");
    assert!(definition_at(&defs, 0).is_none());
}

#[test]
fn syntax_problems_point_at_the_line() {
    assert!(syntax_problem(SRC).is_none());
    let broken = "def f():\n    x = (1,\n    return x\n\ndef g():\n    pass\n";
    let p = syntax_problem(broken).unwrap();
    assert!(p.line <= 3, "{p}");
    assert!(p.excerpt.contains("x = (1,"), "{p}");
    let unterminated = "def f():\n    \"\"\"Doc with \"\"\" inside\"\"\"\n    pass\n";
    assert!(syntax_problem(unterminated).is_some());
}

#[test]
fn a_body_of_only_a_comment_is_a_syntax_error_as_in_python() {
    // An outline echoed back: tree-sitter accepts it, Python does not.
    let outline = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(lst):  # line 5\ndef mode(lst):  # line 9\n";
    let p = syntax_problem(outline).expect("an empty body is an error");
    assert_eq!(p.line, 5, "{p}");
    assert!(
        p.to_string()
            .contains("expected an indented block after a function definition"),
        "{p}"
    );
    let class = "class A:\n    # nothing yet\n\nx = 1\n";
    assert_eq!(syntax_problem(class).map(|p| p.line), Some(1));
    let nested = "def f(x):\n    if x:\n        # todo\n    return x\n";
    assert!(syntax_problem(nested).is_some());
    for fine in [
        "def f(x):\n    ...\n",
        "def f(x): return x\n",
        "class A:\n    \"\"\"Doc.\"\"\"\n",
        "def f(x):\n    # a comment, then code\n    return x\n",
    ] {
        assert!(syntax_problem(fine).is_none(), "{fine:?}");
    }
}

#[test]
fn a_docstring_is_the_first_statement_of_a_body_and_nothing_else() {
    let text = "def a():\n    \"\"\"Doc.\"\"\"\n    return 1\n\n\ndef b():\n    # A comment.\n    return 'not a doc'\n\n\nclass C:\n    '''Doc.'''\n\n    def m(self):\n        x = 1\n        \"\"\"Too late.\"\"\"\n";
    let documented: Vec<(String, bool)> = definitions(text)
        .iter()
        .map(|d| (d.qualified_name(), has_docstring(text, d)))
        .collect();
    assert_eq!(
        documented,
        [
            ("a".into(), true),
            ("b".into(), false),
            ("C".into(), true),
            ("C.m".into(), false)
        ]
    );
}
