//! Where each command of a client goes, in the port's words: transitions
//! to the lifecycle thread (answered with the lifecycle's typed
//! [`lifecycle::Told`] when a client waits), the rest to the module that
//! owns it; and the editor's queries, answered from the store.

use super::*;
use crate::port::{Buffer, BufferChange, Command, ForEditor, Query, RefusalKind};
/// `:Chimera branch`: says which branches there are.
pub(super) fn list_branches(core: &Core) {
    let said = match core.store.branches() {
        Ok(b) if b.is_empty() => {
            "Chimera: no branches; :Chimera branch {name} [snapshot] names one".to_owned()
        }
        Ok(b) => b
            .iter()
            .map(|b| format!("{} -> {}", b.name, b.snapshot_id))
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("Chimera: cannot list the branches: {e}"),
    };
    core.notify(Level::Info, said);
}

/// A client's buffers, by project path.
pub(super) fn buffer_map(buffers: Vec<Buffer>) -> HashMap<String, String> {
    buffers
        .into_iter()
        .map(|b| (b.path.to_string(), b.text))
        .collect()
}

/// Stops agent `id`'s task at once, if it has one (the record follows on
/// the lifecycle thread).
pub(super) fn stop_task(core: &Core, id: &str) {
    core.slots.stop(id);
}

/// Sends one command where it is handled: transitions to the lifecycle
/// thread, the rest to their module.
pub(super) fn route(core: &Arc<Core>, msg: Command) {
    match transition(core, msg) {
        Ok(step) => core.on_lifecycle(move |c| c.publish(step(c))),
        Err(msg) => route_rest(core, *msg),
    }
}

/// A lifecycle transition, run on the lifecycle thread: every step of an
/// agent's life a client asks for (spawn and fork included), so that each
/// can be refused to that client with the reason.
pub(super) type Transition = Box<dyn FnOnce(&Arc<Core>) -> Outcome + Send>;

/// The transition `msg` asks for, or `msg` back when it is not one.
pub(super) fn transition(core: &Arc<Core>, msg: Command) -> Result<Transition, Box<Command>> {
    Ok(match msg {
        Command::Accept {
            id,
            buffers,
            hunk,
            write,
        } => {
            let buffers = buffer_map(buffers);
            Box::new(move |c| {
                let mut out = c.lifecycle.accept(&id, buffers, hunk);
                for edit in &mut out.buffer_edits {
                    edit.write = write;
                }
                out
            })
        }
        Command::RejectHunk { id, hunk } => Box::new(move |c| c.lifecycle.reject_hunk(&id, hunk)),
        Command::AcceptUndone { id, undone } => {
            Box::new(move |c| c.lifecycle.accept_undone(&id, undone))
        }
        Command::Reject { id, feedback } => {
            let working = core.store.agent(&id).is_ok_and(|r| r.state.is_active());
            if working {
                stop_task(core, &id);
            }
            Box::new(move |c| c.lifecycle.reject(&id, feedback.as_deref()))
        }
        Command::Cancel { id } => {
            stop_task(core, &id);
            Box::new(move |c| c.lifecycle.cancel(&id))
        }
        Command::SessionStart {
            id,
            task,
            client,
            capabilities,
        } => session_start(core, id, task, &client, capabilities),
        // An MCP host's work is held to what any agent's proposal is:
        // it parses, it imports what exists; checked on the step, so
        // nothing changes between the check and the proposal.
        Command::SessionPropose { id, summary } => Box::new(
            move |c| match crate::agent::gate::check(&c.store, &id, None) {
                Ok(()) => c.lifecycle.complete(&id, &summary, 1),
                Err(problem) => {
                    Outcome::refused_to_client(RefusalKind::Conflict, problem.to_string())
                }
            },
        ),
        Command::SessionEnd { id, reason } => Box::new(move |c| c.lifecycle.fail(&id, &reason)),
        // Behind the snapshots already asked for: `:Chimera snapshot` then
        // `:Chimera branch` typed at once names the new one.
        Command::Branch {
            name: Some(name),
            snapshot,
        } => Box::new(move |c| c.lifecycle.branch(&name, snapshot.as_deref())),
        Command::Snapshot { id, message } => {
            Box::new(move |c| c.lifecycle.snapshot(Some(&id), &message))
        }
        Command::Spawn { id, spec } => agents::spawning(core, Job::new(id, spec)),
        Command::Fork { id, snapshot, task } => {
            Box::new(move |c| history::fork(c, id, &snapshot, task))
        }
        Command::Rollback {
            id,
            dry_run,
            buffers,
        } => {
            let buffers = buffer_map(buffers);
            Box::new(move |c| c.lifecycle.rollback(&id, dry_run, &buffers))
        }
        other => return Err(Box::new(other)),
    })
}

/// The transition that records an MCP host's session as agent `id`,
/// `running` at once.
fn session_start(
    core: &Arc<Core>,
    id: String,
    task: String,
    client: &str,
    capabilities: String,
) -> Transition {
    let rec = AgentRecord {
        owner: core.owner.clone(),
        ..AgentRecord::new(
            id.clone(),
            crate::task::TaskSpec {
                capabilities: Some(capabilities),
                external: Some(format!("{}{client}", crate::task::MCP_SESSION_PREFIX)),
                ..crate::task::TaskSpec::new(task)
            },
        )
    };
    Box::new(move |c| match c.lifecycle.spawn(rec) {
        (out, true) => out.then(c.lifecycle.start(&id)),
        (out, false) => out,
    })
}

