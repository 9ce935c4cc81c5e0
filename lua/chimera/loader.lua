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

local function read_file(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- Whether the background source build (build_state) runs: its pid file
--- alone, read when polled or a file opens (the log is read only to say
--- how far it is).
function M.building()
  local pid = tonumber(vim.trim(read_file(M.plugin_root() .. "/.build/pid") or ""))
  return pid ~= nil and vim.uv.kill(pid, 0) == 0
end

--- The source build scripts/build.sh left running in the background
--- (started by a plugin manager's build step): "running" or "failed" and
--- a sentence saying how it goes, else nil.
function M.build_state()
  local dir = M.plugin_root() .. "/.build"
  local log = dir .. "/build.log"
  if M.building() then
    local text = read_file(log) or ""
    local _, done = text:gsub("\n%s*Compiling ", "")
    local _, total = (read_file(M.plugin_root() .. "/Cargo.lock") or ""):gsub("%[%[package%]%]", "")
    local started = vim.uv.fs_stat(dir .. "/pid")
    local minutes = started and math.floor((os.time() - started.mtime.sec) / 60) or 0
    return "running",
      ("Chimera's native library is being built from source in the background (%d min so far, %d of about %d crates compiled); it loads by itself when done. Log: %s"):format(
        minutes,
        done,
        total,
        log
      )
  end
  local failed = read_file(dir .. "/failed")
  if failed then
    local last = ""
    for line in (read_file(log) or ""):gmatch("[^\n]+") do
      if line:match("^error") or line:match("^chimera build:") then
        last = line
      end
    end
    return "failed",
      ("Chimera's native library failed to build in the background (exit %s: %s); log: %s"):format(
        vim.trim(failed),
        last,
        log
      )
  end
end

--- An error's message without the stack traceback Lua appends to an error
--- raised in a native function: the person reading a notification wants
--- what broke and what to do, not where in Lua it surfaced.
function M.message(err)
  return (tostring(err):gsub("\nstack traceback:.*$", ""))
end

--- `lib` with every function's errors reduced to their message.
local function plain_errors(lib)
  local wrapped = {}
  for name, value in pairs(lib) do
    if type(value) == "function" then
      wrapped[name] = function(...)
        local out = { n = 0 }
        local function keep(ok, ...)
          out = { n = select("#", ...), ... }
          return ok
        end
        if not keep(pcall(value, ...)) then
          error(M.message(out[1]), 0)
        end
        return unpack(out, 1, out.n)
      end
    else
      wrapped[name] = value
    end
  end
  return wrapped
end

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
  local lib, err = M.load_library()
  if lib then
    return lib
  end
  -- Missing or stale because a build is on its way (or failed): say that.
  local build, said = M.build_state()
  if build == "running" then
    return nil, said
  elseif build == "failed" then
    return nil, said .. "; " .. fix_hint()
  end
  return nil, err
end

--- Calls `done(lib, err)` once a background build (build_state) ends,
--- checking every 2 s; nothing when none runs. Returns whether one runs.
function M.when_built(done)
  if not M.building() then
    return false
  end
  local timer = assert(vim.uv.new_timer())
  timer:start(2000, 2000, vim.schedule_wrap(function()
    if M.building() or timer:is_closing() then
      return
    end
    timer:stop()
    timer:close()
    done(M.load())
  end))
  return true
end

function M.load_library()
  if package.loaded.chimera_native then
    cached = plain_errors(package.loaded.chimera_native)
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
  -- The same version string covers every commit: ask git too.
  local stale = not vim.env.CHIMERA_LIB and M.stale(lib.commit(), M.plugin_root())
  if stale then
    return nil, stale
  end
  cached = plain_errors(lib)
  return cached
end

--- Whether a library built from `commit` is behind the checkout at `root`:
--- a message saying so when a native source (scripts/native-sources)
--- changed between that commit and HEAD, else nil (current, or no way to
--- tell: no git, a commit this clone does not have).
--- The commit HEAD names in the checkout at `root`, read from `.git`
--- without running git (nil where that is not plain: a worktree, say).
local function head_commit(root)
  local read = read_file
  local head = read(root .. "/.git/HEAD")
  local ref = head and head:match("^ref: (%S+)")
  if not ref then
    return head and vim.trim(head)
  end
  local direct = read(root .. "/.git/" .. ref)
  if direct then
    return vim.trim(direct)
  end
  for line in (read(root .. "/.git/packed-refs") or ""):gmatch("[^\n]+") do
    local hash, name = line:match("^(%x+) (%S+)$")
    if name == ref then
      return hash
    end
  end
end

function M.stale(commit, root)
  if not commit or commit == "unknown" then
    return nil
  end
  -- Built from HEAD itself (the usual case): no git process needed.
  local head = head_commit(root)
  if head and head ~= "" and vim.startswith(head, commit) then
    return nil
  end
  if vim.fn.executable("git") == 0 then
    return nil
  end
  local list = root .. "/scripts/native-sources"
  if not (vim.uv.fs_stat(root .. "/.git") and vim.uv.fs_stat(list)) then
    return nil
  end
  local cmd = { "git", "-C", root, "diff", "--quiet", commit, "HEAD", "--" }
  for line in io.lines(list) do
    if line ~= "" and not line:match("^#") then
      table.insert(cmd, line)
    end
  end
  local ok, r = pcall(function()
    return vim.system(cmd):wait(3000)
  end)
  if ok and r.code == 1 then
    return ("Chimera's native library was built from commit %s and the native sources changed since: %s"):format(
      commit,
      fix_hint()
    )
  end
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
