-- The real opencode (npm `opencode-ai`, installed by
-- scripts/install-opencode.sh) as an ACP agent, driven by a scripted model
-- on 127.0.0.1 that makes ordinary tool calls, so that opencode's own
-- tools run: with its default permissions (it writes files itself) and
-- with `edit = "ask"`, the file on disk stays as it was, the edit arrives
-- as a proposal, <Leader>a takes it and u undoes it. Told to write the
-- project's real path or read its .env, it is refused by the kernel.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local OPENCODE = h.repo .. "/.deps/opencode/node_modules/.bin/opencode"
assert(vim.fn.executable(OPENCODE) == 1, "opencode is not installed: scripts/install-opencode.sh (make test runs it)")

local APP = 'def greet(name):\n    return "Hello, " + name\n'
local FIXED = 'def greet(name):\n    return "Hello, " + (name or "world")\n'

--- opencode as `agents.external.opencode`, talking to the model at `url`,
--- its state in a folder of its own; `permission`: its own option.
local function opencode(url, permission)
  local home = vim.fn.tempname()
  vim.fn.mkdir(home, "p")
  local config = {
    ["$schema"] = "https://opencode.ai/config.json",
    provider = {
      fake = {
        npm = "@ai-sdk/openai-compatible",
        name = "fake",
        options = { baseURL = url .. "/v1" },
        models = { ["fake-model"] = { name = "fake-model", tool_call = true } },
      },
    },
    model = "fake/fake-model",
    autoupdate = false,
    share = "disabled",
    permission = permission,
  }
  return {
    command = { OPENCODE, "acp" },
    env = {
      OPENCODE_CONFIG_CONTENT = vim.json.encode(config),
      XDG_DATA_HOME = home .. "/data",
      XDG_CONFIG_HOME = home .. "/config",
      XDG_CACHE_HOME = home .. "/cache",
      XDG_STATE_HOME = home .. "/state",
    },
    writable = { home },
  }
end

--- Runs `task` by opencode on app.py, open and typed into at once, with
--- the model answering `script`; the agent once it ended, and the buffer.
local function run(script, permission, task)
  local root = h.project({ ["app.py"] = APP, [".env"] = "API_KEY=hunter2\n" })
  local url, requests = h.fake_llm(script, { only_with_tools = true })
  h.setup(url, {
    agents = { timeout_ms = 120000, external = { opencode = opencode(url, permission) } },
    capabilities = { preset = "sandbox" },
  })
  vim.cmd.edit("app.py")
  vim.cmd("Chimera task --agent opencode " .. task)
  local done = h.ended_agent(90000)
  return done, vim.api.nvim_get_current_buf(), root, requests
end

local WRITE = { tool_calls = { { name = "write", arguments = { filePath = "app.py", content = FIXED } } } }

local function accept_and_undo(agent, buf, root)
  h.eq(agent.state, "completed", "opencode proposed: " .. tostring(agent.error))
  h.eq(h.read(root .. "/app.py"), APP, "the file on disk is untouched")
  h.wait_for("its ghost text", function()
    return #require("chimera.ghost").extmarks(buf) > 0
  end)
  vim.api.nvim_feedkeys(vim.keycode("<Leader>a"), "x", false)
  h.wait_for("the accept in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == '    return "Hello, " + (name or "world")'
  end)
  h.wait_for("the agent accepted", function()
    return chimera.agent(agent.id).state == "accepted"
  end)
  vim.api.nvim_feedkeys("u", "x", false)
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], '    return "Hello, " + name', "u undoes it")
  h.eq(h.read(root .. "/app.py"), APP, "and the disk waits for :write")
end

h.test("opencode writing a file itself: a proposal, accepted with <Leader>a, undone with u", function()
  local agent, buf, root = run({ WRITE, { text = "Done." } }, nil, "make greet say Hello, world when name is empty")
  accept_and_undo(agent, buf, root)
  local effects = h.effects({ kind = "acp" })
  local taken = vim.tbl_filter(function(e)
    return e.input:find("folder changed app.py", 1, true) ~= nil
  end, effects)
  h.eq(#taken, 1, "read back from its folder: " .. vim.inspect(effects))
end)

h.test('opencode with edit = "ask": asked through ACP, still a proposal, never the file', function()
  local agent, buf, root = run({ WRITE, { text = "Done." } }, { edit = "ask" }, "make greet say Hello, world")
  local asked = vim.tbl_filter(function(e)
    return e.input:find("session/request_permission", 1, true) ~= nil
  end, h.effects({ kind = "acp" }))
  h.truthy(#asked >= 1, "opencode asked")
  accept_and_undo(agent, buf, root)
end)

h.test("opencode told to write the project's real path or read its .env is refused by the kernel", function()
  -- The model names paths it cannot know from the prompt: as a prompt
  -- injection in the project would.
  local script = function(root)
    return {
      -- Its own shell, which its permissions allow: only the kernel is left.
      {
        tool_calls = {
          {
            name = "bash",
            arguments = {
              command = ("echo owned > %s/app.py; cat %s/.env; echo owned > app.py"):format(root, root),
              description = "Fix it",
            },
          },
        },
      },
      { text = "Done." },
    }
  end
  local root = h.project({ ["app.py"] = APP, [".env"] = "API_KEY=hunter2\n" })
  local url, requests = h.fake_llm(script(root), { only_with_tools = true })
  -- opencode asks before it touches a path outside its folder; a tired
  -- human allows everything: only the kernel is left to say no.
  h.setup(url, {
    agents = { timeout_ms = 120000, external = { opencode = opencode(url) } },
    capabilities = { preset = "developer", commands = { "bash", "sh" }, ask = true },
  })
  local select, asked = vim.ui.select, {}
  vim.ui.select = function(_, opts, on_choice)
    table.insert(asked, opts.prompt)
    vim.schedule(function()
      on_choice("Allow")
    end)
  end
  vim.cmd.edit("app.py")
  local id = chimera.spawn("fix greet", { agent = "opencode" })
  local state = chimera.wait(id, 90000)
  vim.ui.select = select
  h.truthy(#asked >= 1, "opencode asked, and was allowed")
  h.eq(state, "completed", "what it wrote in its own folder is its proposal: " .. tostring(chimera.agent(id).error))
  h.eq(h.read(root .. "/app.py"), APP, "the project's file is untouched")
  local sent = h.read(requests) or ""
  h.truthy(not sent:find("hunter2", 1, true), "the secret never reached the model")
  h.truthy(sent:find("Permission denied", 1, true), "the kernel's refusal went back to the model")
  local refused = {}
  for _, e in ipairs(h.effects({ kind = "acp" })) do
    refused[#refused + 1] = e.input:match("^refused by the sandbox: (.*)$")
  end
  h.eq(refused, { root .. "/app.py", root .. "/.env" }, "and is shown")
  h.eq(chimera.agent(id).changed_files, { "app.py" }, "its write by a relative path is the proposal")
end)

h.finish()
