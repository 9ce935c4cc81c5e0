//! The functions of the `chimera_native` Lua module. Each converts its
//! arguments, sends one message to the core, and returns; none blocks on
//! I/O. Misuse is a Lua error whose message says what to do.

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nvim_oxi::mlua::{self, Lua, Table};

use super::messages::{BufferText, EffectsSince, ToCore};
use crate::config::Config;
use crate::diff::HunkRef;
use crate::paths;
use crate::runtime::{CoreHandle, Indexing};

use super::health;

/// Bytes of one file a chat reference (`@file`) sends at most.
const REFERENCE_LIMIT: u64 = 200 * 1024;

thread_local! {
    /// The running core. Only the main thread (where Lua runs) touches it.
    static CORE: RefCell<Option<CoreHandle>> = const { RefCell::new(None) };
}

fn with_core<T, E: std::fmt::Display>(
    f: impl FnOnce(&CoreHandle) -> Result<T, E>,
) -> mlua::Result<T> {
    CORE.with(|c| match c.borrow().as_ref() {
        Some(core) => f(core).map_err(|e| mlua::Error::external(e.to_string())),
        None => Err(mlua::Error::external(
            "Chimera is not started: call require('chimera').setup() first",
        )),
    })
}

/// Hands `msg` to the core ([`super::messages::hand`]).
fn send(msg: ToCore) -> mlua::Result<()> {
    with_core(|core| super::messages::hand(core, msg))
}

/// A hunk as Lua names it: a number (from 1, in file order) or a hunk's key.
fn hunk_ref(v: mlua::Value) -> mlua::Result<Option<HunkRef>> {
    let bad = || {
        mlua::Error::runtime(
            "chimera: a hunk is a number (counted from 1 in file order) or a hunk key",
        )
    };
    match v {
        mlua::Value::Nil => Ok(None),
        mlua::Value::Integer(n) => usize::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .map(|n| Some(HunkRef::Number(n)))
            .ok_or_else(bad),
        mlua::Value::Number(n) if n.fract() == 0.0 && (1.0..1e15).contains(&n) => {
            Ok(Some(HunkRef::Number(n as usize)))
        }
        mlua::Value::String(s) => Ok(Some(HunkRef::Key(s.to_str()?.to_owned()))),
        _ => Err(bad()),
    }
}

/// `{ {path = …, text = …}, … }` from Lua.
fn buffer_texts(buffers: Option<Table>) -> mlua::Result<Vec<BufferText>> {
    let mut texts = Vec::new();
    if let Some(buffers) = buffers {
        for pair in buffers.sequence_values::<Table>() {
            let b = pair?;
            texts.push(BufferText {
                path: b.get("path")?,
                text: b.get("text")?,
            });
        }
    }
    Ok(texts)
}

/// Runs a query on the Remora topology; `None` becomes `nil`.
fn with_remora<T: serde::Serialize>(
    lua: &Lua,
    f: impl FnOnce(&Path, &crate::remora::topology::Topology) -> Option<T>,
) -> mlua::Result<mlua::Value> {
    use mlua::LuaSerdeExt;
    let out = CORE.with(|c| {
        let core = c.borrow();
        let core = core.as_ref().ok_or_else(|| {
            mlua::Error::external("Chimera is not started: call require('chimera').setup() first")
        })?;
        let ix = core.remora.read();
        Ok::<_, mlua::Error>(f(&core.root, ix.topology()))
    })?;
    match out {
        Some(v) => lua.to_value_with(
            &v,
            mlua::SerializeOptions::new().serialize_none_to_null(false),
        ),
        None => Ok(mlua::Value::Nil),
    }
}

/// Who serves the project outside Neovim (`served()`).
#[derive(serde::Serialize)]
struct Served {
    socket: std::path::PathBuf,
    pid: Option<u32>,
    own: bool,
    api: Option<serde_json::Value>,
}

/// `path` (absolute, or relative to the working directory) as a project path.
fn relative(root: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(p)
    };
    let rel = abs.strip_prefix(root).ok()?;
    Some(rel.to_string_lossy().replace('\\', "/"))
}

