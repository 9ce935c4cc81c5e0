//! The Remora event types (seed §7), appended to the project's event log
//! with a sequence number, and subscriptions that turn events into triggers
//! for node agents.

use serde::{Deserialize, Serialize};

/// One event. Serialized with `event_type` naming the variant as the seed
/// does (`AgentStartEvent`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event_type")]
pub enum Event {
    #[serde(rename = "AgentStartEvent")]
    AgentStart {
        agent_id: String,
        trigger_event_id: Option<String>,
    },
    #[serde(rename = "AgentCompleteEvent")]
    AgentComplete { agent_id: String, result: String },
    #[serde(rename = "AgentErrorEvent")]
    AgentError { agent_id: String, error: String },
    #[serde(rename = "AgentMessageEvent")]
    AgentMessage {
        from_agent: String,
        to_agent: String,
        message: String,
    },
    #[serde(rename = "RewriteProposalEvent")]
    RewriteProposal {
        agent_id: String,
        proposal_id: String,
        old_source: String,
        new_source: String,
        diff: String,
    },
    #[serde(rename = "RewriteAppliedEvent")]
    RewriteApplied {
        agent_id: String,
        proposal_id: String,
    },
    #[serde(rename = "RewriteRejectedEvent")]
    RewriteRejected {
        agent_id: String,
        proposal_id: String,
        feedback: String,
    },
    #[serde(rename = "TopologyChangedEvent")]
    TopologyChanged {
        file_path: String,
        added_nodes: Vec<String>,
        removed_nodes: Vec<String>,
        orphaned_nodes: Vec<String>,
    },
    #[serde(rename = "HumanChatEvent")]
    HumanChat { to_agent: String, message: String },
    /// A question to a node (`message_node` with a question, or the
    /// human's): its answer comes back as [`Event::AgentAnswer`]; no agent
    /// wakes for it.
    #[serde(rename = "AgentQuestionEvent")]
    AgentQuestion {
        from_agent: String,
        to_agent: String,
        question: String,
    },
    /// A node's answer to a question (`to_agent` is `human` for the human's).
    #[serde(rename = "AgentAnswerEvent")]
    AgentAnswer {
        from_agent: String,
        to_agent: String,
        answer: String,
    },
}

/// Every event type, as stored.
pub const EVENT_TYPES: [&str; 11] = [
    "AgentStartEvent",
    "AgentCompleteEvent",
    "AgentErrorEvent",
    "AgentMessageEvent",
    "RewriteProposalEvent",
    "RewriteAppliedEvent",
    "RewriteRejectedEvent",
    "TopologyChangedEvent",
    "HumanChatEvent",
    "AgentQuestionEvent",
    "AgentAnswerEvent",
];

impl Event {
    pub fn event_type(&self) -> &'static str {
        match self {
            Event::AgentStart { .. } => EVENT_TYPES[0],
            Event::AgentComplete { .. } => EVENT_TYPES[1],
            Event::AgentError { .. } => EVENT_TYPES[2],
            Event::AgentMessage { .. } => EVENT_TYPES[3],
            Event::RewriteProposal { .. } => EVENT_TYPES[4],
            Event::RewriteApplied { .. } => EVENT_TYPES[5],
            Event::RewriteRejected { .. } => EVENT_TYPES[6],
            Event::TopologyChanged { .. } => EVENT_TYPES[7],
            Event::HumanChat { .. } => EVENT_TYPES[8],
            Event::AgentQuestion { .. } => EVENT_TYPES[9],
            Event::AgentAnswer { .. } => EVENT_TYPES[10],
        }
    }

    /// The agent (node) the event comes from, if any.
    pub fn from_agent(&self) -> Option<&str> {
        match self {
            Event::AgentStart { agent_id, .. }
            | Event::AgentComplete { agent_id, .. }
            | Event::AgentError { agent_id, .. }
            | Event::RewriteProposal { agent_id, .. }
            | Event::RewriteApplied { agent_id, .. }
            | Event::RewriteRejected { agent_id, .. } => Some(agent_id),
            Event::AgentMessage { from_agent, .. }
            | Event::AgentQuestion { from_agent, .. }
            | Event::AgentAnswer { from_agent, .. } => Some(from_agent),
            Event::TopologyChanged { .. } | Event::HumanChat { .. } => None,
        }
    }

    /// The agent (node) the event is addressed to, if any.
    pub fn to_agent(&self) -> Option<&str> {
        match self {
            Event::AgentMessage { to_agent, .. }
            | Event::HumanChat { to_agent, .. }
            | Event::AgentQuestion { to_agent, .. }
            | Event::AgentAnswer { to_agent, .. } => Some(to_agent),
            _ => None,
        }
    }

    /// The node the event is about, for the event log's `agent_id` column.
    pub fn subject(&self) -> Option<&str> {
        self.to_agent().or_else(|| self.from_agent())
    }
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Position in the log; strictly increasing.
    pub seq: i64,
    pub event_id: String,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    pub correlation_id: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

/// What an agent subscribes to. Empty lists match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pattern {
    pub event_types: Vec<String>,
    pub from_agents: Vec<String>,
    pub to_agents: Vec<String>,
    /// Ignore the subscriber's own events.
    pub not_from_self: bool,
}

impl Pattern {
    /// Whether `event` triggers `subscriber`.
    pub fn matches(&self, subscriber: &str, event: &Event) -> bool {
        let listed = |list: &[String], v: Option<&str>| {
            list.is_empty() || v.is_some_and(|v| list.iter().any(|x| x == v))
        };
        listed(&self.event_types, Some(event.event_type()))
            && listed(&self.from_agents, event.from_agent())
            && listed(&self.to_agents, event.to_agent())
            && !(self.not_from_self && event.from_agent() == Some(subscriber))
    }

    /// The default subscription of a node agent: messages and chats
    /// addressed to it. (A proposal rejected with feedback runs its agent
    /// again through the review flow, not through a trigger.)
    pub fn for_node(id: &str) -> Vec<Pattern> {
        vec![Pattern {
            event_types: vec!["AgentMessageEvent".into(), "HumanChatEvent".into()],
            to_agents: vec![id.into()],
            not_from_self: true,
            ..Pattern::default()
        }]
    }
}

/// An agent to wake for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    pub agent_id: String,
    pub seq: i64,
    pub correlation_id: Option<String>,
}

/// The triggers `event` (at `seq`) fires among `subscriptions`
/// (`(agent, pattern)` pairs), one per agent.
pub fn triggers(
    subscriptions: &[(String, Pattern)],
    seq: i64,
    correlation_id: Option<&str>,
    event: &Event,
) -> Vec<Trigger> {
    let mut out: Vec<Trigger> = Vec::new();
    for (agent, pattern) in subscriptions {
        if pattern.matches(agent, event) && !out.iter().any(|t| &t.agent_id == agent) {
            out.push(Trigger {
                agent_id: agent.clone(),
                seq,
                correlation_id: correlation_id.map(str::to_owned),
            });
        }
    }
    out
}
