//! What the store keeps of an agent: its state and the transitions it
//! may make, its record, the feedback on its rejected attempts and the
//! files of its proposal.

use serde::{Deserialize, Serialize};

use super::{now_ms, Hash};
use crate::task::TaskSpec;

/// Lifecycle state of an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Queued,
    Running,
    Completed,
    Accepted,
    /// Ended with nothing to review, and nobody accepted anything: the
    /// run changed no file (an answer, messages to other nodes), or the
    /// human's text already holds every change it made.
    Settled,
    Rejected,
    Failed,
    Cancelled,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Accepted => "accepted",
            Self::Settled => "settled",
            Self::Rejected => "rejected",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "accepted" => Self::Accepted,
            "settled" => Self::Settled,
            "rejected" => Self::Rejected,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Still working: neither a proposal nor an end.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Queued | Self::Running)
    }

    /// An end state: nothing more happens to the agent.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Accepted | Self::Settled | Self::Rejected | Self::Failed | Self::Cancelled
        )
    }

    /// The lifecycle: `queued → running → completed → accepted | rejected`,
    /// plus `failed` and `cancelled`. A running agent whose owner died goes
    /// back to `queued` (recovery); a completed one may run again (reject
    /// with feedback). Only a human (or a script of theirs) makes an agent
    /// `accepted`; a run that changed nothing, or whose every change the
    /// human's text already holds, ends `settled`.
    pub fn can_become(self, to: Self) -> bool {
        use AgentState::*;
        self == to
            || matches!(
                (self, to),
                (Queued, Running | Cancelled | Failed)
                    | (Running, Completed | Settled | Failed | Cancelled | Queued)
                    | (Completed, Accepted | Settled | Rejected | Queued | Cancelled | Failed)
                    // The human accepts what their text already holds.
                    | (Settled, Accepted)
            )
    }
}

/// The record of one agent, as shown to users (`require("chimera").agent(id)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: String,
    pub state: AgentState,
    /// The task as the client gave it (its file a project path): a field
    /// added there is stored, shown and run again with no change here.
    #[serde(flatten)]
    pub spec: TaskSpec,
    pub summary: Option<String>,
    pub error: Option<String>,
    pub changed_files: Vec<String>,
    /// The proposal no longer applies cleanly to the human's files.
    pub conflicted: bool,
    /// Model round trips the agent used (1 = no repair needed).
    pub rounds: u32,
    /// The Neovim instance running it.
    #[serde(default)]
    pub owner: String,
    /// Times it was re-queued because its owner died while it ran.
    #[serde(default)]
    pub recoveries: u32,
    /// Earlier attempts the user rejected with feedback, oldest first.
    #[serde(default)]
    pub feedback: Vec<Feedback>,
    /// What its programs said with `log()`, oldest first (the last
    /// [`AGENT_LOG_LINES`] lines).
    #[serde(default)]
    pub log: Vec<String>,
    /// The tokens its model calls used, and their price.
    #[serde(default)]
    pub usage: TokenUse,
    /// Accepted, then undone by the human in the buffer it went into (`u`);
    /// false again once redone.
    #[serde(default)]
    pub undone: bool,
    pub owner_pid: u32,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Tokens model calls used, summed, and what they cost at the price the
/// user set for the model (`llm.prices`; 0 without one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUse {
    pub input: u64,
    pub output: u64,
    /// In US dollars.
    pub cost: f64,
    /// Some calls' tokens were estimated (the server did not count them).
    pub estimated: bool,
}

impl TokenUse {
    /// `self` and `other` summed.
    pub fn plus(self, other: TokenUse) -> TokenUse {
        TokenUse {
            input: self.input + other.input,
            output: self.output + other.output,
            cost: self.cost + other.cost,
            estimated: self.estimated || other.estimated,
        }
    }
}

impl AgentRecord {
    /// A new `queued` agent for `spec`, owned by this process, with
    /// nothing done yet.
    pub fn new(id: impl Into<String>, spec: impl Into<TaskSpec>) -> Self {
        let now = now_ms();
        Self {
            id: id.into(),
            state: AgentState::Queued,
            spec: spec.into(),
            summary: None,
            error: None,
            changed_files: vec![],
            conflicted: false,
            usage: TokenUse::default(),
            undone: false,
            rounds: 0,
            owner: String::new(),
            recoveries: 0,
            feedback: vec![],
            log: vec![],
            owner_pid: std::process::id(),
            created_at: now,
            updated_at: now,
        }
    }
}

/// A rejected attempt and what the user said about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// The rejected proposal as a unified diff.
    pub attempt: String,
    pub feedback: String,
}

/// One file of a proposal: the stable content it was diffed against and the
/// agent's content (`None` on either side: the file does not exist there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposalFile {
    pub path: String,
    pub base_hash: Option<Hash>,
    pub new_hash: Option<Hash>,
}
