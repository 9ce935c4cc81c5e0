//! Whether the packages a change starts importing exist for the project: a
//! small model reaches for `lodash` or `node:errors` where the project has
//! neither, and such a change would not even load. JavaScript and
//! TypeScript only, where Node's resolution can be checked from the files:
//! a builtin module, a package in a `node_modules` above the file, or one
//! a `package.json` above it lists.

use std::collections::BTreeSet;
use std::path::Path;

use crate::lang::{self, Language, ModuleStyle};

/// Node's builtin modules (`node:` optional), and the subpaths people import.
const NODE_BUILTINS: &[&str] = &[
    "assert",
    "assert/strict",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "dns/promises",
    "domain",
    "events",
    "fs",
    "fs/promises",
    "http",
    "http2",
    "https",
    "inspector",
    "inspector/promises",
    "module",
    "net",
    "os",
    "path",
    "path/posix",
    "path/win32",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "readline/promises",
    "repl",
    "stream",
    "stream/consumers",
    "stream/promises",
    "stream/web",
    "string_decoder",
    "sys",
    "timers",
    "timers/promises",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "util/types",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
];

/// Builtins that exist only under `node:`.
const NODE_ONLY_PREFIXED: &[&str] = &["sea", "sqlite", "test", "test/reporters"];

/// The packages `new` imports that `old` did not, that the project does
/// not have and the task does not name. `path` is the file's project path;
/// `root` the project's directory.
pub fn missing(
    language: &Language,
    root: &Path,
    path: &str,
    old: Option<&str>,
    new: &str,
    task: &str,
) -> Vec<String> {
    if language.modules != ModuleStyle::Ecma {
        return vec![];
    }
    let before: BTreeSet<String> = old.map(|o| language.import_specs(o)).unwrap_or_default();
    let dir = root.join(path);
    let dir = dir.parent().unwrap_or(root);
    // Path aliases (`@/components`, `baseUrl`) make a bare name a file of
    // the project: those are not checked.
    let aliased = has_aliases(root, dir);
    let task = task.to_lowercase();
    language
        .import_specs(new)
        .into_iter()
        .filter(|spec| !before.contains(spec))
        .filter(|spec| {
            let builtin = match spec.strip_prefix("node:") {
                Some(name) => NODE_BUILTINS.contains(&name) || NODE_ONLY_PREFIXED.contains(&name),
                None => NODE_BUILTINS.contains(&spec.as_str()),
            };
            if builtin || spec.starts_with("node:") {
                return !builtin;
            }
            let local = spec.starts_with('.') || spec.starts_with('/');
            // URLs and other loaders' schemes (`npm:`, `jsr:`) are theirs.
            let scheme = spec.contains(':');
            let package = package_name(spec);
            !(local
                || scheme
                || aliased
                || task.contains(&package.to_lowercase())
                || installed(root, dir, &package))
        })
        .collect()
}

/// `new` without the import statements it adds that bind only names the
/// language has built in, from modules [`missing`] finds absent: 1.5B
/// writes `import { Error } from "node:errors"` and keeps it through
/// every repair, where deleting the line is the whole fix.
pub fn without_needless_imports(
    language: &Language,
    root: &Path,
    path: &str,
    old: Option<&str>,
    new: &str,
    task: &str,
) -> String {
    if language.globals.is_empty() {
        return new.to_owned();
    }
    let absent = missing(language, root, path, old, new, task);
    if absent.is_empty() {
        return new.to_owned();
    }
    let needless: Vec<(usize, usize)> = lang::splice::imports_of(language, new)
        .into_iter()
        .filter(|i| {
            i.binds_only(|b| language.globals.contains(&b))
                && i.modules.iter().all(|m| absent.contains(m))
        })
        .map(|i| i.span)
        .collect();
    lang::splice::without_statements(new, &needless)
}

