//! What a code-mode agent works on: the file its task is about (found by
//! [`locate`], or asked of the model when nothing in the project fits),
//! the other files its answer may change, and the files it may read.

use super::brain::Run;
use super::{context, locate, prompt, refactor, AgentError, EditForm, Job};
use crate::lang::{self, Language};
use crate::llm::{ChatMessage, ChatOptions};
use crate::paths::ProjectPath;
use crate::python;

/// What a code-mode agent works on: the file its task is about (found by
/// [`locate`]), the other files the task names, and the project's files.
pub(super) struct Scene {
    pub tree: Vec<String>,
    pub target: Option<(ProjectPath, String)>,
    pub place: Option<locate::Place>,
    /// Files that fit the task as well as the target, for the model to read.
    pub references: Vec<(String, String)>,
    /// Other files the answer may change: the ones the task names, and
    /// for a rename or a move the files that use the name.
    pub editable: Vec<(ProjectPath, String)>,
    /// The rename or move the task asks for, finished after the model's edit.
    pub intent: Option<refactor::Intent>,
}

impl Scene {
    /// The project's files the agent may see, and the place its task is
    /// about by the task's words (see [`locate`]).
    pub fn find(run: &Run) -> Result<(Vec<String>, Option<locate::Place>), AgentError> {
        let job = run.job;
        let ws = run.workspace();
        // Names of files the agent may not read are not shown either.
        let tree = ws
            .files()
            .map_err(|e| AgentError::Internal(e.to_string()))?;
        let node_file = job
            .node
            .as_ref()
            .and_then(|n| n.view.node.as_ref())
            .map(|n| n.file_path.clone());
        // A task about a file outside the project is refused before the
        // model is asked: it would otherwise land in some other file.
        if node_file.is_none() {
            if let Some((path, why)) = locate::outside_the_project(&job.spec.task, &tree) {
                return Err(AgentError::Denied(format!(
                    "the task is about `{path}`, which Chimera may not change: {why}"
                )));
            }
        }
        // The task's own words decide; the buffer it was typed in is evidence.
        let place = match node_file {
            Some(file) => Some(locate::Place {
                file,
                new: false,
                also: vec![],
                only_the_buffer: false,
            }),
            None => {
                let index = run.services.index.as_ref().map(|i| i.read());
                // The index speaks for the project's files once it holds
                // them, and for the agent's while it has changed none.
                let topology = index
                    .as_ref()
                    .map(|i| i.topology())
                    .filter(|t| t.file_paths().next().is_some())
                    .filter(|_| ws.untouched().unwrap_or(false));
                let defined = match topology {
                    Some(t) => locate::Defined::Index(t),
                    // A file that cannot be read is no evidence either way.
                    None => locate::Defined::Texts(Box::new(|paths, each| {
                        drop(ws.read_texts(paths, each))
                    })),
                };
                locate::locate_by(&job.spec.task, &tree, job.spec.file.as_deref(), defined)
            }
        };
        Ok((tree, place))
    }

    /// The scene at `place` (see [`Scene::find`]).
    pub fn at(
        run: &Run,
        tree: Vec<String>,
        place: Option<locate::Place>,
    ) -> Result<Scene, AgentError> {
        let (job, caps) = (run.job, &run.caps);
        let ws = run.workspace();
        // A file the agent may not read never reaches the model.
        if let Some(p) = &place {
            if let Err(denied) = caps.check_read(&p.file) {
                return Err(AgentError::Denied(denied.to_string()));
            }
        }
        let target = place.as_ref().and_then(|p| {
            let pp = ProjectPath::parse(&p.file).ok()?;
            match ws.read_text(&pp) {
                Ok(t) => Some((pp, t)),
                // A file the task creates starts empty.
                Err(_) if p.new => Some((pp, String::new())),
                Err(_) => None,
            }
        });
        // Renames and moves on the syntax tree are Python's.
        let python_target = target
            .as_ref()
            .is_none_or(|(p, _)| lang::of_file(p.as_str()) == &lang::PYTHON);
        let intent =
            refactor::intent(&job.spec.task, &tree).filter(|_| job.node.is_none() && python_target);
        let may_change = others_to_change(
            job,
            &tree,
            place.as_ref(),
            intent.as_ref(),
            |f| caps.check_read(f).is_ok() && caps.check_write(f).is_ok(),
            |f| ws.read_text(&ProjectPath::parse(f).ok()?).ok(),
        );
        let read = |f: &String| {
            let p = ProjectPath::parse(f).ok()?;
            let text = match ws.read_text(&p) {
                Ok(t) => t,
                // A move's destination may be a file the task creates.
                Err(_) if !tree.contains(f) => String::new(),
                Err(_) => return None,
            };
            Some((p, text))
        };
        let editable: Vec<(ProjectPath, String)> = may_change.iter().filter_map(read).collect();
        let references = place
            .iter()
            .flat_map(|p| &p.also)
            .filter(|f| !may_change.contains(f) && caps.check_read(f).is_ok())
            .filter_map(|f| read(f).map(|(_, t)| (f.clone(), t)))
            .collect();
        Ok(Scene {
            tree,
            target,
            place,
            references,
            editable,
            intent,
        })
    }

