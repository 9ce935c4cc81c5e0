--- An agent's conversation (`:Chimera chat --agent [id]`, <CR> in the
--- agents window): what it was told, what it said, its plan and its tool
--- calls. Finished turns come from the agent's log as the core keeps it;
--- the turn in progress streams in piece by piece (ACP agents). A view of
--- `state.agents` and the streamed pieces, with keys to act on the agent.
local state = require("chimera.state")

local M = {}

local ns = vim.api.nvim_create_namespace("chimera_transcript")

--- agent id -> { items = { {kind=..., ...} }, plan = { "[x] ...", ... } }:
--- the turns not yet in the agent's log.
local live = {}
local views = {} -- agent id -> bufnr
local dirty = {} -- agent id -> true: redraw at the next tick

--- agent id -> its model's replies (Chimera's own agents, which keep no
--- transcript): { {label, text, ms} }, from the effect log; `state` is the
--- agent's state when they were read, so that they are read again once
--- it has ended.
local replies = {}

--- Reads agent `id`'s model replies from the effect log, then redraws.
local function fetch_replies(id, refresh)
  local a = state.agents[id] or {}
  replies[id] = { state = a.state, items = (replies[id] or {}).items or {} }
  require("chimera.history").effects({ kind = "llm" }, function(effects)
    local items = {}
    for _, e in ipairs(effects or {}) do
      if e.agent_id == id then
        table.insert(items, { label = e.input, text = e.output, ms = e.duration_ms })
      end
    end
    replies[id].items = items
    refresh(id)
  end)
end

local HELP = "# a accept  r reject  R reject with feedback (its next turn)  c cancel  d diff  q close"

local function header(id)
  local a = state.agents[id]
  if not a then
    return ("# Agent %s"):format(id)
  end
  return ("# Agent %s%s, %s: %s"):format(id, a.external and (" (" .. a.external .. ")") or "", a.state, a.task)
end

