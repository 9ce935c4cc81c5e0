//! Which file of the project an import names: every language writes its
//! modules its own way (`./util`, `crate::a::b`, `a.b`, `example.com/m/pkg`),
//! and each project file has a key its imports are turned into. Keys carry
//! their family (`js:`, `go:`, `rs:`, `lua:`), so a Lua `a.b` never names a
//! Python `a.b`; Python's keys are its dotted module names, bare.

/// How a language names its modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleStyle {
    /// `pkg.mod`, relative `..mod`; `pkg/__init__.py` is `pkg`.
    Python,
    /// JavaScript and TypeScript: `./util` relative to the importing file,
    /// extension optional, a directory's `index` file.
    Ecma,
    /// Go: a package is a directory, imported by a path whose tail is it.
    Go,
    /// Rust: `crate::a::b` for `src/a/b.rs` or `src/a/b/mod.rs`.
    Rust,
    /// Lua: `require("a.b")` for `a/b.lua` or `a/b/init.lua`, under `lua/`
    /// (Neovim) or `src/` (rocks) too.
    Lua,
}

const ECMA_EXTENSIONS: &[&str] = &[
    ".d.ts", ".tsx", ".ts", ".mts", ".cts", ".jsx", ".js", ".mjs", ".cjs",
];

impl ModuleStyle {
    /// The key of the module the project file at `path` is.
    pub fn key_of_file(self, path: &str) -> String {
        match self {
            ModuleStyle::Python => python_module(path),
            ModuleStyle::Ecma => format!("js:{}", ecma_stem(path)),
            ModuleStyle::Go => format!("go:{}", parent_dir(path)),
            ModuleStyle::Rust => format!("rs:{}", rust_module(path)),
            ModuleStyle::Lua => {
                let stem = path.strip_suffix(".lua").unwrap_or(path);
                let stem = stem.strip_suffix("/init").unwrap_or(stem);
                let stem = ["lua/", "src/"]
                    .iter()
                    .find_map(|p| stem.strip_prefix(p))
                    .unwrap_or(stem);
                format!("lua:{}", stem.replace('/', "."))
            }
        }
    }

    /// The key of the module `spec` names, as written in the file at
    /// `from` (quotes already gone); `None` when it cannot be in the
    /// project (a relative import above the root).
    pub fn key_of_import(self, from: &str, spec: &str) -> Option<String> {
        let spec = spec.trim_matches(|c| c == '"' || c == '\'' || c == '`');
        match self {
            ModuleStyle::Python => Some(spec.to_owned()),
            ModuleStyle::Ecma if spec.starts_with("./") || spec.starts_with("../") => {
                let joined = normalize(&format!("{}/{spec}", parent_dir(from)))?;
                Some(format!("js:{}", ecma_stem(&joined)))
            }
            ModuleStyle::Ecma => Some(format!("js:{spec}")),
            ModuleStyle::Go => Some(format!("go:{spec}")),
            ModuleStyle::Rust => {
                let here = rust_module(from);
                let mut parts: Vec<&str> = here.split("::").collect();
                let mut rest = spec.split("::").peekable();
                match rest.peek() {
                    Some(&"crate") => {
                        parts.truncate(1);
                        rest.next();
                    }
                    Some(&"self") => {
                        rest.next();
                    }
                    Some(&"super") => {
                        while rest.peek() == Some(&"super") {
                            rest.next();
                            if parts.len() <= 1 {
                                return None;
                            }
                            parts.pop();
                        }
                    }
                    // Another crate, or a module in scope: said as written.
                    _ => return Some(format!("rs:{spec}")),
                }
                parts.extend(rest);
                Some(format!("rs:{}", parts.join("::")))
            }
            ModuleStyle::Lua => Some(format!("lua:{spec}")),
        }
    }

    /// The key of `name`, a child module declared in the file at `from`
    /// (Rust's `mod name;`).
    pub fn key_of_submodule(self, from: &str, name: &str) -> String {
        match self {
            ModuleStyle::Rust => format!("rs:{}::{name}", rust_module(from)),
            _ => format!("{}.{name}", self.key_of_file(from)),
        }
    }

    /// Whether one module is several files, whose top-level names each of
    /// them calls without an import (a Go package).
    pub fn spans_files(self) -> bool {
        self == ModuleStyle::Go
    }

    /// The name a plain import binds in the importing file, when the
    /// language binds one (Go: the path's last element).
    pub fn default_alias(self, spec: &str) -> Option<String> {
        let spec = spec.trim_matches(|c| c == '"' || c == '`');
        match self {
            ModuleStyle::Go => spec.rsplit('/').next().map(str::to_owned),
            _ => None,
        }
    }

    /// The key of `name` inside the module `key` (a submodule of a
    /// package): `pkg.mod`, `rs:crate::a::b`, `js:src/util`.
    pub fn child(key: &str, name: &str) -> String {
        let sep = if key.starts_with("rs:") {
            "::"
        } else if key.starts_with("js:") || key.starts_with("go:") {
            "/"
        } else {
            "."
        };
        format!("{key}{sep}{name}")
    }

    /// Keys a missing `key` may be found under: Go imports name a package
    /// by its full path, of which the project knows only the tail
    /// (`go:example.com/m/pkg/store` → `go:m/pkg/store`, …, `go:store`).
    pub fn fallbacks(key: &str) -> impl Iterator<Item = String> + '_ {
        let go = key.strip_prefix("go:");
        let mut rest = go;
        std::iter::from_fn(move || {
            let (_, tail) = rest?.split_once('/')?;
            rest = Some(tail);
            Some(format!("go:{tail}"))
        })
    }
}

