//! The agent's host as the file tools' host — its files are its
//! workspace, a path is the file a small model meant, a write is noted
//! for `submit_result` — and its calls run by their row of the tool
//! table.

use super::{AgentHost, HostError, Value, Workspace};
use crate::agent::meant::{meant, of_absolute, Meant, PathNote};
use crate::agent::tools::files::{Args, FileHost, ToolError};
use crate::agent::tools::table::{self, Runs};
use crate::paths::ProjectPath;
use crate::workspace::ReadFrom;

impl FileHost for AgentHost {
    fn files(&mut self) -> (Workspace<'_>, &mut ReadFrom) {
        // The fields apart: the workspace borrows, `read` is noted.
        let ws = Workspace::new(&self.store, &self.agent_id, &self.caps, self.max_bytes);
        (ws, &mut self.read)
    }

    fn path(&mut self, tool: &'static str, raw: &str) -> Result<ProjectPath, ToolError> {
        Ok(self.meant_path(tool, raw)?)
    }

    fn wrote(&mut self, p: &ProjectPath) {
        self.written.push(p.to_string());
    }
}

impl AgentHost {
    /// Runs host function `name` by its row of the tool table: a file
    /// tool, or one of the agent's own.
    pub(super) fn table_call(
        &mut self,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Result<Value, HostError> {
        let Some(tool) = table::function(name) else {
            return Err(format!("unknown host function `{name}`").into());
        };
        let args = match Args::of_call(tool.name, tool.params, a, kw) {
            Ok(args) => args,
            Err(e) => return Err(self.said(e)),
        };
        let done = match tool.runs {
            Runs::Reads(run) | Runs::Writes(run) => run(self, &args),
            Runs::Agent(run) => run(self, &args),
            Runs::Node(_) | Runs::Host => Err(ToolError::Args(format!(
                "`{name}` is not a function of this agent"
            ))),
        };
        done.map(crate::sandbox::from_json)
            .map_err(|e| self.said(e))
    }

    /// A tool's failure as the program sees it (a refusal is logged by
    /// the host's `call`); refused for its code, why is kept for tool
    /// mode.
    fn said(&mut self, e: ToolError) -> HostError {
        let (said, why) = e.into_host();
        self.write_refused = why;
        said
    }

    /// The project path the model meant by `raw` in a call of `fname`
    /// ([`meant`]): a placeholder before a file's path is that file, said
    /// in `path_notes`; another folder before one is refused once with
    /// the file's name. Reached through no link, as every path.
    pub(crate) fn meant_path(&mut self, fname: &str, raw: &str) -> Result<ProjectPath, HostError> {
        let reading = fname == "read_file";
        let taken = {
            let ws = self.workspace();
            let visible = |p: &ProjectPath| {
                self.caps.may_see(p.as_str()) && ws.overlay().exists(p).unwrap_or(false)
            };
            let root = ws.overlay().root();
            match ProjectPath::parse(raw) {
                Ok(given) => {
                    let root_name = root.file_name().and_then(|n| n.to_str());
                    meant(&given, root_name, &self.task, visible)
                }
                Err(_) => match of_absolute(raw, root, &self.task, visible) {
                    Some(file) => Meant::File(file),
                    None => return ws.path(raw).map_err(|e| self.refused(fname, e)),
                },
            }
        };
        let file = match taken {
            Meant::File(file) => file,
            // Said once to a write: a new file of that path may be meant.
            Meant::Ask(file) if reading || self.asked_paths.insert(raw.trim().to_owned()) => {
                let again = match reading {
                    true => String::new(),
                    false => format!(
                        " To change that file, give the path `{file}`; to make a new file \
                         `{raw}`, make the same call again."
                    ),
                };
                return Err(HostError::Failed(format!(
                    "{fname}(): `{raw}` is not in the project; `{file}` is.{again}"
                )));
            }
            Meant::AsWritten | Meant::Ask(_) => {
                return self
                    .workspace()
                    .path(raw)
                    .map_err(|e| self.refused(fname, e))
            }
        };
        self.path_notes.push(PathNote {
            given: raw.to_owned(),
            file: file.to_string(),
            function: fname.to_owned(),
        });
        self.workspace()
            .path(file.as_str())
            .map_err(|e| self.refused(fname, e))
    }
}