fn stop_core() {
    super::bridge::retire();
    if let Some(core) = CORE.with(|c| c.borrow_mut().take()) {
        core.shutdown(Duration::from_millis(500));
    }
}

pub fn build(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for (name, make) in EXPORTS {
        t.set(*name, make(lua)?)?;
    }
    Ok(t)
}

/// How one export is made.
type Export = fn(&Lua) -> mlua::Result<mlua::Function>;

/// Every function of the `chimera_native` module, by its Lua name.
const EXPORTS: &[(&str, Export)] = &[
    ("version", version),
    ("commit", commit),
    ("languages", languages),
    ("edit_form", edit_form),
    ("start", start),
    ("read_reference", read_reference),
    ("may_share_buffer", may_share_buffer),
    ("can_confine", health::can_confine),
    ("confinement", health::confinement),
    ("tests_environment", health::tests_environment),
    ("tests_now", health::tests_now),
    ("project_rules", health::project_rules),
    ("agent_network", health::agent_network),
    ("default_config", default_config),
    ("project_options", project_options),
    ("conflict_markers", conflict_markers),
    ("check_database", check_database),
    ("served", served),
    ("dashboard_opener", dashboard_opener),
    ("running", running),
    ("spawn", spawn),
    ("accept", accept),
    ("reject", reject),
    ("accept_undone", accept_undone),
    ("buffer_text", buffer_text),
    ("buffer_moved", buffer_moved),
    ("reject_hunk", reject_hunk),
    ("cancel", cancel),
    ("answer_permission", answer_permission),
    ("buffer_closed", buffer_closed),
    ("check_llm", check_llm),
    ("set_model", set_model),
    ("check_llm_now", check_llm_now),
    ("stop", stop),
    ("remora_enable", remora_enable),
    ("node_new", node_new),
    ("node_chat", node_chat),
    ("chat", chat),
    ("chat_history", chat_history),
    ("chat_clear", chat_clear),
    ("node_history", node_history),
    ("snapshot", snapshot),
    ("history", history),
    ("rollback", rollback),
    ("branch", branch),
    ("calls", calls),
    ("effects", effects),
    ("fork", fork),
    ("remora_stats", remora_stats),
    ("nodes", nodes),
    ("node", node),
    ("node_at", node_at),
    ("callers", callers),
    ("callees", callees),
    ("callback_times", callback_times),
    ("proposal_file", proposal_file),
    ("hunks", hunks),
];

/// version() -> the library's version.
fn version(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| Ok(crate::VERSION))
}

/// commit() -> the commit it was built from.
fn commit(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| Ok(crate::BUILD_COMMIT))
}

/// languages() -> { {name, extensions, comment, error?}, … }: the
/// languages Remora and the edit forms read, each query compiled (for
/// :checkhealth).
fn languages(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, ()| {
        let out = lua.create_table()?;
        for (i, l) in crate::lang::LANGUAGES.iter().enumerate() {
            let row = lua.create_table()?;
            row.set("name", l.name)?;
            row.set("extensions", l.extensions.join(" "))?;
            row.set("comment", l.line_comment)?;
            if let Err(e) = l.queries() {
                row.set("error", e.to_string())?;
            }
            out.set(i + 1, row)?;
        }
        Ok(out)
    })
}

/// edit_form(config_json) -> what the prompt asks the configured model
/// for, and which option decided it (for :checkhealth).
fn edit_form(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, config_json: String| {
        let config = Config::from_json(&config_json)
            .map_err(|e| mlua::Error::external(format!("Chimera: invalid configuration: {e}")))?;
        Ok(config.llm.describe_edit_form())
    })
}

