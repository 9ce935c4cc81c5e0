-- Snapshots, rollback (dry run first), the effect log and forks in a real
-- Neovim: a loaded buffer is restored as one undoable change, other files
-- on disk, and the message names the effects that stay.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local APP = "def parse_config(path):\n    return {}\n"
local PROGRAM = "```python\nsrc = read_file('app.py')\nwrite_file('app.py', src.replace('return {}', 'return {\"a\": 1}'))\nwrite_file('notes.txt', 'new file\\n')\nsubmit_result('a and notes', ['app.py', 'notes.txt'])\n```"

h.test("snapshot, accept, rollback with a dry run, effects, fork", function()
  local root = h.project({ ["app.py"] = APP, ["util.py"] = "u = 1\n" })
  h.setup((h.fake_llm({ { text = PROGRAM }, { text = PROGRAM } })))
  vim.cmd.edit("app.py")
  local buf = vim.api.nvim_get_current_buf()
  chimera.start()
  h.wait_for("the import", function()
    return require("chimera.state").ready
  end)
  local snap = chimera.snapshot("clean")
  h.wait_for("the snapshot in history", function()
    return #vim.tbl_filter(function(s)
      return s.id == snap and s.message == "clean"
    end, chimera.history()) == 1
  end)
  local id = chimera.spawn("change it")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  chimera.accept(id)
  h.wait_for("the accept", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], '    return {"a": 1}', "accepted into the buffer")
  h.truthy(h.read(root .. "/notes.txt"), "notes.txt written")
  h.wait_for("the automatic snapshot", function()
    return #vim.tbl_filter(function(s)
      return s.message == "before accepting " .. id
    end, chimera.history()) == 1
  end)
  -- The effect log holds the agent's LLM call.
  local effects = h.effects({ kind = "llm" })
  h.eq(#effects, 1, "one LLM call")
  h.eq(effects[1].snapshot_id, snap, "after the snapshot")
  -- Dry run: told, nothing changes.
  local outcomes = h.user_events("ChimeraRollback")
  vim.cmd("Chimera rollback " .. snap .. " --dry-run")
  h.wait_for("the dry run", function()
    return #outcomes == 1
  end)
  local outcome = outcomes[1]
  h.truthy(outcome.dry_run and outcome.message:find("restore app.py", 1, true), outcome.message)
  h.truthy(outcome.message:find("delete  notes.txt", 1, true), outcome.message)
  h.truthy(outcome.message:find("cannot be undone: 1 llm", 1, true), outcome.message)
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], '    return {"a": 1}', "dry run changed nothing")
  -- The rollback: the buffer as one undoable change, notes.txt gone.
  vim.cmd("Chimera rollback " .. snap)
  h.wait_for("the rollback", function()
    return #outcomes == 2
  end)
  outcome = outcomes[2]
  h.truthy(outcome.ok, outcome.message)
  h.wait_for("the buffer restored", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return {}"
  end)
  h.eq(h.read(root .. "/notes.txt"), nil, "notes.txt deleted")
  vim.cmd("silent undo")
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], '    return {"a": 1}', "one undo step")
  vim.cmd("silent redo")
  -- A fork from the snapshot before the accept proposes from that state.
  local fid = chimera.fork(snap, "change it again")
  h.eq(chimera.wait(fid, 20000), "completed", "fork state")
  local files = {}
  h.wait_for("the fork's proposal", function()
    files = {}
    for _, p in ipairs(chimera.proposals()) do
      if p.id == fid then
        for _, f in ipairs(p.files) do
          table.insert(files, vim.fs.basename(f.path))
        end
      end
    end
    return #files > 0
  end)
  table.sort(files)
  h.eq(files, { "app.py", "notes.txt" }, "the fork's proposal")

  -- :Chimera history and :Chimera effects are buffers, not echoes.
  vim.cmd("Chimera history")
  local list
  h.wait_for("the history buffer", function()
    list = vim.api.nvim_get_current_buf()
    return vim.api.nvim_buf_get_name(list):match("chimera://history$")
  end)
  local lines = vim.api.nvim_buf_get_lines(list, 0, -1, false)
  local row
  for i, l in ipairs(lines) do
    if l:find(snap, 1, true) then
      row = i
    end
  end
  h.truthy(row and lines[row]:find("clean", 1, true), table.concat(lines, "\n"))
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.api.nvim_feedkeys("d", "x", false)
  h.wait_for("the dry run from the list", function()
    return #outcomes == 3 and outcomes[3].id == snap and outcomes[3].dry_run
  end)
  vim.api.nvim_feedkeys("q", "x", false)
  h.eq(vim.api.nvim_buf_is_valid(list), false, "q closes it")
  vim.cmd("Chimera effects --kind llm")
  h.wait_for("the effects buffer", function()
    list = vim.api.nvim_get_current_buf()
    return vim.api.nvim_buf_get_name(list):match("chimera://effects$")
      and #vim.api.nvim_buf_get_lines(list, 0, -1, false) >= 3
  end)
  lines = vim.api.nvim_buf_get_lines(list, 0, -1, false)
  h.truthy(lines[3]:find("llm", 1, true), table.concat(lines, "\n"))
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  local wins = #vim.api.nvim_list_wins()
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  h.eq(#vim.api.nvim_list_wins(), wins + 1, "<CR> shows the whole effect in a float")
end)

h.test(":Chimera branch names a snapshot; history shows it; rollback and fork take its name", function()
  h.project({ ["app.py"] = APP })
  h.setup((h.fake_llm({ { text = PROGRAM } })))
  vim.cmd.edit("app.py")
  local buf = vim.api.nvim_get_current_buf()
  chimera.start()
  local snap = chimera.snapshot("clean")
  -- Typed at once, as a person would: the branch goes on the newest snapshot.
  vim.cmd("Chimera branch try/one")
  h.wait_for("the branch in history", function()
    for _, s in ipairs(chimera.history()) do
      if s.id == snap and vim.deep_equal(s.branches, { "try/one" }) then
        return true
      end
    end
  end)
  vim.cmd("Chimera history")
  local text
  h.wait_for("the history buffer", function()
    text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return vim.api.nvim_buf_get_name(0):match("chimera://history$")
  end)
  h.truthy(text:find(snap .. ".*clean  %(head of try/one%)"), text)
  vim.cmd("close")
  h.truthy(vim.tbl_contains(vim.fn.getcompletion("Chimera rollback ", "cmdline"), "try/one"), "completion offers the branch")
  -- A bad name is refused with the reason.
  h.wait_for_notice("not a branch name", function()
    vim.cmd("Chimera branch bad\\ name")
  end)
  -- The buffer changes; a rollback to the branch brings it back.
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "def changed():" })
  vim.cmd("write")
  local outcomes = h.user_events("ChimeraRollback")
  vim.cmd("Chimera rollback try/one")
  h.wait_for("the rollback", function()
    return #outcomes == 1
  end)
  h.truthy(outcomes[1].ok, outcomes[1].message)
  h.wait_for("the buffer as on the branch", function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == vim.split(APP, "\n")[1]
  end)
  local fid = chimera.fork("try/one", "change it")
  h.eq(chimera.wait(fid, 20000), "completed", tostring((chimera.agent(fid) or {}).error))
  chimera.reject(fid)
end)

h.finish()
