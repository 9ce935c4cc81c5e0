//! The tool calls an ACP agent announced in a session, by their id. ACP's
//! fields are optional after a call's first announcement: a permission
//! request or an update may name only the id and what changed (Claude
//! Code asks permission without the kind it announced). What a request
//! leaves out is read here, so a call is judged by what it is.

use std::collections::{HashMap, VecDeque};

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionUpdate, ToolCall, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};

/// Calls remembered per agent process: a long session keeps its latest.
const KEPT: usize = 1000;

/// What a permission request is about, its fields completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub kind: ToolKind,
    pub title: String,
    /// The shell line it would run, when its input names one (`command`).
    pub line: Option<String>,
    /// The files it names (its locations, its input's `file_path` or
    /// `path`), as the agent wrote them.
    pub files: Vec<String>,
}

/// The calls announced so far (see the module's comment).
#[derive(Debug, Default)]
pub struct Calls {
    known: HashMap<String, ToolCall>,
    order: VecDeque<String>,
}

impl Calls {
    /// Takes in a session update: a call announced, or changed.
    pub fn note(&mut self, update: &SessionUpdate) {
        match update {
            SessionUpdate::ToolCall(call) => {
                let id = call.tool_call_id.0.to_string();
                if self.known.insert(id.clone(), call.clone()).is_none() {
                    self.order.push_back(id);
                }
                if self.order.len() > KEPT {
                    if let Some(old) = self.order.pop_front() {
                        self.known.remove(&old);
                    }
                }
            }
            SessionUpdate::ToolCallUpdate(u) => {
                if let Some(call) = self.known.get_mut(u.tool_call_id.0.as_ref()) {
                    call.update(u.fields.clone());
                }
            }
            _ => {}
        }
    }

    /// What a command the agent ran itself printed, as far as `update`
    /// shows it: the text of an `execute` call's content and raw output
    /// (a file the agent read may say anything, so only commands count).
    pub fn command_output(&self, update: &SessionUpdate) -> Option<String> {
        let id = match update {
            SessionUpdate::ToolCall(call) => &call.tool_call_id,
            SessionUpdate::ToolCallUpdate(u) => &u.tool_call_id,
            _ => return None,
        };
        let call = self.known.get(id.0.as_ref())?;
        // Codex calls `cat .env` a read: what ran a command says so in its
        // input.
        let ran = call.kind == ToolKind::Execute
            || call
                .raw_input
                .as_ref()
                .is_some_and(|i| i.get("command").is_some() || i.get("cmd").is_some());
        if !ran {
            return None;
        }
        let mut text = String::new();
        for c in &call.content {
            if let ToolCallContent::Content(c) = c {
                if let ContentBlock::Text(t) = &c.content {
                    text.push_str(&t.text);
                    text.push('\n');
                }
            }
        }
        if let Some(raw) = &call.raw_output {
            strings(raw, &mut text);
        }
        Some(text)
    }

    /// The fields of `call` over what was announced under its id.
    pub fn complete(&self, call: &ToolCallUpdate) -> ToolCallUpdateFields {
        match self.known.get(call.tool_call_id.0.as_ref()) {
            Some(known) => {
                let mut merged = known.clone();
                merged.update(call.fields.clone());
                ToolCallUpdate::from(merged).fields
            }
            None => call.fields.clone(),
        }
    }

