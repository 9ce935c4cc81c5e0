--- Pushes the human's ground truth to the core: the text of every loaded
--- buffer under the project root, on every change (`nvim_buf_attach` sees
--- API edits too) after a short debounce, and at once on write. Unloading a
--- buffer makes its file on disk the ground truth again.
local state = require("chimera.state")

local M = {}

local attached = {} -- bufnr -> path
local timers = {} -- bufnr -> uv timer

local function under_root(path)
  local root = state.root
  return root and path ~= "" and vim.startswith(path, root .. "/")
end

--- The buffer's full text as it would be written.
function M.text(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local eol = vim.bo[buf].fileformat == "dos" and "\r\n" or "\n"
  local text = table.concat(lines, eol)
  if vim.bo[buf].eol or vim.bo[buf].fixeol then
    text = text .. eol
  end
  return text
end

local function push(buf)
  local path = attached[buf]
  if not path or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local lib = require("chimera.loader").load()
  if lib and lib.running() then
    pcall(lib.buffer_text, path, M.text(buf))
  end
end

-- bufnr -> pushes made so far: a debounced push scheduled before a flush
-- is dropped, so it can never arrive after (and undo) what followed it.
local pushes = {}

local function push_now(buf)
  pushes[buf] = (pushes[buf] or 0) + 1
  push(buf)
end

local function schedule_push(buf)
  local delay = state.config and state.config.sync.debounce_ms or 100
  local timer = timers[buf]
  if not timer then
    timer = vim.uv.new_timer()
    timers[buf] = timer
  end
  timer:stop()
  local seen = pushes[buf]
  timer:start(delay, 0, function()
    vim.schedule(function()
      if pushes[buf] == seen then
        push_now(buf)
      end
    end)
  end)
end

--- Starts following `buf` if it shows a project file.
function M.attach(buf)
  if attached[buf] or not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= "" then
    return
  end
  local path = vim.api.nvim_buf_get_name(buf)
  if not under_root(path) then
    return
  end
  attached[buf] = path
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      if not attached[buf] then
        return true -- detach
      end
      schedule_push(buf)
    end,
    on_reload = function()
      schedule_push(buf)
    end,
    on_detach = function()
      attached[buf] = nil
    end,
  })
  push(buf)
  require("chimera.ghost").render(buf)
end

function M.detach(buf)
  local path = attached[buf]
  attached[buf] = nil
  pushes[buf] = nil
  if timers[buf] then
    timers[buf]:stop()
    timers[buf]:close()
    timers[buf] = nil
  end
  if path then
    local lib = require("chimera.loader").load()
    if lib and lib.running() then
      pcall(lib.buffer_closed, path)
    end
  end
end

--- Pushes `buf` now (on write, and before an accept or a rollback, which
--- carry the same text: a debounced push of it must not arrive after them).
function M.flush(buf)
  if timers[buf] then
    timers[buf]:stop()
  end
  push_now(buf)
end

--- The loaded buffer showing `path`, if any.
function M.find(path)
  for buf, p in pairs(attached) do
    if p == path and vim.api.nvim_buf_is_loaded(buf) then
      return buf
    end
  end
end

--- Attaches every loaded project buffer (when the core starts).
function M.attach_all()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    M.attach(buf)
  end
end

-- Project roots already looked at for a store (root -> true).
local looked = {}

--- Starts the core when `buf`'s file belongs to a project that has a
--- Chimera store, so its proposals and agents come back with no command.
--- `again`: also a project looked at before (the library was not built then).
function M.autostart(buf, again)
  local config = state.config
  if state.root or not (config and config.ui.autostart) or vim.bo[buf].buftype ~= "" then
    return
  end
  -- A build on its way starts it when done (init.wait_for_build).
  if not package.loaded.chimera_native and require("chimera.loader").building() then
    return
  end
  local file = vim.api.nvim_buf_get_name(buf)
  if file == "" or file:find("^%a+://") then
    return
  end
  local root = config.root and vim.fn.fnamemodify(config.root, ":p") or vim.fs.root(file, ".git")
  if not root or (looked[root] and not again) then
    return
  end
  looked[root] = true
  if vim.uv.fs_stat(vim.fs.joinpath(root, ".chimera", "chimera.db")) then
    require("chimera").start(vim.fs.dirname(file))
  end
end

function M.setup_autocmds(group)
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost", "BufEnter" }, {
    group = group,
    callback = function(ev)
      if not state.root and ev.event == "BufReadPost" then
        local ok, err = pcall(M.autostart, ev.buf)
        if not ok then
          require("chimera.say").notify("Chimera: " .. tostring(err), vim.log.levels.ERROR)
        end
      end
      if state.root then
        M.attach(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    callback = function(ev)
      if state.root then
        M.attach(ev.buf)
        M.flush(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "BufUnload", "BufDelete" }, {
    group = group,
    callback = function(ev)
      M.detach(ev.buf)
    end,
  })
end

return M
