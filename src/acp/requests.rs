//! What an ACP agent's requests do in Chimera: file reads see the Chimera
//! agent's overlay over the human's text (unsaved buffers included),
//! writes go into that overlay and never to the project, and permission is
//! decided by the agent's capabilities. Every request is in the effect log.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    PermissionOptionKind, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    SelectedPermissionOutcome, SessionUpdate, ToolKind, WriteTextFileRequest,
};

use crate::capabilities::Capabilities;
use crate::overlay::Overlay;
use crate::paths::ProjectPath;
use crate::store::Store;

/// The Chimera agent an ACP session works for.
pub struct Route {
    pub agent_id: String,
    pub store: Arc<Store>,
    pub caps: Capabilities,
    pub max_bytes: u64,
    pub progress: Arc<dyn Fn(String) + Send + Sync>,
    /// What the agent said this turn (its message chunks).
    pub said: Arc<Mutex<String>>,
    /// Time limit of one terminal command (`agents.command_timeout_ms`).
    pub command_timeout: std::time::Duration,
    /// Asks the human (`capabilities.ask`, with an editor); `None`: the
    /// preset decides alone.
    pub ask: Option<Ask>,
}

/// Puts a question to the human: `Some(allowed)`, or `None` when no
/// answer came.
pub type Ask =
    Arc<dyn Fn(String) -> futures_util::future::BoxFuture<'static, Option<bool>> + Send + Sync>;

impl Route {
    /// Records a request in the effect log, whatever came of it.
    fn logged<T>(&self, what: String, result: Result<T, String>) -> Result<T, String> {
        let output = match &result {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("refused: {e}"),
        };
        let _ = self
            .store
            .effect_record("acp", Some(&self.agent_id), &what, &output, 0);
        result
    }

    /// The project path an agent names (ACP paths are absolute; a relative
    /// one is taken from the root), if it may be touched at all.
    fn path(&self, raw: &Path) -> Result<ProjectPath, String> {
        let root = self.store.root();
        let p = if raw.is_absolute() {
            ProjectPath::from_absolute(root, raw)
                .ok_or_else(|| format!("{} is outside the project", raw.display()))?
        } else {
            ProjectPath::parse(&raw.to_string_lossy()).map_err(|e| e.to_string())?
        };
        crate::rootfs::check_no_links(root, &p).map_err(|e| e.to_string())?;
        Ok(p)
    }

    pub(super) fn overlay(&self) -> Overlay<'_> {
        Overlay::new(&self.store, &self.agent_id, self.max_bytes)
    }

    /// `fs/read_text_file`: the text as this agent sees it, from `line`
    /// (1-based) for `limit` lines.
    pub fn read(&self, req: &ReadTextFileRequest) -> Result<String, String> {
        let what = format!("fs/read_text_file {}", req.path.display());
        let result = (|| {
            let p = self.path(&req.path)?;
            self.caps
                .check_read(p.as_str())
                .map_err(|d| d.to_string())?;
            let text = self.overlay().read_text(&p).map_err(|e| e.to_string())?;
            Ok(slice_lines(&text, req.line, req.limit))
        })();
        self.logged(what, result)
    }

    /// `fs/write_text_file`: into the overlay, never the project.
    pub fn write(&self, req: &WriteTextFileRequest) -> Result<(), String> {
        let what = format!(
            "fs/write_text_file {} ({} bytes)",
            req.path.display(),
            req.content.len()
        );
        let result = (|| {
            let p = self.path(&req.path)?;
            self.caps
                .check_write(p.as_str())
                .map_err(|d| d.to_string())?;
            self.overlay()
                .write(&p, req.content.as_bytes())
                .map_err(|e| e.to_string())?;
            (self.progress)(format!("wrote {p}"));
            Ok(())
        })();
        self.logged(what, result)
    }

    /// `session/request_permission`: allowed when the capabilities allow
    /// that kind of action (its effects stay in the overlay either way);
    /// else asked of the human when `capabilities.ask` is on and an editor
    /// is there to ask, else refused.
    pub async fn permission(&self, req: &RequestPermissionRequest) -> RequestPermissionOutcome {
        let kind = req.tool_call.fields.kind.unwrap_or(ToolKind::Other);
        let title = req.tool_call.fields.title.clone().unwrap_or_default();
        let mut allowed = self.allows(kind);
        let mut asked = "";
        if let (false, Some(ask)) = (allowed, &self.ask) {
            let answer = ask(format!("{kind:?}: {title}")).await;
            allowed = answer == Some(true);
            asked = match answer {
                Some(true) => " (the human allowed it)",
                Some(false) => " (the human refused it)",
                None => " (the human did not answer)",
            };
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
        let what = format!("session/request_permission {kind:?}: {title}{asked}");
        let verdict = if allowed {
            Ok(())
        } else if asked.is_empty() {
            Err("not under these capabilities".to_owned())
        } else {
            Err("not allowed by the human".to_owned())
        };
        let _ = self.logged(what, verdict);
        match chosen {
            Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
            None => RequestPermissionOutcome::Cancelled,
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

    /// Shows what the agent streams: its words and its tool calls.
    pub fn update(&self, update: &SessionUpdate) {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let agent_client_protocol::v1::schema::ContentBlock::Text(t) = &chunk.content {
                    // Words arrive a few at a time: show the line they make.
                    let line = self.said.lock().ok().map(|mut said| {
                        keep_said(&mut said, &t.text);
                        last_line(&said)
                    });
                    if let Some(line) = line.filter(|l| !l.is_empty()) {
                        (self.progress)(line);
                    }
                }
            }
            SessionUpdate::ToolCall(call) => (self.progress)(format!("{}…", call.title)),
            _ => {}
        }
    }
}

/// Bytes of an agent's words kept per turn: its latest, for the summary
/// and the progress line (an agent may stream without end).
const SAID_LIMIT: usize = 64 * 1024;

/// Appends `more` to `said`, dropping its oldest words past [`SAID_LIMIT`].
fn keep_said(said: &mut String, more: &str) {
    said.push_str(more);
    if said.len() > SAID_LIMIT {
        let mut cut = said.len() - SAID_LIMIT;
        while !said.is_char_boundary(cut) {
            cut += 1;
        }
        said.drain(..cut);
    }
}

/// The last line of `text` with something on it, at most 120 characters.
fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let n = line.chars().count();
    if n > 120 {
        format!("…{}", line.chars().skip(n - 119).collect::<String>())
    } else {
        line.to_owned()
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
    fn an_agent_that_never_stops_talking_is_kept_to_its_latest_words() {
        let mut said = String::new();
        for i in 0..100_000 {
            keep_said(&mut said, &format!("é{i} "));
        }
        assert!(said.len() <= SAID_LIMIT, "{}", said.len());
        assert!(said.ends_with("é99999 "));
    }

    #[test]
    fn progress_shows_the_line_being_said() {
        assert_eq!(last_line("Fixing"), "Fixing");
        assert_eq!(last_line("Fixing add.\nNow the tests\n"), "Now the tests");
        assert_eq!(last_line(&"y".repeat(200)).chars().count(), 120);
    }

    #[test]
    fn lines_are_counted_from_one() {
        let t = "a\nb\nc\n";
        assert_eq!(slice_lines(t, None, None), t);
        assert_eq!(slice_lines(t, Some(2), None), "b\nc\n");
        assert_eq!(slice_lines(t, Some(1), Some(1)), "a\n");
        assert_eq!(slice_lines(t, Some(9), Some(1)), "");
    }
}
