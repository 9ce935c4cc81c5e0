//! What an ACP agent's requests do in Chimera: file reads and writes act on
//! the agent's own folder (its view of the project, unsaved buffers
//! included; never the project), checked by its capabilities as any
//! agent's are; what changed in the folder is taken into the Chimera
//! agent's overlay after each turn; permission is decided by the
//! capabilities. Every request is in the effect log.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    PermissionOptionKind, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    SelectedPermissionOutcome, SessionUpdate, ToolKind, WriteTextFileRequest,
};

use super::calls::{kind_name, Calls};
use super::transcript::{last_line, Piece, Transcript};
use crate::capabilities::Capabilities;
use crate::paths::ProjectPath;
use crate::store::Store;
use crate::workdir::Workdir;
use crate::workspace::Workspace;

/// The Chimera agent an ACP session works for.
pub struct Route {
    pub agent_id: String,
    pub store: Arc<Store>,
    pub caps: Capabilities,
    /// The agent's folder: the project as it sees it.
    pub files: std::path::PathBuf,
    pub max_bytes: u64,
    pub progress: Arc<dyn Fn(String) + Send + Sync>,
    /// Shows a streamed piece of the turn to the human.
    pub show: Arc<dyn Fn(Piece) + Send + Sync>,
    /// The turn in progress.
    pub transcript: Arc<Mutex<Transcript>>,
    /// The session's tool calls as announced, for the requests about them.
    pub calls: Mutex<Calls>,
    /// Shell lines the human allowed when asked, each for one terminal.
    pub allowed_lines: Mutex<Vec<String>>,
    /// Files the human allowed the agent to change when asked, for the
    /// rest of its run (into its overlay, as every write).
    pub allowed_files: Mutex<Vec<ProjectPath>>,
    /// Time limit of one terminal command (`agents.command_timeout_ms`).
    pub command_timeout: std::time::Duration,
    /// Asks the human (`capabilities.ask`); `None`: the preset decides
    /// alone.
    pub ask: Option<Ask>,
}

/// A permission request in words: its kind and title and, as the title is
/// the agent's words, the files an allow opens whenever it does not name
/// them all.
fn said(kind: ToolKind, title: &str, files: &[ProjectPath]) -> String {
    let mut said = format!("{}: {title}", kind_name(kind));
    if files.iter().any(|f| !title.contains(f.as_str())) {
        let named: Vec<&str> = files.iter().map(ProjectPath::as_str).collect();
        said.push_str(&format!(" (changes {})", named.join(", ")));
    }
    said
}

/// Puts a question to the human, when one is there to ask.
pub type Ask =
    Arc<dyn Fn(String) -> futures_util::future::BoxFuture<'static, Answer> + Send + Sync>;

/// What came of a question to the human.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Nobody was there to ask when it came (no editor, no client
    /// following the feed): the preset decides alone, as without `ask`.
    NobodyAsked,
    /// No answer came in time.
    Silent,
    /// The human allowed it (`true`) or refused it.
    Said(bool),
}

