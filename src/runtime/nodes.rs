//! Node agents in the runtime: hydrating a node's view from the topology,
//! waking node agents for chats, messages and subscribed events (with the
//! activation-chain checks), and logging the seed's events along their life.

use std::sync::{Arc, Weak};

use super::{spawn_agent, Core};
use crate::agent::node::{self, BusError, NodeBus, NodeJob, NodeView};
use crate::agent::Job;
use crate::event::Level;
use crate::port::ForEditor;
use crate::remora::events::{Event, Pattern, Trigger};
use crate::remora::Node;
use crate::store::now_ms;
use crate::task::TaskSpec;

impl Core {
    /// Appends a Remora event, shows it to the editor, and wakes the node
    /// agents subscribed to it.
    pub(super) fn emit(self: &Arc<Self>, event: Event, correlation: Option<&str>) {
        match self.store.remora_emit(&event, correlation) {
            Ok((record, triggers)) => {
                self.out.event(crate::event::Event::Remora {
                    record: record.clone(),
                });
                for t in triggers {
                    wake(self, &t, &record.event, record.event_id.clone());
                }
            }
            Err(e) => self.notify(
                Level::Warn,
                format!("Chimera: cannot log a Remora event: {e}"),
            ),
        }
    }

    /// Everything the agent of node `id` is told about it, from the
    /// topology and the human's current text.
    pub(super) fn node_view(&self, id: &str) -> Option<NodeView> {
        let ix = self.remora_index.read();
        let t = ix.topology();
        let n = t.node(id)?;
        let text = self
            .store
            .stable_entry(&n.file_path)
            .ok()
            .flatten()
            .and_then(|e| self.store.blob(&e.hash).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())?;
        let extensions = crate::remora::extensions::Extensions::load(&self.root);
        let ext = extensions.matching(&n);
        Some(NodeView {
            source: node::node_source(&text, &n).unwrap_or_default(),
            parent: n.parent_id.as_deref().and_then(|p| t.node(p)),
            callers: t.callers(id),
            callees: t.callees(id),
            custom_prompt: ext
                .as_ref()
                .map(|e| e.system_prompt.clone())
                .unwrap_or_default(),
            workspaces: ext
                .as_ref()
                .map(|e| e.workspaces.clone())
                .unwrap_or_default(),
            tools: ext.as_ref().map(|e| e.tools.clone()).unwrap_or_default(),
            insert_after: None,
            node: Some(n),
        })
    }

    /// The node job of `node_id` for an agent, with this runtime as its bus.
    pub(super) fn node_job(
        self: &Arc<Self>,
        node_id: &str,
        correlation: Option<String>,
    ) -> Option<NodeJob> {
        Some(NodeJob {
            view: self.node_view(node_id)?,
            correlation,
            bus: Arc::new(Bus {
                core: Arc::downgrade(self),
            }),
        })
    }
}

/// Gives a stored agent's job its node again (a re-run after feedback, a
/// recovery), when the agent embodies one.
pub(super) fn hydrate(core: &Arc<Core>, mut job: Job) -> Job {
    if let Ok(Some((node_id, correlation))) = core.store.agent_node(&job.id) {
        job.node = core.node_job(&node_id, correlation);
    }
    job
}

