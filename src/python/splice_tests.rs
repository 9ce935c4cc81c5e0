use super::*;

// Python's row, as the language table's hooks are called.
fn classify(code: &str, target: Option<&str>) -> ReplyForm {
    super::classify(&crate::lang::PYTHON, code, target)
}

fn splice_definitions(
    target: &str,
    reply: &str,
    focus_line: Option<usize>,
) -> Result<String, SpliceError> {
    super::splice_definitions(&crate::lang::PYTHON, target, reply, focus_line)
}

const FILE: &str = "import json\n\n\ndef parse_config(path):\n    with open(path) as f:\n        return json.load(f)\n\n\nclass Store:\n    def __init__(self):\n        self.items = {}\n\n    def add(self, name):\n        self.items[name] = 1\n\n    def count(self):\n        return len(self.items)\n\n\nif __name__ == \"__main__\":\n    print(parse_config(\"x\"))\n";

#[test]
fn classifies_programs_definitions_and_whole_files() {
    assert!(matches!(
        classify(
            "src = read_file('a.py')\nwrite_file('a.py', src)\n",
            Some(FILE)
        ),
        ReplyForm::Program(_)
    ));
    assert!(matches!(
        classify("def parse_config(path):\n    pass\n", Some(FILE)),
        ReplyForm::Definitions(_)
    ));
    assert!(matches!(
        classify(FILE, Some(FILE)),
        ReplyForm::WholeFile(_)
    ));
    assert_eq!(
        classify("Sure! Here is the answer.", Some(FILE)),
        ReplyForm::Nothing
    );
    assert!(matches!(
        classify("x = read_file('a.py')\n", Some(FILE)),
        ReplyForm::Program(_)
    ));
    assert!(matches!(
        classify("while True:\n    pass\n", Some(FILE)),
        ReplyForm::Program(_)
    ));
    assert!(matches!(
        classify("VERSION = 1\n", Some("\"\"\"Doc.\"\"\"\n")),
        ReplyForm::Definitions(_)
    ));
    assert!(matches!(
        classify("print('hi')\n", Some("\"\"\"Doc.\"\"\"\n")),
        ReplyForm::WholeFile(_)
    ));
    // A definition named like a host function is not a program.
    assert!(matches!(
        classify("def write_file(p):\n    pass\n", Some(FILE)),
        ReplyForm::Definitions(_)
    ));
}

#[test]
fn replaces_a_function_by_name_and_keeps_everything_else() {
    let reply = "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    with open(path) as f:\n        return json.load(f)\n";
    let out = splice_definitions(FILE, reply, None).unwrap();
    assert_eq!(
        out,
        FILE.replace(
            "def parse_config(path):\n",
            "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n"
        )
    );
}

#[test]
fn a_lone_method_replaces_the_method_reindented() {
    let reply = "def count(self):\n    return sum(self.items.values())\n";
    let out = splice_definitions(FILE, reply, None).unwrap();
    assert!(
        out.contains("    def count(self):\n        return sum(self.items.values())\n"),
        "{out}"
    );
    assert!(!out.contains("return len(self.items)"));
    // Also when the model kept the class indentation.
    let indented = "    def count(self):\n        return 0\n";
    let out = splice_definitions(FILE, indented, None).unwrap();
    assert!(
        out.contains("    def count(self):\n        return 0\n"),
        "{out}"
    );
}

#[test]
fn a_partial_class_merges_method_by_method() {
    let reply = "class Store:\n    def total(self):\n        return 0\n\n    def add(self, name):\n        self.items[name] = 2\n";
    let out = splice_definitions(FILE, reply, None).unwrap();
    assert!(
        out.contains("def __init__(self):"),
        "other methods kept: {out}"
    );
    assert!(out.contains("self.items[name] = 2"));
    assert!(
        out.contains("    def total(self):\n        return 0"),
        "{out}"
    );
    assert!(crate::python::syntax_problem(&out).is_none(), "{out}");
}

#[test]
fn a_class_docstring_is_inserted() {
    let reply = "class Store:\n    \"\"\"Keeps items.\"\"\"\n\n    def add(self, name):\n        self.items[name] = 1\n";
    let out = splice_definitions(FILE, reply, None).unwrap();
    assert!(
        out.contains("class Store:\n    \"\"\"Keeps items.\"\"\"\n    def __init__"),
        "{out}"
    );
    assert!(crate::python::syntax_problem(&out).is_none());
}

#[test]
fn new_functions_go_before_the_main_guard_and_imports_merge() {
    let reply = "import os\n\ndef helper():\n    return os.getcwd()\n";
    let out = splice_definitions(FILE, reply, None).unwrap();
    assert!(out.starts_with("import json\nimport os\n"), "{out}");
    let helper = out.find("def helper").unwrap();
    let guard = out.find("if __name__").unwrap();
    assert!(helper < guard, "{out}");
    assert!(crate::python::syntax_problem(&out).is_none(), "{out}");
}

#[test]
fn a_new_method_joins_the_focused_class() {
    let reply = "def clear(self):\n    self.items = {}\n";
    let out = splice_definitions(FILE, reply, Some(12)).unwrap();
    assert!(
        out.contains(
            "        return len(self.items)\n\n    def clear(self):\n        self.items = {}\n"
        ),
        "{out}"
    );
}

