--- Chimera's highlight groups, linked with `default = true` so a colour
--- scheme or the user can override any of them.
local M = {}

M.groups = {
  ChimeraAdded = "DiffAdd", -- lines a proposal adds (ghost text)
  ChimeraRemoved = "DiffDelete", -- lines a proposal removes (highlighted in place)
  ChimeraHint = "Comment", -- the note beside a proposal: agent, summary, keys
  ChimeraConflict = "DiagnosticWarn", -- the note of a conflicted proposal
}

function M.setup()
  for group, link in pairs(M.groups) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

return M
