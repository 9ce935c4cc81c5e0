--- `:Chimera {subcommand}`: parsing, completion and dispatch.
local M = {}

local function chimera()
  return require("chimera")
end

local function pending_ids()
  local ids = {}
  for _, p in ipairs(chimera().proposals()) do
    table.insert(ids, p.id)
  end
  return ids
end

local function active_ids()
  local ids = {}
  for _, a in ipairs(chimera().agents()) do
    if a.state == "queued" or a.state == "running" or a.state == "completed" then
      table.insert(ids, a.id)
    end
  end
  return ids
end

--- Removes `--hunk N` from `args`; returns N.
local function snapshot_ids()
  return vim.tbl_map(function(s)
    return s.id
  end, require("chimera.history").history())
end

local function take_hunk(args)
  for i, a in ipairs(args) do
    if a == "--hunk" then
      local n = tonumber(args[i + 1])
      if not n or n < 1 then
        error("chimera: --hunk takes a hunk number, counted from 1 in file order", 0)
      end
      table.remove(args, i + 1)
      table.remove(args, i)
      return n
    end
  end
end

function M.age(ms)
  local s = math.max(0, os.time() - math.floor((ms or 0) / 1000))
  if s < 60 then
    return s .. "s"
  elseif s < 3600 then
    return math.floor(s / 60) .. "m"
  end
  return math.floor(s / 3600) .. "h"
end

