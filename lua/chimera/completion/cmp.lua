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
  local before = params.context.cursor_before_line
  local word = before:match("[#@][%w%._/%-]*$")
  local items = {}
  if word then
    local kinds = vim.lsp.protocol.CompletionItemKind
    for _, c in ipairs(references.candidates(word)) do
      table.insert(items, {
        label = c.word,
        kind = c.kind == "file" and kinds.File or kinds.Reference,
        detail = c.menu,
      })
    end
  end
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
