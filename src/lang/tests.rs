use super::*;

/// `(qualified name, kind, first line, last line)` of each definition,
/// lines 1-based as an editor shows them.
fn defs(lang: &Language, text: &str) -> Vec<(String, DefKind, usize, usize)> {
    definitions(lang, text)
        .into_iter()
        .map(|d| (d.qualified_name(), d.kind, d.start_line + 1, d.end_line + 1))
        .collect()
}

fn named(lang: &Language, text: &str) -> Vec<String> {
    definitions(lang, text)
        .into_iter()
        .map(|d| d.qualified_name())
        .collect()
}

use DefKind::{Class, Function, Method};

#[test]
fn every_query_of_every_language_compiles() {
    for lang in LANGUAGES {
        if let Err(e) = lang.queries() {
            panic!("{e}");
        }
    }
}

#[test]
fn an_inherited_query_that_names_no_language_is_an_error() {
    let err = with_inherited("; inherits: cobol\n(x) @y", |s| s.calls).unwrap_err();
    assert!(err.contains("cobol"), "{err}");
}

#[test]
fn a_path_finds_its_language_by_extension_in_any_case() {
    let id = |p| for_path(p).map(|l| l.id);
    assert_eq!(id("pkg/mod.py"), Some("python"));
    assert_eq!(id("PKG/MOD.PY"), Some("python"));
    assert_eq!(id("stubs/x.pyi"), Some("python"));
    assert_eq!(id("web/app.tsx"), Some("tsx"));
    assert_eq!(id("web/app.ts"), Some("typescript"));
    assert_eq!(id("web/app.mjs"), Some("javascript"));
    assert_eq!(id("cmd/main.go"), Some("go"));
    assert_eq!(id("src/lib.rs"), Some("rust"));
    assert_eq!(id("lua/chimera/init.lua"), Some("lua"));
    assert_eq!(id("Makefile"), None);
    assert_eq!(
        id("a.py/README"),
        None,
        "a directory's dot is not an extension"
    );
    assert_eq!(id("notes.py.txt"), None);
    assert_eq!(id(".py"), Some("python"));
    assert_eq!(by_name("ts").map(|l| l.id), Some("typescript"));
    assert_eq!(by_name("Rust").map(|l| l.id), Some("rust"));
}

#[test]
fn python_definitions_keep_decorators_and_find_methods_by_their_class() {
    let text = "import os\n\n@cache\ndef f(x):\n    def inner():\n        pass\n    return x\n\nclass A(B):\n    @property\n    def p(self):\n        return 1\n\n    class Meta:\n        pass\n";
    assert_eq!(
        defs(&PYTHON, text),
        [
            ("f".into(), Function, 3, 7),
            ("inner".into(), Function, 5, 6),
            ("A".into(), Class, 9, 15),
            ("A.p".into(), Method, 10, 12),
            ("Meta".into(), Class, 14, 15),
        ]
    );
    let inner = &definitions(&PYTHON, text)[1];
    assert_eq!(inner.parent.as_deref(), Some("f"));
    assert_eq!(inner.indent, "    ");
}

#[test]
fn javascript_definitions_include_bound_arrows_exports_and_their_doc_comments() {
    let text = r#"'use strict';
const path = require('path');

/** Adds. */
export function add(a, b) {
  return a + b;
}

const double = (x) => x * 2;
let a = () => 1, b = function () { return 2; };

class Cart extends Base {
  items = [];
  onClick = () => this.total();
  total() {
    return this.items.length;
  }
  static from(list) { return new Cart(list); }
}

export default class Shop {}

module.exports = { add };
"#;
    assert_eq!(
        defs(&JAVASCRIPT, text),
        [
            ("add".into(), Function, 4, 7),
            ("double".into(), Function, 9, 9),
            ("a".into(), Function, 10, 10),
            ("b".into(), Function, 10, 10),
            ("Cart".into(), Class, 12, 19),
            ("Cart.onClick".into(), Method, 14, 14),
            ("Cart.total".into(), Method, 15, 17),
            ("Cart.from".into(), Method, 18, 18),
            ("Shop".into(), Class, 21, 21),
        ]
    );
}