/// Logs how a node agent's run ended: its proposal, or its error.
pub(super) fn after_run(core: &Arc<Core>, agent: &str, job: &NodeJob) {
    let Some(node) = &job.view.node else { return };
    let Ok(rec) = core.store.agent(agent) else {
        return;
    };
    let correlation = job.correlation.as_deref();
    match rec.state {
        crate::store::AgentState::Completed
        | crate::store::AgentState::Accepted
        | crate::store::AgentState::Settled => {
            let text = |hash: &Option<String>| {
                hash.as_deref()
                    .and_then(|h| core.store.blob(h).ok())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default()
            };
            let files = core.store.proposal_files(agent).unwrap_or_default();
            if files.is_empty() {
                // It only messaged other nodes: nothing to review (the
                // lifecycle ended it `accepted`), and no rewrite to announce.
                core.emit(
                    Event::AgentComplete {
                        agent_id: node.id.clone(),
                        result: rec.summary.unwrap_or_default(),
                    },
                    correlation,
                );
                return;
            }
            let mut diff = String::new();
            let mut new_source = String::new();
            for f in &files {
                let (old, new) = (text(&f.base_hash), text(&f.new_hash));
                diff.push_str(&crate::diff::unified(&f.path, &old, &new));
                if f.path == node.file_path {
                    new_source = node::node_source(&new, node).unwrap_or_default();
                }
            }
            core.emit(
                Event::RewriteProposal {
                    agent_id: node.id.clone(),
                    proposal_id: agent.to_owned(),
                    old_source: job.view.source.clone(),
                    new_source,
                    diff,
                },
                correlation,
            );
            core.emit(
                Event::AgentComplete {
                    agent_id: node.id.clone(),
                    result: rec.summary.unwrap_or_default(),
                },
                correlation,
            );
        }
        crate::store::AgentState::Failed => core.emit(
            Event::AgentError {
                agent_id: node.id.clone(),
                error: rec.error.unwrap_or_default(),
            },
            correlation,
        ),
        _ => {}
    }
}

/// Logs the human's verdict on a node agent's proposal.
pub(super) fn verdict(core: &Arc<Core>, agent: &str, accepted: bool, feedback: Option<&str>) {
    let Ok(Some((node_id, correlation))) = core.store.agent_node(agent) else {
        return;
    };
    let event = if accepted {
        Event::RewriteApplied {
            agent_id: node_id,
            proposal_id: agent.to_owned(),
        }
    } else {
        Event::RewriteRejected {
            agent_id: node_id,
            proposal_id: agent.to_owned(),
            feedback: feedback.unwrap_or_default().to_owned(),
        }
    };
    core.emit(event, correlation.as_deref());
}

/// Starts the agent of `node_id` on `task` within chain `correlation`.
pub(super) fn spawn_node_agent(
    core: &Arc<Core>,
    node_id: &str,
    task: String,
    correlation: Option<String>,
    trigger_event_id: Option<String>,
) -> Result<String, BusError> {
    let job_node = core
        .node_job(node_id, correlation.clone())
        .ok_or_else(|| BusError::NoNode(node_id.to_owned()))?;
    let id = crate::remora::ids::fresh()[crate::remora::ids::PREFIX.len()..].to_owned();
    core.store
        .set_agent_node(&id, node_id, correlation.as_deref())?;
    listen(core, node_id)?;
    let file = job_node.view.node.as_ref().map(|n| core.abs(&n.file_path));
    let line = job_node.view.node.as_ref().map(|n| n.start_line.max(1));
    core.emit(
        Event::AgentStart {
            agent_id: node_id.to_owned(),
            trigger_event_id,
        },
        correlation.as_deref(),
    );
    spawn_agent(
        core,
        Job {
            id: id.clone(),
            spec: TaskSpec {
                file,
                line,
                ..TaskSpec::new(task)
            },
            node: Some(job_node),
            ..Job::default()
        },
    );
    Ok(id)
}

/// The human asks for a new node from the UI: its ghost goes in the scope
/// at `line` of `file`, and its agent writes it; the result is a normal
/// proposal. Shown as a placeholder until the agent ends.
pub(super) fn ghost(
    core: &Arc<Core>,
    file: &crate::paths::ProjectPath,
    line: usize,
    kind: &str,
    name: &str,
    description: &str,
) {
    let Some((rel, p)) = place_ghost(core, file, line, kind, name) else {
        return;
    };
    let ghost = p.ghost;
    let correlation = core
        .chains
        .lock()
        .map(|mut c| c.start(&ghost.id, now_ms()))
        .ok();
    let id = crate::remora::ids::fresh()[crate::remora::ids::PREFIX.len()..].to_owned();
    if let Err(e) = core
        .store
        .set_agent_node(&id, &ghost.id, correlation.as_deref())
    {
        core.notify(
            Level::Error,
            format!("Chimera: cannot start the agent of {name}: {e}"),
        );
        return;
    }
    let task = match description.trim() {
        "" => format!("Write yourself: the new {kind} `{name}`, doing what your name says."),
        what => format!("Write yourself: the new {kind} `{name}`. {what}"),
    };
    core.emit(
        Event::AgentStart {
            agent_id: ghost.id.clone(),
            trigger_event_id: None,
        },
        correlation.as_deref(),
    );
    show_ghost(
        core,
        &rel,
        &p.after,
        &p.parent,
        &ghost,
        &id,
        format!("{kind} {name}"),
    );
    let view = NodeView {
        parent: Some(p.parent),
        insert_after: p.after,
        node: Some(ghost.clone()),
        ..NodeView::default()
    };
    spawn_agent(
        core,
        Job {
            id,
            spec: TaskSpec {
                file: Some(core.abs(rel.as_str())),
                line: Some(ghost.start_line.max(1)),
                ..TaskSpec::new(task)
            },
            node: Some(NodeJob {
                view,
                correlation,
                bus: Arc::new(Bus {
                    core: Arc::downgrade(core),
                }),
            }),
            ..Job::default()
        },
    );
}

