-- Neovim and the `chimera` CLI on one project at once: a task typed in a
-- shell shows as ghost text in the open buffer, an accept from the shell
-- edits the buffer as one undoable change, and an accept in Neovim is seen
-- by the shell.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local BIN = vim.fs.dirname(assert(os.getenv("CHIMERA_LIB"), "CHIMERA_LIB names the library")) .. "/chimera"
local CALC = "def add(a, b):\n    return a - b\n"

-- The files this user trusts (`chimera trust`), kept out of the real home.
local ENV = { NO_COLOR = "1", XDG_DATA_HOME = vim.fn.tempname() }

--- `chimera ARGS` in the project, as a person runs it in another terminal.
local function cli(root, args)
  local cmd = { BIN }
  vim.list_extend(cmd, args)
  local out = vim.system(cmd, { cwd = root, env = ENV }):wait()
  h.eq(out.code, 0, "chimera " .. table.concat(args, " ") .. ": " .. (out.stderr or ""))
  return out.stdout
end

local function ghost_marks(buf)
  return vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, {})
end

--- Waits until agent `id`, started outside Neovim, has its proposal in
--- Neovim and shown as ghost text in `buf`.
local function shown_in(buf, id, what)
  h.wait_for(what .. " in Neovim", function()
    local a = chimera.agent(id)
    return a ~= nil and a.state == "completed"
  end, 10000)
  h.wait_for(what .. "'s ghost text", function()
    return #ghost_marks(buf) > 0
  end)
end

h.test("a CLI task shows in Neovim, a CLI accept is one undoable change", function()
  local root = h.project({ ["calc.py"] = CALC })
  h.setup((h.fake_llm({
    { text = "```python\ndef add(a, b):\n    return a + b\n```" },
    { text = "```python\ndef add(a, b):\n    return b + a\n```" },
    { text = "```python\ndef add(a, b):\n    return (b + a)\n```" },
  })))
  vim.cmd.edit("calc.py")
  local buf = vim.api.nvim_get_current_buf()
  chimera.start()
  -- Straight to the shell, as a person would: no waiting for the core.
  local id = vim.trim(cli(root, { "task", "--file", "calc.py", "fix add" }))
  local asked = vim.uv.hrtime()
  shown_in(buf, id, "the CLI's agent")
  local ms = (vim.uv.hrtime() - asked) / 1e6
  h.truthy(ms < 2000, ("ghost text %.0f ms after the CLI returned"):format(ms))
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return a - b", "the buffer is untouched before the accept")
  local listed = vim.json.decode(cli(root, { "agents", "--json" }))
  h.eq(listed[1].state, "completed", "the shell sees the proposal")
  -- The shell is told where the accept went: into Neovim's open buffer,
  -- not yet on disk.
  local said = cli(root, { "accept", id })
  h.truthy(said:find("applied to calc.py in the Neovim that has it open, not yet written", 1, true), said)
  h.wait_for("the CLI accept in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return a + b"
  end)
  -- As with <Leader>a: the loaded buffer is the human's text, so the change
  -- lands there and is saved with it, never written under it.
  h.eq(h.read(root .. "/calc.py"), CALC, "the file waits for :write")
  vim.cmd("silent undo")
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return a - b", "one undo step takes it back")
  -- The shell sees the accept undone, as the human's text has it.
  h.wait_for("the undo in the core", function()
    return chimera.agent(id).undone == true
  end)
  local shown = cli(root, { "agent", id })
  h.truthy(shown:find("state     accepted (undone)", 1, true), shown)
  vim.cmd("silent redo")
  -- Accepted in Neovim, the shell sees it accepted.
  local second = chimera.spawn("fix add again", { file = root .. "/calc.py" })
  h.eq(chimera.wait(second, 20000), "completed", "second agent")
  chimera.accept(second)
  h.wait_for("the Neovim accept", function()
    return chimera.agent(second).state == "accepted"
  end)
  local agent = vim.json.decode(cli(root, { "agent", second, "--json" }))
  h.eq(agent.agent.state, "accepted", "the shell sees the Neovim accept")
  -- `chimera accept --write`: the buffer (no other unsaved change) is
  -- written by the Neovim that has it open.
  vim.cmd("silent write")
  local third = chimera.spawn("fix add once more", { file = root .. "/calc.py" })
  h.eq(chimera.wait(third, 20000), "completed", "third agent")
  local said = cli(root, { "accept", third, "--write" })
  h.truthy(said:find("which writes it unless it holds other unsaved changes", 1, true), said)
  h.wait_for("the accept written on disk", function()
    return h.read(root .. "/calc.py") == table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
      and not vim.bo[buf].modified
  end)
end)