--- The lines of the view, and which of them to highlight how.
local function lines_of(id)
  local lines, marks = { header(id), HELP, "" }, {}
  local function add(text, hl)
    for _, l in ipairs(vim.split(text, "\n", { plain = true })) do
      table.insert(lines, l)
      if hl then
        marks[#lines] = hl
      end
    end
  end
  local a = state.agents[id] or {}
  for _, l in ipairs(a.log or {}) do
    add(l, (vim.startswith(l, "»") or vim.startswith(l, "▸")) and "ChimeraHint" or nil)
  end
  local l = live[id]
  for _, item in ipairs(l and l.items or {}) do
    if item.kind == "prompt" then
      add("» " .. (vim.split(vim.trim(item.text), "\n", { plain = true })[1] or ""), "ChimeraHint")
    elseif item.kind == "message" then
      -- As the log keeps it: no empty lines around the words.
      add((item.text:gsub("^%s*\n", ""):gsub("\n%s*$", "")))
    elseif item.kind == "thought" then
      add("(thinking) " .. item.text:gsub("\n", " "), "Comment")
    elseif item.kind == "tool" then
      add(("▸ %s (%s)"):format(item.title, item.status), item.status == "failed" and "ChimeraConflict" or "ChimeraHint")
    end
  end
  if l and l.plan and #l.plan > 0 then
    add("")
    add("Plan:", "ChimeraHint")
    for _, e in ipairs(l.plan) do
      add("  " .. e)
    end
  end
  if #lines == 3 then
    -- Chimera's own agents keep no transcript: what it was asked, its
    -- model's replies (from the effect log), what it is doing, and where
    -- the rest of its work is.
    add("» " .. (a.task or ""), "ChimeraHint")
    local got = replies[id]
    if (not got or got.state ~= a.state) and views[id] then
      fetch_replies(id, M.refresh)
    end
    for _, r in ipairs(got and got.items or {}) do
      add(("▸ the model, %s (%.1f s):"):format(r.label, (r.ms or 0) / 1000), "ChimeraHint")
      add(vim.trim(r.text or ""))
    end
    if a.state == "running" or a.state == "queued" then
      add(state.progress[id] or "(waiting for its first words)", "Comment")
    else
      add((":Chimera calls %s lists what it read and wrote"):format(id), "Comment")
    end
  end
  local last = a.error and ("-- failed: " .. a.error)
    or (a.state == "completed" and ("-- proposal ready: %s"):format(a.summary or ""))
    or nil
  if last then
    add("")
    add((last:gsub("\n.*", "")), a.error and "ChimeraConflict" or "ChimeraHint")
  end
  return lines, marks
end

local function render(id)
  dirty[id] = nil
  local buf = views[id]
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  local lines, marks = lines_of(id)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for row, hl in pairs(marks) do
    vim.api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { line_hl_group = hl })
  end
  -- Follow the end, as a chat does.
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    pcall(vim.api.nvim_win_set_cursor, win, { #lines, 0 })
  end
end

--- Redraws `id`'s view once per tick however many pieces arrived.
local function refresh(id)
  if views[id] and not dirty[id] then
    dirty[id] = true
    vim.schedule(function()
      render(id)
    end)
  end
end

M.refresh = refresh

--- A streamed piece of agent `msg.id`'s turn.
function M.arrived(msg)
  local l = live[msg.id] or { items = {} }
  live[msg.id] = l
  local p, last = msg.piece, l.items[#l.items]
  if p.kind == "message" or p.kind == "thought" then
    if last and last.kind == p.kind then
      last.text = last.text .. p.text
    else
      table.insert(l.items, { kind = p.kind, text = p.text })
    end
  elseif p.kind == "tool" then
    local known
    for i = #l.items, 1, -1 do
      if l.items[i].kind == "tool" and l.items[i].call == p.call then
        known = l.items[i]
        break
      end
    end
    if known then
      known.title, known.status = p.title, p.status
    else
      table.insert(l.items, { kind = "tool", call = p.call, title = p.title, status = p.status })
    end
  elseif p.kind == "plan" then
    l.plan = p.entries
  elseif p.kind == "prompt" then
    table.insert(l.items, { kind = "prompt", text = p.text })
  end
  refresh(msg.id)
end

--- Agent `rec` changed: once it stops working its turns are in its log.
function M.agent_changed(rec)
  if rec.state ~= "running" and rec.state ~= "queued" then
    live[rec.id] = nil
  end
  refresh(rec.id)
end

--- What the view of `id` shows (for tests and statuslines).
function M.lines(id)
  return (lines_of(id))
end

--- The agent a bare `:Chimera chat --agent` means: the newest ACP agent,
--- else the newest agent.
local function newest()
  local any, acp
  for _, a in ipairs(require("chimera").agents()) do
    if not any or a.created_at >= any.created_at then
      any = a
    end
    if a.external and (not acp or a.created_at >= acp.created_at) then
      acp = a
    end
  end
  return (acp or any or {}).id
end

--- Opens the conversation of agent `id` (default: the newest ACP agent).
function M.open(id)
  id = id or newest()
  if not id then
    error("chimera: no agents yet; start one with :Chimera task --agent NAME {what to do}", 0)
  end
  if not state.agents[id] then
    error(("chimera: no agent with id %s (see :Chimera agents)"):format(id), 0)
  end
  local buf = views[id]
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    views[id] = buf
    pcall(vim.api.nvim_buf_set_name, buf, "chimera://agent/" .. id)
    vim.bo[buf].filetype = "chimera-transcript"
    vim.bo[buf].bufhidden = "wipe"
    local c = require("chimera")
    local function map(lhs, fn, desc)
      vim.keymap.set("n", lhs, function()
        local ok, err = pcall(fn, id)
        if not ok then
          require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
        end
      end, { buffer = buf, nowait = true, desc = "Chimera: " .. desc })
    end
    map("a", c.accept, "accept")
    map("r", c.reject, "reject")
    map("R", c.reject_with_feedback, "reject with feedback")
    map("c", c.cancel, "cancel")
    map("d", c.diff, "diff")
    vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, desc = "Chimera: close" })
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      callback = function()
        views[id] = nil
      end,
    })
  end
  if #vim.fn.win_findbuf(buf) == 0 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_win_set_height(0, 12)
    vim.wo[0][0].wrap = true
  else
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
  end
  render(id)
  return buf
end

return M
