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

local function agent_ids()
  return vim.tbl_map(function(a)
    return a.id
  end, chimera().agents())
end

--- Snapshot IDs and branch names: what fork, rollback and --since take.
local function snapshot_ids()
  local ids = {}
  for _, s in ipairs(require("chimera.history").history()) do
    table.insert(ids, s.id)
    vim.list_extend(ids, s.branches or {})
  end
  return ids
end

--- Removes `--hunk N` from `args`; returns N.
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
    flags = { "--tools", "--code", "--agent" },
    flag_values = {
      ["--agent"] = function()
        local config = require("chimera.state").config
        local names = vim.tbl_keys(config and config.agents.external or {})
        table.sort(names)
        return names
      end,
    },
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
      if vim.trim(task) == "" then
        -- Asked for, as a bare `:Chimera` picking "task" does.
        local range = cmd.range
        vim.ui.input({ prompt = "Chimera task: " }, function(text)
          if text and vim.trim(text) ~= "" then
            local again = vim.split(vim.trim(text), "%s+")
            if mode then
              table.insert(again, 1, "--" .. mode)
            end
            if agent then
              table.insert(again, 1, agent)
              table.insert(again, 1, "--agent")
            end
            M.subcommands.task.run(again, { range = range, line1 = cmd.line1, line2 = cmd.line2 })
          end
        end)
        return
      end
      local context
      if cmd.range > 0 then
        local lines = vim.api.nvim_buf_get_lines(0, cmd.line1 - 1, cmd.line2, false)
        context = table.concat(lines, "\n")
      end
      local id = chimera().spawn(task, { context = context, mode = mode, agent = agent })
      require("chimera.say").notify(("agent %s started: %s"):format(id, task), vim.log.levels.INFO)
    end,
  },
  accept = {
    desc = "accept a proposal or one hunk: :Chimera accept [id] [--hunk N]",
    complete = pending_ids,
    flags = { "--hunk" },
    run = function(args)
      local hunk = take_hunk(args)
      require("chimera.pick").proposal(args[1], "accept", function(id)
        chimera().accept(id, { hunk = hunk })
      end)
    end,
  },
  reject = {
    desc = "reject a proposal, one hunk, or stop an agent: :Chimera reject [id] [--hunk N] [feedback]",
    complete = active_ids,
    flags = { "--hunk" },
    run = function(args)
      local hunk = take_hunk(args)
      -- The first word is an id only if it names an agent: "reject keep
      -- it short" is feedback for the proposal under the cursor.
      local first = args[1]
      local is_id = first and (chimera().agent(first) or first:match("^%x%x%x%x%x%x%x%x$"))
      local id = is_id and table.remove(args, 1) or nil
      local feedback = #args > 0 and table.concat(args, " ") or nil
      require("chimera.pick").proposal(id, "reject", function(id)
        chimera().reject(id, { feedback = feedback, hunk = hunk })
      end)
    end,
  },
  diff = {
    desc = "show a proposal's diff: :Chimera diff [id] [--split]",
    complete = pending_ids,
    flags = { "--split" },
    run = function(args)
      local split = vim.tbl_contains(args, "--split")
      args = vim.tbl_filter(function(a)
        return a ~= "--split"
      end, args)
      require("chimera.pick").proposal(args[1], "diff", function(id)
        chimera().diff(id, { split = split })
      end)
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
      require("chimera.say").show(("Chimera: %s, root %s, %s, agents: %s, proposals: %d"):format(
          s.started and "started" or "not started",
          s.root or "-",
          (not s.started and "nothing imported yet") or (s.ready and "imported" or "importing"),
          #counts > 0 and table.concat(counts, " ") or "none",
          s.proposals
        ))
    end,
  },
  log = {
    desc = "every message Chimera said this session, whole (q closes)",
    run = function()
      require("chimera.say").open_log()
    end,
  },
  snapshot = {
    desc = "snapshot the project now: :Chimera snapshot [message]",
    run = function(args)
      local id = chimera().snapshot(table.concat(args, " "))
      require("chimera.say").notify("snapshot " .. id .. " taken", vim.log.levels.INFO)
    end,
  },
  history = {
    desc = "list the snapshots, newest first",
    run = function()
      require("chimera.history").open()
    end,
  },
  rollback = {
    desc = "restore the project's files and buffers as in a snapshot: :Chimera rollback [id] [--dry-run] (no id: pick one)",
    complete = snapshot_ids,
    flags = { "--dry-run" },
    run = function(args)
      local dry = vim.tbl_contains(args, "--dry-run")
      args = vim.tbl_filter(function(a)
        return a ~= "--dry-run"
      end, args)
      local function rollback(id)
        chimera().rollback(id, { dry_run = dry })
      end
      if args[1] then
        rollback(args[1])
      else
        require("chimera.pick").snapshot(dry and "dry-run a rollback to" or "roll back to", rollback)
      end
    end,
  },
  effects = {
    desc = "list the effects no rollback undoes: :Chimera effects [--since seq|snapshot] [--kind llm|command|network|mcp|acp|a2a]",
    flags = { "--since", "--kind" },
    flag_values = {
      ["--kind"] = { "llm", "command", "network", "mcp", "acp", "a2a" },
      ["--since"] = snapshot_ids,
    },
    run = function(args)
      local opts = {}
      for i, a in ipairs(args) do
        if a == "--since" then
          opts.since = tonumber(args[i + 1]) or args[i + 1]
        elseif a == "--kind" then
          opts.kind = args[i + 1]
        end
      end
      require("chimera.history").open_effects(opts)
    end,
  },
  branch = {
    desc = "name a line of snapshots: :Chimera branch {name} [snapshot] (default: the newest; again: moves it); fork and rollback take its name; no name: the branches",
    complete = snapshot_ids,
    run = function(args)
      require("chimera.history").branch(args[1], args[2])
    end,
  },
  calls = {
    desc = "an agent's audit log, every tool call it made: :Chimera calls [id] (missing: picked)",
    complete = agent_ids,
    run = function(args)
      local function open(id)
        if not chimera().agent(id) then
          error(("chimera: no agent with id %s (see :Chimera agents)"):format(id), 0)
        end
        require("chimera.history").open_calls(id)
      end
      if args[1] then
        open(args[1])
      else
        require("chimera.pick").agent("show the tool calls of", open)
      end
    end,
  },
  dashboard = {
    desc = "open the project's web dashboard in the browser (needs api.enabled)",
    run = function()
      local url = chimera().dashboard()
      require("chimera.say").notify("dashboard: " .. url, vim.log.levels.INFO)
    end,
  },
  fork = {
    desc = "start an agent from a snapshot: :Chimera fork [snapshot] [task] (missing: picked, asked)",
    complete = snapshot_ids,
    run = function(args)
      local function fork(snap, task)
        local id = chimera().fork(snap, task)
        require("chimera.say").notify(("agent %s forked from %s"):format(id, snap), vim.log.levels.INFO)
      end
      local function with_task(snap)
        if #args > 0 then
          return fork(snap, table.concat(args, " "))
        end
        vim.ui.input({ prompt = ("Task for an agent forked from %s: "):format(snap) }, function(text)
          if text and vim.trim(text) ~= "" then
            fork(snap, text)
          end
        end)
      end
      local snap = table.remove(args, 1)
      if snap then
        with_task(snap)
      else
        require("chimera.pick").snapshot("fork from", with_task)
      end
    end,
  },
  chat = {
    desc = "chat with the Remora node at the cursor, else the free chat: :Chimera chat [--free] [--clear] [message]; an agent's conversation: :Chimera chat --agent [id]",
    flags = { "--free", "--clear", "--agent" },
    flag_values = {
      ["--agent"] = agent_ids,
    },
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
  resolve = {
    desc = "write a conflicted proposal's clashes into the buffer between conflict markers: :Chimera resolve [id]",
    complete = pending_ids,
    run = function(args)
      require("chimera.pick").proposal(args[1], "resolve", function(id)
        chimera().resolve(id)
      end)
    end,
  },
  model = {
    desc = "the model new agents ask: :Chimera model [name] (no name: pick from the server's)",
    complete = function()
      local st = require("chimera.state")
      if st.llm_status and st.llm_status.models and #st.llm_status.models > 0 then
        return st.llm_status.models
      end
      -- Not asked yet: the configured models now, the server's next time
      -- (unless a picker already waits for its answer). The core is asked,
      -- as `:Chimera model` would, when it runs or a project is here to
      -- start it on (never a question in the middle of a completion).
      local here = st.root or (st.config and (st.config.root or vim.fs.root(vim.uv.cwd(), { ".git", ".chimera" })))
      if here and not st.on_llm_status then
        pcall(chimera().llm_status, function() end)
      end
      local names, seen = {}, {}
      local llm = st.config and st.config.llm or {}
      for _, m in ipairs(vim.list_extend({ llm.model }, vim.tbl_values(llm.roles or {}))) do
        if type(m) == "string" and m ~= "" and not seen[m] then
          seen[m] = true
          table.insert(names, m)
        end
      end
      return names
    end,
    run = function(args)
      if args[1] then
        chimera().set_model(args[1])
        return
      end
      chimera().llm_status(function(st)
        if not st.models or #st.models == 0 then
          require("chimera.say").notify("chimera: the LLM server lists no models: " .. (st.message or ""), vim.log.levels.ERROR)
          return
        end
        local now = require("chimera.state").config.llm.model
        vim.ui.select(st.models, {
          prompt = ("Chimera model (now %s):"):format(now),
          kind = "chimera.model",
          format_item = function(m)
            return m == now and (m .. "  (current)") or m
          end,
        }, function(choice)
          if choice then
            chimera().set_model(choice)
          end
        end)
      end)
    end,
  },
  panel = {
    desc = "toggle the Remora side panel following the cursor (a accept, r reject, R feedback, c chat, q close)",
    run = function()
      require("chimera.panel").toggle()
    end,
  },
  node = {
    desc = "show the Remora node at the cursor; :Chimera node new {function|class|method} {name} [what it does]: a new node there, written by its agent",
    complete = function()
      return { "new" }
    end,
    flag_values = { new = { "function", "class", "method" } },
    run = function(args)
      if args[1] == "new" then
        local what = #args > 3 and table.concat(vim.list_slice(args, 4), " ") or nil
        require("chimera.remora").new_node(args[2], args[3], what)
      elseif args[1] then
        error(("chimera: unknown :Chimera node %s; use :Chimera node, or :Chimera node new {kind} {name}"):format(args[1]), 0)
      else
        require("chimera.remora").show()
      end
    end,
  },
  remora = {
    desc = "Remora: :Chimera remora enable [--yes] (index the project; write inline IDs if remora.ids = \"inline\")",
    complete = function()
      return { "enable" }
    end,
    flags = { "--yes" },
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
  if not name then
    require("chimera.pick").subcommand(M.subcommands, function(choice)
      M.run({ args = choice, range = 0 })
    end)
    return
  end
  local sub = M.subcommands[name]
  if not sub then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    require("chimera.say").notify(
      ("Chimera: unknown subcommand %q; use one of: %s"):format(name, table.concat(names, ", ")),
      vim.log.levels.ERROR)
    return
  end
  local ok, err = pcall(sub.run, args, cmd)
  if not ok then
    require("chimera.say").notify(tostring(err), vim.log.levels.ERROR)
  end
end

--- Completes `:Chimera {sub} …`: the subcommand; a flag's values after
--- it; the subcommand's flags (those not given yet); its first argument.
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = false })
  -- words[1] is the command itself (maybe with a range); words[#words]
  -- the word being typed.
  local candidates
  if #words <= 2 then
    candidates = vim.tbl_keys(M.subcommands)
  else
    local sub = M.subcommands[words[2]] or {}
    local values = sub.flag_values and sub.flag_values[words[#words - 1]]
    if values then
      candidates = type(values) == "function" and values() or values
    else
      candidates = vim.tbl_filter(function(flag)
        return not vim.tbl_contains(words, flag, {}) or flag == arglead
      end, sub.flags or {})
      local positional = #vim.tbl_filter(function(w)
        return w ~= "" and not vim.startswith(w, "-")
      end, vim.list_slice(words, 3, #words - 1))
      if sub.complete and positional == 0 and not vim.startswith(arglead, "-") then
        vim.list_extend(candidates, sub.complete())
      end
    end
  end
  candidates = vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, candidates)
  table.sort(candidates)
  return candidates
end

return M
