--- Receives the core's messages (on the main loop, from `schedule`) and
--- turns them into state, ghost text, buffer edits, notifications and
--- `User Chimera*` autocmds.
local state = require("chimera.state")

local M = {}

local function emit(pattern, data)
  vim.api.nvim_exec_autocmds("User", { pattern = pattern, modeline = false, data = data })
end

local function notify(msg, level)
  require("chimera.say").notify(msg, level or vim.log.levels.INFO)
end

local levels = { info = vim.log.levels.INFO, warn = vim.log.levels.WARN, error = vim.log.levels.ERROR }

local handlers = {}

function handlers.ready(msg)
  state.ready = true
  state.imported = msg.files
  local waiting = state.on_ready
  state.on_ready = {}
  for _, fn in ipairs(waiting) do
    vim.schedule(function()
      local ok, err = pcall(fn)
      if not ok then
        notify(tostring(err), vim.log.levels.ERROR)
      end
    end)
  end
end

local function paths_of(files, into)
  for _, f in ipairs(files or {}) do
    table.insert(into, f.path)
  end
  return into
end

--- A file of `id`'s proposal as the core counted it (path, change,
--- hunk_count, added, removed, conflicted). Its `hunks` (each with `key`,
--- `number`, `old_start`, `old_lines`, `new_lines`) and `human_hunks` are
--- fetched from the library the first time they are read: a proposal of
--- hundreds of files costs the main thread only the files it draws.
local function lazy_file(id, file)
  return setmetatable(file, {
    __index = function(t, key)
      if key ~= "hunks" and key ~= "human_hunks" then
        return nil
      end
      local full = require("chimera.loader").require().proposal_file(id, t.path) or {}
      rawset(t, "hunks", full.hunks or {})
      rawset(t, "human_hunks", full.human_hunks or {})
      return rawget(t, key)
    end,
  })
end

--- The proposal of `id` is now `files` (nil: gone). Returns the paths whose
--- ghost text must be redrawn and whether the proposal is new.
local function set_proposal(id, files)
  for _, f in ipairs(files or {}) do
    lazy_file(id, f)
  end
  local old = state.proposals[id]
  -- An agent that changed nothing (a chat answer) proposes nothing.
  state.proposals[id] = files and #files > 0 and files or nil
  return paths_of(old, paths_of(files, {})), not old and state.proposals[id] ~= nil
end

--- An agent's record, and in the same message what is shown of its
--- proposal: its state and its proposal are never seen apart.
function handlers.agent(msg)
  local rec = msg.agent
  local old = state.agents[rec.id]
  state.agents[rec.id] = rec
  local redraw, proposed = {}, false
  if msg.proposal then
    redraw, proposed = set_proposal(rec.id, msg.proposal)
  elseif msg.cleared then
    redraw = set_proposal(rec.id, nil)
  elseif state.proposals[rec.id] then
    -- The state (conflicted, summary) is part of the ghost text.
    redraw = paths_of(state.proposals[rec.id], {})
  end
  if rec.state ~= "running" then
    state.progress[rec.id] = nil
  end
  -- Ghost nodes exist only once remora.lua is loaded: never load it here.
  local remora = package.loaded["chimera.remora"]
  if remora then
    remora.agent_changed(rec)
  end
  if #redraw > 0 then
    require("chimera.ghost").render_paths(redraw)
  end
  if proposed then
    if state.config and state.config.ui.progress then
      -- The keys first: a line cut to the echo area keeps them.
      local keymaps = require("chimera.keymaps")
      notify(("Proposal %s ready [%s, %s]: %s"):format(
        rec.id,
        keymaps.hint("accept"),
        keymaps.hint("reject"),
        rec.summary or "(no summary)"
      ))
    end
    emit("ChimeraProposal", { id = rec.id, files = paths_of(state.proposals[rec.id], {}) })
  end
  if not old or old.state ~= rec.state or old.conflicted ~= rec.conflicted then
    emit("ChimeraAgentState", { id = rec.id, state = rec.state, previous = old and old.state })
  end
  require("chimera.progress").state(rec)
end

