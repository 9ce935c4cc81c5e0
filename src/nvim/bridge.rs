//! Carries [`ToEditor`] messages from the core's threads to Neovim's main
//! loop. `AsyncHandle::send` calls coalesce, so the callback drains the
//! whole queue; the Lua work then runs from `schedule`, where the Neovim
//! API may be used. Nothing here may panic: a panic would take Neovim down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use nvim_oxi::libuv::AsyncHandle;
use nvim_oxi::mlua::{self, LuaSerdeExt};

use crate::messages::ToEditor;
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

/// Stops delivering messages of the current core (it is being stopped).
pub fn retire() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
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
                    dispatch(batch);
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
            let value = lua.to_value_with(&msg, opts)?;
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
