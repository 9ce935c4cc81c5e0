//! The languages Chimera reads: one row per language (grammar, file
//! extensions, comment syntax, queries), so that adding a language is a
//! grammar crate, a row here and its `.scm` files under `queries/`.
//!
//! Queries are compiled the first time a file of their language is read,
//! so `setup{}` pays nothing for languages a project does not use.

pub mod definitions;
mod docs;
pub mod environment;
pub mod forms;
pub mod language;
mod modules;
pub mod reply;
pub mod splice;
pub mod syntax;
mod undefined;

use std::sync::OnceLock;

use tree_sitter::Query;

pub use environment::Environment;
use language::{sources, Sources};
pub use language::{
    Indexing, IndexingPattern, Language, OwnSplice, Queries, QueryError, TestEnvironment,
};

pub use definitions::{
    assemble, definitions, definitions_in, found_in, found_order, line_start, lone_methods, names,
    outermost, DefKind, Definition, Found, Founds, LoneMethods,
};
pub use docs::docs_moved_out_of_bodies;
pub use forms::SyntaxProblem;
pub use modules::{ecma_paths, python_relative_paths, ModuleStyle};
pub use syntax::syntax_problem;
pub use undefined::undefined_calls;

/// JavaScript's built-in objects and the functions every runtime has.
#[rustfmt::skip]
const ECMA_GLOBALS: &[&str] = &[
    "AbortController", "AggregateError", "Array", "ArrayBuffer", "BigInt", "Boolean", "DataView",
    "Date", "Error", "EvalError", "Infinity", "Intl", "JSON", "Map", "Math", "NaN", "Number",
    "Object", "Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set",
    "String", "Symbol", "SyntaxError", "TextDecoder", "TextEncoder", "TypeError", "URIError", "URL",
    "URLSearchParams", "WeakMap", "WeakRef", "WeakSet", "clearInterval", "clearTimeout", "console",
    "fetch", "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt", "queueMicrotask",
    "setInterval", "setTimeout", "structuredClone",
];

/// Query files only inherited by others (`; inherits: ecma`).
const INHERITED: &[(&str, Sources)] = &[("ecma", sources!("ecma"))];

pub static PYTHON: Language = Language {
    id: "python",
    name: "Python",
    extensions: &["py", "pyi"],
    line_comment: "#",
    fence: "python",
    also_called: &["python3"],
    method_context: None,
    method_example: "`def name(self, ...):`",
    attached: &[],
    own_rule: Some(syntax::python_empty_body),
    own_splice: Some(OwnSplice {
        classify: crate::python::splice::classify,
        without_cut_tail: crate::python::splice::without_cut_tail,
        splice: crate::python::splice::splice_definitions,
        keep_imports: crate::python::imports::keep_imports,
    }),
    test_environment: Some(crate::python::environment::find),
    modules: ModuleStyle::Python,
    globals: &[],
    builtins: Some(crate::python::builtins::BUILTINS),
    grammar: tree_sitter_python::LANGUAGE,
    sources: sources!("python"),
    compiled: OnceLock::new(),
};

pub static JAVASCRIPT: Language = Language {
    id: "javascript",
    name: "JavaScript",
    extensions: &["js", "mjs", "cjs", "jsx"],
    line_comment: "//",
    fence: "javascript",
    also_called: &[],
    method_context: Some(("class Chimera__ {\n", "\n}\n")),
    method_example: "`name(args) { ... }`",
    attached: &["comment"],
    own_rule: None,
    own_splice: None,
    test_environment: Some(crate::suites::node::find),
    modules: ModuleStyle::Ecma,
    globals: ECMA_GLOBALS,
    builtins: None,
    grammar: tree_sitter_javascript::LANGUAGE,
    sources: sources!("javascript"),
    compiled: OnceLock::new(),
};

pub static TYPESCRIPT: Language = Language {
    id: "typescript",
    name: "TypeScript",
    extensions: &["ts", "mts", "cts"],
    line_comment: "//",
    fence: "typescript",
    also_called: &[],
    method_context: Some(("class Chimera__ {\n", "\n}\n")),
    method_example: "`name(args): Type { ... }`",
    attached: &["comment"],
    own_rule: None,
    own_splice: None,
    test_environment: Some(crate::suites::node::find),
    modules: ModuleStyle::Ecma,
    globals: ECMA_GLOBALS,
    builtins: None,
    grammar: tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
    sources: sources!("typescript"),
    compiled: OnceLock::new(),
};

pub static TSX: Language = Language {
    id: "tsx",
    name: "TSX",
    extensions: &["tsx"],
    line_comment: "//",
    fence: "tsx",
    also_called: &["typescript", "ts"],
    method_context: Some(("class Chimera__ {\n", "\n}\n")),
    method_example: "`name(args): Type { ... }`",
    attached: &["comment"],
    own_rule: None,
    own_splice: None,
    test_environment: Some(crate::suites::node::find),
    modules: ModuleStyle::Ecma,
    globals: ECMA_GLOBALS,
    builtins: None,
    grammar: tree_sitter_typescript::LANGUAGE_TSX,
    sources: sources!("typescript"),
    compiled: OnceLock::new(),
};

