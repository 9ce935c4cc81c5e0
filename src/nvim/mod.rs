//! The editor layer: the only code that links against Neovim. It exposes
//! the `chimera_native` Lua module (made with mlua, so every error is a
//! normal, catchable Lua error) and bridges the core's messages onto the
//! main loop. It adapts and delegates; the logic lives in the core and in
//! `lua/chimera/`.

mod bridge;
mod module;

use nvim_oxi::mlua;

/// Entry point called by `require("chimera_native")`. nvim-oxi's entrypoint
/// initialises its Lua and libuv state (needed by `schedule` and
/// `AsyncHandle`); the module table is made with mlua and registered in
/// `package.loaded`, which `require` then returns.
#[unsafe(no_mangle)]
unsafe extern "C" fn luaopen_chimera_native(
    state: *mut nvim_oxi::lua::ffi::State,
) -> core::ffi::c_int {
    unsafe { nvim_oxi::entrypoint::entrypoint(state, open) }
}

fn open() -> nvim_oxi::Result<()> {
    let lua = mlua::lua();
    let table = module::build(&lua)?;
    let loaded: mlua::Table = lua.globals().get::<mlua::Table>("package")?.get("loaded")?;
    loaded.set("chimera_native", table)?;
    Ok(())
}