/// `pkg/mod.py` → `pkg.mod`, `pkg/__init__.py` → `pkg`.
fn python_module(path: &str) -> String {
    let stem = path
        .strip_suffix(".pyi")
        .or_else(|| path.strip_suffix(".py"))
        .unwrap_or(path);
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    stem.replace('/', ".")
}

/// The project paths an ECMAScript module key can stand for (`js:src/a`:
/// `src/a` itself, `src/a.ts`, `src/a.js`, …, `src/a/index.ts`, …); none
/// for a key of another family or a package's.
pub fn ecma_paths(key: &str) -> Vec<String> {
    let Some(stem) = key.strip_prefix("js:") else {
        return vec![];
    };
    let stem = stem.trim_end_matches('/');
    let index = if stem.is_empty() {
        "index".to_owned()
    } else {
        format!("{stem}/index")
    };
    std::iter::once(stem.to_owned())
        .filter(|s| !s.is_empty())
        .chain(ECMA_EXTENSIONS.iter().map(|e| format!("{stem}{e}")))
        .chain(ECMA_EXTENSIONS.iter().map(|e| format!("{index}{e}")))
        .collect()
}

/// The project paths a relative Python import (`.item`, `..pkg.util`)
/// written in the file at `from` can stand for; `None` for an absolute
/// import and for `from . import x` (a name of the package or a module of
/// it); none above the root.
pub fn python_relative_paths(from: &str, spec: &str) -> Option<Vec<String>> {
    let rest = spec.trim_start_matches('.');
    let ups = spec.len() - rest.len();
    if ups == 0 || rest.is_empty() {
        return None;
    }
    // One dot is the file's own package; each more, one directory up.
    let mut parts: Vec<&str> = parent_dir(from)
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    if ups - 1 > parts.len() {
        return Some(vec![]);
    }
    parts.truncate(parts.len() - (ups - 1));
    parts.extend(rest.split('.'));
    let stem = parts.join("/");
    Some(vec![
        format!("{stem}.py"),
        format!("{stem}.pyi"),
        format!("{stem}/__init__.py"),
    ])
}

fn ecma_stem(path: &str) -> String {
    let stem = ECMA_EXTENSIONS
        .iter()
        .find_map(|e| path.strip_suffix(e))
        .unwrap_or(path);
    match stem.strip_suffix("/index") {
        Some(dir) => dir.to_owned(),
        None if stem == "index" => String::new(),
        None => stem.to_owned(),
    }
}

/// `crate::a::b` for `src/a/b.rs`, `src/a/b/mod.rs`; `crate` for
/// `src/lib.rs` and `src/main.rs`. Only the part after the last `src/`
/// counts (a workspace member's `crates/x/src/…`).
fn rust_module(path: &str) -> String {
    let inner = match path.rfind("src/") {
        Some(i) if i == 0 || path.as_bytes()[i - 1] == b'/' => &path[i + 4..],
        _ => path,
    };
    let stem = inner.strip_suffix(".rs").unwrap_or(inner);
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    let mut parts = vec!["crate"];
    if !matches!(stem, "lib" | "main" | "mod") {
        parts.extend(stem.split('/'));
    }
    parts.join("::")
}

fn parent_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `a/./b/../c` → `a/c`; `None` above the root.
fn normalize(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            p => out.push(p),
        }
    }
    Some(out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::ModuleStyle::*;
    use super::*;

    #[test]
    fn files_and_imports_meet_on_one_key() {
        let cases = [
            (Ecma, "src/app.js", "./util", "src/util.ts"),
            (Ecma, "src/app/main.tsx", "../lib", "src/lib/index.js"),
            (
                Go,
                "cmd/main.go",
                "\"example.com/m/pkg/store\"",
                "pkg/store/store.go",
            ),
            (Rust, "src/main.rs", "crate::store", "src/store.rs"),
            (Rust, "src/a/b.rs", "super::c", "src/a/c/mod.rs"),
            (Rust, "crates/x/src/a.rs", "self::b", "crates/x/src/a/b.rs"),
            (
                Lua,
                "lua/chimera/init.lua",
                "chimera.util",
                "lua/chimera/util.lua",
            ),
            (Python, "pkg/a.py", "pkg.b", "pkg/b.py"),
        ];
        for (style, from, spec, file) in cases {
            let key = style.key_of_import(from, spec).unwrap();
            let file_key = style.key_of_file(file);
            let found = key == file_key || ModuleStyle::fallbacks(&key).any(|k| k == file_key);
            assert!(
                found,
                "{style:?}: {spec} from {from} is {key}, {file} is {file_key}"
            );
        }
    }

    #[test]
    fn imports_that_leave_the_project_name_nothing_in_it() {
        assert_eq!(Ecma.key_of_import("a.js", "../../x"), None);
        assert_eq!(Rust.key_of_import("src/lib.rs", "super::x"), None);
        assert_eq!(
            Ecma.key_of_import("a.js", "react").as_deref(),
            Some("js:react")
        );
        assert_eq!(Rust.key_of_file("src/lib.rs"), "rs:crate");
        assert_eq!(
            Rust.key_of_submodule("src/lib.rs", "store"),
            "rs:crate::store"
        );
        assert_eq!(
            Rust.key_of_submodule("src/a.rs", "b"),
            Rust.key_of_file("src/a/b.rs")
        );
        assert_eq!(
            Go.default_alias("\"example.com/m/store\"").as_deref(),
            Some("store")
        );
    }
}
