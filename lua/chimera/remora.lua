--- Remora in the editor: topology queries, `:Chimera node`, enabling
--- inline IDs, and applying ID comments to loaded buffers.
local state = require("chimera.state")

local M = {}

local function lib()
  require("chimera").start()
  return require("chimera.loader").require()
end

--- The path the core knows a file by. A project buffer's name already is
--- (as buffers.lua pushes it); only other paths are resolved, since this
--- runs on every cursor move of the panel.
local function real(path)
  if state.root and vim.startswith(path, state.root .. "/") then
    return path
  end
  path = vim.fn.fnamemodify(path, ":p")
  return vim.uv.fs_realpath(path) or path
end

--- Live nodes of `path` (default: the current buffer's file), file node first.
function M.nodes(path)
  path = path or vim.api.nvim_buf_get_name(0)
  return lib().nodes(real(path)) or {}
end

--- One node by ID (orphaned ones included), or nil.
function M.node(id)
  return lib().node(id)
end

--- The innermost node around the cursor (the file's node outside any
--- definition), or nil when the buffer is not an indexed file.
function M.node_at_cursor()
  local name = vim.api.nvim_buf_get_name(0)
  if name == "" then
    return nil
  end
  return lib().node_at(real(name), vim.api.nvim_win_get_cursor(0)[1])
end

function M.callers(id)
  return lib().callers(id) or {}
end

function M.callees(id)
  return lib().callees(id) or {}
end

local function label(n)
  return ("%s %s (%s)"):format(n.node_type, n.name, n.id)
end

--- The lines `:Chimera node` shows for node `n`.
function M.describe(n)
  local lines = {
    ("%s  %s %s"):format(n.id, n.node_type, n.name),
    ("%s:%d-%d  %s"):format(n.file_path, n.start_line, n.end_line, n.status),
  }
  local parent = n.parent_id and M.node(n.parent_id)
  table.insert(lines, "parent: " .. (parent and label(parent) or "none (top level)"))
  for _, pair in ipairs({ { "callers", M.callers(n.id) }, { "callees", M.callees(n.id) } }) do
    local names = {}
    for _, c in ipairs(pair[2]) do
      table.insert(names, label(c))
    end
    table.insert(lines, pair[1] .. ": " .. (#names > 0 and table.concat(names, ", ") or "none"))
  end
  return lines
end

--- `:Chimera node`: the node at the cursor.
function M.show()
  local n = M.node_at_cursor()
  if not n then
    require("chimera.say").notify(
      "Chimera: no Remora node here (is this a file under the project root in a language Chimera reads, and is it indexed yet?)",
      vim.log.levels.WARN)
    return
  end
  require("chimera.say").show(table.concat(M.describe(n), "\n"))
end

--- `:Chimera remora enable [--yes]`.
function M.enable(opts)
  opts = opts or {}
  lib().remora_enable(opts.yes == true)
end

--- The core asks before writing ID comments into `msg.files` files.
function M.confirm(msg)
  if msg.files == 0 then
    lib().remora_enable(true)
    return
  end
  local question = ("Remora will add `# rm_…` ID comments to %d file%s (%d nodes). Continue?"):format(
    msg.files,
    msg.files == 1 and "" or "s",
    msg.nodes
  )
  if vim.fn.confirm(question, "&Yes\n&No", 2) == 1 then
    lib().remora_enable(true)
  else
    require("chimera.say").notify("Chimera: Remora not enabled; no file was changed", vim.log.levels.INFO)
  end
end

local pending = {} -- bufnr -> edits waiting for the end of insert mode

--- Applies ID edits to a buffer as one undoable change, unless the lines
--- they expect are no longer there (the core sends them again after the
--- next change).
local function apply(buf, edits)
  for _, e in ipairs(edits) do
    local line = vim.api.nvim_buf_get_lines(buf, e.start_row, e.start_row + 1, false)[1]
    if line ~= e.expect then
      return false
    end
  end
  local view = vim.api.nvim_get_current_buf() == buf and vim.fn.winsaveview() or nil
  -- Close the human's undo block, so `u` undoes exactly the IDs.
  vim.bo[buf].undolevels = vim.bo[buf].undolevels
  -- Last first, so earlier positions stay valid; joined into one undo step.
  for i = #edits, 1, -1 do
    local e = edits[i]
    if i < #edits then
      pcall(vim.cmd, "undojoin")
    end
    vim.api.nvim_buf_set_text(buf, e.start_row, e.start_col, e.end_row, e.end_col, e.lines)
  end
  if view then
    vim.fn.winrestview(view)
  end
  return true
end

function M.inject(msg)
  local buf = require("chimera.buffers").find(msg.path)
  if not buf or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local mode = vim.api.nvim_get_mode().mode
  if buf == vim.api.nvim_get_current_buf() and (mode:sub(1, 1) == "i" or mode:sub(1, 1) == "R") then
    pending[buf] = msg.edits
    vim.api.nvim_create_autocmd("InsertLeave", {
      buffer = buf,
      once = true,
      callback = function()
        local edits = pending[buf]
        pending[buf] = nil
        if edits then
          apply(buf, edits)
        end
      end,
    })
    return
  end
  apply(buf, msg.edits)
end

-- node id -> list of event records (oldest first), from the core's history
-- and the live event stream.
M.history = {}
-- node id -> events that arrived while its history was asked for.
M.early = {}
-- node id -> how many history answers it still waits for.
M.asking = {}
-- node id -> the pending proposal (agent id and diff) of its agent.
M.pending = {}
local listeners = {}

--- Calls `fn(node_id)` whenever a node's events change (chat, panel).
function M.on_change(key, fn)
  listeners[key] = fn
end

local function changed(node_id)
  for _, fn in pairs(listeners) do
    pcall(fn, node_id)
  end
end

local function nodes_of(record)
  local out = {}
  for _, k in ipairs({ "agent_id", "to_agent", "from_agent" }) do
    if record[k] then
      out[record[k]] = true
    end
  end
  return out
end

local function track_pending(r)
  if r.event_type == "RewriteProposalEvent" then
    M.pending[r.agent_id] = { id = r.proposal_id, diff = r.diff }
  elseif r.event_type == "RewriteAppliedEvent" or r.event_type == "RewriteRejectedEvent" then
    local p = M.pending[r.agent_id]
    if p and p.id == r.proposal_id then
      M.pending[r.agent_id] = nil
    end
  end
end

--- Asks the core for the stored events of `node_id` (answered by `history_arrived`).
function M.request_history(node_id)
  -- Events that arrive before the answer are kept for it: the answer may
  -- have been read from the store before they were written. Kept until
  -- every answer asked for is in (the panel and the chat may both ask,
  -- and the later answer may have been read first).
  M.early[node_id] = M.early[node_id] or {}
  M.asking[node_id] = (M.asking[node_id] or 0) + 1
  lib().node_history(node_id)
end

function M.history_arrived(msg)
  local seen = {}
  for _, r in ipairs(msg.events) do
    seen[r.event_id] = true
  end
  for _, r in ipairs(M.early[msg.node_id] or {}) do
    if not seen[r.event_id] then
      table.insert(msg.events, r)
    end
  end
  M.asking[msg.node_id] = math.max((M.asking[msg.node_id] or 1) - 1, 0)
  if M.asking[msg.node_id] == 0 then
    M.early[msg.node_id] = nil
  end
  M.history[msg.node_id] = msg.events
  M.pending[msg.node_id] = nil
  for _, r in ipairs(msg.events) do
    track_pending(r)
  end
  changed(msg.node_id)
end

function M.event(msg)
  local r = msg.record
  track_pending(r)
  for id in pairs(nodes_of(r)) do
    -- While a history is asked for again, the answer replaces the one
    -- kept: the event is kept for the answer too (it may have been read
    -- before the event was written).
    if M.early[id] then
      table.insert(M.early[id], r)
    end
    if M.history[id] then
      table.insert(M.history[id], r)
    end
    changed(id)
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "ChimeraRemoraEvent", modeline = false, data = r })
end

--- One line for an event, seen from node `node_id`.
function M.describe_event(r, node_id)
  local t = r.event_type
  if t == "HumanChatEvent" then
    return "You: " .. r.message
  elseif t == "AgentStartEvent" then
    return "working…"
  elseif t == "AgentCompleteEvent" then
    return "done: " .. (r.result or "")
  elseif t == "AgentErrorEvent" then
    return "error: " .. (r.error or "")
  elseif t == "AgentMessageEvent" then
    if r.from_agent == node_id then
      return ("→ %s: %s"):format(r.to_agent, r.message)
    end
    return ("← %s: %s"):format(r.from_agent, r.message)
  elseif t == "AgentQuestionEvent" then
    if r.from_agent == node_id then
      return ("→ %s asked: %s"):format(r.to_agent, r.question)
    end
    return ("← %s asks: %s"):format(r.from_agent, r.question)
  elseif t == "AgentAnswerEvent" then
    if r.to_agent == "human" then
      return "answer: " .. r.answer
    elseif r.from_agent == node_id then
      return ("→ %s, answered: %s"):format(r.to_agent, r.answer)
    end
    return ("← %s answers: %s"):format(r.from_agent, r.answer)
  elseif t == "RewriteProposalEvent" then
    return "proposal " .. r.proposal_id .. " ready"
  elseif t == "RewriteAppliedEvent" then
    return "proposal " .. r.proposal_id .. " accepted"
  elseif t == "RewriteRejectedEvent" then
    return "proposal " .. r.proposal_id .. " rejected" .. ((r.feedback or "") ~= "" and (": " .. r.feedback) or "")
  elseif t == "TopologyChangedEvent" then
    return "topology changed in " .. r.file_path
  end
  return t
end

local KINDS = { "function", "class", "method" }
M.KINDS = KINDS
local ghost_ns = vim.api.nvim_create_namespace("chimera_ghost_nodes")
local ghosts = {} -- agent id -> { buf = buf, mark = extmark id }

--- Asks for a new `kind` node `name` in the scope at the cursor (a ghost
--- node): its agent writes it and the result is a proposal. Without a
--- `description`, asks what it should do (empty: what its name says).
function M.new_node(kind, name, description)
  if not vim.tbl_contains(KINDS, kind) then
    error(("chimera: a new node is a function, class or method, not %q: :Chimera node new {kind} {name}"):format(tostring(kind)), 0)
  end
  if type(name) ~= "string" or name == "" then
    error("chimera: name the new node: :Chimera node new " .. kind .. " {name}", 0)
  end
  local file = real(vim.api.nvim_buf_get_name(0))
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local function send(what)
    lib().node_new(file, line, kind, name, what or "")
  end
  if description then
    send(description)
  else
    vim.ui.input({ prompt = ("What should %s `%s` do? "):format(kind, name) }, function(what)
      if what ~= nil then
        send(what)
      end
    end)
  end
end

--- The placeholder of a ghost node, where it will go, until its agent ends.
function M.ghost_arrived(msg)
  local buf = vim.fn.bufnr(msg.path)
  if buf < 0 or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local row, above = msg.line - 2, false
  if row < 0 then
    row, above = 0, true
  end
  ghosts[msg.agent_id] = {
    buf = buf,
    mark = vim.api.nvim_buf_set_extmark(buf, ghost_ns, math.min(row, last), 0, {
      virt_lines = { { { ("%s◌ new %s — its agent is writing it"):format(msg.indent or "", msg.label), "Comment" } } },
      virt_lines_above = above,
    }),
  }
end

--- An agent's state changed: a ghost node's placeholder goes when its
--- agent ends (its proposal, if any, is ghost text by then).
function M.agent_changed(rec)
  local g = ghosts[rec.id]
  if g and rec.state ~= "queued" and rec.state ~= "running" then
    ghosts[rec.id] = nil
    if vim.api.nvim_buf_is_valid(g.buf) then
      pcall(vim.api.nvim_buf_del_extmark, g.buf, ghost_ns, g.mark)
    end
  end
end

--- The placeholders shown now, by agent id (for tests and statuslines).
function M.ghosts()
  return vim.deepcopy(ghosts)
end

--- Sends `message` to the agent of `node_id`.
function M.chat(node_id, message)
  lib().node_chat(node_id, message)
end

function M.topology(msg)
  state.topology_tick = (state.topology_tick or 0) + 1
  vim.api.nvim_exec_autocmds("User", {
    pattern = "ChimeraTopology",
    modeline = false,
    data = { path = msg.path and (state.root .. "/" .. msg.path) or nil },
  })
end

return M
