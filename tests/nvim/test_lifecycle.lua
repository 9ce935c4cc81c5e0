-- Agents outlive Neovim: a pending proposal comes back as ghost text after
-- a restart; :Chimera cancel stops a working agent.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local SRC = "def f():\n    return 1\n"
local PROGRAM = "```python\nwrite_file('a.py', read_file('a.py').replace('return 1', 'return 2'))\nsubmit_result('two', ['a.py'])\n```"

h.test("a pending proposal comes back as ghost text after a restart", function()
  h.project({ ["a.py"] = SRC })
  local url = h.fake_llm({ { text = PROGRAM } })
  h.setup(url)
  vim.cmd.edit("a.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("return two")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  chimera.stop()
  require("chimera.state").agents = {}
  require("chimera.state").proposals = {}
  require("chimera.ghost").render(buf)
  h.eq(#require("chimera.ghost").extmarks(buf), 0, "cleared while stopped")
  chimera.start()
  h.wait_for("the proposal again", function()
    return #require("chimera.ghost").extmarks(buf) > 0 and chimera.agent(id) ~= nil
  end)
  h.eq(chimera.agent(id).state, "completed", "record restored")
  chimera.accept(id)
  h.wait_for("accept", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("the edit", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return 2"
  end)
end)

h.test(":Chimera cancel stops a working agent at once", function()
  h.project({ ["a.py"] = SRC })
  local url = h.fake_llm({ { hang = true } })
  h.setup(url)
  local changes = h.user_events("ChimeraAgentState")
  local id = chimera.spawn("hang forever")
  h.wait_for("running", function()
    return chimera.agent(id).state == "running"
  end)
  vim.cmd("Chimera cancel " .. id)
  h.wait_for("cancelled", function()
    return chimera.agent(id).state == "cancelled"
  end, 3000)
  local states = vim.tbl_map(function(d)
    return d.state
  end, changes)
  h.truthy(vim.tbl_contains(states, "running") and vim.tbl_contains(states, "cancelled"), vim.inspect(states))
end)

h.test("the statusline counts working agents and proposals to review", function()
  h.project({ ["a.py"] = SRC })
  local url, log = h.fake_llm({ { hang = true }, { text = PROGRAM } })
  h.setup(url)
  -- Before the core starts, :Chimera status says so, not "importing".
  h.eq(chimera.status().root, nil, "setup{} starts nothing")
  vim.cmd("Chimera status")
  local told = require("chimera.say").log()
  local said = told[#told].text
  h.truthy(said:find("not started", 1, true) and not said:find("importing", 1, true), said)
  chimera.start()
  h.wait_for("import", function()
    return chimera.status().ready
  end)
  vim.cmd("Chimera status")
  told = require("chimera.say").log()
  h.truthy(told[#told].text:find("imported", 1, true), told[#told].text)
  h.eq(chimera.statusline(), "", "nothing to say when idle")
  local hanging = chimera.spawn("hang forever")
  h.wait_for("the first agent's request, which hangs", function()
    return h.read(log) ~= nil
  end)
  h.eq(chimera.statusline(), "◆ 1 working, 0 to review")
  local id = chimera.spawn("return two")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.wait_for("the proposal in the statusline", function()
    return chimera.statusline() == "◆ 1 working, 1 to review"
  end)
  chimera.cancel(hanging)
  chimera.reject(id)
  h.wait_for("idle again", function()
    return chimera.statusline() == ""
  end)
end)

h.finish()
