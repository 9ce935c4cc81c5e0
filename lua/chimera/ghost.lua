--- Draws proposals as ghost text: added lines as virtual lines, removed
--- lines highlighted in place, one note per proposal. A view of
--- `state.proposals`, rebuilt from it; it owns no proposal data.
local state = require("chimera.state")

local M = {}

M.ns = vim.api.nvim_create_namespace("chimera")

--- bufnr -> list of { mark = extmark id, id = agent id, first = bool }.
local marks = {}

local function expand_tabs(line, ts)
  if not line:find("\t", 1, true) then
    return line
  end
  local out, col = {}, 0
  for ch in line:gmatch(".") do
    if ch == "\t" then
      local n = ts - (col % ts)
      table.insert(out, string.rep(" ", n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + 1
    end
  end
  return table.concat(out)
end

--- The keys that accept and reject, as mapped (a key left to another
--- mapping is not advertised: its command is).
local function keys_hint(conflicted)
  local keymaps = require("chimera.keymaps")
  if conflicted then
    -- An accept would be refused: the way forward is to look at both sides.
    return (" CONFLICT with your edits [:Chimera diff, %s]"):format(keymaps.hint("reject"))
  end
  return (" [%s, %s]"):format(keymaps.hint("accept"), keymaps.hint("reject"))
end

--- A proposal's note, cut to the window: `head` (its id and keys) always
--- whole, then as much of `summary` as fits, then `tail`. At the end of
--- its line when the head fits there, else on a line of its own below the
--- hunk (`below`), so the keys are never cut off at 80 columns; in a window
--- narrower than the head, `compact` (the id and the bare keys).
local function fitted_note(head, compact, summary, tail, width, line_width)
  local say = require("chimera.say")
  local eol_room = width - line_width - 3 -- two spaces before, one spare
  local min = vim.fn.strdisplaywidth(head) + 12
  if eol_room >= min then
    local room = eol_room - vim.fn.strdisplaywidth(head .. tail)
    return "  " .. head .. say.fit(summary, room) .. tail, false
  end
  local room = width - 1 - vim.fn.strdisplaywidth(head .. tail)
  if room >= 8 then
    return head .. say.fit(summary, room) .. tail, true
  end
  -- Too narrow for the summary (the agents window has it): the keys and
  -- the extent; narrower still, the keys alone, as short as they go.
  local keys = head:gsub(": $", "")
  if vim.fn.strdisplaywidth(keys) <= width - 1 then
    return say.fit(keys .. tail, width - 1), true
  end
  return say.fit(compact, width - 1), true
end

--- The note in the fewest columns: "◆ chimera 3f2a91c0 <Leader>a/<Leader>r"
--- (a conflicted one: "◆ chimera 3f2a91c0 CONFLICT <Leader>r").
local function compact_keys(id, conflicted)
  local keymaps = require("chimera.keymaps")
  local accept = keymaps.key("accept") or ":Chimera accept"
  local reject = keymaps.key("reject") or ":Chimera reject"
  if conflicted then
    return ("◆ chimera %s CONFLICT %s"):format(id, reject)
  end
  return ("◆ chimera %s %s/%s"):format(id, accept, reject)
end

--- How much of proposal `id` there is beside what is in view: " · 3
--- hunks, 2 off-screen, +3 in b.py" (nothing for a one-hunk proposal).
--- `hidden`: its hunks in `path` outside the window showing it.
local function extent(id, path, here, hidden)
  local total, elsewhere, files = 0, 0, {}
  for _, f in ipairs(state.proposals[id] or {}) do
    total = total + (f.hunk_count or 0)
    if f.path ~= path then
      elsewhere = elsewhere + (f.hunk_count or 0)
      table.insert(files, vim.fn.fnamemodify(f.path, ":t"))
    end
  end
  if total <= 1 then
    return ""
  end
  local out = (" · %d hunk%s"):format(here, here == 1 and "" or "s")
  if hidden > 0 then
    out = out .. (", %d off-screen"):format(hidden)
  end
  if elsewhere > 0 then
    out = out
      .. (", +%d in %s"):format(elsewhere, #files == 1 and files[1] or (#files .. " other files"))
  end
  return out
end

--- Proposals touching `path`: list of { id, file, offset }, where offset
--- is the number of hunks of that proposal in files before this one (hunks
--- are numbered from 1 in file order across a proposal). Only the files of
--- `path` have their hunks fetched.
function M.for_path(path)
  local out = {}
  for id, files in pairs(state.proposals) do
    local offset = 0
    for _, file in ipairs(files) do
      if file.path == path then
        table.insert(out, { id = id, file = file, offset = offset })
      end
      offset = offset + (file.hunk_count or 0)
    end
  end
  table.sort(out, function(a, b)
    return a.id < b.id
  end)
  return out
end

local hidden = {} -- bufnr -> true: its proposals are shown elsewhere (a diff split)

--- Hides (`yes`) or shows again the ghost text of `buf`.
function M.hide(buf, yes)
  hidden[buf] = yes or nil
  M.render(buf)
end

--- Redraws every proposal of buffer `buf`. Clearing and drawing happen in
--- one go, with no redraw in between, so nothing flickers.
function M.render(buf)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  marks[buf] = {}
  if hidden[buf] then
    return
  end
  local path = vim.api.nvim_buf_get_name(buf)
  if path == "" then
    return
  end
  local line_count = vim.api.nvim_buf_line_count(buf)
  local ts = vim.bo[buf].tabstop
  -- The rows in view (0-based), in the window showing the buffer.
  local win = vim.fn.bufwinid(buf)
  local top, bottom = 0, math.huge
  local width = vim.o.columns
  if win ~= -1 then
    top, bottom = vim.fn.line("w0", win) - 1, vim.fn.line("w$", win) - 1
    local info = vim.fn.getwininfo(win)[1]
    width = info.width - info.textoff
  end
  for _, entry in ipairs(M.for_path(path)) do
    local agent = state.agents[entry.id] or {}
    local conflicted = agent.conflicted
    for i, hunk in ipairs(entry.file.hunks or {}) do
      local start = math.min(hunk.old_start, line_count)
      local n_old = #hunk.old_lines
      for row = start, math.min(start + n_old, line_count) - 1 do
        vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
          line_hl_group = "ChimeraRemoved",
          priority = 200,
        })
      end
      local virt = {}
      for _, line in ipairs(hunk.new_lines) do
        table.insert(virt, { { expand_tabs(line, ts), "ChimeraAdded" } })
      end
      local anchor, above
      if n_old > 0 then
        anchor, above = math.min(start + n_old, line_count) - 1, false
      elseif start > 0 then
        anchor, above = start - 1, false
      else
        anchor, above = 0, true
      end
      anchor = math.max(0, math.min(anchor, line_count - 1))
      local opts = { virt_lines = #virt > 0 and virt or nil, virt_lines_above = above, priority = 200 }
      if i == 1 then
        local hidden = 0
        for _, other in ipairs(entry.file.hunks) do
          local row = math.min(other.old_start, line_count - 1)
          if row < top or row > bottom then
            hidden = hidden + 1
          end
        end
        local note, below = fitted_note(
          ("◆ chimera %s%s: "):format(entry.id, keys_hint(conflicted)),
          compact_keys(entry.id, conflicted),
          agent.summary or "proposal",
          extent(entry.id, path, #entry.file.hunks, hidden),
          width,
          vim.fn.strdisplaywidth((vim.api.nvim_buf_get_lines(buf, anchor, anchor + 1, false)[1] or ""))
        )
        local chunk = { note, conflicted and "ChimeraConflict" or "ChimeraHint" }
        if below then
          table.insert(virt, { chunk })
          opts.virt_lines = virt
        else
          opts.virt_text = { chunk }
          opts.virt_text_pos = "eol"
        end
      end
      local ok, mark = pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, anchor, 0, opts)
      if ok then
        -- `start_mark` sits on the hunk's first line, for jumping and "nearest".
        local first_row = math.max(0, math.min(start, line_count - 1))
        local _, start_mark = pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, first_row, 0, {})
        table.insert(marks[buf], { mark = start_mark or mark, id = entry.id, key = hunk.key, number = entry.offset + i })
      end
    end
  end
end

--- A window scrolled: the notes of the proposals in it count what is
--- off-screen anew.
function M.scrolled()
  local wins = vim.v.event or {}
  if vim.tbl_isempty(wins) then
    wins = { [tostring(vim.api.nvim_get_current_win())] = true }
  end
  for key in pairs(wins) do
    local win = tonumber(key)
    if win and vim.api.nvim_win_is_valid(win) then
      local buf = vim.api.nvim_win_get_buf(win)
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and #M.for_path(name) > 0 then
        M.render(buf)
      end
    end
  end
end

--- Redraws every loaded buffer showing one of `paths` (all if nil).
function M.render_paths(paths)
  local want = paths and {} or nil
  for _, p in ipairs(paths or {}) do
    want[p] = true
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and (not want or want[name]) then
        M.render(buf)
      end
    end
  end
end

--- The proposal and hunk under or nearest the cursor in `buf`: id, the
--- hunk's key (what an accept or reject of it sends: it names the same
--- change even if the proposal moved since it was drawn) and its number
--- (nil if the buffer shows none).
function M.nearest(buf, row)
  local best, best_dist
  for _, m in ipairs(marks[buf] or {}) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(buf, M.ns, m.mark, {})
    if pos[1] then
      local dist = math.abs(pos[1] - row)
      if not best_dist or dist < best_dist then
        best, best_dist = m, dist
      end
    end
  end
  if best then
    return best.id, best.key, best.number
  end
end

--- Rows of every hunk shown in `buf`, sorted.
function M.hunk_rows(buf)
  local rows = {}
  for _, m in ipairs(marks[buf] or {}) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(buf, M.ns, m.mark, {})
    if pos[1] then
      table.insert(rows, pos[1])
    end
  end
  table.sort(rows)
  return rows
end

--- Extmarks of `buf` in Chimera's namespace (for tests and :checkhealth).
function M.extmarks(buf)
  return vim.api.nvim_buf_get_extmarks(buf, M.ns, 0, -1, { details = true })
end

return M
