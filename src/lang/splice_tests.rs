use super::*;
use crate::lang::{GO, JAVASCRIPT, LUA, RUST, TYPESCRIPT};

const JS: &str = r#"const fs = require("fs");

/** Reads the config. */
function load(path) {
  return JSON.parse(fs.readFileSync(path, "utf8"));
}

class Store {
  constructor() {
    this.items = {};
  }

  add(name) {
    this.items[name] = 1;
  }
}

module.exports = { load, Store };
"#;

fn splice(lang: &Language, target: &str, reply: &str) -> String {
    let out =
        splice_definitions(lang, target, reply, None).unwrap_or_else(|e| panic!("{e}\n{reply}"));
    assert_eq!(syntax_problem(lang, &out), None, "{out}");
    out
}

#[test]
fn a_js_function_is_replaced_by_name_and_keeps_its_doc_comment() {
    let reply = "function load(path) {\n  if (!path) return {};\n  return JSON.parse(fs.readFileSync(path, \"utf8\"));\n}\n";
    let out = splice(&JAVASCRIPT, JS, reply);
    assert_eq!(
        out,
        JS.replace(
            "function load(path) {\n",
            "function load(path) {\n  if (!path) return {};\n"
        )
    );
    // Given with a new doc comment, the new one wins.
    let reply = "/** Loads it. */\nfunction load(path) {\n  return 1;\n}";
    let out = splice(&JAVASCRIPT, JS, reply);
    assert!(
        out.contains("/** Loads it. */\nfunction load(path) {\n  return 1;\n}\n\nclass"),
        "{out}"
    );
    assert!(!out.contains("Reads the config"), "{out}");
}

#[test]
fn a_lone_js_method_replaces_the_method_or_joins_its_class() {
    let out = splice(
        &JAVASCRIPT,
        JS,
        "add(name, qty) {\n  this.items[name] = qty;\n}\n",
    );
    assert!(
        out.contains("  add(name, qty) {\n    this.items[name] = qty;\n  }\n}"),
        "{out}"
    );
    assert_eq!(out.matches("add(").count(), 1, "{out}");
    let out = splice(
        &JAVASCRIPT,
        JS,
        "count() {\n  return Object.keys(this.items).length;\n}",
    );
    assert!(
        out.contains("    this.items[name] = 1;\n  }\n\n  count() {\n    return Object.keys(this.items).length;\n  }\n}"),
        "{out}"
    );
    // A class given in part: its methods merge, the others stay.
    let out = splice(
        &JAVASCRIPT,
        JS,
        "class Store {\n  add(name) {\n    this.items[name] = 2;\n  }\n\n  size() {\n    return 0;\n  }\n}",
    );
    assert!(out.contains("constructor()"), "{out}");
    assert!(out.contains("this.items[name] = 2;"), "{out}");
    assert!(out.contains("  size() {\n    return 0;\n  }\n}"), "{out}");
}

#[test]
fn a_new_js_function_goes_before_the_exports_which_the_reply_may_change() {
    let reply = "const path = require(\"path\");\n\nfunction save(file, data) {\n  fs.writeFileSync(path.resolve(file), JSON.stringify(data));\n}\n\nmodule.exports = { load, save, Store };\n";
    let out = splice(&JAVASCRIPT, JS, reply);
    assert!(
        out.starts_with("const fs = require(\"fs\");\nconst path = require(\"path\");\n\n/**"),
        "{out}"
    );
    let save = out.find("function save").unwrap();
    let exports = out.find("module.exports = { load, save, Store };").unwrap();
    assert!(
        out.find("class Store").unwrap() < save && save < exports,
        "{out}"
    );
    assert_eq!(out.matches("module.exports").count(), 1, "{out}");
}

#[test]
fn broken_replies_name_their_language_and_line() {
    let err = splice_definitions(
        &JAVASCRIPT,
        JS,
        "function load(path) {\n  return (1;\n}\n",
        None,
    )
    .unwrap_err();
    let said = err.to_string();
    assert!(
        said.starts_with("the reply is not valid JavaScript: JavaScript syntax error"),
        "{said}"
    );
    assert!(said.contains("line 2"), "{said}");
    assert_eq!(
        splice_definitions(&JAVASCRIPT, JS, "// nothing to see\n", None),
        Err(SpliceError::NoDefinitions)
    );
}

#[test]
fn replies_are_classified_in_the_files_language() {
    assert!(matches!(
        classify(&JAVASCRIPT, JS, Some(JS)),
        ReplyForm::WholeFile(_)
    ));
    assert!(matches!(
        classify(
            &JAVASCRIPT,
            "function load(p) {\n  return 1;\n}\n",
            Some(JS)
        ),
        ReplyForm::Definitions(_)
    ));
    assert!(matches!(
        classify(&JAVASCRIPT, "add(name) {\n  return 1;\n}\n", Some(JS)),
        ReplyForm::Definitions(_)
    ));
    assert!(matches!(
        classify(
            &GO,
            "src = read_file('a.go')\nwrite_file('a.go', src)\nsubmit_result('x', ['a.go'])\n",
            Some(GO_FILE)
        ),
        ReplyForm::Program(_)
    ));
    assert_eq!(classify(&GO, "   \n", Some(GO_FILE)), ReplyForm::Nothing);
    // A file of no definitions: the reply is the file.
    assert!(matches!(
        classify(&LUA, "print('hi')\n", Some("print('ho')\n")),
        ReplyForm::WholeFile(_)
    ));
}

