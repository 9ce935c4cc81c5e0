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
  local before = ctx.line:sub(1, ctx.cursor[2])
  local start = before:find("[#@][%w%._/%-]*$")
  local items = {}
  if start then
    local kinds = vim.lsp.protocol.CompletionItemKind
    for _, c in ipairs(references.candidates(before:sub(start))) do
      table.insert(items, {
        label = c.word,
        kind = c.kind == "file" and kinds.File or kinds.Reference,
        detail = c.menu,
        textEdit = {
          newText = c.word,
          range = {
            start = { line = ctx.cursor[1] - 1, character = start - 1 },
            ["end"] = { line = ctx.cursor[1] - 1, character = ctx.cursor[2] },
          },
        },
      })
    end
  end
  callback({ items = items, is_incomplete_forward = false, is_incomplete_backward = false })
end

return Source
