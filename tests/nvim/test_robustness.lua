-- Bad input gets a clear error; Neovim stays responsive; nothing is lost.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local function program(lines)
  return "```python\n" .. table.concat(lines, "\n") .. "\n```"
end

h.test("native functions raise catchable Lua errors that say what to do", function()
  local lib = require("chimera.loader").require()
  pcall(lib.stop)
  local ok, err = pcall(lib.spawn, "x", { task = "task" })
  h.eq(ok, false, "spawn before start fails")
  h.truthy(tostring(err):find("setup", 1, true), "message says to call setup: " .. tostring(err))
  ok, err = pcall(lib.start, "{not json", "/tmp")
  h.eq(ok, false, "bad config fails")
  h.truthy(tostring(err):find("invalid configuration", 1, true), tostring(err))
  -- What a notification shows is the message, never Lua's traceback.
  h.eq(type(err), "string")
  h.truthy(not err:find("traceback", 1, true) and not err:find("\n", 1, true), err)
  h.project({ ["a.py"] = "x = 1\n" })
  h.setup("http://127.0.0.1:9")
  ok, err = pcall(chimera.spawn, "   ")
  h.eq(ok, false, "empty task refused")
  h.truthy(tostring(err):find("non-empty", 1, true), tostring(err))
end)

h.test("an unreachable LLM fails the agent with the URL in the reason", function()
  h.project({ ["a.py"] = "x = 1\n" })
  h.setup("http://127.0.0.1:9")
  local id = chimera.spawn("anything")
  h.eq(chimera.wait(id, 20000), "failed", "state")
  h.truthy(chimera.agent(id).error:find("127.0.0.1:9", 1, true), chimera.agent(id).error)
end)

h.test("binary, non-UTF-8, oversized and escaping paths are refused to the program", function()
  local big = string.rep("x", 3 * 1024 * 1024)
  local root = h.project({
    ["a.py"] = "x = 1\n",
    ["img.bin"] = "\0\1\2\255",
    ["latin.txt"] = "caf\233\n",
    ["big.txt"] = big,
  })
  local attempt = program({
    "errors = []",
    "for p in ['img.bin', 'latin.txt', 'big.txt', '../etc/passwd', '/etc/passwd']:",
    "    try:",
    "        read_file(p)",
    "        errors.append('read ' + p)",
    "    except RuntimeError as e:",
    "        errors.append(str(e))",
    "write_file('a.py', 'x = 2\\n')",
    "submit_result(' | '.join(errors), ['a.py'])",
  })
  local url = h.fake_llm({ { text = attempt } })
  h.setup(url)
  local id = chimera.spawn("probe")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  local summary = chimera.agent(id).summary
  for _, want in ipairs({ "binary", "too large", "leaves the project root", "absolute" }) do
    h.truthy(summary:find(want, 1, true), ("summary mentions %q: %s"):format(want, summary))
  end
  h.eq(h.read(root .. "/big.txt"), big, "big file intact")
end)

h.test("a program that loops forever is stopped; Neovim keeps answering", function()
  h.project({ ["a.py"] = "x = 1\n" })
  local url = h.fake_llm({ { text = program({ "while True:", "    pass" }) } })
  h.setup(url, { agents = { sandbox_timeout_ms = 200, repair_rounds = 1 } })
  local id = chimera.spawn("spin")
  local ticks = 0
  local timer = vim.uv.new_timer()
  timer:start(0, 10, vim.schedule_wrap(function()
    ticks = ticks + 1
  end))
  h.eq(chimera.wait(id, 20000), "failed", "state")
  timer:stop()
  timer:close()
  h.truthy(chimera.agent(id).error:find("time limit", 1, true), chimera.agent(id).error)
  h.truthy(ticks > 10, "the main loop kept running: " .. ticks)
end)

h.test("a reply without code is repaired, then fails with the reason", function()
  h.project({ ["a.py"] = "x = 1\n" })
  local url = h.fake_llm({ { text = "I am sorry, I cannot help with that." } })
  h.setup(url, { agents = { repair_rounds = 1 } })
  local id = chimera.spawn("anything")
  h.eq(chimera.wait(id, 20000), "failed", "state")
  h.truthy(chimera.agent(id).error:find("repair", 1, true), chimera.agent(id).error)
end)

