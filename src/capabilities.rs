//! What an agent may do (seed 004): which files it may read, which it may
//! write (into its overlay), which commands it may run, which hosts and MCP
//! tools it may reach. Presets: `readonly`, `sandbox` (the default: read
//! the project, write the overlay, nothing else) and `developer` (plus the
//! configured commands). Files matching secret patterns are neither
//! readable nor writable unless the configuration says otherwise.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// The `capabilities` section of the configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CapabilitiesConfig {
    /// `readonly`, `sandbox` or `developer`.
    pub preset: String,
    /// Globs of project paths agents may read.
    pub read: Vec<String>,
    /// Globs of project paths agents may write (into their overlay).
    pub write: Vec<String>,
    /// Commands a `developer` agent may run (the program name, e.g. `pytest`).
    pub commands: Vec<String>,
    /// Hosts agents may reach.
    pub hosts: Vec<String>,
    /// MCP tools agents may call (`server.tool`, globs allowed).
    pub mcp: Vec<String>,
    /// Environment variables agents may read (`env()`, `os.getenv`,
    /// `os.environ`), by name; globs allowed. None by default.
    pub env: Vec<String>,
    /// Files no agent may read or write, matched on the name and the path.
    pub secrets: Vec<String>,
    /// An ACP agent's permission request the preset would refuse is asked
    /// of the human instead (whoever is there: Neovim, a client of the
    /// feed, a `chimera task`'s terminal; with nobody, still refused).
    pub ask: bool,
    /// Whether an agent may checkpoint its own overlay (`snapshot()`);
    /// `None`: the preset says (only `developer`).
    pub snapshot: Option<bool>,
    /// Whether an agent may bring its overlay back to a checkpoint
    /// (`rollback()`); `None`: the preset says (only `developer`).
    pub rollback: Option<bool>,
}

impl Default for CapabilitiesConfig {
    fn default() -> Self {
        Self {
            preset: "sandbox".into(),
            read: vec!["**".into()],
            write: vec!["**".into()],
            commands: vec![],
            hosts: vec![],
            mcp: vec![],
            env: vec![],
            secrets: vec![
                ".env*".into(),
                "*.pem".into(),
                "*.key".into(),
                "id_*".into(),
                "*.p12".into(),
                ".netrc".into(),
            ],
            ask: false,
            snapshot: None,
            rollback: None,
        }
    }
}

