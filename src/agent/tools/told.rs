//! What a tool-mode model is told after each call: the result as JSON
//! it can act on, and for small models the step that comes next.

use serde_json::{json, Value as Json};

use crate::sandbox::{HostError, Value};

/// What to do next after a call of `tool`, for small models that
/// otherwise repeat a call or stop short.
/// In a chat, a read may be all a question needs.
pub(super) fn next_step(tool: &str, repeated: bool, chat: bool) -> Option<&'static str> {
    Some(match (tool, repeated) {
        (_, true) => "You made this same call before; its result is above. Do the next step instead.",
        ("read_file" | "search_files" | "list_dir" | "get_file_tree", _) if chat => "Next: if the human asked a question, answer it now with reply(text). Only if they asked for a change: call write_definitions with the path and the new version of each function you change.",
        ("read_file", _) => "Next: call write_definitions with the path and the new version of each function you change (or write_file with the whole new content).",
        ("write_file" | "write_definitions", _) => "Next: if the task is done, call submit_result(summary, changed_files).",
        _ => return None,
    })
}

/// The result of a tool as the model sees it (capped).
pub(super) fn result_message(result: Result<Value, HostError>) -> String {
    const CAP: usize = 6000;
    let json = match result {
        Ok(v) => json!({"ok": true, "result": to_json(&v)}),
        Err(e) => json!({"ok": false, "error": e.to_string()}),
    };
    let mut s = json.to_string();
    if s.len() > CAP {
        let mut end = CAP;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("… (cut)");
    }
    s
}

fn to_json(v: &Value) -> Json {
    match v {
        Value::None => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::String(s) => json!(s),
        Value::List(items) | Value::Tuple(items) => {
            Json::Array(items.iter().map(to_json).collect())
        }
        other => json!(other.to_string()),
    }
}