/// start(config_json, cwd) -> root: (re)starts the core for the project
/// around `cwd` (or the configured root), and returns that root.
fn start(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (config_json, cwd): (String, String)| {
        let config = Config::from_json(&config_json)
            .map_err(|e| mlua::Error::external(format!("Chimera: invalid configuration: {e}")))?;
        stop_core();
        let sink = super::bridge::new().map_err(|e| {
            mlua::Error::external(format!("Chimera: cannot create the event bridge: {e}"))
        })?;
        let root = paths::project_root(config.root.as_deref(), Path::new(&cwd));
        paths::check_root(&root).map_err(|e| mlua::Error::external(format!("Chimera: {e}")))?;
        let core = crate::api::core::start(config, root.clone(), Arc::new(sink), Indexing::AtStart)
            .map_err(|e| mlua::Error::external(e.to_string()))?;
        CORE.with(|c| *c.borrow_mut() = Some(core));
        Ok(root.to_string_lossy().into_owned())
    })
}

/// read_reference(config_json, root, rel) -> the text `@rel` sends, or
/// nil and why not (capabilities, links, size, text).
fn read_reference(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (config_json, root, rel): (String, String, String)| {
        let config = Config::from_json(&config_json)
            .map_err(|e| mlua::Error::external(format!("Chimera: invalid configuration: {e}")))?;
        let caps = crate::capabilities::Capabilities::new(&config.capabilities, None)
            .map_err(|e| mlua::Error::external(e.to_string()))?;
        Ok(
            match caps.read_to_share(Path::new(&root), &rel, REFERENCE_LIMIT) {
                Ok(text) => (Some(text), None),
                Err(why) => (None, Some(why.to_string())),
            },
        )
    })
}

/// may_share_buffer(config_json, root, abs) -> nil when the buffer of
/// file `abs` may go to the model as #buffer / #selection, else why not.
fn may_share_buffer(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (config_json, root, abs): (String, String, String)| {
        let config = Config::from_json(&config_json)
            .map_err(|e| mlua::Error::external(format!("Chimera: invalid configuration: {e}")))?;
        let caps = crate::capabilities::Capabilities::new(&config.capabilities, None)
            .map_err(|e| mlua::Error::external(e.to_string()))?;
        Ok(caps
            .may_share_buffer(Path::new(&root), &abs)
            .err()
            .map(|why| why.to_string()))
    })
}

/// default_config() -> the core's own defaults as JSON (what the CLI and
/// `chimera serve` run with), for the test that Lua's table agrees.
fn default_config(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| {
        serde_json::to_string(&crate::config::Config::default()).map_err(mlua::Error::external)
    })
}

/// project_options(root) -> nil when the project has no options file,
/// else {file, trusted, ignored, error}: what the `chimera` command
/// applies of it (Neovim itself reads only setup{}), for :checkhealth.
fn project_options(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, root: String| {
        let loaded = match crate::cli::load_config(Path::new(&root), &Default::default()) {
            Ok(l) => l,
            Err(e) => {
                let t = lua.create_table()?;
                t.set(
                    "file",
                    crate::cli::project_file(Path::new(&root))
                        .to_string_lossy()
                        .into_owned(),
                )?;
                t.set("error", e.to_string())?;
                return Ok(Some(t));
            }
        };
        let Some(p) = loaded.project else {
            return Ok(None);
        };
        let t = lua.create_table()?;
        t.set("file", p.file.to_string_lossy().into_owned())?;
        t.set("trusted", p.trusted)?;
        t.set("ignored", p.ignored().to_vec())?;
        t.set("error", p.trust_error)?;
        Ok(Some(t))
    })
}

/// conflict_markers(id, path, text): asks for proposal `id` merged into
/// `text` (the buffer of `path`), clashes between conflict markers; the
/// answer comes as a `conflict_markers` message.
fn conflict_markers(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, path, text): (String, String, String)| {
        send(ToCore::ConflictMarkers { id, path, text })
    })
}

/// check_database(root) -> nil when sound, else the reason (:checkhealth).
fn check_database(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, root: String| {
        Ok(crate::store::Store::check_file(Path::new(&root)).err())
    })
}

