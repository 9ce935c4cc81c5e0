//! Which project file a path a model gave means, when the path itself is
//! not in the project: small models put the placeholder of the examples
//! they learned from before a real path (`path/to/inventory/text.py`),
//! or the project folder's name, or a diff's `b/`.

use crate::paths::ProjectPath;

/// A path a model gave that is not the project's, taken for the project
/// file it ends with ([`meant`]).
#[derive(Debug, Clone)]
pub struct PathNote {
    /// The path as the model gave it.
    pub given: String,
    /// The project file it was taken for.
    pub file: String,
    /// The function called with it.
    pub function: String,
}

impl PathNote {
    /// What the model is told with its call's answer.
    pub fn to_model(&self) -> String {
        let verb = if self.function == "read_file" {
            "reads"
        } else {
            "writes"
        };
        format!(
            "(`{}` is not a path of the project: {}() {verb} `{}`, the file it ends with. \
             Give that path from now on.)",
            self.given, self.function, self.file
        )
    }

    /// What the agent's log says, for the human.
    pub fn for_log(&self) -> String {
        format!(
            "{}(`{}`) was taken for `{}`: the path is not the project's, the file is",
            self.function, self.given, self.file
        )
    }
}

/// What a path that a model gave is taken for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meant {
    /// The path as written: it exists, the task names it, or no file of
    /// the project ends it.
    AsWritten,
    /// A placeholder before the path of this file: the file is meant.
    File(ProjectPath),
    /// Another folder before the path of this file: a new file, or this
    /// one with a folder too many — the model is asked once.
    Ask(ProjectPath),
}

/// Folder names that only ever stand for "somewhere" in an example.
const PLACEHOLDERS: &[&str] = &[
    "path",
    "to",
    "your",
    "my",
    "project",
    "repo",
    "repository",
    "workspace",
    "root",
];

/// The deepest path whose ends are looked for.
const MAX_DEPTH: usize = 32;

/// What `given` means, in a project whose folder is named `root_name`,
/// for a task `task`; `exists` says whether a project path is a file.
/// The longest project file that ends `given` is the one meant.
pub fn meant(
    given: &ProjectPath,
    root_name: Option<&str>,
    task: &str,
    exists: impl Fn(&ProjectPath) -> bool,
) -> Meant {
    if exists(given) || task.contains(given.as_str()) {
        return Meant::AsWritten;
    }
    let parts: Vec<&str> = given.as_str().split('/').collect();
    // Each cut is a lookup: a path deeper than any project's is taken as
    // written (a hostile agent's 10,000 folders cost no more than one).
    if parts.len() > MAX_DEPTH {
        return Meant::AsWritten;
    }
    for cut in 1..parts.len() {
        let Ok(file) = ProjectPath::parse(&parts[cut..].join("/")) else {
            continue;
        };
        if !exists(&file) {
            continue;
        }
        let before = &parts[..cut];
        let placeholder = before.iter().all(|p| PLACEHOLDERS.contains(p))
            || before == [root_name.unwrap_or("")]
            || matches!(before, ["a" | "b"]);
        return match placeholder {
            true => Meant::File(file),
            false => Meant::Ask(file),
        };
    }
    Meant::AsWritten
}

/// The project file an absolute path a model gave stands for when it is
/// a placeholder's (`/path/to/app.py`). An absolute path into the project
/// folder stays refused: agents speak in project paths, and a program
/// that reaches for the real file is told so.
pub fn of_absolute(
    raw: &str,
    root: &std::path::Path,
    task: &str,
    exists: impl Fn(&ProjectPath) -> bool,
) -> Option<ProjectPath> {
    let raw = raw.trim();
    let given = ProjectPath::parse(raw.trim_start_matches('/')).ok()?;
    let root_name = root.file_name().and_then(|n| n.to_str());
    match meant(&given, root_name, task, exists) {
        Meant::File(file) => Some(file),
        Meant::AsWritten | Meant::Ask(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> ProjectPath {
        ProjectPath::parse(s).unwrap()
    }

    fn files(list: &'static [&'static str]) -> impl Fn(&ProjectPath) -> bool {
        move |q| list.contains(&q.as_str())
    }

    const FILES: &[&str] = &["inventory/text.py", "text.py", "app.py"];

    #[test]
    fn a_placeholder_before_a_file_means_the_longest_file_it_ends_with() {
        let m = |s| meant(&p(s), Some("shop"), "fix slugify", files(FILES));
        assert_eq!(
            m("path/to/inventory/text.py"),
            Meant::File(p("inventory/text.py"))
        );
        assert_eq!(m("your/project/app.py"), Meant::File(p("app.py")));
        assert_eq!(
            m("shop/inventory/text.py"),
            Meant::File(p("inventory/text.py"))
        );
        assert_eq!(m("b/app.py"), Meant::File(p("app.py")));
    }

    #[test]
    fn another_folder_is_asked_and_what_exists_or_is_named_or_new_stays() {
        let m = |s, task| meant(&p(s), Some("shop"), task, files(FILES));
        assert_eq!(m("lib/app.py", "fix it"), Meant::Ask(p("app.py")));
        assert_eq!(m("a/b/app.py", "fix it"), Meant::Ask(p("app.py")));
        assert_eq!(
            m("lib/app.py", "copy app.py to lib/app.py"),
            Meant::AsWritten
        );
        assert_eq!(m("inventory/text.py", "fix it"), Meant::AsWritten);
        assert_eq!(m("path/to/new.py", "fix it"), Meant::AsWritten);
        assert_eq!(m("tests/test_text.py", "fix it"), Meant::AsWritten);
    }

    #[test]
    fn a_path_deeper_than_any_project_is_looked_up_once() {
        let looked = std::cell::Cell::new(0);
        let exists = |q: &ProjectPath| {
            looked.set(looked.get() + 1);
            q.as_str() == "app.py"
        };
        let deep = format!("{}app.py", "path/".repeat(10_000));
        assert_eq!(meant(&p(&deep), None, "t", exists), Meant::AsWritten);
        assert_eq!(looked.get(), 1);
    }

    #[test]
    fn an_absolute_path_is_a_placeholders_only() {
        let root = std::path::Path::new("/home/u/shop");
        let of = |s| of_absolute(s, root, "fix it", files(FILES));
        assert_eq!(of("/home/u/shop/app.py"), None);
        assert_eq!(
            of("/path/to/inventory/text.py"),
            Some(p("inventory/text.py"))
        );
        assert_eq!(of("/tmp/app.py"), None);
        assert_eq!(of("/etc/passwd"), None);
    }
}