/// Why an agent's request was refused; said to the agent.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0} is outside the project")]
    Outside(String),
    #[error(transparent)]
    Path(#[from] crate::paths::PathError),
    #[error(transparent)]
    Denied(#[from] crate::capabilities::Denied),
    #[error(transparent)]
    Disk(#[from] crate::rootfs::DiskError),
    #[error("file `{0}` does not exist")]
    Missing(ProjectPath),
    #[error("file `{0}` is binary or not UTF-8")]
    NotText(ProjectPath),
    #[error("`{path}` would be {size} bytes, over the limit of {max} (sync.max_file_bytes)")]
    TooLarge {
        path: ProjectPath,
        size: usize,
        max: u64,
    },
    #[error("no terminal {0} in this session")]
    NoTerminal(String),
    #[error("the terminal was dropped")]
    Dropped,
    #[error("not under these capabilities")]
    NotPermitted,
    #[error("not allowed by the human")]
    NotAllowed,
    /// What the read-back of the agent's folder refused, and why.
    #[error("{0}")]
    Folder(String),
}

impl Route {
    /// Records a request in the effect log and the agent's audit log,
    /// whatever came of it.
    fn logged<T>(&self, what: String, result: Result<T, Refused>) -> Result<T, Refused> {
        let said = result.as_ref().err().map(ToString::to_string);
        let output = match &said {
            None => "ok".to_owned(),
            Some(e) => format!("refused: {e}"),
        };
        self.store
            .effect_record("acp", Some(&self.agent_id), &what, &output, 0);
        let (tool, args) = what.split_once(' ').unwrap_or((&what, ""));
        self.store.tool_call_record(
            &self.agent_id,
            tool,
            args,
            said.as_deref().map_or(Ok("ok"), Err),
            0,
        );
        result
    }

    /// The project path an agent names: in its folder (ACP paths are
    /// absolute; a relative one is taken from the folder), or the
    /// project's own path for it; never a link.
    fn path(&self, raw: &Path) -> Result<ProjectPath, Refused> {
        let p = if raw.is_absolute() {
            ProjectPath::from_absolute(&self.files, raw)
                .or_else(|| ProjectPath::from_absolute(self.store.root(), raw))
                .ok_or_else(|| Refused::Outside(raw.display().to_string()))?
        } else {
            ProjectPath::parse(&raw.to_string_lossy())?
        };
        crate::rootfs::check_no_links(&self.files, &p)?;
        Ok(p)
    }

    /// `fs/read_text_file`: the text in the agent's folder, from `line`
    /// (1-based) for `limit` lines.
    pub fn read(&self, req: &ReadTextFileRequest) -> Result<String, Refused> {
        let what = format!("fs/read_text_file {}", req.path.display());
        let result = (|| {
            let p = self.path(&req.path)?;
            self.caps.check_read(p.as_str())?;
            let data = crate::rootfs::read(&self.files, &p, self.max_bytes)?
                .ok_or_else(|| Refused::Missing(p.clone()))?;
            let text = String::from_utf8(data).map_err(|_| Refused::NotText(p.clone()))?;
            Ok(slice_lines(&text, req.line, req.limit))
        })();
        self.logged(what, result)
    }

    /// `fs/write_text_file`: into the agent's folder, never the project.
    pub fn write(&self, req: &WriteTextFileRequest) -> Result<(), Refused> {
        let what = format!(
            "fs/write_text_file {} ({} bytes)",
            req.path.display(),
            req.content.len()
        );
        let result = (|| {
            let p = self.path(&req.path)?;
            self.caps_now().check_write(p.as_str())?;
            if req.content.len() as u64 > self.max_bytes {
                return Err(Refused::TooLarge {
                    path: p,
                    size: req.content.len(),
                    max: self.max_bytes,
                });
            }
            let mode = self
                .store
                .stable_entry(p.as_str())
                .ok()
                .flatten()
                .map_or(0o644, |e| e.mode);
            crate::rootfs::write_scratch(&self.files, &p, req.content.as_bytes(), mode)?;
            (self.progress)(format!("wrote {p}"));
            Ok(())
        })();
        self.logged(what, result)
    }

    /// Takes what changed in the agent's folder since the last look into
    /// the Chimera agent's overlay, each change checked as a write is;
    /// what is refused stays out, and the log says why.
    pub fn take_back(&self, work: &mut Workdir) -> Result<(), crate::workdir::WorkdirError> {
        let caps = self.caps_now();
        let ws = Workspace::new(&self.store, &self.agent_id, &caps, self.max_bytes);
        for taken in ws.take_back(work)? {
            // Only the log: what was refused stays out of the overlay.
            let result = taken.result.map_err(Refused::Folder);
            self.logged(format!("folder {}", taken.what), result).ok();
        }
        Ok(())
    }

    /// The agent's capabilities with the files the human allowed it to
    /// change when asked.
    fn caps_now(&self) -> std::borrow::Cow<'_, Capabilities> {
        let allowed = match self.allowed_files.lock() {
            Ok(files) if !files.is_empty() => files.clone(),
            _ => return std::borrow::Cow::Borrowed(&self.caps),
        };
        let mut caps = self.caps.clone();
        for f in &allowed {
            caps.allow_write(f.as_str());
        }
        std::borrow::Cow::Owned(caps)
    }

    /// What an allowed call of `kind` may write: the files it names, when
    /// it changes files.
    fn changed_by(&self, kind: ToolKind, files: &[String]) -> Vec<ProjectPath> {
        match kind {
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move => files
                .iter()
                .filter_map(|f| self.path(Path::new(f)).ok())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `session/request_permission`: allowed when the capabilities allow
    /// that kind of action — a command by the programs its line runs
    /// (its effects stay in the overlay either way);
    /// else asked of the human when `capabilities.ask` is on and someone
    /// is there to ask (an editor, a client following the feed), else
    /// refused.
    pub async fn permission(&self, req: &RequestPermissionRequest) -> RequestPermissionOutcome {
        let super::calls::Asked {
            kind,
            title,
            line,
            files,
        } = match self.calls.lock() {
            Ok(calls) => calls.asked(&req.tool_call),
            Err(_) => super::calls::Calls::default().asked(&req.tool_call),
        };
        let files = self.changed_by(kind, &files);
        let said = said(kind, &title, &files);
        // A command is judged by what it runs, as a terminal's is.
        let judged = match (kind, &line) {
            (ToolKind::Execute, Some(line)) => self.caps.check_line(line).map_err(Refused::from),
            _ if self.allows(kind) => Ok(()),
            _ => Err(Refused::NotPermitted),
        };
        let mut allowed = judged.is_ok();
        let mut asked = "";
        let mut answer = None;
        if let (false, Some(ask)) = (allowed, &self.ask) {
            (answer, asked) = match ask(said.clone()).await {
                Answer::NobodyAsked => (None, ""),
                Answer::Said(true) => (Some(true), " (the human allowed it)"),
                Answer::Said(false) => (Some(false), " (the human refused it)"),
                Answer::Silent => (None, " (the human did not answer)"),
            };
            allowed = answer == Some(true);
        }
        if let (Some(true), Some(line)) = (answer, line) {
            if let Ok(mut lines) = self.allowed_lines.lock() {
                lines.push(line);
            }
        }
        if answer == Some(true) {
            if let Ok(mut allowed) = self.allowed_files.lock() {
                allowed.extend(files);
            }
        }
        let wanted: &[PermissionOptionKind] = if allowed {
            &[
                PermissionOptionKind::AllowOnce,
                PermissionOptionKind::AllowAlways,
            ]
        } else {
            &[
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
            ]
        };
        let chosen = wanted.iter().find_map(|k| {
            req.options
                .iter()
                .find(|o| o.kind == *k)
                .map(|o| o.option_id.clone())
        });
        let what = format!("session/request_permission {said}{asked}");
        let verdict = if allowed {
            Ok(())
        } else if asked.is_empty() {
            judged
        } else {
            Err(Refused::NotAllowed)
        };
        // Only the log: the agent hears the outcome.
        self.logged(what, verdict).ok();
        match chosen {
            Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
            None => RequestPermissionOutcome::Cancelled,
        }
    }

    /// Notes what the sandbox refused, as a command's output says
    /// ([`crate::confine::refusals`]): each refusal new in this run goes
    /// to the effect log with its rule, to the agent's log and to the
    /// summary.
    pub fn note_refusals(&self, output: &str) {
        use crate::confine::refusals;
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        for what in refusals::refusals(output) {
            let rule = refusals::rule_of(&what, self.store.root(), home.as_deref());
            let shown = refusals::said(&what, home.as_deref());
            let new = self
                .transcript
                .lock()
                .is_ok_and(|mut t| t.refused(&shown, rule));
            if new {
                self.store.effect_record(
                    "acp",
                    Some(&self.agent_id),
                    &format!("refused by the sandbox: {shown}"),
                    rule,
                    0,
                );
            }
        }
    }

    /// Whether the human allowed shell line `line` when asked; the
    /// allowance is used up.
    pub fn human_allowed(&self, line: &str) -> bool {
        let Ok(mut lines) = self.allowed_lines.lock() else {
            return false;
        };
        match lines.iter().position(|l| l == line) {
            Some(i) => {
                lines.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether the capabilities allow an action of `kind`: reading always;
    /// changing files when the agent may write somewhere; running
    /// commands and fetching only under a preset that lists them.
    fn allows(&self, kind: ToolKind) -> bool {
        match kind {
            ToolKind::Read | ToolKind::Search | ToolKind::Think => true,
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move => self.caps.may_write_anything(),
            ToolKind::Execute => self.caps.may_run_anything(),
            ToolKind::Fetch => self.caps.may_reach_anything(),
            _ => false,
        }
    }

    /// Shows what the agent streams: the piece itself, and on the
    /// progress line the line it is saying or the tool it calls.
    pub fn update(&self, update: &SessionUpdate) {
        let printed = self.calls.lock().ok().and_then(|mut calls| {
            calls.note(update);
            calls.command_output(update)
        });
        if let Some(printed) = printed {
            self.note_refusals(&printed);
        }
        let Some(piece) = self
            .transcript
            .lock()
            .ok()
            .and_then(|mut t| t.update(update).map(|p| (p, last_line(t.words()))))
        else {
            return;
        };
        let (piece, line) = piece;
        match &piece {
            Piece::Message { .. } if !line.is_empty() => (self.progress)(line),
            Piece::Tool { title, status, .. } if *status == "pending" || *status == "running" => {
                (self.progress)(format!("{title}…"))
            }
            _ => {}
        }
        (self.show)(piece);
    }
}

/// Lines `line..line+limit` (1-based) of `text`, all when neither is given.
fn slice_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let start = line.map_or(0, |l| l.saturating_sub(1) as usize);
    let count = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(start).take(count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_from_one() {
        let t = "a\nb\nc\n";
        assert_eq!(slice_lines(t, None, None), t);
        assert_eq!(slice_lines(t, Some(2), None), "b\nc\n");
        assert_eq!(slice_lines(t, Some(1), Some(1)), "a\n");
        assert_eq!(slice_lines(t, Some(9), Some(1)), "");
    }
}