M.subcommands = {
  task = {
    desc = "start an agent: :[range]Chimera task [--tools] [--agent NAME] {text}",
    complete = function()
      local names = { "--tools", "--code" }
      local external = (require("chimera.state").config or {}).agents
      for name in pairs(external and external.external or {}) do
        table.insert(names, "--agent " .. name)
      end
      table.sort(names)
      return names
    end,
    run = function(args, cmd)
      local mode, agent
      while args[1] == "--tools" or args[1] == "--code" or args[1] == "--agent" do
        local flag = table.remove(args, 1)
        if flag == "--agent" then
          agent = table.remove(args, 1)
          if not agent then
            error("Chimera: --agent takes the name of an agent of agents.external", 0)
          end
        else
          mode = flag:sub(3)
        end
      end
      local task = table.concat(args, " ")
      local context
      if cmd.range > 0 then
        local lines = vim.api.nvim_buf_get_lines(0, cmd.line1 - 1, cmd.line2, false)
        context = table.concat(lines, "\n")
      end
      local id = chimera().spawn(task, { context = context, mode = mode, agent = agent })
      vim.notify(("agent %s started: %s"):format(id, task), vim.log.levels.INFO, { title = "Chimera" })
    end,
  },
  accept = {
    desc = "accept a proposal or one hunk: :Chimera accept [id] [--hunk N]",
    complete = pending_ids,
    run = function(args)
      local hunk = take_hunk(args)
      chimera().accept(args[1], { hunk = hunk })
    end,
  },
  reject = {
    desc = "reject a proposal, one hunk, or stop an agent: :Chimera reject [id] [--hunk N] [feedback]",
    complete = active_ids,
    run = function(args)
      local hunk = take_hunk(args)
      local id = args[1]
      local feedback = #args > 1 and table.concat(args, " ", 2) or nil
      chimera().reject(id, { feedback = feedback, hunk = hunk })
    end,
  },
  diff = {
    desc = "show a proposal's diff: :Chimera diff [id] [--split]",
    complete = pending_ids,
    run = function(args)
      local split = vim.tbl_contains(args, "--split")
      args = vim.tbl_filter(function(a)
        return a ~= "--split"
      end, args)
      chimera().diff(args[1], { split = split })
    end,
  },
  next = {
    desc = "jump to the next hunk of any proposal",
    run = function()
      chimera().jump(1)
    end,
  },
  prev = {
    desc = "jump to the previous hunk of any proposal",
    run = function()
      chimera().jump(-1)
    end,
  },
  cancel = {
    desc = "stop a working agent: :Chimera cancel [id] (default: the latest)",
    complete = function()
      local ids = {}
      for _, a in ipairs(chimera().agents()) do
        if a.state == "queued" or a.state == "running" then
          table.insert(ids, a.id)
        end
      end
      return ids
    end,
    run = function(args)
      chimera().cancel(args[1])
    end,
  },
  agents = {
    desc = "open the agents window (a accept, r reject, R reject with feedback, c cancel, d diff, q close)",
    run = function()
      require("chimera.agents_view").open()
    end,
  },
  status = {
    desc = "show the core's status",
    run = function()
      local s = chimera().status()
      local counts = {}
      for k, v in pairs(s.agents) do
        table.insert(counts, k .. "=" .. v)
      end
      table.sort(counts)
      vim.api.nvim_echo({
        { ("Chimera: %s, root %s, %s, agents: %s, proposals: %d"):format(
          s.started and "started" or "not started",
          s.root or "-",
          s.ready and "imported" or "importing",
          #counts > 0 and table.concat(counts, " ") or "none",
          s.proposals
        ) },
      }, false, {})
    end,
  },
  snapshot = {
    desc = "snapshot the project now: :Chimera snapshot [message]",
    run = function(args)
      local id = chimera().snapshot(table.concat(args, " "))
      vim.notify("snapshot " .. id .. " taken", vim.log.levels.INFO, { title = "Chimera" })
    end,
  },
  history = {
    desc = "list the snapshots, newest first",
    run = function()
      local h = require("chimera.history")
      h.refresh(function()
        vim.api.nvim_echo({ { table.concat(h.history_lines(), "\n") } }, false, {})
      end)
    end,
  },
  rollback = {
    desc = "restore files, buffers and stable as in a snapshot: :Chimera rollback {id} [--dry-run]",
    complete = snapshot_ids,
    run = function(args)
      local dry = vim.tbl_contains(args, "--dry-run")
      args = vim.tbl_filter(function(a)
        return a ~= "--dry-run"
      end, args)
      if not args[1] then
        error("Chimera: which snapshot? :Chimera rollback {id} [--dry-run] (see :Chimera history)")
      end
      chimera().rollback(args[1], { dry_run = dry })
    end,
  },
  effects = {
    desc = "list the effects no rollback undoes: :Chimera effects [--since seq|snapshot] [--kind llm|command|network|mcp|acp|a2a]",
    run = function(args)
      local opts = {}
      for i, a in ipairs(args) do
        if a == "--since" then
          opts.since = tonumber(args[i + 1]) or args[i + 1]
        elseif a == "--kind" then
          opts.kind = args[i + 1]
        end
      end
      chimera().effects(opts, function(effects)
        vim.api.nvim_echo({ { table.concat(require("chimera.history").effect_lines(effects), "\n") } }, false, {})
      end)
    end,
  },
  dashboard = {
    desc = "open the project's web dashboard in the browser (needs api.enabled)",
    run = function()
      local url = chimera().dashboard()
      vim.notify("dashboard: " .. url, vim.log.levels.INFO, { title = "Chimera" })
    end,
  },
  fork = {
    desc = "start an agent from a snapshot: :Chimera fork {snapshot} {task}",
    complete = snapshot_ids,
    run = function(args)
      local snap = table.remove(args, 1)
      if not snap or #args == 0 then
        error("Chimera: use :Chimera fork {snapshot} {task}")
      end
      local id = chimera().fork(snap, table.concat(args, " "))
      vim.notify(("agent %s forked from %s"):format(id, snap), vim.log.levels.INFO, { title = "Chimera" })
    end,
  },
  chat = {
    desc = "chat with the Remora node at the cursor, else the free chat: :Chimera chat [--free] [--clear] [message]; an agent's conversation: :Chimera chat --agent [id]",
    completes_every_arg = true,
    complete = function(_, words)
      -- words[#words] is the one being typed.
      if words[#words - 1] == "--agent" then
        return vim.tbl_map(function(a)
          return a.id
        end, chimera().agents())
      end
      return { "--free", "--clear", "--agent" }
    end,
    run = function(args)
      if args[1] == "--agent" then
        require("chimera.transcript").open(args[2])
        return
      end
      local chat = require("chimera.chat")
      local free = false
      while args[1] == "--free" or args[1] == "--clear" do
        if table.remove(args, 1) == "--clear" then
          chat.clear()
        end
        free = true
      end
      chat.open(#args > 0 and table.concat(args, " ") or nil, { free = free })
    end,
  },
  panel = {
    desc = "toggle the Remora side panel following the cursor (a accept, r reject, R feedback, c chat, q close)",
    run = function()
      require("chimera.panel").toggle()
    end,
  },
  node = {
    desc = "show the Remora node at the cursor: ID, type, location, parent, callers, callees",
    run = function()
      require("chimera.remora").show()
    end,
  },
  remora = {
    desc = "Remora: :Chimera remora enable [--yes] (index the project; write inline IDs if remora.ids = \"inline\")",
    complete = function()
      return { "enable" }
    end,
    run = function(args)
      if args[1] ~= "enable" then
        error("Chimera: use :Chimera remora enable [--yes]")
      end
      require("chimera.remora").enable({ yes = vim.tbl_contains(args, "--yes") })
    end,
  },
  start = {
    desc = "start the core now (otherwise it starts on first use)",
    run = function()
      chimera().start()
    end,
  },
  stop = {
    desc = "stop the core and cancel running agents",
    run = function()
      chimera().stop()
    end,
  },
}

function M.run(cmd)
  local args = vim.split(vim.trim(cmd.args), "%s+", { trimempty = true })
  local name = table.remove(args, 1)
  local sub = name and M.subcommands[name]
  if not sub then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    vim.notify(
      ("Chimera: unknown subcommand %q; use one of: %s"):format(name or "", table.concat(names, ", ")),
      vim.log.levels.ERROR,
      { title = "Chimera" }
    )
    return
  end
  local ok, err = pcall(sub.run, args, cmd)
  if not ok then
    vim.notify(tostring(err), vim.log.levels.ERROR, { title = "Chimera" })
  end
end

function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = false })
  -- words[1] is the command itself (maybe with a range).
  if #words <= 2 then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return vim.tbl_filter(function(n)
      return vim.startswith(n, arglead)
    end, names)
  end
  local sub = M.subcommands[words[2]]
  if sub and sub.complete and (#words == 3 or sub.completes_every_arg) then
    return vim.tbl_filter(function(n)
      return vim.startswith(n, arglead)
    end, sub.complete(arglead, words))
  end
  return {}
end

return M