pub static GO: Language = Language {
    id: "go",
    name: "Go",
    extensions: &["go"],
    line_comment: "//",
    fence: "go",
    also_called: &["golang"],
    method_context: None,
    method_example: "with its receiver: `func (s *Store) Name(...) { ... }`",
    attached: &["comment"],
    own_rule: None,
    own_splice: None,
    test_environment: Some(crate::suites::go::find),
    modules: ModuleStyle::Go,
    globals: &[],
    builtins: None,
    grammar: tree_sitter_go::LANGUAGE,
    sources: sources!("go"),
    compiled: OnceLock::new(),
};

pub static RUST: Language = Language {
    id: "rust",
    name: "Rust",
    extensions: &["rs"],
    line_comment: "//",
    fence: "rust",
    also_called: &[],
    method_context: None,
    method_example: "`fn name(&self, ...) { ... }`, or inside its `impl` block",
    attached: &["line_comment", "block_comment", "attribute_item"],
    own_rule: None,
    own_splice: None,
    test_environment: Some(crate::suites::cargo::find),
    modules: ModuleStyle::Rust,
    globals: &[],
    builtins: None,
    grammar: tree_sitter_rust::LANGUAGE,
    sources: sources!("rust"),
    compiled: OnceLock::new(),
};

pub static LUA: Language = Language {
    id: "lua",
    name: "Lua",
    extensions: &["lua"],
    line_comment: "--",
    fence: "lua",
    also_called: &[],
    method_context: None,
    method_example: "`function M.name(...) ... end`",
    attached: &["comment"],
    own_rule: Some(syntax::lua_keyword_name),
    own_splice: None,
    test_environment: Some(crate::suites::busted::find),
    modules: ModuleStyle::Lua,
    globals: &[],
    builtins: None,
    grammar: tree_sitter_lua::LANGUAGE,
    sources: sources!("lua"),
    compiled: OnceLock::new(),
};

/// Every language, in the order `:checkhealth` lists them.
pub static LANGUAGES: [&Language; 7] = [&PYTHON, &JAVASCRIPT, &TYPESCRIPT, &TSX, &GO, &RUST, &LUA];

/// The language of a project path, by its extension (any case: `A.PY` is
/// Python on the file systems that would open it as `a.py`).
pub fn for_path(path: &str) -> Option<&'static Language> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let (_, ext) = name.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    LANGUAGES
        .iter()
        .copied()
        .find(|l| l.extensions.contains(&ext.as_str()))
}

/// The language of a project file, Python when Chimera reads no
/// language there (what a task about a file of unknown kind is written as).
pub fn of_file(path: &str) -> &'static Language {
    for_path(path).unwrap_or(&PYTHON)
}

/// Whether `path` is source code in a language Chimera reads.
pub fn is_source(path: &str) -> bool {
    for_path(path).is_some()
}

/// The language with this id or fence tag (`python`, `py`, `ts`, …).
pub fn by_name(name: &str) -> Option<&'static Language> {
    let name = name.to_ascii_lowercase();
    LANGUAGES.iter().copied().find(|l| l.is_fence(&name))
}

/// The key of the module the project file at `path` is (see
/// [`ModuleStyle`]); Python's dotted name for a file of no known language.
pub fn module_key(path: &str) -> String {
    for_path(path)
        .map_or(ModuleStyle::Python, |l| l.modules)
        .key_of_file(path)
}

impl Language {
    /// The compiled queries, compiling them on first use.
    pub fn queries(&self) -> Result<&Queries, &QueryError> {
        self.compiled.get_or_init(|| self.compile()).as_ref()
    }

    fn compile(&self) -> Result<Queries, QueryError> {
        let grammar = self.grammar();
        let error = |file, message| QueryError {
            language: self.id,
            file,
            message,
        };
        let source = |file, pick: fn(&Sources) -> &'static str| {
            with_inherited(pick(&self.sources), pick).map_err(|m| error(file, m))
        };
        // Rows count from the start of the inherited text.
        let compile = |file, source: &str| {
            Query::new(&grammar, source)
                .map_err(|e| error(file, format!("row {}: {}", e.row + 1, e.message)))
        };
        let texts = [
            source("definitions", |s| s.definitions)?,
            source("calls", |s| s.calls)?,
            source("imports", |s| s.imports)?,
        ];
        let definitions = compile("definitions", &texts[0])?;
        let calls = compile("calls", &texts[1])?;
        let imports = compile("imports", &texts[2])?;
        // Each part compiled alone first, so an error here is the
        // combination's own.
        let indexing = Indexing {
            query: compile("definitions+calls+imports", &texts.join("\n"))?,
            calls_from: definitions.pattern_count(),
            imports_from: definitions.pattern_count() + calls.pattern_count(),
        };
        Ok(Queries {
            definitions,
            calls,
            imports,
            docs: compile("docs", &source("docs", |s| s.docs)?)?,
            indexing,
        })
    }
}

/// `source` after the files its `; inherits: a, b` first line names.
fn with_inherited(source: &str, pick: fn(&Sources) -> &'static str) -> Result<String, String> {
    let first = source.lines().next().unwrap_or("");
    let Some(names) = first.trim().strip_prefix("; inherits:") else {
        return Ok(source.to_owned());
    };
    let mut out = String::new();
    for name in names.split(',').map(str::trim) {
        let inherited = INHERITED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| pick(s))
            .or_else(|| by_name(name).map(|l| pick(&l.sources)))
            .ok_or_else(|| format!("it inherits `{name}`, which is no language"))?;
        out.push_str(&with_inherited(inherited, pick)?);
        out.push('\n');
    }
    out.push_str(source);
    Ok(out)
}

#[cfg(test)]
mod tests;
