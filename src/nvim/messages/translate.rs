//! The editor's messages in the port's words (absolute paths become project
//! paths, once, where they enter the core), and the port's replies in the
//! editor's.

use std::path::Path;

use super::{BufferText, Level, ToCore, ToEditor};
use crate::paths::ProjectPath;
use crate::port::{
    Buffer, BufferChange, Command, ForEditor, FromEditor, Query, Refusal, Reply, Said,
};

/// Why an editor message does not enter the core: what the human is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotTaken {
    /// It is about a file outside the project (its absolute path).
    #[error("Chimera: {0} is not a file of the project")]
    NotInProject(String),
    /// No command of the port says it (a bug of this version).
    #[error("Chimera: the core has no command for {0}; please report it")]
    Unknown(String),
}

impl ToCore {
    /// This message in the port's words. `project` names the project file
    /// an absolute path is, if it is one (under the root, not through a
    /// link); a buffer that is none is left out (`None`), as the core
    /// never sees it.
    pub fn into_port(
        self,
        project: impl Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Option<FromEditor>, NotTaken> {
        let msg = match self.query(&project)? {
            Ok(query) => return Ok(Some(FromEditor::Query(query))),
            Err(msg) => *msg,
        };
        let msg = match msg.buffer(&project) {
            Ok(change) => return Ok(change.map(FromEditor::Command)),
            Err(msg) => *msg,
        };
        let msg = match msg.lifecycle(&project) {
            Ok(command) => return Ok(Some(FromEditor::Command(command))),
            Err(msg) => *msg,
        };
        let file = |abs: &str| project(abs).ok_or_else(|| NotTaken::NotInProject(abs.to_owned()));
        let command = match msg {
            ToCore::Shutdown => return Ok(Some(FromEditor::Shutdown)),
            ToCore::PermissionAnswer { id, allow } => Command::Answer {
                question: id,
                allow,
            },
            ToCore::CheckLlm => Command::CheckLlm,
            ToCore::SetModel { model } => Command::SetModel { model },
            ToCore::RemoraEnable { confirmed } => Command::RemoraEnable { confirmed },
            ToCore::NodeChat { node_id, message } => Command::NodeChat {
                node: node_id,
                message,
            },
            ToCore::NodeNew {
                file: abs,
                line,
                kind,
                name,
                description,
            } => Command::NodeNew {
                file: file(&abs)?,
                line,
                kind,
                name,
                description,
            },
            ToCore::Chat {
                id,
                message,
                file: abs,
                cursor_line,
                context,
            } => Command::Chat {
                id,
                message,
                file: abs.and_then(|f| project(&f)),
                cursor_line,
                context,
            },
            ToCore::ChatClear => Command::ChatClear,
            // Each is taken by `query`, `buffer` or `lifecycle` above.
            other => return Err(NotTaken::Unknown(format!("{other:?}"))),
        };
        Ok(Some(FromEditor::Command(command)))
    }

    /// The editor's questions, or the message back.
    fn query(
        self,
        project: &impl Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Result<Query, Box<ToCore>>, NotTaken> {
        Ok(Ok(match self {
            ToCore::History => Query::Snapshots,
            ToCore::Effects { since, kind } => Query::Effects { since, kind },
            ToCore::Calls { agent_id } => Query::Calls {
                agent: agent_id,
                since: 0,
            },
            ToCore::NodeHistory { node_id } => Query::NodeHistory {
                node: node_id,
                since: 0,
            },
            ToCore::ChatHistory => Query::ChatHistory,
            ToCore::ConflictMarkers { id, path, text } => Query::ConflictMarkers {
                id,
                path: project(&path).ok_or(NotTaken::NotInProject(path))?,
                text,
            },
            other => return Ok(Err(Box::new(other))),
        }))
    }

    /// What the human did to a buffer (`None`: a buffer outside the
    /// project), or the message back.
    fn buffer(
        self,
        project: &impl Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Option<Command>, Box<ToCore>> {
        let change = match self {
            ToCore::BufferText(b) => {
                project(&b.path).map(|path| BufferChange::Text(Buffer { path, text: b.text }))
            }
            ToCore::BufferClosed { path } => project(&path).map(BufferChange::Closed),
            ToCore::BufferMoved {
                id,
                path,
                base,
                wanted,
                now,
            } => project(&path).map(|path| BufferChange::Moved {
                id,
                path,
                base,
                wanted,
                now,
            }),
            other => return Err(Box::new(other)),
        };
        Ok(change.map(Command::Buffer))
    }

    /// The steps of an agent's life and of the project's history, or the
    /// message back.
    fn lifecycle(
        self,
        project: &impl Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Command, Box<ToCore>> {
        let buffers = |list: Vec<BufferText>| -> Vec<Buffer> {
            let known = list.into_iter().filter_map(|b| {
                Some(Buffer {
                    path: project(&b.path)?,
                    text: b.text,
                })
            });
            known.collect()
        };
        Ok(match self {
            ToCore::Spawn { id, mut spec } => {
                spec.file = spec.file.and_then(|f| project(&f)).map(|p| p.to_string());
                Command::Spawn { id, spec }
            }
            ToCore::Accept {
                id,
                buffers: list,
                hunk,
                write,
            } => Command::Accept {
                id,
                buffers: buffers(list),
                hunk,
                write,
            },
            ToCore::AcceptUndone { id, undone } => Command::AcceptUndone { id, undone },
            ToCore::RejectHunk { id, hunk } => Command::RejectHunk { id, hunk },
            ToCore::Reject { id, feedback } => Command::Reject { id, feedback },
            ToCore::Cancel { id } => Command::Cancel { id },
            ToCore::Snapshot { id, message } => Command::Snapshot { id, message },
            ToCore::Rollback {
                id,
                dry_run,
                buffers: list,
            } => Command::Rollback {
                id,
                dry_run,
                buffers: buffers(list),
            },
            ToCore::Branch { name, snapshot } => Command::Branch { name, snapshot },
            ToCore::Fork { id, snapshot, task } => Command::Fork { id, snapshot, task },
            other => return Err(Box::new(other)),
        })
    }
}

impl ToEditor {
    /// What the core said, in Neovim's words: paths absolute under `root`;
    /// `None` for what Neovim is never told.
    pub fn heard(said: Said, root: &Path) -> Option<ToEditor> {
        match said {
            Said::Event(event) => Some(ToEditor::of(event, root)),
            Said::Asked(asked) => ToEditor::directed(asked, root),
        }
    }

    /// What the core asks of the editor, in its words: paths absolute
    /// under `root`; `None` for an answer to what the editor never asks.
    pub fn directed(asked: ForEditor, root: &Path) -> Option<ToEditor> {
        let abs = |path: &str| root.join(path).to_string_lossy().into_owned();
        Some(match asked {
            ForEditor::EditBuffer {
                id,
                path,
                start,
                end,
                lines,
                expect,
                write,
            } => ToEditor::EditBuffer {
                id,
                path: abs(&path),
                start,
                end,
                lines,
                expect,
                write,
            },
            ForEditor::InjectIds { path, edits } => ToEditor::InjectIds {
                path: abs(&path),
                edits,
            },
            ForEditor::RemoraConfirm { files, nodes } => ToEditor::RemoraConfirm { files, nodes },
            ForEditor::GhostNode {
                agent_id,
                path,
                line,
                label,
                indent,
            } => ToEditor::GhostNode {
                agent_id,
                path: abs(&path),
                line,
                label,
                indent,
            },
            ForEditor::LlmStatus(health) => ToEditor::LlmStatus(health),
            ForEditor::Notice { level, message } => ToEditor::Notify { level, message },
            ForEditor::Answer { query, answer } => return ToEditor::answer(query, answer, root),
        })
    }

    /// What the editor is told in answer to `query`, its paths absolute
    /// under `root`; `None` for what the editor never asks.
    pub fn answer(query: Query, answer: Result<Reply, Refusal>, root: &Path) -> Option<ToEditor> {
        let said = match (query, answer) {
            (Query::ConflictMarkers { id, path, .. }, answer) => {
                let (marked, error) = match answer {
                    Ok(Reply::Marked(marked)) => (marked, None),
                    Ok(_) => return None,
                    Err(r) => (None, Some(format!("Chimera: {}", r.message))),
                };
                ToEditor::ConflictMarkers {
                    id,
                    path: root.join(path.as_str()).to_string_lossy().into_owned(),
                    marked,
                    error,
                }
            }
            (_, Err(r)) => ToEditor::Notify {
                level: Level::Warn,
                message: format!("Chimera: {}", r.message),
            },
            (_, Ok(Reply::Snapshots(snapshots))) => ToEditor::Snapshots { snapshots },
            (_, Ok(Reply::Effects(effects))) => ToEditor::Effects { effects },
            (Query::Calls { agent, .. }, Ok(Reply::Calls(calls))) => ToEditor::Calls {
                agent_id: agent,
                calls,
            },
            (Query::NodeHistory { node, .. }, Ok(Reply::NodeHistory(events))) => {
                ToEditor::NodeHistory {
                    node_id: node,
                    events,
                }
            }
            (_, Ok(Reply::ChatHistory(entries))) => ToEditor::ChatHistory { entries },
            _ => return None,
        };
        Some(said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskSpec;

    fn project(abs: &str) -> Option<ProjectPath> {
        ProjectPath::from_absolute(Path::new("/p"), Path::new(abs))
    }

    #[test]
    fn the_editors_absolute_paths_enter_the_core_as_project_paths_once() {
        let spawn = ToCore::Spawn {
            id: "a".into(),
            spec: TaskSpec {
                file: Some("/p/src/app.py".into()),
                ..TaskSpec::new("t")
            },
        };
        match spawn.into_port(project) {
            Ok(Some(FromEditor::Command(Command::Spawn { spec, .. }))) => {
                assert_eq!(spec.file.as_deref(), Some("src/app.py"))
            }
            other => panic!("{other:?}"),
        }
        // Buffers outside the project are none of the core's business.
        let accept = ToCore::Accept {
            id: "a".into(),
            buffers: vec![
                BufferText {
                    path: "/p/a.py".into(),
                    text: "x".into(),
                },
                BufferText {
                    path: "/elsewhere/b.py".into(),
                    text: "y".into(),
                },
            ],
            hunk: None,
            write: false,
        };
        match accept.into_port(project) {
            Ok(Some(FromEditor::Command(Command::Accept { buffers, .. }))) => {
                let paths: Vec<&str> = buffers.iter().map(|b| b.path.as_str()).collect();
                assert_eq!(paths, ["a.py"]);
            }
            other => panic!("{other:?}"),
        }
        let closed = ToCore::BufferClosed {
            path: "/elsewhere/b.py".into(),
        };
        assert!(matches!(closed.into_port(project), Ok(None)));
        // A request about a file outside is said, not dropped.
        let node = ToCore::NodeNew {
            file: "/elsewhere/b.py".into(),
            line: 1,
            kind: "function".into(),
            name: "f".into(),
            description: String::new(),
        };
        let said = node.into_port(project).unwrap_err().to_string();
        assert!(
            said.contains("/elsewhere/b.py is not a file of the project"),
            "{said}"
        );
        // Queries come back in the editor's words.
        let marked = ToEditor::answer(
            Query::ConflictMarkers {
                id: "a".into(),
                path: ProjectPath::parse("a.py").unwrap(),
                text: String::new(),
            },
            Err(Refusal::new(
                crate::port::RefusalKind::NotFound,
                "no agent a",
            )),
            Path::new("/p"),
        );
        match marked {
            Some(ToEditor::ConflictMarkers { path, error, .. }) => {
                assert_eq!(path, "/p/a.py");
                assert_eq!(error.as_deref(), Some("Chimera: no agent a"));
            }
            other => panic!("{other:?}"),
        }
    }
}