/// served(root) -> { socket, pid, own, api = { port, dashboard } }: who
/// serves the project to clients outside Neovim (:checkhealth,
/// :Chimera dashboard). `pid` is nil when no core serves it.
fn served(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, root: String| {
        let root = Path::new(&root);
        let pid = crate::api::control::holder(root);
        let api = crate::api::http::read_info(root)
            .filter(|i| Some(i.pid) == pid)
            .map(|i| serde_json::json!({ "port": i.port, "dashboard": i.dashboard_url() }));
        use mlua::LuaSerdeExt;
        lua.to_value_with(
            // Options, not JSON nulls: what is missing is nil in Lua.
            &Served {
                socket: crate::api::client::socket_path(root),
                pid,
                own: pid == Some(std::process::id()),
                api,
            },
            mlua::SerializeOptions::new().serialize_none_to_null(false),
        )
    })
}

/// dashboard_opener(root) -> the file:// address of a private page
/// that logs the browser in once (nil when no API serves the project):
/// what `:Chimera dashboard` hands the browser, no secret on its
/// command line.
fn dashboard_opener(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, root: String| {
        let root = Path::new(&root);
        let pid = crate::api::control::holder(root);
        let Some(info) = crate::api::http::read_info(root).filter(|i| Some(i.pid) == pid) else {
            return Ok(None);
        };
        crate::api::http::write_opener(root, &info)
            .map(Some)
            .map_err(|e| {
                mlua::Error::external(format!(
                    "Chimera: cannot write the dashboard's login page: {e}"
                ))
            })
    })
}

/// running() -> whether this Neovim's core runs.
fn running(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| Ok(CORE.with(|c| c.borrow().is_some())))
}

/// spawn(id, {task, context?, file?, line? (from 1), mode?, capabilities?, agent?}): a new agent on a [`crate::task::TaskSpec`], checked here.
fn spawn(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, (id, spec): (String, mlua::Value)| {
        use mlua::LuaSerdeExt;
        let spec: crate::task::TaskSpec = lua
            .from_value(spec)
            .map_err(|e| mlua::Error::external(format!("Chimera: the task is not one: {e}")))?;
        spec.check()
            .map_err(|e| mlua::Error::external(format!("Chimera: {e}")))?;
        send(ToCore::Spawn { id, spec })
    })
}

/// accept(id, buffers?, hunk?): accept a proposal, whole or one hunk; `buffers`: the loaded buffers' text among its files.
fn accept(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(
        |_, (id, buffers, hunk): (String, Option<Table>, mlua::Value)| {
            send(ToCore::Accept {
                id,
                buffers: buffer_texts(buffers)?,
                hunk: hunk_ref(hunk)?,
                write: false,
            })
        },
    )
}

/// reject(id, feedback?): reject a proposal (with feedback, the agent tries again) or stop a working agent.
fn reject(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, feedback): (String, Option<String>)| {
        send(ToCore::Reject { id, feedback })
    })
}

/// accept_undone(id, undone): the human undid (or redid) accepted agent `id`'s change in its buffer.
fn accept_undone(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, undone): (String, bool)| send(ToCore::AcceptUndone { id, undone }))
}

/// buffer_text(path, text): a loaded buffer's text, now the ground truth of its file.
fn buffer_text(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (path, text): (String, mlua::String)| {
        let text = String::from_utf8_lossy(&text.as_bytes()).into_owned();
        send(ToCore::BufferText(BufferText { path, text }))
    })
}

/// buffer_moved(agent, path, base, wanted, now): an edit the editor could not apply because the human typed first.
fn buffer_moved(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(
        |_,
         (id, path, base, wanted, now): (
            String,
            String,
            mlua::String,
            mlua::String,
            mlua::String,
        )| {
            let text = |s: mlua::String| String::from_utf8_lossy(&s.as_bytes()).into_owned();
            send(ToCore::BufferMoved {
                id,
                path,
                base: text(base),
                wanted: text(wanted),
                now: text(now),
            })
        },
    )
}

/// reject_hunk(id, hunk): drop one hunk of a proposal.
fn reject_hunk(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(
        |_, (id, hunk): (String, mlua::Value)| match hunk_ref(hunk)? {
            Some(hunk) => send(ToCore::RejectHunk { id, hunk }),
            None => Err(mlua::Error::runtime("chimera: reject_hunk needs a hunk")),
        },
    )
}