/// Where the ghost `name` goes for a request at `line` of `file`, or
/// `None` with the human told why it cannot go there.
fn place_ghost(
    core: &Core,
    file: &crate::paths::ProjectPath,
    line: usize,
    kind: &str,
    name: &str,
) -> Option<(crate::paths::ProjectPath, crate::remora::ghost::Placement)> {
    let rel = file.clone();
    let placed = {
        let ix = core.remora_index.read();
        crate::remora::ghost::place(ix.topology(), rel.as_str(), line, kind, name)
    };
    match placed {
        Ok(p) => Some((rel, p)),
        Err(e) => {
            core.notify(Level::Error, format!("Chimera: {e}"));
            None
        }
    }
}

/// Shows agent `id`'s `ghost` as a placeholder `label`, in `parent` after
/// `after`, indented as its siblings are.
fn show_ghost(
    core: &Core,
    rel: &crate::paths::ProjectPath,
    after: &Option<Node>,
    parent: &Node,
    ghost: &Node,
    id: &str,
    label: String,
) {
    let indent = match (after, parent.node_type) {
        (_, crate::remora::NodeType::File) => String::new(),
        (Some(a), _) => line_indent(core, rel.as_str(), a.start_line),
        (None, _) => line_indent(core, rel.as_str(), parent.start_line) + "    ",
    };
    core.out.direct(ForEditor::GhostNode {
        agent_id: id.to_owned(),
        path: rel.to_string(),
        line: ghost.start_line,
        label,
        indent,
    });
}

/// The leading whitespace of 1-based `line` of `path` as the store has it.
fn line_indent(core: &Core, path: &str, line: usize) -> String {
    core.store
        .stable_entry(path)
        .ok()
        .flatten()
        .and_then(|e| core.store.blob(&e.hash).ok())
        .and_then(|b| {
            let text = String::from_utf8_lossy(&b).into_owned();
            let l = text.lines().nth(line.saturating_sub(1))?;
            Some(l[..l.len() - l.trim_start().len()].to_owned())
        })
        .unwrap_or_default()
}

/// Subscribes node `node_id` to what wakes it (messages and chats to it).
/// A subscription that fails leaves the node deaf, so the caller is told.
fn listen(core: &Core, node_id: &str) -> Result<(), crate::store::StoreError> {
    for p in Pattern::for_node(node_id) {
        core.store.subscribe(node_id, &p)?;
    }
    Ok(())
}

/// Records one activation of a chain in the store, for inspection.
fn record_activation(core: &Core, correlation: &str, agent: &str, depth: usize) {
    // The cycle and depth checks run on the chains in memory: a record that
    // fails costs the inspection of this one step, nothing else.
    let _ = core.store.chain_record(correlation, agent, depth, now_ms());
}

/// The human chats with node `node_id`: a new activation chain starts there.
pub(super) fn chat(core: &Arc<Core>, node_id: &str, message: String) {
    let correlation = core
        .chains
        .lock()
        .map(|mut c| c.start(node_id, now_ms()))
        .unwrap_or_default();
    record_activation(core, &correlation, node_id, 0);
    if let Err(e) = listen(core, node_id) {
        core.emit(
            Event::AgentError {
                agent_id: node_id.to_owned(),
                error: format!("this chat cannot wake the node (its subscription failed): {e}"),
            },
            Some(&correlation),
        );
    }
    core.emit(
        Event::HumanChat {
            to_agent: node_id.to_owned(),
            message,
        },
        Some(&correlation),
    );
}

