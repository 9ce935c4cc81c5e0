//! Code a model sends as a fenced block rather than inside a JSON call:
//! what it is told, the write tools as such a model sees them, and the
//! call a block becomes.

use serde_json::{Map, Value as Json};

use super::registry::{spec, ToolSpec};

/// What a model is told when its next reply is asked as a code block:
/// the task again, last, where a small model reads it (several steps in,
/// it otherwise changes something else).
pub(super) fn ask_for_block(path: &str, task: &str) -> String {
    format!(
        "\nThe task: {task}\nNow reply with the new version of each function you change, with \
         the change made, in one ```{} block and nothing else (not JSON): it is written to \
         `{path}` with write_definitions.",
        crate::lang::of_file(path).fence
    )
}

/// What a model is told when it asked to write the whole file `path` and
/// is to send it as a code block.
pub(super) fn ask_for_file_block(path: &str, task: &str) -> String {
    format!(
        "\nThe task: {task}\nNow reply with the whole new content of `{path}` in one ```{} \
         block and nothing else (not JSON).",
        crate::lang::of_file(path).fence
    )
}

/// The size (billions of parameters) from which a model writes code inside
/// a JSON call as well as in a block; smaller ones give a write only its
/// path and send the code next, as a block.
pub(super) const JSON_CODE_FROM_B: f64 = 7.0;

/// The write tools as a model that sends code in blocks sees them: only a
/// path.
pub(super) fn path_only_writes(tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
    tools
        .into_iter()
        .map(|t| match t.name.as_str() {
            "write_file" => spec(
                "write_file",
                "Write a whole file: give its path; your next reply is its whole new content in one fenced code block.",
                &[("path", "string", "project path")],
            ),
            "write_definitions" => spec(
                "write_definitions",
                "Change functions/classes in a file: give its path; your next reply is the new version of each one you change, in one fenced code block.",
                &[("path", "string", "project path")],
            ),
            _ => t,
        })
        .collect()
}

/// Why a reply asked for as the code of `path` is no code, if it is
/// not: JSON (small models copy the answer or the error of the call
/// before, a fence inside its strings or not; a JSON file's content may
/// well be JSON), or words without a fence that do not parse as the
/// file's language (they copy the note a cut reply left too).
pub(super) fn why_not_code(path: &str, reply: &str) -> Option<&'static str> {
    if !path.ends_with(".json")
        && serde_json::from_str::<Json>(reply.trim()).is_ok_and(|v| v.is_object())
    {
        return Some("That reply was JSON, not the code.");
    }
    let language = crate::lang::for_path(path)?;
    (!reply.contains("```") && crate::lang::syntax_problem(language, reply).is_some())
        .then_some("That reply held no fenced code block.")
}

/// The write call a block (`reply`) for `path` becomes: the whole file
/// when `whole`, else the definitions it changes.
pub(super) fn write_call(path: String, whole: bool, reply: &str) -> (String, Map<String, Json>) {
    let code = crate::agent::prompt::extract_code_as(reply, crate::lang::of_file(&path));
    let (tool, key) = match whole {
        true => ("write_file", "content"),
        false => ("write_definitions", "code"),
    };
    let mut args = Map::new();
    args.insert("path".into(), Json::String(path));
    args.insert(key.into(), Json::String(code));
    (tool.to_owned(), args)
}
