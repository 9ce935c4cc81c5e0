-- An ACP agent from Neovim: `:Chimera task --agent NAME` starts the
-- scripted ACP agent (tests/fake_acp_agent.py), which reads the buffer's
-- unsaved text through Chimera and writes into the agent's overlay; its
-- change shows as ghost text, is accepted as one undoable change, and the
-- file on disk waits for :write. Bad `agents.external` options are named.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local CALC = "def add(a, b):\n    return a - b\n"

local function fake_agent(turns)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local script, log = dir .. "/script.json", dir .. "/agent.log"
  local f = assert(io.open(script, "w"))
  f:write(vim.json.encode(turns))
  f:close()
  -- Confined, it writes only its own folder (its log) besides its work.
  return {
    command = { "python3", h.repo .. "/tests/fake_acp_agent.py", "--script", script, "--log", log },
    writable = { dir },
  },
    log
end

-- What the agent heard in answer to its permission requests, in order.
local function permission_answers(log)
  local outcomes = {}
  for line in (h.read(log) or ""):gmatch("[^\n]+") do
    local e = vim.json.decode(line)
    if e.answer_to == "session/request_permission" then
      table.insert(outcomes, e.answer.result.outcome.optionId)
    end
  end
  return outcomes
end

h.test(":Chimera task --agent runs an ACP agent on the unsaved buffer; accept is one undo step", function()
  local root = h.project({ ["calc.py"] = CALC })
  local agent, log = fake_agent({ { { say = "Fixed add." }, { replace = { "calc.py", "a - b", "a + b" } } } })
  h.setup((h.fake_llm({ { text = "unused" } })), { agents = { external = { fake = agent } } })
  vim.cmd.edit("calc.py")
  local buf = vim.api.nvim_get_current_buf()
  -- Typed, not saved: the agent must work on this text.
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    return a - b  # mine" })
  vim.cmd("Chimera task --agent fake fix add")
  local id
  h.wait_for("the ACP agent's proposal", function()
    for _, a in ipairs(chimera.agents()) do
      if a.state == "completed" then
        id = a.id
        return true
      end
      if a.state == "failed" then
        error("the agent failed: " .. tostring(a.error))
      end
    end
  end, 15000)
  h.eq(chimera.agent(id).summary, "Fixed add.", "its words are the summary")
  h.wait_for("its ghost text", function()
    return #vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, {}) > 0
  end)
  h.eq(h.read(root .. "/calc.py"), CALC, "the disk is untouched")
  chimera.accept(id)
  h.wait_for("the accept in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return a + b  # mine"
  end)
  vim.cmd("silent undo")
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return a - b  # mine", "one undo step")
  h.eq(h.read(root .. "/calc.py"), CALC, "the file waits for :write")
  -- Neovim quitting (VimLeavePre) ends the agent's process.
  local pid
  for line in (h.read(log) or ""):gmatch("[^\n]+") do
    pid = pid or vim.json.decode(line).pid
  end
  h.truthy(pid, "the agent logged its pid")
  -- That PID is its own namespace's: the machine finds it by its command
  -- line, which names its log.
  local function running()
    for _, dir in ipairs(vim.fn.glob("/proc/[0-9]*", false, true)) do
      local cmdline = h.read(dir .. "/cmdline")
      local stat = h.read(dir .. "/stat")
      if cmdline and cmdline:find(log, 1, true) and stat and stat:match("%) (%a)") ~= "Z" then
        return true
      end
    end
    return false
  end
  vim.api.nvim_exec_autocmds("VimLeavePre", {})
  h.wait_for("the agent process to end", function()
    return not running()
  end, 5000)
end)

