//! One reply turned into a change in the agent's overlay, or into the
//! [`Problem`] the model is told: a program run in the sandbox, definitions
//! spliced by name, a whole file, several files, a node's own source or
//! tool call.

use std::time::Duration;

use super::brain::Run;
use super::scene::Scene;
use super::{locate, node, prompt, refactor, scope, AgentError, AgentHost, Done, Problem};
use crate::lang;
use crate::lang::splice::{self, ReplyForm};
use crate::paths::ProjectPath;
use crate::sandbox::{self, Limits, SandboxError};
use crate::workspace::Change;

/// One reply turned into a change in the overlay: a node agent's (its own
/// source, a tool call, a message to a neighbour) or a code-mode agent's
/// (a program, definitions, a whole file).
pub(super) struct Turn<'a> {
    pub run: &'a Run<'a>,
    pub scene: &'a Scene,
}

impl Turn<'_> {
    fn target_text(&self) -> Option<&str> {
        self.scene.target.as_ref().map(|(_, t)| t.as_str())
    }

    /// Writes `new`, the model's text of `path` that was `old` (the gate
    /// corrects it with every other brain's, [`super::corrections`]).
    fn write(&self, path: &ProjectPath, old: &str, new: &str, form: &'static str) -> Attempt {
        write_checked(self.run, path, old, new, form)
    }

    pub async fn code_attempt(&self, code: String) -> Result<Attempt, AgentError> {
        let form = splice::classify(self.scene.language(), &code, self.target_text());
        self.attempt_form(form).await
    }

    /// What a reply without usable code is told.
    fn no_code(&self) -> Problem {
        Problem::Other(format!(
            "Your reply has no {} code block with the change.",
            self.scene.language().name
        ))
    }

    async fn attempt_form(&self, form: ReplyForm) -> Result<Attempt, AgentError> {
        let job = self.run.job;
        let target = &self.scene.target;
        Ok(match form {
            ReplyForm::Program(code) => {
                self.run.say("running the program");
                run_program(self.run, code).await?
            }
            ReplyForm::Definitions(code) => match target {
                Some((path, text)) => {
                    let language = lang::of_file(path.as_str());
                    match splice::splice_definitions(language, text, &code, job.cursor_in(path.as_str())) {
                        Ok(new) => self.write(path, text, &new, "definitions"),
                        Err(e) => Err(e.to_string().into()),
                    }
                }
                None => Err("It is not clear which file to change: name the file and write a program that calls write_file(path, content).".into()),
            },
            ReplyForm::WholeFile(code) => match target {
                Some((path, text)) => {
                    let code = splice::keep_imports(lang::of_file(path.as_str()), text, &code);
                    self.write(path, text, &code, "whole file")
                }
                None => Err("It is not clear which file this is: write a program that calls write_file(path, content).".into()),
            },
            ReplyForm::Nothing => Err(self.no_code()),
        })
    }

    /// The proposal of `made`, which passed the gate as `change`: its
    /// summary (what the model said, else what the diff does) with its
    /// notes and the gate's `checked`.
    pub fn done(&self, made: Made, change: &Change, checked: Vec<String>, rounds: u32) -> Done {
        let (job, scene) = (self.run.job, self.scene);
        let summary = scope::summary(change, made.summary, &job.spec.task);
        let mut notes = made.notes;
        notes.extend(checked);
        // Where the task could have meant another file too, say which was chosen.
        let editable: Vec<&str> = scene.editable.iter().map(|(p, _)| p.as_str()).collect();
        let also: Vec<&str> = scene
            .place
            .iter()
            .flat_map(|p| &p.also)
            .map(String::as_str)
            .filter(|f| !editable.contains(f))
            .collect();
        // (A file being created is written from the files named beside it.)
        if let (Some(p), false) = (scene.place.as_ref().filter(|p| !p.new), also.is_empty()) {
            notes.push(format!(
                "in {}; {} fit the task too",
                p.file,
                also.join(", ")
            ));
        }
        // New code that only the buffer pointed to: say where it went.
        if let Some(p) = scene
            .place
            .as_ref()
            .filter(|p| p.only_the_buffer && !locate::mentions(&job.spec.task).code.is_empty())
        {
            notes.push(format!(
                "put in {}, the file it was asked in: nothing in the task names a place",
                p.file
            ));
        }
        Done {
            summary: notes.iter().fold(summary, |s, n| format!("{s} [{n}]")),
            changed_files: change.paths(),
            rounds,
            form: made.form,
        }
    }

    /// A reply that may change several files: each block goes to the file
    /// it names (the target when it names none), as definitions or the
    /// whole file; then the rename or move the task asks for is finished.
    pub async fn files_attempt(&self, reply: &str, code: String) -> Result<Attempt, AgentError> {
        let Some((target_path, target_text)) = &self.scene.target else {
            return self.code_attempt(code).await;
        };
        let mut edits = self.edits();
        let paths: Vec<String> = edits.iter().map(|e| e.path.clone()).collect();
        let mut blocks = prompt::file_blocks(reply, &paths);
        if blocks.is_empty() && !code.trim().is_empty() {
            // A JSON answer: its code is one block.
            blocks.push((None, code));
        }
        // One block for the target may be a program, as in a one-file task.
        if let [(None, only)] = blocks.as_slice() {
            if let form @ (ReplyForm::Program(_) | ReplyForm::Nothing) =
                splice::classify(self.scene.language(), only, Some(target_text))
            {
                return self.attempt_form(form).await;
            }
        }
        if blocks.is_empty() {
            return Ok(Err(self.no_code()));
        }
        for (file, code) in blocks {
            let path = file.unwrap_or_else(|| target_path.as_str().to_owned());
            let Some(e) = edits.iter_mut().find(|e| e.path == path) else {
                return Ok(Err(format!(
                    "`{path}` is not one of the files this task changes ({}). Give each block the `# file:` line of one of them.",
                    paths.join(", ")
                ).into()));
            };
            let focus_line = self.run.job.cursor_in(&path);
            let language = lang::of_file(&path);
            e.new = match splice::classify(language, &code, Some(&e.new)) {
                ReplyForm::WholeFile(whole) => splice::keep_imports(language, &e.new, &whole),
                ReplyForm::Definitions(defs) => {
                    match splice::splice_definitions(language, &e.new, &defs, focus_line) {
                        Ok(new) => new,
                        Err(err) => return Ok(Err(format!("`{path}`: {err}").into())),
                    }
                }
                ReplyForm::Program(_) | ReplyForm::Nothing => {
                    return Ok(Err(format!(
                        "The block for `{path}` holds no definitions. Give each file's changed functions and classes in full."
                    ).into()))
                }
            };
        }
        let mut notes = match &self.scene.intent {
            Some(intent) => refactor::finish(intent, &mut edits),
            None => vec![],
        };
        let moved = match self.scene.intent.as_ref().map(|i| &i.change) {
            Some(refactor::Change::Move { name, .. }) => Some(name.as_str()),
            _ => None,
        };
        notes.extend(refactor::tidy(&mut edits, moved));
        self.write_edits(&edits, notes, "definitions")
    }

    /// The files this task may change, each as it is now.
    fn edits(&self) -> Vec<refactor::FileEdit> {
        self.scene
            .target
            .iter()
            .chain(&self.scene.editable)
            .map(|(p, t)| refactor::FileEdit {
                path: p.as_str().to_owned(),
                old: t.clone(),
                new: t.clone(),
            })
            .collect()
    }

    /// Writes the changed `edits` into the overlay; `notes` say what was
    /// done beyond the model's edit.
    fn write_edits(
        &self,
        edits: &[refactor::FileEdit],
        notes: Vec<String>,
        form: &'static str,
    ) -> Result<Attempt, AgentError> {
        if edits.iter().all(|e| e.new == e.old) {
            return Ok(Err(Problem::Unchanged));
        }
        for e in edits.iter().filter(|e| e.new != e.old) {
            let path =
                ProjectPath::parse(&e.path).map_err(|err| AgentError::Internal(err.to_string()))?;
            if let Err(problem) = self.write(&path, &e.old, &e.new, form) {
                return Ok(Err(problem));
            }
        }
        Ok(Ok(Made {
            summary: None,
            form,
            notes,
        }))
    }

    /// A task that only renames or moves is done on the syntax tree,
    /// without the model: exact, and in a blink.
    pub fn refactor_alone(&self, intent: &refactor::Intent) -> Result<Attempt, AgentError> {
        let mut edits = self.edits();
        let notes = refactor::finish(intent, &mut edits);
        self.write_edits(&edits, notes, intent.verb())
    }

    pub async fn node_attempt(&self, reply: &str, code: String) -> Result<Attempt, AgentError> {
        let job = self.run.job;
        let Some(j) = job.node.as_ref() else {
            return self.code_attempt(code).await;
        };
        let node = j.view.node.as_ref();
        // Small models wrap their new source in a rewrite_self call, often
        // with triple quotes inside it: take the source out of the call.
        let code = match node {
            Some(n) => {
                let code = node::unwrap_rewrite_call(&code).unwrap_or(code);
                node::own_definition(&code, n).unwrap_or(code)
            }
            None => code,
        };
        // A tool call as JSON (`{"tool": …, "args": {…}}`) runs that tool.
        // It goes through the agent's host, as a program's calls do: its
        // capabilities, its audit log.
        if let Some((tool, args)) = node::parse_tool_call(reply) {
            if !j.has_tool(&tool) {
                return Ok(Err(format!(
                    "There is no tool `{tool}`; the tools are: {}.",
                    node::tool_names().collect::<Vec<_>>().join(", ")
                )
                .into()));
            }
            let host = AgentHost::new(self.run);
            let (called, _) = host
                .off_runtime(move |h| {
                    sandbox::Host::call(h, &tool, vec![], args).map(|v| (tool, v))
                })
                .await?;
            return Ok(match called {
                Ok((_, sandbox::Value::String(s))) if s.starts_with(node::SENT) => Ok(Made::new(Some(s), "message")),
                Ok(_) if !self.run.workspace().untouched()? => Ok(Made::new(None, "tool call")),
                Ok((tool, v)) => Err(format!("{tool} returned {v}; now change yourself (rewrite_self) or ask another node (message_node).").into()),
                Err(e) => Err(e.to_string().into()),
            });
        }
        let form = splice::classify(self.scene.language(), &code, self.target_text());
        let code = match (form, node) {
            (ReplyForm::Definitions(code) | ReplyForm::WholeFile(code), Some(_)) => code,
            (form, _) => return self.attempt_form(form).await,
        };
        Ok(match &self.scene.target {
            Some((path, text)) => match node::apply_reply(text, j, &code) {
                Ok(new) => self.write(path, text, &new, "rewrite_self"),
                // A node may not edit another: what it wrote for a
                // neighbour goes to that neighbour as a request.
                Err(e) => match j.redirect(&job.spec.task, &code).or_else(|| {
                    (e == node::EditError::Unchanged)
                        .then(|| j.forward(&job.spec.task))
                        .flatten()
                }) {
                    Some(Ok(sent)) => Ok(Made::new(Some(sent), "message")),
                    Some(Err(refused)) => Err(refused.to_string().into()),
                    None => Err(e.to_string().into()),
                },
            },
            _ => Err("Your node's file is gone.".into()),
        })
    }
}

