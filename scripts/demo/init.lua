-- Neovim config of `make demo`: Chimera pointed at the local llama.cpp
-- server that scripts/demo.sh started, the sample project open, and the
-- task waiting on the command line.
local repo = vim.env.CHIMERA_REPO
vim.opt.rtp:prepend(repo)
vim.cmd("runtime plugin/chimera.lua")
vim.g.mapleader = "\\"
require("chimera").setup({
  llm = { provider = "openai", url = vim.env.CHIMERA_DEMO_URL, model = "qwen2.5-coder", timeout_ms = 120000 },
})
vim.o.statusline = "%f %m%=%{v:lua.require'chimera'.statusline()} "
vim.cmd.edit("app.py")
vim.api.nvim_win_set_cursor(0, { 4, 0 })
vim.schedule(function()
  vim.api.nvim_feedkeys(":Chimera task add a docstring to parse_config", "n", false)
end)