h.test("a question answered on the dashboard while Neovim's prompt shows is said, and a late choice is not taken", function()
  local root = h.project({ ["calc.py"] = CALC })
  local agent, log = fake_agent({ { { permission = "Edit calc.py" }, { say = "Asked." } } })
  h.setup((h.fake_llm({ { text = "unused" } })), {
    agents = { external = { fake = agent } },
    capabilities = { preset = "readonly", ask = true },
    api = { enabled = true },
  })
  local shown
  local select = vim.ui.select
  vim.ui.select = function(_, opts, on_choice)
    -- The prompt stays open: the person is away from the editor.
    shown = { prompt = opts.prompt, choose = on_choice }
  end
  local ok, err = pcall(function()
    vim.cmd.edit("calc.py")
    chimera.start()
    local port = chimera.dashboard({ open = false }):match(":(%d+)/$")
    local token = vim.json.decode(h.read(root .. "/.chimera/api.json")).token
    -- The dashboard follows the feed.
    local feed = {}
    -- An ID the core never gave: it answers at once with a `reset`, so the
    -- test knows the dashboard follows before the agent asks (a fixed
    -- wait lost the race on a busy machine).
    local stream = vim.system({ "curl", "-s", "-N", "-m", "30", "-H", "Authorization: Bearer " .. token,
      "-H", "Last-Event-ID: none", "http://127.0.0.1:" .. port .. "/events/stream" }, {
      stdout = function(_, data)
        table.insert(feed, data or "")
      end,
    })
    h.wait_for("the dashboard following the feed", function()
      return table.concat(feed):find("event: reset", 1, true) ~= nil
    end, 15000)
    local id = chimera.spawn("edit it", { agent = "fake", file = root .. "/calc.py" })
    h.wait_for("the question in Neovim", function()
      return shown ~= nil
    end, 15000)
    h.truthy(shown.prompt:find("Edit calc.py", 1, true), shown.prompt)
    local asked
    h.wait_for("the question on the dashboard's feed", function()
      local data = table.concat(feed):match("event: permission\ndata: ([^\n]+)")
      asked = data and vim.json.decode(data)
      return asked ~= nil
    end, 15000)
    h.eq(asked.agent, id)
    -- Answered on the dashboard: Neovim says so.
    h.wait_for_notice("question was allowed elsewhere", function()
      local posted = vim.system({ "curl", "-s", "-H", "Authorization: Bearer " .. token, "-H", "Content-Type: application/json",
        "-d", '{"allow": true}', "http://127.0.0.1:" .. port .. "/questions/" .. asked.id }):wait()
      h.eq(posted.code, 0, posted.stderr)
    end)
    stream:kill(15)
    -- The person comes back and refuses: too late, the first answer counted.
    shown.choose("Refuse")
    h.wait_for("the agent's end", function()
      local a = chimera.agent(id)
      return a ~= nil and not vim.tbl_contains({ "queued", "running" }, a.state)
    end, 15000)
    local outcomes = permission_answers(log)
    h.eq(outcomes, { "allow" }, "the dashboard's answer")
  end)
  vim.ui.select = select
  assert(ok, err)
end)