/// Wakes the agent of `t.agent_id` for `event` if its chain allows it.
fn wake(core: &Arc<Core>, t: &Trigger, event: &Event, event_id: String) {
    let now = now_ms();
    let task = match event {
        Event::HumanChat { message, .. } => message.clone(),
        Event::AgentMessage {
            from_agent,
            message,
            ..
        } => {
            let from = core
                .remora_index
                .read()
                .topology()
                .node(from_agent)
                .map(|n| format!("{from_agent} ({} {})", n.node_type.as_str(), n.name))
                .unwrap_or_else(|| from_agent.clone());
            format!("Message from {from}: {message}")
        }
        other => format!(
            "Event {}: {}",
            other.event_type(),
            serde_json::to_string(other).unwrap_or_default()
        ),
    };
    // The human's question is answered in the chat, with no agent run.
    if let (Event::HumanChat { message, .. }, Some(c)) = (event, &t.correlation_id) {
        if crate::agent::tools::is_question(message) {
            let (core, to, question, c) =
                (core.clone(), t.agent_id.clone(), message.clone(), c.clone());
            tokio::spawn(async move {
                // A failed answer is in the log already, as `AgentError`.
                let _ = answer(&core, &to, HUMAN, &to, &question, &c).await;
            });
            return;
        }
    }
    // The human's own chat already started the chain at this node.
    let correlation = match (event, &t.correlation_id) {
        (Event::HumanChat { .. }, Some(c)) => Some(c.clone()),
        (_, Some(c)) => {
            let activated = core
                .chains
                .lock()
                .map_err(|e| e.to_string())
                .and_then(|mut ch| ch.activate(c, &t.agent_id, now).map_err(|r| r.to_string()));
            match activated {
                Ok(depth) => {
                    record_activation(core, c, &t.agent_id, depth);
                    Some(c.clone())
                }
                Err(reason) => {
                    core.emit(
                        Event::AgentError {
                            agent_id: t.agent_id.clone(),
                            error: reason,
                        },
                        Some(c),
                    );
                    return;
                }
            }
        }
        (_, None) => {
            let c = core
                .chains
                .lock()
                .map(|mut ch| ch.start(&t.agent_id, now))
                .unwrap_or_default();
            Some(c)
        }
    };
    if let Err(e) = spawn_node_agent(core, &t.agent_id, task, correlation, Some(event_id)) {
        core.notify(
            Level::Warn,
            format!("Chimera: cannot wake {}: {e}", t.agent_id),
        );
    }
}

/// Who asks when the human asks a node in its chat.
const HUMAN: &str = "human";

/// Node `to` answers `question` from `from` (a node, or [`HUMAN`]) in a
/// turn of its own; the exchange is logged as AgentQuestion and
/// AgentAnswer events (AgentError when no answer came). `asker` is the
/// agent whose call it is, for the effect log.
pub(super) async fn answer(
    core: &Arc<Core>,
    asker: &str,
    from: &str,
    to: &str,
    question: &str,
    correlation: &str,
) -> Result<String, BusError> {
    // The human's question is in the log already, as their chat.
    if from != HUMAN {
        core.emit(
            Event::AgentQuestion {
                from_agent: from.to_owned(),
                to_agent: to.to_owned(),
                question: question.to_owned(),
            },
            Some(correlation),
        );
    }
    let result = answer_turn(core, asker, from, to, question).await;
    let event = match &result {
        Ok(answer) => Event::AgentAnswer {
            from_agent: to.to_owned(),
            to_agent: from.to_owned(),
            answer: answer.clone(),
        },
        Err(error) => Event::AgentError {
            agent_id: to.to_owned(),
            error: error.to_string(),
        },
    };
    core.emit(event, Some(correlation));
    result
}

