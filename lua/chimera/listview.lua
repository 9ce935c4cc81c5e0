--- A list in a buffer of its own (`:Chimera history`, `:Chimera
--- effects`): one item per line under a header of keys, redrawn in place
--- when shown again, `q` to close, and keys that act on the item under the
--- cursor.
local M = {}

local views = {} -- name -> { buf, items = { line -> item } }

--- Writes the header, `lines` and their `items` into view `v`'s buffer.
local function fill(v, header, lines, items)
  local all = { header, "" }
  v.items = {}
  for i, line in ipairs(lines) do
    table.insert(all, line)
    v.items[#all] = items[i]
  end
  vim.bo[v.buf].modifiable = true
  vim.api.nvim_buf_set_lines(v.buf, 0, -1, false, all)
  vim.bo[v.buf].modifiable = false
  return all
end

--- Redraws list `name` in place if a window shows it (no focus taken, the
--- cursor kept); returns whether it did.
function M.redraw(name, header, lines, items)
  local v = views[name]
  if not (v and vim.api.nvim_buf_is_valid(v.buf)) or #vim.fn.win_findbuf(v.buf) == 0 then
    return false
  end
  fill(v, header, lines, items)
  return true
end

--- Shows `lines` (each with the item at the same index of `items`, nil for
--- none) in the buffer `chimera://{name}` under `header`. `keys` is a list
--- of { lhs, fn(item), desc }, mapped once.
function M.show(name, header, lines, items, keys)
  local v = views[name]
  if not (v and vim.api.nvim_buf_is_valid(v.buf)) then
    local buf = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, buf, "chimera://" .. name)
    vim.bo[buf].filetype = "chimera-" .. name
    vim.bo[buf].bufhidden = "wipe"
    v = { buf = buf, items = {} }
    views[name] = v
    for _, k in ipairs(keys) do
      vim.keymap.set("n", k[1], function()
        local item = v.items[vim.api.nvim_win_get_cursor(0)[1]]
        if not item then
          require("chimera.say").notify("chimera: put the cursor on an item's line", vim.log.levels.WARN)
          return
        end
        local ok, err = pcall(k[2], item)
        if not ok then
          require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
        end
      end, { buffer = buf, nowait = true, desc = "Chimera: " .. k[3] })
    end
    vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, nowait = true, desc = "Chimera: close" })
  end
  local all = fill(v, header, lines, items)
  local win = vim.fn.win_findbuf(v.buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, v.buf)
    vim.api.nvim_win_set_height(0, math.min(#all + 1, 15))
  end
  -- On the first item.
  pcall(vim.api.nvim_win_set_cursor, 0, { math.min(3, #all), 0 })
  return v.buf
end

return M