h.test("with capabilities.ask, a permission the preset refuses is asked of the human", function()
  local root = h.project({ ["calc.py"] = CALC })
  local agent, log = fake_agent({
    { { permission = "Edit calc.py" }, { permission = "Edit calc.py again" }, { say = "Asked." } },
  })
  h.setup((h.fake_llm({ { text = "unused" } })), {
    agents = { external = { fake = agent } },
    capabilities = { preset = "readonly", ask = true },
  })
  local asked, answers = {}, { "Allow", "Refuse" }
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    h.eq(items, { "Allow", "Refuse" }, "the choices")
    -- A person takes a moment; the agent waits.
    vim.defer_fn(function()
      on_choice(answers[#asked])
    end, 50)
  end
  local ok, err = pcall(function()
    vim.cmd.edit("calc.py")
    chimera.start()
    local id = chimera.spawn("edit it", { agent = "fake", file = root .. "/calc.py" })
    h.wait_for("the agent's end", function()
      local a = chimera.agent(id)
      return a ~= nil and not vim.tbl_contains({ "queued", "running" }, a.state)
    end, 15000)
    h.eq(#asked, 2, "both requests were put to the human")
    h.truthy(asked[1]:find("Edit calc.py", 1, true) and asked[1]:find(id, 1, true), asked[1])
    local outcomes = permission_answers(log)
    h.eq(outcomes, { "allow", "reject" }, "the agent got the human's answers")
    local effects = h.effects({ kind = "acp" })
    local said = {}
    for _, e in ipairs(effects) do
      table.insert(said, e.input)
    end
    h.truthy(table.concat(said, "\n"):find("the human allowed it", 1, true), table.concat(said, "\n"))
  end)
  vim.ui.select = select
  assert(ok, err)
end)

h.test("the agent's conversation streams into its chat buffer; R there is its next turn", function()
  h.project({ ["calc.py"] = CALC })
  local agent = fake_agent({
    {
      { plan = { "read calc.py", "fix add" } },
      { think = "a - b is wrong" },
      { say = "Fixing add." },
      { tool = "Read calc.py" },
      { sleep = 1.5 },
      { replace = { "calc.py", "a - b", "a + b" } },
      { tool = "Run the tests", fail = true },
      { say = "\nDone." },
    },
    { { say = "Swapped." }, { replace = { "calc.py", "a - b", "b + a" } } },
  })
  h.setup((h.fake_llm({ { text = "unused" } })), { agents = { external = { fake = agent } } })
  vim.cmd.edit("calc.py")
  local code = vim.api.nvim_get_current_buf()
  -- Typed at once, as a person would: no waiting for the core.
  vim.cmd("Chimera task --agent fake fix add")
  vim.cmd("Chimera chat --agent")
  local view = vim.api.nvim_get_current_buf()
  h.eq(vim.api.nvim_buf_get_name(view):match("chimera://agent/.*$") ~= nil, true, "the agent's conversation opened")
  local function text()
    return table.concat(vim.api.nvim_buf_get_lines(view, 0, -1, false), "\n")
  end
  h.wait_for("its words while it works", function()
    return text():find("Fixing add.", 1, true) and text():find("▸ Read calc.py (done)", 1, true)
  end, 15000)
  local id = vim.api.nvim_buf_get_name(view):match("chimera://agent/(.*)$")
  h.eq(chimera.agent(id).state, "running", "seen while the turn goes on")
  h.truthy(text():find("(thinking) a - b is wrong", 1, true), text())
  h.truthy(text():find("[x] read calc.py", 1, true), "its plan: " .. text())
  h.truthy(text():find("» fix add", 1, true), "what it was told: " .. text())
  h.eq(chimera.agent(id).external, "fake", "the agent's name is known before the core answers")
  -- The agents window says what it is doing; <CR> there opens the same view.
  vim.cmd("Chimera agents")
  local list = vim.api.nvim_get_current_buf()
  local row
  h.wait_for("what it does in the agents window", function()
    for i, l in ipairs(vim.api.nvim_buf_get_lines(list, 0, -1, false)) do
      if l:find(id, 1, true) and l:find("— Read calc.py…", 1, true) then
        row = i
        return true
      end
    end
  end)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  h.eq(vim.api.nvim_get_current_buf(), view, "<CR> went to the agent's conversation")
  vim.api.nvim_win_close(vim.fn.win_findbuf(list)[1], true)
  h.wait_for("the proposal", function()
    return text():find("-- proposal ready", 1, true)
  end, 15000)
  h.truthy(text():find("▸ Run the tests (failed)", 1, true), text())
  h.truthy(not text():find("(thinking)", 1, true), "thoughts are not kept: " .. text())
  -- Each line once: the finished turn is read from the agent's log.
  local count = #vim.tbl_filter(function(l)
    return l == "Fixing add."
  end, vim.api.nvim_buf_get_lines(view, 0, -1, false))
  h.eq(count, 1, "the turn shown once: " .. text())
  h.eq(h.read(vim.fn.getcwd() .. "/calc.py"), CALC, "the disk is untouched")

  -- R in the conversation: the feedback is the agent's next turn.
  local input = vim.ui.input
  vim.ui.input = function(_, on_answer)
    on_answer("put b first")
  end
  vim.api.nvim_feedkeys("R", "x", false)
  vim.ui.input = input
  h.wait_for("its next turn", function()
    return text():find("Swapped.", 1, true) and text():find("-- proposal ready", 1, true)
  end, 15000)
  h.truthy(text():find("» The human rejected your change with this feedback: put b first", 1, true), text())
  vim.api.nvim_feedkeys("a", "x", false)
  h.wait_for("the accept in the code", function()
    return vim.api.nvim_buf_get_lines(code, 1, 2, false)[1] == "    return b + a"
  end)
  vim.api.nvim_feedkeys("q", "x", false)
  h.eq(vim.api.nvim_buf_is_valid(view), false, "q closes the conversation")
end)

h.test("a confined agent that finds Neovim's server cannot make it run a command", function()
  local root = h.project({ ["calc.py"] = CALC })
  local pwned = vim.fn.tempname()
  local command = ("call writefile(['pwned'], '%s')"):format(pwned)
  -- It finds nothing in its own /proc/net/unix and no $NVIM; it is told
  -- the path besides, as one that guesses it would have it.
  local agent, log = fake_agent({
    { { editor_rpc = { command, { vim.v.servername } } }, { replace = { "calc.py", "a - b", "a + b" } } },
  })
  h.setup((h.fake_llm({ { text = "unused" } })), { agents = { external = { fake = agent } } })
  h.truthy(vim.v.servername ~= "", "Neovim serves RPC: " .. vim.v.servername)
  -- The attack works when not confined: the same step, run from here,
  -- reaches this Neovim and the command runs.
  local control = vim.fn.tempname()
  local ok = vim.system({
    "python3",
    "-c",
    ([[
import socket
def s(x):
    b = x.encode()
    return bytes([0xA0 | len(b)]) + b if len(b) < 32 else bytes([0xDA]) + len(b).to_bytes(2, "big") + b
m = bytes([0x94, 0, 1]) + s("nvim_command") + bytes([0x91]) + s(%q)
c = socket.socket(socket.AF_UNIX); c.connect(%q); c.sendall(m); c.recv(64)
]]):format(("call writefile(['reached'], '%s')"):format(control), vim.v.servername),
  })
  h.wait_for("the unconfined control reaches Neovim", function()
    return h.read(control) ~= nil
  end, 5000)
  ok:wait()
  vim.cmd("Chimera task --agent fake fix add")
  h.wait_for("the agent's attempt", function()
    return (h.read(log) or ""):find('"disk": "editor_rpc"', 1, true) ~= nil
  end, 15000)
  local said = h.read(log) or ""
  h.truthy(said:find('"ok": false', 1, true), "refused: " .. said)
  vim.wait(300)
  h.eq(h.read(pwned), nil, "the command never ran: " .. said)
end)

h.test("an unknown agent or bad agents.external options are named", function()
  h.project({ ["calc.py"] = CALC })
  local ok = require("chimera").setup({ agents = { external = { bad = { command = "opencode acp" } } } })
  h.eq(ok, false, "a command given as one string is refused")
  ok = require("chimera").setup({ agents = { external = { ["bad name"] = { command = { "x" } } } } })
  h.eq(ok, false, "a name with a space is refused")
  h.setup((h.fake_llm({ { text = "unused" } })))
  vim.cmd.edit("calc.py")
  local id = chimera.spawn("fix add", { agent = "nosuch" })
  h.eq(chimera.wait(id, 10000), "failed", "an unknown agent fails the task")
  h.truthy(chimera.agent(id).error:find("no agent `nosuch` in agents.external", 1, true), chimera.agent(id).error)
  ok = require("chimera").setup({ agents = { external = { bad = { command = { "x" }, writable = "~/.x" } } } })
  h.eq(ok, false, "writable is a list")
end)

h.test("checkhealth says which ACP agents the kernel confines and warns of an unconfined one", function()
  h.project({ ["calc.py"] = CALC })
  local agent = fake_agent({ { { say = "hi" } } })
  local loose = vim.deepcopy(agent)
  loose.unconfined = true
  h.setup((h.fake_llm({ { text = "unused" } })), { agents = { external = { fake = agent, loose = loose } } })
  local out = vim.api.nvim_exec2("checkhealth chimera", { output = true })
  local lines = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. (out.output or "")
  h.truthy(lines:find("fake is confined by the kernel to its own folder", 1, true), lines)
  h.truthy(lines:find("loose runs unconfined", 1, true), lines)
  h.truthy(lines:find("the programs agents run (tests, run_command) are confined by the kernel", 1, true), lines)
end)

h.finish()
