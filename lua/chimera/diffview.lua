--- The diff view of a proposal: a float with a unified diff of every file
--- (built from the proposal's hunks), or a native `:diffthis` split of the
--- current file against its proposed text. A view: it owns no diff state.
local state = require("chimera.state")

local M = {}

--- Unchanged lines shown around each hunk, as `diff -u` does.
local CONTEXT = 3

--- The text a proposal's hunks of `path` apply to: the loaded buffer's
--- (what the human sees), else the file's.
local function base_lines(path)
  local buf = require("chimera.buffers").find(path)
  if buf and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  local ok, lines = pcall(vim.fn.readfile, path)
  return ok and lines or {}
end

--- Unified-diff lines of proposal `id`.
function M.lines(id)
  local agent = state.agents[id] or {}
  local out = {
    ("# chimera %s: %s"):format(id, agent.task or ""),
    ("# %s"):format(agent.conflicted and "CONFLICT: your edits overlap the agent's; both sides below. Reject (with feedback) to redo it"
      or (agent.summary or "")),
  }
  -- What its program said with log(), last lines first to last.
  local log = agent.log or {}
  for i = math.max(1, #log - 9), #log do
    table.insert(out, "# log: " .. log[i])
  end
  local n = 0
  for _, f in ipairs(state.proposals[id] or {}) do
    local rel = state.root and f.path:sub(#state.root + 2) or f.path
    if #(f.human_hunks or {}) > 0 then
      -- A conflict: first your side (what you changed since the agent
      -- started), then the agent's side, both against the same base.
      table.insert(out, ("# your edits to %s since the agent started:"):format(rel))
      for _, h in ipairs(f.human_hunks) do
        table.insert(out, ("@@ -%d,%d @@ yours"):format(h.old_start + 1, #h.old_lines))
        for _, l in ipairs(h.old_lines) do
          table.insert(out, "-" .. l)
        end
        for _, l in ipairs(h.new_lines) do
          table.insert(out, "+" .. l)
        end
      end
      table.insert(out, "# the agent's proposal for the same base:")
    end
    table.insert(out, "--- a/" .. rel)
    table.insert(out, "+++ b/" .. rel .. (f.change ~= "modified" and ("  (" .. f.change .. ")") or ""))
    local base = f.change == "added" and {} or base_lines(f.path)
    local shift, shown_to = 0, 0 -- lines of `base` shown so far
    for i, h in ipairs(f.hunks) do
      n = n + 1
      local next_start = f.hunks[i + 1] and f.hunks[i + 1].old_start or math.huge
      -- 0-based [from, to) of the context around the hunk, not repeating
      -- lines shown with the one before nor reaching into the next.
      local before_from = math.max(shown_to, h.old_start - CONTEXT)
      local after_to = math.min(#base, h.old_start + #h.old_lines + CONTEXT, next_start)
      local before = h.old_start - before_from
      local after = math.max(0, after_to - (h.old_start + #h.old_lines))
      table.insert(out, ("@@ -%d,%d +%d,%d @@ hunk %d"):format(
        before_from + 1, before + #h.old_lines + after, before_from + 1 + shift, before + #h.new_lines + after, n))
      for row = before_from + 1, h.old_start do
        table.insert(out, " " .. (base[row] or ""))
      end
      for _, l in ipairs(h.old_lines) do
        table.insert(out, "-" .. l)
      end
      for _, l in ipairs(h.new_lines) do
        table.insert(out, "+" .. l)
      end
      for row = h.old_start + #h.old_lines + 1, after_to do
        table.insert(out, " " .. (base[row] or ""))
      end
      shown_to = math.max(after_to, h.old_start + #h.old_lines)
      shift = shift + #h.new_lines - #h.old_lines
    end
  end
  return out
end

--- The proposed text of `path` (lines), from the current buffer lines.
function M.proposed(lines, file)
  local out, pos = {}, 0
  for _, h in ipairs(file.hunks) do
    for i = pos + 1, h.old_start do
      table.insert(out, lines[i])
    end
    vim.list_extend(out, h.new_lines)
    pos = h.old_start + #h.old_lines
  end
  for i = pos + 1, #lines do
    table.insert(out, lines[i])
  end
  return out
end

function M.open(id, opts)
  if not state.proposals[id] then
    error(("chimera: agent %s has no pending proposal"):format(id), 0)
  end
  if opts.split then
    local buf = vim.api.nvim_get_current_buf()
    local path = vim.api.nvim_buf_get_name(buf)
    local file
    for _, f in ipairs(state.proposals[id]) do
      if f.path == path then
        file = f
      end
    end
    if not file then
      error("chimera: the proposal does not touch this file; open one of its files first", 0)
    end
    local proposed = M.proposed(vim.api.nvim_buf_get_lines(buf, 0, -1, false), file)
    local ft = vim.bo[buf].filetype
    local left = vim.api.nvim_get_current_win()
    vim.cmd("diffthis")
    vim.cmd("vertical rightbelow new")
    local scratch = vim.api.nvim_get_current_buf()
    vim.bo[scratch].buftype = "nofile"
    vim.bo[scratch].bufhidden = "wipe"
    vim.api.nvim_buf_set_lines(scratch, 0, -1, false, proposed)
    vim.bo[scratch].modifiable = false
    vim.bo[scratch].filetype = ft
    pcall(vim.api.nvim_buf_set_name, scratch, ("chimera://%s/%s"):format(id, vim.fn.fnamemodify(path, ":t")))
    vim.cmd("diffthis")
    -- The split shows the change: ghost text would show it twice.
    local ghost = require("chimera.ghost")
    ghost.hide(buf, true)
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = scratch,
      once = true,
      callback = function()
        vim.schedule(function()
          ghost.hide(buf, false)
          if vim.api.nvim_win_is_valid(left) then
            vim.api.nvim_win_call(left, function()
              vim.cmd("diffoff")
            end)
          end
        end)
      end,
    })
    return scratch
  end
  local lines = M.lines(id)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local width = math.min(vim.o.columns - 4, 100)
  local height = math.min(vim.o.lines - 4, #lines)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    style = "minimal",
    width = width,
    height = math.max(1, height),
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = (" chimera %s — a accept, r reject, q close "):format(id),
  })
  local function map(lhs, fn)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true })
  end
  map("q", function()
    vim.api.nvim_win_close(win, true)
  end)
  map("a", function()
    vim.api.nvim_win_close(win, true)
    require("chimera").accept(id)
  end)
  map("r", function()
    vim.api.nvim_win_close(win, true)
    require("chimera").reject(id)
  end)
  return buf
end

return M
