-- Trust, as a person works: what the editor says is there, is there; an
-- accept lands what was reviewed or nothing. (Issue 12's scenarios.)
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local SRC = "def f():\n    return 1\n"
-- Round i's program: `return i` becomes `return i + 1`.
local function program(i)
  return ("```python\nwrite_file('a.py', read_file('a.py').replace('return %d', 'return %d'))\nsubmit_result('next', ['a.py'])\n```"):format(i, i + 1)
end

local function ghost_count(buf)
  return #require("chimera.ghost").extmarks(buf)
end

h.test("'completed' means the proposal is there: accept at once, every time", function()
  local rounds = 10
  local script = {}
  for i = 1, rounds do
    table.insert(script, { text = program(i) })
  end
  h.project({ ["a.py"] = SRC })
  local url, log = h.fake_llm(script)
  h.setup(url)
  vim.cmd.edit("a.py")
  local buf = vim.api.nvim_get_current_buf()
  for i = 1, rounds do
    local id = chimera.spawn("return the next number")
    local st = chimera.wait(id, 20000)
    if st ~= "completed" then
      local seen = {}
      for _, r in ipairs(vim.split(h.read(log) or "", "\n", { trimempty = true })) do
        local msgs = vim.json.decode(r).messages
        table.insert(seen, (msgs[#msgs].content:match("return %d+") or "?") .. " (" .. #msgs .. " messages)")
      end
      error(("round %d: %s; the model saw, request by request: %s"):format(i, st, table.concat(seen, ", ")))
    end
    -- No waiting for ghost text: the person sees "completed" and accepts.
    h.eq(#chimera.proposals({ bufnr = buf }), 1, "round " .. i .. ": the proposal with its state")
    h.truthy(ghost_count(buf) > 0, "round " .. i .. ": ghost text with its state")
    chimera.accept(id)
    h.wait_for("round " .. i .. ": accepted", function()
      return chimera.agent(id).state == "accepted"
    end)
    h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return " .. (i + 1), "round " .. i .. ": the edit")
  end
end)

h.test("an accept lands where the text now is, whatever was typed before it arrived", function()
  local src = "def f():\n    return 1\n\n\ndef g():\n    pass\n"
  local doc = "```python\nwrite_file('a.py', read_file('a.py').replace('def g():\\n', 'def g():\\n    \"\"\"G.\"\"\"\\n'))\nsubmit_result('doc', ['a.py'])\n```"
  h.project({ ["a.py"] = src })
  h.setup((h.fake_llm({ { text = doc } })))
  vim.cmd.edit("a.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("document g")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  chimera.accept(id)
  -- Before the core's answer arrives, a formatter adds an import on top.
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "import os" })
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("the docstring in g", function()
    return vim.tbl_contains(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '    """G."""')
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    { "import os", "def f():", "    return 1", "", "", "def g():", '    """G."""', "    pass" },
    "the typed line and the accepted one, each where it belongs")
end)

h.test("options the core cannot take and roots no one means are refused with the reason", function()
  for _, case in ipairs({
    { { agents = { timeout_ms = 0 / 0 } }, "finite" },
    { { agents = { max_concurrent = 1e300 } }, "finite" },
    { { llm = { temperature = math.huge } }, "finite" },
  }) do
    local ok, err = require("chimera.config").resolve(case[1])
    h.eq(ok, nil, vim.inspect(case[1]))
    h.truthy(err:find(case[2], 1, true), err)
  end
  local root = h.project({ ["a.py"] = SRC })
  for _, case in ipairs({
    { root .. "/typo", "does not exist" },
    { root .. "/a.py", "is a file" },
    { "/", "refusing" },
  }) do
    h.setup("http://127.0.0.1:9", { root = case[1] })
    local ok, err = pcall(chimera.spawn, "return two")
    h.eq(ok, false, case[1])
    h.truthy(tostring(err):find(case[2], 1, true), tostring(err))
    h.eq(require("chimera.state").root, nil, "not started")
  end
  h.eq(vim.uv.fs_stat(root .. "/typo"), nil, "a mistyped root is never created")
end)

h.test("an edit made on disk just before an accept is kept, and the accept lands on it", function()
  local root = h.project({ ["a.py"] = SRC, ["b.py"] = "x = 1\n" })
  -- The watcher would report the edit only after 5 s: the accept comes first.
  h.setup((h.fake_llm({ { text = program(1) } })), { sync = { debounce_ms = 5000 } })
  vim.cmd.edit("b.py")
  local id = chimera.spawn("return the next number", { file = root .. "/a.py" })
  h.eq(chimera.wait(id, 20000), "completed", "state")
  -- Another program appends a function to a.py, then the person accepts.
  local appended = SRC .. "\n\ndef added_outside():\n    return 2\n"
  local f = assert(io.open(root .. "/a.py", "w"))
  f:write(appended)
  f:close()
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg, ...)
    table.insert(messages, msg)
    return notify(msg, ...)
  end
  vim.cmd("Chimera accept " .. id)
  h.wait_for("the refusal", function()
    return #vim.tbl_filter(function(m)
      return m:find("changed on disk", 1, true) ~= nil
    end, messages) > 0
  end)
  vim.notify = notify
  h.eq(h.read(root .. "/a.py"), appended, "the outside edit is kept")
  h.eq(chimera.agent(id).state, "completed", "still to review")
  vim.cmd("Chimera accept " .. id)
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.eq(h.read(root .. "/a.py"), (appended:gsub("return 1", "return 2", 1)), "both: the edit and the proposal")
end)

h.test("what an agent's program logs is shown with it", function()
  h.project({ ["a.py"] = SRC })
  local logging = "```python\nlog('found return 1')\nwrite_file('a.py', read_file('a.py').replace('return 1', 'return 2'))\nsubmit_result('next', ['a.py'])\n```"
  h.setup((h.fake_llm({ { text = logging } })))
  vim.cmd.edit("a.py")
  local id = chimera.spawn("return the next number")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.eq(chimera.agent(id).log, { "found return 1" }, "the record")
  h.truthy(vim.tbl_contains(require("chimera.diffview").lines(id), "# log: found return 1"), "the diff float")
end)

--- Runs `body` (Lua) in a second, fresh Neovim in `dir`, as a person
--- starting Neovim again; returns what it wrote with `report(value)`.
local function in_new_neovim(dir, body, opts)
  opts = opts or {}
  -- Another user's Neovim (`opts.user`) needs its files where it can reach them.
  local scratch = assert(vim.uv.fs_mkdtemp(vim.uv.os_tmpdir() .. "/chimera-test-XXXXXX"))
  vim.uv.fs_chmod(scratch, tonumber("777", 8))
  local out = scratch .. "/report.json"
  local script = scratch .. "/script.lua"
  local f = assert(io.open(script, "w"))
  f:write(([[
vim.opt.rtp:prepend(%q)
vim.cmd("runtime plugin/chimera.lua")
vim.cmd.cd(%q)
local function report(v)
  local o = assert(io.open(%q, "w"))
  o:write(vim.json.encode(v))
  o:close()
end
%s
vim.cmd("qall!")
]]):format(h.repo, dir, out, body))
  f:close()
  local nvim = vim.v.progpath
  local cmd = { nvim, "--headless", "--clean", "-l", script }
  local env = { CHIMERA_LIB = vim.env.CHIMERA_LIB }
  if opts.user then
    cmd = vim.list_extend({ "setpriv", "--reuid=" .. opts.user, "--regid=" .. opts.user, "--clear-groups" }, cmd)
    for _, var in ipairs({ "HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME" }) do
      env[var] = scratch
    end
  end
  local res = vim.system(cmd, { env = env }):wait(60000)
  local got = h.read(out)
  if body:find("sigkill", 1, true) then
    return res
  end
  h.truthy(got, "the second Neovim reported (exit " .. tostring(res.code) .. ": " .. (res.stderr or "") .. ")")
  return vim.json.decode(got)
end

h.test("reopening Neovim on the project brings back proposals and resumes agents, no command", function()
  local root = h.project({ ["a.py"] = SRC, ["b.py"] = "def g():\n    return 1\n" })
  local url, log = h.fake_llm({ { text = program(1) }, { hang = true }, { text = (program(1):gsub("a%.py", "b.py")) } })
  h.setup(url)
  vim.cmd.edit("a.py")
  local done = chimera.spawn("return the next number")
  h.eq(chimera.wait(done, 20000), "completed", "a proposal waits for review")
  local working = chimera.spawn("the same in b.py", { file = root .. "/b.py" })
  h.wait_for("the second agent to be waiting on the model", function()
    return #vim.split(h.read(log) or "", "\n", { trimempty = true }) == 2
  end)
  -- Quit Neovim (the core stops; the working agent stays in the store).
  chimera.stop()
  local got = in_new_neovim(root, ([[
require("chimera").setup({
  llm = { provider = "openai", url = %q, model = "fake-model", max_retries = 0, timeout_ms = 10000 },
  ui = { progress = false },
})
vim.cmd.edit("a.py")
local chimera = require("chimera")
local buf = vim.api.nvim_get_current_buf()
vim.wait(20000, function()
  local w = chimera.agent(%q)
  return #require("chimera.ghost").extmarks(buf) > 0 and w ~= nil and w.state == "completed"
end, 20)
local probe = vim.system({ "curl", "-s", "-m", "3", "-X", "POST", "-d", "{}", %q .. "/chat/completions" }):wait()
report({
  probe = probe.stdout .. " rc=" .. probe.code,
  ghost = #require("chimera.ghost").extmarks(buf),
  pending = (chimera.agent(%q) or {}).state,
  resumed = (chimera.agent(%q) or {}).state,
  error = (chimera.agent(%q) or {}).error,
})
]]):format(url .. "/v1", working, url .. "/v1", done, working, working))
  h.truthy(got.ghost > 0, "ghost text in the reopened buffer: " .. vim.inspect(got))
  h.eq(got.pending, "completed", "the pending proposal")
  h.eq(got.resumed, "completed", "the interrupted agent ran again: " .. tostring(got.error) .. "\n" .. got.probe .. "\n" .. #vim.split(h.read(log) or "", "\n"))
end)

h.test("another Neovim's accept never writes this one's unsaved text", function()
  local root = h.project({ ["a.py"] = SRC })
  local url = h.fake_llm({ { text = program(1) } })
  h.setup(url)
  vim.cmd.edit("a.py")
  chimera.start()
  local buf = vim.api.nvim_get_current_buf()
  -- Typed here, not saved; a moment later, in another Neovim…
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "", "UNSAVED_HERE = True" })
  vim.wait(500)
  local got = in_new_neovim(root, ([[
require("chimera").setup({
  llm = { provider = "openai", url = %q, model = "fake-model", max_retries = 0, timeout_ms = 10000 },
  ui = { progress = false },
})
local chimera = require("chimera")
local id = chimera.spawn("return the next number", { file = %q })
chimera.wait(id, 20000)
for _ = 1, 2 do
  pcall(chimera.accept, id)
  vim.wait(3000, function() return chimera.agent(id).state == "accepted" end, 20)
end
report({ state = chimera.agent(id).state })
]]):format(url .. "/v1", root .. "/a.py"))
  local disk = h.read(root .. "/a.py")
  h.truthy(not disk:find("UNSAVED_HERE", 1, true), "the other Neovim wrote this one's unsaved line: " .. disk)
  h.eq(got.state, "accepted", "its own change landed")
  h.truthy(disk:find("return 2", 1, true), disk)
  h.truthy(vim.tbl_contains(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "UNSAVED_HERE = True"), "still in this buffer")
end)

h.test("after Neovim is killed, the next one takes over its agents at once", function()
  local root = h.project({ ["b.py"] = "def g():\n    return 1\n" })
  local url, log = h.fake_llm({ { hang = true }, { text = (program(1):gsub("a%.py", "b.py")) } })
  local setup = ([[
require("chimera").setup({
  llm = { provider = "openai", url = %q, model = "fake-model", max_retries = 0, timeout_ms = 10000 },
  ui = { progress = false },
})
]]):format(url .. "/v1")
  -- The first Neovim starts an agent and is killed while it waits on the model.
  in_new_neovim(root, setup .. ([[
vim.cmd.edit("b.py")
local id = require("chimera").spawn("return the next number")
report({ id = id })
vim.wait(10000, function()
  local f = io.open(%q)
  local n = f and #vim.split(f:read("*a"), "\n", { trimempty = true }) or 0
  if f then f:close() end
  return n == 1
end, 20)
vim.uv.kill(vim.uv.os_getpid(), "sigkill")
]]):format(log))
  local started = vim.uv.now()
  local got = in_new_neovim(root, setup .. [[
vim.cmd.edit("b.py")
local state = require("chimera.state")
vim.wait(8000, function()
  for _, a in pairs(state.agents) do
    if a.state == "completed" then
      return true
    end
  end
  return false
end, 20)
local states = {}
for id, a in pairs(state.agents) do
  states[id] = a.state
end
report(states)
]])
  h.eq(vim.tbl_values(got), { "completed" }, "the killed instance's agent ran again")
  h.truthy(vim.uv.now() - started < 10000, "without waiting for its heartbeat to go stale")
end)

h.test("a proposal of 480 files arrives counted: the shown file is drawn, the others wait, the editor never stalls", function()
  local n = 480
  local body = {}
  for i = 1, 120 do
    body[i] = ("def f%d(x):\n    return x + %d\n"):format(i, i)
  end
  local files = {}
  for i = 1, n do
    files[("pkg/m%03d.py"):format(i)] = table.concat(body)
  end
  local dir = h.project(files)
  -- Every line of every module changes (one hunk each); every function stays.
  local rewrite = ("```python\nnew = ''.join([f'def f{i}(y):\\n    return y - {i}\\n' for i in range(1, 121)])\nfor i in range(1, %d):\n    write_file('pkg/m' + str(i).zfill(3) + '.py', new)\nsubmit_result('every module', [])\n```"):format(n + 1)
  h.setup((h.fake_llm({ { text = rewrite } })))
  local lib = require("chimera.loader").require()
  vim.cmd.edit("pkg/m001.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("rewrite every module")
  lib.callback_times()
  h.eq(chimera.wait(id, 120000), "completed", "state")
  local p = chimera.proposals()[1]
  h.eq(#p.files, n, "every file is listed")
  local drawn = 0
  for _, f in ipairs(p.files) do
    h.eq(f.hunk_count, 1, f.path .. ": counted")
    drawn = drawn + (rawget(f, "hunks") and 1 or 0)
  end
  h.eq(drawn, 1, "only the shown file's hunks reached Lua")
  h.truthy(ghost_count(buf) > 0, "the shown file has ghost text")
  local other = p.files[n]
  h.eq(#other.hunks[1].new_lines, 240, "another file's hunks, fetched when asked for")
  h.eq(type(other.hunks[1].key), "string", "with its key")
  local function slowest()
    local worst = 0
    for _, ms in ipairs(lib.callback_times()) do
      worst = math.max(worst, ms)
    end
    return worst
  end
  -- A debug build converting every hunk held the main thread ~300 ms;
  -- counted, its slowest delivery measures 27–64 ms on a 2-core machine
  -- (the same before and after a change that did not touch it: the
  -- machine's noise), so the line is drawn between the two. The release
  -- budget, 4 ms, is `make bench`'s.
  local worst = slowest()
  h.truthy(worst < 150, ("the longest delivery held the main thread %.1f ms"):format(worst))
  chimera.accept(id)
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end, 60000)
  local want = {}
  for i = 1, 120 do
    want[i] = ("def f%d(y):\n    return y - %d\n"):format(i, i)
  end
  h.eq(h.read(dir .. ("/pkg/m%03d.py"):format(n)), table.concat(want), "a file no buffer showed")
  h.wait_for("the open buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == "def f1(y):"
  end)
  worst = slowest()
  h.truthy(worst < 60, ("accepting: the longest delivery held the main thread %.1f ms"):format(worst))
end)

h.test("the hunk under the cursor is the one accepted, even when the proposal changed before the accept arrived", function()
  local src = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
  local both = "```python\nsrc = read_file('a.py')\nwrite_file('a.py', src.replace('return 1', 'return 10').replace('return 2', 'return 20'))\nsubmit_result('tens', ['a.py'])\n```"
  h.project({ ["a.py"] = src })
  h.setup((h.fake_llm({ { text = both } })))
  vim.cmd.edit("a.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("make them tens")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.eq(#require("chimera.ghost").hunk_rows(buf), 2, "two hunks drawn")
  -- The person drops the first hunk and, before the ghost text is redrawn,
  -- accepts the one the cursor is on (it was drawn as hunk 2).
  vim.api.nvim_win_set_cursor(0, { 6, 0 })
  chimera.reject(id, { hunk = 1 })
  chimera.accept_hunk()
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("g's change", function()
    return vim.api.nvim_buf_get_lines(buf, 5, 6, false)[1] == "    return 20"
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    { "def f():", "    return 1", "", "", "def g():", "    return 20" }, "only the hunk under the cursor")
end)

h.test("a project that cannot be written fails the task at once and says why", function()
  -- Where another user can reach it (Neovim's own temporary folder is private).
  local root = assert(vim.uv.fs_mkdtemp(vim.uv.os_tmpdir() .. "/chimera-ro-XXXXXX"))
  vim.fn.mkdir(root .. "/.git")
  vim.fn.writefile(vim.split(SRC, "\n", { trimempty = true }), root .. "/a.py")
  local url = h.fake_llm({ { text = program(1) } })
  local setup = ([[
require("chimera").setup({
  llm = { provider = "openai", url = %q, model = "m", max_retries = 0 },
  ui = { progress = false },
})
]]):format(url .. "/v1")
  -- Read-only for its user: as root (who writes anywhere), Neovim runs as nobody.
  local user = vim.uv.getuid() == 0 and "65534" or nil
  for _, d in ipairs({ root, root .. "/.git" }) do
    vim.uv.fs_chmod(d, tonumber("555", 8))
  end
  local started = vim.uv.now()
  local got = in_new_neovim(root, setup .. [[
vim.cmd.edit("a.py")
local chimera = require("chimera")
local id = chimera.spawn("return the next number")
local st = chimera.wait(id, 8000)
report({ state = st, error = chimera.agent(id).error, text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") })
]], { user = user })
  for _, d in ipairs({ root, root .. "/.git" }) do
    vim.uv.fs_chmod(d, tonumber("755", 8))
  end
  h.eq(got.state, "failed", "the task")
  h.truthy((got.error or ""):find("cannot be opened", 1, true), "the reason: " .. tostring(got.error))
  h.truthy(vim.uv.now() - started < 8000, "at once, not after a time-out")
  h.eq(got.text .. "\n", SRC, "the buffer is untouched")
  h.eq(h.read(root .. "/a.py"), SRC, "the file is untouched")
end)

h.test("delivering the core's messages never runs a full garbage collection of Neovim's Lua heap", function()
  h.project({ ["a.py"] = SRC })
  h.setup((h.fake_llm({ { text = program(1) } })))
  vim.cmd.edit("a.py")
  -- With the collector stopped, only an explicit full collection frees
  -- memory: garbage made now must still be counted after the deliveries
  -- (the core's start and import included).
  collectgarbage("stop")
  local garbage = {}
  for i = 1, 200000 do
    garbage[i] = { i }
  end
  garbage = nil
  local before = collectgarbage("count")
  local lib = require("chimera.loader").require()
  lib.callback_times()
  local id = chimera.spawn("return the next number")
  local st = chimera.wait(id, 20000)
  local after = collectgarbage("count")
  local deliveries = #lib.callback_times()
  collectgarbage("restart")
  h.eq(st, "completed", "state")
  h.truthy(deliveries > 0, "messages were delivered")
  h.truthy(after >= before - 1024, ("the heap went from %d KB to %d KB over %d deliveries"):format(before, after, deliveries))
end)

h.finish()
