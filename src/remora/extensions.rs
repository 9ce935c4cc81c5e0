//! Extension nodes (seed §3b): Python files in `.chimera/extensions/` (and
//! the seed's `.remora/models/`) that give matching nodes a system prompt,
//! workspaces and extra tools. Files are read, never imported: their
//! settings are string literals, and their tools run in the Monty sandbox
//! when an agent calls them.
//!
//! Two layouts are understood. Module level:
//!
//! ```python
//! match_type = "class"          # file, class, function, method; omit for any
//! match_pattern = "Config*"     # fnmatch pattern on the node's name
//! system_prompt = """You are a configuration specialist."""
//! workspaces = "- config/*.toml (read-write)"
//!
//! def check_key(key):           # every public function is a tool
//!     """Say whether `key` looks like a config key."""
//!     return key.isupper()
//! ```
//!
//! or the seed's class layout: a class with `match_type`, `match_pattern`,
//! `system_prompt` attributes, a `get_workspaces(self)` returning a string
//! literal, and `@tool` methods (their `self` is dropped, `async` ignored).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Serialize;
use tree_sitter::Node as TsNode;

use super::{Node, NodeType};

/// Where extension files are looked for, relative to the project root.
pub const DIRS: [&str; 2] = [".chimera/extensions", ".remora/models"];

/// A tool an extension adds: a standalone Python function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExtTool {
    pub name: String,
    /// Its docstring, for the prompt.
    pub doc: String,
    /// `def name(...):` … dedented, without `self`, runnable as is.
    pub source: String,
}

/// One extension.
#[derive(Debug, Clone)]
pub struct Extension {
    /// `file.py` or `file.py:Class`.
    pub origin: String,
    pub match_type: Option<NodeType>,
    pub match_pattern: String,
    matcher: GlobMatcher,
    pub system_prompt: String,
    pub workspaces: String,
    pub tools: Vec<ExtTool>,
}

impl Extension {
    pub fn matches(&self, node: &Node) -> bool {
        self.match_type.is_none_or(|t| t == node.node_type) && self.matcher.is_match(&node.name)
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }
}

/// Every extension of a project, and the problems found loading them.
#[derive(Debug, Clone, Default)]
pub struct Extensions {
    pub list: Vec<Extension>,
    pub problems: Vec<String>,
}

impl Extensions {
    /// Reads the extension files of the project at `root`, in name order.
    pub fn load(root: &Path) -> Self {
        let mut out = Extensions::default();
        for dir in DIRS {
            let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "py"))
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            for f in files {
                let name = format!(
                    "{dir}/{}",
                    f.file_name().and_then(|n| n.to_str()).unwrap_or("")
                );
                match std::fs::read_to_string(&f) {
                    Ok(text) => match parse(&name, &text) {
                        Ok(exts) => out.list.extend(exts),
                        Err(e) => out.problems.push(format!("{name}: {e}")),
                    },
                    Err(e) => out.problems.push(format!("{name}: {e}")),
                }
            }
        }
        out
    }

    /// The first extension matching `node`.
    pub fn matching(&self, node: &Node) -> Option<&Extension> {
        self.list.iter().find(|e| e.matches(node))
    }
}

/// Why an extension file gives no extensions; said with the file's name.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    #[error("cannot parse it as Python")]
    Unparsed,
    #[error("{0}")]
    Syntax(String),
    #[error("match_type must be \"file\", \"class\", \"function\" or \"method\", not {0:?}")]
    MatchType(String),
    #[error("match_pattern {pattern:?}: {source}")]
    MatchPattern {
        pattern: String,
        source: globset::Error,
    },
}

/// The extensions defined in one file.
pub fn parse(origin: &str, text: &str) -> Result<Vec<Extension>, ExtensionError> {
    let tree = crate::python::parse(text).ok_or(ExtensionError::Unparsed)?;
    let root = tree.root_node();
    if root.has_error() {
        let p = crate::python::syntax_problem(text);
        return Err(ExtensionError::Syntax(
            p.map_or("syntax error".into(), |p| p.to_string()),
        ));
    }
    let mut out = Vec::new();
    let module = Settings::read(root, text, false);
    if module.match_pattern.is_some() || module.match_type.is_some() {
        out.push(module.into_extension(origin.to_owned())?);
    }
    let mut cursor = root.walk();
    for child in root.named_children(&mut cursor) {
        let class = match child.kind() {
            "class_definition" => child,
            "decorated_definition" => match child.child_by_field_name("definition") {
                Some(d) if d.kind() == "class_definition" => d,
                _ => continue,
            },
            _ => continue,
        };
        let Some(body) = class.child_by_field_name("body") else {
            continue;
        };
        let s = Settings::read(body, text, true);
        if s.match_pattern.is_some() || s.match_type.is_some() {
            let name = class
                .child_by_field_name("name")
                .and_then(|n| n.utf8_text(text.as_bytes()).ok())
                .unwrap_or("?");
            out.push(s.into_extension(format!("{origin}:{name}"))?);
        }
    }
    Ok(out)
}

