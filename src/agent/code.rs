//! Code mode (seed 000), made to work with small local models. It asks the
//! model for an edit in the form that fits it (a program for large models,
//! changed definitions for small ones) and uses whatever form the reply
//! actually carries ([`super::attempt`]). Every result passes the gate
//! before it becomes a proposal; a syntax error, a traceback, a reply
//! without code or an edit that changes nothing goes back to the model as
//! a [`Problem`] for a bounded number of repair rounds; then the agent
//! fails with the reason.

use super::attempt::{Made, Turn};
use super::brain::Run;
use super::scene::{self, Scene};
use super::{checks, gate, locate, node, prompt, AgentError, Done, EditForm, Job, Problem};
use crate::config::{Config, EditFormSetting};
use crate::lang::splice;
use crate::lang::{self, Language};
use crate::llm::{ChatMessage, ChatOptions};
use crate::workspace::{Change, Kept};

/// The form the prompt asks for.
pub fn choose_form(config: &Config, has_target: bool) -> EditForm {
    match config.llm.edit_form_for_model() {
        EditFormSetting::Program => EditForm::Program,
        EditFormSetting::Definitions if has_target => EditForm::Definitions,
        EditFormSetting::Definitions => EditForm::Program,
        EditFormSetting::Auto => match config.llm.model_size_b() {
            Some(size) if size >= 7.0 => EditForm::Program,
            _ if has_target => EditForm::Definitions,
            _ => EditForm::Program,
        },
    }
}

/// JSON schema of a constrained definitions reply.
fn reply_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "summary": { "type": "string" },
            "code": { "type": "string" }
        },
        "required": ["summary", "code"]
    })
}

/// The text of one model reply: its code and, when it said so, its summary.
fn read_reply(reply: &str, json: bool, language: &Language) -> (String, Option<String>) {
    if json {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(reply.trim()) {
            if let Some(code) = v["code"].as_str() {
                let code = if code.contains("```") {
                    prompt::extract_code_as(code, language)
                } else {
                    code.to_owned()
                };
                return (
                    code,
                    v["summary"]
                        .as_str()
                        .map(str::to_owned)
                        .filter(|s| !s.trim().is_empty()),
                );
            }
        }
    }
    (prompt::extract_code_as(reply, language), None)
}

/// Runs a code-mode (or node) task: each round asks the model, turns its
/// reply into a change and passes it through the gate, until a change
/// passes or the repair rounds are spent.
pub(super) async fn run(run: &Run<'_>) -> Result<Done, AgentError> {
    let scene = scene_of(run).await?;
    let talk = Talk::start(run, &scene).await?;
    let turn = Turn { run, scene: &scene };
    if let Some(done) = refactor_alone(&turn).await? {
        return Ok(done);
    }
    talk.rounds(&turn).await
}

/// A task that only renames or moves ("rename mean to average
/// everywhere"), done on the syntax tree without the model, if the gate
/// passes it; `None` (and the overlay empty) when the model must try.
pub(super) async fn refactor_alone(turn: &Turn<'_>) -> Result<Option<Done>, AgentError> {
    let run = turn.run;
    let Some(intent) = turn.scene.intent.as_ref().filter(|i| i.alone) else {
        return Ok(None);
    };
    run.say(format!("{} on the syntax tree", intent.verb()));
    if let Ok(made) = turn.refactor_alone(intent)? {
        match gate::finish(run, false).await {
            Ok(gate::Gated::Pass { notes, change }) => {
                return Ok(Some(turn.done(made, &change, notes, 0)))
            }
            // Not done alone (the tests say so): the model tries.
            _ => run.workspace().clear()?,
        }
    }
    Ok(None)
}

/// One request in code mode's form, its answer through the gate: what a
/// tool-mode run that ran out of calls without writing anything asks last.
pub(super) async fn last_try(run: &Run<'_>) -> Result<Done, AgentError> {
    let scene = scene_of(run).await?;
    let mut talk = Talk::start(run, &scene).await?;
    talk.once = true;
    talk.rounds(&Turn { run, scene: &scene }).await
}

/// Where `run`'s task is about; when nothing in the project fits new code
/// the task names, the model is asked where it goes rather than guessed.
async fn scene_of(run: &Run<'_>) -> Result<Scene, AgentError> {
    let job = run.job;
    let (tree, mut place) = Scene::find(run)?;
    if job.node.is_none() && locate::ask_where(&job.spec.task, place.as_ref()) {
        let sources: Vec<&String> = tree.iter().filter(|f| lang::is_source(f)).collect();
        if let [only] = sources.as_slice() {
            place = Some(locate::Place::existing((*only).clone(), vec![]));
        } else if sources.len() > 1 {
            run.say("asking the model which file this goes in");
            if let Some(answer) = scene::ask_for_file(run, &tree).await? {
                place = Some(answer);
            }
        }
    }
    Scene::at(run, tree, place)
}

