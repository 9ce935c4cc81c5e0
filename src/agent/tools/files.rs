//! The file tools — read, list, search, write, delete, replace
//! definitions — written once for every host that offers them (an
//! agent's program, tool mode, a Remora node, an MCP session): each is a
//! call on the caller's [`Workspace`], its arguments named as the tool
//! table names them. A host says only how it finds its files and paths.

use globset::GlobBuilder;
use serde_json::{json, Map, Value as Json};

use crate::paths::{parse_dir, ProjectPath};
use crate::sandbox::{HostError, Value};
use crate::workspace::{ReadFrom, Workspace, WorkspaceError};

/// What a write that would change nothing is refused with; tool mode
/// then asks the next reply as a code block.
pub const STAYS_AS_IT_WAS: &str = "would stay exactly as it was";

/// A file tool's code, the handler column of its table row.
pub type Handler = fn(&mut dyn FileHost, &Args) -> Result<Json, ToolError>;

/// What a file tool needs of the host that runs it.
pub trait FileHost {
    /// The caller's files behind its capabilities, and which of the
    /// human's text each file was when the caller last read it.
    fn files(&mut self) -> (Workspace<'_>, &mut ReadFrom);

    /// The project path `raw` names in a call of `tool`. An agent's host
    /// takes the file a small model meant ([`crate::agent::meant`]); by
    /// default a path is taken as written.
    fn path(&mut self, tool: &'static str, raw: &str) -> Result<ProjectPath, ToolError> {
        self.files()
            .0
            .path(raw)
            .map_err(|error| ToolError::Files { tool, error })
    }

    /// `p` was written or deleted.
    fn wrote(&mut self, p: &ProjectPath);
}

/// Why a write's code was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteRefused {
    /// It left the file as it was.
    Unchanged,
    /// It does not parse (code in a JSON string from a small model often
    /// lost its line ends).
    Unparsable,
}

/// Why a file tool did nothing.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// An argument is missing or not what the tool takes.
    #[error("{0}")]
    Args(String),
    /// The files refused (capabilities, a link, a secret) or failed.
    #[error("{tool}(): {error}")]
    Files {
        tool: &'static str,
        error: WorkspaceError,
    },
    /// The code given cannot be written as it is.
    #[error("{said}")]
    Code {
        said: String,
        why: Option<WriteRefused>,
    },
    /// The host's own refusal, said in its words.
    #[error(transparent)]
    Host(#[from] HostError),
}

impl ToolError {
    /// The error as a program (or a model in tool mode) is told it, and
    /// why its code was refused when that was the trouble.
    pub fn into_host(self) -> (HostError, Option<WriteRefused>) {
        match self {
            ToolError::Files { tool, error } => {
                let said = format!("{tool}(): {error}");
                match error {
                    WorkspaceError::Denied(_) => (HostError::Denied(said), None),
                    _ => (HostError::Failed(said), None),
                }
            }
            ToolError::Code { said, why } => (HostError::Failed(said), why),
            ToolError::Host(e) => (e, None),
            ToolError::Args(said) => (HostError::Failed(said), None),
        }
    }
}

/// A call's arguments by the names the tool's table row gives them.
pub struct Args {
    tool: &'static str,
    given: Map<String, Json>,
}

impl Args {
    /// Arguments an MCP host or a model in tool mode sent as an object.
    pub fn named(tool: &'static str, given: Map<String, Json>) -> Self {
        Args { tool, given }
    }

    /// A program's call: positional arguments in the row's order, then
    /// keywords.
    pub fn of_call(
        tool: &'static str,
        params: &[(&'static str, &str, &str)],
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Result<Self, ToolError> {
        let mut given = Map::new();
        let positional = params.iter().map(|p| p.0).zip(a);
        let keywords = kw.iter().filter_map(|(k, v)| match k {
            Value::String(k) => Some((k.as_str(), v)),
            _ => None,
        });
        for (name, v) in positional.chain(keywords) {
            let v = crate::sandbox::to_json(v)
                .map_err(|e| ToolError::Args(format!("{tool}(): argument `{name}`: {e}")))?;
            given.entry(name.to_owned()).or_insert(v);
        }
        Ok(Args { tool, given })
    }

    /// Argument `name`, a string.
    pub fn string(&self, name: &str) -> Result<String, ToolError> {
        match self.given.get(name) {
            Some(Json::String(s)) => Ok(s.clone()),
            Some(other) => Err(ToolError::Args(format!(
                "{}(): argument `{name}` must be a str, got {}",
                self.tool,
                type_name(other)
            ))),
            None => Err(ToolError::Args(format!(
                "{}(): missing argument `{name}`",
                self.tool
            ))),
        }
    }

    /// Argument `name` as it was given.
    pub fn get(&self, name: &str) -> Option<&Json> {
        self.given.get(name)
    }

    /// Argument `name`, a list of strings (a lone string counts as a
    /// list of one; absent, an empty one).
    pub fn string_list(&self, name: &str) -> Result<Vec<String>, ToolError> {
        let items = match self.given.get(name) {
            None | Some(Json::Null) => return Ok(Vec::new()),
            Some(Json::String(s)) => return Ok(vec![s.clone()]),
            Some(Json::Array(items)) => items,
            Some(other) => {
                return Err(ToolError::Args(format!(
                    "{}(): argument `{name}` must be a list of str, got {}",
                    self.tool,
                    type_name(other)
                )))
            }
        };
        items
            .iter()
            .map(|v| match v {
                Json::String(s) => Ok(s.clone()),
                other => Err(ToolError::Args(format!(
                    "{}(): `{name}` must hold strings, got {}",
                    self.tool,
                    type_name(other)
                ))),
            })
            .collect()
    }

    /// Like [`Args::string`], but absent (or null) is `None`.
    pub fn opt_string(&self, name: &str) -> Result<Option<String>, ToolError> {
        match self.given.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(_) => self.string(name).map(Some),
        }
    }
}

/// A JSON value's type as the program that passed it names it.
pub fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "None",
        Json::Bool(_) => "bool",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::String(_) => "str",
        Json::Array(_) => "list",
        Json::Object(_) => "dict",
    }
}

