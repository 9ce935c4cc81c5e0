//! Where each message of the editor goes: transitions to the lifecycle
//! thread (answered with the lifecycle's typed [`lifecycle::Told`] when a
//! front end asks), the rest to the module that owns it.

use super::*;
/// `:Chimera branch [name] [snapshot]`: sets a branch, or lists them.
pub(super) fn branch(core: &Core, name: Option<String>, snapshot: Option<String>) {
    let Some(name) = name else {
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
        return;
    };
    match core.store.branch_set(&name, snapshot.as_deref()) {
        Ok(b) => {
            core.notify(
                Level::Info,
                format!(
                    "Chimera: branch {} -> snapshot {} (fork and rollback take its name)",
                    b.name, b.snapshot_id
                ),
            );
            send_snapshots(core);
        }
        Err(e) => core.notify(Level::Error, format!("Chimera: {e}")),
    }
}

/// The editor's buffers as project paths and texts (links left out).
pub(super) fn buffer_map(core: &Core, buffers: Vec<BufferText>) -> HashMap<String, String> {
    buffers
        .into_iter()
        .filter_map(|b| core.rel(&b.path).map(|p| (p.to_string(), b.text)))
        .collect()
}

/// Stops agent `id`'s task at once, if it has one (the record follows on
/// the lifecycle thread).
pub(super) fn stop_task(core: &Core, id: &str) {
    core.slots.stop(id);
}