/// The conversation of a code-mode run: what it asks for and how, and
/// what was said so far.
struct Talk {
    form: EditForm,
    /// Replies come as JSON (`llm.json_output`, definitions form).
    json: bool,
    language: &'static Language,
    view: Option<prompt::TargetView>,
    system: ChatMessage,
    /// The first messages, which a fresh try asks again.
    question: Vec<ChatMessage>,
    messages: Vec<ChatMessage>,
    /// Each round is tried afresh, the tests judging, rather than repaired
    /// in conversation.
    fresh_tries: bool,
    opts: ChatOptions,
    /// Fresh answers drawn at once, not yet tried.
    drawn: std::collections::VecDeque<Result<Answer, AgentError>>,
    /// One try only (a tool-mode run's last request).
    once: bool,
}

impl Talk {
    /// The conversation of `run` about `scene`, with the tests that fail
    /// now when the task asks to fix something.
    async fn start(run: &Run<'_>, scene: &Scene) -> Result<Talk, AgentError> {
        let (config, job) = (run.config, run.job);
        // A node agent answers with its new source (its rewrite_self) or a
        // program calling its tools.
        let form = if job.node.is_some() {
            EditForm::Definitions
        } else {
            choose_form(config, scene.target.is_some())
        };
        let json = config.llm.json_output && form == EditForm::Definitions;
        let language = scene.language();
        let window = run.llm()?.context_window().await as usize;
        let rules = run.rules(scene.target.as_ref().map(|(p, _)| p.as_str()));
        // Characters the file may take: the window minus the reply, the
        // instructions and the project's rules, at about 3 characters per
        // token.
        let budget = window
            .saturating_sub(config.llm.max_tokens as usize + 700 + rules.len() / 3)
            .max(500)
            * 3;
        let mut view = scene.view(job, budget, form);
        // A task to fix something starts from what fails, as a person would.
        if let Some(v) = view
            .as_mut()
            .filter(|v| !v.new && checks::asks_to_fix(&job.spec.task))
        {
            v.failing_tests = failing_now(run, v.path.clone()).await;
        }
        let mut more = match (form, &job.node) {
            (EditForm::Program, None) => prompt::more_functions(&run.services.mcp, &run.caps),
            _ => String::new(),
        };
        more.push_str(&rules);
        let (system, messages) = opening(job, scene, view.as_ref(), form, json, language, &more);
        // A task to fix what the tests show failing is tried afresh each
        // round, the tests judging every try, rather than repaired in
        // conversation: shown its failed answer, Qwen2.5-Coder 1.5B gave it
        // back nearly word for word. On 25 real bugs, independent tries
        // fixed 5 where three conversation rounds fixed 2.
        let fresh_tries = view.as_ref().is_some_and(|v| v.failing_tests.is_some());
        let mut opts = ChatOptions {
            json_schema: json.then(reply_schema),
            ..Default::default()
        };
        // A fix is about as long as the code it mends: a reply much longer
        // is the model writing on (1.5B went on from the fixed function to
        // write its callers anew, a minute and a half of tokens on 2 cores).
        if let Some(v) = view.as_ref().filter(|_| fresh_tries) {
            let shown_tokens = (v.shown.len() / 3) as u32;
            opts.max_tokens = Some(shown_tokens + 256);
        }
        Ok(Talk {
            form,
            json,
            language,
            view,
            system,
            question: messages.clone(),
            messages,
            fresh_tries,
            opts,
            drawn: Default::default(),
            once: false,
        })
    }