#[test]
fn typescript_and_tsx_definitions_include_types_interfaces_and_components() {
    let text = r#"import { h } from "./h";

export interface Shape {
  area(): number;
}

type Id = string | number;

enum Color { Red, Green }

export abstract class Base implements Shape {
  abstract area(): number;
  protected describe(): string {
    return `area ${this.area()}`;
  }
}

namespace Geometry {
  export function unit(): number { return 1; }
}

export const square = (n: number): number => n * n;
"#;
    assert_eq!(
        named(&TYPESCRIPT, text),
        [
            "Shape",
            "Id",
            "Color",
            "Base",
            "Base.area",
            "Base.describe",
            "Geometry",
            "unit",
            "square"
        ]
    );
    let tsx = r#"export function App({ name }: Props) {
  return <div className="app">{name}</div>;
}

const Button = () => <button onClick={() => go()}>Go</button>;
"#;
    assert_eq!(
        defs(&TSX, tsx),
        [
            ("App".into(), Function, 1, 3),
            ("Button".into(), Function, 5, 5),
        ]
    );
    assert_eq!(syntax_problem(&TSX, tsx), None);
    assert!(
        syntax_problem(&TYPESCRIPT, tsx).is_some(),
        "JSX is not TypeScript"
    );
}

#[test]
fn go_methods_belong_to_their_receiver_type_and_keep_their_doc_comment() {
    let text = r#"//go:build linux

package store

import (
	"fmt"
	s "strings"
)

// Store keeps items.
type Store struct {
	items []string
}

type (
	ID   int
	Name = string
)

// Add appends one.
func (st *Store) Add(item string) {
	st.items = append(st.items, s.TrimSpace(item))
}

func (st Store) Len() int { return len(st.items) }

func (l *List[T]) Push(v T) {}

func New() *Store {
	fmt.Println("new")
	return &Store{}
}
"#;
    assert_eq!(
        defs(&GO, text),
        [
            ("Store".into(), Class, 10, 13),
            ("ID".into(), Class, 16, 16),
            ("Name".into(), Class, 17, 17),
            ("Store.Add".into(), Method, 20, 23),
            ("Store.Len".into(), Method, 25, 25),
            ("List.Push".into(), Method, 27, 27),
            ("New".into(), Function, 29, 32),
        ]
    );
}

#[test]
fn rust_impl_methods_belong_to_the_type_and_attributes_stay_with_their_item() {
    let text = r#"//! A store.

use std::collections::HashMap;

/// Where items live.
#[derive(Debug, Default)]
pub struct Store<T> {
    items: HashMap<String, T>,
}

impl<T: Clone> Store<T> {
    /// Adds one.
    pub fn add(&mut self, k: &str, v: T) {
        self.items.insert(k.into(), v);
    }
}

impl std::fmt::Display for Store<u8> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) }
}

pub trait Named {
    fn name(&self) -> String;
    fn shout(&self) -> String { self.name().to_uppercase() }
}

pub enum Kind { A, B }

mod inner {
    pub fn helper() {}
}

#[cfg(test)]
mod tests;

fn main() {}
"#;
    assert_eq!(
        defs(&RUST, text),
        [
            ("Store".into(), Class, 5, 9),
            ("Store.add".into(), Method, 12, 15),
            ("Store.fmt".into(), Method, 19, 19),
            ("Named".into(), Class, 22, 25),
            ("Named.name".into(), Method, 23, 23),
            ("Named.shout".into(), Method, 24, 24),
            ("Kind".into(), Class, 27, 27),
            ("inner".into(), Class, 29, 31),
            ("helper".into(), Function, 30, 30),
            ("main".into(), Function, 36, 36),
        ]
    );
    let helper = definitions(&RUST, text).remove(8);
    assert_eq!(helper.parent.as_deref(), Some("inner"));
}

