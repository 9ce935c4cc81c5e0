//! An ACP agent's turns as the human follows them: what it was told, its
//! words, thoughts, plan and tool calls. Each update becomes a [`Piece`]
//! streamed to the editor; when a turn ends its lines go to the agent's
//! log, so the conversation outlives the editor that watched it.

use agent_client_protocol::v1::schema::{
    ContentBlock, PlanEntryStatus, SessionUpdate, ToolCallStatus,
};
use serde::Serialize;

/// One streamed part of a turn, as the editor shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Piece {
    /// The prompt a turn starts with.
    Prompt { text: String },
    /// More of the agent's reply.
    Message { text: String },
    /// More of its reasoning (shown while it runs, not kept).
    Thought { text: String },
    /// A tool call started or changed; `call` names it across updates.
    Tool {
        call: String,
        title: String,
        status: &'static str,
    },
    /// Its whole plan, each entry with a check box.
    Plan { entries: Vec<String> },
}

/// Bytes of the agent's reply kept per turn: its latest, for the summary
/// and the progress line (an agent may stream without end).
const SAID_LIMIT: usize = 64 * 1024;

/// Entries kept per turn: a turn of thousands of tool calls keeps its last.
const ENTRIES_LIMIT: usize = 500;

#[derive(Debug)]
enum Entry {
    Prompt(String),
    Message(String),
    Tool {
        call: String,
        title: String,
        status: &'static str,
    },
    /// What the sandbox refused, and by which rule.
    Refused(String, &'static str),
}

/// The turn in progress.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// All the turn's reply text, for [`Transcript::words`].
    said: String,
    /// What the sandbox refused in the whole run, each once.
    refused: Vec<String>,
    /// The id of the message being said, when the agent gives one.
    message: Option<String>,
}

impl Transcript {
    /// Starts a turn with `prompt`, forgetting the last one (its lines were
    /// taken by [`Transcript::take_lines`]).
    pub fn begin(&mut self, prompt: &str) -> Piece {
        self.entries.clear();
        self.said.clear();
        self.entries.push(Entry::Prompt(prompt.to_owned()));
        Piece::Prompt {
            text: prompt.to_owned(),
        }
    }