h.test("Neovim's core holds the project the moment it starts: a shell task typed at once runs there", function()
  local root = h.project({ ["calc.py"] = CALC })
  h.setup((h.fake_llm({ { text = "```python\ndef add(a, b):\n    return a + b\n```" } })))
  chimera.start()
  -- No wait: a `chimera task` typed now must find this core, not start its
  -- own (which would run the agent without Neovim's options).
  local served = chimera.served()
  h.eq(served and served.own, true, "the control socket is Neovim's as start() returns")
  local id = vim.trim(cli(root, { "task", "--file", "calc.py", "fix add" }))
  h.eq(chimera.wait(id, 10000), "completed", "the shell's agent, run by Neovim's core")
end)

h.test("a task the shell started before Neovim opened the project shows in Neovim once ready", function()
  local root = h.project({ ["calc.py"] = CALC })
  local url = h.fake_llm({ { text = "```python\ndef add(a, b):\n    return a + b\n```", chunk_delay = 0.3 } })
  -- The shell's core runs the agent, with the project's options.
  vim.fn.mkdir(root .. "/.chimera", "p")
  local f = assert(io.open(root .. "/.chimera/config.json", "w"))
  f:write(vim.json.encode({ llm = { provider = "openai", url = url .. "/v1", model = "fake-model", max_retries = 0 } }))
  f:close()
  -- Its llm.url waits for the user's trust.
  cli(root, { "trust", "--yes" })
  local shell = vim.system({ BIN, "task", "--file", "calc.py", "fix add" }, { cwd = root, env = ENV })
  h.wait_for("the shell's core to hold the project", function()
    return vim.uv.fs_stat(root .. "/.chimera/core.sock") ~= nil
  end, 10000)
  h.setup(url)
  vim.cmd.edit("calc.py")
  local buf = vim.api.nvim_get_current_buf()
  chimera.start()
  local out = shell:wait(20000)
  h.eq(out.code, 0, "chimera task: " .. (out.stderr or ""))
  local id = vim.trim(out.stdout)
  local ended = vim.uv.hrtime()
  shown_in(buf, id, "the shell's agent")
  local ms = (vim.uv.hrtime() - ended) / 1e6
  h.truthy(ms < 2000, ("ghost text %.0f ms after the shell's core stopped"):format(ms))
  chimera.accept(id)
  h.wait_for("the accept in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return a + b"
  end)
end)

h.test("with api.enabled Neovim serves the HTTP API; a task from it shows as ghost text", function()
  local root = h.project({ ["calc.py"] = CALC })
  h.setup((h.fake_llm({ { text = "```python\ndef add(a, b):\n    return a + b\n```" } })), { api = { enabled = true } })
  vim.cmd.edit("calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local url = chimera.dashboard({ open = false })
  local port = url:match("^http://127%.0%.0%.1:(%d+)/$")
  h.truthy(port, "the dashboard's address: " .. url)
  local info = vim.json.decode(h.read(root .. "/.chimera/api.json"))
  local token = info.token
  -- :Chimera dashboard starts the browser with no secret on its command
  -- line (which every account reads in `ps`): a private page logs it in once.
  local opened
  local ui_open = vim.ui.open
  vim.ui.open = function(arg)
    opened = arg
  end
  vim.cmd("Chimera dashboard")
  vim.ui.open = ui_open
  h.truthy(opened and vim.startswith(opened, "file://"), tostring(opened))
  h.truthy(not opened:find(token, 1, true) and not opened:find("login=", 1, true), opened)
  local page_file = opened:sub(#"file://" + 1)
  h.eq(vim.uv.fs_stat(page_file).mode % 512, tonumber("600", 8), "the login page is private")
  local code = h.read(page_file):match("#login=([%w%.]+)")
  h.truthy(code and not h.read(page_file):find(token, 1, true), h.read(page_file))
  local function login()
    local out = vim.system({ "curl", "-s", "-H", "Content-Type: application/json", "-d", vim.json.encode({ code = code }), "http://127.0.0.1:" .. port .. "/login" }):wait()
    return vim.json.decode(out.stdout)
  end
  h.eq(login().token, token, "the code is the token, once")
  h.truthy(login().error:find("used already", 1, true), "not twice")
  h.eq(vim.uv.fs_stat(root .. "/.chimera/api.json").mode % 512, tonumber("600", 8), "api.json is private")
  local served = chimera.served()
  h.eq(served.own, true, "this Neovim serves the project")
  local function curl(args)
    local cmd = { "curl", "-s", "-w", "\n%{http_code}", "-H", "Authorization: Bearer " .. token }
    vim.list_extend(cmd, args)
    local out = vim.system(cmd):wait()
    local body, code = out.stdout:match("^(.*)\n(%d+)$")
    return tonumber(code), body
  end
  local code = curl({ "-H", "Authorization: Bearer wrong", "http://127.0.0.1:" .. port .. "/agents" })
  h.eq(code, 200, "curl sends the last Authorization header it is given")
  local refused = vim.system({ "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:" .. port .. "/agents" }):wait()
  h.eq(refused.stdout, "401", "no token, no answer")
  local posted, body = curl({
    "-H", "Content-Type: application/json",
    "-d", vim.json.encode({ task = "fix add", file = "calc.py" }),
    "http://127.0.0.1:" .. port .. "/tasks",
  })
  h.eq(posted, 200, body)
  local id = vim.json.decode(body).id
  shown_in(buf, id, "the API's agent")
  local health = vim.api.nvim_exec2("checkhealth chimera", { output = true })
  local lines = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  h.truthy(lines:find("HTTP API and dashboard on http://127.0.0.1:" .. port, 1, true), "checkhealth names the API:\n" .. lines .. (health.output or ""))
  h.truthy(lines:find("this Neovim serves the project", 1, true), "checkhealth names the socket")
  chimera.stop()
  h.wait_for("api.json removed when Neovim's core stops", function()
    return vim.uv.fs_stat(root .. "/.chimera/api.json") == nil
  end)
end)

h.test("checkhealth says what the chimera command ignores of a project's untrusted options", function()
  local root = h.project({ ["calc.py"] = CALC })
  vim.fn.mkdir(root .. "/.chimera", "p")
  local f = assert(io.open(root .. "/.chimera/config.json", "w"))
  f:write(vim.json.encode({ tests = { command = { "sh", "-c", "id > pwned" } }, llm = { model = "m" } }))
  f:close()
  h.setup((h.fake_llm({})))
  vim.cmd.edit("calc.py")
  chimera.start()
  local function health()
    vim.env.XDG_DATA_HOME = ENV.XDG_DATA_HOME
    vim.cmd("checkhealth chimera")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout")
    return text
  end
  local before = health()
  h.truthy(before:find("config.json is not trusted, so the chimera command ignores tests.command", 1, true), before)
  cli(root, { "trust", "--yes" })
  local after = health()
  h.truthy(after:find("config.json is trusted (chimera trust)", 1, true), after)
  h.eq(vim.uv.fs_stat(root .. "/pwned"), nil, "nothing of the file ran")
end)

h.finish()