/// Sends one message of the editor where it is handled: transitions to
/// the lifecycle thread, the rest to their module.
pub(super) fn route(core: &Arc<Core>, msg: ToCore) {
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
pub(super) fn transition(core: &Arc<Core>, msg: ToCore) -> Result<Transition, Box<ToCore>> {
    Ok(match msg {
        ToCore::Accept {
            id,
            buffers,
            hunk,
            write,
        } => {
            let buffers = buffer_map(core, buffers);
            Box::new(move |c| {
                let mut out = c.lifecycle.accept(&id, buffers, hunk);
                for edit in &mut out.buffer_edits {
                    edit.write = write;
                }
                out
            })
        }
        ToCore::RejectHunk { id, hunk } => Box::new(move |c| c.lifecycle.reject_hunk(&id, hunk)),
        ToCore::AcceptUndone { id, undone } => {
            Box::new(move |c| c.lifecycle.accept_undone(&id, undone))
        }
        ToCore::Reject { id, feedback } => {
            let working = core.store.agent(&id).is_ok_and(|r| r.state.is_active());
            if working {
                stop_task(core, &id);
            }
            Box::new(move |c| c.lifecycle.reject(&id, feedback.as_deref()))
        }
        ToCore::Cancel { id } => {
            stop_task(core, &id);
            Box::new(move |c| c.lifecycle.cancel(&id))
        }
        ToCore::SessionStart {
            id,
            task,
            client,
            capabilities,
        } => {
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
        ToCore::SessionPropose { id, summary } => {
            Box::new(move |c| c.lifecycle.complete(&id, &summary, 1))
        }
        ToCore::SessionEnd { id, reason } => Box::new(move |c| c.lifecycle.fail(&id, &reason)),
        ToCore::Snapshot { id, message } => {
            Box::new(move |c| c.lifecycle.snapshot(Some(&id), &message))
        }
        ToCore::Spawn { id, spec } => agents::spawning(core, Job::new(id, spec)),
        ToCore::Fork { id, snapshot, task } => {
            Box::new(move |c| history::fork(c, id, &snapshot, task))
        }
        ToCore::Rollback {
            id,
            dry_run,
            buffers,
        } => {
            let buffers = buffer_map(core, buffers);
            Box::new(move |c| c.lifecycle.rollback(&id, dry_run, &buffers))
        }
        other => return Err(Box::new(other)),
    })
}

/// Runs `msg` for a client other than the editor (the editor hears of it
/// all the same) and returns what the editor was told: a transition's
/// announcement, once it ran; nothing for other messages, once the
/// lifecycle steps they queued ran.
pub(super) async fn answer(core: &Arc<Core>, msg: ToCore) -> lifecycle::Told {
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
            let indexes = matches!(*msg, ToCore::RemoraEnable { .. });
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

/// The messages that are not transitions.
pub(super) fn route_rest(core: &Arc<Core>, msg: ToCore) {
    match msg {
        ToCore::Shutdown => {}
        msg
        @ (ToCore::BufferText(_) | ToCore::BufferClosed { .. } | ToCore::BufferMoved { .. }) => {
            route_buffer(core, msg)
        }
        other => route_other(core, other),
    }
}

/// What the human did to a buffer: typed (or loaded, or wrote), closed it,
/// or typed under an accept being applied.
pub(super) fn route_buffer(core: &Arc<Core>, msg: ToCore) {
    match msg {
        ToCore::BufferText(BufferText { path, text }) => {
            if let Some(p) = core.rel(&path) {
                core.on_lifecycle(move |c| c.publish(c.lifecycle.buffer_text(&p, &text)));
            }
        }
        ToCore::BufferClosed { path } => {
            if let Some(p) = core.rel(&path) {
                core.on_lifecycle(move |c| c.publish(c.lifecycle.buffer_closed(&p)));
            }
        }
        ToCore::BufferMoved {
            id,
            path,
            base,
            wanted,
            now,
        } => {
            if let Some(p) = core.rel(&path) {
                core.on_lifecycle(move |c| {
                    c.publish(c.lifecycle.buffer_moved(&id, &p, &base, &wanted, &now))
                });
            }
        }
        _ => {}
    }
}

/// Messages that are not transitions: history, effects, chats, Remora, the LLM check.
pub(super) fn route_other(core: &Arc<Core>, msg: ToCore) {
    match msg {
        ToCore::History => send_snapshots(core),
        // Behind the snapshots already asked for: `:Chimera snapshot` then
        // `:Chimera branch` typed at once names the new one.
        ToCore::Branch { name, snapshot } => core.on_lifecycle(move |c| branch(c, name, snapshot)),
        ToCore::RemoraEnable { confirmed } => match &core.remora {
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
        ToCore::Effects { since, kind } => send_effects(core, since, kind),
        ToCore::NodeChat { node_id, message } => nodes::chat(core, &node_id, message),
        ToCore::NodeNew {
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
        ToCore::Chat {
            id,
            message,
            file,
            cursor_line,
            context,
        } => chat::send(core, id, message, file, cursor_line, context),
        ToCore::ChatHistory => chat::history(core),
        ToCore::ChatClear => chat::clear(core),
        ToCore::Calls { agent_id } => send_calls(core, agent_id),
        ToCore::ConflictMarkers { id, path, text } => send_conflict_markers(core, id, path, text),
        ToCore::NodeHistory { node_id } => send_node_history(core, node_id),
        ToCore::PermissionAnswer { id, allow } => answer_permission(core, id, allow),
        ToCore::CheckLlm => {
            let c = core.clone();
            tokio::spawn(async move { check_llm(&c).await });
        }
        ToCore::SetModel { model } => set_model(core, model),
        _ => {}
    }
}

/// The effect log since a sequence or a snapshot, to the editor.
pub(super) fn send_effects(core: &Arc<Core>, since: EffectsSince, kind: Option<String>) {
    let effects = match since {
        EffectsSince::Seq(seq) => core.store.effects(seq, kind.as_deref()),
        EffectsSince::Snapshot(id) => core
            .store
            .snapshot_effect_seq(&id)
            .and_then(|seq| core.store.effects(seq, kind.as_deref())),
    };
    match effects {
        Ok(effects) => core.out.tell(ToEditor::Effects { effects }),
        Err(e) => core.notify(
            Level::Warn,
            format!("Chimera: cannot read the effect log: {e}"),
        ),
    }
}

/// An agent's audit log, read off the message loop, to the editor.
pub(super) fn send_calls(core: &Arc<Core>, agent_id: String) {
    let c = core.clone();
    tokio::task::spawn_blocking(move || match c.store.tool_calls(&agent_id, 0) {
        Ok(calls) => c.out.tell(ToEditor::Calls { agent_id, calls }),
        Err(e) => c.notify(
            Level::Warn,
            format!("Chimera: cannot read the tool calls of {agent_id}: {e}"),
        ),
    });
}

/// Proposal `id` merged into the buffer's `text` with its clashes marked,
/// worked out off the message loop (and off the editor's main thread).
pub(super) fn send_conflict_markers(core: &Arc<Core>, id: String, path: String, text: String) {
    let c = core.clone();
    tokio::task::spawn_blocking(move || {
        let merged = match c.rel(&path) {
            None => Err(format!("{path} is not a file of the project")),
            Some(rel) => crate::accept::with_conflict_markers(&c.store, &id, rel.as_str(), &text)
                .map_err(|e| e.to_string()),
        };
        let (marked, error) = match merged {
            Ok(marked) => (marked, None),
            Err(e) => (None, Some(format!("Chimera: {e}"))),
        };
        c.out.tell(ToEditor::ConflictMarkers {
            id,
            path,
            marked,
            error,
        });
    });
}

/// A node's events, read off the message loop, to the editor.
pub(super) fn send_node_history(core: &Arc<Core>, node_id: String) {
    let c = core.clone();
    tokio::task::spawn_blocking(move || {
        match c.store.remora_events_since(0, Some(&node_id), 10_000) {
            Ok(events) => c.out.tell(ToEditor::NodeHistory { node_id, events }),
            Err(e) => c.notify(
                Level::Warn,
                format!("Chimera: cannot read the history of {node_id}: {e}"),
            ),
        }
    });
}

/// The human's answer to an agent waiting for permission.
pub(super) fn answer_permission(core: &Arc<Core>, id: u64, allow: bool) {
    core.questions.answer(id, allow);
}

/// `:Chimera model`: the model new agents ask; said with what the working ones keep.
pub(super) fn set_model(core: &Arc<Core>, model: String) {
    let model = model.trim().to_owned();
    if let Ok(mut m) = core.model.write() {
        *m = (!model.is_empty()).then(|| model.clone());
    }
    let running = core.slots.count();
    core.out.tell(ToEditor::Notify {
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