    /// The language of the file the task is about (Python without one).
    pub fn language(&self) -> &'static Language {
        self.target
            .as_ref()
            .map_or(&lang::PYTHON, |(p, _)| lang::of_file(p.as_str()))
    }

    /// Whether an answer may change more than the target, or finishes a
    /// rename or a move.
    pub fn several(&self) -> bool {
        !self.editable.is_empty() || self.intent.is_some()
    }

    /// The target as the model sees it, within `budget` characters shared
    /// with the files named beside it.
    pub fn view(&self, job: &Job, budget: usize, form: EditForm) -> Option<prompt::TargetView> {
        let (p, t) = self.target.as_ref()?;
        let cursor = job.cursor_in(p.as_str());
        let focused = form == EditForm::Definitions;
        let mut v = context::target_view(p.as_str(), t, &job.spec.task, cursor, budget, focused);
        v.new = self
            .place
            .as_ref()
            .is_some_and(|pl| pl.new && pl.file == p.as_str());
        let mut room = budget.saturating_sub(v.shown.len()) / 2;
        let editable = self.editable.iter().map(|(p, t)| (p.as_str(), t, true));
        let read_only = self.references.iter().map(|(p, t)| (p.as_str(), t, false));
        for (path, text, may_change) in editable.chain(read_only) {
            let shown: String = text.chars().take(room).collect();
            room = room.saturating_sub(shown.len());
            match may_change {
                true => v.editable.push((path.to_owned(), shown)),
                false => v.references.push((path.to_owned(), shown)),
            }
        }
        Some(v)
    }
}

/// The files besides the target that `job`'s answer may change (see
/// [`Scene::editable`]), at most [`MAX_EDITABLE`]. `allowed`: the agent may
/// read and write it; `read`: a file's text.
fn others_to_change(
    job: &Job,
    tree: &[String],
    place: Option<&locate::Place>,
    intent: Option<&refactor::Intent>,
    allowed: impl Fn(&str) -> bool,
    read: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let Some(place) = place.filter(|_| job.node.is_none()) else {
        return vec![];
    };
    let mut out: Vec<String> = Vec::new();
    // A file being created is written from the files named beside it,
    // which stay as they are, unless the task moves code out of them.
    if !place.new || intent.is_some() {
        out.extend(locate::named_files(&locate::mentions(&job.spec.task), tree));
    }
    if let Some(intent) = intent {
        if let refactor::Change::Move { to, .. } = &intent.change {
            out.push(to.clone());
        }
        let name = intent.name();
        for f in tree.iter().filter(|f| f.ends_with(".py")).take(5000) {
            if read(f).is_some_and(|t| python::has_identifier(&t, name)) {
                out.push(f.clone());
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|f| f != &place.file && seen.insert(f.clone()) && allowed(f));
    out.truncate(MAX_EDITABLE);
    out
}

/// The most files besides the target one answer may change: each is shown
/// to the model, which reads about 60 tokens a second on 2 cores.
const MAX_EDITABLE: usize = 6;

/// Asks the model which file `job`'s task belongs in, showing it the
/// project's source files with what they define.
pub(super) async fn ask_for_file(
    run: &Run<'_>,
    tree: &[String],
) -> Result<Option<locate::Place>, AgentError> {
    let job = run.job;
    let ws = run.workspace();
    let listing: Vec<String> = tree
        .iter()
        .filter(|f| lang::is_source(f))
        .take(60)
        .map(|f| {
            let text = ProjectPath::parse(f)
                .ok()
                .and_then(|p| ws.read_text(&p).ok())
                .unwrap_or_default();
            let names: Vec<String> = lang::definitions(lang::of_file(f), &text)
                .into_iter()
                .filter(|d| d.parent.is_none())
                .take(10)
                .map(|d| d.name)
                .collect();
            format!("- {f}: {}", names.join(", "))
        })
        .collect();
    if listing.is_empty() {
        return Ok(None);
    }
    let messages = vec![
        ChatMessage::system(
            "You choose the file of a software project where a change belongs. Answer with the file's path only.",
        ),
        ChatMessage::user(format!(
            "The project's files and what they define:\n{}\n\nChange: {}\n\nWhich file should it go in? If none fits, give the path of a new file.",
            listing.join("\n"),
            job.spec.task.trim()
        )),
    ];
    let opts = ChatOptions {
        temperature: Some(0.0),
        ..Default::default()
    };
    let answer = run.ask(": which file", &messages, &opts).await?;
    Ok(locate::file_in_answer(&answer, tree))
}
