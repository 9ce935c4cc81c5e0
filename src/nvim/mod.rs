//! The editor layer: Neovim's messages and their translation into the
//! port's words ([`messages`], always built), and, with the `neovim`
//! feature, the only code that links against Neovim: the `chimera_native`
//! Lua module (made with mlua, so every error is a normal, catchable Lua
//! error) and the bridge of the core's messages onto the main loop. It
//! adapts and delegates; the logic lives in the core and in `lua/chimera/`.

pub mod messages;

#[cfg(feature = "neovim")]
mod bridge;
#[cfg(feature = "neovim")]
mod health;
#[cfg(feature = "neovim")]
mod module;

#[cfg(feature = "neovim")]
use nvim_oxi::mlua;

/// Entry point called by `require("chimera_native")`. nvim-oxi's entrypoint
/// initialises its Lua and libuv state (needed by `schedule` and
/// `AsyncHandle`); the module table is made with mlua and registered in
/// `package.loaded`, which `require` then returns.
#[cfg(feature = "neovim")]
#[unsafe(no_mangle)]
unsafe extern "C" fn luaopen_chimera_native(
    state: *mut nvim_oxi::lua::ffi::State,
) -> core::ffi::c_int {
    unsafe { nvim_oxi::entrypoint::entrypoint(state, open) }
}

/// Neovim's Lua state, for the main thread. `mlua::lua()` wraps the state
/// anew each call, and dropping that wrapper runs a full garbage collection
/// of Neovim's whole Lua heap (milliseconds, on every delivery of the
/// core's messages): one wrapper lives as long as the process, and callers
/// get clones, which do not collect when dropped.
#[cfg(feature = "neovim")]
fn main_lua() -> mlua::Lua {
    thread_local! {
        static LUA: &'static mlua::Lua = Box::leak(Box::new(mlua::lua()));
    }
    LUA.with(|lua| (*lua).clone())
}

#[cfg(feature = "neovim")]
fn open() -> nvim_oxi::Result<()> {
    let lua = main_lua();
    let table = module::build(&lua)?;
    let loaded: mlua::Table = lua.globals().get::<mlua::Table>("package")?.get("loaded")?;
    loaded.set("chimera_native", table)?;
    Ok(())
}
