--- Chimera: AI agents propose changes in their own overlays; you review
--- them as ghost text and accept (<Leader>a) or reject (<Leader>r).
--- This is the public Lua API; see `:help chimera-api`.
local state = require("chimera.state")

local M = {}

local group

local function notify_error(msg)
  require("chimera.say").notify(msg, vim.log.levels.ERROR)
end

--- Configures Chimera. Cheap: the native library is loaded and the project
--- imported on first use. Safe to call again (options are re-applied and a
--- running core restarts with them).
function M.setup(opts)
  local config, err = require("chimera.config").resolve(opts)
  if not config then
    notify_error(err)
    return false
  end
  local restart = state.root ~= nil and not vim.deep_equal(config, state.config)
  state.config = config
  require("chimera.highlights").setup()
  group = vim.api.nvim_create_augroup("chimera", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = group,
    callback = function()
      require("chimera.highlights").setup()
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function()
      -- A Neovim that never started the core quits without loading the
      -- native library only to find nothing to stop.
      if state.root then
        M.stop()
      end
    end,
  })
  require("chimera.buffers").setup_autocmds(group)
  vim.api.nvim_create_autocmd("WinScrolled", {
    group = group,
    callback = function()
      require("chimera.ghost").scrolled()
    end,
  })
  -- The notes are cut to their window's width: drawn again when it changes.
  vim.api.nvim_create_autocmd({ "VimResized", "WinResized" }, {
    group = group,
    callback = function()
      if next(state.proposals) then
        require("chimera.ghost").render_paths(nil)
      end
    end,
  })
  require("chimera.keymaps").apply(config.keymaps)
  M.wait_for_build()
  if restart then
    M.stop()
    M.start()
  end
  return true
end

--- Starts the core (loads the library, opens the database, imports the
--- project in the background). Called by every function that needs it.
--- `dir`: where to look for the project (default: the working directory).
local waiting_for_build = false

--- While a background source build runs (a plugin manager's first
--- install), says so once; when it ends, says how it went and starts the
--- core for the buffer in view if its project has a store.
function M.wait_for_build()
  if waiting_for_build or package.loaded.chimera_native then
    return
  end
  local loader = require("chimera.loader")
  waiting_for_build = loader.when_built(function(lib, err)
    waiting_for_build = false
    if not lib then
      return notify_error(err)
    end
    require("chimera.say").info("Chimera's native library is built and loaded: ready")
    require("chimera.buffers").autostart(vim.api.nvim_get_current_buf(), true)
  end)
  if waiting_for_build then
    local _, said = loader.build_state()
    require("chimera.say").info(said)
  end
end

function M.start(dir)
  if state.root then
    return true
  end
  if not state.config then
    M.setup({})
  end
  dir = dir or vim.uv.cwd()
  -- A folder in no project (Neovim started in ~/Downloads) is imported and
  -- watched only when the human says so; a yes leaves `.chimera/` there,
  -- which answers the question next time.
  if not state.config.root and not vim.fs.root(dir, { ".git", ".chimera" }) then
    local answer = vim.fn.confirm(
      ("Chimera: %s is in no git project. Import and watch every file under it as the project?"):format(dir),
      "&Yes\n&No",
      2
    )
    if answer ~= 1 then
      error("chimera: not started: open Neovim in a project (a folder with .git), or set `root` in setup()", 0)
    end
  end
  local lib = require("chimera.loader").require()
  -- The core resolves the root (`root` option, else the nearest `.git`).
  -- Agents started from now on are this session's (their token totals).
  state.session_started = state.session_started or os.time() * 1000
  state.root = lib.start(require("chimera.config").to_json(state.config), dir)
  require("chimera.buffers").attach_all()
  return true
end

--- Calls `fn` once the core has imported the project and shown the
--- proposals that wait, starting it if needed: a key pressed before that
--- acts then, on what is there to act on.
function M.when_ready(fn)
  if state.ready then
    return fn()
  end
  M.start()
  table.insert(state.on_ready, fn)
end

