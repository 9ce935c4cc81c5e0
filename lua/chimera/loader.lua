--- Finds and loads the native library (`lua/chimera_native.so`), and
--- refuses a missing or stale one with the exact command that fixes it.
local M = {}

local sep = package.config:sub(1, 1)

--- The plugin's own directory (the one holding `lua/` and `plugin/`).
function M.plugin_root()
  local source = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(source, ":p:h:h:h")
end

function M.lib_path()
  local ext = (vim.fn.has("win32") == 1) and "dll" or "so"
  return table.concat({ M.plugin_root(), "lua", "chimera_native." .. ext }, sep)
end

local function fix_hint()
  return ("run `make` in %s (with lazy.nvim: `:Lazy build chimera.nvim`)"):format(M.plugin_root())
end

local cached

--- The library this Neovim loads: $CHIMERA_LIB when set, else the
--- plugin's own `lua/chimera_native.so`.
function M.active_path()
  return vim.env.CHIMERA_LIB or M.lib_path()
end

--- Loads the library once. Returns the module, or nil and a message saying
--- what is wrong and how to fix it.
function M.load()
  if cached then
    return cached
  end
  if package.loaded.chimera_native then
    cached = package.loaded.chimera_native
    return cached
  end
  local path = M.active_path()
  if not vim.uv.fs_stat(path) then
    return nil, ("Chimera's native library is missing (%s): %s"):format(path, fix_hint())
  end
  local open, err = package.loadlib(path, "luaopen_chimera_native")
  if not open then
    return nil, ("Chimera's native library cannot be loaded (%s): %s; %s"):format(path, err, fix_hint())
  end
  local ok, res = pcall(open)
  if not ok then
    return nil, ("Chimera's native library failed to start: %s; %s"):format(res, fix_hint())
  end
  local lib = package.loaded.chimera_native or res
  if type(lib) ~= "table" then
    return nil, "Chimera's native library did not return its module; " .. fix_hint()
  end
  local want = require("chimera.version")
  if lib.version() ~= want then
    return nil,
      ("Chimera's native library is stale (library %s, plugin %s): %s"):format(lib.version(), want, fix_hint())
  end
  cached = lib
  return lib
end

--- Like `load`, but raises the message as an error.
function M.require()
  local lib, err = M.load()
  if not lib then
    error(err, 0)
  end
  return lib
end

return M