    /// Asks, attempts and gates until a change passes or the tries are
    /// spent: `agents.repair_rounds` repairs, or, for a fix the failing
    /// tests judge, `agents.candidates` fresh answers.
    async fn rounds(mut self, turn: &Turn<'_>) -> Result<Done, AgentError> {
        let run = turn.run;
        let max_rounds = self.tries(run);
        let mut last_problem = Problem::Unchanged;
        let mut only_unchanged = true;
        let mut asked_anew = false;
        // The fix that mended most tests while breaking others, to propose
        // if no try mends without breaking.
        let mut fallback: Option<Fallback> = None;
        for round in 1..=max_rounds {
            // Every answer so far was the function unchanged: the last
            // round starts over and asks for it anew, without the old code
            // to copy.
            if let Some(signature) =
                self.anew(run, round == max_rounds && round > 1 && only_unchanged)
            {
                self.messages = vec![
                    self.system.clone(),
                    prompt::anew_message(&run.job.spec.task, &signature, self.language),
                ];
                asked_anew = true;
            }
            let (reply, code, said) = self.next(run, round, max_rounds).await?;
            run.workspace().clear()?;
            let gated = attempt(turn, &reply, code, round == max_rounds).await?;
            match settle(run, gated, round, &mut fallback)? {
                Ok(Passed {
                    made,
                    change,
                    mut notes,
                }) => {
                    if asked_anew {
                        notes.push(
                            "written anew without the old code: review what it dropped".into(),
                        );
                    }
                    let summary = said.or(made.summary);
                    return Ok(turn.done(Made { summary, ..made }, &change, notes, round));
                }
                Err(problem) => {
                    if run.cancel.is_cancelled() {
                        return Err(AgentError::Cancelled);
                    }
                    run.workspace().clear()?;
                    only_unchanged &= problem == Problem::Unchanged;
                    if !self.fresh_tries {
                        self.messages.push(prompt::repair_message(
                            self.form,
                            &problem,
                            self.language,
                        ));
                    }
                    last_problem = problem;
                }
            }
        }
        if let Some(f) = fallback {
            run.workspace().restore(&f.kept)?;
            return Ok(turn.done(f.made, &f.change, f.notes, f.round));
        }
        run.workspace().clear()?;
        Err(match self.fresh_tries {
            true => AgentError::NoFix {
                tries: max_rounds,
                last: last_problem.to_string(),
            },
            false => AgentError::GaveUp {
                rounds: max_rounds - 1,
                last: last_problem.to_string(),
            },
        })
    }

    /// How many answers the model gives at most.
    fn tries(&self, run: &Run) -> u32 {
        if self.once {
            return 1;
        }
        match self.fresh_tries {
            true => run.config.agents.candidates.max(1),
            false => run.config.agents.repair_rounds + 1,
        }
    }

    /// The signature of the function to write anew on the `last` round of
    /// several that only gave it back unchanged. Not when tests fail: then
    /// the old code is nearly right and only it says what the tests expect
    /// (on 25 real bugs, writing anew fixed none and made the suite fail
    /// more in most).
    fn anew(&self, run: &Run, last_of_unchanged: bool) -> Option<String> {
        let v = self.view.as_ref()?;
        let fits = last_of_unchanged
            && run.job.node.is_none()
            && self.form == EditForm::Definitions
            && v.failing_tests.is_none();
        fits.then(|| v.focus_function.clone()).flatten()
    }

    /// Round `round`'s answer (of `of`). Fresh tries after the first are
    /// drawn as many at once as the server has free slots, and taken in
    /// order.
    async fn next(&mut self, run: &Run<'_>, round: u32, of: u32) -> Result<Answer, AgentError> {
        if !self.fresh_tries {
            return self.ask(run, round).await;
        }
        if self.drawn.is_empty() {
            // The first try is drawn alone: two answers drawn at once on a
            // CPU server with two slots each came 1.6-1.8x later than one
            // (1.5B, 2 cores, real set), and the fixes it finds are mostly
            // first tries (dasherize-swap, ordinal-second).
            let free = match round {
                1 => 1,
                _ => run.llm()?.free_slots().await.unwrap_or(1).max(1),
            };
            let n = (free as u32).min(of - round + 1);
            run.say(match (n, round) {
                (1, 1) => "asking the model".into(),
                (1, _) => format!("try {round}: the tests failed, asking afresh"),
                _ => format!(
                    "asking the model for {n} answers at once (tries {round} to {})",
                    round + n - 1
                ),
            });
            let asks = (round..round + n).map(|r| self.draw(run, r, of));
            self.drawn = futures_util::future::join_all(asks).await.into();
        }
        self.drawn
            .pop_front()
            .unwrap_or_else(|| Err(AgentError::Internal("no answer was drawn".into())))
    }

    /// A fresh answer to the first question: try `round` of `of`, sampled
    /// more freely the later it is.
    async fn draw(&self, run: &Run<'_>, round: u32, of: u32) -> Result<Answer, AgentError> {
        let opts = ChatOptions {
            temperature: temperature(run, round),
            ..self.opts.clone()
        };
        let asked = self.question.last().map_or("", |m| m.content.as_str());
        let label = format!(": try {round} of {of}: {asked}");
        let reply = run.ask(&label, &self.question, &opts).await?;
        Ok(self.read(reply))
    }

    /// Round `round`'s question to the model in the conversation so far.
    async fn ask(&mut self, run: &Run<'_>, round: u32) -> Result<Answer, AgentError> {
        run.say(match round {
            1 => "asking the model".into(),
            _ => format!("repair round {}", round - 1),
        });
        self.opts.temperature = temperature(run, round);
        let asked = self.messages.last().map_or("", |m| m.content.as_str());
        let label = format!(": {asked}");
        let reply = run.ask(&label, &self.messages, &self.opts).await?;
        self.messages.push(ChatMessage::assistant(reply.clone()));
        Ok(self.read(reply))
    }