    /// Takes in one update; what to show of it, if anything.
    pub fn update(&mut self, update: &SessionUpdate) -> Option<Piece> {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                let text = text_of(&chunk.content)?;
                let id = chunk.message_id.as_ref().map(|m| m.0.to_string());
                self.take_reply(text, id);
                Some(Piece::Message {
                    text: text.to_owned(),
                })
            }
            SessionUpdate::AgentThoughtChunk(chunk) => Some(Piece::Thought {
                text: text_of(&chunk.content)?.to_owned(),
            }),
            SessionUpdate::ToolCall(call) => {
                let piece = Piece::Tool {
                    call: call.tool_call_id.0.to_string(),
                    title: call.title.clone(),
                    status: status_name(call.status),
                };
                self.tool(&piece);
                Some(piece)
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let call = u.tool_call_id.0.to_string();
                let known = self.entries.iter().rev().find_map(|e| match e {
                    Entry::Tool {
                        call: c,
                        title,
                        status,
                    } if *c == call => Some((title.clone(), *status)),
                    _ => None,
                });
                let (title, status) = known.unwrap_or_default();
                let piece = Piece::Tool {
                    call,
                    title: u.fields.title.clone().unwrap_or(title),
                    status: u.fields.status.map_or(status, status_name),
                };
                self.tool(&piece);
                Some(piece)
            }
            SessionUpdate::Plan(plan) => Some(Piece::Plan {
                entries: plan
                    .entries
                    .iter()
                    .map(|e| {
                        let mark = match e.status {
                            PlanEntryStatus::Completed => "[x]",
                            PlanEntryStatus::InProgress => "[~]",
                            _ => "[ ]",
                        };
                        format!("{mark} {}", e.content)
                    })
                    .collect(),
            }),
            _ => None,
        }
    }

    /// Takes in more of the agent's reply, `id` the message's when it
    /// gives one. A message after a tool call, or one the agent names as
    /// another, is a new paragraph, never glued to the last one's end.
    fn take_reply(&mut self, text: &str, id: Option<String>) {
        // Without ids (Codex sends each message whole, one after
        // another), a sentence's end followed at once by a capital is a
        // new message: a stream's next word starts with a space.
        let glued = self.said.ends_with(['.', '!', '?'])
            && text.starts_with(|c: char| c.is_ascii_uppercase());
        let another = (id.is_some() && self.message != id) || (id.is_none() && glued);
        if id.is_some() {
            self.message = id;
        }
        if another || !matches!(self.entries.last(), Some(Entry::Message(_))) {
            let gap = match &self.said {
                s if s.is_empty() || s.ends_with("\n\n") => "",
                s if s.ends_with('\n') => "\n",
                _ => "\n\n",
            };
            keep_latest(&mut self.said, gap);
        }
        keep_latest(&mut self.said, text);
        match self.entries.last_mut() {
            Some(Entry::Message(m)) if !another => keep_latest(m, text),
            _ => self.push(Entry::Message(text.to_owned())),
        }
    }

    /// Notes that the sandbox refused `what` under `rule`; whether it is
    /// new in this run.
    pub fn refused(&mut self, what: &str, rule: &'static str) -> bool {
        if self.refused.iter().any(|r| r == what) {
            return false;
        }
        self.refused.push(what.to_owned());
        self.push(Entry::Refused(what.to_owned(), rule));
        true
    }

    /// What the sandbox refused in this run, in order.
    pub fn refusals(&self) -> &[String] {
        &self.refused
    }

    /// Everything the agent replied this turn.
    pub fn words(&self) -> &str {
        &self.said
    }

    /// The turn as log lines: the prompt's first line after `»`, the
    /// reply's lines, each tool call as `▸ title (status)`.
    pub fn take_lines(&mut self) -> Vec<String> {
        let mut lines = vec![];
        for e in self.entries.drain(..) {
            match e {
                Entry::Prompt(p) => {
                    let first = p.lines().map(str::trim).find(|l| !l.is_empty());
                    lines.push(format!("» {}", first.unwrap_or("")));
                }
                Entry::Message(m) => lines.extend(
                    m.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(str::to_owned),
                ),
                Entry::Tool { title, status, .. } => {
                    lines.push(format!("▸ {title} ({status})"));
                }
                Entry::Refused(what, rule) => {
                    lines.push(format!("⊘ the sandbox refused {what} ({rule})"));
                }
            }
        }
        lines
    }

    fn push(&mut self, e: Entry) {
        if self.entries.len() >= ENTRIES_LIMIT {
            // The prompt stays: it says what the rest answers.
            self.entries.remove(1);
        }
        self.entries.push(e);
    }

    /// Records a tool call's latest state in place (one line per call).
    fn tool(&mut self, piece: &Piece) {
        let Piece::Tool {
            call,
            title,
            status,
        } = piece
        else {
            return;
        };
        let known = self
            .entries
            .iter_mut()
            .rev()
            .find(|e| matches!(e, Entry::Tool { call: c, .. } if c == call));
        match known {
            Some(Entry::Tool {
                title: t,
                status: s,
                ..
            }) => {
                t.clone_from(title);
                *s = status;
            }
            _ => self.push(Entry::Tool {
                call: call.clone(),
                title: title.clone(),
                status,
            }),
        }
    }
}

fn text_of(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

fn status_name(s: ToolCallStatus) -> &'static str {
    match s {
        ToolCallStatus::Pending => "pending",
        ToolCallStatus::InProgress => "running",
        ToolCallStatus::Completed => "done",
        ToolCallStatus::Failed => "failed",
        _ => "pending",
    }
}

/// Appends `more` to `text`, dropping its oldest bytes past [`SAID_LIMIT`].
fn keep_latest(text: &mut String, more: &str) {
    text.push_str(more);
    if text.len() > SAID_LIMIT {
        let mut cut = text.len() - SAID_LIMIT;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text.drain(..cut);
    }
}