/// The project files `new` starts importing (`./item`, Python's `.item`)
/// that are neither on disk under `root` nor among `written`, the files
/// the same change writes: a model asked to change `Cart.add` imports the `Item` its
/// file defines from an `./item` that was never there.
pub fn missing_files(
    language: &Language,
    root: &Path,
    path: &str,
    old: Option<&str>,
    new: &str,
    written: &BTreeSet<String>,
) -> Vec<String> {
    // The files each new relative import may name; `None`: not checked.
    let candidates = |spec: &str| -> Option<Vec<String>> {
        match language.modules {
            ModuleStyle::Ecma if spec.starts_with("./") || spec.starts_with("../") => {
                // A bundler's query (`./logo.svg?url`) is no part of the file.
                let file = spec.split(['?', '#']).next().unwrap_or(spec);
                // Above the root: no file of the project.
                Some(
                    ModuleStyle::Ecma
                        .key_of_import(path, file)
                        .map(|key| lang::ecma_paths(&key))
                        .unwrap_or_default(),
                )
            }
            ModuleStyle::Python if spec.starts_with('.') => {
                Some(lang::python_relative_paths(path, spec)?)
            }
            _ => None,
        }
    };
    let before: BTreeSet<String> = old.map(|o| language.import_specs(o)).unwrap_or_default();
    language
        .import_specs(new)
        .into_iter()
        .filter(|spec| !before.contains(spec))
        .filter(|spec| {
            candidates(spec).is_some_and(|paths| {
                !paths
                    .iter()
                    .any(|p| written.contains(p) || root.join(p).is_file())
            })
        })
        .collect()
}

/// The package a bare import names: `@scope/name` or its first segment.
fn package_name(spec: &str) -> String {
    let mut parts = spec.split('/');
    match (parts.next(), parts.next()) {
        (Some(scope), Some(name)) if scope.starts_with('@') => format!("{scope}/{name}"),
        (Some(first), _) => first.to_owned(),
        _ => spec.to_owned(),
    }
}

/// Whether `package` is in a `node_modules` or a `package.json` from the
/// file's directory up to the project's root, as Node looks for it.
fn installed(root: &Path, from: &Path, package: &str) -> bool {
    from.ancestors()
        .take_while(|d| d.starts_with(root))
        .any(|d| {
            d.join("node_modules").join(package).exists() || lists(&d.join("package.json"), package)
        })
}

/// Whether the `package.json` at `file` depends on `package` in any way.
fn lists(file: &Path, package: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    json.get("name").and_then(|n| n.as_str()) == Some(package)
        || [
            "dependencies",
            "devDependencies",
            "peerDependencies",
            "optionalDependencies",
        ]
        .iter()
        .any(|k| json.get(k).and_then(|d| d.get(package)).is_some())
}

/// Whether a `tsconfig.json` or `jsconfig.json` above the file maps bare
/// names to files (`paths`, `baseUrl`), or a `package.json` has `imports`.
fn has_aliases(root: &Path, from: &Path) -> bool {
    from.ancestors()
        .take_while(|d| d.starts_with(root))
        .any(|d| {
            ["tsconfig.json", "jsconfig.json"].iter().any(|f| {
                std::fs::read_to_string(d.join(f))
                    .is_ok_and(|t| t.contains("\"paths\"") || t.contains("\"baseUrl\""))
            })
        })
}

/// What the model is told when its change imports files the project
/// does not have.
pub fn files_message(path: &str, missing: &[String]) -> String {
    let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
    format!(
        "`{path}` now imports {}, which is no file of this project. Import only files that exist; what the file defines itself needs no import.",
        names.join(", ")
    )
}