#[derive(Default)]
struct Settings {
    match_type: Option<String>,
    match_pattern: Option<String>,
    system_prompt: String,
    workspaces: String,
    tools: Vec<ExtTool>,
}

impl Settings {
    /// The settings among the statements of `block` (a module or a class body).
    fn read(block: TsNode<'_>, text: &str, in_class: bool) -> Self {
        let mut s = Settings::default();
        let mut cursor = block.walk();
        for stmt in block.named_children(&mut cursor) {
            match stmt.kind() {
                "expression_statement" => {
                    let Some(assign) = stmt.named_child(0).filter(|a| a.kind() == "assignment")
                    else {
                        continue;
                    };
                    let (Some(left), Some(right)) = (
                        assign.child_by_field_name("left"),
                        assign.child_by_field_name("right"),
                    ) else {
                        continue;
                    };
                    let Some(value) = string_value(right, text) else {
                        continue;
                    };
                    match left.utf8_text(text.as_bytes()).unwrap_or("") {
                        "match_type" => s.match_type = Some(value),
                        "match_pattern" => s.match_pattern = Some(value),
                        "system_prompt" => s.system_prompt = dedent(&value),
                        "workspaces" => s.workspaces = dedent(&value),
                        _ => {}
                    }
                }
                "function_definition" | "decorated_definition" => {
                    let (def, decorated) = if stmt.kind() == "decorated_definition" {
                        let Some(d) = stmt.child_by_field_name("definition") else {
                            continue;
                        };
                        let src = stmt.utf8_text(text.as_bytes()).unwrap_or("");
                        (
                            d,
                            src.lines()
                                .any(|l| l.trim() == "@tool" || l.trim().starts_with("@tool(")),
                        )
                    } else {
                        (stmt, false)
                    };
                    if def.kind() != "function_definition" {
                        continue;
                    }
                    let name = def
                        .child_by_field_name("name")
                        .and_then(|n| n.utf8_text(text.as_bytes()).ok())
                        .unwrap_or("")
                        .to_owned();
                    if in_class && name == "get_workspaces" {
                        if let Some(v) = returned_string(def, text) {
                            s.workspaces = dedent(&v);
                        }
                        continue;
                    }
                    let is_tool = if in_class {
                        decorated
                    } else {
                        !name.starts_with('_')
                    };
                    if is_tool {
                        s.tools.push(tool(def, text, &name, in_class));
                    }
                }
                _ => {}
            }
        }
        s
    }

    fn into_extension(self, origin: String) -> Result<Extension, ExtensionError> {
        let match_type = match self.match_type.as_deref() {
            None | Some("") | Some("any") => None,
            Some(t) => {
                Some(NodeType::parse(t).ok_or_else(|| ExtensionError::MatchType(t.to_owned()))?)
            }
        };
        let pattern = self.match_pattern.unwrap_or_else(|| "*".into());
        let matcher = match Glob::new(&pattern) {
            Ok(glob) => glob.compile_matcher(),
            Err(source) => return Err(ExtensionError::MatchPattern { pattern, source }),
        };
        Ok(Extension {
            origin,
            match_type,
            match_pattern: pattern,
            matcher,
            system_prompt: self.system_prompt,
            workspaces: self.workspaces,
            tools: self.tools,
        })
    }
}

/// The value of a plain string literal (no f-string, no concatenation).
fn string_value(node: TsNode<'_>, text: &str) -> Option<String> {
    if node.kind() != "string" {
        return None;
    }
    let mut cursor = node.walk();
    let mut out = String::new();
    for part in node.named_children(&mut cursor) {
        match part.kind() {
            "string_content" | "escape_sequence" => {
                unescape(part.utf8_text(text.as_bytes()).ok()?, &mut out)
            }
            "string_start" | "string_end" => {}
            _ => return None,
        }
    }
    Some(out)
}

/// Appends `raw` with the common escapes (`\n`, `\t`, `\\`, quotes) decoded.
fn unescape(raw: &str, out: &mut String) {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(q @ ('\\' | '"' | '\'')) => out.push(q),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
}

/// The string a function returns when its body is `return "…"`.
fn returned_string(def: TsNode<'_>, text: &str) -> Option<String> {
    let body = def.child_by_field_name("body")?;
    let mut cursor = body.walk();
    let ret = body
        .named_children(&mut cursor)
        .find(|s| s.kind() == "return_statement")?;
    string_value(ret.named_child(0)?, text)
}

fn dedent(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.trim()
            } else if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// A tool's standalone source: dedented, `async` and `self` dropped.
