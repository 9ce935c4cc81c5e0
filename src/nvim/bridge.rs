//! Carries [`ToEditor`] messages from the core's threads to Neovim's main
//! loop. `AsyncHandle::send` calls coalesce, so the callback drains the
//! whole queue; the Lua work then runs from `schedule`, where the Neovim
//! API may be used. Nothing here may panic: a panic would take Neovim down.
//!
//! Proposals reach Lua counted, not spelled out: converting every hunk of
//! a proposal of hundreds of files to Lua tables stalled the main thread
//! for seconds. The full proposals stay here, on the main thread, updated
//! in message order; Lua fetches a file's hunks when a buffer shows it.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nvim_oxi::libuv::AsyncHandle;
use nvim_oxi::mlua::{self, LuaSerdeExt};

use crate::diff::FileDiff;
use crate::messages::{AgentView, FileView, ProposedFile, ToEditor};
use crate::runtime::EditorSink;

/// The core's side of the bridge.
pub struct NvimSink {
    tx: Mutex<mpsc::Sender<ToEditor>>,
    handle: AsyncHandle,
}

impl EditorSink for NvimSink {
    fn send(&self, msg: ToEditor) {
        let sent = self
            .tx
            .lock()
            .map(|tx| tx.send(msg).is_ok())
            .unwrap_or(false);
        if sent {
            let _ = self.handle.send();
        }
    }
}

/// The core generation whose messages the editor accepts. A stopped core
/// may still be finishing; what it sends after a restart is stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The proposals the editor shows, by agent, as of the last message
    /// Lua received. Main thread only.
    static PROPOSALS: RefCell<HashMap<String, Vec<FileDiff>>> = RefCell::new(HashMap::new());
    /// How long each delivery held the main thread, oldest first (the
    /// last [`TIMES_KEPT`]), for `:checkhealth`, the benchmarks and tests.
    static TIMES: RefCell<VecDeque<Duration>> = const { RefCell::new(VecDeque::new()) };
}

const TIMES_KEPT: usize = 4096;

fn record(took: Duration) {
    TIMES.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() == TIMES_KEPT {
            t.pop_front();
        }
        t.push_back(took);
    });
}

/// The main-thread time of each delivery since the last call, oldest first.
pub fn take_callback_times() -> Vec<Duration> {
    TIMES.with(|t| t.borrow_mut().drain(..).collect())
}

/// Stops delivering messages of the current core (it is being stopped);
/// the editor forgets its proposals (the next core sends them again).
pub fn retire() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    PROPOSALS.with(|p| p.borrow_mut().clear());
}

/// File `path` (absolute) of agent `id`'s shown proposal, spelled out.
pub fn proposal_file(id: &str, path: &str) -> Option<FileView> {
    PROPOSALS.with(|p| {
        let p = p.borrow();
        let files = p.get(id)?;
        let index = files.iter().position(|f| f.path == path)?;
        FileView::of(files, index)
    })
}

/// What Lua receives for [`ToEditor::Agent`]: the proposal counted.
#[derive(serde::Serialize)]
struct AgentMessage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    agent: &'a AgentView,
    #[serde(skip_serializing_if = "Option::is_none")]
    proposal: Option<Vec<ProposedFile>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cleared: bool,
}

/// `msg` as a Lua value; an agent's proposal is kept here and sent counted.
fn to_lua(
    lua: &mlua::Lua,
    msg: ToEditor,
    opts: mlua::SerializeOptions,
) -> mlua::Result<mlua::Value> {
    match msg {
        ToEditor::Agent {
            agent,
            proposal,
            cleared,
        } => {
            let counted = proposal
                .as_ref()
                .map(|files| files.iter().map(ProposedFile::from).collect());
            PROPOSALS.with(|p| {
                let mut p = p.borrow_mut();
                match proposal {
                    Some(files) => {
                        p.insert(agent.id.clone(), files);
                    }
                    None if cleared => {
                        p.remove(&agent.id);
                    }
                    None => {}
                }
            });
            let msg = AgentMessage {
                kind: "agent",
                agent: &agent,
                proposal: counted,
                cleared,
            };
            lua.to_value_with(&msg, opts)
        }
        other => lua.to_value_with(&other, opts),
    }
}

/// Creates the bridge; must be called on the main thread.
pub fn new() -> Result<NvimSink, nvim_oxi::libuv::Error> {
    let (tx, rx) = mpsc::channel::<ToEditor>();
    let generation = GENERATION.load(Ordering::SeqCst);
    let handle = AsyncHandle::new(move || {
        let batch: Vec<ToEditor> = rx.try_iter().collect();
        if !batch.is_empty() && generation == GENERATION.load(Ordering::SeqCst) {
            nvim_oxi::schedule(move |()| {
                if generation == GENERATION.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    dispatch(batch);
                    record(started.elapsed());
                }
            });
        }
    })?;
    Ok(NvimSink {
        tx: Mutex::new(tx),
        handle,
    })
}

/// Hands each message to `require("chimera.bridge").dispatch` as a Lua table.
fn dispatch(batch: Vec<ToEditor>) {
    let lua = mlua::lua();
    let result = (|| -> mlua::Result<()> {
        let require: mlua::Function = lua.globals().get("require")?;
        let bridge: mlua::Table = require.call("chimera.bridge")?;
        let dispatch: mlua::Function = bridge.get("dispatch")?;
        let opts = mlua::SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false);
        for msg in batch {
            let value = to_lua(&lua, msg, opts)?;
            if let Err(e) = dispatch.call::<()>(value) {
                report(
                    &lua,
                    &format!("Chimera: error while handling a message: {e}"),
                );
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        report(
            &lua,
            &format!("Chimera: cannot deliver messages to Lua: {e}"),
        );
    }
}

fn report(lua: &mlua::Lua, text: &str) {
    let notify = lua
        .globals()
        .get::<mlua::Table>("vim")
        .and_then(|vim| vim.get::<mlua::Function>("notify"));
    if let Ok(notify) = notify {
        let _ = notify.call::<()>((text.to_owned(), 4));
    }
}