/// One model call as node `to`, within `remora.answer_timeout_ms`.
async fn answer_turn(
    core: &Arc<Core>,
    asker: &str,
    from: &str,
    to: &str,
    question: &str,
) -> Result<String, BusError> {
    let view = core
        .node_view(to)
        .ok_or_else(|| BusError::NoNode(to.to_owned()))?;
    let who = if from == HUMAN {
        "The human".to_owned()
    } else {
        core.remora_index
            .read()
            .topology()
            .node(from)
            .map(|n| format!("The {} `{}` ({from})", n.node_type.as_str(), n.name))
            .unwrap_or_else(|| from.to_owned())
    };
    let messages = node::answer_messages(&view, &who, question);
    let llm = core.llm.as_ref().map_err(|e| BusError::CouldNot {
        to: to.to_owned(),
        why: e.to_string(),
    })?;
    let model = core
        .config
        .llm
        .roles
        .get("node")
        .cloned()
        .or_else(|| core.model.read().ok().and_then(|m| m.clone()))
        .unwrap_or_else(|| core.config.llm.model.clone());
    let llm = llm.with_model(&model);
    let limit = std::time::Duration::from_millis(core.config.remora.answer_timeout_ms);
    let cancel = core.shutdown.child_token();
    let label = format!("{to} answers {from}: {question}");
    let opts = crate::llm::ChatOptions::default();
    let asked =
        crate::agent::logged_chat(&core.store, asker, &label, &llm, &messages, &opts, &cancel);
    match tokio::time::timeout(limit, asked).await {
        Err(_) => {
            cancel.cancel();
            Err(BusError::NoAnswer {
                to: to.to_owned(),
                secs: limit.as_millis() as f64 / 1000.0,
            })
        }
        Ok(Err(e)) => Err(BusError::CouldNot {
            to: to.to_owned(),
            why: e.to_string(),
        }),
        Ok(Ok(text)) if text.trim().is_empty() => Err(BusError::Empty(to.to_owned())),
        Ok(Ok(text)) => Ok(text.trim().to_owned()),
    }
}

/// The runtime as seen from a node agent's tools.
struct Bus {
    core: Weak<Core>,
}

impl Bus {
    /// The core, and the chain in which `from` reaches node `to` (a new
    /// one when `from` is in none), once `to` is known to exist.
    fn reach(
        &self,
        from: &str,
        to: &str,
        correlation: Option<&str>,
    ) -> Result<(Arc<Core>, String), BusError> {
        let core = self.core.upgrade().ok_or(BusError::Stopping)?;
        if self.node(to).is_none() {
            return Err(BusError::NoNode(to.to_owned()));
        }
        let correlation = match correlation {
            Some(c) => c.to_owned(),
            None => core
                .chains
                .lock()
                .map(|mut ch| ch.start(from, now_ms()))
                .map_err(|_| BusError::Chains)?,
        };
        Ok((core, correlation))
    }
}

impl NodeBus for Bus {
    fn node(&self, id: &str) -> Option<Node> {
        let core = self.core.upgrade()?;
        let ix = core.remora_index.read();
        ix.topology().node(id)
    }

    fn message(
        &self,
        from: &str,
        to: &str,
        request: &str,
        correlation: Option<&str>,
    ) -> Result<String, BusError> {
        let (core, correlation) = self.reach(from, to, correlation)?;
        core.chains
            .lock()
            .map_err(|_| BusError::Chains)?
            .check(&correlation, to, now_ms())?;
        listen(&core, to)?;
        core.emit(
            Event::AgentMessage {
                from_agent: from.to_owned(),
                to_agent: to.to_owned(),
                message: request.to_owned(),
            },
            Some(&correlation),
        );
        Ok(format!(
            "{}{to}; it will act on it and its changes come to the human as proposals (chain {correlation})",
            node::SENT
        ))
    }

    fn ask(
        &self,
        asker: &str,
        from: &str,
        to: &str,
        question: &str,
        correlation: Option<&str>,
    ) -> Result<String, BusError> {
        let (core, correlation) = self.reach(from, to, correlation)?;
        // Answering is a turn of `to`: it joins the chain as a woken node
        // does, so a question back to a node in the chain is a cycle.
        let depth = core.chains.lock().map_err(|_| BusError::Chains)?.activate(
            &correlation,
            to,
            now_ms(),
        )?;
        record_activation(&core, &correlation, to, depth);
        tokio::runtime::Handle::current().block_on(answer(
            &core,
            asker,
            from,
            to,
            question,
            &correlation,
        ))
    }
}
