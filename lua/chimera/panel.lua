--- `:Chimera panel`: a side panel following the cursor (seed §6c): the
--- node's ID, type, name and place, parent, callers, callees, status, the
--- proposals that change it — its own agent's and any task's whose hunks
--- touch its lines, read from the live proposal state — with their hunks
--- (a accept, r reject, R reject with feedback: the one under the panel's
--- cursor, else the first), and its recent events.
local remora = require("chimera.remora")
local state = require("chimera.state")

local M = {}

local buf, win, node_id, source_win
local shown = {} -- panel line -> proposal id, from the last render
local listed = {} -- the proposal ids of the last render, in order
local WIDTH = 52

local function add(lines, hl, text, group)
  table.insert(lines, text)
  if group then
    table.insert(hl, { #lines - 1, group })
  end
end

local function label(n)
  return ("%s %s %s"):format(n.id, n.node_type, n.name)
end

--- Whether hunk `h` (0-based old_start) changes lines of node `n` (1-based).
local function touches(h, n)
  local from, to = h.old_start, h.old_start + #h.old_lines
  if #h.old_lines == 0 then
    return from >= n.start_line - 1 and from <= n.end_line
  end
  return from < n.end_line and to > n.start_line - 1
end

--- The proposals changing node `n`: its own agent's first, then every
--- other whose hunks touch its lines; each as { id, hunks }.
local function proposals_of(n)
  local out, own = {}, remora.pending[n.id]
  local path = state.root and (state.root .. "/" .. n.file_path)
  local ids = vim.tbl_keys(state.proposals)
  table.sort(ids, function(a, b)
    return (own and a == own.id) or (not (own and b == own.id) and a < b)
  end)
  for _, id in ipairs(ids) do
    local hunks = {}
    for _, f in ipairs(state.proposals[id]) do
      if f.path == path then
        for _, h in ipairs(f.hunks or {}) do
          if touches(h, n) or (own and id == own.id) then
            table.insert(hunks, h)
          end
        end
      end
    end
    if #hunks > 0 then
      table.insert(out, { id = id, hunks = hunks })
    end
  end
  return out
end

local function render()
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  local lines, hl = {}, {}
  local n = node_id and remora.node(node_id)
  if not n then
    add(lines, hl, "No Remora node at the cursor.", "Comment")
    add(lines, hl, "Move into a file of the project in a language Chimera reads (:checkhealth chimera lists them).", "Comment")
  else
    add(lines, hl, n.id, "Title")
    add(lines, hl, n.node_type .. " " .. n.name)
    add(lines, hl, ("%s:%d-%d"):format(n.file_path, n.start_line, n.end_line), "Directory")
    add(lines, hl, string.rep("─", WIDTH - 2), "Comment")
    local parent = n.parent_id and remora.node(n.parent_id)
    add(lines, hl, "Parent: " .. (parent and label(parent) or "none (top level)"))
    for _, pair in ipairs({ { "Callers", remora.callers(n.id) }, { "Callees", remora.callees(n.id) } }) do
      if #pair[2] == 0 then
        add(lines, hl, pair[1] .. ": none")
      else
        add(lines, hl, pair[1] .. ":")
        for _, c in ipairs(pair[2]) do
          add(lines, hl, "  " .. label(c))
        end
      end
    end
    add(lines, hl, string.rep("─", WIDTH - 2), "Comment")
    local history = remora.history[n.id] or {}
    local last = history[#history]
    add(
      lines,
      hl,
      ("● %s%s"):format(
        n.status,
        last and (" (last: %s)"):format(require("chimera.commands").age(last.timestamp)) or ""
      ),
      n.status == "active" and "DiagnosticOk" or "DiagnosticWarn"
    )
    shown, listed = {}, {}
    for _, p in ipairs(proposals_of(n)) do
      local a = state.agents[p.id] or {}
      add(lines, hl, string.rep("─", WIDTH - 2), "Comment")
      add(lines, hl, ("PROPOSAL %s%s"):format(p.id, a.conflicted and " (CONFLICT)" or ""), "Title")
      shown[#lines] = p.id
      add(lines, hl, (a.summary or a.task or ""):gsub("\n.*", ""), "Comment")
      shown[#lines] = p.id
      for _, h in ipairs(p.hunks) do
        for _, l in ipairs(h.old_lines) do
          add(lines, hl, "-" .. l, "ChimeraRemoved")
          shown[#lines] = p.id
        end
        for _, l in ipairs(h.new_lines) do
          add(lines, hl, "+" .. l, "ChimeraAdded")
          shown[#lines] = p.id
        end
      end
      table.insert(listed, p.id)
    end
    if #listed > 0 then
      add(lines, hl, "[a]ccept  [r]eject  [R]eject + feedback", "Special")
    end
    add(lines, hl, string.rep("─", WIDTH - 2), "Comment")
    add(lines, hl, "EVENT LOG", "Title")
    for i = #history, math.max(1, #history - 9), -1 do
      local r = history[i]
      local text = remora.describe_event(r, n.id):gsub("\n", " ")
      add(lines, hl, os.date("%H:%M ", math.floor(r.timestamp / 1000)) .. text)
    end
    if #history == 0 then
      add(lines, hl, "(none yet)", "Comment")
    end
  end
  add(lines, hl, string.rep("─", WIDTH - 2), "Comment")
  add(lines, hl, "[c]hat  [r]efresh  [q]uit", "Comment")
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local ns = vim.api.nvim_create_namespace("chimera_panel")
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, h in ipairs(hl) do
    vim.api.nvim_buf_set_extmark(buf, ns, h[1], 0, { line_hl_group = h[2] })
  end
end

--- Follows the cursor of the code window.
local function follow()
  local cur = vim.api.nvim_get_current_win()
  if cur == win then
    return
  end
  if vim.bo.buftype ~= "" then
    return
  end
  source_win = cur
  local ok, n = pcall(remora.node_at_cursor)
  local id = ok and n and n.id or nil
  if id ~= node_id then
    node_id = id
    if id and not remora.history[id] then
      remora.request_history(id)
    end
    render()
  end
end

--- The proposal a key in the panel means: the one under its cursor, else
--- the first shown.
local function meant()
  if win and vim.api.nvim_get_current_win() == win then
    local id = shown[vim.api.nvim_win_get_cursor(win)[1]]
    if id then
      return id
    end
  end
  return listed[1]
end

local function act(verb)
  local id = meant()
  if not id then
    require("chimera.say").notify("Chimera: no proposal changes this node", vim.log.levels.INFO)
    return
  end
  if verb == "accept" then
    require("chimera").accept(id)
  elseif verb == "reject" then
    require("chimera").reject(id)
  else
    vim.ui.input({ prompt = "Feedback for " .. id .. ": " }, function(text)
      if text and vim.trim(text) ~= "" then
        require("chimera").reject(id, { feedback = text })
      end
    end)
  end
end

function M.is_open()
  return win ~= nil and vim.api.nvim_win_is_valid(win)
end

function M.close()
  if M.is_open() then
    vim.api.nvim_win_close(win, true)
  end
  win = nil
  pcall(vim.api.nvim_del_augroup_by_name, "chimera_panel")
end

--- Opens the panel (or closes it when open).
function M.toggle()
  if M.is_open() then
    M.close()
    return
  end
  require("chimera").start()
  source_win = vim.api.nvim_get_current_win()
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, "chimera://panel")
    vim.bo[buf].bufhidden = "hide"
    local map = function(lhs, fn, desc)
      vim.keymap.set("n", lhs, fn, { buffer = buf, desc = "Chimera panel: " .. desc })
    end
    map("a", function()
      act("accept")
    end, "accept the proposal")
    map("r", function()
      if meant() then
        act("reject")
      else
        render()
      end
    end, "reject the proposal, or refresh")
    map("R", function()
      act("feedback")
    end, "reject with feedback")
    map("c", function()
      if source_win and vim.api.nvim_win_is_valid(source_win) then
        vim.api.nvim_set_current_win(source_win)
      end
      require("chimera.chat").open()
    end, "chat with the node")
    map("n", function()
      if not (source_win and vim.api.nvim_win_is_valid(source_win)) then
        return
      end
      vim.ui.select(remora.KINDS, { prompt = "Chimera: a new" }, function(kind)
        if not kind then
          return
        end
        vim.ui.input({ prompt = ("Name of the new %s: "):format(kind) }, function(name)
          if name and name ~= "" then
            vim.api.nvim_set_current_win(source_win)
            local ok, err = pcall(remora.new_node, kind, name)
            if not ok then
              require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
            end
          end
        end)
      end)
    end, "a new node here (a ghost node its agent writes)")
    map("q", M.close, "close")
  end
  vim.cmd("botright vsplit")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.api.nvim_win_set_width(win, WIDTH)
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].wrap = false
  vim.wo[win].winfixwidth = true
  vim.api.nvim_set_current_win(source_win)
  local group = vim.api.nvim_create_augroup("chimera_panel", { clear = true })
  vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "BufEnter" }, { group = group, callback = follow })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = { "ChimeraTopology", "ChimeraAgentState", "ChimeraProposal", "ChimeraAccepted", "ChimeraRejected" },
    callback = function()
      render()
    end,
  })
  node_id = false
  follow()
end

remora.on_change("panel", function(id)
  if id == node_id then
    render()
  end
end)

--- The node the panel shows (for tests and statuslines).
function M.node_id()
  return node_id or nil
end

--- The panel's lines.
function M.lines()
  return buf and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
end

return M