/// What the model is told when its change imports packages the project
/// does not have.
pub fn message(path: &str, missing: &[String]) -> String {
    let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
    format!(
        "`{path}` now imports {}, which this project does not have (no package.json lists it and it is not in node_modules). Write the change without it, with what the file already imports and the language's standard library.",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"name": "shop", "dependencies": {"left-pad": "1"}, "devDependencies": {"@types/node": "22"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("web/node_modules/preact")).unwrap();
        dir
    }

    #[test]
    fn packages_the_project_lacks_are_named_and_the_rest_pass() {
        let dir = project();
        let old = "import { a } from \"./a\";\n";
        let new = "import { a } from \"./a\";\nimport { trim } from \"lodash\";\nimport pad from \"left-pad\";\nimport * as fs from \"node:fs\";\nimport path from \"path\";\nimport { x } from \"node:errors\";\nimport { h } from \"preact/hooks\";\nimport t from \"@types/node\";\nconst u = require(\"underscore\");\nimport { b } from \"../b\";\n";
        let missing = |path: &str, task: &str| {
            missing(&lang::TYPESCRIPT, dir.path(), path, Some(old), new, task)
        };
        assert_eq!(
            missing("src/cart.ts", "make slugify collapse spaces"),
            ["lodash", "node:errors", "preact/hooks", "underscore"]
        );
        // node_modules is looked for above the file, as Node does.
        assert_eq!(
            missing("web/app.ts", "make slugify collapse spaces"),
            ["lodash", "node:errors", "underscore"]
        );
        // A package the task names is wanted.
        assert_eq!(
            missing("web/app.ts", "use Lodash's trim and underscore"),
            ["node:errors"]
        );
        // What the file imported before is not the change's doing.
        assert!(
            super::missing(&lang::JAVASCRIPT, dir.path(), "a.js", Some(new), new, "x").is_empty()
        );
        // Other languages are not checked here.
        assert!(super::missing(
            &lang::GO,
            dir.path(),
            "a.go",
            None,
            "import \"lodash\"",
            "x"
        )
        .is_empty());
    }

    #[test]
    fn an_absent_module_imported_only_for_builtins_loses_that_import() {
        let dir = project();
        let old = "export class Cart {}\n";
        let new = "import { Error } from \"node:errors\";\nimport { trim } from \"lodash\";\nimport { URL } from \"url\";\n\nexport class Cart {}\n";
        let path = "src/cart.ts";
        // `Error` is built in; lodash's `trim` is not, and `url` is there.
        assert_eq!(
            without_needless_imports(&lang::TYPESCRIPT, dir.path(), path, Some(old), new, "t"),
            "import { trim } from \"lodash\";\nimport { URL } from \"url\";\n\nexport class Cart {}\n"
        );
        let only = "import { Error } from \"node:errors\";\n\nexport class Cart {}\n";
        assert_eq!(
            without_needless_imports(&lang::TYPESCRIPT, dir.path(), path, Some(old), only, "t"),
            "export class Cart {}\n"
        );
        // A package the project has may shadow a builtin on purpose.
        let shadow = "import { Promise } from \"left-pad\";\nexport class Cart {}\n";
        assert_eq!(
            without_needless_imports(&lang::TYPESCRIPT, dir.path(), path, Some(old), shadow, "t"),
            shadow
        );
    }

    #[test]
    fn files_the_project_lacks_are_named_unless_the_change_writes_them() {
        let dir = project();
        std::fs::create_dir_all(dir.path().join("src/util")).unwrap();
        std::fs::write(dir.path().join("src/cart.ts"), "").unwrap();
        std::fs::write(dir.path().join("src/util/index.js"), "").unwrap();
        std::fs::write(dir.path().join("src/data.json"), "{}").unwrap();
        let old = "import { b } from \"./gone\";\n";
        let new = "import { b } from \"./gone\";\nimport { Item } from \"./item\";\nimport { c } from \"./cart.js\";\nimport u from \"./util\";\nimport d from \"./data.json?raw\";\nimport { t } from \"./types\";\nimport x from \"../../../outside\";\nimport { p } from \"lodash\";\n";
        let written: BTreeSet<String> = ["src/types.ts".to_owned()].into();
        assert_eq!(
            missing_files(
                &lang::TYPESCRIPT,
                dir.path(),
                "src/app.ts",
                Some(old),
                new,
                &written
            ),
            ["../../../outside", "./item"]
        );
        // A directory is not a module file of its own name.
        let new = "import x from \"./src/util/\";\nimport y from \"./src\";\n";
        assert_eq!(
            missing_files(
                &lang::JAVASCRIPT,
                dir.path(),
                "a.js",
                None,
                new,
                &BTreeSet::new()
            ),
            ["./src"]
        );
    }

    #[test]
    fn a_relative_python_import_of_no_module_is_named() {
        let dir = project();
        std::fs::create_dir_all(dir.path().join("shop/sub")).unwrap();
        for f in [
            "shop/__init__.py",
            "shop/cart.py",
            "shop/sub/__init__.py",
            "util.py",
        ] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let new = "import os\nimport nothing_here\nfrom . import cart\nfrom .cart import Cart\nfrom .item import Item\nfrom .sub import x\nfrom ..util import y\nfrom ...above import z\n";
        assert_eq!(
            missing_files(
                &lang::PYTHON,
                dir.path(),
                "shop/orders.py",
                None,
                new,
                &BTreeSet::new()
            ),
            ["...above", ".item"]
        );
        // A reply's worth of dots resolves at once, above the root.
        let deep = format!("from {}x import y\n", ".".repeat(100_000));
        assert_eq!(
            missing_files(
                &lang::PYTHON,
                dir.path(),
                "shop/orders.py",
                None,
                &deep,
                &BTreeSet::new()
            )
            .len(),
            1
        );
    }

    #[test]
    fn path_aliases_make_bare_names_the_projects_own() {
        let dir = project();
        std::fs::write(
            dir.path().join("tsconfig.json"),
            r#"{"compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"]}}}"#,
        )
        .unwrap();
        let new = "import { x } from \"@/util\";\nimport { y } from \"components/y\";\nimport { z } from \"node:errors\";\n";
        assert_eq!(
            missing(&lang::TYPESCRIPT, dir.path(), "src/a.ts", None, new, "t"),
            ["node:errors"]
        );
    }
}