#[test]
fn lua_definitions_include_local_module_and_assigned_functions() {
    let text = r#"#!/usr/bin/env lua
local M = {}

-- Greets.
local function greet(name)
  return "hi " .. name
end

function M.setup(opts)
  M.opts = opts
end

function M:run()
  return greet(self.opts.name)
end

M.stop = function()
  return true
end

local helper = function() end

return M
"#;
    assert_eq!(
        defs(&LUA, text),
        [
            ("greet".into(), Function, 4, 7),
            ("M.setup".into(), Method, 9, 11),
            ("M.run".into(), Method, 13, 15),
            ("M.stop".into(), Method, 17, 19),
            ("helper".into(), Function, 21, 21),
        ]
    );
}

#[test]
fn a_comment_after_code_on_its_line_or_above_a_blank_line_is_not_a_doc_comment() {
    let text = "let x = 1; // the count\nfunction f() {}\n\n// about g\n\nfunction g() {}\n";
    assert_eq!(
        defs(&JAVASCRIPT, text),
        [("f".into(), Function, 2, 2), ("g".into(), Function, 6, 6)]
    );
}

#[test]
fn syntax_problems_name_the_broken_line_in_every_language() {
    let cases: [(&Language, &str, usize); 6] = [
        (&PYTHON, "x = 1\ny = (2 +\n\nz = 3\n", 2),
        (
            &JAVASCRIPT,
            "function f() {\n  return 1;\n}\nfunction g( {\n}\n",
            4,
        ),
        (&TYPESCRIPT, "const a: number = 1;\nconst b: = 2;\n", 2),
        (&GO, "package x\n\nfunc f() {\n\treturn 1 +\n}\n", 4),
        (&RUST, "fn f() -> u8 {\n    1\n}\nfn g( {}\n", 4),
        (
            &LUA,
            "local function f()\n  return 1\nend\nfunction g(\nend\n",
            4,
        ),
    ];
    for (lang, text, line) in cases {
        let problem = syntax_problem(lang, text)
            .unwrap_or_else(|| panic!("{}: no problem found in {text:?}", lang.id));
        assert_eq!(problem.line, line, "{}: {problem}", lang.id);
        assert!(
            problem.excerpt.contains(&format!(">{line:>4} |")),
            "{problem}"
        );
        let said = problem.to_string();
        assert!(
            said.contains(lang.name) || said.contains("SyntaxError"),
            "{said}"
        );
    }
    for (lang, ok) in [
        (&GO, "package x\n\nfunc f() int { return 1 }\n"),
        (&RUST, "#![allow(dead_code)]\nfn f() -> u8 { 1 }\n"),
        (&LUA, "#!/usr/bin/env lua\nreturn {}\n"),
    ] {
        assert_eq!(syntax_problem(lang, ok), None, "{}", lang.id);
    }
}

#[test]
fn an_outline_echoed_back_is_a_python_syntax_problem_only() {
    let problem = syntax_problem(&PYTHON, "def f(x):  # line 5\n").unwrap();
    assert_eq!(problem.line, 1);
    assert!(problem.to_string().contains("expected an indented block"));
}

#[test]
fn a_keyword_as_a_lua_local_is_a_syntax_problem() {
    // 1.5B's `M.split`: `end` is a keyword, and LuaJIT says
    // "'<name>' expected near 'end'" on line 6.
    let text = "local M = {}\n\nfunction M.split(s, sep)\n  local parts = {}\n  local start = 1\n  while start <= #s do\n    local end = s:find(sep, start)\n    if end then\n      table.insert(parts, s:sub(start, end - 1))\n      start = end + 1\n    else\n      table.insert(parts, s:sub(start))\n      break\n    end\n  end\n  return parts\nend\n\nreturn M\n";
    let problem = syntax_problem(&LUA, text).expect("a syntax problem");
    assert_eq!(problem.line, 7, "{problem}");
}
