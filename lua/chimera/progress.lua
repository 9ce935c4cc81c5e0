--- Agents' progress where the ecosystem looks for it: `User
--- ChimeraProgress` events, LSP `$/progress` from an in-process language
--- server named "chimera" (so fidget.nvim, lualine's LSP progress and
--- `vim.lsp.status()` show agents working), and a redrawn statusline on
--- every state change.
local M = {}

local client_id -- the "chimera" LSP client, once started
local notify_client -- sends a notification as the server would
local working = {} -- agent id -> true while its progress is open

local function emit(data)
  vim.api.nvim_exec_autocmds("User", { pattern = "ChimeraProgress", modeline = false, data = data })
end

--- An in-process language server that only reports progress.
local function server(dispatchers)
  local closing = false
  notify_client = dispatchers.notification
  -- The client forgets a server once it has exited.
  local function exit()
    if not closing then
      closing = true
      vim.schedule(function()
        dispatchers.on_exit(0, 0)
      end)
    end
  end
  return {
    request = function(method, _, callback)
      vim.schedule(function()
        if method == "initialize" then
          callback(nil, { capabilities = {}, serverInfo = { name = "chimera" } })
        else
          callback(nil, vim.NIL)
        end
      end)
      return true, 1
    end,
    notify = function(method)
      if method == "exit" then
        exit()
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = exit,
  }
end

--- Whether to report over LSP: the option is on and something listens
--- (fidget.nvim, lualine's LSP progress: an `LspProgress` autocommand).
--- Starting the client loads `vim.lsp` (~9 ms): not for no one.
local function wanted()
  local config = require("chimera.state").config
  return config
    and config.ui.lsp_progress
    and (client_id ~= nil or #vim.api.nvim_get_autocmds({ event = "LspProgress" }) > 0)
end

local queued = {} -- progress sent before the client started
local starting = false

local function start_client()
  starting = false
  local ok, started = pcall(vim.lsp.start, {
    name = "chimera",
    cmd = server,
    root_dir = require("chimera.state").root or vim.uv.cwd(),
  }, { attach = false })
  client_id = ok and started or nil
  local waiting = queued
  queued = {}
  if client_id and notify_client then
    for _, params in ipairs(waiting) do
      notify_client("$/progress", params)
    end
  end
end

--- Sends `$/progress` for agent `id`; the client starts on first use,
--- outside the core's delivery (it takes milliseconds).
local function lsp(id, value)
  if not wanted() then
    return
  end
  value.title = value.title or "Chimera"
  local params = { token = "chimera-" .. id, value = value }
  if client_id and notify_client and vim.lsp.get_client_by_id(client_id) then
    notify_client("$/progress", params)
    return
  end
  table.insert(queued, params)
  if not starting then
    starting = true
    vim.schedule(start_client)
  end
end

--- Agent `id` says `message` while it works.
function M.report(id, message)
  if not working[id] then
    working[id] = true
    lsp(id, { kind = "begin", message = message })
  else
    lsp(id, { kind = "report", message = message })
  end
  emit({ id = id, message = message, done = false })
end

--- Agent `rec` changed state: its progress ends when it stops working,
--- and the statusline is redrawn either way (its counts changed).
function M.state(rec)
  local done = rec.state ~= "running" and rec.state ~= "queued"
  if done and working[rec.id] then
    working[rec.id] = nil
    local message = rec.state == "completed" and ("proposal ready: " .. (rec.summary or ""))
      or (rec.error and (rec.state .. ": " .. rec.error:gsub("\n.*", "")))
      or rec.state
    lsp(rec.id, { kind = "end", message = message })
    emit({ id = rec.id, message = message, state = rec.state, done = true })
  elseif not done and not working[rec.id] then
    M.report(rec.id, rec.task)
  end
  pcall(vim.cmd.redrawstatus)
end

--- Ends the client (the core stopped).
function M.stop()
  working = {}
  queued = {}
  if client_id then
    pcall(vim.lsp.stop_client, client_id, true)
    client_id, notify_client = nil, nil
  end
end

--- The LSP client's id, if started (for tests and :checkhealth).
function M.client_id()
  return client_id
end

return M
