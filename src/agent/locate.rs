//! Finds the file a task is about the way a person reads the task: a file
//! the task names wins; then names that look like code (`snake_case`,
//! `CamelCase`, `Class.method`, `name()`, a word after "function"), then
//! other words, matched against the definitions in the project and
//! weighted by how rare they are. The buffer the task was typed in is
//! evidence, not an override: a task naming another file goes there.

use std::collections::BTreeMap;

mod defined;
pub use defined::Defined;

/// Extensions that make a word a file name (`mathx.py`), not `Class.method`.
const FILE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "lua", "md", "rst", "txt",
    "toml", "json", "yaml", "yml", "cfg", "ini", "sh", "c", "h", "cc", "cpp", "hpp", "java", "rb",
    "html", "css", "sql",
];

/// Words that never name code on their own: English function words and
/// what tasks say about code.
#[rustfmt::skip]
const NOT_NAMES: &[&str] = &[
    "a", "an", "the", "to", "of", "in", "on", "for", "from", "with", "and", "or", "it", "its",
    "this", "that", "these", "those", "is", "are", "be", "by", "as", "at", "into", "so", "all",
    "any", "each", "every", "when", "if", "not", "no", "but", "then", "than", "there", "which",
    "what", "too", "also", "only", "should", "must", "can", "does", "do", "make", "sure",
    "function", "functions", "method", "methods", "class", "classes", "file", "files", "module",
    "docstring", "docstrings", "comment", "comments", "code", "line", "lines", "parameter",
    "parameters", "argument", "arguments", "type", "types", "hint", "hints", "test", "tests",
    "unused", "new", "bug", "error", "errors", "value", "values", "list", "string", "number",
    "name", "names", "called", "named", "one", "two", "it's", "fails", "failing", "wrong",
];

/// Words that name what a task asks for: as a definition's name
/// (`Store.remove`) they are weak evidence of where the task goes.
#[rustfmt::skip]
const ACTIONS: &[&str] = &[
    "add", "remove", "delete", "rename", "move", "update", "change", "return", "raise", "use",
    "keep", "accept", "replace", "skip", "ignore", "include", "append", "match", "fix", "get",
    "set", "sort", "count", "clear", "load", "save", "read", "write", "print", "check", "parse",
    "find", "collapse", "strip", "split", "join", "format", "convert", "merge", "swap",
];

/// Files that fit a task as well as its place, named beside it at most:
/// a name a monorepo defines in hundreds of files names no more of them
/// to the model (whose budget would cut them) or in the summary.
const MOST_ALSO: usize = 8;

/// What a task mentions, in the order it says it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Mentions {
    /// Words that are file names or paths (`mathx.py`, `pkg/io.py`).
    pub files: Vec<String>,
    /// Names that look like code, as written (`parse_config`, `Store.add`).
    pub code: Vec<String>,
    /// Other words that may still be a definition's name (`mean`).
    pub words: Vec<String>,
}

impl Mentions {
    /// Every name the task may mean, code-like first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.code.iter().chain(&self.words).map(String::as_str)
    }
}

/// Whether `task` has one of `words` as a whole word, in any case.
pub fn has_word(task: &str, words: &[&str]) -> bool {
    task.split(|c: char| !c.is_alphanumeric())
        .any(|w| words.iter().any(|k| k.eq_ignore_ascii_case(w)))
}

/// Whether a word of a task is written as code is (`parse_config`,
/// `Store.add`, `getItem`, `MAX_SIZE`) rather than as English.
pub(crate) fn looks_like_code(word: &str) -> bool {
    let inner_upper =
        word.chars().skip(1).any(char::is_uppercase) && word.chars().any(char::is_lowercase);
    // `VERSION`, `MAX_SIZE`: a constant.
    let constant = word.len() > 2
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    word.contains('_') || word.contains('.') || inner_upper || constant
}

