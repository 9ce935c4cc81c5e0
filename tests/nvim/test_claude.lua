-- The real Claude Code as an ACP agent, through both of its adapters
-- (npm, installed by scripts/install-agents.sh): the one users have today,
-- which serves Claude Code's tools over ACP, and its successor, which runs
-- Claude Code's own. A scripted model on 127.0.0.1 answers in Anthropic's
-- Messages API with tool calls, so Claude Code's own loop runs. Under the
-- default preset its edit is a proposal, nobody is asked, the disk waits
-- for <Leader>a and u undoes it; under "developer" its shell runs, confined:
-- what the sandbox refused it is shown, and no secret reaches the model.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local ADAPTERS = {
  { name = "claude-code-acp", bin = h.repo .. "/.deps/claude-code-acp/node_modules/.bin/claude-code-acp", tools = "mcp__acp__" },
  { name = "claude-agent-acp", bin = h.repo .. "/.deps/claude-agent-acp/node_modules/.bin/claude-agent-acp", tools = "" },
}
for _, a in ipairs(ADAPTERS) do
  assert(vim.fn.executable(a.bin) == 1, a.name .. " is not installed: scripts/install-agents.sh (make test runs it)")
end

local APP = 'def greet(name):\n    return "Hello, " + name\n'
local OLD, NEW = '"Hello, " + name', '"Hello, " + (name or "world")'

--- Claude Code through `adapter` as `agents.external.claude`, talking to
--- the scripted model at `url`; its home made fresh for the test.
local function claude(adapter, url)
  vim.env.XDG_DATA_HOME = vim.fn.tempname()
  return {
    command = { adapter.bin },
    env = {
      ANTHROPIC_BASE_URL = url,
      ANTHROPIC_API_KEY = "sk-ant-test",
      -- Claude Code refuses to run as root outside a sandbox unless told.
      IS_SANDBOX = "1",
      DISABLE_TELEMETRY = "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1",
    },
  }
end

--- The tool calls Claude Code's model makes: read app.py, edit it, then
--- `shell` (if any), then a last word.
local function script(adapter, shell)
  local calls = {
    { tool_calls = { { name = adapter.tools .. "Read", arguments = { file_path = "{cwd}/app.py" } } } },
    {
      tool_calls = {
        {
          name = adapter.tools .. "Edit",
          arguments = { file_path = "{cwd}/app.py", old_string = OLD, new_string = NEW },
        },
      },
    },
  }
  if shell then
    table.insert(calls, {
      tool_calls = {
        { name = adapter.tools .. "Bash", arguments = { command = shell, description = "Look around", timeout = 60000 } },
      },
    })
  end
  table.insert(calls, { text = "Fixed greet." })
  return calls
end

--- Runs a task by Claude Code through `adapter` on app.py, opened and
--- typed into at once; the agent once it ended, the buffer, the root,
--- the model's request log, and what the human was asked.
local function run(adapter, preset, shell)
  local root = h.project({ ["app.py"] = APP, [".env"] = "API_KEY=hunter2\n" })
  local url, requests = h.fake_llm(script(adapter, shell and shell(root)), { only_with_tools = true })
  h.setup(url, {
    agents = { timeout_ms = 120000, external = { claude = claude(adapter, url) } },
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
  vim.cmd("Chimera task --agent claude make greet say Hello, world when name is empty")
  local id
  h.wait_for("claude to end", function()
    for _, a in ipairs(chimera.agents()) do
      if a.state ~= "queued" and a.state ~= "running" then
        id = a.id
        return true
      end
    end
  end, 90000)
  vim.ui.select = select
  return chimera.agent(id), vim.api.nvim_get_current_buf(), root, requests, asked
end

for _, adapter in ipairs(ADAPTERS) do
  h.test(adapter.name .. ": its edit is a proposal under the default preset, nobody asked; <Leader>a, then u", function()
    local agent, buf, root, _, asked = run(adapter, { preset = "sandbox" })
    h.eq(agent.state, "completed", "claude proposed: " .. tostring(agent.error))
    h.eq(#asked, 0, "nobody was asked: " .. vim.inspect(asked))
    h.eq(h.read(root .. "/app.py"), APP, "the file on disk is untouched")
    h.eq(agent.changed_files, { "app.py" })
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
    local asked_edit = vim.tbl_filter(function(e)
      return e.input:find("session/request_permission edit:", 1, true) ~= nil
    end, h.effects({ kind = "acp" }))
    h.eq(#asked_edit, 1, "its permission named the kind it announced: " .. vim.inspect(h.effects({ kind = "acp" })))
    h.eq(asked_edit[1].output, "ok")
  end)

  h.test(adapter.name .. ": its shell runs confined, and what the sandbox refused is shown", function()
    local home = vim.uv.os_homedir()
    local shell = function(root)
      return ("cat app.py | wc -l; cat %s/.env; ls %s; echo owned > %s/app.py"):format(root, home, root)
    end
    local agent, _, root, requests = run(adapter, { preset = "developer", commands = { "cat", "wc", "ls" } }, shell)
    h.eq(agent.state, "completed", "claude proposed: " .. tostring(agent.error))
    h.eq(h.read(root .. "/app.py"), APP, "the project's file is untouched")
    local sent = h.read(requests) or ""
    h.truthy(not sent:find("hunter2", 1, true), "the secret never reached the model")
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
      (agent.summary or ""):find("the sandbox refused 3 accesses outside its folder", 1, true),
      "the summary says so: " .. tostring(agent.summary)
    )
  end)
end

h.finish()