--- Stops the core. Agents still working are left queued or running in the
--- store; the next start recovers them.
function M.stop()
  local lib = require("chimera.loader").load()
  if lib and lib.running() then
    lib.stop()
  end
  state.root = nil
  state.ready = false
  -- The next core indexes afresh.
  state.topology_tick = nil
  require("chimera.progress").stop()
  -- The core sends every agent and proposal again when it starts.
  local shown = {}
  for _, files in pairs(state.proposals) do
    for _, f in ipairs(files) do
      table.insert(shown, f.path)
    end
  end
  state.agents, state.proposals, state.progress = {}, {}, {}
  pcall(require("chimera.ghost").render_paths, shown)
end

--- A random ID of `len` hex digits, chosen here so the API can return it at once.
function M.new_id(len)
  len = len or 8
  local bytes = vim.uv.random and vim.uv.random(math.ceil(len / 2)) or tostring(vim.uv.hrtime())
  return (bytes:gsub(".", function(c)
    return ("%02x"):format(c:byte())
  end)):sub(1, len)
end

--- A new agent's record until the core sends the real one: a new ID, queued.
local function queued_agent(task, context, external)
  local id = M.new_id()
  local now = os.time() * 1000
  state.agents[id] = {
    id = id,
    state = "queued",
    task = task,
    context = context,
    external = external,
    changed_files = {},
    conflicted = false,
    created_at = now,
    updated_at = now,
  }
  return id
end

--- Starts an agent on `task`. `opts.mode` is "code" or "tools" (default:
--- `agents.mode`); `opts.capabilities` a preset ("readonly", "sandbox",
--- "developer"; default `capabilities.preset`). `opts.context` is extra text (a selection);
--- `opts.file` the file it concerns (default: the current buffer's, with
--- the cursor's line as `opts.cursor_line`, 0-based).
--- Returns the agent id at once; the agent works in the background.
--- The file a task concerns (`opts.file`, else the current buffer's) and
--- the cursor's line (0-based) in it.
local function task_target(opts)
  local file, cursor_line = opts.file, opts.cursor_line
  if file == false then
    return nil, nil
  end
  if file == nil then
    local name = vim.api.nvim_buf_get_name(0)
    if name ~= "" and vim.bo.buftype == "" then
      file = name
      cursor_line = cursor_line or (vim.api.nvim_win_get_cursor(0)[1] - 1)
    end
  end
  if file then
    file = vim.fn.fnamemodify(file, ":p")
    file = vim.uv.fs_realpath(file) or file
  end
  return file, cursor_line
end

function M.spawn(task, opts)
  opts = opts or {}
  if type(task) ~= "string" or vim.trim(task) == "" then
    error("chimera.spawn: give the task as a non-empty string, e.g. spawn('add a docstring to parse_config')", 2)
  end
  M.start()
  local file, cursor_line = task_target(opts)
  local id = queued_agent(task, opts.context, opts.agent)
  require("chimera.loader").require().spawn(id, {
    task = task,
    context = opts.context,
    file = file,
    line = cursor_line and cursor_line + 1,
    mode = opts.mode,
    capabilities = opts.capabilities,
    agent = opts.agent,
  })
  return id
end

--- Says `message` in the free chat (see :help :Chimera-chat): a tool-mode
--- agent takes the turn with the conversation so far. `opts.file` as for
--- spawn(); `opts.context`: more text the turn sees (what the message's
--- references point at). Returns the turn's agent id.
function M.chat(message, opts)
  opts = opts or {}
  if type(message) ~= "string" or vim.trim(message) == "" then
    error("chimera.chat: give the message as a non-empty string", 2)
  end
  M.start()
  local file, cursor_line = task_target(opts)
  local id = queued_agent(message)
  require("chimera.loader").require().chat(id, message, file, cursor_line, opts.context)
  return id
end

--- The free chat's conversation (entries with seq, role, content,
--- agent_id, created_at), as last received from the core.
function M.chat_entries()
  return require("chimera.chat").entries()
end

--- Snapshots, rollback, effects and forks (see :help chimera-history).
function M.snapshot(message)
  return require("chimera.history").snapshot(message)
end

function M.history()
  return require("chimera.history").history()
end

function M.rollback(id, opts)
  return require("chimera.history").rollback(id, opts)
end

function M.effects(opts, callback)
  return require("chimera.history").effects(opts, callback)
end

--- Starts an agent on `task` with the project as in snapshot `snapshot_id`.
function M.fork(snapshot_id, task)
  M.start()
  local id = queued_agent(task)
  require("chimera.loader").require().fork(id, snapshot_id, task)
  return id
end

--- Remora topology queries (records with id, node_type, name, qualname,
--- parent_id, file_path, start_line, end_line, status, source_hash).
function M.nodes(path)
  return require("chimera.remora").nodes(path)
end

function M.node(id)
  return require("chimera.remora").node(id)
end

function M.node_at_cursor()
  return require("chimera.remora").node_at_cursor()
end

function M.callers(id)
  return require("chimera.remora").callers(id)
end

function M.callees(id)
  return require("chimera.remora").callees(id)
end

--- Every agent known to this session, oldest first.
function M.agents()
  local list = vim.tbl_values(state.agents)
  table.sort(list, function(a, b)
    if a.created_at == b.created_at then
      return a.id < b.id
    end
    return a.created_at < b.created_at
  end)
  return list
end

--- One agent's record (id, state, task, summary, error, changed_files,
--- conflicted, created_at, updated_at), or nil.
function M.agent(id)
  return state.agents[id]