/// cancel(id): stop a queued or running agent.
fn cancel(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, id: String| send(ToCore::Cancel { id }))
}

/// answer_permission(request_id, allow): the human's answer to an agent's request for permission.
fn answer_permission(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, allow): (u64, bool)| send(ToCore::PermissionAnswer { id, allow }))
}

/// buffer_closed(path): the buffer was unloaded; the disk is the file's truth again.
fn buffer_closed(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, path: String| send(ToCore::BufferClosed { path }))
}

/// check_llm(): ask the LLM server whether it answers (the result comes as a message).
fn check_llm(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| send(ToCore::CheckLlm))
}

/// set_model(name): the model new tasks use (`:Chimera model`).
fn set_model(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, model: String| send(ToCore::SetModel { model }))
}

/// check_llm_now(config_json) -> {ok, warning, message, models}: the
/// same check without a core (`:checkhealth` before `:Chimera start`);
/// blocks for at most a few seconds.
fn check_llm_now(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, config_json: String| {
        let config = Config::from_json(&config_json)
            .map_err(|e| mlua::Error::external(format!("Chimera: invalid configuration: {e}")))?;
        let health = match crate::llm::LlmClient::new(&config.llm) {
            Err(e) => crate::llm::health::Health {
                ok: false,
                warning: false,
                message: e.to_string(),
                models: vec![],
            },
            Ok(client) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| mlua::Error::external(format!("Chimera: no runtime: {e}")))?
                .block_on(crate::llm::health::check(&client)),
        };
        mlua::LuaSerdeExt::to_value(lua, &health)
    })
}

/// stop(): stop the core (agents still working are recovered at the next start).
fn stop(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| {
        stop_core();
        Ok(())
    })
}

/// remora_enable(confirmed): `:Chimera remora enable`.
fn remora_enable(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, confirmed: bool| send(ToCore::RemoraEnable { confirmed }))
}

/// node_new(file, line, kind, name, description?): a ghost node and its agent (`:Chimera node new`).
fn node_new(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(
        |_,
         (file, line, kind, name, description): (
            String,
            usize,
            String,
            String,
            Option<String>,
        )| {
            send(ToCore::NodeNew {
                file,
                line,
                kind,
                name,
                description: description.unwrap_or_default(),
            })
        },
    )
}

/// node_chat(node_id, message): say something to a node's agent.
fn node_chat(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (node_id, message): (String, String)| {
        if message.trim().is_empty() {
            return Err(mlua::Error::external(
                "Chimera: the message is empty; say what the node should do",
            ));
        }
        send(ToCore::NodeChat { node_id, message })
    })
}

/// chat(id, message, file?, cursor_line?, context?): a turn of the free chat.
fn chat(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(
        |_,
         (id, message, file, cursor_line, context): (
            String,
            String,
            Option<String>,
            Option<usize>,
            Option<String>,
        )| {
            if message.trim().is_empty() {
                return Err(mlua::Error::external(
                    "Chimera: the message is empty; say what the agent should do",
                ));
            }
            send(ToCore::Chat {
                id,
                message,
                file,
                cursor_line,
                context,
            })
        },
    )
}

/// chat_history(): the free chat's conversation so far.
fn chat_history(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| send(ToCore::ChatHistory))
}

/// chat_clear(): forget the free chat's conversation.
fn chat_clear(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| send(ToCore::ChatClear))
}

/// node_history(node_id): a node's conversation and events.
fn node_history(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, node_id: String| send(ToCore::NodeHistory { node_id }))
}

/// snapshot(id, message): take a snapshot of the project.
fn snapshot(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, message): (String, String)| send(ToCore::Snapshot { id, message }))
}

/// history(): the snapshots, newest first.
fn history(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| send(ToCore::History))
}

/// rollback(id, dry_run, buffers): bring the project back to a snapshot.
fn rollback(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, dry_run, buffers): (String, bool, Option<Table>)| {
        send(ToCore::Rollback {
            id,
            dry_run,
            buffers: buffer_texts(buffers)?,
        })
    })
}

