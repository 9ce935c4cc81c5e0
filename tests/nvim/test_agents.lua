-- The real Gemini CLI (`--acp`) and Codex (its ACP adapter), installed from
-- npm by scripts/install-agents.sh, each driven by a scripted model on
-- 127.0.0.1 that answers in its provider's wire format with tool calls
-- (Gemini's generateContent; OpenAI's Responses API, Codex's freeform
-- apply_patch included), so each agent's own tools run. Under the default
-- preset the edit is a proposal, nobody is asked, the disk waits for
-- <Leader>a and u undoes it; a shell reading the project's .env and the
-- home is refused by the kernel, shown, and no secret reaches the model.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local APP = 'def greet(name):\n    return "Hello, " + name\n'
local OLD, NEW = '"Hello, " + name', '"Hello, " + (name or "world")'
local FIXED = APP:gsub(vim.pesc(OLD), NEW)

local AGENTS = {
  {
    name = "gemini",
    bin = h.repo .. "/.deps/gemini/node_modules/.bin/gemini",
    spec = function(bin, url)
      return {
        command = { bin, "--acp" },
        env = { GOOGLE_GEMINI_BASE_URL = url, GEMINI_API_KEY = "test-key" },
      }
    end,
    edit = { name = "write_file", arguments = { file_path = "{cwd}/app.py", content = FIXED } },
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
      name = "apply_patch",
      input = ("*** Begin Patch\n*** Update File: app.py\n@@\n def greet(name):\n-    return %s\n+    return %s\n*** End Patch\n"):format(
        OLD,
        NEW
      ),
    },
    shell = function(line)
      return { name = "exec_command", arguments = { cmd = line } }
    end,
    shows_output = true,
  },
}
for _, a in ipairs(AGENTS) do
  assert(vim.fn.executable(a.bin) == 1, a.name .. " is not installed: scripts/install-agents.sh (make test runs it)")
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
  local id
  h.wait_for(agent.name .. " to end", function()
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

for _, agent in ipairs(AGENTS) do
  h.test(agent.name .. ": its edit is a proposal under the default preset, nobody asked; <Leader>a, then u", function()
    local done, buf, root, _, asked = run(agent, { preset = "sandbox" }, function()
      return { agent.edit }
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
  end)

  h.test(agent.name .. ": its shell reaches nothing of the user's, and what was refused is shown", function()
    local home = vim.uv.os_homedir()
    local done, _, root, requests = run(agent, { preset = "developer", commands = { "cat", "ls" } }, function(root)
      return { agent.edit, agent.shell(("cat %s/.env; ls %s"):format(root, home)) }
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
    h.truthy(
      (done.summary or ""):find("the sandbox refused 2 accesses outside its folder", 1, true),
      "the summary says so: " .. tostring(done.summary)
    )
  end)
end

h.finish()