end

--- Pending proposals, optionally only those touching buffer `opts.bufnr`:
--- list of { id, summary, conflicted, files = { {path, change, hunk_count,
--- added, removed, hunks} } }; a file's `hunks` are fetched when first read.
function M.proposals(opts)
  opts = opts or {}
  local path
  if opts.bufnr then
    local buf = opts.bufnr == 0 and vim.api.nvim_get_current_buf() or opts.bufnr
    path = vim.api.nvim_buf_get_name(buf)
  end
  local out = {}
  for id, files in pairs(state.proposals) do
    local keep = not path
    for _, f in ipairs(files) do
      keep = keep or f.path == path
    end
    if keep then
      local a = state.agents[id] or {}
      table.insert(out, { id = id, summary = a.summary, conflicted = a.conflicted, files = files })
    end
  end
  table.sort(out, function(a, b)
    return a.id < b.id
  end)
  return out
end

--- The proposal under or nearest the cursor in the current buffer: its id,
--- the key and the number of the hunk there.
function M.current()
  local buf = vim.api.nvim_get_current_buf()
  return require("chimera.ghost").nearest(buf, vim.api.nvim_win_get_cursor(0)[1] - 1)
end

local function resolve_id(id, verb)
  id = id or M.current()
  if not id then
    local list = M.proposals()
    if #list == 1 then
      return list[1].id
    end
    error(("chimera: no proposal here to %s; give its id (:Chimera %s {id})"):format(verb, verb), 0)
  end
  if not state.agents[id] and not state.proposals[id] then
    error(("chimera: no agent with id %s (see :Chimera agents)"):format(id), 0)
  end
  return id
end

