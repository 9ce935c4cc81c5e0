-- Review as users ask for it: per-hunk accept/reject, reject with
-- feedback, the diff view, hunk jumps, the agents window.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local SRC = "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"
local PROGRAM = "```python\nsrc = read_file('m.py')\nsrc = src.replace('return 1', 'return 10').replace('return 3', 'return 30')\nwrite_file('m.py', src)\nsubmit_result('tens', ['m.py'])\n```"

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- The ghost-text note of proposal `id` in `buf`, if drawn.
local function note_of(buf, id)
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, require("chimera.ghost").ns, 0, -1, { details = true })) do
    local chunks = vim.list_extend({}, m[4].virt_text or {})
    for _, line in ipairs(m[4].virt_lines or {}) do
      vim.list_extend(chunks, line)
    end
    for _, chunk in ipairs(chunks) do
      if chunk[1]:find("chimera " .. id, 1, true) then
        return chunk[1]
      end
    end
  end
end

local function proposal_ready(id)
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.wait_for("ghost text", function()
    return #require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf()) == 2
  end)
end

h.test("hunks are accepted and rejected one at a time", function()
  local root = h.project({ ["m.py"] = SRC })
  h.setup((h.fake_llm({ { text = PROGRAM } })))
  vim.cmd.edit("m.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("tens")
  proposal_ready(id)
  -- next/prev jump between the two hunks (lines 2 and 10), wrapping.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  chimera.jump(1)
  h.eq(vim.api.nvim_win_get_cursor(0)[1], 2, "next")
  chimera.jump(1)
  h.eq(vim.api.nvim_win_get_cursor(0)[1], 10, "next again")
  chimera.jump(1)
  h.eq(vim.api.nvim_win_get_cursor(0)[1], 2, "wraps")
  chimera.jump(-1)
  h.eq(vim.api.nvim_win_get_cursor(0)[1], 10, "prev wraps")
  -- Cursor on the second hunk: reject just that one.
  vim.cmd('execute "normal \\<Plug>(chimera-reject-hunk)"')
  h.wait_for("one hunk left", function()
    return #require("chimera.ghost").hunk_rows(buf) == 1
  end)
  h.eq(chimera.agent(id).state, "completed", "still reviewable")
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('execute "normal \\<Plug>(chimera-accept-hunk)"')
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("the edit", function()
    return lines(buf)[2] == "    return 10"
  end)
  h.eq(lines(buf)[10], "    return 3", "the rejected hunk was not applied")
  h.eq(h.read(root .. "/m.py"), SRC, "disk untouched: the buffer is the ground truth")
end)

h.test(":Chimera accept --hunk N takes hunk N in file order", function()
  h.project({ ["m.py"] = SRC })
  h.setup((h.fake_llm({ { text = PROGRAM } })))
  vim.cmd.edit("m.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("tens")
  proposal_ready(id)
  vim.cmd("Chimera accept " .. id .. " --hunk 2")
  h.wait_for("the edit", function()
    return lines(buf)[10] == "    return 30"
  end)
  h.eq(lines(buf)[2], "    return 1", "hunk 1 left alone")
  h.eq(chimera.agent(id).state, "completed", "hunk 1 still proposed")
end)

h.test("reject with feedback (no id: the proposal here) runs the agent again with the feedback, and says so", function()
  h.project({ ["m.py"] = SRC })
  local url, log = h.fake_llm({ { text = PROGRAM }, { text = PROGRAM:gsub("return 10", "return 100") } })
  h.setup(url)
  vim.cmd.edit("m.py")
  local id = chimera.spawn("tens")
  proposal_ready(id)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  -- The first word is feedback, not an id.
  h.wait_for_notice(("rejected %s; the agent tries again with your feedback"):format(id), function()
    vim.cmd("Chimera reject use a hundred for a")
  end)
  h.wait_for("the second attempt", function()
    local a = chimera.agent(id)
    return a.state == "completed" and #(a.feedback or {}) == 1
  end)
  local requests = vim.fn.readfile(log)
  h.truthy(requests[#requests]:find("use a hundred for a", 1, true), "feedback in the prompt")
  h.truthy(requests[#requests]:find("return 10", 1, true), "the rejected attempt in the prompt")
  h.wait_for("new ghost text", function()
    local p = chimera.proposals()[1]
    return p and p.files[1].hunks[1].new_lines[1] == "    return 100"
  end, 5000)
end)

h.test("the diff float and the agents window show the proposal", function()
  h.project({ ["m.py"] = SRC })
  -- A dollar a token, so that the cost shows with three decimals.
  h.setup((h.fake_llm({ { text = PROGRAM } })), { llm = { prices = { ["fake-*"] = { input = 1e6, output = 1e6 } } } })
  vim.cmd.edit("m.py")
  local id = chimera.spawn("tens")
  proposal_ready(id)
  local dbuf = chimera.diff(id)
  local text = table.concat(vim.api.nvim_buf_get_lines(dbuf, 0, -1, false), "\n")
  h.truthy(text:find("--- a/m.py", 1, true) and text:find("-    return 1\n+    return 10", 1, true), text)
  h.truthy(text:find("hunk 2", 1, true), text)
  -- Three lines of context, as diff -u shows them.
  h.truthy(text:find("@@ -1,5 +1,5 @@ hunk 1\n def a():\n-    return 1\n+    return 10\n \n \n def b():\n", 1, true), text)
  -- Lines shown after hunk 1 are not shown again before hunk 2.
  h.truthy(text:find("@@ -7,4 +7,4 @@ hunk 2\n \n \n def c():\n-    return 3\n+    return 30", 1, true), text)
  h.eq(vim.api.nvim_win_get_config(0).relative, "editor", "a float")
  h.eq(vim.wo.number, false, "minimal style")
  vim.cmd("close")
  local code = vim.api.nvim_get_current_buf()
  local shown = #require("chimera.ghost").extmarks(code)
  h.truthy(shown > 0, "ghost text before the split")
  vim.cmd("Chimera diff --split " .. id)
  h.eq(vim.wo.diff, true, "native diff split")
  h.eq(vim.api.nvim_buf_get_lines(0, 1, 2, false)[1], "    return 10", "proposed text on the right")
  h.eq(#require("chimera.ghost").extmarks(code), 0, "no ghost text while the split shows the change")
  vim.cmd("close")
  h.wait_for("the ghost text back", function()
    return #require("chimera.ghost").extmarks(code) == shown
  end)
  h.eq(vim.wo.diff, false, "the split's diff mode ended with it")
  vim.cmd("only")
  require("chimera.agents_view").tick_ms = 300
  vim.cmd("Chimera agents")
  local abuf = vim.api.nvim_get_current_buf()
  local all = table.concat(vim.api.nvim_buf_get_lines(abuf, 0, -1, false), "\n")
  h.truthy(all:find(id, 1, true) and all:find("completed", 1, true) and all:find("tens", 1, true), all)
  -- Its tokens (the fake server counts none: estimated) and their cost,
  -- and the session's.
  local u = chimera.agent(id).usage
  h.truthy(u.estimated and u.input > 0 and u.output > 0 and u.cost == u.input + u.output, vim.inspect(u))
  local line = vim.api.nvim_buf_get_lines(abuf, 2, 3, false)[1]
  h.truthy(line:find(("≈%s tok $%.3f"):format(require("chimera.agents_view").tokens(u):match("≈(%S+)"), u.cost), 1, true), line)
  h.truthy(all:find("(this session: ≈", 1, true), all)
  h.eq(vim.wo.number, false, "a list, no gutter")
  local groups = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(abuf, -1, { 2, 0 }, { 2, -1 }, { details = true })) do
    table.insert(groups, m[4].hl_group)
  end
  h.eq(groups, { "DiagnosticOk" }, "its state is highlighted")
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.api.nvim_feedkeys("r", "x", false)
  h.wait_for("rejected from the window", function()
    return chimera.agent(id).state == "rejected"
  end)
  h.wait_for("the window updated", function()
    return table.concat(vim.api.nvim_buf_get_lines(abuf, 0, -1, false), "\n"):find("rejected", 1, true) ~= nil
  end)
  -- With nothing else happening, the ages count on.
  local before = vim.api.nvim_buf_get_lines(abuf, 2, 3, false)[1]
  h.wait_for("the age to count on", function()
    return vim.api.nvim_buf_get_lines(abuf, 2, 3, false)[1] ~= before
  end, 3000)
  require("chimera.agents_view").tick_ms = 10000
end)

h.test("default keys never replace the user's own; the ghost note and checkhealth say which keys work", function()
  vim.g.mapleader = " "
  local mine = false
  vim.keymap.set("n", "<Leader>r", function()
    mine = true
  end, { desc = "my rename" })
  vim.keymap.set("n", "<Leader>aa", "<Nop>", { desc = "avante: ask" })
  h.project({ ["m.py"] = SRC })
  h.setup((h.fake_llm({ { text = PROGRAM } })))
  h.eq(vim.fn.maparg("<Leader>r", "n", false, true).desc, "my rename", "the user's mapping stays")
  h.eq(vim.fn.maparg("<Leader>a", "n"), "<Plug>(chimera-accept)", "a free key is mapped")
  h.setup((h.fake_llm({ { text = PROGRAM } })))
  h.eq(vim.fn.maparg("<Leader>a", "n"), "<Plug>(chimera-accept)", "setup again keeps its own mapping")
  vim.cmd.edit("m.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("tens")
  proposal_ready(id)
  local note = note_of(buf, id)
  h.truthy(note and note:find("[<Leader>a accept, :Chimera reject]", 1, true), "the note names the keys that work: " .. tostring(note))
  vim.api.nvim_feedkeys(vim.keycode("<Leader>r"), "x", false)
  h.eq(mine, true, "the user's key still does the user's thing")
  h.eq(chimera.agent(id).state, "completed", "and rejected nothing")
  vim.cmd("checkhealth chimera")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout")
  h.truthy(text:find("<Leader>r (reject) left alone: it already runs my rename", 1, true), text)
  h.truthy(text:find("<Leader>a (accept) is also how <Space>aa (avante: ask) start", 1, true), text)
  vim.keymap.del("n", "<Leader>r")
  vim.keymap.del("n", "<Leader>aa")
  chimera.reject(id)
end)

h.test("several proposals and none under the cursor: accept, reject and diff ask which; a bare :Chimera and rollback pick too", function()
  local OTHER = "def z():\n    return 0\n"
  local root = h.project({ ["m.py"] = SRC, ["n.py"] = SRC, ["notes.py"] = OTHER })
  local N_PROGRAM = PROGRAM:gsub("m%.py", "n.py")
  h.setup((h.fake_llm({ { text = PROGRAM }, { text = N_PROGRAM } })))
  vim.cmd.edit("m.py")
  local first = chimera.spawn("tens in m")
  h.eq(chimera.wait(first, 20000), "completed")
  vim.cmd.edit("n.py")
  local second = chimera.spawn("tens in n")
  h.eq(chimera.wait(second, 20000), "completed")
  -- In a file with no proposal: which one is meant cannot be guessed.
  vim.cmd.edit("notes.py")
  local select, asked = vim.ui.select, {}
  local pick -- the id to choose
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    for _, item in ipairs(items) do
      local label = opts.format_item and opts.format_item(item) or item
      if type(label) == "string" and label:find(pick, 1, true) then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  local ok, err = pcall(function()
    pick = second
    vim.cmd("Chimera accept")
    h.wait_for("the picked proposal accepted", function()
      return chimera.agent(second).state == "accepted"
    end)
    h.eq(asked[1], "Chimera: accept which proposal?")
    h.eq(chimera.agent(first).state, "completed", "the other is untouched")
    -- One left: no question.
    vim.cmd("Chimera reject")
    h.wait_for("the last one rejected", function()
      return chimera.agent(first).state == "rejected"
    end)
    h.eq(#asked, 1, "one proposal needs no choice")
    -- A bare :Chimera lists the subcommands.
    pick = "agents"
    local notify, said = vim.notify, nil
    vim.notify = function(m)
      said = m
    end
    vim.cmd("Chimera")
    vim.notify = notify
    h.eq(said, nil, "nothing went wrong")
    h.eq(asked[2], "Chimera:")
    h.eq(vim.bo.filetype, "chimera-agents", "the picked subcommand ran")
    vim.cmd("close")
    -- Rollback without a snapshot: pick one (a dry run here).
    local snap = require("chimera.history").snapshot("before")
    h.wait_for("the snapshot listed", function()
      return #vim.tbl_filter(function(x)
        return x.id == snap
      end, require("chimera.history").history()) > 0
    end)
    pick = snap
    local done = {}
    vim.api.nvim_create_autocmd("User", {
      pattern = "ChimeraRollback",
      once = true,
      callback = function(ev)
        done = ev.data
      end,
    })
    vim.cmd("Chimera rollback --dry-run")
    h.wait_for("the dry run of the picked snapshot", function()
      return done.id == snap
    end)
    h.eq(done.dry_run, true)
    h.eq(asked[3], "Chimera: dry-run a rollback to which snapshot?")
  end)
  vim.ui.select = select
  assert(ok, err)
  h.eq(h.read(root .. "/notes.py"), OTHER)
end)

h.test("the ghost note counts the proposal's hunks here and elsewhere; a conflicted one offers no accept", function()
  h.project({ ["m.py"] = SRC, ["n.py"] = SRC })
  local both = PROGRAM:gsub("submit_result%('tens', %['m.py'%]%)", "write_file('n.py', read_file('n.py').replace('return 2', 'return 20'))\nsubmit_result('tens', ['m.py', 'n.py'])")
  h.setup((h.fake_llm({ { text = both } })))
  vim.cmd.edit("m.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("make a and c return tens")
  proposal_ready(id)
  local function note()
    return note_of(buf, id)
  end
  -- At 80 columns the note has a line of its own: the keys and the
  -- extent whole; the summary is in the agents window.
  h.truthy(note():find("[<Leader>a accept, <Leader>r reject] · 2 hunks, +1 in n.py", 1, true), note())
  vim.o.columns = 140
  vim.cmd("wincmd =")
  vim.api.nvim_exec_autocmds("VimResized", {})
  h.wait_for("the note drawn for the wider window", function()
    return note():find(": tens · 2 hunks, +1 in n.py", 1, true)
  end)
  vim.o.columns = 80
  vim.cmd("wincmd =")
  vim.api.nvim_exec_autocmds("VimResized", {})
  -- The human edits a line the proposal changes: conflicted.
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    return 11" })
  h.wait_for("the conflict", function()
    return chimera.agent(id).conflicted and note() and note():find("CONFLICT", 1, true)
  end)
  h.truthy(not note():find("accept", 1, true), "a conflicted proposal advertises no accept: " .. note())
  h.truthy(note():find("CONFLICT with your edits [:Chimera diff, <Leader>r reject]", 1, true), note())
  -- Its hunks clear of the human's edit can still be taken, one by one.
  vim.cmd("Chimera accept " .. id .. " --hunk 2")
  h.wait_for("the clear hunk in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 9, 10, false)[1] == "    return 30"
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return 11", "the human's line stays")
  h.eq(chimera.agent(id).state, "completed", "the conflicting hunk is still to resolve")
  -- The one that overlaps is refused, with what to do.
  h.wait_for_notice("accept --hunk N", function()
    vim.cmd("Chimera accept " .. id .. " --hunk 1")
  end)
  -- Typed at once after :Chimera resolve: the markers worked out for the
  -- text before are not written over the new one.
  h.wait_for_notice("run :Chimera resolve again", function()
    vim.cmd("Chimera resolve " .. id)
    vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "# typed at once" })
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 0, 3, false), { "# typed at once", SRC:match("^[^\n]*"), "    return 11" })
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, {})
  -- :Chimera resolve writes the clash into the buffer, both sides marked.
  vim.cmd("Chimera resolve " .. id)
  h.wait_for("the conflict markers", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "<<<<<<< yours"
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 6, false), {
    "<<<<<<< yours",
    "    return 11",
    "=======",
    "    return 10",
    ">>>>>>> chimera " .. id,
  })
  vim.cmd("silent undo")
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return 11", "one undo step")
  vim.cmd("silent redo")
  -- The human keeps the agent's side: m.py's part of the proposal is done.
  vim.api.nvim_buf_set_lines(buf, 1, 6, false, { "    return 10" })
  h.wait_for("m.py settled, n.py still proposed", function()
    local a = chimera.agent(id)
    return not a.conflicted and #a.changed_files == 1 and a.changed_files[1] == "n.py"
  end)
  chimera.reject(id)
end)

h.test("the ghost note counts the hunks off-screen, anew when the window scrolls", function()
  local lines = {}
  for i = 1, 200 do
    lines[i] = ("x%d = %d"):format(i, i)
  end
  local long = table.concat(lines, "\n") .. "\n"
  h.project({ ["long.py"] = long })
  local program = "```python\nsrc = read_file('long.py')\nwrite_file('long.py', src.replace('x2 = 2\\n', 'x2 = 20\\n').replace('x150 = 150\\n', 'x150 = 1500\\n'))\nsubmit_result('bigger', ['long.py'])\n```"
  h.setup((h.fake_llm({ { text = program } })))
  vim.cmd("silent! only")
  vim.cmd.edit("long.py")
  vim.api.nvim_win_set_height(0, 20)
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("make x2 and x150 bigger")
  h.eq(chimera.wait(id, 20000), "completed")
  local function note()
    return note_of(buf, id)
  end
  h.wait_for("the note", function()
    return note() and note():find("2 hunks, 1 off-screen", 1, true)
  end)
  -- A UI fires WinScrolled as the view moves; headless Neovim draws
  -- nothing, so the test fires it after each move.
  vim.cmd("normal! 10Gzt")
  vim.api.nvim_exec_autocmds("WinScrolled", {})
  h.wait_for("both out of view", function()
    return note():find("2 hunks, 2 off-screen", 1, true)
  end)
  vim.cmd("normal! 150Gzz")
  vim.api.nvim_exec_autocmds("WinScrolled", {})
  h.wait_for("one in view again", function()
    return note():find("2 hunks, 1 off-screen", 1, true)
  end)
  chimera.reject(id)
end)

h.finish()
