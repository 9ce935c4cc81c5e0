--- Everything Chimera tells the user, through one door. With Neovim's own
--- `vim.notify` a message longer than the echo area, or a second message
--- before the screen is redrawn, stops everything at "Press ENTER": so a
--- message is said in one line that fits (`v:echospace`), at most one per
--- event-loop turn (the most severe wins), never while the command line
--- is in use; a warning or error that does not fit also shows whole in a
--- floating note that closes by itself. Every message is kept whole for
--- `:Chimera log`. A notification plugin (nvim-notify, noice, snacks,
--- fidget) that replaced `vim.notify` gets every message whole instead:
--- it has its own room.
local M = {}

local levels = vim.log.levels
local KEEP = 200 -- messages kept for :Chimera log
local said = {} -- { time, level, text }, oldest first
local pending -- the message waiting for the next turn: { text, level }
local progress_pending -- the progress line waiting for the next turn
local scheduled = false

local highlight = {
  [levels.ERROR] = "ErrorMsg",
  [levels.WARN] = "WarningMsg",
}

--- Whether `vim.notify` is still Neovim's own (which echoes).
local function builtin_notify()
  local ok, info = pcall(debug.getinfo, vim.notify, "S")
  return ok and info and info.source == "@vim/_editor.lua"
end

--- `text` on one line of at most `width` display cells: whitespace runs
--- (newlines included) become one space; what is cut ends in "…".
function M.fit(text, width)
  local line = vim.trim(tostring(text):gsub("%s+", " "))
  if width < 1 then
    return ""
  end
  if vim.fn.strdisplaywidth(line) <= width then
    return line
  end
  local chars = vim.fn.strchars(line)
  local lo, hi = 0, chars
  -- The longest prefix that fits with the "…".
  while lo < hi do
    local mid = math.ceil((lo + hi) / 2)
    if vim.fn.strdisplaywidth(vim.fn.strcharpart(line, 0, mid)) <= width - 1 then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return vim.fn.strcharpart(line, 0, lo) .. "…"
end

--- The room for a message: the echo area less a column, so the cursor
--- never wraps it onto a second line.
local function room()
  return math.max(1, (vim.v.echospace or vim.o.columns - 12) - 1)
end

--- Whether the screen may be written to now: not while the user types a
--- command or a prompt waits (an echo there is what makes "Press ENTER").
local function screen_free()
  local mode = vim.api.nvim_get_mode()
  return not mode.blocking and not mode.mode:match("^[cr]")
end

local floats = {} -- open floating notes, newest last

--- Shows `text` whole in a small floating note at the top right, closed
--- after `ms`; notes stack downwards.
local function float(text, level, ms)
  local width = math.min(60, vim.o.columns - 4)
  if width < 20 or #vim.api.nvim_list_uis() == 0 then
    return
  end
  local lines = {}
  for _, paragraph in ipairs(vim.split(text, "\n", { trimempty = true })) do
    local rest = vim.trim(paragraph)
    while vim.fn.strdisplaywidth(rest) > width do
      local cut = width
      local head = vim.fn.strcharpart(rest, 0, width)
      local space = head:match(".*()%s")
      if space and space > width / 2 then
        cut = space - 1
      end
      table.insert(lines, vim.fn.strcharpart(rest, 0, cut))
      rest = vim.trim(vim.fn.strcharpart(rest, cut))
    end
    table.insert(lines, rest)
  end
  local max_lines = math.max(1, math.floor(vim.o.lines / 2))
  if #lines > max_lines then
    lines = vim.list_slice(lines, 1, max_lines)
    lines[max_lines] = M.fit(lines[max_lines] .. " …", width)
  end
  local row = 1
  for _, f in ipairs(floats) do
    if vim.api.nvim_win_is_valid(f) then
      row = row + vim.api.nvim_win_get_height(f) + 2
    end
  end
  if row + #lines > vim.o.lines - 3 then
    row = 1
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = "editor",
    row = row,
    col = vim.o.columns - width - 2,
    width = width,
    height = #lines,
    style = "minimal",
    border = "rounded",
    title = " Chimera ",
    focusable = false,
    noautocmd = true,
    zindex = 150,
  })
  if not ok then
    return
  end
  vim.wo[win].winhighlight = "NormalFloat:" .. (highlight[level] or "NormalFloat") .. ",FloatBorder:" .. (highlight[level] or "FloatBorder")
  table.insert(floats, win)
  local function close()
    pcall(vim.api.nvim_win_close, win, true)
    floats = vim.tbl_filter(function(f)
      return f ~= win and vim.api.nvim_win_is_valid(f)
    end, floats)
  end
  vim.defer_fn(close, ms)
  -- A float left in a tab page the user leaves is closed: Neovim 0.11
  -- crashes wiping its buffer from another tab page (`:%bwipeout`).
  vim.api.nvim_create_autocmd("TabLeave", { once = true, callback = close })
