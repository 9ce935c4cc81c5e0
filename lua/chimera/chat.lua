--- `:Chimera chat`: a chat buffer with the node at the cursor (its
--- conversation is the node's event log, so it survives restarts), or the
--- free chat when the cursor is in no node: each message is a tool-mode
--- agent turn that sees the conversation so far; replies stream in, tool
--- calls and their results are shown folded, changes arrive as proposals,
--- and the conversation is kept in the project's database.
local remora = require("chimera.remora")
local state = require("chimera.state")

local M = {}

local buffers = {} -- node id (or "free") -> bufnr
local free_entries = {} -- the free conversation, as the core stored it
local streaming = {} -- agent id -> the text of its current step so far
local human_file -- the file the human was in when they opened the chat

--- Tool results are folded: their lines start with this.
local RESULT = "  │ "

function M.foldexpr(lnum)
  return vim.startswith(vim.fn.getline(lnum), RESULT) and "1" or "0"
end

--- The lines of one free-chat entry.
local function entry_lines(e)
  local lines = {}
  local text = vim.split(e.content, "\n", { plain = true })
  if e.role == "user" then
    table.insert(lines, "")
    table.insert(lines, "You: " .. text[1])
    vim.list_extend(lines, vim.list_slice(text, 2))
  elseif e.role == "assistant" then
    table.insert(lines, "Agent: " .. text[1])
    vim.list_extend(lines, vim.list_slice(text, 2))
  elseif e.role == "tool" then
    -- `call JSON` then the result.
    local ok, call = pcall(vim.json.decode, text[1])
    local label = ok and type(call) == "table" and call.tool
        and ("▸ %s %s"):format(call.tool, vim.json.encode(call.args or {}))
      or ("▸ " .. text[1])
    local result = table.concat(vim.list_slice(text, 2), "\n")
    local rok, decoded = pcall(vim.json.decode, result)
    if rok and type(decoded) == "table" then
      label = label .. (decoded.ok and "  ✓" or "  ✗")
      local body = decoded.ok and decoded.result or decoded.error
      result = type(body) == "string" and body or vim.inspect(body)
    end
    table.insert(lines, label)
    for _, l in ipairs(vim.split(result, "\n", { plain = true })) do
      table.insert(lines, RESULT .. l)
    end
  else
    table.insert(lines, "-- " .. text[1])
  end
  return lines
end

local function chimera()
  return require("chimera")
end

local FREE_HEADER = "# Chat with a tool-mode agent (kept in .chimera/chimera.db; :Chimera chat --clear forgets it)"
local FOOTER = { "", "-- i: write a message (#buffer #selection @file go with it)   q: close" }

--- The free chat's header and entries as lines, kept as entries arrive
--- so a streamed piece redraws only what follows them.
local free_lines = { FREE_HEADER }

--- The replies being streamed, then the footer.
local function free_tail()
  local lines = {}
  for id, text in pairs(streaming) do
    if vim.startswith(vim.trim(text), "{") then
      -- A tool call being written: its latest part, on one line.
      local flat = text:gsub("%s+", " ")
      table.insert(lines, ("Agent %s ▸ …%s"):format(id, flat:sub(-100)))
    else
      local parts = vim.split(text, "\n", { plain = true })
      table.insert(lines, ("Agent %s …: %s"):format(id, parts[1]))
      vim.list_extend(lines, vim.list_slice(parts, 2))
    end
  end
  return vim.list_extend(lines, FOOTER)
end

--- Replaces the lines of `buf` from line `from` (0-based) to the end, and
--- follows the end in its windows.
local function put(buf, from, lines)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, from, -1, false, lines)
  vim.bo[buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
end

local function node_lines(node_id)
  local n = remora.node(node_id)
  local lines = {
    n and ("# %s %s (%s) %s:%d-%d"):format(n.node_type, n.name, n.id, n.file_path, n.start_line, n.end_line)
      or ("# " .. node_id),
  }
  for _, r in ipairs(remora.history[node_id] or {}) do
    if r.event_type ~= "TopologyChangedEvent" then
      local text = remora.describe_event(r, node_id)
      for i, l in ipairs(vim.split(text, "\n", { plain = true })) do
        table.insert(lines, (i == 1 and os.date("%H:%M ", math.floor(r.timestamp / 1000)) or "      ") .. l)
      end
    end
  end
  if remora.pending[node_id] then
    table.insert(lines, "")
    local keymaps = require("chimera.keymaps")
    table.insert(lines, ("Proposal %s waiting: %s / %s in the code, or :Chimera diff %s"):format(
      remora.pending[node_id].id,
      keymaps.hint("accept"),
      keymaps.hint("reject"),
      remora.pending[node_id].id
    ))
  end
  return vim.list_extend(lines, FOOTER)
end

local function render(buf, node_id)
  if node_id == "free" then
    put(buf, 0, vim.list_extend(vim.list_slice(free_lines), free_tail()))
  else
    put(buf, 0, node_lines(node_id))
  end
end

remora.on_change("chat", function(node_id)
  local buf = buffers[node_id]
  if buf then
    render(buf, node_id)
  end
end)

local function render_free()
  if buffers.free then
    render(buffers.free, "free")
  end
end

-- Messages from the core about the free chat.

function M.entry_arrived(msg)
  local e = msg.entry
  table.insert(free_entries, e)
  vim.list_extend(free_lines, entry_lines(e))
  if e.role ~= "user" and e.agent_id then
    streaming[e.agent_id] = nil
  end
  render_free()
end

function M.delta_arrived(msg)
  streaming[msg.agent_id] = (streaming[msg.agent_id] or "") .. msg.text
  if buffers.free then
    put(buffers.free, #free_lines, free_tail())
  end
end

function M.history_arrived(msg)
  free_entries = msg.entries
  free_lines = { FREE_HEADER }
  for _, e in ipairs(free_entries) do
    vim.list_extend(free_lines, entry_lines(e))
  end
  render_free()
end

--- The free conversation as the core last sent it.
function M.entries()
  return free_entries
end

--- Forgets the free conversation.
function M.clear()
  chimera().start()
  streaming = {}
  require("chimera.loader").require().chat_clear()
end

--- Sends `message` in the chat of `node_id` ("free": a new turn of the
--- free chat). Returns the free turn's agent id.
function M.send(node_id, message)
  if not message or vim.trim(message) == "" then
    return
  end
  if node_id == "free" then
    local opts = {}
    if vim.bo.buftype ~= "" then
      -- Typed in the chat buffer: the turn is about the file the human came from.
      opts.file = human_file or false
    end
    local context, problems = require("chimera.references").context(message)
    opts.context = context
    if #problems > 0 then
      require("chimera.say").notify("chimera: " .. table.concat(problems, "; "), vim.log.levels.WARN)
    end
    return chimera().chat(message, opts)
  end
  remora.chat(node_id, message)
end


-- How long a chat typed before the first index waits for it.
local INDEX_WAIT_MS = 10000

--- Whether the first index of the project is still to come and `name`
--- (a buffer's file) is in the project: the node at the cursor is not
--- known yet, only not known *yet*.
local function index_pending(name)
  return state.config ~= nil
    and state.config.remora.index
    and state.topology_tick == nil
    and state.root ~= nil
    and vim.startswith(name, state.root .. "/")
end

--- Opens the chat with the node at the cursor (with `opts.free`, or
--- outside any node: the free chat); with `message`, sends it too.
function M.open(message, opts)
  chimera().start()
  local name = vim.api.nvim_buf_get_name(0)
  if vim.bo.buftype == "" and name ~= "" then
    human_file = name
    require("chimera.references").remember(vim.api.nvim_get_current_buf())
  end
  local n = not (opts and opts.free) and remora.node_at_cursor() or nil
  if not n and not (opts and (opts.free or opts.waited)) and index_pending(name) then
    -- Typed as soon as the file was open: the node at the cursor is known
    -- once the first index comes (else, after a while, the free chat).
    local win, done = vim.api.nvim_get_current_win(), false
    local function again()
      if done then
        return
      end
      done = true
      -- From the window it was typed in, and the chat takes the focus
      -- as it would have then.
      if vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_set_current_win(win)
      end
      M.open(message, vim.tbl_extend("force", opts or {}, { waited = true }))
    end
    vim.api.nvim_create_autocmd("User", { pattern = "ChimeraTopology", once = true, callback = vim.schedule_wrap(again) })
    vim.defer_fn(again, INDEX_WAIT_MS)
    return
  end
  local node_id = n and n.id or "free"
  local buf = buffers[node_id]
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    buffers[node_id] = buf
    vim.api.nvim_buf_set_name(buf, "chimera://chat/" .. node_id)
    vim.bo[buf].filetype = "markdown"
    vim.bo[buf].bufhidden = "hide"
    for _, key in ipairs({ "i", "a", "o", "<CR>" }) do
      vim.keymap.set("n", key, function()
        require("chimera.prompt").open(node_id, vim.api.nvim_get_current_win())
      end, { buffer = buf, desc = "Chimera: write a message" })
    end
    vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, desc = "Chimera: close the chat" })
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      callback = function()
        buffers[node_id] = nil
      end,
    })
  end
  if node_id ~= "free" then
    remora.request_history(node_id)
  else
    require("chimera.loader").require().chat_history()
  end
  render(buf, node_id)
  if #vim.fn.win_findbuf(buf) == 0 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_win_set_height(0, 12)
    if node_id == "free" then
      local win = vim.api.nvim_get_current_win()
      vim.wo[win][0].foldmethod = "expr"
      vim.wo[win][0].foldexpr = "v:lua.require'chimera.chat'.foldexpr(v:lnum)"
      vim.wo[win][0].foldlevel = 0
      -- A one-line result folds too.
      vim.wo[win][0].foldminlines = 0
    end
  end
  if message and vim.trim(message) ~= "" then
    M.send(node_id, message)
  end
  return buf, node_id
end

return M