/// Reads what `task` mentions.
pub fn mentions(task: &str) -> Mentions {
    let mut out = Mentions::default();
    let tokens: Vec<&str> = task.split_whitespace().collect();
    for (i, raw) in tokens.iter().enumerate() {
        let called = raw.contains("()") || raw.starts_with('`');
        // Quotes and punctuation around a word; a path keeps its `./` or `../`.
        let word = raw
            .trim_matches(|c: char| "`'\"()[]{},;:!?".contains(c))
            .trim_end_matches('.');
        let word = word.strip_suffix("()").unwrap_or(word);
        // `remove(name)`: the name, called.
        let (word, called) = match word.split_once('(') {
            Some((name, _)) if !name.is_empty() => (name, true),
            _ => (word, called),
        };
        let ext = word.rsplit_once('.').map(|(_, e)| e.to_lowercase());
        if word.contains('/') || ext.is_some_and(|e| FILE_EXTENSIONS.contains(&e.as_str())) {
            push_new(&mut out.files, word);
            continue;
        }
        let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        // `Stack::len` (Rust) and `Cart:total` (Lua) name a method as
        // `Stack.len` does.
        let dotted = word.replace("::", ".").replace(':', ".");
        let word = dotted.as_str();
        if word.len() < 2
            || !word
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        {
            continue;
        }
        let after_kind = i > 0
            && matches!(
                tokens[i - 1].to_lowercase().as_str(),
                "function" | "method" | "class" | "def"
            );
        if called || after_kind || looks_like_code(word) {
            push_new(&mut out.code, word);
        } else if i > 0 && !NOT_NAMES.contains(&word.to_lowercase().as_str()) {
            // The first word of a task is what to do ("add", "fix").
            push_new(&mut out.words, word);
        }
    }
    out
}

fn push_new(list: &mut Vec<String>, word: &str) {
    if !list.iter().any(|w| w == word) {
        list.push(word.to_owned());
    }
}

/// The project files a task names: `token` as a path, else files whose
/// path ends with it, case-insensitively (`Mathx.py` finds `pkg/mathx.py`).
pub fn named_files(m: &Mentions, files: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for token in &m.files {
        let t = token.trim_start_matches("./").to_lowercase();
        let exact = files.iter().find(|f| f.to_lowercase() == t);
        let found: Vec<&String> = match exact {
            Some(f) => vec![f],
            None => files
                .iter()
                .filter(|f| f.to_lowercase().ends_with(&format!("/{t}")))
                .collect(),
        };
        for f in found {
            push_new(&mut out, f);
        }
    }
    out
}

/// Where a task goes, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    /// `file` does not exist yet: the task creates it.
    pub new: bool,
    /// Other files the task names (shown to the model with the file), or
    /// that fit as well (the summary names them).
    pub also: Vec<String>,
    /// Only the buffer the task was typed in points here.
    pub only_the_buffer: bool,
}

impl Place {
    pub fn existing(file: String, also: Vec<String>) -> Self {
        Place {
            file,
            new: false,
            also,
            only_the_buffer: false,
        }
    }
}

/// Whether the model should be asked where `task` goes: it names code
/// that exists nowhere yet (`add a function variance(xs)`), nothing points
/// to a file, and it was typed in no file's buffer. Typed in a buffer, the
/// buffer is where a person means new code to go (asked instead, a model
/// put `VERSION` into config.py for a task typed in `__init__.py`). A task
/// that names no code is left to a program that finds its files itself.
pub fn ask_where(task: &str, place: Option<&Place>) -> bool {
    place.is_none() && !mentions(task).code.is_empty()
}

/// The project file (or new file) an answer to "which file?" names.
pub fn file_in_answer(answer: &str, files: &[String]) -> Option<Place> {
    let m = mentions(answer);
    if let Some(f) = named_files(&m, files).into_iter().next() {
        return Some(Place::existing(f, vec![]));
    }
    new_files(&m, files)
        .into_iter()
        .find(|f| crate::lang::is_source(f))
        .map(|file| Place {
            file,
            new: true,
            also: vec![],
            only_the_buffer: false,
        })
}

/// A path the task names that no file of the project could be (`..`, an
/// absolute path, inside `.git`), when it names no file of the project:
/// the task is about a file Chimera may not touch, and no other file is
/// what it means. `None` when the task names a project file too (the
/// outside path is then data: "make load read ../data.json").
pub fn outside_the_project(task: &str, files: &[String]) -> Option<(String, String)> {
    let m = mentions(task);
    if !named_files(&m, files).is_empty() {
        return None;
    }
    m.files.iter().find_map(|t| {
        crate::paths::ProjectPath::parse(t)
            .err()
            .map(|e| (t.clone(), e.to_string()))
    })
}

/// Paths the task names that are no file of the project: files to create.
fn new_files(m: &Mentions, files: &[String]) -> Vec<String> {
    m.files
        .iter()
        .map(|t| t.trim_start_matches("./").to_owned())
        .filter(|t| {
            let lower = t.to_lowercase();
            !files.iter().any(|f| {
                let f = f.to_lowercase();
                f == lower || f.ends_with(&format!("/{lower}"))
            }) && crate::paths::ProjectPath::parse(t).is_ok()
        })
        .collect()
}