fn files_error(tool: &'static str) -> impl Fn(WorkspaceError) -> ToolError {
    move |error| ToolError::Files { tool, error }
}

/// `read_file(path)`: the file as the caller sees it, noted as read.
pub(super) fn read_file(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    let p = h.path("read_file", &args.string("path")?)?;
    let (ws, read) = h.files();
    let text = ws.read_noted(&p, read).map_err(files_error("read_file"))?;
    Ok(Json::String(text))
}

/// `list_dir(path)`: a folder's entries, folders ending in `/`.
pub(super) fn list_dir(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    let raw = args.opt_string("path")?.unwrap_or_default();
    let dir = parse_dir(&raw).map_err(|e| ToolError::Args(format!("list_dir(): {e}")))?;
    let entries = h
        .files()
        .0
        .list_dir(&dir)
        .map_err(files_error("list_dir"))?;
    Ok(json!(entries))
}

/// `file_exists(path)`.
pub(super) fn file_exists(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    let raw = args.string("path")?;
    let p = ProjectPath::parse(&raw).map_err(|e| ToolError::Args(format!("file_exists(): {e}")))?;
    let exists = h.files().0.exists(&p).map_err(files_error("file_exists"))?;
    Ok(Json::Bool(exists))
}

/// `search_files(pattern)`: the files whose path matches `pattern` when
/// it is a glob (with `*`, `?` or `[`), else those containing it; files
/// the caller may not read are not found either.
pub(super) fn search_files(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    let pattern = args.string("pattern")?;
    let ws = h.files().0;
    let files = ws.files().map_err(files_error("search_files"))?;
    if pattern.contains(['*', '?', '[']) {
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| ToolError::Args(format!("search_files(): bad pattern `{pattern}`: {e}")))?
            .compile_matcher();
        let found: Vec<String> = files.into_iter().filter(|f| glob.is_match(f)).collect();
        return Ok(json!(found));
    }
    let found: Vec<String> = files
        .into_iter()
        .filter(|f| {
            ProjectPath::parse(f)
                .ok()
                .and_then(|p| ws.read_text(&p).ok())
                .is_some_and(|t| t.contains(&pattern))
        })
        .collect();
    Ok(json!(found))
}

/// `get_file_tree()`: every file, one per line.
pub(super) fn get_file_tree(h: &mut dyn FileHost, _: &Args) -> Result<Json, ToolError> {
    let files = h.files().0.files().map_err(files_error("get_file_tree"))?;
    Ok(Json::String(files.join("\n")))
}

/// `write_file(path, content)`: the whole file, over what the caller
/// read of it (what the human typed since is kept).
pub(super) fn write_file(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    let raw = args.string("path")?;
    let content = args.string("content")?;
    let p = h.path("write_file", &raw)?;
    let (ws, read) = h.files();
    ws.write_read(&p, content.as_bytes(), read)
        .map_err(files_error("write_file"))?;
    h.wrote(&p);
    Ok(Json::Bool(true))
}

/// `delete_file(path)`: the path as written, never one a model meant.
pub(super) fn delete_file(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    let raw = args.string("path")?;
    let ws = h.files().0;
    let p = ws
        .path(&raw)
        .and_then(|p| ws.delete(&p).map(|()| p))
        .map_err(files_error("delete_file"))?;
    h.wrote(&p);
    Ok(Json::Bool(true))
}

/// `write_definitions(path, code)`: the functions and classes of `code`
/// replace those of the same names in the file, or are added to it.
/// Refused for its code, it says why as well.
pub(super) fn write_definitions(h: &mut dyn FileHost, args: &Args) -> Result<Json, ToolError> {
    const TOOL: &str = "write_definitions";
    let raw = args.string("path")?;
    let code = args.string("code")?;
    let p = h.path(TOOL, &raw)?;
    let ws = h.files().0;
    ws.may_write(&p).map_err(files_error(TOOL))?;
    let old = ws.read_text(&p).map_err(files_error(TOOL))?;
    let language = crate::lang::of_file(p.as_str());
    let new =
        crate::lang::splice::splice_definitions(language, &old, &code, None).map_err(|e| {
            let why = matches!(e, crate::lang::splice::SpliceError::Syntax(_))
                .then_some(WriteRefused::Unparsable);
            ToolError::Code {
                said: format!("{TOOL}(): {e}"),
                why,
            }
        })?;
    // Said now, not at submit_result: small models otherwise write the
    // file back as it was and submit it again and again.
    if new == old {
        return Err(ToolError::Code {
            said: format!(
                "{TOOL}(): `{p}` {STAYS_AS_IT_WAS}. Write the new version of the function you change, with the change made."
            ),
            why: Some(WriteRefused::Unchanged),
        });
    }
    if let Some(problem) = crate::lang::syntax_problem(language, &new) {
        return Err(ToolError::Code {
            said: format!("{TOOL}(): the result does not parse.\n{problem}"),
            why: Some(WriteRefused::Unparsable),
        });
    }
    ws.write(&p, new.as_bytes()).map_err(files_error(TOOL))?;
    h.wrote(&p);
    Ok(Json::Bool(true))
}
