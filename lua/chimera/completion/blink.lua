--- A blink.cmp source for the chat prompt's references (`#buffer`,
--- `#selection`, `@file`). In blink's setup:
---   sources = { per_filetype = { ["chimera-prompt"] = { "chimera" } },
---               providers = { chimera = { name = "Chimera", module = "chimera.completion.blink" } } }
local references = require("chimera.references")

local Source = {}
Source.__index = Source

function Source.new()
  return setmetatable({}, Source)
end

function Source:enabled()
  return vim.bo.filetype == "chimera-prompt"
end

function Source:get_trigger_characters()
  return { "#", "@" }
end

--- `ctx.line` and `ctx.cursor` ({ row from 1, byte column from 0 }) as
--- blink gives them.
function Source:get_completions(ctx, callback)
  local items, start = references.lsp_items(ctx.line:sub(1, ctx.cursor[2]))
  for _, item in ipairs(items) do
    item.textEdit = {
      newText = item.label,
      range = {
        start = { line = ctx.cursor[1] - 1, character = start },
        ["end"] = { line = ctx.cursor[1] - 1, character = ctx.cursor[2] },
      },
    }
  end
  callback({ items = items, is_incomplete_forward = false, is_incomplete_backward = false })
end

return Source