--- Accepts proposal `id` (default: the one under or nearest the cursor),
--- or only hunk `opts.hunk` of it (a number, from 1 in file order, or a
--- hunk's `key`).
--- Loaded buffers change as one undoable change each; other files are
--- written on disk. Fires `User ChimeraAccepted` when done.
function M.accept(id, opts)
  id = resolve_id(id, "accept")
  local hunk = opts and opts.hunk or nil
  local buffers = require("chimera.buffers")
  local texts = {}
  for _, f in ipairs(state.proposals[id] or {}) do
    local buf = buffers.find(f.path)
    if buf then
      buffers.flush(buf)
      table.insert(texts, { path = f.path, text = buffers.text(buf) })
    end
  end
  require("chimera.loader").require().accept(id, texts, hunk)
  return id
end

--- Rejects proposal `id` (or cancels a running agent). With
--- `opts.feedback`, the agent tries again with its rejected attempt and the
--- feedback (at most `agents.feedback_rounds` times). With `opts.hunk`,
--- only that hunk is dropped.
function M.reject(id, opts)
  id = resolve_id(id, "reject")
  opts = opts or {}
  local lib = require("chimera.loader").require()
  if opts.hunk then
    lib.reject_hunk(id, opts.hunk)
  else
    lib.reject(id, opts.feedback)
  end
  return id
end

--- Accepts the hunk under or nearest the cursor.
function M.accept_hunk()
  local id, hunk = M.current()
  if not id then
    error("chimera: no proposal in this buffer", 0)
  end
  return M.accept(id, { hunk = hunk })
end

--- Rejects the hunk under or nearest the cursor.
function M.reject_hunk()
  local id, hunk = M.current()
  if not id then
    error("chimera: no proposal in this buffer", 0)
  end
  return M.reject(id, { hunk = hunk })
end

--- Asks for feedback (vim.ui.input), then rejects the proposal under or
--- nearest the cursor with it: the agent tries again.
function M.reject_with_feedback(id)
  id = resolve_id(id, "reject")
  vim.ui.input({ prompt = ("Feedback for agent %s: "):format(id) }, function(text)
    if text and vim.trim(text) ~= "" then
      M.reject(id, { feedback = text })
    end
  end)
end

-- The buffers waiting for their conflict markers, by proposal and path:
-- { buf, tick } as they were when asked.
local resolving = {}

--- Writes where proposal `id` (default: the one here) clashes with your
--- edits into the current buffer, both sides between conflict markers, as
--- one undoable change; the rest of it merges in. Settle each block; once
--- your text holds the agent's change the proposal ends by itself, else
--- reject it. The core works the merge out; the buffer changes when it
--- answers, unless you typed meanwhile.
function M.resolve(id)
  id = resolve_id(id, "resolve")
  local buf = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(buf)
  local buffers = require("chimera.buffers")
  buffers.flush(buf)
  resolving[id .. "\0" .. path] = { buf = buf, tick = vim.api.nvim_buf_get_changedtick(buf) }
  require("chimera.loader").require().conflict_markers(id, path, buffers.text(buf))
end

--- The core's answer to resolve(): writes the marked text into the buffer.
function M.conflict_markers_arrived(msg)
  local key = msg.id .. "\0" .. msg.path
  local asked = resolving[key]
  resolving[key] = nil
  local function say(text, level)
    require("chimera.say").notify(text, level)
  end
  if not asked or not vim.api.nvim_buf_is_valid(asked.buf) then
    return
  end
  if msg.error ~= nil and msg.error ~= vim.NIL then
    return say(msg.error, vim.log.levels.ERROR)
  end
  if msg.marked == nil or msg.marked == vim.NIL then
    return say(
      ("chimera: proposal %s does not clash with your edits in this file; accept it (or a hunk)"):format(msg.id),
      vim.log.levels.ERROR
    )
  end
  local buf = asked.buf
  if vim.api.nvim_buf_get_changedtick(buf) ~= asked.tick then
    return say("chimera: you typed while the conflict markers were worked out; run :Chimera resolve again", vim.log.levels.WARN)
  end
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local new = vim.split(msg.marked:gsub("\r?\n$", ""), "\r?\n")
  -- The smallest range that changes, so marks and folds elsewhere stay.
  local first = 1
  while first <= #old and first <= #new and old[first] == new[first] do
    first = first + 1
  end
  local last_old, last_new = #old, #new
  while last_old >= first and last_new >= first and old[last_old] == new[last_new] do
    last_old, last_new = last_old - 1, last_new - 1
  end
  -- Its own undo step.
  vim.bo[buf].undolevels = vim.bo[buf].undolevels
  vim.api.nvim_buf_set_lines(buf, first - 1, last_old, false, vim.list_slice(new, first, last_new))
  if vim.api.nvim_get_current_buf() == buf then
    vim.fn.search("^<<<<<<< yours", "w")
  end
  say(
    ("chimera: keep yours, the agent's or both in each <<<<<<< block; proposal %s ends by itself once your text holds its change, else reject it"):format(msg.id),
    vim.log.levels.INFO
  )
end

--- Moves the cursor to the next (`dir` = 1) or previous (-1) hunk of any
--- proposal in the current buffer, wrapping around; else to the first
--- file with a proposal.
function M.jump(dir)
  local buf = vim.api.nvim_get_current_buf()
  local rows = require("chimera.ghost").hunk_rows(buf)
  if #rows == 0 then
    local first = M.proposals()[1]
    if not first then
      require("chimera.say").notify("chimera: no proposals", vim.log.levels.INFO)
      return
    end
    vim.cmd.edit(vim.fn.fnameescape(first.files[1].path))
    rows = require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf())
    if #rows > 0 then
      vim.api.nvim_win_set_cursor(0, { rows[1] + 1, 0 })
    end
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local target
  if dir > 0 then
    for _, r in ipairs(rows) do
      if r > row then
        target = r
        break
      end
    end
    target = target or rows[1]
  else
    for i = #rows, 1, -1 do
      if rows[i] < row then
        target = rows[i]
        break
      end
    end
    target = target or rows[#rows]
  end
  vim.api.nvim_win_set_cursor(0, { target + 1, 0 })
end

--- Opens the diff of proposal `id` (default: nearest the cursor): a float
--- with every file's diff, or with `opts.split` a native `:diffthis` split
--- of the current file against its proposed version.
function M.diff(id, opts)
  id = resolve_id(id, "diff")
  return require("chimera.diffview").open(id, opts or {})
end

--- Stops queued or running agent `id` at once (its LLM request and
--- sandbox included); it ends "cancelled".
function M.cancel(id)
  if not id then
    for _, a in ipairs(M.agents()) do
      if a.state == "running" or a.state == "queued" then
        id = a.id
      end
    end
  end
  if not id then
    error("chimera: no agent is working; nothing to cancel", 0)
  end
  require("chimera.loader").require().cancel(id)
  return id
end

--- Runs Neovim's event loop until agent `id` is neither queued nor running
--- or `timeout_ms` passed (default 60000). Returns its state.
function M.wait(id, timeout_ms)
  vim.wait(timeout_ms or 60000, function()
    local a = state.agents[id]
    return a ~= nil and a.state ~= "queued" and a.state ~= "running"
  end, 20)
  local a = state.agents[id]
  return a and a.state
end

--- Who serves this project to clients outside Neovim (the `chimera`
--- command, the HTTP API): { socket, pid, own, api = { port, dashboard } };
--- `pid` is nil while no core serves it. nil before the core starts.
function M.served()
  if not state.root then
    return nil
  end
  return require("chimera.loader").require().served(state.root)
end

--- The web dashboard's address, opened in the browser (logged in once
--- through a private page, so that no secret is on the browser's command
--- line) unless `opts.open == false` (see :help chimera-http).
function M.dashboard(opts)
  M.start()
  local served
  -- The server binds its port just after the core starts.
  vim.wait(3000, function()
    served = M.served()
    return served and served.api ~= nil
  end, 20)
  local url = served and served.api and served.api.dashboard
  if not url then
    if served and served.pid and not served.own then
      error(("Chimera: process %d serves this project without the HTTP API; stop it, or run `chimera serve` instead"):format(served.pid), 0)
    end
    error("Chimera: the HTTP API is off: set `api = { enabled = true }` in setup{} (or run `chimera serve` in a shell)", 0)
  end
  if not (opts and opts.open == false) then
    vim.ui.open(require("chimera.loader").require().dashboard_opener(state.root) or url)
  end
  return url
