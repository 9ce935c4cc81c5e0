--- The default mappings (`keymaps` option): set only where the key is
--- free, so Chimera never takes a key another plugin or the user gave a
--- meaning; what was left alone, and keys that only start another
--- mapping, are said in `:checkhealth chimera`.
local M = {}

--- action -> { lhs, mapped, taken_by }, from the last apply().
local result = {}

--- What the mapping at `m` (a maparg() dict) does, in words.
local function describe(m)
  return m.desc or m.rhs or "a Lua function"
end

--- Other normal-mode mappings that start with `lhs` and go on (Neovim
--- waits 'timeoutlen' after `lhs` to tell them apart), in words.
local function longer(lhs)
  local raw = vim.keycode(lhs)
  local out = {}
  for _, m in ipairs(vim.api.nvim_get_keymap("n")) do
    local theirs = m.lhsraw or vim.keycode(m.lhs)
    if #theirs > #raw and theirs:sub(1, #raw) == raw then
      table.insert(out, ("%s (%s)"):format(vim.fn.keytrans(theirs), describe(m)))
    end
  end
  table.sort(out)
  return out
end

--- Maps each `keymaps` entry to its <Plug> mapping unless the key is
--- already mapped to something else.
function M.apply(keymaps)
  result = {}
  for action, lhs in pairs(keymaps) do
    if lhs then
      local plug = ("<Plug>(chimera-%s)"):format(action)
      local existing = vim.fn.maparg(lhs, "n", false, true)
      -- A buffer-local mapping shadows ours only in its buffer.
      local theirs = existing.lhs and existing.buffer == 0 and existing.rhs ~= plug
      if theirs then
        result[action] = { lhs = lhs, mapped = false, taken_by = describe(existing) }
      else
        vim.keymap.set("n", lhs, plug, { desc = "Chimera: " .. action .. " proposal" })
        -- Which mappings it starts is asked by :checkhealth, not here:
        -- setup() runs at every start of Neovim.
        result[action] = { lhs = lhs, mapped = true }
      end
    end
  end
end

--- The key that runs `action` ("accept", "reject"), if Chimera mapped one.
function M.key(action)
  local r = result[action]
  return r and r.mapped and r.lhs or nil
end

--- How to do `action` in words: "<Leader>a accept", else its command.
function M.hint(action)
  local key = M.key(action)
  return key and (key .. " " .. action) or (":Chimera " .. action)
end

--- The `:checkhealth` section.
function M.check(h)
  h.start("Chimera: keymaps")
  local actions = vim.tbl_keys(result)
  table.sort(actions)
  if #actions == 0 then
    h.info("no default mappings (keymaps are off); the <Plug>(chimera-…) mappings and :Chimera commands work")
  end
  for _, action in ipairs(actions) do
    local r = result[action]
    if not r.mapped then
      h.warn(("%s (%s) left alone: it already runs %s"):format(r.lhs, action, r.taken_by), {
        ("set keymaps.%s to a free key, or false and map <Plug>(chimera-%s) yourself"):format(action, action),
      })
    elseif #longer(r.lhs) > 0 then
      h.warn(
        ("%s (%s) is also how %s start: Neovim waits 'timeoutlen' after %s"):format(
          r.lhs,
          action,
          table.concat(longer(r.lhs), ", "),
          r.lhs
        ),
        { ("give one of them another key (keymaps.%s; avante.nvim's mappings start with <leader>a)"):format(action) }
      )
    else
      h.ok(("%s %s"):format(r.lhs, action))
    end
  end
end

return M
