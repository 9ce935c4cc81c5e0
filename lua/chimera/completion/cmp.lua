--- An nvim-cmp source for the chat prompt's references (`#buffer`,
--- `#selection`, `@file`), registered as "chimera" when the prompt opens
--- and nvim-cmp is there. In cmp's setup:
---   cmp.setup.filetype("chimera-prompt", { sources = { { name = "chimera" } } })
local references = require("chimera.references")

local Source = {}
Source.__index = Source

function Source.new()
  return setmetatable({}, Source)
end

function Source:is_available()
  return vim.bo.filetype == "chimera-prompt"
end

function Source:get_trigger_characters()
  return { "#", "@" }
end

function Source:get_keyword_pattern()
  return [[[#@][[:alnum:]._/-]*]]
end

--- `params.context.cursor_before_line` as nvim-cmp gives it.
function Source:complete(params, callback)
  local items = references.lsp_items(params.context.cursor_before_line)
  callback({ items = items, isIncomplete = false })
end

local registered = false

--- Registers the source with `cmp` once.
function Source.register(cmp)
  if not registered then
    registered = true
    cmp.register_source("chimera", Source.new())
  end
end

return Source