fn tool(def: TsNode<'_>, text: &str, name: &str, method: bool) -> ExtTool {
    let start = text[..def.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    let src = &text[start..def.end_byte()];
    let indent = src.len() - src.trim_start().len();
    let mut lines: Vec<String> = src
        .lines()
        .map(|l| {
            if l.len() >= indent {
                l[indent..].to_owned()
            } else {
                l.trim_start().to_owned()
            }
        })
        .collect();
    if let Some(first) = lines.first_mut() {
        let mut header = first.trim_start_matches("async ").to_owned();
        if method {
            header = header
                .replacen("(self, ", "(", 1)
                .replacen("(self)", "()", 1);
        }
        *first = header;
    }
    let doc = def
        .child_by_field_name("body")
        .and_then(|b| b.named_child(0))
        .filter(|s| s.kind() == "expression_statement")
        .and_then(|s| s.named_child(0))
        .and_then(|s| string_value(s, text))
        .map(|d| dedent(&d))
        .unwrap_or_default();
    ExtTool {
        name: name.to_owned(),
        doc,
        source: lines.join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(t: NodeType, name: &str) -> Node {
        Node {
            id: "rm_aaaaaaaa".into(),
            node_type: t,
            name: name.into(),
            qualname: name.into(),
            parent_id: None,
            file_path: "a.py".into(),
            start_line: 1,
            end_line: 2,
            status: super::super::NodeStatus::Active,
            source_hash: String::new(),
        }
    }

    #[test]
    fn the_module_layout_gives_settings_and_tools() {
        let src = "match_type = \"class\"\nmatch_pattern = \"Config*\"\nsystem_prompt = \"\"\"\n    You are a configuration specialist.\n    Validate inputs.\n\"\"\"\nworkspaces = \"- config/*.toml (read-write)\"\n\ndef check_key(key):\n    \"\"\"Say whether key looks like a config key.\"\"\"\n    return key.isupper()\n\ndef _private():\n    pass\n";
        let exts = parse("x.py", src).unwrap();
        assert_eq!(exts.len(), 1);
        let e = &exts[0];
        assert!(e.matches(&node(NodeType::Class, "ConfigLoader")));
        assert!(!e.matches(&node(NodeType::Function, "ConfigLoader")));
        assert!(!e.matches(&node(NodeType::Class, "Loader")));
        assert_eq!(
            e.system_prompt,
            "You are a configuration specialist.\nValidate inputs."
        );
        assert_eq!(e.workspaces, "- config/*.toml (read-write)");
        assert_eq!(e.tool_names(), ["check_key"]);
        assert_eq!(e.tools[0].doc, "Say whether key looks like a config key.");
    }

    #[test]
    fn the_seed_class_layout_is_understood() {
        let src = "from remora import ExtensionNode, tool\n\nclass ConfigHandler(ExtensionNode):\n    \"\"\"Handles all Config* classes.\"\"\"\n\n    match_type = \"class\"\n    match_pattern = \"Config*\"\n\n    system_prompt = \"\"\"\n    You are a configuration specialist.\n    \"\"\"\n\n    def get_workspaces(self) -> str:\n        return \"- .env.template (read-only)\\n- config/*.toml (read-write)\"\n\n    @tool\n    async def read_env(self, key: str) -> str:\n        \"\"\"Read an environment variable.\"\"\"\n        return key\n\n    def helper(self):\n        pass\n";
        let exts = parse("m.py", src).unwrap();
        assert_eq!(exts.len(), 1);
        let e = &exts[0];
        assert_eq!(e.origin, "m.py:ConfigHandler");
        assert_eq!(e.system_prompt, "You are a configuration specialist.");
        assert_eq!(
            e.workspaces,
            "- .env.template (read-only)\n- config/*.toml (read-write)"
        );
        assert_eq!(e.tool_names(), ["read_env"]);
        assert!(
            e.tools[0]
                .source
                .starts_with("def read_env(key: str) -> str:"),
            "{}",
            e.tools[0].source
        );
    }

    #[test]
    fn bad_files_are_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".chimera/extensions")).unwrap();
        std::fs::write(
            dir.path().join(".chimera/extensions/bad.py"),
            "match_type = (\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".chimera/extensions/wrong.py"),
            "match_type = \"module\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".chimera/extensions/ok.py"),
            "match_pattern = \"test_*\"\nsystem_prompt = \"Tests.\"\n",
        )
        .unwrap();
        let exts = Extensions::load(dir.path());
        assert_eq!(exts.list.len(), 1);
        assert_eq!(exts.problems.len(), 2, "{:?}", exts.problems);
        assert!(exts
            .problems
            .iter()
            .any(|p| p.contains("match_type must be")));
        assert_eq!(
            exts.matching(&node(NodeType::Function, "test_load"))
                .map(|e| e.system_prompt.as_str()),
            Some("Tests.")
        );
    }
}
