-- The plugin's one door for messages (lua/chimera/say.lua) in a real
-- headless Neovim: an answer the user asked for stays on screen until the
-- cursor really moves, and every message is kept for :Chimera log.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local say = require("chimera.say")

local function floats()
  return #vim.tbl_filter(function(w)
    return vim.api.nvim_win_get_config(w).relative ~= ""
  end, vim.api.nvim_list_wins())
end

h.test("an answer stays open through a CursorMoved that did not move the cursor, and closes when it moves", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "one", "two", "three" })
  -- A window closed just before the answer came (the history window's
  -- `q`): Neovim fires CursorMoved on its next look at the cursor, though
  -- the cursor never moved. The answer used to close at once, unseen.
  vim.cmd("split")
  vim.cmd("close")
  say.show("Dry run: a rollback would change 1 file")
  h.eq(floats(), 1, "the answer is shown")
  vim.api.nvim_exec_autocmds("CursorMoved", {})
  vim.wait(100) -- a close is scheduled, not done at once
  h.eq(floats(), 1, "the answer is still shown after a CursorMoved in place")
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", {})
  h.wait_for("the answer to close", function()
    return floats() == 0
  end, 2000)
  local log = say.log()
  h.eq(log[#log].text, "Dry run: a rollback would change 1 file", "kept for :Chimera log")
end)

h.test("a second answer replaces the first", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "one", "two" })
  say.show("first")
  say.show("second")
  h.eq(floats(), 1, "one answer on screen")
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", {})
  h.wait_for("the answer to close", function()
    return floats() == 0
  end, 2000)
end)

h.finish()
