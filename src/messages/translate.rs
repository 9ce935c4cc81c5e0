//! The editor's messages in the port's words (absolute paths become project
//! paths, once, where they enter the core), and the port's replies in the
//! editor's.

use std::path::Path;

use super::{BufferText, Level, ToCore, ToEditor};
use crate::paths::ProjectPath;
use crate::port::{Buffer, BufferChange, Command, Query, Refusal, Reply};

/// An editor message as the core takes it.
#[derive(Debug)]
pub enum Entering {
    Command(Command),
    Query(Query),
    /// About a buffer outside the project: not the ground truth of
    /// anything the core has.
    Outside,
    /// Neovim is quitting.
    Shutdown,
}

impl ToCore {
    /// This message in the port's words. `project` names the project file
    /// an absolute path is, if it is one (under the root, not through a
    /// link); a buffer that is none is left out, as the core never sees it.
    /// `Err`: what to tell the human (a request about a file outside the
    /// project).
    pub fn into_port(
        self,
        project: impl Fn(&str) -> Option<ProjectPath>,
    ) -> Result<Entering, String> {
        let buffers = |list: Vec<BufferText>| -> Vec<Buffer> {
            list.into_iter()
                .filter_map(|b| {
                    Some(Buffer {
                        path: project(&b.path)?,
                        text: b.text,
                    })
                })
                .collect()
        };
        let file = |abs: &str| {
            project(abs).ok_or_else(|| format!("Chimera: {abs} is not a file of the project"))
        };
        let command = match self {
            ToCore::Shutdown => return Ok(Entering::Shutdown),
            ToCore::History => return Ok(Entering::Query(Query::Snapshots)),
            ToCore::Effects { since, kind } => {
                return Ok(Entering::Query(Query::Effects { since, kind }))
            }
            ToCore::Calls { agent_id } => {
                return Ok(Entering::Query(Query::Calls {
                    agent: agent_id,
                    since: 0,
                }))
            }
            ToCore::NodeHistory { node_id } => {
                return Ok(Entering::Query(Query::NodeHistory {
                    node: node_id,
                    since: 0,
                }))
            }
            ToCore::ChatHistory => return Ok(Entering::Query(Query::ChatHistory)),
            ToCore::ConflictMarkers { id, path, text } => {
                return Ok(Entering::Query(Query::ConflictMarkers {
                    id,
                    path: file(&path)?,
                    text,
                }))
            }
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
            ToCore::PermissionAnswer { id, allow } => Command::Answer {
                question: id,
                allow,
            },
            ToCore::BufferText(b) => match project(&b.path) {
                Some(path) => Command::Buffer(BufferChange::Text(Buffer { path, text: b.text })),
                None => return Ok(Entering::Outside),
            },
            ToCore::BufferClosed { path } => match project(&path) {
                Some(path) => Command::Buffer(BufferChange::Closed(path)),
                None => return Ok(Entering::Outside),
            },
            ToCore::BufferMoved {
                id,
                path,
                base,
                wanted,
                now,
            } => match project(&path) {
                Some(path) => Command::Buffer(BufferChange::Moved {
                    id,
                    path,
                    base,
                    wanted,
                    now,
                }),
                None => return Ok(Entering::Outside),
            },
            ToCore::CheckLlm => Command::CheckLlm,
            ToCore::SetModel { model } => Command::SetModel { model },
            ToCore::RemoraEnable { confirmed } => Command::RemoraEnable { confirmed },
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
        };
        Ok(Entering::Command(command))
    }
}

impl ToEditor {
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
            Ok(Entering::Command(Command::Spawn { spec, .. })) => {
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
            Ok(Entering::Command(Command::Accept { buffers, .. })) => {
                let paths: Vec<&str> = buffers.iter().map(|b| b.path.as_str()).collect();
                assert_eq!(paths, ["a.py"]);
            }
            other => panic!("{other:?}"),
        }
        let closed = ToCore::BufferClosed {
            path: "/elsewhere/b.py".into(),
        };
        assert!(matches!(closed.into_port(project), Ok(Entering::Outside)));
        // A request about a file outside is said, not dropped.
        let node = ToCore::NodeNew {
            file: "/elsewhere/b.py".into(),
            line: 1,
            kind: "function".into(),
            name: "f".into(),
            description: String::new(),
        };
        let said = node.into_port(project).unwrap_err();
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