/// Which of `files` define each of `names` (a `Class.method` name: that
/// method, else — a method to add — the files of that class), as `defined`
/// tells what each file defines.
fn defining<'n, 'f>(
    names: &[&'n str],
    files: &'f [String],
    defined: Defined<'_>,
) -> BTreeMap<&'n str, Vec<&'f String>> {
    let mut defining: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    let mut class_of: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    if names.is_empty() {
        return defining;
    }
    let mut found = defined::files_defining(names, files, defined);
    found.sort_by_key(|(at, _)| *at);
    for (at, defs) in &found {
        let f = &files[*at];
        for n in names {
            if defs.iter().any(|d| d.is_named(n)) {
                defining.entry(n).or_default().push(f);
            } else if let Some((class, _)) = n.rsplit_once('.') {
                // A method to add (`Cart:remove`): where its class is.
                if defs.iter().any(|d| d.is_of(class)) {
                    class_of.entry(n).or_default().push(f);
                }
            }
        }
    }
    for (n, in_files) in class_of {
        defining.entry(n).or_insert(in_files);
    }
    defining
}

/// The file `task` is about among the project's `files`. `current`: the
/// file of the buffer it was typed in. `read` gives a file's text.
pub fn locate(
    task: &str,
    files: &[String],
    current: Option<&str>,
    read: impl Fn(&str) -> Option<String>,
) -> Option<Place> {
    let texts = |paths: &[&str], each: &mut dyn FnMut(String, String)| {
        for p in paths {
            if let Some(text) = read(p) {
                each(p.to_string(), text);
            }
        }
    };
    locate_by(task, files, current, Defined::Texts(Box::new(texts)))
}

/// [`locate`], learning what the files define from `defined`.
pub fn locate_by(
    task: &str,
    files: &[String],
    current: Option<&str>,
    defined: Defined<'_>,
) -> Option<Place> {
    let m = mentions(task);
    let named = named_files(&m, files);
    // A path that is no file yet can only be named to be created; the
    // files the task names beside it are what it is made from.
    if let Some(new) = new_files(&m, files).into_iter().next() {
        return Some(Place {
            file: new,
            new: true,
            also: named,
            only_the_buffer: false,
        });
    }
    if let Some((first, rest)) = named.split_first() {
        return Some(Place::existing(first.clone(), rest.to_vec()));
    }
    let names: Vec<&str> = m.names().collect();
    let defining = defining(&names, files, defined);
    let mut score: BTreeMap<&String, f64> = BTreeMap::new();
    for (name, in_files) in &defining {
        // Code-like names weigh most; a word that is also what tasks ask
        // for ("remove", "add") least; and what the task mentions first
        // a little more than what follows ("make slugify remove dots").
        let kind = if m.code.iter().any(|c| c == name) {
            3.0
        } else if ACTIONS.contains(&name.to_lowercase().as_str()) {
            0.3
        } else {
            1.0
        };
        let order = names.iter().position(|n| n == name).unwrap_or(0);
        let weight = kind / (1.0 + 0.05 * order as f64);
        for f in in_files {
            *score.entry(f).or_default() += weight / in_files.len() as f64;
        }
    }
    // The buffer the task was typed in wins a tie.
    if let Some(cur) = current {
        if let Some(s) = score.iter_mut().find(|(f, _)| f.as_str() == cur) {
            *s.1 += 0.01;
        }
    }
    let best = score.values().cloned().fold(0.0, f64::max);
    if best <= 0.0 {
        return current.map(|c| Place {
            only_the_buffer: true,
            ..Place::existing(c.to_owned(), vec![])
        });
    }
    let mut ranked: Vec<(&String, f64)> = score.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let file = ranked[0].0.clone();
    let also = ranked[1..]
        .iter()
        .filter(|(_, s)| *s >= best * 0.75 - 0.02)
        .take(MOST_ALSO)
        .map(|(f, _)| (*f).clone())
        .collect();
    Some(Place::existing(file, also))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Vec<(String, String)> {
        vec![
            (
                "mathx.py".into(),
                "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(lst):\n    return sorted(lst)[len(lst) // 2]\n\n\ndef legacy_helper():\n    return 1\n".into(),
            ),
            (
                "inventory.py".into(),
                "class Inventory:\n    def add(self, item):\n        pass\n\n    def remove(self, item):\n        pass\n\n    def mean(self):\n        return 0\n".into(),
            ),
            (
                "textutils.py".into(),
                "def slugify(text):\n    return text.lower()\n\n\ndef title_case(text):\n    return text.title()\n".into(),
            ),
            ("pkg/io.py".into(), "def load(path):\n    return open(path).read()\n".into()),
        ]
    }

    fn find(task: &str, current: Option<&str>) -> Option<Place> {
        let p = project();
        let files: Vec<String> = p.iter().map(|(f, _)| f.clone()).collect();
        locate(task, &files, current, |f| {
            p.iter().find(|(n, _)| n == f).map(|(_, t)| t.clone())
        })
    }

    fn file(task: &str, current: Option<&str>) -> Option<String> {
        find(task, current).map(|p| p.file)
    }

    /// `Stack::len` (Rust) and `Cart:total` (Lua) are how people name
    /// methods in those languages: typed from another file, they still
    /// find the file that defines them.
    #[test]
    fn rust_and_lua_method_names_find_their_file_from_anywhere() {
        let p: Vec<(String, String)> = vec![
            ("src/lib.rs".into(), "pub mod stack;\npub fn version() -> u32 { 1 }\n".into()),
            (
                "src/stack.rs".into(),
                "pub struct Stack { items: Vec<i32> }\n\nimpl Stack {\n    pub fn len(&self) -> usize { 0 }\n}\n".into(),
            ),
            (
                "lua/shop/util.lua".into(),
                "local M = {}\nfunction M.total(xs) return 0 end\nreturn M\n".into(),
            ),
            (
                "lua/shop/cart.lua".into(),
                "local Cart = {}\nfunction Cart:total()\n  return 0\nend\nreturn Cart\n".into(),
            ),
        ];
        let files: Vec<String> = p.iter().map(|(f, _)| f.clone()).collect();
        let file = |task: &str, current: &str| {
            locate(task, &files, Some(current), |f| {
                p.iter().find(|(n, _)| n == f).map(|(_, t)| t.clone())
            })
            .map(|place| place.file)
        };
        assert_eq!(
            file(
                "fix Stack::len: it must return the number of items",
                "src/lib.rs"
            )
            .as_deref(),
            Some("src/stack.rs")
        );
        assert_eq!(
            file(
                "make Cart:total return the sum of price times qty",
                "lua/shop/util.lua"
            )
            .as_deref(),
            Some("lua/shop/cart.lua")
        );
        // A method to add goes where its class is.
        assert_eq!(
            file(
                "add a method Cart:remove(name) that removes the item",
                "lua/shop/util.lua"
            )
            .as_deref(),
            Some("lua/shop/cart.lua")
        );
        assert_eq!(
            file("add Stack::push to push an item", "src/lib.rs").as_deref(),
            Some("src/stack.rs")
        );
        assert!(mentions("fix Stack::len: now")
            .code
            .contains(&"Stack.len".to_owned()));
        assert!(mentions("add Cart:remove(name)")
            .code
            .contains(&"Cart.remove".to_owned()));
    }

    #[test]
    fn a_file_the_task_names_wins_over_the_buffer_and_over_every_word() {
        assert_eq!(
            file("add a docstring to mean in mathx.py", Some("inventory.py")).as_deref(),
            Some("mathx.py")
        );
        assert_eq!(
            file("fix load in io.py", None).as_deref(),
            Some("pkg/io.py")
        );
        assert_eq!(
            file("Fix slugify in `TextUtils.py`.", None).as_deref(),
            Some("textutils.py")
        );
        let both = find("move median from mathx.py to textutils.py", None).unwrap();
        assert_eq!(
            (both.file.as_str(), both.also.as_slice()),
            ("mathx.py", &["textutils.py".to_owned()][..])
        );
    }

    #[test]
    fn names_that_look_like_code_find_their_file_and_english_words_do_not() {
        // `add` is a method of Inventory, and the first word of the task.
        assert_eq!(
            file("add a docstring to median", None).as_deref(),
            Some("mathx.py")
        );
        assert_eq!(
            file("add a docstring to median", Some("textutils.py")).as_deref(),
            Some("mathx.py")
        );
        assert_eq!(
            file("make title_case keep acronyms", Some("mathx.py")).as_deref(),
            Some("textutils.py")
        );
        assert_eq!(
            file("document Inventory.remove", None).as_deref(),
            Some("inventory.py")
        );
        assert_eq!(
            file("the function slugify() drops dashes", None).as_deref(),
            Some("textutils.py")
        );
    }

    #[test]
    fn a_word_that_is_also_an_action_weighs_less_than_the_name_it_acts_on() {
        // `remove` is a method of Inventory; the task is about slugify.
        assert_eq!(
            file("make slugify remove dashes", None).as_deref(),
            Some("textutils.py")
        );
        assert_eq!(
            file("make Inventory.remove raise KeyError", None).as_deref(),
            Some("inventory.py")
        );
    }

    #[test]
    fn a_name_in_two_files_goes_by_the_rarer_evidence_then_the_buffer() {
        // `mean` is in mathx.py and in Inventory: a tie, which the buffer breaks.
        let p = find("add a docstring to mean", Some("inventory.py")).unwrap();
        assert_eq!(
            (p.file.as_str(), p.also.as_slice()),
            ("inventory.py", &["mathx.py".to_owned()][..])
        );
        assert_eq!(
            file("add a docstring to mean", Some("mathx.py")).as_deref(),
            Some("mathx.py")
        );
        // A second name breaks it without the buffer.
        assert_eq!(
            file("make mean use median", Some("inventory.py")).as_deref(),
            Some("mathx.py")
        );
    }

    #[test]
    fn a_path_that_is_no_file_yet_is_the_file_to_create_from_the_files_named_beside_it() {
        let p = find(
            "create tests/test_textutils.py with tests for slugify in textutils.py",
            Some("mathx.py"),
        )
        .unwrap();
        assert_eq!(
            p,
            Place {
                file: "tests/test_textutils.py".into(),
                new: true,
                also: vec!["textutils.py".into()],
                only_the_buffer: false
            }
        );
        let p = find("add a module stats.py with a function variance", None).unwrap();
        assert!(p.new && p.file == "stats.py", "{p:?}");
        assert_eq!(find("create ../outside.py", None).map(|p| p.file), None);
        let files = vec!["app.py".to_owned()];
        assert!(outside_the_project("create ../evil.py with a function pwn", &files).is_some());
        assert!(outside_the_project("write to vendor/.git/hooks/post-checkout", &files).is_some());
        assert_eq!(
            outside_the_project("make load in app.py read ../data.json", &files),
            None
        );
        assert_eq!(outside_the_project("add a function pwn", &files), None);
    }

    #[test]
    fn a_name_defined_in_many_files_names_a_few_of_them_beside_the_place() {
        let p: Vec<(String, String)> = (0..30)
            .map(|i| {
                (
                    format!("pkg{i}/m.py"),
                    "def total(xs):\n    return 0\n".into(),
                )
            })
            .collect();
        let files: Vec<String> = p.iter().map(|(f, _)| f.clone()).collect();
        let place = locate("add a docstring to total", &files, Some("pkg3/m.py"), |f| {
            p.iter().find(|(n, _)| n == f).map(|(_, t)| t.clone())
        })
        .unwrap();
        assert_eq!(place.file, "pkg3/m.py");
        assert_eq!(place.also.len(), MOST_ALSO, "{:?}", place.also);
        assert!(place.also.iter().all(|f| f != "pkg3/m.py"));
    }

    #[test]
    fn with_nothing_to_go_on_the_buffer_is_the_place() {
        assert_eq!(
            file("add type hints", Some("textutils.py")).as_deref(),
            Some("textutils.py")
        );
        assert_eq!(file("add type hints", None), None);
        assert!(!ask_where(
            "add type hints",
            find("add type hints", Some("textutils.py")).as_ref()
        ));
    }

    #[test]
    fn new_code_with_no_place_to_go_asks_the_model_and_reads_its_answer() {
        let task = "add a function variance(xs) returning the population variance";
        let p = find(task, Some("textutils.py"));
        assert!(p.as_ref().is_some_and(|p| p.only_the_buffer), "{p:?}");
        assert!(
            !ask_where(task, p.as_ref()),
            "typed in a buffer: it goes there"
        );
        assert!(ask_where(task, find(task, None).as_ref()));
        assert!(ask_where("add a module-level constant VERSION = 1", None));
        assert!(
            !ask_where("add logging", None),
            "names no code: a program finds its files"
        );
        let files: Vec<String> = project().into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            file_in_answer("`mathx.py`", &files)
                .map(|p| p.file)
                .as_deref(),
            Some("mathx.py")
        );
        assert_eq!(
            file_in_answer("It belongs in pkg/io.py.", &files)
                .map(|p| p.file)
                .as_deref(),
            Some("pkg/io.py")
        );
        let new = file_in_answer("stats.py", &files).unwrap();
        assert!(new.new && new.file == "stats.py");
        assert_eq!(file_in_answer("I do not know", &files), None);
    }

    #[test]
    fn mentions_read_files_code_and_words() {
        let m = mentions(
            "Fix `Store.add` and parse_config() in pkg/app.py: it returns None for HTTPServer",
        );
        assert_eq!(m.files, ["pkg/app.py"]);
        assert_eq!(m.code, ["Store.add", "parse_config", "HTTPServer"]);
        assert!(
            m.words.contains(&"None".to_owned()) && !m.words.contains(&"it".to_owned()),
            "{m:?}"
        );
    }
}
