//! What `:checkhealth chimera` asks the core that no core need be running
//! for: whether and how processes are confined here, where an ACP agent's
//! network reaches, where the project's tests run and how they go as the
//! project is now.

use std::path::Path;

use nvim_oxi::mlua::{self, Lua};

/// can_confine() -> whether the kernel confines ACP agents here
/// (Landlock), for :checkhealth.
pub(super) fn can_confine(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| Ok(crate::confine::available()))
}

/// confinement() -> how the launcher confines processes on this machine,
/// in words (:checkhealth).
pub(super) fn confinement(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| Ok(crate::launch::describe()))
}

/// agent_network(name, agent_json) -> the `host:port` an ACP agent's
/// network may reach, or nil and why its options name none (:checkhealth).
pub(super) fn agent_network(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (name, json): (String, String)| {
        let spec: crate::config::ExternalAgent = match serde_json::from_str(&json) {
            Ok(s) => s,
            Err(e) => return Ok((None, Some(e.to_string()))),
        };
        Ok(match crate::acp::network_of(&name, &spec) {
            Ok(t) => (
                Some(t.iter().map(|t| t.to_string()).collect::<Vec<_>>()),
                None,
            ),
            Err(e) => (None, Some(e.to_string())),
        })
    })
}

/// tests_environment(root) -> where "auto" runs the project's tests:
/// { runner, program, found } (:checkhealth).
pub(super) fn tests_environment(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, root: String| {
        let auto = crate::agent::checks::Auto::of(Path::new(&root), None);
        let t = lua.create_table()?;
        t.set("runner", auto.runner().map(|r| r.to_string()))?;
        t.set("program", auto.env.program.display().to_string())?;
        t.set("found", auto.env.found.clone())?;
        t.set("describe", auto.describe())?;
        Ok(t)
    })
}

/// project_rules(root, config_json, near) -> the rules files Chimera's
/// agents read for project path `near` (nil: the root's): a list of
/// { path, chars, cut } (:checkhealth). A secret file is never listed.
pub(super) fn project_rules(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(
        |lua, (root, json, near): (String, String, Option<String>)| {
            let config = crate::config::Config::from_json(&json).map_err(|e| {
                mlua::Error::external(format!("Chimera: invalid configuration: {e}"))
            })?;
            let secrets = crate::capabilities::Secrets::new(&config.capabilities.secrets)
                .map_err(|e| mlua::Error::external(format!("Chimera: {e}")))?;
            let read = |path: &str| {
                if secrets.is_match(path) {
                    return None;
                }
                let file = Path::new(&root).join(path);
                // The project's own files only: not a link leading elsewhere.
                let meta = std::fs::symlink_metadata(&file).ok()?;
                (meta.is_file() && meta.len() < 1 << 20)
                    .then(|| std::fs::read_to_string(&file).ok())
                    .flatten()
            };
            let out = lua.create_table()?;
            for (i, f) in crate::rules::find(near.as_deref(), read)
                .into_iter()
                .enumerate()
            {
                let t = lua.create_table()?;
                t.set("path", f.path)?;
                t.set("chars", f.shown.chars().count())?;
                t.set("cut", f.cut)?;
                out.set(i + 1, t)?;
            }
            Ok(out)
        },
    )
}

/// How long `:checkhealth` runs the project's tests at most.
const HEALTH_TESTS_SECS: u64 = 30;

/// tests_now(root, config_json) -> how the project's tests go as it is
/// now, in words, and "ok", "warn" or "info" (:checkhealth runs them
/// once, confined, within tests.timeout_ms and at most 30 s).
pub(super) fn tests_now(lua: &Lua) -> mlua::Result<mlua::Function> {
    use crate::agent::baseline::Baseline;
    lua.create_function(|_, (root, json): (String, String)| {
        let config = crate::config::Config::from_json(&json)
            .map_err(|e| mlua::Error::external(format!("Chimera: invalid configuration: {e}")))?;
        // Neovim waits on it: a long suite is stopped early.
        let cap = Some(std::time::Duration::from_secs(HEALTH_TESTS_SECS));
        let now = crate::agent::baseline::run(Path::new(&root), &config, cap, &|| false);
        let level = match &now {
            Baseline::Passing(_) => "ok",
            Baseline::Failing { .. } | Baseline::CannotRun(_) => "warn",
            Baseline::Off | Baseline::NoTests(_) | Baseline::Unfinished(_) => "info",
        };
        Ok((now.to_string(), level))
    })
}
