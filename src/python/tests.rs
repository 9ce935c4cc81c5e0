use super::*;

const SRC: &str = "import os\n\n@cache\ndef load(path):\n    return 1\n\n\nclass Store:\n    \"\"\"A store.\"\"\"\n\n    def add(self, x):\n        pass\n\n    @property\n    def size(self):\n        return 0\n\n    async def fetch(self):\n        def inner():\n            pass\n\n\nasync def main():\n    pass\n";

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
