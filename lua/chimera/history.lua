--- Snapshots, rollback and the effect log (seed 004) in the editor.
local state = require("chimera.state")

local M = {}

local function lib()
  require("chimera").start()
  return require("chimera.loader").require()
end

local function notify(msg, level)
  require("chimera.say").notify(msg, level or vim.log.levels.INFO)
end

--- Snapshots the project; returns the snapshot's ID at once.
function M.snapshot(message)
  local id = require("chimera").new_id(12)
  lib().snapshot(id, message or "")
  return id
end

--- The snapshots known to this session, newest first ({ id, message,
--- created_at, files }); the core refreshes them after every change.
function M.history()
  return state.snapshots or {}
end

--- The text of every loaded buffer under the root, for the core to see
--- what the human sees.
local function buffer_texts()
  local texts = {}
  local buffers = require("chimera.buffers")
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and state.root and vim.startswith(name, state.root .. "/") then
      if buffers.find(name) == buf then
        buffers.flush(buf)
      end
      table.insert(texts, { path = name, text = buffers.text(buf) })
    end
  end
  return texts
end

--- Points branch `name` at `snapshot` (default: the newest); without a
--- name, says which branches there are.
function M.branch(name, snapshot)
  lib().branch(name, snapshot)
end

--- Rolls back to snapshot `id` (`opts.dry_run`: only tell what would change).
function M.rollback(id, opts)
  opts = opts or {}
  if type(id) ~= "string" or id == "" then
    error("chimera.rollback: give a snapshot ID (see :Chimera history)", 2)
  end
  lib().rollback(id, opts.dry_run == true, buffer_texts())
end

-- Callbacks waiting for the core's answer, by what they wait for.
local waiters = { snapshots = {}, effects = {}, calls = {} }

--- Asks for the effects after `opts.since` (of `opts.kind`); `callback`
--- gets them. Returns the last list received.
function M.effects(opts, callback)
  opts = opts or {}
  if callback then
    table.insert(waiters.effects, callback)
  end
  lib().effects(opts.since, opts.kind)
  return state.effects or {}
end

-- Messages from the core.

--- Calls, once, every callback waiting for `kind` with `value`.
local function answer(kind, value)
  local callbacks = waiters[kind]
  waiters[kind] = {}
  for _, cb in ipairs(callbacks) do
    pcall(cb, value)
  end
end

--- Asks the core for the snapshots; `callback` gets them.
function M.refresh(callback)
  table.insert(waiters.snapshots, callback)
  lib().history()
end

local HISTORY_HEADER = "Chimera snapshots, newest first — r roll back  d dry run  f fork an agent  q close"

function M.snapshots_arrived(msg)
  state.snapshots = msg.snapshots
  answer("snapshots", msg.snapshots)
  -- An open history window shows a new snapshot as it is taken.
  require("chimera.listview").redraw("history", HISTORY_HEADER, M.history_lines(), M.history())
end