end

local flush

local function later()
  if not scheduled then
    scheduled = true
    vim.schedule(flush)
  end
end

flush = function()
  scheduled = false
  if not pending and not progress_pending then
    return
  end
  if not screen_free() then
    -- Again once the command line is left (checked every 200 ms).
    scheduled = true
    vim.defer_fn(flush, 200)
    return
  end
  local msg, line = pending, progress_pending
  pending, progress_pending = nil, nil
  if msg then
    local fitted = M.fit(msg.text, room())
    vim.api.nvim_echo({ { fitted, highlight[msg.level] } }, true, {})
    if fitted ~= vim.trim(msg.text) and (msg.level or 0) >= levels.WARN then
      float(msg.text, msg.level, msg.level >= levels.ERROR and 10000 or 6000)
    end
  elseif line then
    vim.api.nvim_echo({ { M.fit(line, room()), "ChimeraHint" } }, false, {})
  end
end

--- Says `text` at `level` (vim.log.levels; default INFO).
function M.notify(text, level)
  text = tostring(text)
  level = level or levels.INFO
  table.insert(said, { time = os.time(), level = level, text = text })
  if #said > KEEP then
    table.remove(said, 1)
  end
  if not builtin_notify() then
    vim.notify(text, level, { title = "Chimera" })
    return
  end
  if not pending or level >= pending.level then
    pending = { text = text, level = level }
  end
  later()
end

function M.info(text)
  M.notify(text, levels.INFO)
end

function M.warn(text)
  M.notify(text, levels.WARN)
end

function M.error(text)
  M.notify(text, levels.ERROR)
end

--- A progress line: shown in the echo area only, replaced by the next,
--- never kept in `:messages`; a message said in the same turn wins.
function M.progress(text)
  progress_pending = text
  later()
end

--- Closes float `win` once the cursor leaves the place it was at now.
local function close_when_cursor_moves(win)
  local from_win, from = vim.api.nvim_get_current_win(), vim.api.nvim_win_get_cursor(0)
  local group = vim.api.nvim_create_augroup("chimera.answer." .. win, { clear = true })
  vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "WinClosed" }, {
    group = group,
    callback = function(ev)
      if not vim.api.nvim_win_is_valid(win) or (ev.event == "WinClosed" and tonumber(ev.match) == win) then
        pcall(vim.api.nvim_del_augroup_by_id, group)
        return
      end
      local here = vim.api.nvim_get_current_win()
      if here == win or ev.event == "WinClosed" then
        return
      end
      if here == from_win and vim.deep_equal(vim.api.nvim_win_get_cursor(0), from) then
        return
      end
      pcall(vim.api.nvim_del_augroup_by_id, group)
      pcall(vim.api.nvim_win_close, win, true)
    end,
  })
end

--- Shows `text`, an answer the user asked for (several lines), whole in
--- a floating window by the cursor that closes when the cursor moves; also
--- kept for `:Chimera log`.
function M.show(text)
  text = tostring(text)
  table.insert(said, { time = os.time(), level = levels.INFO, text = text })
  local lines = vim.split(text, "\n")
  local _, win = vim.lsp.util.open_floating_preview(lines, "", {
    border = "rounded",
    title = " Chimera ",
    max_width = math.max(20, vim.o.columns - 4),
    wrap = true,
    -- Neovim fires CursorMoved when it next looks at a cursor that changed
    -- window (a window closed just before the answer came) though nothing
    -- moved; closing on that event alone hid the answer before anyone saw it.
    close_events = { "InsertCharPre" },
  })
  close_when_cursor_moves(win)
end

--- The messages said so far, oldest first: { time, level, text }.
function M.log()
  return said
end

local level_names = { [levels.ERROR] = "error", [levels.WARN] = "warn", [levels.INFO] = "info" }

--- Opens every message said this session, whole, in a scratch window.
function M.open_log()
  local lines = {}
  for _, m in ipairs(said) do
    local head = ("%s %-5s "):format(os.date("%H:%M:%S", m.time), level_names[m.level] or "info")
    for i, l in ipairs(vim.split(m.text, "\n")) do
      table.insert(lines, (i == 1 and head or string.rep(" ", #head)) .. l)
    end
  end
  if #lines == 0 then
    lines = { "Chimera has said nothing yet this session." }
  end
  vim.cmd("botright 12split")
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_win_set_buf(0, buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "chimera-log"
  pcall(vim.api.nvim_buf_set_name, buf, "chimera://log")
  vim.wo.wrap = true
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true })
  vim.cmd("normal! G")
end

return M
