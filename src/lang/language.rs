//! What one row of the language table holds (its grammar, names,
//! comment syntax, queries and hooks), and what a row can do by itself. A
//! leaf below the table and every function that reads a language.

use std::sync::OnceLock;

use tree_sitter::{Parser, Query, Tree};

use super::forms::{ReplyForm, SpliceError};
use super::modules::ModuleStyle;

/// One language Chimera understands.
pub struct Language {
    /// Stable identifier, also the directory of its queries: `python`.
    pub id: &'static str,
    /// What people call it: `Python`.
    pub name: &'static str,
    /// File name endings, lower case, without the dot.
    pub extensions: &'static [&'static str],
    /// What starts a line comment (where Remora writes node IDs).
    pub line_comment: &'static str,
    /// The fence tag models use for it in Markdown: `python`.
    pub fence: &'static str,
    /// Other names models write it under (fence tags: `golang`).
    pub also_called: &'static [&'static str],
    /// What a method alone must sit in to parse (JavaScript's class body),
    /// before and after it.
    pub method_context: Option<(&'static str, &'static str)>,
    /// How a method is written alone, for prompts that say a changed
    /// method may come without its class.
    pub method_example: &'static str,
    /// Node kinds that belong to the definition right after them when no
    /// blank line separates them (doc comments, Rust attributes).
    pub attached: &'static [&'static str],
    /// A rule of the language the grammar does not enforce: the row of the
    /// first breach and what the language would say.
    pub(super) own_rule: Option<OwnRule>,
    /// How its imports name the project's files.
    pub modules: ModuleStyle,
    /// Names every file has without importing them (JavaScript's `Error`,
    /// `Math`): an import of only these from a module that is not there
    /// is dropped rather than sent back.
    pub globals: &'static [&'static str],
    /// Every name a file may call without defining, importing or binding
    /// it, when the list is complete: a change that calls any other name
    /// nothing in the file mentions is refused (see
    /// [`super::undefined_calls`]). `None`: not checked.
    pub builtins: Option<&'static [&'static str]>,
    /// What the language splices its own way, if anything (Python).
    pub own_splice: Option<OwnSplice>,
    /// Where a project's tests in this language run: its own
    /// environment, found from its root and the user's variables; `None`
    /// when the project has no way of running them that this knows.
    pub test_environment: Option<TestEnvironment>,
    pub(super) grammar: tree_sitter_language::LanguageFn,
    pub(super) sources: Sources,
    pub(super) compiled: OnceLock<Result<Queries, QueryError>>,
}

/// A check of a syntax tree: the row of the first breach and what the
/// language would say of it.
type OwnRule = fn(tree_sitter::Node<'_>, &str) -> Option<(usize, String)>;

/// Finds a project's test environment from its root, the folder a task
/// is about (inside the root: a subproject's own environment is nearer)
/// and a reader of the user's environment variables.
pub type TestEnvironment = fn(
    &std::path::Path,
    &std::path::Path,
    &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<super::environment::Environment>;

/// How a language splices a model's reply into a file its own way, in
/// place of the generic splicer (Python, whose indentation is syntax).
/// Each hook is given the language's row.
#[derive(Clone, Copy)]
pub struct OwnSplice {
    /// The shape of a reply's code, against the target file's text.
    pub classify: fn(&Language, &str, Option<&str>) -> ReplyForm,
    /// The code without a last definition the reply was cut off in.
    pub without_cut_tail: for<'a> fn(&Language, &'a str) -> Option<&'a str>,
    /// A reply's definitions spliced into the target (cursor line from 0).
    pub splice: fn(&Language, &str, &str, Option<usize>) -> Result<String, SpliceError>,
    /// A whole new file with the imports it still needs put back.
    pub keep_imports: fn(&Language, &str, &str) -> String,
}

/// The text of a language's query files, as written under `queries/`.
#[derive(Clone, Copy)]
pub(super) struct Sources {
    pub(super) definitions: &'static str,
    pub(super) calls: &'static str,
    pub(super) imports: &'static str,
    pub(super) docs: &'static str,
}

/// A language's compiled queries.
pub struct Queries {
    pub definitions: Query,
    pub calls: Query,
    pub imports: Query,
    pub docs: Query,
    /// The three above as one, for indexing a whole file.
    pub indexing: Indexing,
}

/// The definitions, calls and imports queries compiled as one, so that
/// indexing walks a file's tree once rather than once per query (the walk,
/// not the matching, is most of a query's cost). Its patterns are the
/// definitions', then the calls', then the imports', each in its own order.
pub struct Indexing {
    pub query: Query,
    /// The index of the first calls pattern.
    pub calls_from: usize,
    /// The index of the first imports pattern.
    pub imports_from: usize,
}

/// Which query of [`Indexing`] a pattern came from, and its index there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexingPattern {
    Definition(usize),
    Call(usize),
    Import(usize),
}

impl Indexing {
    /// Where pattern `pattern` of the combined query came from.
    pub fn pattern(&self, pattern: usize) -> IndexingPattern {
        if pattern < self.calls_from {
            IndexingPattern::Definition(pattern)
        } else if pattern < self.imports_from {
            IndexingPattern::Call(pattern - self.calls_from)
        } else {
            IndexingPattern::Import(pattern - self.imports_from)
        }
    }
}

/// A query file that does not compile against its grammar.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("queries/{language}/{file}.scm does not compile: {message}")]
pub struct QueryError {
    pub language: &'static str,
    pub file: &'static str,
    pub message: String,
}

macro_rules! sources {
    ($dir:literal) => {
        Sources {
            definitions: include_str!(concat!("../../queries/", $dir, "/definitions.scm")),
            calls: include_str!(concat!("../../queries/", $dir, "/calls.scm")),
            imports: include_str!(concat!("../../queries/", $dir, "/imports.scm")),
            docs: include_str!(concat!("../../queries/", $dir, "/docs.scm")),
        }
    };
}

pub(super) use sources;

impl std::fmt::Debug for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

impl PartialEq for Language {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Language {}

impl Language {
    pub fn grammar(&self) -> tree_sitter::Language {
        self.grammar.into()
    }

    /// Whether a Markdown fence tag (lower case) names this language:
    /// its id, its own tag, its extensions, or another name models use.
    pub fn is_fence(&self, tag: &str) -> bool {
        tag == self.id
            || tag == self.fence
            || self.extensions.contains(&tag)
            || self.also_called.contains(&tag)
    }

    /// Parses `text`; `None` only if tree-sitter itself fails (it never should).
    pub fn parse(&self, text: &str) -> Option<Tree> {
        let mut parser = Parser::new();
        parser.set_language(&self.grammar()).ok()?;
        parser.parse(text, None)
    }

    /// What `text` imports, as written (`"./util"`, `lodash`): the
    /// imports query's modules.
    pub fn import_specs(&self, text: &str) -> std::collections::BTreeSet<String> {
        use tree_sitter::StreamingIterator;
        let mut out = std::collections::BTreeSet::new();
        let (Some(tree), Ok(queries)) = (self.parse(text), self.queries()) else {
            return out;
        };
        let query = &queries.imports;
        let Some(module) = query.capture_index_for_name("import.module") else {
            return out;
        };
        let mut cursor = tree_sitter::QueryCursor::new();
        let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
        while let Some(m) = matches.next() {
            for c in m.captures.iter().filter(|c| c.index == module) {
                if let Some(spec) = text.get(c.node.byte_range()) {
                    out.insert(
                        spec.trim_matches(|c| c == '"' || c == '\'' || c == '`')
                            .to_owned(),
                    );
                }
            }
        }
        out
    }
}