h.test("a file the human changes in the same lines makes the proposal conflicted; accept is refused", function()
  local root = h.project({ ["a.py"] = "def f():\n    return 1\n" })
  local url = h.fake_llm({ { text = program({
    "write_file('a.py', read_file('a.py').replace('return 1', 'return 2'))",
    "submit_result('two', ['a.py'])",
  }) } })
  h.setup(url)
  vim.cmd.edit("a.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("return two")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    return 3" })
  h.wait_for("the conflict", function()
    return chimera.agent(id).conflicted == true
  end)
  local errors = {}
  local orig = vim.notify
  vim.notify = function(m)
    table.insert(errors, m)
  end
  chimera.accept(id)
  vim.wait(1000, function()
    return #errors > 0
  end)
  vim.notify = orig
  h.truthy(errors[1] and errors[1]:find("conflict", 1, true), vim.inspect(errors))
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return 3", "the human's line stays")
  h.eq(chimera.agent(id).state, "completed", "still reviewable")
  local view = table.concat(require("chimera.diffview").lines(id), "\n")
  h.truthy(view:find("+    return 3", 1, true) and view:find("+    return 2", 1, true), "both sides shown: " .. view)
  h.eq(h.read(root .. "/a.py"), "def f():\n    return 1\n", "disk untouched")
end)

h.test("quitting Neovim with an agent in flight exits promptly", function()
  h.project({ ["a.py"] = "x = 1\n" })
  local url = h.fake_llm({ { hang = true } })
  local script = vim.fn.tempname() .. ".lua"
  local f = assert(io.open(script, "w"))
  f:write(([[
    vim.opt.rtp:prepend(%q)
    vim.cmd("runtime plugin/chimera.lua")
    local c = require("chimera")
    c.setup({ llm = { provider = "openai", url = %q, model = "m" }, ui = { progress = false } })
    local id = c.spawn("hang")
    vim.wait(5000, function() return c.agent(id).state == "running" end, 10)
    io.stdout:write(c.agent(id).state .. "\n")
    vim.cmd("qa!")
  ]]):format(h.repo, url .. "/v1"))
  f:close()
  local t0 = vim.uv.hrtime()
  local res = vim.system({ vim.v.progpath, "--headless", "--clean", "-l", script }, { env = { CHIMERA_LIB = vim.env.CHIMERA_LIB } }):wait(20000)
  local secs = (vim.uv.hrtime() - t0) / 1e9
  h.eq(vim.trim(res.stdout or ""), "running", "agent was in flight: " .. (res.stderr or ""))
  h.eq(res.code, 0, "clean exit")
  h.truthy(secs < 5, ("exited in %.2f s"):format(secs))
end)

h.test("a library built before the native sources changed is stale, whatever its version string", function()
  local loader = require("chimera.loader")
  local repo = vim.fn.tempname()
  vim.fn.mkdir(repo .. "/scripts", "p")
  vim.fn.mkdir(repo .. "/src", "p")
  vim.fn.mkdir(repo .. "/lua", "p")
  vim.fn.writefile(vim.fn.readfile(h.repo .. "/scripts/native-sources"), repo .. "/scripts/native-sources")
  local function git(...)
    local r = vim.system({ "git", "-C", repo, ... }, {
      env = { GIT_AUTHOR_NAME = "t", GIT_AUTHOR_EMAIL = "t@t", GIT_COMMITTER_NAME = "t", GIT_COMMITTER_EMAIL = "t@t" },
    }):wait()
    assert(r.code == 0, r.stderr)
    return vim.trim(r.stdout)
  end
  local function commit(path, text)
    vim.fn.writefile({ text }, repo .. "/" .. path)
    git("add", "-A")
    git("commit", "-qm", path)
    return git("rev-parse", "--short=12", "HEAD")
  end
  git("init", "-q")
  local built = commit("src/lib.rs", "fn a() {}")
  h.eq(loader.stale(built, repo), nil, "built from HEAD: current")
  commit("lua/init.lua", "return 1")
  h.eq(loader.stale(built, repo), nil, "only Lua changed since: still current")
  commit("src/lib.rs", "fn b() {}")
  local msg = loader.stale(built, repo)
  h.truthy(msg and msg:find("built from commit " .. built, 1, true) and msg:find("run `make`", 1, true), tostring(msg))
  h.eq(loader.stale("unknown", repo), nil, "a build without git says nothing")
  h.eq(loader.stale("0123456789ab", repo), nil, "a commit this clone lacks says nothing")
  h.eq(loader.stale(built, vim.fn.tempname()), nil, "not a git checkout")
end)

h.test("a folder in no git project is imported only when the human says so", function()
  local dir = vim.uv.fs_realpath(vim.fn.tempname()) or vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile({ "x = 1" }, dir .. "/a.py")
  vim.cmd.cd(dir)
  h.setup((h.fake_llm({ { text = "x" } })))
  local confirm, asked = vim.fn.confirm, {}
  vim.fn.confirm = function(msg)
    table.insert(asked, msg)
    return 2 -- No
  end
  local ok, err = pcall(chimera.start)
  h.eq(ok, false, "refused")
  h.truthy(tostring(err):find("set `root` in setup()", 1, true), tostring(err))
  h.truthy(asked[1] and asked[1]:find(dir .. " is in no git project", 1, true), vim.inspect(asked))
  h.eq(vim.uv.fs_stat(dir .. "/.chimera"), nil, "nothing written there")
  vim.fn.confirm = function(msg)
    table.insert(asked, msg)
    return 1 -- Yes
  end
  local started = pcall(chimera.start)
  vim.fn.confirm = confirm
  h.eq(started, true)
  h.eq(chimera.status().root, vim.uv.fs_realpath(dir))
  chimera.stop()
  -- Next time, its .chimera/ answers.
  h.truthy(vim.uv.fs_stat(dir .. "/.chimera"), ".chimera made")
  vim.fn.confirm = function()
    error("asked again")
  end
  h.eq(pcall(chimera.start), true, "not asked again")
  vim.fn.confirm = confirm
  chimera.stop()
end)