--- `text` with lines [start, end) replaced by `lines` (0-based, end
--- exclusive), line endings and the final newline kept.
local function replaced(text, start, end_, lines)
  local eol = text:find("\r\n", 1, true) and "\r\n" or "\n"
  local final = text == "" or text:sub(-#eol) == eol
  local body = text:sub(-#eol) == eol and text:sub(1, -#eol - 1) or text
  local old = body == "" and {} or vim.split(body, eol, { plain = true })
  local out = {}
  for i = 1, start do
    table.insert(out, old[i])
  end
  vim.list_extend(out, lines)
  for i = end_ + 1, #old do
    table.insert(out, old[i])
  end
  return table.concat(out, eol) .. ((final and #out > 0) and eol or "")
end

--- An accepted change (or a rollback) for a loaded buffer: applied as one
--- undoable change only if the buffer still holds the text it was computed
--- for; if the human typed meanwhile, the core merges and sends it again.
function handlers.edit_buffer(msg)
  local buffers = require("chimera.buffers")
  local buf = buffers.find(msg.path)
  if not buf then
    -- The buffer went away between accept and now: write through the file instead.
    buf = vim.fn.bufadd(msg.path)
    vim.fn.bufload(buf)
  end
  local now = buffers.text(buf)
  if now ~= msg.expect then
    local wanted = replaced(msg.expect, msg.start, msg["end"], msg.lines)
    require("chimera.loader").require().buffer_moved(msg.id, msg.path, msg.expect, wanted, now)
    return
  end
  local had_changes = vim.bo[buf].modified
  -- Close the current undo block so `u` undoes exactly this accept.
  vim.bo[buf].undolevels = vim.bo[buf].undolevels
  vim.api.nvim_buf_set_lines(buf, msg.start, msg["end"], false, msg.lines)
  if not vim.startswith(msg.id, "rollback-") then
    M.watch_undo(buf, msg.id, msg.path, vim.api.nvim_buf_call(buf, vim.fn.changenr))
  end
  if msg.write then
    -- Asked from outside (`chimera accept --write`): written, unless the
    -- buffer held other unsaved changes, which are the human's to save.
    if had_changes then
      notify(
        ("chimera: accepted %s into %s, not written: the buffer has other unsaved changes (:w writes them with it)"):format(
          msg.id,
          vim.fn.fnamemodify(msg.path, ":~:.")
        ),
        vim.log.levels.WARN
      )
    else
      vim.api.nvim_buf_call(buf, function()
        vim.cmd("silent write")
      end)
    end
  end
end

local applied = {} -- bufnr -> { {id, path, change} }: accepts in its undo tree

--- Follows `u` and redo in `buf` for the accept of agent `id`, its undo
--- change number `change`: undone (the buffer's state just below it), the
--- agent shows "undone" and it is said; redone, "accepted" again.
function M.watch_undo(buf, id, path, change)
  if not applied[buf] then
    applied[buf] = {}
    local function check()
      if not vim.api.nvim_buf_is_valid(buf) then
        return
      end
      -- changenr() is undotree()'s seq_cur without building the whole
      -- tree (2 ms at 5,000 changes): this runs after every change. After
      -- `u` it is one less than the change undone.
      local seq = vim.api.nvim_buf_call(buf, vim.fn.changenr)
      for _, a in ipairs(applied[buf] or {}) do
        local name = vim.fn.fnamemodify(a.path, ":~:.")
        if seq == a.change - 1 and not state.undone[a.id] then
          state.undone[a.id] = a.path
          notify(("chimera: the accept of %s is undone in %s (<C-r> redoes it)"):format(a.id, name))
          require("chimera.loader").require().accept_undone(a.id, true)
          require("chimera.agents_view").refresh_soon()
        elseif seq == a.change and state.undone[a.id] then
          state.undone[a.id] = nil
          notify(("chimera: the accept of %s is back in %s"):format(a.id, name))
          require("chimera.loader").require().accept_undone(a.id, false)
          require("chimera.agents_view").refresh_soon()
        end
      end
    end
    -- Every change, undo and redo included, whatever the mode (the
    -- TextChanged events wait for Normal mode's loop).
    vim.api.nvim_buf_attach(buf, false, {
      on_lines = function()
        if not applied[buf] then
          return true
        end
        vim.schedule(check)
      end,
      on_detach = function()
        applied[buf] = nil
      end,
    })
  end
  table.insert(applied[buf], { id = id, path = path, change = change })
end

--- Reloads the loaded, unmodified buffers of `paths` (files the core wrote
--- on disk), without a prompt; a modified buffer is left to the human.
function M.reload(paths)
  -- One pass over the buffers, not a lookup per path: an accept may write
  -- hundreds of files, of which a few are loaded.
  local loaded = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      loaded[vim.api.nvim_buf_get_name(buf)] = buf
    end
  end
  for _, path in ipairs(paths or {}) do
    local buf = loaded[path]
    if buf and not vim.bo[buf].modified then
      vim.api.nvim_buf_call(buf, function()
        vim.cmd("silent! edit")
      end)
    end
  end
end

--- What an accept did, in a line: where it went and what undoes it.
local function accepted_line(msg)
  local what = (msg.hunk ~= nil and msg.hunk ~= vim.NIL) and ("a hunk of " .. msg.id) or msg.id
  for _, f in ipairs(msg.files or {}) do
    local buf = vim.fn.bufnr(f)
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
      return ("chimera: accepted %s into the buffer, not yet written (u undoes it, :w writes it)"):format(what)
    end
  end
  return ("chimera: accepted %s, written to %d file(s) on disk (:Chimera rollback undoes it)"):format(what, #(msg.files or {}))
end

function handlers.resolved(msg)
  emit(msg.accepted and "ChimeraAccepted" or "ChimeraRejected", { id = msg.id, files = msg.files, hunk = msg.hunk })
  if msg.accepted then
    M.reload(msg.files)
    notify(accepted_line(msg))
    return
  end
  local rec = state.agents[msg.id] or {}
  if msg.hunk ~= nil and msg.hunk ~= vim.NIL then
    notify(("chimera: rejected a hunk of %s"):format(msg.id))
  elseif rec.state == "queued" or rec.state == "running" then
    notify(("chimera: rejected %s; the agent tries again with your feedback"):format(msg.id))
  else
    notify(("chimera: rejected %s; nothing was changed"):format(msg.id))
  end
end

function handlers.files_written(msg)
  M.reload(msg.paths)
end

function handlers.progress(msg)
  state.progress[msg.id] = msg.message
  require("chimera.agents_view").refresh_soon()
  require("chimera.progress").report(msg.id, msg.message)
  if state.config and state.config.ui.progress then
    require("chimera.say").progress(("chimera %s: %s"):format(msg.id, msg.message))
  end
end

-- Questions shown here and not yet closed, by ID: { agent = id }.
local open_questions = {}

-- An agent asks permission the preset would refuse (capabilities.ask).
function handlers.permission(msg)
  local allow, refuse = "Allow", "Refuse"
  open_questions[msg.id] = { agent = msg.agent }
  vim.ui.select({ allow, refuse }, {
    prompt = ("Chimera agent %s asks permission: %s"):format(msg.agent, msg.question),
  }, function(choice)
    if not open_questions[msg.id] then
      -- Closed meanwhile (on the dashboard, by a script, out of time):
      -- already said; the first answer counted.
      return
    end
    open_questions[msg.id] = nil
    require("chimera.loader").require().answer_permission(msg.id, choice == allow)
  end)
end

-- A question is closed: by this Neovim (nothing to say), or elsewhere
-- while its prompt may still show here (said, so a late choice is not
-- taken for the answer).
function handlers.answered(msg)
  local question = open_questions[msg.id]
  if not question then
    return
  end
  open_questions[msg.id] = nil
  local how = "went unanswered for 2 minutes: refused"
  if msg.allow ~= nil and msg.allow ~= vim.NIL then
    how = msg.allow and "was allowed elsewhere" or "was refused elsewhere"
  end
  notify(("Chimera: agent %s's question %s"):format(question.agent, how))
end

function handlers.llm_status(msg)
  state.llm_status = msg
  local waiting = state.on_llm_status
  state.on_llm_status = nil
  if waiting then
    waiting(msg)
  end
end

function handlers.notify(msg)
  notify(msg.message, levels[msg.level])
end

function handlers.topology(msg)
  require("chimera.remora").topology(msg)
end

function handlers.inject_ids(msg)
  require("chimera.remora").inject(msg)
end

function handlers.snapshots(msg)
  require("chimera.history").snapshots_arrived(msg)
end

function handlers.rollback(msg)
  require("chimera.history").rollback_done(msg)
end

function handlers.ghost_node(msg)
  require("chimera.remora").ghost_arrived(msg)
end

function handlers.calls(msg)
  require("chimera.history").calls_arrived(msg)
end

function handlers.conflict_markers(msg)
  require("chimera").conflict_markers_arrived(msg)
end

function handlers.effects(msg)
  require("chimera.history").effects_arrived(msg)
end

function handlers.chat_entry(msg)
  require("chimera.chat").entry_arrived(msg)
end

function handlers.chat_delta(msg)
  require("chimera.chat").delta_arrived(msg)
end

function handlers.agent_said(msg)
  require("chimera.transcript").arrived(msg)
end

function handlers.chat_history(msg)
  require("chimera.chat").history_arrived(msg)
end

function handlers.remora_event(msg)
  require("chimera.remora").event(msg)
end

function handlers.node_history(msg)
  require("chimera.remora").history_arrived(msg)
end

function handlers.remora_confirm(msg)
  require("chimera.remora").confirm(msg)
end

function M.dispatch(msg)
  local h = handlers[msg.type]
  if h then
    h(msg)
  end
  if msg.type == "agent" then
    require("chimera.agents_view").refresh()
    require("chimera.transcript").agent_changed(msg.agent)
  end
end

return M