end

--- A summary: { started, ready, root, agents = {state -> count}, proposals = n }.
function M.status()
  local counts = {}
  for _, a in pairs(state.agents) do
    counts[a.state] = (counts[a.state] or 0) + 1
  end
  return {
    started = state.root ~= nil,
    ready = state.ready,
    root = state.root,
    agents = counts,
    proposals = vim.tbl_count(state.proposals),
  }
end

--- A short statusline string: running agents and pending proposals.
--- Calls `callback` with what the LLM server says of itself ({ ok,
--- message, models }), asked by the core on its runtime (a server that
--- does not answer never holds the editor).
function M.llm_status(callback)
  M.start()
  state.on_llm_status = callback
  require("chimera.loader").require().check_llm()
end

--- New agents ask `model` when their role names none (llm.roles); agents
--- already working keep theirs. Kept for the session (a restart of the
--- core too); `setup()` sets it anew.
function M.set_model(model)
  if type(model) ~= "string" or vim.trim(model) == "" then
    error("chimera.set_model: give a model name, e.g. set_model('qwen2.5-coder:7b')", 2)
  end
  M.start()
  state.config.llm.model = vim.trim(model)
  require("chimera.loader").require().set_model(state.config.llm.model)
end

function M.statusline()
  local s = M.status()
  local running = (s.agents.running or 0) + (s.agents.queued or 0)
  if running == 0 and s.proposals == 0 then
    return ""
  end
  return ("◆ %d working, %d to review"):format(running, s.proposals)
end

return M