/// A change an attempt left in the overlay, before the gate.
pub(super) struct Made {
    /// What the model said it did, if it did.
    pub summary: Option<String>,
    /// The reply form that produced it.
    pub form: &'static str,
    /// What was done beyond the model's edit (a rename finished), for the
    /// summary.
    pub notes: Vec<String>,
}

impl Made {
    fn new(summary: Option<String>, form: &'static str) -> Self {
        Made {
            summary,
            form,
            notes: vec![],
        }
    }
}

/// A change made, or what to tell the model about why none was.
pub(super) type Attempt = Result<Made, Problem>;

/// Writes `new` for `path` into the overlay if it may and changes something
/// (the gate checks the rest).
pub(super) fn write_checked(
    run: &Run,
    path: &ProjectPath,
    old: &str,
    new: &str,
    form: &'static str,
) -> Attempt {
    run.caps
        .check_write(path.as_str())
        .map_err(|d| Problem::Refused(d.to_string()))?;
    if new == old {
        return Err(Problem::Unchanged);
    }
    match run.workspace().write_merged(path, old, new) {
        Ok(true) => {}
        Ok(false) => {
            return Err(Problem::Moved {
                path: path.to_string(),
            })
        }
        Err(e) => return Err(Problem::Other(e.to_string())),
    }
    Ok(Made::new(None, form))
}