#[test]
fn stray_example_code_is_ignored() {
    let reply = "def parse_config(path):\n    return {}\n\nprint(parse_config('x'))\n";
    let out = splice_definitions(FILE, reply, None).unwrap();
    assert!(out.contains("def parse_config(path):\n    return {}\n"));
    assert_eq!(out.matches("print(").count(), 1, "{out}");
}

#[test]
fn assignments_replace_or_join_the_module_top() {
    let target = "\"\"\"Pkg.\"\"\"\nVERSION = \"0.1\"\n";
    assert_eq!(
        splice_definitions(target, "VERSION = \"1.0\"\n", None).unwrap(),
        "\"\"\"Pkg.\"\"\"\nVERSION = \"1.0\"\n"
    );
    let target = "\"\"\"Pkg.\"\"\"\n";
    assert_eq!(
        splice_definitions(target, "VERSION = \"1.0\"\n", None).unwrap(),
        "\"\"\"Pkg.\"\"\"\nVERSION = \"1.0\"\n"
    );
}

#[test]
fn broken_replies_are_refused_with_the_line() {
    let err = splice_definitions(FILE, "def f(:\n    pass\n", None).unwrap_err();
    assert!(matches!(err, SpliceError::Syntax(_)));
    assert_eq!(
        splice_definitions(FILE, "x + 1\n", None).unwrap_err(),
        SpliceError::NoDefinitions
    );
}

#[test]
fn a_definition_that_is_only_a_docstring_keeps_the_old_body() {
    let target = "def greet(name):\n    return 'Hello, ' + name\n\n\ndef main():\n    greet('x')\n";
    let reply = "def greet(name):\n    \"\"\"Greet someone.\n\n    name: who.\n    \"\"\"\n";
    assert_eq!(
        splice_definitions(target, reply, None).unwrap(),
        "def greet(name):\n    \"\"\"Greet someone.\n\n    name: who.\n    \"\"\"\n    return 'Hello, ' + name\n\n\ndef main():\n    greet('x')\n"
    );
    // With a filler, as a method, replacing an older docstring.
    let target = "class A:\n    def f(self):\n        \"\"\"Old.\"\"\"\n        return 1\n";
    let reply = "def f(self):\n  \"\"\"New.\n  More.\n  \"\"\"\n  ...\n";
    assert_eq!(
        splice_definitions(target, reply, None).unwrap(),
        "class A:\n    def f(self):\n        \"\"\"New.\n        More.\n        \"\"\"\n        return 1\n"
    );
}

#[test]
fn a_docstring_with_a_real_body_or_over_a_stub_replaces_as_usual() {
    let target = "def greet(name):\n    return 'Hello, ' + name\n";
    let reply = "def greet(name):\n    \"\"\"Greet.\"\"\"\n    return 'Hi, ' + name\n";
    assert_eq!(splice_definitions(target, reply, None).unwrap(), reply);
    let stub = "def todo():\n    pass\n";
    let reply = "def todo():\n    \"\"\"Later.\"\"\"\n";
    assert_eq!(splice_definitions(stub, reply, None).unwrap(), reply);
}

#[test]
fn an_outline_echoed_back_around_the_change_splices_only_the_change() {
    let target = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(lst):\n    s = sorted(lst)\n    return s[len(s) // 2]\n\n\nclass Stats:\n    def spread(self, xs):\n        return max(xs) - min(xs)\n\n    def size(self, xs):\n        return len(xs)\n";
    // What a small model answers after seeing an outline: every signature
    // with its `# line N`, and the one it fixed in full.
    let reply = "def mean(xs):  # line 1\n\n\ndef median(lst):\n    s = sorted(lst)\n    n = len(s)\n    return (s[(n - 1) // 2] + s[n // 2]) / 2\n\n\nclass Stats:  # line 10\n    def spread(self, xs):  # line 11\n    def size(self, xs):  # line 14\n";
    assert!(
        matches!(classify(reply, Some(target)), ReplyForm::Definitions(_)),
        "an outline around a change is not a whole file"
    );
    let out = splice_definitions(target, reply, None).unwrap();
    assert!(out.contains("return sum(xs) / len(xs)"), "{out}");
    assert!(out.contains("return max(xs) - min(xs)"), "{out}");
    assert!(out.contains("return len(xs)"), "{out}");
    assert!(out.contains("(s[(n - 1) // 2] + s[n // 2]) / 2"), "{out}");
    assert!(!out.contains("# line"), "{out}");
    assert!(crate::python::syntax_problem(&out).is_none(), "{out}");
    assert_eq!(
        splice_definitions(
            target,
            "def mean(xs):  # line 1\ndef median(lst):  # line 5\n",
            None
        ),
        Err(SpliceError::OnlyOutline)
    );
}

#[test]
fn definitions_for_a_file_that_does_not_exist_yet_become_the_file() {
    let reply = "import pytest\n\nfrom textutils import slugify\n\n\ndef test_slugify():\n    assert slugify(\"A B\") == \"a-b\"\n";
    assert!(matches!(
        classify(reply, Some("")),
        ReplyForm::Definitions(_) | ReplyForm::WholeFile(_)
    ));
    let out = splice_definitions("", reply, None).unwrap();
    assert_eq!(out, reply);
}