/// branch(name?, snapshot?): name a line of snapshots (no name: list them).
fn branch(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (name, snapshot): (Option<String>, Option<String>)| {
        send(ToCore::Branch { name, snapshot })
    })
}

/// calls(agent_id): an agent's audit log, every tool call (the answer comes as a message).
fn calls(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, agent_id: String| send(ToCore::Calls { agent_id }))
}

/// effects(since?, kind?): the effects no rollback undoes.
fn effects(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (since, kind): (Option<mlua::Value>, Option<String>)| {
        // A sequence number, or a snapshot ID (seed 004's `--since <snapshot>`).
        let since = match since {
            None | Some(mlua::Value::Nil) => EffectsSince::Seq(0),
            Some(mlua::Value::Integer(n)) => EffectsSince::Seq(n),
            Some(mlua::Value::Number(n)) if n.fract() == 0.0 && n >= 0.0 => {
                EffectsSince::Seq(n as i64)
            }
            Some(mlua::Value::String(s)) => {
                let s = s.to_str()?.to_string();
                match s.parse::<i64>() {
                    Ok(n) => EffectsSince::Seq(n),
                    Err(_) => EffectsSince::Snapshot(s),
                }
            }
            Some(other) => {
                return Err(mlua::Error::external(format!(
                    "Chimera: effects since: give a sequence number or a snapshot ID, not a {}",
                    other.type_name()
                )))
            }
        };
        send(ToCore::Effects { since, kind })
    })
}

/// fork(id, snapshot, task): an agent on the project as it was in a snapshot.
fn fork(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, (id, snapshot, task): (String, String, String)| {
        if task.trim().is_empty() {
            return Err(mlua::Error::external(
                "Chimera: the task is empty; say what the forked agent should do",
            ));
        }
        send(ToCore::Fork { id, snapshot, task })
    })
}

/// Topology queries: the index in memory, behind a read lock (no I/O).
fn remora_stats(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, ()| {
        with_remora(lua, |_, t| {
            let (nodes, edges) = t.counts();
            let files = t.file_paths().count();
            Some(serde_json::json!({"files": files, "nodes": nodes, "edges": edges}))
        })
    })
}

/// nodes(path): Remora's nodes of a file.
fn nodes(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, path: String| {
        with_remora(lua, |root, t| {
            let rel = relative(root, &path)?;
            Some(t.nodes_in(&rel))
        })
    })
}

/// node(id): one node, with its callers and callees.
fn node(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, id: String| with_remora(lua, |_, t| t.node(&id)))
}

/// node_at(path, line): the node at a line of a file.
fn node_at(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, (path, line): (String, usize)| {
        with_remora(lua, |root, t| {
            let rel = relative(root, &path)?;
            t.node_at(&rel, line)
        })
    })
}

/// callers(id): the nodes that call node `id`.
fn callers(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, id: String| with_remora(lua, |_, t| Some(t.callers(&id))))
}

/// callees(id): the nodes node `id` calls.
fn callees(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, id: String| with_remora(lua, |_, t| Some(t.callees(&id))))
}

/// Milliseconds each delivery of the core's messages held the main
/// thread since the last call (the editor's budget is a few ms).
fn callback_times(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, ()| {
        Ok(super::bridge::take_callback_times()
            .into_iter()
            .map(|d| d.as_secs_f64() * 1000.0)
            .collect::<Vec<f64>>())
    })
}

/// File `path` of agent `id`'s shown proposal with its hunks (nil: none).
fn proposal_file(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, (id, path): (String, String)| {
        use mlua::LuaSerdeExt;
        match super::bridge::proposal_file(&id, &path) {
            Some(file) => lua.to_value_with(
                &file,
                mlua::SerializeOptions::new().serialize_none_to_null(false),
            ),
            None => Ok(mlua::Value::Nil),
        }
    })
}

/// Pure helper for the editor: hunks between two texts.
fn hunks(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, (old, new): (String, String)| {
        use mlua::LuaSerdeExt;
        lua.to_value(&crate::diff::hunks(&old, &new))
    })
}