/// Why a file may not go to the model as a reference (`@file`,
/// `#buffer`); said to the human.
#[derive(Debug, thiserror::Error)]
pub enum NotShared {
    #[error(transparent)]
    Path(#[from] crate::paths::PathError),
    #[error("a secret (capabilities.secrets): not sent")]
    Secret,
    #[error(transparent)]
    Denied(#[from] Denied),
    #[error(transparent)]
    Disk(#[from] crate::rootfs::DiskError),
    #[error("`{0}` is not a file of the project")]
    Missing(String),
    #[error("`{0}` is not text")]
    NotText(String),
    #[error("{0} is not a file of the project (outside it, or in .git or .chimera): not sent")]
    Outside(String),
}

/// Why a call was refused; the text is what the agent reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("denied by the agent's capabilities ({preset}): {what}")]
pub struct Denied {
    pub preset: String,
    pub what: String,
}

/// A bad `capabilities` configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilitiesError {
    #[error("capabilities.preset must be \"readonly\", \"sandbox\" or \"developer\", not {0:?}")]
    Preset(String),
    #[error("capabilities: bad glob {0:?}: {1}")]
    Glob(String, String),
}

/// The files `capabilities.secrets` names: no agent reads or writes them,
/// no reference sends them, and the store never keeps their content.
#[derive(Debug, Clone)]
pub struct Secrets {
    set: GlobSet,
    /// The patterns, one per line: what a store checked its contents
    /// against last.
    patterns: String,
}

impl Secrets {
    pub fn new(patterns: &[String]) -> Result<Self, CapabilitiesError> {
        let mut set = GlobSetBuilder::new();
        for p in patterns {
            // A secret pattern matches a name anywhere in the tree, in any
            // case: `.ENV` and `ID_RSA` are as secret as `.env` and `id_rsa`
            // (and are the same file on a case-insensitive disk).
            for pattern in [p.clone(), format!("**/{p}")] {
                set.add(
                    GlobBuilder::new(&pattern)
                        .case_insensitive(true)
                        .build()
                        .map_err(|e| CapabilitiesError::Glob(p.clone(), e.to_string()))?,
                );
            }
        }
        set.build()
            .map(|set| Self {
                set,
                patterns: patterns.join("\n"),
            })
            .map_err(|e| CapabilitiesError::Glob(patterns.join(", "), e.to_string()))
    }

    /// Whether `path` (a project path) is a secret.
    pub fn is_match(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    /// The patterns, one per line.
    pub fn patterns(&self) -> &str {
        &self.patterns
    }
}

impl Default for Secrets {
    /// The default `capabilities.secrets`.
    fn default() -> Self {
        // The default patterns are known-good globs.
        Self::new(&CapabilitiesConfig::default().secrets).unwrap_or_else(|_| Self {
            set: GlobSet::empty(),
            patterns: String::new(),
        })
    }
}

/// The rules one agent runs under.
#[derive(Debug, Clone)]
pub struct Capabilities {
    pub preset: String,
    read: GlobSet,
    write: Option<GlobSet>,
    secrets: Secrets,
    commands: Vec<String>,
    hosts: Vec<String>,
    mcp: GlobSet,
    mcp_patterns: Vec<String>,
    env: GlobSet,
    snapshot: bool,
    rollback: bool,
    /// The project root, when writes are checked against the disk too.
    root: Option<std::path::PathBuf>,
    /// Files the human allowed this agent to write when asked
    /// (`capabilities.ask`), whatever the preset says.
    asked_writes: Vec<String>,
}

fn globs(patterns: &[String]) -> Result<GlobSet, CapabilitiesError> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let g = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| CapabilitiesError::Glob(p.clone(), e.to_string()))?;
        b.add(g);
    }
    b.build()
        .map_err(|e| CapabilitiesError::Glob(patterns.join(", "), e.to_string()))
}

impl Capabilities {
    /// The rules of `preset` (default: the configured one) under `config`.
    pub fn new(
        config: &CapabilitiesConfig,
        preset: Option<&str>,
    ) -> Result<Self, CapabilitiesError> {
        let preset = preset.unwrap_or(&config.preset).to_owned();
        let (write, commands) = match preset.as_str() {
            "readonly" => (None, vec![]),
            "sandbox" => (Some(globs(&config.write)?), vec![]),
            "developer" => (Some(globs(&config.write)?), config.commands.clone()),
            other => return Err(CapabilitiesError::Preset(other.to_owned())),
        };
        Ok(Self {
            read: globs(&config.read)?,
            write,
            secrets: Secrets::new(&config.secrets)?,
            commands,
            hosts: config.hosts.clone(),
            mcp: globs(&config.mcp)?,
            mcp_patterns: config.mcp.clone(),
            env: globs(&config.env)?,
            // As seed 004's presets: sandbox gives what an edit needs,
            // developer what an experiment needs.
            snapshot: config.snapshot.unwrap_or(preset == "developer"),
            rollback: config.rollback.unwrap_or(preset == "developer"),
            preset,
            root: None,
            asked_writes: Vec::new(),
        })
    }

    /// These rules for the project at `root`: a write whose path goes
    /// through a symbolic link there is refused, since an accept could
    /// never land it inside the project.
    pub fn on_disk(mut self, root: std::path::PathBuf) -> Self {
        self.root = Some(root);
        self
    }

    /// `Ok` when `allowed`, else refused with what `what` says.
    fn allow(&self, allowed: bool, what: impl FnOnce() -> String) -> Result<(), Denied> {
        if allowed {
            Ok(())
        } else {
            Err(self.deny(what()))
        }
    }

    fn deny(&self, what: String) -> Denied {
        Denied {
            preset: self.preset.clone(),
            what,
        }
    }