    /// What a permission request about `call` asks: its kind ("other"
    /// only when the agent never said one) and its title.
    pub fn asked(&self, call: &ToolCallUpdate) -> Asked {
        let fields = self.complete(call);
        let line = fields
            .raw_input
            .as_ref()
            .and_then(|input| input.get("command").or_else(|| input.get("cmd")))
            .and_then(line_of);
        let mut files: Vec<String> = fields
            .locations
            .iter()
            .flatten()
            .map(|l| l.path.to_string_lossy().into_owned())
            .collect();
        let named = ["file_path", "path", "notebook_path"]
            .into_iter()
            .filter_map(|key| {
                let input = fields.raw_input.as_ref()?;
                input.get(key)?.as_str().map(str::to_owned)
            });
        for f in named {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        Asked {
            kind: fields.kind.unwrap_or(ToolKind::Other),
            title: fields.title.unwrap_or_default(),
            line,
            files,
        }
    }
}

/// The shell line a call's `command` runs: the line itself, or a shell's
/// `-c LINE` as an argument list (`["/bin/bash", "-lc", "cat a"]`).
fn line_of(command: &serde_json::Value) -> Option<String> {
    if let Some(line) = command.as_str() {
        return Some(line.to_owned());
    }
    let argv: Vec<&str> = command
        .as_array()?
        .iter()
        .map(|a| a.as_str())
        .collect::<Option<_>>()?;
    match argv.as_slice() {
        [_, flag, line] if matches!(*flag, "-c" | "-lc" | "-ic") => Some((*line).to_owned()),
        _ => shlex::try_join(argv.iter().copied()).ok(),
    }
}

/// Every string in `value`, a line each.
fn strings(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// A kind as ACP spells it (`edit`, `execute`, `read`), for people.
pub fn kind_name(kind: ToolKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(v: serde_json::Value) -> SessionUpdate {
        serde_json::from_value(v).unwrap()
    }

    fn request(v: serde_json::Value) -> ToolCallUpdate {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_permission_without_a_kind_is_judged_by_the_call_announced_under_its_id() {
        let mut calls = Calls::default();
        calls.note(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit app.py", "kind": "edit", "status": "pending"})));
        calls.note(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Edit `app.py`"})));
        // Claude Code's request: the id, the input and a title; no kind.
        let asked = calls.asked(&request(
            json!({"toolCallId": "t1", "rawInput": {"file_path": "/x/app.py"}}),
        ));
        assert_eq!(asked.kind, ToolKind::Edit);
        assert_eq!(asked.title, "Edit `app.py`");
        assert_eq!(asked.line, None);
        calls.note(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "ls", "kind": "execute", "rawInput": {"command": "ls | wc -l"}})));
        let asked = calls.asked(&request(json!({"toolCallId": "t2"})));
        assert_eq!(asked.line.as_deref(), Some("ls | wc -l"));
        // What the request says itself wins.
        let asked = calls.asked(&request(
            json!({"toolCallId": "t1", "kind": "delete", "title": "Delete"}),
        ));
        assert_eq!(
            (asked.kind, asked.title.as_str()),
            (ToolKind::Delete, "Delete")
        );
        // A call never announced, with no kind: other, said as such.
        let asked = calls.asked(&request(json!({"toolCallId": "t9", "title": "?"})));
        assert_eq!(kind_name(asked.kind), "other");
        assert_eq!(kind_name(ToolKind::Execute), "execute");
    }

    #[test]
    fn what_a_command_printed_is_read_from_its_call_never_from_a_read() {
        let mut calls = Calls::default();
        let ran = update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "b1", "title": "bash", "kind": "execute"}),
        );
        calls.note(&ran);
        let done = update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "cat: /p/.env: Permission denied"}}],
            "rawOutput": {"output": "ls: x", "exit": 1}}),
        );
        calls.note(&done);
        assert_eq!(
            calls.command_output(&done).unwrap(),
            "cat: /p/.env: Permission denied\nls: x\n"
        );
        // Codex's `cat`, called a search, its command in its input.
        let codex = update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read .env", "kind": "search",
            "rawInput": {"command": ["/bin/bash", "-lc", "cat /p/.env"]}}),
        );
        calls.note(&codex);
        let out = update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed",
            "rawOutput": {"stdout": "cat: /p/.env: Permission denied\n"}}),
        );
        calls.note(&out);
        assert!(calls
            .command_output(&out)
            .unwrap()
            .contains("cat: /p/.env: Permission denied\n"));
        let asked = calls.asked(&request(json!({"toolCallId": "c1"})));
        assert_eq!(asked.line.as_deref(), Some("cat /p/.env"));
        let read = update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "r1", "title": "read", "kind": "read",
            "content": [{"type": "content", "content": {"type": "text", "text": "Permission denied"}}]}),
        );
        calls.note(&read);
        assert_eq!(calls.command_output(&read), None);
    }

    #[test]
    fn a_long_session_keeps_its_latest_calls() {
        let mut calls = Calls::default();
        for i in 0..=KEPT {
            calls.note(&update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "Read", "kind": "read"})));
        }
        assert_eq!(calls.known.len(), KEPT);
        let first = calls.asked(&request(json!({"toolCallId": "t0"})));
        assert_eq!(first.kind, ToolKind::Other);
        let last = calls.asked(&request(json!({"toolCallId": format!("t{KEPT}")})));
        assert_eq!(last.kind, ToolKind::Read);
    }
}
