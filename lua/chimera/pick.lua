--- Choosing with `vim.ui.select` (Telescope, fzf-lua, snacks or the
--- built-in list, whichever the user set up) where a command was not told
--- what it acts on: the proposal when several could be meant, the snapshot
--- of a rollback or fork, the subcommand of a bare `:Chimera`.
local M = {}

local function chimera()
  return require("chimera")
end

--- What `vim.ui.select` calls back: `fn(choice.id)` for a choice, its
--- error said (a picker's callback has no caller to raise to).
local function then_call(fn)
  return function(choice)
    if choice then
      local ok, err = pcall(fn, choice.id)
      if not ok then
        require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
      end
    end
  end
end

--- Calls `fn(id)` with proposal `id`, else the proposal under the cursor,
--- else the only one; with several and none under the cursor, the one the
--- user picks (nothing happens if they pick none).
function M.proposal(id, verb, fn)
  local list = chimera().proposals()
  if id or chimera().current() or #list <= 1 then
    return fn(id)
  end
  vim.ui.select(list, {
    prompt = ("Chimera: %s which proposal?"):format(verb),
    kind = "chimera.proposal",
    format_item = function(p)
      local a = chimera().agent(p.id) or {}
      local files = vim.tbl_map(function(f)
        return vim.fn.fnamemodify(f.path, ":~:.")
      end, p.files or {})
      return ("%s  %s%s  [%s]"):format(
        p.id,
        a.summary or a.task or "",
        a.conflicted and " (conflicted)" or "",
        table.concat(files, ", ")
      )
    end,
  }, then_call(fn))
end

--- Calls `fn(id)` with a snapshot the user picks, newest first.
function M.snapshot(verb, fn)
  local history = require("chimera.history")
  history.refresh(function()
    local snaps = history.history()
    if #snaps == 0 then
      require("chimera.say").notify("chimera: no snapshots yet (:Chimera snapshot takes one)", vim.log.levels.WARN)
      return
    end
    vim.ui.select(snaps, {
      prompt = ("Chimera: %s which snapshot?"):format(verb),
      kind = "chimera.snapshot",
      format_item = function(s)
        return ("%s  %s  %s"):format(s.id, os.date("%Y-%m-%d %H:%M", math.floor((s.created_at or 0) / 1000)), s.message or "")
      end,
    }, then_call(fn))
  end)
end

--- Calls `fn(id)` with an agent the user picks, newest first.
function M.agent(verb, fn)
  local agents = chimera().agents()
  if #agents == 0 then
    require("chimera.say").notify("chimera: no agents yet (:Chimera task starts one)", vim.log.levels.WARN)
    return
  end
  vim.ui.select(agents, {
    prompt = ("Chimera: %s which agent?"):format(verb),
    kind = "chimera.agent",
    format_item = function(a)
      return ("%s  %-9s  %s"):format(a.id, a.state or "", a.summary or a.task or "")
    end,
  }, then_call(fn))
end

--- A bare `:Chimera`: every subcommand with what it does.
function M.subcommand(subcommands, run)
  local names = vim.tbl_keys(subcommands)
  table.sort(names)
  vim.ui.select(names, {
    prompt = "Chimera:",
    kind = "chimera.subcommand",
    format_item = function(name)
      return ("%-10s %s"):format(name, subcommands[name].desc or "")
    end,
  }, function(choice)
    if choice then
      run(choice)
    end
  end)
end

return M