    /// A reply, its code and what it said it did.
    fn read(&self, reply: String) -> Answer {
        let (code, said) = read_reply(&reply, self.json, self.language);
        // Cut off at the token limit inside a definition: the ones before
        // it are an answer.
        let code = match splice::without_cut_tail(self.language, &code) {
            Some(head)
                if self.form == EditForm::Definitions && reply.matches("```").count() % 2 == 1 =>
            {
                head.to_owned()
            }
            _ => code,
        };
        (reply, code, said)
    }
}

/// A reply, the code read from it, and what it said it did.
type Answer = (String, String, Option<String>);

/// Small models tend to repeat a failed answer word for word: each round
/// after the first samples a little more freely.
fn temperature(run: &Run, round: u32) -> Option<f64> {
    (round > 1).then(|| (run.config.llm.temperature + 0.3 * (round - 1) as f64).min(1.0))
}

/// What a gated attempt of `round` comes to: a proposal with its change
/// and notes, or the problem to tell — a fix that breaks tests set aside
/// in `fallback` when it is the best so far.
fn settle(
    run: &Run,
    gated: Result<(Made, gate::Gated), Problem>,
    round: u32,
    fallback: &mut Option<Fallback>,
) -> Result<Result<Passed, Problem>, AgentError> {
    Ok(match gated {
        Ok((made, gate::Gated::Pass { notes, change })) => Ok(Passed {
            made,
            change,
            notes,
        }),
        Ok((
            made,
            gate::Gated::Fallback {
                notes,
                problem,
                fixed,
                broke,
                change,
            },
        )) => {
            let score = (fixed, std::cmp::Reverse(broke));
            if fallback.as_ref().is_none_or(|f| score > f.score) {
                *fallback = Some(Fallback {
                    kept: run.workspace().keep()?,
                    change,
                    made,
                    notes,
                    round,
                    score,
                });
            }
            Err(problem)
        }
        Err(problem) => Err(problem),
    })
}

/// The tests of `file` that fail now, if the project has tests.
async fn failing_now(run: &Run<'_>, file: String) -> Option<checks::Failing> {
    run.say("running the project's tests");
    run.tests()
        .off_runtime(run.cancel, move |t, stop| t.failing_now(&file, stop))
        .await
        .flatten()
}

/// A try the gate passed: what made it, the change as the gate left it,
/// the notes for its summary.
struct Passed {
    made: Made,
    change: Change,
    notes: Vec<String>,
}

/// A try set aside (see [`gate::Gated::Fallback`]): its overlay, what
/// made it, its notes, its round and how good it is (tests fixed, then
/// fewest broken).
struct Fallback {
    kept: Kept,
    change: Change,
    made: Made,
    notes: Vec<String>,
    round: u32,
    score: (usize, std::cmp::Reverse<usize>),
}

/// One reply made into a change and passed through the gate, the one step
/// every form ends in: what reaches the human is kept to the task, parses,
/// removes nothing unnamed, passes the tests (or, on the `last` round, is
/// marked where it does not).
async fn attempt(
    turn: &Turn<'_>,
    reply: &str,
    code: String,
    last: bool,
) -> Result<Result<(Made, gate::Gated), Problem>, AgentError> {
    let made = match turn.run.job.node.as_ref() {
        Some(_) => turn.node_attempt(reply, code).await?,
        None if turn.scene.several() => turn.files_attempt(reply, code).await?,
        None => turn.code_attempt(code).await?,
    };
    Ok(match made {
        Ok(made) => gate::finish(turn.run, last)
            .await
            .map(|notes| (made, notes)),
        Err(problem) => Err(problem),
    })
}

/// The system prompt and the first messages of a code-mode conversation.
fn opening(
    job: &Job,
    scene: &Scene,
    view: Option<&prompt::TargetView>,
    form: EditForm,
    json: bool,
    language: &Language,
    more_functions: &str,
) -> (ChatMessage, Vec<ChatMessage>) {
    let mut system = match &job.node {
        Some(n) => node::system_prompt(&n.view),
        None => prompt::system(form, language),
    };
    system.push_str(more_functions);
    if json {
        let code = match form {
            EditForm::Program => "Python",
            EditForm::Definitions => language.name,
        };
        system.push_str(&format!("\nAnswer as JSON: {{\"summary\": one line saying what you changed, \"code\": the {code} code}}."));
    }
    let task_message = match &job.node {
        Some(_) => ChatMessage::user(format!("# Request\n{}", job.spec.task.trim())),
        None => prompt::task_message(
            form,
            &job.spec.task,
            job.spec.context.as_deref(),
            view,
            &scene.tree,
        ),
    };
    let system = ChatMessage::system(system);
    let mut messages = vec![system.clone(), task_message];
    if !job.feedback.is_empty() {
        messages.push(prompt::feedback_message(&job.feedback));
    }
    (system, messages)
}