#[test]
fn a_ts_method_with_types_and_an_interface() {
    let ts = "export interface Item {\n  name: string;\n}\n\nexport class Cart {\n  private items: Item[] = [];\n\n  add(item: Item): void {\n    this.items.push(item);\n  }\n}\n";
    let out = splice(
        &TYPESCRIPT,
        ts,
        "add(item: Item): number {\n  return this.items.push(item);\n}\n",
    );
    assert!(
        out.contains("  add(item: Item): number {\n    return this.items.push(item);\n  }\n}"),
        "{out}"
    );
    let out = splice(
        &TYPESCRIPT,
        ts,
        "export interface Item {\n  name: string;\n  price: number;\n}\n",
    );
    assert!(
        out.starts_with(
            "export interface Item {\n  name: string;\n  price: number;\n}\n\nexport class Cart"
        ),
        "{out}"
    );
}

const GO_FILE: &str = "package store\n\nimport \"strings\"\n\n// Store keeps items.\ntype Store struct {\n\titems map[string]int\n}\n\n// Add adds one.\nfunc (s *Store) Add(name string) {\n\ts.items[strings.ToLower(name)]++\n}\n\nfunc Count(s *Store) int {\n\treturn len(s.items)\n}\n";

#[test]
fn go_methods_match_by_receiver_and_imports_join_the_file() {
    let out = splice(
        &GO,
        GO_FILE,
        "func (s *Store) Add(name string, n int) {\n\ts.items[strings.ToLower(name)] += n\n}\n",
    );
    assert!(out.contains("// Add adds one.\nfunc (s *Store) Add(name string, n int) {\n\ts.items[strings.ToLower(name)] += n\n}\n\nfunc Count"), "{out}");
    let out = splice(
        &GO,
        GO_FILE,
        "package store\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc Show(s *Store) string {\n\treturn fmt.Sprint(len(s.items))\n}\n",
    );
    assert!(
        out.starts_with("package store\n\nimport \"strings\"\n\nimport \"fmt\"\n\n// Store"),
        "{out}"
    );
    assert!(out.ends_with("\treturn len(s.items)\n}\n\nfunc Show(s *Store) string {\n\treturn fmt.Sprint(len(s.items))\n}\n"), "{out}");
    // Into an import block.
    let block = GO_FILE.replace("import \"strings\"", "import (\n\t\"strings\"\n)");
    let out = splice(
        &GO,
        &block,
        "import \"fmt\"\n\nfunc Show() { fmt.Println() }\n",
    );
    assert!(
        out.contains("import (\n\t\"strings\"\n\t\"fmt\"\n)"),
        "{out}"
    );
}

const RS: &str = "use std::collections::HashMap;\n\n/// A stack.\n#[derive(Debug, Default)]\npub struct Stack {\n    items: Vec<i32>,\n}\n\nimpl Stack {\n    pub fn push(&mut self, x: i32) {\n        self.items.push(x);\n    }\n}\n\nimpl std::fmt::Display for Stack {\n    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {\n        write!(f, \"{:?}\", self.items)\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";

#[test]
fn rust_methods_go_into_their_own_impl_block() {
    let out = splice(
        &RUST,
        RS,
        "impl Stack {\n    pub fn pop(&mut self) -> Option<i32> {\n        self.items.pop()\n    }\n}\n",
    );
    assert!(out.contains("        self.items.push(x);\n    }\n\n    pub fn pop(&mut self) -> Option<i32> {\n        self.items.pop()\n    }\n}\n\nimpl std::fmt::Display"), "{out}");
    // A method alone, changed: found by its name.
    let out = splice(
        &RUST,
        RS,
        "pub fn push(&mut self, x: i32) {\n    if x > 0 {\n        self.items.push(x);\n    }\n}\n",
    );
    assert!(
        out.contains("impl Stack {\n    pub fn push(&mut self, x: i32) {\n        if x > 0 {"),
        "{out}"
    );
    // A method alone, new: into the type's own impl, not the trait's.
    let out = splice(
        &RUST,
        RS,
        "pub fn len(&self) -> usize {\n    self.items.len()\n}\n",
    );
    assert!(out.contains("    }\n\n    pub fn len(&self) -> usize {\n        self.items.len()\n    }\n}\n\nimpl std::fmt::Display"), "{out}");
    // A struct given without its attributes keeps them; with them, they change.
    let out = splice(
        &RUST,
        RS,
        "pub struct Stack {\n    items: Vec<i32>,\n    cap: usize,\n}\n",
    );
    assert!(out.contains("/// A stack.\n#[derive(Debug, Default)]\npub struct Stack {\n    items: Vec<i32>,\n    cap: usize,\n}"), "{out}");
    let out = splice(
        &RUST,
        RS,
        "#[derive(Clone)]\npub struct Stack {\n    items: Vec<i32>,\n}\n",
    );
    assert!(
        out.contains("\n#[derive(Clone)]\npub struct Stack"),
        "{out}"
    );
    assert!(!out.contains("A stack"), "{out}");
    // A new impl block comes whole.
    let out = splice(&RUST, RS, "impl From<Vec<i32>> for Stack {\n    fn from(items: Vec<i32>) -> Self {\n        Stack { items }\n    }\n}\n");
    assert!(out.ends_with("mod tests {\n    #[test]\n    fn t() {}\n}\n\nimpl From<Vec<i32>> for Stack {\n    fn from(items: Vec<i32>) -> Self {\n        Stack { items }\n    }\n}\n"), "{out}");
}