    /// Whether `path` (a checked project path) is a secret.
    pub fn is_secret(&self, path: &str) -> bool {
        self.secrets.is_match(path)
    }

    /// Whether the agent may know that `path` exists: files it may not
    /// read are left out of listings, trees, searches and checkouts.
    pub fn may_see(&self, path: &str) -> bool {
        self.check_read(path).is_ok()
    }

    /// The text of project file `rel` as a chat reference (`@file`) sends
    /// it to the model: a project path (no `..`, not absolute), reached
    /// through no link, readable here (never a secret), at most `limit`
    /// bytes of text. Else why not, in words.
    pub fn read_to_share(
        &self,
        root: &std::path::Path,
        rel: &str,
        limit: u64,
    ) -> Result<String, NotShared> {
        let p = crate::paths::ProjectPath::parse(rel)?;
        self.check_share(root, &p)?;
        let data = crate::rootfs::read(root, &p, limit)?
            .ok_or_else(|| NotShared::Missing(p.to_string()))?;
        String::from_utf8(data).map_err(|_| NotShared::NotText(p.to_string()))
    }

    /// Whether project file `p` may go to the model as a reference:
    /// readable here, never a secret, reached through no link.
    fn check_share(
        &self,
        root: &std::path::Path,
        p: &crate::paths::ProjectPath,
    ) -> Result<(), NotShared> {
        if self.is_secret(p.as_str()) {
            return Err(NotShared::Secret);
        }
        self.check_read(p.as_str())?;
        Ok(crate::rootfs::check_no_links(root, p)?)
    }

    /// Whether the file a buffer shows (`abs`, its name) may go to the
    /// model as `#buffer` or `#selection`: the rules of
    /// [`Capabilities::read_to_share`], and a file of the project.
    pub fn may_share_buffer(&self, root: &std::path::Path, abs: &str) -> Result<(), NotShared> {
        let abs = std::path::Path::new(abs);
        // The folder is resolved (a project reached through a linked
        // folder is still the project); the file itself is not, so a
        // link is seen for what it is.
        let real = abs
            .parent()
            .and_then(|d| d.canonicalize().ok())
            .zip(abs.file_name())
            .map(|(d, name)| d.join(name));
        let p = real
            .as_deref()
            .and_then(|real| crate::paths::ProjectPath::from_absolute(root, real))
            .ok_or_else(|| NotShared::Outside(abs.display().to_string()))?;
        self.check_share(root, &p)
    }

    pub fn check_read(&self, path: &str) -> Result<(), Denied> {
        if self.is_secret(path) {
            return Err(self.deny(format!(
                "`{path}` matches a secret pattern (capabilities.secrets) and cannot be read"
            )));
        }
        if !self.read.is_match(path) {
            return Err(self.deny(format!(
                "`{path}` is outside the readable files (capabilities.read)"
            )));
        }
        Ok(())
    }

    pub fn check_write(&self, path: &str) -> Result<(), Denied> {
        if self.asked_writes.iter().any(|w| w == path) {
            return self.check_any_write(path);
        }
        let Some(write) = &self.write else {
            return Err(self.deny(format!("this agent may not write files (`{path}`)")));
        };
        if !self.is_secret(path) && !write.is_match(path) {
            return Err(self.deny(format!(
                "`{path}` is outside the writable files (capabilities.write)"
            )));
        }
        self.check_any_write(path)
    }

    /// What holds for every write, one the human allowed too: no secret
    /// is written, no link followed.
    fn check_any_write(&self, path: &str) -> Result<(), Denied> {
        if self.is_secret(path) {
            return Err(self.deny(format!(
                "`{path}` matches a secret pattern (capabilities.secrets) and cannot be written"
            )));
        }
        if let (Some(root), Ok(p)) = (&self.root, crate::paths::ProjectPath::parse(path)) {
            crate::rootfs::check_no_links(root, &p).map_err(|e| self.deny(e.to_string()))?;
        }
        Ok(())
    }