h.test(":checkhealth chimera reports the library, database and LLM", function()
  h.project({ ["a.py"] = "x = 1\n" })
  local url = h.fake_llm({ { text = "x" } })
  h.setup(url)
  chimera.start()
  h.wait_for("import", function()
    return chimera.status().ready
  end)
  vim.cmd("checkhealth chimera")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  h.truthy(text:find("matches the plugin", 1, true), text)
  h.truthy(text:find(require("chimera.loader").active_path() .. " loaded", 1, true), "the library in use is named: " .. text)
  h.truthy(text:find("chimera.db", 1, true), text)
  h.truthy(text:find("answers and serves model", 1, true), text)
  h.truthy(not text:find("ERROR", 1, true), text)
  h.truthy(text:find("no MCP servers configured", 1, true), text)
  h.truthy(text:find("code-mode agents are asked for", 1, true) and text:find("from llm.edit_form", 1, true), text)
  h.truthy(text:find("the core's messages held the main thread at most [%d.]+ ms %(median [%d.]+ ms%) over %d+ deliveries"), text)
end)

h.test(":checkhealth chimera says where an npm project's tests run and how they go as it is now", function()
  h.project({
    ["calc.js"] = "function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n",
    ["package.json"] = '{"name": "calc", "scripts": {"test": "node --test"}}',
    ["test/calc.test.js"] = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc');\n\ntest('adds', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n",
  })
  local url = h.fake_llm({ { text = "x" } })
  h.setup(url, { tests = { command = "auto" } })
  vim.cmd("checkhealth chimera")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout")
  h.truthy(text:find("tested with package.json's test script `node --test`, with npm (no lockfile)", 1, true), text)
  h.truthy(text:find("the project's tests as they are now: failing before any change: 0 passed, 1 failed (adds)", 1, true), text)
end)

h.test(":checkhealth chimera checks the LLM server and model before any start, by the model's exact name", function()
  h.project({ ["a.py"] = "x = 1\n" })
  local url = h.fake_llm({ { text = "x" } })
  local function health()
    vim.cmd("checkhealth chimera")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout")
    return text
  end
  h.setup(url)
  local text = health()
  h.truthy(text:find("answers and serves model `fake-model`", 1, true), text)
  h.eq(chimera.status().started, false, "checkhealth started no core")
  -- The server lists one model: another name is not taken for it.
  h.setup(url, { llm = { model = "fake-model-7b" } })
  text = health()
  h.truthy(text:find("has no model `fake-model-7b` (it has: fake-model)", 1, true), text)
  h.truthy(text:find("set llm.model to one of: fake-model", 1, true), text)
  h.setup(url, { llm = { model = "Fake-Model" } })
  text = health()
  h.truthy(text:find("did you mean `fake-model`?", 1, true), text)
  -- A server that is not there is said at once, without a start.
  h.setup("http://127.0.0.1:9")
  text = health()
  h.truthy(text:find("cannot reach the LLM server at http://127.0.0.1:9/v1", 1, true), text)
  h.eq(chimera.status().started, false, "still no core")
end)

h.test(":checkhealth chimera says which MCP servers and searches agents can use", function()
  h.project({ ["a.py"] = "x = 1\n" })
  h.setup("http://127.0.0.1:9", {
    tools = { web_search_url = "http://127.0.0.1:8888" },
    mcp = { servers = {
      ok = { command = { "python3", "srv.py" } },
      unused = { url = "http://127.0.0.1:8000/mcp" },
      gone = { command = { "chimera-no-such-mcp-server" } },
    } },
    capabilities = { mcp = { "ok.*", "gone.x" } },
  })
  vim.cmd("checkhealth chimera")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  h.truthy(text:find("MCP server ok (python3 srv.py), tools allowed: ok.*", 1, true), text)
  h.truthy(text:find("MCP server unused (http://127.0.0.1:8000/mcp): no capabilities.mcp pattern", 1, true), text)
  h.truthy(text:find("`chimera-no-such-mcp-server` is not an executable", 1, true), text)
  h.truthy(text:find("127.0.0.1 is not in capabilities.hosts", 1, true), text)
end)

h.finish()
