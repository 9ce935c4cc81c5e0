//! The host functions on the project's files — read, write, delete,
//! list, search, replace definitions — each through the agent's
//! [`Workspace`].

use super::{args, search, AgentHost, HostError, Value, Workspace, WriteRefused, STAYS_AS_IT_WAS};
use crate::agent::meant::{meant, of_absolute, Meant, PathNote};
use crate::agent::tools::table::{touches, Touches};
use crate::paths::{parse_dir, ProjectPath};

impl AgentHost {
    /// Runs file function `name`; `None` when `name` is not one.
    pub(super) fn file_call(
        &mut self,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Option<Result<Value, HostError>> {
        if touches(name, Touches::Writes) {
            Some(self.write_function(name, a, kw))
        } else if touches(name, Touches::Files) {
            Some(self.read_function(name, a, kw))
        } else {
            None
        }
    }

    /// What the agent may see of its files.
    fn read_function(
        &mut self,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Result<Value, HostError> {
        match name {
            "read_file" => {
                let raw = args::string(name, a, kw, 0, "path")?;
                let p = self.meant_path(name, &raw)?;
                // The fields apart: the workspace borrows, `read` is noted.
                let ws = Workspace::new(&self.store, &self.agent_id, &self.caps, self.max_bytes);
                let text = ws.read_noted(&p, &mut self.read);
                text.map(Value::String).map_err(|e| self.refused(name, e))
            }
            "list_dir" => {
                let raw = args::opt_string(name, a, kw, 0, "path")?.unwrap_or_default();
                let dir =
                    parse_dir(&raw).map_err(|e| HostError::Failed(format!("list_dir(): {e}")))?;
                let entries = self.workspace().list_dir(&dir).map_err(HostError::failed)?;
                Ok(Value::List(
                    entries.into_iter().map(Value::String).collect(),
                ))
            }
            "file_exists" => {
                let p = Self::path(name, a, kw)?;
                let exists = self.workspace().exists(&p).map_err(HostError::failed)?;
                Ok(Value::Bool(exists))
            }
            "search_files" => {
                let pattern = args::string(name, a, kw, 0, "pattern")?;
                Ok(Value::List(
                    search(&self.workspace(), &pattern)?
                        .into_iter()
                        .map(Value::String)
                        .collect(),
                ))
            }
            "get_file_tree" => {
                let files = self.workspace().files().map_err(HostError::failed)?;
                Ok(Value::String(files.join("\n")))
            }
            other => Err(format!("`{other}` is not a file function").into()),
        }
    }

    /// Changes to the agent's files, into its overlay.
    fn write_function(
        &mut self,
        name: &str,
        a: &[Value],
        kw: &[(Value, Value)],
    ) -> Result<Value, HostError> {
        match name {
            "write_file" => {
                let raw = args::string(name, a, kw, 0, "path")?;
                let content = args::string(name, a, kw, 1, "content")?;
                let p = self.meant_path(name, &raw)?;
                self.workspace()
                    .write_read(&p, content.as_bytes(), &self.read)
                    .map_err(|e| self.refused(name, e))?;
                self.written.push(p.to_string());
                Ok(Value::Bool(true))
            }
            "delete_file" => {
                let raw = args::string(name, a, kw, 0, "path")?;
                let ws = self.workspace();
                let p = ws
                    .path(&raw)
                    .and_then(|p| ws.delete(&p).map(|()| p))
                    .map_err(|e| self.refused(name, e))?;
                self.written.push(p.to_string());
                Ok(Value::Bool(true))
            }
            "write_definitions" => {
                let raw = args::string(name, a, kw, 0, "path")?;
                let code = args::string(name, a, kw, 1, "code")?;
                self.write_definitions(&raw, &code).map_err(|(e, why)| {
                    self.write_refused = why;
                    e
                })
            }
            other => Err(format!("`{other}` is not a file function").into()),
        }
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

    /// `write_definitions(path, code)`; refused for its code, it says why
    /// as well.
    fn write_definitions(
        &mut self,
        raw: &str,
        code: &str,
    ) -> Result<Value, (HostError, Option<WriteRefused>)> {
        let failed =
            |e: &dyn std::fmt::Display| HostError::Failed(format!("write_definitions(): {e}"));
        let p = self
            .meant_path("write_definitions", raw)
            .map_err(|e| (e, None))?;
        let ws = self.workspace();
        ws.may_write(&p)
            .map_err(|e| (self.refused("write_definitions", e), None))?;
        let old = ws.read_text(&p).map_err(|e| (failed(&e), None))?;
        let language = crate::lang::of_file(p.as_str());
        let new =
            crate::lang::splice::splice_definitions(language, &old, code, None).map_err(|e| {
                let why = matches!(e, crate::lang::splice::SpliceError::Syntax(_))
                    .then_some(WriteRefused::Unparsable);
                (failed(&e), why)
            })?;
        // Said now, not at submit_result: small models otherwise write the
        // file back as it was and submit it again and again.
        if new == old {
            let e = format!(
                "write_definitions(): `{p}` {STAYS_AS_IT_WAS}. Write the new version of the function you change, with the change made."
            );
            return Err((e.into(), Some(WriteRefused::Unchanged)));
        }
        if let Some(problem) = crate::lang::syntax_problem(language, &new) {
            let e = format!("write_definitions(): the result does not parse.\n{problem}");
            return Err((e.into(), Some(WriteRefused::Unparsable)));
        }
        ws.write(&p, new.as_bytes())
            .map_err(|e| (failed(&e), None))?;
        self.written.push(p.to_string());
        Ok(Value::Bool(true))
    }
}
