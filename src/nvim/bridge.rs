//! Carries [`ToEditor`] messages from the core's threads to Neovim's main
//! loop. `AsyncHandle::send` calls coalesce; the callback schedules one
//! delivery, which runs where the Neovim API may be used and hands Lua the
//! queued messages in order for at most [`SLICE`], then schedules itself
//! again for the rest, so a flood (an accept of hundreds of files
//! re-indexes each) never holds the editor. Nothing here may panic: a
//! panic would take Neovim down.
//!
//! Proposals reach Lua counted, not spelled out: converting every hunk of
//! a proposal of hundreds of files to Lua tables stalled the main thread
//! for seconds. The full proposals stay here, on the main thread, updated
//! in message order; Lua fetches a file's hunks when a buffer shows it.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nvim_oxi::libuv::AsyncHandle;
use nvim_oxi::mlua::{self, LuaSerdeExt};

use super::messages::ToEditor;
use crate::diff::FileDiff;
use crate::event::AgentView;
use crate::port::{EditorSink, Said};
use crate::port::{FileView, ProposedFile};

/// The core's side of the bridge.
pub struct NvimSink {
    tx: Mutex<mpsc::Sender<ToEditor>>,
    handle: AsyncHandle,
}

impl EditorSink for NvimSink {
    fn asks_the_human(&self) -> bool {
        true
    }
    fn hear(&self, said: Said, root: &std::path::Path) {
        let Some(msg) = ToEditor::heard(said, root) else {
            return;
        };
        let sent = self
            .tx
            .lock()
            .map(|tx| tx.send(msg).is_ok())
            .unwrap_or(false);
        if sent {
            // Neovim is closing: the message stays in the channel with it.
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
    /// The main thread's CPU time of each delivery, oldest first (the last
    /// [`TIMES_KEPT`]), for `:checkhealth`, the benchmarks and tests. CPU
    /// time, not wall time: what Chimera's work costs the editor, without
    /// the moments the system ran another thread instead.
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

/// This thread's CPU time so far.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The main-thread CPU time of each delivery since the last call, oldest first.
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

/// Frees a proposal that is no longer shown. Freeing the lines of hundreds
/// of files took the main thread ~8 ms; a large one is freed elsewhere.
fn dispose(files: Vec<FileDiff>) {
    let lines: usize = files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.old_lines.len() + h.new_lines.len())
        .sum();
    if lines > 10_000 {
        // Without a thread, the proposal is freed here after all.
        let _ = std::thread::Builder::new()
            .name("chimera-free".into())
            .spawn(move || drop(files));
    }
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
            let replaced = PROPOSALS.with(|p| {
                let mut p = p.borrow_mut();
                match proposal {
                    Some(files) => p.insert(agent.id.clone(), files),
                    None if cleared => p.remove(&agent.id),
                    None => None,
                }
            });
            if let Some(old) = replaced {
                dispose(old);
            }
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

/// How long one delivery may hand messages to Lua before it lets the
/// editor run and schedules itself again.
const SLICE: Duration = Duration::from_millis(3);

/// The editor's end of the channel, on the main thread.
struct Inbox {
    rx: mpsc::Receiver<ToEditor>,
    /// A delivery is scheduled and has not started yet.
    scheduled: Cell<bool>,
    /// The core generation these messages come from.
    generation: u64,
}

impl Inbox {
    fn current(&self) -> bool {
        self.generation == GENERATION.load(Ordering::SeqCst)
    }

    fn schedule(self: &Rc<Self>) {
        if !self.scheduled.replace(true) {
            let inbox = Rc::clone(self);
            nvim_oxi::schedule(move |()| inbox.deliver());
        }
    }

    /// Hands queued messages to Lua, in order, for at most [`SLICE`].
    fn deliver(self: Rc<Self>) {
        self.scheduled.set(false);
        if !self.current() {
            while self.rx.try_recv().is_ok() {}
            return;
        }
        let cpu = thread_cpu();
        let more = dispatch(&self.rx, Instant::now() + SLICE);
        record(thread_cpu().saturating_sub(cpu));
        if more && self.current() {
            self.schedule();
        }
    }
}

/// Creates the bridge; must be called on the main thread.
pub fn new() -> Result<NvimSink, nvim_oxi::libuv::Error> {
    let (tx, rx) = mpsc::channel::<ToEditor>();
    let inbox = Rc::new(Inbox {
        rx,
        scheduled: Cell::new(false),
        generation: GENERATION.load(Ordering::SeqCst),
    });
    let handle = AsyncHandle::new(move || inbox.schedule())?;
    Ok(NvimSink {
        tx: Mutex::new(tx),
        handle,
    })
}

/// Hands messages from `rx` to `require("chimera.bridge").dispatch` as Lua
/// tables until none is left or `until` passed. Returns whether it stopped
/// for the time.
fn dispatch(rx: &mpsc::Receiver<ToEditor>, until: Instant) -> bool {
    let lua = &super::main_lua();
    let result = (|| -> mlua::Result<bool> {
        let require: mlua::Function = lua.globals().get("require")?;
        let bridge: mlua::Table = require.call("chimera.bridge")?;
        let dispatch: mlua::Function = bridge.get("dispatch")?;
        let opts = mlua::SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false);
        while let Ok(msg) = rx.try_recv() {
            let value = to_lua(lua, msg, opts)?;
            if let Err(e) = dispatch.call::<()>(value) {
                report(
                    lua,
                    &format!("Chimera: error while handling a message: {e}"),
                );
            }
            if Instant::now() >= until {
                return Ok(true);
            }
        }
        Ok(false)
    })();
    result.unwrap_or_else(|e| {
        report(
            lua,
            &format!("Chimera: cannot deliver messages to Lua: {e}"),
        );
        false
    })
}

fn report(lua: &mlua::Lua, text: &str) {
    let notify = lua
        .globals()
        .get::<mlua::Table>("vim")
        .and_then(|vim| vim.get::<mlua::Function>("notify"));
    if let Ok(notify) = notify {
        // `vim.notify` itself failed: there is no other place to say it.
        let _ = notify.call::<()>((text.to_owned(), 4));
    }
}
