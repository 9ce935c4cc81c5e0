--- The chat's prompt: a few editable lines under the conversation, for a
--- message of any length. <C-s> (or <CR> in normal mode) sends it;
--- `#buffer`, `#selection` and `@file` complete there (<C-x><C-o>, or the
--- blink.cmp / nvim-cmp sources) and go with the message (references.lua).
local M = {}

local prompts = {} -- chat (node id or "free") -> bufnr

local HINT = " Message · <C-s> (or <CR> in normal mode) sends · #buffer #selection @file (<C-x><C-o>) · q closes"

local function send(chat, buf)
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  if text == "" then
    require("chimera.say").notify("chimera: write a message first", vim.log.levels.WARN)
    return
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  local ok, err = pcall(require("chimera.chat").send, chat, text)
  if not ok then
    -- Nothing is lost: the message comes back to be sent again.
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
    require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
  end
end

--- The prompt buffer of `chat`, made on first use.
function M.buffer(chat)
  local buf = prompts[chat]
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  prompts[chat] = buf
  pcall(vim.api.nvim_buf_set_name, buf, "chimera://prompt/" .. chat)
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].omnifunc = "v:lua.require'chimera.references'.omnifunc"
  vim.bo[buf].filetype = "chimera-prompt"
  local function go()
    send(chat, buf)
  end
  vim.keymap.set("n", "<CR>", go, { buffer = buf, desc = "Chimera: send the message" })
  vim.keymap.set({ "n", "i" }, "<C-s>", go, { buffer = buf, desc = "Chimera: send the message" })
  vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, desc = "Chimera: close the prompt" })
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    callback = function()
      prompts[chat] = nil
    end,
  })
  -- nvim-cmp, when there: its source, for this filetype.
  local has_cmp, cmp = pcall(require, "cmp")
  if has_cmp and cmp.register_source then
    require("chimera.completion.cmp").register(cmp)
  end
  return buf
end

--- Opens (or goes to) the prompt of `chat` under window `win`, in insert mode.
function M.open(chat, win)
  local buf = M.buffer(chat)
  local shown = vim.fn.win_findbuf(buf)[1]
  if shown then
    vim.api.nvim_set_current_win(shown)
  else
    if win and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_set_current_win(win)
    end
    vim.cmd("belowright 4split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo[0][0].winbar = HINT
    vim.wo[0][0].winfixheight = true
  end
  vim.cmd("startinsert!")
  return buf
end

return M
