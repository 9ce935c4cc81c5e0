--- `:Chimera agents`: a window listing every agent (state, task, age,
--- files, summary or error, else what it is doing or the last line it
--- logged), live-updated, with keys to act on the agent under the cursor
--- (<CR>: its conversation). A view of `state.agents`.
local state = require("chimera.state")

local M = {}

local view -- { buf, win, ids = { line -> agent id } }

local ns = vim.api.nvim_create_namespace("chimera_agents")

--- How each state is highlighted in the list.
local STATE_HL = {
  queued = "Comment",
  running = "DiagnosticInfo",
  completed = "DiagnosticOk",
  accepted = "Comment",
  settled = "Comment",
  rejected = "Comment",
  cancelled = "Comment",
  failed = "DiagnosticError",
}

--- Tokens and cost in a few characters: "12.3k tok $0.004", "≈850 tok"
--- (estimated: the server did not count them), "" for none.
function M.tokens(u)
  if not u or ((u.input or 0) + (u.output or 0)) == 0 then
    return ""
  end
  local n = u.input + u.output
  local count = n >= 1000 and ("%.1fk"):format(n / 1000) or tostring(n)
  local cost = (u.cost or 0) > 0 and ((" $%.3f"):format(u.cost)) or ""
  return ("%s%s tok%s"):format(u.estimated and "≈" or "", count, cost)
end

--- This session's agents' tokens summed (those started since the core
--- started in this Neovim).
function M.session_usage()
  local total = { input = 0, output = 0, cost = 0, estimated = false }
  for _, a in pairs(state.agents) do
    if a.usage and (a.created_at or 0) >= (state.session_started or 0) then
      total.input = total.input + (a.usage.input or 0)
      total.output = total.output + (a.usage.output or 0)
      total.cost = total.cost + (a.usage.cost or 0)
      total.estimated = total.estimated or a.usage.estimated
    end
  end
  return total
end

local function line_for(a)
  local files = table.concat(a.changed_files or {}, ", ")
  local log = a.log or {}
  local working = a.state == "running" and state.progress[a.id]
  local detail = (a.error or a.summary or working or (log[#log] and ("log: " .. log[#log])) or ""):gsub("\n.*", "")
  return ("%s  %-10s %4s %16s  %s%s%s"):format(
    a.id,
    -- An accept the human undid with `u` (see bridge.watch_undo).
    ((state.undone[a.id] or a.undone) and a.state == "accepted" and "undone" or a.state) .. (a.conflicted and "!" or ""),
    require("chimera.commands").age(a.created_at),
    M.tokens(a.usage),
    a.task,
    files ~= "" and ("  [" .. files .. "]") or "",
    detail ~= "" and ("  — " .. detail) or ""
  )
end

local soon = false

--- How often an open window redraws (its ages count on).
M.tick_ms = 10000

--- Redraws the window at the next tick, once however many progress
--- lines arrive before it.
function M.refresh_soon()
  if view and not soon then
    soon = true
    vim.schedule(function()
      soon = false
      M.refresh()
    end)
  end
end

--- Redraws the window if it is open.
function M.refresh()
  if not (view and vim.api.nvim_buf_is_valid(view.buf)) then
    return
  end
  local session = M.tokens(M.session_usage())
  local lines, ids = {
    ("Chimera agents%s — <CR> conversation  a accept  r reject  R reject with feedback  c cancel  d diff  t tool calls  q close"):format(
      session ~= "" and (" (this session: " .. session .. ")") or ""
    ),
    "",
  }, {}
  for _, a in ipairs(require("chimera").agents()) do
    table.insert(lines, line_for(a))
    ids[#lines] = a.id
  end
  if #lines == 2 then
    table.insert(lines, "no agents yet: :Chimera task {what to do}")
  end
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  view.ids = ids
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  vim.api.nvim_buf_set_extmark(view.buf, ns, 0, 0, { line_hl_group = "ChimeraHint" })
  for row, id in pairs(ids) do
    local a = state.agents[id] or {}
    -- The state column: after the id and two spaces.
    local from = #id + 2
    vim.api.nvim_buf_set_extmark(view.buf, ns, row - 1, from, {
      end_col = math.min(from + 10, #lines[row]),
      hl_group = a.conflicted and "ChimeraConflict" or STATE_HL[a.state] or "Normal",
    })
  end
end

local function under_cursor()
  local id = view and view.ids[vim.api.nvim_win_get_cursor(0)[1]]
  if not id then
    require("chimera.say").notify("chimera: put the cursor on an agent's line", vim.log.levels.WARN)
  end
  return id
end

local function act(fn)
  return function()
    local id = under_cursor()
    if id then
      local ok, err = pcall(fn, id)
      if not ok then
        require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
      end
    end
  end
end

function M.open()
  -- Its window may show another buffer since (an :edit in it).
  if view and vim.api.nvim_win_is_valid(view.win) and vim.api.nvim_win_get_buf(view.win) == view.buf then
    vim.api.nvim_set_current_win(view.win)
    M.refresh()
    return view.buf
  end
  vim.cmd("botright 12new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "chimera-agents"
  pcall(vim.api.nvim_buf_set_name, buf, "chimera://agents")
  view = { buf = buf, win = vim.api.nvim_get_current_win(), ids = {} }
  -- The ages count on while the window is open.
  local ticker = assert(vim.uv.new_timer())
  ticker:start(M.tick_ms, M.tick_ms, vim.schedule_wrap(function()
    if view and view.buf == buf and #vim.fn.win_findbuf(buf) > 0 then
      M.refresh()
    end
  end))
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      ticker:stop()
      ticker:close()
    end,
  })
  -- A list, not text to edit: no gutter.
  for option, value in pairs({ number = false, relativenumber = false, signcolumn = "no", foldcolumn = "0", wrap = false, cursorline = true }) do
    vim.wo[view.win][0][option] = value
  end
  local c = require("chimera")
  local function map(lhs, fn)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true })
  end
  map("a", act(function(id)
    c.accept(id)
  end))
  map("r", act(function(id)
    c.reject(id)
  end))
  map("R", act(function(id)
    c.reject_with_feedback(id)
  end))
  map("c", act(function(id)
    c.cancel(id)
  end))
  map("d", act(function(id)
    c.diff(id)
  end))
  map("<CR>", act(function(id)
    require("chimera.transcript").open(id)
  end))
  map("t", act(function(id)
    require("chimera.history").open_calls(id)
  end))
  map("q", function()
    vim.api.nvim_win_close(0, true)
  end)
  M.refresh()
  return buf
end

return M