/// Runs `msg` for a client other than the editor (the editor hears of it
/// all the same) and returns what the editor was told: a transition's
/// announcement, once it ran; nothing for other messages, once the
/// lifecycle steps they queued ran.
pub(super) async fn answer(core: &Arc<Core>, msg: Command) -> lifecycle::Told {
    match transition(core, msg) {
        Ok(step) => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            core.on_lifecycle(move |c| {
                let out = step(c);
                let refused = out.refused.clone();
                let events = c.publish_told(out);
                // The caller gave up waiting (cancelled): the step is done anyway.
                let _ = tx.send(lifecycle::Told { events, refused });
            });
            rx.await.unwrap_or_default()
        }
        Err(msg) => {
            // A client enabling Remora (the `chimera` command, which may be
            // the core itself and end right after) is answered once the
            // project is indexed, not while the index is being built.
            let indexes = matches!(*msg, Command::RemoraEnable { .. });
            route_rest(core, *msg);
            // Steps run in order: once this one has, so has what `msg`
            // queued (a spawn's record is in the store).
            core.on_lifecycle_done(|_| {}).await;
            if indexes {
                core.index_done().await;
            }
            lifecycle::Told::default()
        }
    }
}

/// The commands that are not transitions.
pub(super) fn route_rest(core: &Arc<Core>, msg: Command) {
    match msg {
        Command::Buffer(change) => route_buffer(core, change),
        other => route_other(core, other),
    }
}

/// What the human did to a buffer: typed (or loaded, or wrote), closed it,
/// or typed under an accept being applied.
pub(super) fn route_buffer(core: &Arc<Core>, change: BufferChange) {
    match change {
        BufferChange::Text(Buffer { path, text }) => {
            core.on_lifecycle(move |c| c.publish(c.lifecycle.buffer_text(&path, &text)));
        }
        BufferChange::Closed(path) => {
            core.on_lifecycle(move |c| c.publish(c.lifecycle.buffer_closed(&path)));
        }
        BufferChange::Moved {
            id,
            path,
            base,
            wanted,
            now,
        } => core.on_lifecycle(move |c| {
            c.publish(c.lifecycle.buffer_moved(&id, &path, &base, &wanted, &now))
        }),
    }
}

/// Commands that are not transitions: branches, chats, Remora, the model, the LLM check.
pub(super) fn route_other(core: &Arc<Core>, msg: Command) {
    match msg {
        Command::Branch { name: None, .. } => core.on_lifecycle(|c| list_branches(c)),
        Command::RemoraEnable { confirmed } => match &core.remora {
            // Through the lifecycle thread: behind the initial import, so
            // an enable typed right after start sees the whole project.
            Some(_) => core.on_lifecycle(move |c| {
                if let Some(w) = &c.remora {
                    w.send(remora::Job::Enable { confirmed })
                }
            }),
            None => core.notify(
                Level::Warn,
                "Chimera: Remora needs `remora.index = true` in setup{}",
            ),
        },
        Command::NodeChat { node, message } => nodes::chat(core, &node, message),
        Command::NodeNew {
            file,
            line,
            kind,
            name,
            description,
        } => {
            // A new node asked for as soon as a file is open finds its scope.
            let asked =
                core.after_index(move |c| nodes::ghost(c, &file, line, &kind, &name, &description));
            if !asked {
                core.notify(
                    Level::Warn,
                    "Chimera: new nodes need Remora: `remora.index = true` in setup{}",
                );
            }
        }
        Command::Chat {
            id,
            message,
            file,
            cursor_line,
            context,
        } => chat::send(core, id, message, file, cursor_line, context),
        Command::ChatClear => chat::clear(core),
        Command::Answer { question, allow } => core.questions.answer(question, allow),
        Command::CheckLlm => {
            let c = core.clone();
            tokio::spawn(async move { check_llm(&c).await });
        }
        Command::SetModel { model } => set_model(core, model),
        _ => {}
    }
}

/// Answers the editor's `query` from the store, off the message loop and
/// after the steps asked before it ran (`:Chimera snapshot` then
/// `:Chimera history` typed at once lists the new snapshot).
pub(super) fn answer_editor(core: &Arc<Core>, query: Query) {
    let c = core.clone();
    tokio::spawn(async move {
        c.on_lifecycle_done(|_| {}).await;
        let store = c.store.clone();
        let asked = query.clone();
        let answer = tokio::task::spawn_blocking(move || crate::port::ask(&store, asked)).await;
        let answer = answer.unwrap_or_else(|e| {
            Err(crate::port::Refusal::new(
                crate::port::RefusalKind::Failed,
                format!("the store read stopped: {e}"),
            ))
        });
        c.out.direct(ForEditor::Answer { query, answer });
    });
}

/// `:Chimera model`: the model new agents ask; said with what the working ones keep.
pub(super) fn set_model(core: &Arc<Core>, model: String) {
    let model = model.trim().to_owned();
    if let Ok(mut m) = core.model.write() {
        *m = (!model.is_empty()).then(|| model.clone());
    }
    let running = core.slots.count();
    core.out.direct(ForEditor::Notice {
        level: Level::Info,
        message: format!(
            "new agents ask model `{}`{}",
            if model.is_empty() {
                &core.config.llm.model
            } else {
                &model
            },
            if running > 0 {
                format!("; the {running} working keep theirs")
            } else {
                String::new()
            }
        ),
    });
}
