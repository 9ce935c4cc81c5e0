--- `:Chimera chat`: a chat buffer with the node at the cursor (its
--- conversation is the node's event log, so it survives restarts), or with
--- a free agent when the cursor is in no node.
local remora = require("chimera.remora")

local M = {}

local buffers = {} -- node id (or "free") -> bufnr
local free_log = {} -- lines of the free agent's conversation (this session)

local function chimera()
  return require("chimera")
end

local function render(buf, node_id)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local lines = {}
  if node_id == "free" then
    table.insert(lines, "# Chat with a free agent (no node at the cursor)")
    vim.list_extend(lines, free_log)
  else
    local n = remora.node(node_id)
    table.insert(
      lines,
      n and ("# %s %s (%s) %s:%d-%d"):format(n.node_type, n.name, n.id, n.file_path, n.start_line, n.end_line)
        or ("# " .. node_id)
    )
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
      table.insert(lines, ("Proposal %s waiting: <Leader>a / <Leader>r in the code, or :Chimera diff %s"):format(
        remora.pending[node_id].id,
        remora.pending[node_id].id
      ))
    end
  end
  table.insert(lines, "")
  table.insert(lines, "-- i: write a message   q: close")
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    pcall(vim.api.nvim_win_set_cursor, win, { #lines, 0 })
  end
end

remora.on_change("chat", function(node_id)
  local buf = buffers[node_id]
  if buf then
    render(buf, node_id)
  end
end)

--- Sends `message` in the chat of `node_id` ("free": a new free agent).
function M.send(node_id, message)
  if not message or vim.trim(message) == "" then
    return
  end
  if node_id == "free" then
    local id = chimera().spawn(message)
    table.insert(free_log, "You: " .. message)
    table.insert(free_log, ("agent %s started"):format(id))
    local buf = buffers.free
    vim.api.nvim_create_autocmd("User", {
      pattern = "ChimeraAgentState",
      callback = function(ev)
        if ev.data.id ~= id or ev.data.state == "queued" or ev.data.state == "running" then
          return
        end
        local a = chimera().agent(id) or {}
        table.insert(free_log, ("agent %s %s: %s"):format(id, a.state, a.summary or a.error or ""))
        if buf then
          render(buf, "free")
        end
        return a.state ~= "completed"
      end,
    })
    if buf then
      render(buf, "free")
    end
    return
  end
  remora.chat(node_id, message)
end

local function prompt(node_id)
  local n = node_id ~= "free" and remora.node(node_id) or nil
  vim.ui.input({ prompt = ("Message to %s: "):format(n and n.name or "a free agent") }, function(text)
    M.send(node_id, text)
  end)
end

--- Opens the chat with the node at the cursor; with `message`, sends it too.
function M.open(message)
  chimera().start()
  local n = remora.node_at_cursor()
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
        prompt(node_id)
      end, { buffer = buf, desc = "Chimera: message" })
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
  end
  render(buf, node_id)
  if #vim.fn.win_findbuf(buf) == 0 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_win_set_height(0, 12)
  end
  if message and vim.trim(message) ~= "" then
    M.send(node_id, message)
  end
  return buf, node_id
end

return M
