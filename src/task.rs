//! A task as any client gives it — Neovim (`lua.from_value`), the HTTP API
//! and the CLI (its JSON body), A2A — checked in one place. The runtime
//! turns it into the agent's [`crate::agent::Job`] and its stored record.

use serde::{Deserialize, Serialize};

use crate::config::AgentMode;

/// How the agent of an MCP session is marked: its `external` is this and
/// the name of the host that writes it.
pub const MCP_SESSION_PREFIX: &str = "mcp:";

/// What the human asked for, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// What the agent should do.
    pub task: String,
    /// The human's selection, when the task was given with a range.
    #[serde(default)]
    pub context: Option<String>,
    /// The file the human was in: a project path, or an absolute path
    /// inside the project.
    #[serde(default)]
    pub file: Option<String>,
    /// The cursor's line in that file, counted from 1 as editors show it.
    #[serde(default)]
    pub line: Option<usize>,
    /// `code` or `tools`; none: `agents.mode`.
    #[serde(default)]
    pub mode: Option<String>,
    /// A capabilities preset; none: `capabilities.preset`.
    #[serde(default)]
    pub capabilities: Option<String>,
    /// The ACP agent of `agents.external` that does the work, if not ours.
    #[serde(default, alias = "agent")]
    pub external: Option<String>,
}

/// Why a task is refused before anything starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("the task is empty; say what the agent should do")]
    Empty,
    #[error("mode must be \"code\" or \"tools\", not {0:?}")]
    Mode(String),
    #[error("the line counts from 1 (the first line of the file is 1)")]
    LineZero,
}

impl TaskSpec {
    /// A task with nothing but its words.
    pub fn new(task: impl Into<String>) -> Self {
        TaskSpec {
            task: task.into(),
            ..TaskSpec::default()
        }
    }

    /// Refuses a task no agent could start on, saying why.
    pub fn check(&self) -> Result<(), TaskError> {
        if self.task.trim().is_empty() {
            return Err(TaskError::Empty);
        }
        if self.line == Some(0) {
            return Err(TaskError::LineZero);
        }
        self.agent_mode().map(|_| ())
    }

    /// The mode asked for, if any.
    pub fn agent_mode(&self) -> Result<Option<AgentMode>, TaskError> {
        self.mode
            .as_deref()
            .map(|m| AgentMode::parse(m).ok_or_else(|| TaskError::Mode(m.to_owned())))
            .transpose()
    }

    /// The mode asked for; one that is not a mode (a task not checked)
    /// runs in the default mode.
    pub fn mode(&self) -> Option<AgentMode> {
        self.agent_mode().ok().flatten()
    }

    /// The cursor's line counted from 0, as the core counts lines.
    pub fn cursor_line(&self) -> Option<usize> {
        self.line.and_then(|l| l.checked_sub(1))
    }
}

impl From<&str> for TaskSpec {
    fn from(task: &str) -> Self {
        TaskSpec::new(task)
    }
}

impl From<String> for TaskSpec {
    fn from(task: String) -> Self {
        TaskSpec::new(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_read_as_every_client_sends_it_and_checked_once() {
        let api: TaskSpec = serde_json::from_value(serde_json::json!({
            "task": "fix add", "file": "calc.py", "line": 3, "mode": "tools", "agent": "opencode"
        }))
        .unwrap();
        assert_eq!(api.external.as_deref(), Some("opencode"));
        assert_eq!(api.cursor_line(), Some(2), "the core counts from 0");
        assert_eq!(api.check(), Ok(()));
        assert_eq!(TaskSpec::new("  ").check(), Err(TaskError::Empty));
        let zero = TaskSpec {
            line: Some(0),
            ..TaskSpec::new("x")
        };
        assert_eq!(zero.check(), Err(TaskError::LineZero));
        let mode = TaskSpec {
            mode: Some("fast".into()),
            ..TaskSpec::new("x")
        };
        assert!(mode.check().unwrap_err().to_string().contains("\"fast\""));
    }
}