function M.rollback_done(msg)
  if msg.dry_run then
    require("chimera.say").show(msg.message)
  else
    -- The files it wrote on disk were reloaded (files_written).
    notify(msg.message, msg.ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  end
  vim.api.nvim_exec_autocmds("User", {
    pattern = "ChimeraRollback",
    modeline = false,
    data = { id = msg.id, dry_run = msg.dry_run, ok = msg.ok, message = msg.message },
  })
end

function M.effects_arrived(msg)
  state.effects = msg.effects
  answer("effects", msg.effects)
end

--- Asks for agent `id`'s audit log (every tool call it made); `callback`
--- gets the calls, oldest first.
function M.calls(id, callback)
  table.insert(waiters.calls, callback)
  lib().calls(id)
end

function M.calls_arrived(msg)
  answer("calls", msg.calls)
end

--- The lines `:Chimera history` shows.
function M.history_lines()
  local lines = {}
  for _, s in ipairs(M.history()) do
    local heads = #(s.branches or {}) > 0 and ("  (head of %s)"):format(table.concat(s.branches, ", ")) or ""
    table.insert(lines, ("%s  %s  %4d files  %s%s"):format(
      s.id,
      os.date("%Y-%m-%d %H:%M:%S", math.floor(s.created_at / 1000)),
      s.files,
      s.message,
      heads
    ))
  end
  if #lines == 0 then
    lines = { "No snapshot yet: :Chimera snapshot [message] takes one; every accept takes one first." }
  end
  return lines
end

--- `:Chimera history`: the snapshots in a buffer, keys to roll back to
--- one (`r`, asked first), dry-run it (`d`) or fork an agent from it (`f`).
function M.open()
  M.refresh(function()
    local snaps = M.history()
    require("chimera.listview").show(
      "history",
      HISTORY_HEADER,
      M.history_lines(),
      snaps,
      {
        { "d", function(s)
          M.rollback(s.id, { dry_run = true })
        end, "what a rollback would do" },
        { "r", function(s)
          vim.ui.select({ "Roll back", "Cancel" }, {
            prompt = ("Restore the project as in snapshot %s (%s)? A snapshot of now is taken first."):format(
              s.id,
              s.message
            ),
          }, function(choice)
            if choice == "Roll back" then
              M.rollback(s.id)
            end
          end)
        end, "roll back to this snapshot" },
        { "f", function(s)
          vim.ui.input({ prompt = ("Task for an agent forked from %s: "):format(s.id) }, function(text)
            if text and vim.trim(text) ~= "" then
              require("chimera").fork(s.id, text)
            end
          end)
        end, "fork an agent from this snapshot" },
      }
    )
  end)
end

--- One item of a list, whole, in a float.
local function show_whole(text, focus_id)
  vim.lsp.util.open_floating_preview(vim.split(text, "\n", { plain = true }), "text", {
    border = "rounded",
    focus_id = focus_id,
    max_width = math.floor(vim.o.columns * 0.8),
  })
end

--- `:Chimera effects`: the effects in a buffer; <CR> shows one whole.
function M.open_effects(opts)
  M.effects(opts, function(effects)
    require("chimera.listview").show(
      "effects",
      "Chimera effects (what no rollback undoes), oldest first — <CR> the whole effect  q close",
      M.effect_lines(effects),
      effects,
      {
        { "<CR>", function(e)
          local text = ("#%d %s after snapshot %s, %d ms\n\n%s\n\n-> %s"):format(
            e.seq,
            e.kind,
            e.snapshot_id or "-",
            e.duration_ms,
            e.input,
            e.output
          )
          show_whole(text, "chimera-effect")
        end, "the whole effect" },
      }
    )
  end)
end

--- `:Chimera calls {id}`: the agent's audit log in a buffer; <CR> shows
--- a call whole.
function M.open_calls(id)
  M.calls(id, function(calls)
    require("chimera.listview").show(
      "calls",
      ("Chimera calls of agent %s (every tool call, oldest first) — <CR> the whole call  q close"):format(id),
      M.call_lines(calls),
      calls,
      {
        { "<CR>", function(c)
          local text = ("#%d %s, %d ms, %s\n\n%s(%s)\n\n-> %s"):format(
            c.seq,
            os.date("%H:%M:%S", math.floor(c.created_at / 1000)),
            c.duration_ms,
            c.ok and "ok" or "failed",
            c.tool,
            c.args,
            c.result
          )
          show_whole(text, "chimera-call")
        end, "the whole call" },
      }
    )
  end)
end

--- The lines `:Chimera calls` shows: `✗` marks a call that failed or was
--- refused.
function M.call_lines(calls)
  local lines = {}
  for _, c in ipairs(calls) do
    table.insert(lines, ("#%d %s %s %5d ms  %s(%s) -> %s"):format(
      c.seq,
      os.date("%H:%M:%S", math.floor(c.created_at / 1000)),
      c.ok and " " or "✗",
      c.duration_ms,
      c.tool,
      (c.args:gsub("\n", " ")):sub(1, 60),
      (c.result:gsub("\n", " ")):sub(1, 60)
    ))
  end
  if #lines == 0 then
    lines = { "No tool call recorded." }
  end
  return lines
end

--- The lines `:Chimera effects` shows.
function M.effect_lines(effects)
  local lines = {}
  for _, e in ipairs(effects) do
    table.insert(lines, ("#%d %s %-8s %5d ms  after %s  %s"):format(
      e.seq,
      os.date("%H:%M:%S", math.floor(e.created_at / 1000)),
      e.kind,
      e.duration_ms,
      e.snapshot_id or "-",
      (e.input:gsub("\n", " ")):sub(1, 80)
    ))
  end
  if #lines == 0 then
    lines = { "No effect recorded." }
  end
  return lines
end

return M
