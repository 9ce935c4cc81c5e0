-- Chimera's command and <Plug> mappings. Loading this file is cheap: the
-- native library and the project database are opened on first use.
if vim.g.loaded_chimera then
  return
end
vim.g.loaded_chimera = true

vim.api.nvim_create_user_command("Chimera", function(cmd)
  require("chimera.commands").run(cmd)
end, {
  nargs = "*",
  range = true,
  desc = "Chimera: agents that propose, you accept",
  complete = function(arglead, cmdline)
    return require("chimera.commands").complete(arglead, cmdline)
  end,
})

-- Each mapping acts once the core is up and has shown what waits (a key
-- pressed right after Neovim started waits for it), its error said.
local function safely(fn)
  return function()
    local ok, err = pcall(function()
      require("chimera").when_ready(fn)
    end)
    if not ok then
      vim.notify(tostring(err), vim.log.levels.ERROR, { title = "Chimera" })
    end
  end
end

vim.keymap.set("n", "<Plug>(chimera-accept)", safely(function()
  require("chimera.pick").proposal(nil, "accept", require("chimera").accept)
end), { desc = "Chimera: accept the proposal under or nearest the cursor (several elsewhere: pick one)" })

vim.keymap.set("n", "<Plug>(chimera-reject)", safely(function()
  require("chimera.pick").proposal(nil, "reject", require("chimera").reject)
end), { desc = "Chimera: reject the proposal under or nearest the cursor (several elsewhere: pick one)" })

vim.keymap.set("n", "<Plug>(chimera-accept-hunk)", safely(function()
  require("chimera").accept_hunk()
end), { desc = "Chimera: accept the hunk under or nearest the cursor" })

vim.keymap.set("n", "<Plug>(chimera-reject-hunk)", safely(function()
  require("chimera").reject_hunk()
end), { desc = "Chimera: reject the hunk under or nearest the cursor" })

vim.keymap.set("n", "<Plug>(chimera-reject-feedback)", safely(function()
  require("chimera").reject_with_feedback()
end), { desc = "Chimera: reject with feedback; the agent tries again" })

vim.keymap.set("n", "<Plug>(chimera-next)", safely(function()
  require("chimera").jump(1)
end), { desc = "Chimera: next hunk of any proposal" })

vim.keymap.set("n", "<Plug>(chimera-prev)", safely(function()
  require("chimera").jump(-1)
end), { desc = "Chimera: previous hunk of any proposal" })

vim.keymap.set("n", "<Plug>(chimera-diff)", safely(function()
  require("chimera.pick").proposal(nil, "diff", require("chimera").diff)
end), { desc = "Chimera: diff of the proposal under or nearest the cursor" })