/// Runs a program reply in the sandbox; checks what it wrote.
async fn run_program(run: &Run<'_>, code: String) -> Result<Attempt, AgentError> {
    let (config, store, job) = (run.config, &run.store, run.job);
    let limits = Limits {
        cpu_time: Duration::from_millis(config.agents.sandbox_timeout_ms),
        max_recursion: config.agents.max_recursion,
        max_memory: usize::try_from(config.agents.sandbox_memory_mb.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        ..Limits::default()
    };
    let host = AgentHost::new(run);
    let (result, host) = host
        .off_runtime(move |h| sandbox::run(&code, h, limits))
        .await?;
    // What the program said stays with the agent, whatever became of it,
    // and so does which file a path it gave was taken for: code mode has
    // no next call to tell it with.
    let notes = host.path_notes.iter().map(|n| n.for_log());
    let kept: Vec<String> = host.logs.iter().cloned().chain(notes).collect();
    if !kept.is_empty() {
        store.agent_log_append(&job.id, &kept)?;
    }
    match result {
        Err(SandboxError::Cancelled) => return Err(AgentError::Cancelled),
        Err(e) => return Ok(Err(e.to_string().into())),
        Ok(_) => {}
    }
    let untouched = run.workspace().untouched()?;
    // A node agent's program may only have asked other nodes for changes.
    if host.node.is_some() && host.submitted.is_none() {
        if untouched && !host.messages_sent.is_empty() {
            return Ok(Ok(Made::new(
                Some(host.messages_sent.join("; ")),
                "message",
            )));
        }
        if untouched {
            let name = host
                .node
                .as_ref()
                .and_then(|n| n.view.node.as_ref())
                .map_or("yourself", |n| n.name.as_str());
            return Ok(Err(format!(
                "The program changed nothing and sent no message. Answer with your complete new source in one ```{fence} block starting with your own `{name}` definition, or with message_node(target_id, request).",
                fence = host.node.as_ref().and_then(|n| n.view.node.as_ref()).map_or("python", |n| lang::of_file(&n.file_path).fence)
            ).into()));
        }
    }
    let summary = match host.submitted {
        Some((summary, _)) => summary,
        None if host.node.is_some() => "rewrite_self".to_owned(),
        None => {
            return Ok(Err(
                "The program ended without calling submit_result(summary, changed_files).".into(),
            ))
        }
    };
    if untouched {
        return Ok(Err(
            "The program called submit_result but changed no file: write the changed file with write_file(path, content)."
                .into(),
        ));
    }
    Ok(Ok(Made::new(Some(summary), "program")))
}
