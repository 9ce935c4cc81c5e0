-- The agents users bring, real, installed from npm by
-- scripts/install-agents.sh: Claude Code through both of its adapters (the
-- one users have today, which serves Claude Code's tools over ACP, and its
-- successor, which runs Claude Code's own), Gemini CLI (`--acp`) and Codex
-- (its ACP adapter). Each is driven by a scripted model on 127.0.0.1 that
-- answers in its provider's wire format with tool calls (Anthropic's
-- Messages, Gemini's generateContent, OpenAI's Responses API with Codex's
-- freeform apply_patch), so each agent's own loop and tools run. Under the
-- default preset the edit is a proposal, nobody is asked, the disk waits
-- for <Leader>a and u undoes it; a shell reading the project's .env and
-- the home and writing the project is refused by the kernel, shown where
-- the agent reports what its commands print, and no secret reaches the
-- model.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local APP = 'def greet(name):\n    return "Hello, " + name\n'
local OLD, NEW = '"Hello, " + name', '"Hello, " + (name or "world")'
local FIXED = APP:gsub(vim.pesc(OLD), NEW)

--- Claude Code through `adapter` (its tools' prefix: `tools`).
local function claude(adapter, tools)
  return {
    name = "claude",
    adapter = adapter,
    bin = h.repo .. "/.deps/" .. adapter .. "/node_modules/.bin/" .. adapter,
    spec = function(bin, url)
      return {
        command = { bin },
        env = {
          ANTHROPIC_BASE_URL = url,
          ANTHROPIC_API_KEY = "sk-ant-test",
          -- Claude Code refuses to run as root outside a sandbox unless told.
          IS_SANDBOX = "1",
          DISABLE_TELEMETRY = "1",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1",
        },
      }
    end,
    edit = {
      { name = tools .. "Read", arguments = { file_path = "{cwd}/app.py" } },
      { name = tools .. "Edit", arguments = { file_path = "{cwd}/app.py", old_string = OLD, new_string = NEW } },
    },
    shell = function(line)
      return { name = tools .. "Bash", arguments = { command = line, description = "Look around", timeout = 60000 } }
    end,
    -- It asks before each edit: the preset answers, naming the kind.
    asks_edit = true,
    shows_output = true,
  }
end

local AGENTS = {
  claude("claude-code-acp", "mcp__acp__"),
  claude("claude-agent-acp", ""),
  {
    name = "gemini",
    bin = h.repo .. "/.deps/gemini/node_modules/.bin/gemini",
    spec = function(bin, url)
      return {
        command = { bin, "--acp" },
        env = { GOOGLE_GEMINI_BASE_URL = url, GEMINI_API_KEY = "test-key" },
      }
    end,
    edit = { { name = "write_file", arguments = { file_path = "{cwd}/app.py", content = FIXED } } },
    -- Gemini CLI sends its shell's output to the model only (an empty
    -- `content` to the client): what the kernel refused it cannot be shown.
    shows_output = false,
    shell = function(line)
      return { name = "run_shell_command", arguments = { command = line, description = "Look around" } }
    end,
  },
  {
    name = "codex",
    bin = h.repo .. "/.deps/codex/node_modules/.bin/codex-acp",
    spec = function(bin, url)
      -- Codex finds its provider in its own config, in a folder of the test's.
      local home = vim.fn.tempname()
      vim.fn.mkdir(home, "p")
      local f = assert(io.open(home .. "/config.toml", "w"))
      f:write(([[
model = "gpt-5.3-codex"
model_provider = "fake"
[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
]]):format(url))
      f:close()
      return {
        command = { bin },
        env = { OPENAI_API_KEY = "sk-test", CODEX_HOME = home },
        writable = { home },
        -- Named in its config, not its env: said here, as a user would.
        network = { url },
      }
    end,
    edit = {
      {
        name = "apply_patch",
        input = ("*** Begin Patch\n*** Update File: app.py\n@@\n def greet(name):\n-    return %s\n+    return %s\n*** End Patch\n"):format(
          OLD,
          NEW
        ),
      },
    },
    shell = function(line)
      return { name = "exec_command", arguments = { cmd = line } }
    end,
    shows_output = true,
  },
}
for _, a in ipairs(AGENTS) do
  a.adapter = a.adapter or a.name
  assert(vim.fn.executable(a.bin) == 1, a.adapter .. " is not installed: scripts/install-agents.sh (make test runs it)")
end

--- Runs a task by `agent` on app.py, opened and typed into at once, its
--- model making `calls`; the agent once it ended, the buffer, the root,
--- the model's request log, and what the human was asked.
local function run(agent, preset, calls)
  local root = h.project({ ["app.py"] = APP, [".env"] = "API_KEY=hunter2\n" })
  local script = {}
  for _, call in ipairs(calls(root)) do
    table.insert(script, { tool_calls = { call } })
  end
  table.insert(script, { text = "Fixed greet." })
  local url, requests = h.fake_llm(script, { only_with_tools = true })
  vim.env.XDG_DATA_HOME = vim.fn.tempname()
  h.setup(url, {
    agents = { timeout_ms = 120000, external = { [agent.name] = agent.spec(agent.bin, url) } },
    capabilities = preset,
  })
  local select, asked = vim.ui.select, {}
  vim.ui.select = function(_, opts, on_choice)
    table.insert(asked, opts.prompt)
    vim.schedule(function()
      on_choice("Refuse")
    end)
  end
  vim.cmd.edit("app.py")
  vim.cmd("Chimera task --agent " .. agent.name .. " make greet say Hello, world when name is empty")
  local done = h.ended_agent(90000)
  vim.ui.select = select
  return done, vim.api.nvim_get_current_buf(), root, requests, asked
end

for _, agent in ipairs(AGENTS) do
  h.test(agent.adapter .. ": its edit is a proposal under the default preset, nobody asked; <Leader>a, then u", function()
    local done, buf, root, _, asked = run(agent, { preset = "sandbox" }, function()
      return agent.edit
    end)
    h.eq(done.state, "completed", agent.name .. " proposed: " .. tostring(done.error))
    h.eq(#asked, 0, "nobody was asked: " .. vim.inspect(asked))
    h.eq(h.read(root .. "/app.py"), APP, "the file on disk is untouched")
    h.eq(done.changed_files, { "app.py" })
    h.wait_for("its ghost text", function()
      return #require("chimera.ghost").extmarks(buf) > 0
    end)
    vim.api.nvim_feedkeys(vim.keycode("<Leader>a"), "x", false)
    h.wait_for("the accept in the buffer", function()
      return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return " .. NEW
    end)
    vim.api.nvim_feedkeys("u", "x", false)
    h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return " .. OLD, "u undoes it")
    h.eq(h.read(root .. "/app.py"), APP, "and the disk waits for :write")
    if agent.asks_edit then
      local asked_edit = vim.tbl_filter(function(e)
        return e.input:find("session/request_permission edit:", 1, true) ~= nil
      end, h.effects({ kind = "acp" }))
      h.eq(#asked_edit, 1, "its permission named the kind it announced")
      h.eq(asked_edit[1].output, "ok")
    end
  end)

  h.test(agent.adapter .. ": its shell reaches nothing of the user's, and what was refused is shown", function()
    local home = vim.uv.os_homedir()
    local done, _, root, requests = run(agent, { preset = "developer", commands = { "cat", "ls" } }, function(root)
      local calls = vim.deepcopy(agent.edit)
      table.insert(calls, agent.shell(("cat %s/.env; ls %s; echo owned > %s/app.py"):format(root, home, root)))
      return calls
    end)
    h.eq(done.state, "completed", agent.name .. " proposed: " .. tostring(done.error))
    h.eq(h.read(root .. "/app.py"), APP, "the project's file is untouched")
    local sent = h.read(requests) or ""
    h.truthy(not sent:find("hunter2", 1, true), "the secret never reached the model")
    h.truthy(sent:find("Permission denied", 1, true), "the kernel's refusal went back to the model")
    if not agent.shows_output then
      return
    end
    local refused = {}
    for _, e in ipairs(h.effects({ kind = "acp" })) do
      local what = e.input:match("^refused by the sandbox: (.*)$")
      if what then
        refused[what] = e.output
      end
    end
    h.eq(refused[root .. "/.env"], "the project itself: it works on its own copy", vim.inspect(refused))
    h.eq(refused["~"], "your home: it has one of its own", vim.inspect(refused))
    h.eq(refused[root .. "/app.py"], "the project itself: it works on its own copy", vim.inspect(refused))
    h.truthy(
      (done.summary or ""):find("the sandbox refused 3 accesses outside its folder", 1, true),
      "the summary says so: " .. tostring(done.summary)
    )
  end)
end

h.finish()