/// The last line of `text` with something on it, at most 120 characters.
pub fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let n = line.chars().count();
    if n > 120 {
        format!("…{}", line.chars().skip(n - 119).collect::<String>())
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(v: serde_json::Value) -> SessionUpdate {
        serde_json::from_value(v).unwrap()
    }

    fn say(text: &str) -> SessionUpdate {
        update(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
        )
    }

    #[test]
    fn a_turn_becomes_lines_in_the_order_it_happened() {
        let mut t = Transcript::default();
        t.begin("Fix add\nThe file in question: calc.py");
        t.update(&say("Looking at "));
        t.update(&say("calc.py.\n"));
        let piece = t.update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit calc.py", "kind": "edit", "status": "pending"})));
        assert_eq!(
            piece,
            Some(Piece::Tool {
                call: "c1".into(),
                title: "Edit calc.py".into(),
                status: "pending"
            })
        );
        // An update names only what changed: the title is remembered.
        let piece = t.update(&update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
        ));
        assert_eq!(
            piece,
            Some(Piece::Tool {
                call: "c1".into(),
                title: "Edit calc.py".into(),
                status: "done"
            })
        );
        t.update(&update(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})));
        t.update(&say("Fixed add."));
        assert_eq!(t.words(), "Looking at calc.py.\n\nFixed add.");
        assert_eq!(
            t.take_lines(),
            [
                "» Fix add",
                "Looking at calc.py.",
                "▸ Edit calc.py (done)",
                "Fixed add."
            ]
        );
        assert!(t.take_lines().is_empty());
    }

    #[test]
    fn messages_between_tool_calls_stay_paragraphs() {
        let mut t = Transcript::default();
        t.begin("fix greet");
        t.update(&say("I will look at "));
        t.update(&say("the code."));
        t.update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "kind": "read"})));
        t.update(&say("done: greet"));
        t.update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Read", "kind": "read"})));
        t.update(&say("Checked.\n"));
        t.update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c3", "title": "Read", "kind": "read"})));
        t.update(&say("All good."));
        assert_eq!(
            t.words(),
            "I will look at the code.\n\ndone: greet\n\nChecked.\n\nAll good."
        );
        // Two messages in a row, told apart by their ids (Codex's warning,
        // then its answer).
        let mut t = Transcript::default();
        t.begin("fix greet");
        let said = |text: &str, id: &str| {
            update(
                json!({"sessionUpdate": "agent_message_chunk", "messageId": id, "content": {"type": "text", "text": text}}),
            )
        };
        t.update(&said("Model metadata not found.", "m1"));
        t.update(&said("Fixed ", "m2"));
        t.update(&say("greet."));
        assert_eq!(t.words(), "Model metadata not found.\n\nFixed greet.");
        // Nor ids: a sentence's end, then a capital at once.
        let mut t = Transcript::default();
        t.begin("fix greet");
        t.update(&say("Model metadata not found."));
        t.update(&say("Fixed greet."));
        t.update(&say(" Also checked."));
        assert_eq!(
            t.words(),
            "Model metadata not found.\n\nFixed greet. Also checked."
        );
    }

    #[test]
    fn a_plan_is_shown_with_its_progress() {
        let mut t = Transcript::default();
        let piece = t.update(&update(json!({"sessionUpdate": "plan", "entries": [
            {"content": "read", "priority": "high", "status": "completed"},
            {"content": "fix", "priority": "high", "status": "in_progress"},
            {"content": "test", "priority": "low", "status": "pending"}]})));
        assert_eq!(
            piece,
            Some(Piece::Plan {
                entries: vec!["[x] read".into(), "[~] fix".into(), "[ ] test".into()]
            })
        );
    }

    #[test]
    fn an_agent_that_never_stops_is_kept_to_its_latest() {
        let mut t = Transcript::default();
        t.begin("go");
        for i in 0..100_000 {
            t.update(&say(&format!("é{i} ")));
        }
        assert!(t.words().len() <= SAID_LIMIT, "{}", t.words().len());
        assert!(t.words().ends_with("é99999 "));
        for i in 0..2 * ENTRIES_LIMIT {
            t.update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{i}"), "title": "Read"})));
        }
        let lines = t.take_lines();
        assert_eq!(lines[0], "» go");
        assert_eq!(lines.len(), ENTRIES_LIMIT);
    }

    #[test]
    fn progress_shows_the_line_being_said() {
        assert_eq!(last_line("Fixing"), "Fixing");
        assert_eq!(last_line("Fixing add.\nNow the tests\n"), "Now the tests");
        assert_eq!(last_line(&"y".repeat(200)).chars().count(), 120);
    }
}