    /// These rules, with `path` writable too: the human allowed it when
    /// asked. A secret stays unwritable.
    pub fn allow_write(&mut self, path: &str) {
        if !self.asked_writes.iter().any(|w| w == path) {
            self.asked_writes.push(path.to_owned());
        }
    }

    /// Whether some file may be written (not under `readonly`).
    pub fn may_write_anything(&self) -> bool {
        self.write.is_some()
    }

    /// Whether some command may be run (`developer` with `commands`).
    pub fn may_run_anything(&self) -> bool {
        !self.commands.is_empty()
    }

    /// Whether some host may be reached (`capabilities.hosts`).
    pub fn may_reach_anything(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// A command is allowed when its program (the first word, without a
    /// path) is on the list; arguments are never given to a shell.
    pub fn check_command(&self, argv: &[String]) -> Result<(), Denied> {
        let program = argv.first().map(String::as_str).unwrap_or("");
        if program.is_empty()
            || program.contains('/')
            || !self.commands.iter().any(|c| c == program)
        {
            return Err(self.deny(format!(
                "running {program:?} is not allowed (allowed: {}; the developer preset allows capabilities.commands)",
                if self.commands.is_empty() { "none".to_owned() } else { self.commands.join(", ") }
            )));
        }
        Ok(())
    }

    /// A shell line is allowed when every program it runs is
    /// ([`check_command`](Self::check_command)), read from the line
    /// without running it; or when the shell itself is on the list.
    pub fn check_line(&self, line: &str) -> Result<(), Denied> {
        if self.commands.iter().any(|c| c == "sh") {
            return Ok(());
        }
        let programs = crate::shell_line::programs(line).map_err(|why| {
            self.deny(format!(
                "the shell line cannot be judged before it runs: {why} (allow \"sh\" in capabilities.commands to run any line, confined)"
            ))
        })?;
        for program in programs {
            self.check_command(&[program])?;
        }
        Ok(())
    }

    pub fn check_host(&self, host: &str) -> Result<(), Denied> {
        self.allow(self.hosts.iter().any(|h| h == host), || {
            format!("reaching {host:?} is not allowed (capabilities.hosts)")
        })
    }

    /// `host`, on `port` if given, may be reached when it is listed as
    /// `host` or as `host:port`.
    pub fn check_endpoint(&self, host: &str, port: Option<u16>) -> Result<(), Denied> {
        match port {
            Some(p) if self.check_host(&format!("{host}:{p}")).is_ok() => Ok(()),
            _ => self.check_host(host),
        }
    }

    /// Whether any tool of `server` may be allowed, so that servers no
    /// pattern can reach are never started.
    pub fn may_use_mcp_server(&self, server: &str) -> bool {
        self.mcp_patterns.iter().any(|p| {
            p.strip_prefix(server)
                .is_some_and(|rest| rest.starts_with('.'))
                || p.starts_with(['*', '?', '[', '{'])
        })
    }

    /// Reading environment variable `name` (`capabilities.env`).
    pub fn check_env(&self, name: &str) -> Result<(), Denied> {
        self.allow(self.env.is_match(name), || {
            format!("reading the environment variable {name:?} is not allowed (capabilities.env)")
        })
    }

    /// Whether some environment variable may be read.
    pub fn may_read_env(&self) -> bool {
        !self.env.is_empty()
    }

    /// `snapshot()`: checkpointing the agent's own overlay.
    pub fn check_snapshot(&self) -> Result<(), Denied> {
        self.allow(self.snapshot, || {
            "checkpoints are not allowed (capabilities.snapshot; on in the developer preset)".into()
        })
    }

    /// `rollback()`: bringing the agent's own overlay back to a checkpoint.
    pub fn check_rollback(&self) -> Result<(), Denied> {
        self.allow(self.rollback, || {
            "rolling back is not allowed (capabilities.rollback; on in the developer preset)".into()
        })
    }

    pub fn check_mcp(&self, tool: &str) -> Result<(), Denied> {
        self.allow(self.mcp.is_match(tool), || {
            format!("the MCP tool {tool:?} is not allowed (capabilities.mcp)")
        })
    }
}

#[cfg(test)]
mod tests;