const LUA_FILE: &str = "local M = {}\n\nlocal function clamp(x, lo, hi)\n  return math.max(lo, math.min(hi, x))\nend\n\nfunction M.add(a, b)\n  return a + b\nend\n\nreturn M\n";

#[test]
fn lua_functions_of_a_module_stay_before_its_return() {
    let out = splice(
        &LUA,
        LUA_FILE,
        "function M.sub(a, b)\n  return a - b\nend\n",
    );
    assert!(
        out.ends_with(
            "  return a + b\nend\n\nfunction M.sub(a, b)\n  return a - b\nend\n\nreturn M\n"
        ),
        "{out}"
    );
    let out = splice(&LUA, LUA_FILE, "local function clamp(x, lo, hi)\n  if lo > hi then error(\"lo > hi\") end\n  return math.max(lo, math.min(hi, x))\nend\n");
    assert!(
        out.contains("local function clamp(x, lo, hi)\n  if lo > hi"),
        "{out}"
    );
    let out = splice(
        &LUA,
        LUA_FILE,
        "local util = require(\"util\")\n\nfunction M.add(a, b)\n  return util.sum(a, b)\nend\n",
    );
    assert!(
        out.starts_with("local util = require(\"util\")\n\nlocal M = {}\n"),
        "{out}"
    );
}

#[test]
fn a_whole_file_keeps_the_imports_and_package_it_dropped_but_uses() {
    let new = "type Store struct {\n\titems map[string]int\n}\n\nfunc Count(s *Store) int {\n\treturn len(strings.Fields(\"a b\"))\n}\n";
    let out = keep_imports(&GO, GO_FILE, new);
    assert!(
        out.starts_with("package store\n\nimport \"strings\"\n\ntype Store"),
        "{out}"
    );
    let new_js = "function load(p) {\n  return p;\n}\nmodule.exports = { load };\n";
    // `fs` is no longer used: it stays out.
    assert_eq!(keep_imports(&JAVASCRIPT, JS, new_js), new_js);
}

#[test]
fn a_reply_cut_off_inside_its_last_definition_keeps_the_ones_before() {
    let code = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return [1, 2,";
    assert_eq!(
        without_cut_tail(&JAVASCRIPT, code),
        Some("function a() {\n  return 1;\n}\n\n")
    );
    assert_eq!(without_cut_tail(&JAVASCRIPT, "function a() {}\n"), None);
}

#[test]
fn an_import_of_what_the_file_defines_is_not_carried_over() {
    // 1.5B's replies: `Item` imported from a file that was never there,
    // `capitalize` from the file it is in; `trim` is wanted.
    let ts = "export interface Item {\n  qty: number;\n}\n\nexport function capitalize(s: string): string {\n  return s;\n}\n";
    let reply = "import { Item } from './item';\nimport { capitalize } from './text';\nimport { trim } from './util';\n\nexport function capitalize(s: string): string {\n  return s.charAt(0).toUpperCase() + s.slice(1);\n}\n";
    assert_eq!(
        splice(&TYPESCRIPT, ts, reply),
        format!(
            "import {{ trim }} from './util';\n\n{}",
            ts.replace(
                "return s;",
                "return s.charAt(0).toUpperCase() + s.slice(1);"
            )
        )
    );
}

#[test]
fn a_whole_file_drops_a_new_import_of_what_it_defines() {
    let ts = "import { trim } from './util';\n\nexport interface Item {\n  qty: number;\n}\n\nexport const f = (i: Item) => trim(String(i.qty));\n";
    let whole = format!(
        "import {{ Item }} from './cart';\n{}",
        ts.replace("qty: number;", "qty: number;\n  sku?: string;")
    );
    assert_eq!(
        keep_imports(&TYPESCRIPT, ts, &whole),
        ts.replace("qty: number;", "qty: number;\n  sku?: string;")
    );
}
