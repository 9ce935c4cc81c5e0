-- The core loop in a real Neovim: spawn -> ghost text -> accept/reject.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local SRC = "def parse_config(path):\n    return {}\n\n\ndef other():\n    pass\n"
local PROGRAM = table.concat({
  "```python",
  "src = read_file('app.py')",
  "src = src.replace('def parse_config(path):\\n', 'def parse_config(path):\\n    \"\"\"Parse the config file.\"\"\"\\n')",
  "write_file('app.py', src)",
  "submit_result('Added a docstring to parse_config', ['app.py'])",
  "```",
}, "\n")

-- The sample project with app.py open, an agent's program ready to serve.
local function open_app()
  local root = h.project({ ["app.py"] = SRC })
  local url = h.fake_llm({ { text = PROGRAM } })
  h.setup(url)
  vim.cmd.edit("app.py")
  return root, vim.api.nvim_get_current_buf()
end

local function ghost_lines(buf)
  local out = {}
  for _, m in ipairs(require("chimera.ghost").extmarks(buf)) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      -- The proposal's added lines, not its note (on a line of its own
      -- where the end of the line has no room for it).
      if vl[1][2] == "ChimeraAdded" then
        table.insert(out, vl[1][1])
      end
    end
  end
  return out
end

h.test("spawn shows ghost text; accept edits the buffer as one undoable change", function()
  local root, buf = open_app()
  local proposed, accepted = h.user_events("ChimeraProposal"), h.user_events("ChimeraAccepted")
  local id = chimera.spawn("add a docstring to parse_config")
  h.eq(chimera.agent(id).state, "queued", "state right after spawn")
  h.eq(chimera.wait(id, 20000), "completed", "final state")
  h.wait_for("ghost text", function()
    return #ghost_lines(buf) > 0
  end)
  h.eq(ghost_lines(buf), { '    """Parse the config file."""' }, "ghost lines")
  h.eq((proposed[1] or {}).id, id, "User ChimeraProposal")
  h.eq(chimera.agent(id).summary, "Added a docstring to parse_config", "summary")
  h.eq(chimera.agent(id).changed_files, { "app.py" }, "changed files")
  h.eq(#chimera.proposals({ bufnr = buf }), 1, "proposals for the buffer")
  h.eq(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n", SRC, "buffer untouched before accept")

  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  -- The accept is said, with what undoes it.
  h.wait_for_notice("into the buffer, not yet written (u undoes it, :w writes it)", function()
    vim.cmd("execute \"normal \\<Plug>(chimera-accept)\"")
  end)
  h.wait_for("accept", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("the buffer edit", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == '    """Parse the config file."""'
  end)
  -- The core's messages may arrive in separate batches: wait for each.
  h.wait_for("User ChimeraAccepted", function()
    return (accepted[1] or {}).id == id
  end)
  h.wait_for("ghost text gone", function()
    return #require("chimera.ghost").extmarks(buf) == 0
  end)
  h.eq(h.read(root .. "/app.py"), SRC, "disk untouched: the buffer is the ground truth")
  -- `u` as a person presses it: the buffer is restored and the agent is
  -- shown undone; redo shows it accepted again.
  h.wait_for_notice(("the accept of %s is undone in"):format(id), function()
    vim.api.nvim_feedkeys("u", "x", false)
  end)
  h.eq(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n", SRC, "u restores the buffer")
  vim.cmd("Chimera agents")
  local function listed()
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  end
  h.wait_for("undone in the agents window", function()
    return listed():find(id .. "  undone", 1, true)
  end)
  vim.cmd("close")
  -- The core keeps it too, for every client (CLI, API, dashboard).
  h.wait_for("the core's record undone", function()
    return chimera.agent(id).undone == true and chimera.agent(id).state == "accepted"
  end)
  h.wait_for_notice(("the accept of %s is back in"):format(id), function()
    vim.api.nvim_feedkeys(vim.keycode("<C-r>"), "x", false)
  end)
  vim.cmd("Chimera agents")
  h.wait_for("accepted again in the agents window", function()
    return listed():find(id .. "  accepted", 1, true)
  end)
  vim.cmd("close")
  h.wait_for("the core's record redone", function()
    return chimera.agent(id).undone == false
  end)
end)

h.test("a key pressed before the core is up waits for it, then acts", function()
  local root = h.project({ ["app.py"] = SRC })
  h.setup(h.fake_llm({ { text = PROGRAM } }), { ui = { autostart = false } })
  vim.cmd.edit("app.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("add a docstring to parse_config")
  h.eq(chimera.wait(id, 20000), "completed", "the proposal waits")
  chimera.stop()
  -- As after a restart of Neovim: nothing runs, the proposal is in the
  -- store. The key is pressed at once, as a person does.
  h.eq(chimera.status().root, nil, "stopped")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd("execute \"normal \\<Plug>(chimera-accept)\"")
  h.wait_for("the accept", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == '    """Parse the config file."""'
  end)
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.eq(h.read(root .. "/app.py"), SRC, "the buffer changed, not the disk")
end)

h.test("reject discards the proposal and changes nothing", function()
  local root, buf = open_app()
  local rejected = h.user_events("ChimeraRejected")
  local id = chimera.spawn("add a docstring to parse_config")
  h.eq(chimera.wait(id, 20000), "completed", "final state")
  h.wait_for("ghost text", function()
    return #ghost_lines(buf) > 0
  end)
  h.wait_for_notice(("rejected %s; nothing was changed"):format(id), function()
    vim.cmd("Chimera reject " .. id)
  end)
  h.wait_for("reject", function()
    return chimera.agent(id).state == "rejected"
  end)
  h.wait_for("User ChimeraRejected", function()
    return (rejected[1] or {}).id == id
  end)
  h.wait_for("ghost text gone", function()
    return #require("chimera.ghost").extmarks(buf) == 0
  end)
  h.eq(vim.bo[buf].modified, false, "buffer unmodified")
  h.eq(h.read(root .. "/app.py"), SRC, "disk untouched")
  -- Its conversation says what it was asked, what its model replied
  -- (from the effect log: Chimera's own agents keep no transcript) and
  -- where the rest of its work is.
  vim.cmd("Chimera chat --agent " .. id)
  local function view()
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  end
  h.truthy(view():find("» add a docstring to parse_config", 1, true), view())
  h.wait_for("its model's reply in the view", function()
    return view():find("▸ the model, ", 1, true) and view():find("submit_result(", 1, true)
  end, 5000)
  h.truthy(view():find(":Chimera calls " .. id, 1, true) and not view():find("nothing said", 1, true), view())
  vim.cmd("bwipeout")
end)

h.test("accepting a file that is not loaded writes it on disk", function()
  local root = h.project({ ["app.py"] = SRC, ["notes.txt"] = "x\n" })
  local url = h.fake_llm({ { text = PROGRAM } })
  h.setup(url)
  vim.cmd.edit("notes.txt")
  local id = chimera.spawn("add a docstring to parse_config", { file = root .. "/app.py" })
  h.eq(chimera.wait(id, 20000), "completed", "final state")
  h.wait_for_notice("written to 1 file(s) on disk (:Chimera rollback undoes it)", function()
    chimera.accept(id)
  end)
  h.wait_for("accept", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.truthy(h.read(root .. "/app.py"):find('"""Parse the config file."""', 1, true), "file on disk changed")
end)

h.test("a failing LLM ends the agent failed with the reason, Neovim responsive", function()
  h.project({ ["app.py"] = SRC })
  local url = h.fake_llm({ { status = 500, body = "model exploded" } })
  h.setup(url)
  local id = chimera.spawn("anything")
  h.eq(chimera.wait(id, 20000), "failed", "final state")
  h.truthy(chimera.agent(id).error:find("model exploded", 1, true), "error names the cause")
  h.eq(vim.fn.eval("1 + 1"), 2, "Neovim still answers")
end)

h.test("the human typing elsewhere rebases the proposal; accept keeps both", function()
  local root, buf = open_app()
  local id = chimera.spawn("add a docstring to parse_config")
  h.eq(chimera.wait(id, 20000), "completed", "final state")
  vim.api.nvim_buf_set_lines(buf, 5, 6, false, { "    return 42" })
  h.wait_for("the rebase", function()
    local p = chimera.proposals()[1]
    return p and p.files[1].hunks[1] and vim.deep_equal(p.files[1].hunks[1].new_lines, { '    """Parse the config file."""' })
      and #vim.tbl_filter(function(x) return x.id == id end, chimera.proposals()) == 1
  end)
  vim.wait(200)
  chimera.accept(id)
  h.wait_for("accept", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("the buffer edit", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == '    """Parse the config file."""'
  end)
  h.eq(vim.api.nvim_buf_get_lines(buf, 6, 7, false)[1], "    return 42", "the human's edit survives")
  h.eq(h.read(root .. "/app.py"), SRC, "disk untouched")
end)

h.test("typing exactly what the agent proposed settles the proposal, said so, not accepted", function()
  local root, buf = open_app()
  local accepted = h.user_events("ChimeraAccepted")
  local id = chimera.spawn("add a docstring to parse_config")
  h.eq(chimera.wait(id, 20000), "completed", "final state")
  h.wait_for("ghost text", function()
    return #ghost_lines(buf) > 0
  end)
  h.wait_for_notice("your text already holds every change it made", function()
    vim.api.nvim_buf_set_lines(buf, 1, 1, false, { '    """Parse the config file."""' })
  end)
  h.wait_for("the agent to end", function()
    return chimera.agent(id).state == "settled"
  end)
  h.wait_for("the ghost text to go", function()
    return #ghost_lines(buf) == 0 and #chimera.proposals() == 0
  end)
  h.eq(#accepted, 0, "nobody accepted anything")
  h.eq(h.read(root .. "/app.py"), SRC, "disk untouched: the human has not saved")
end)

h.test(":Chimera completes subcommands and rejects unknown ones", function()
  h.project({ ["app.py"] = SRC })
  local names = vim.fn.getcompletion("Chimera ", "cmdline")
  h.truthy(vim.tbl_contains(names, "task") and vim.tbl_contains(names, "accept"), "subcommands completed")
  -- Every flag, and a flag's values after it.
  local function completes(line)
    return vim.fn.getcompletion(line, "cmdline")
  end
  h.eq(completes("Chimera accept --"), { "--hunk" })
  h.eq(completes("Chimera diff --"), { "--split" })
  h.eq(completes("Chimera rollback --"), { "--dry-run" })
  h.eq(completes("Chimera task --"), { "--agent", "--code", "--tools" })
  h.eq(completes("Chimera effects --kind "), { "a2a", "acp", "command", "llm", "mcp", "network" })
  h.eq(completes("Chimera effects --kind acp --"), { "--since" }, "a flag given is not offered again")
  h.eq(completes("Chimera chat --"), { "--agent", "--clear", "--free" })
  h.eq(completes("Chimera remora enable --"), { "--yes" })
  assert(chimera.setup({ agents = { external = { opencode = { command = { "opencode", "acp" } } } } }))
  h.eq(completes("Chimera task --agent "), { "opencode" }, "the configured ACP agents")
  local msg
  local orig = vim.notify
  vim.notify = function(m)
    msg = m
  end
  vim.cmd("Chimera frobnicate")
  vim.notify = orig
  h.truthy(msg and msg:find("unknown subcommand", 1, true), "clear error")
end)

h.test("setup() reports bad options clearly and is safe to call twice", function()
  local msg
  local orig = vim.notify
  vim.notify = function(m)
    msg = m
  end
  local ok = chimera.setup({ llm = { provider = "gpt", modle = "x" } })
  vim.notify = orig
  h.eq(ok, false, "setup refuses")
  h.truthy(msg:find("llm.provider", 1, true) and msg:find("llm.modle", 1, true), "both problems named: " .. msg)
  h.eq(chimera.setup({}), true, "first")
  h.eq(chimera.setup({}), true, "second")
end)

h.test("llm.edit_forms: per-model forms are checked and reach the core as a map", function()
  local config = require("chimera.config")
  local _, err = config.resolve({ llm = { edit_forms = { ["*0.5b*"] = "prose" } } })
  h.truthy(err and err:find("llm.edit_forms", 1, true) and err:find("definitions", 1, true), tostring(err))
  _, err = config.resolve({ llm = { edit_forms = { "program" } } })
  h.truthy(err and err:find("keyed by model names", 1, true), tostring(err))
  local empty = vim.json.decode(config.to_json(config.resolve({})))
  h.eq(vim.json.encode(empty.llm.edit_forms), "{}", "an empty map stays an object")
  local resolved = config.resolve({ llm = { edit_forms = { ["*0.5b*"] = "program" } } })
  h.eq(vim.json.decode(config.to_json(resolved)).llm.edit_forms, { ["*0.5b*"] = "program" })
  h.eq(chimera.setup({ llm = { edit_forms = { ["*0.5b*"] = "program" } } }), true, "the core takes it")
end)

h.test("llm.options, extra_body, headers and keep_alive are checked and reach an Ollama server", function()
  local config = require("chimera.config")
  local function refused(opts, want)
    local _, err = config.resolve({ llm = opts })
    h.truthy(err and err:find(want, 1, true), want .. " in: " .. tostring(err))
  end
  refused({ extra_body = { model = "other" } }, "Chimera sets `model` itself")
  refused({ extra_body = { keep_alive = 1 } }, "use llm.keep_alive")
  refused({ options = { 1, 2 } }, "`llm.options` must be a table of fields by name")
  refused({ headers = { ["api-key"] = "a\nb" } }, "on one line")
  refused({ headers = { ["bad name"] = "x" } }, "is not a header name")
  refused({ keep_alive = {} }, "`llm.keep_alive` must be a duration")
  local empty = vim.json.decode(config.to_json(config.resolve({})))
  h.eq(vim.json.encode(empty.llm.options), "{}", "an empty map stays an object")
  h.eq(empty.llm.keep_alive, "30m")

  h.project({ ["calc.py"] = "def add(a, b):\n    return a - b\n" })
  local url, log = h.fake_llm({ { text = "def add(a, b):\n    return a + b\n" } })
  h.setup(url, {
    llm = {
      provider = "ollama",
      url = url,
      context_tokens = 4096,
      keep_alive = false,
      options = { top_k = 5 },
      extra_body = { think = false },
      headers = { ["X-Title"] = "chimera tests" },
      edit_form = "definitions",
    },
  })
  vim.cmd.edit("calc.py")
  local id = chimera.spawn("fix add")
  chimera.wait(id, 15000)
  local body = vim.json.decode(vim.split(h.read(log), "\n", { trimempty = true })[1])
  h.eq(body.options.num_ctx, 4096, "Ollama is asked for the window prompts are sized to")
  h.eq(body.options.top_k, 5)
  h.eq(body.think, false)
  h.eq(body.keep_alive, nil, "keep_alive = false leaves Ollama's default")
end)

h.test("agents' progress reaches fidget-style consumers: LspProgress, vim.lsp.status(), User ChimeraProgress", function()
  h.project({ ["calc.py"] = "def add(a, b):\n    return a - b\n" })
  local program = "```python\nsrc = read_file('calc.py')\nwrite_file('calc.py', src.replace('a - b', 'a + b'))\nsubmit_result('add adds', ['calc.py'])\n```"
  h.setup((h.fake_llm({ { text = program, chunk_delay = 0.02 } })))
  local lsp_events, statuses = {}, {}
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == "chimera" then
        table.insert(lsp_events, ev.data.params.value)
        -- What a statusline component reads (it takes what it shows).
        table.insert(statuses, vim.lsp.status())
      end
    end,
  })
  local ours = h.user_events("ChimeraProgress")
  vim.cmd.edit("calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local id = chimera.spawn("fix add")
  h.eq(chimera.wait(id, 20000), "completed")
  h.wait_for("the end of its progress", function()
    return #lsp_events > 0 and lsp_events[#lsp_events].kind == "end"
  end)
  h.eq(lsp_events[1].kind, "begin", "it begins")
  h.eq(lsp_events[1].title, "Chimera")
  h.eq(lsp_events[1].message, "fix add", "with its task")
  h.truthy(table.concat(statuses, "|"):find("Chimera: ", 1, true), "vim.lsp.status(): " .. table.concat(statuses, "|"))
  h.eq(lsp_events[#lsp_events].message, "proposal ready: add adds")
  h.eq(ours[#ours].done, true)
  h.eq(ours[#ours].state, "completed")
  h.eq(ours[#ours].id, id)
  local client = vim.lsp.get_client_by_id(require("chimera.progress").client_id())
  h.eq(client.name, "chimera")
  h.eq(#vim.lsp.get_clients({ bufnr = buf, name = "chimera" }), 0, "it attaches to no buffer")
  chimera.stop()
  h.wait_for("the client to stop", function()
    return #vim.lsp.get_clients({ name = "chimera" }) == 0
  end)
end)

h.test(":Chimera model picks from the server's models; a working agent keeps its own", function()
  h.project({ ["calc.py"] = "def add(a, b):\n    return a - b\n" })
  local program = "```python\nsrc = read_file('calc.py')\nwrite_file('calc.py', src.replace('a - b', 'a + b'))\nsubmit_result('add adds', ['calc.py'])\n```"
  local url, log = h.fake_llm({ { text = program, chunk_delay = 0.05 }, { text = program } }, { models = { "fake-model", "fake-model-b" } })
  h.setup(url, { llm = { roles = { chat = "fake-model" } } })
  local _, err = require("chimera.config").resolve({ llm = { roles = { review = "x" } } })
  h.truthy(err and err:find("unknown role", 1, true), tostring(err))
  vim.cmd.edit("calc.py")
  -- Typed right after opening the file, before any picker ran: the
  -- configured models at once, the server's soon after.
  h.truthy(vim.tbl_contains(vim.fn.getcompletion("Chimera model ", "cmdline"), "fake-model"), "the configured model")
  h.wait_for("the server's models complete", function()
    return vim.tbl_contains(vim.fn.getcompletion("Chimera model ", "cmdline"), "fake-model-b")
  end)
  -- Switched at once after the task, as a person types: the task keeps
  -- the model it was given with.
  local first = chimera.spawn("fix add")
  local select, offered = vim.ui.select, nil
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    on_choice("fake-model-b")
  end
  vim.cmd("Chimera model")
  h.wait_for("the list", function()
    return offered ~= nil
  end)
  vim.ui.select = select
  h.eq(offered, { "fake-model  (current)", "fake-model-b" })
  h.eq(require("chimera.state").config.llm.model, "fake-model-b")
  h.eq(chimera.wait(first, 20000), "completed", "the working agent went on")
  local second = chimera.spawn("fix add again")
  chimera.wait(second, 20000)
  local models = {}
  for _, line in ipairs(vim.split(h.read(log), "\n", { trimempty = true })) do
    table.insert(models, vim.json.decode(line).model)
  end
  h.eq(models, { "fake-model", "fake-model-b" }, "each agent asked its model")
  h.truthy(vim.tbl_contains(vim.fn.getcompletion("Chimera model ", "cmdline"), "fake-model-b"), "names complete")
end)

h.test("a new test file in which the project's runner finds no test goes back to the model", function()
  local root = h.project({ ["textutils.py"] = "def slugify(text):\n    return text.lower().replace(' ', '-')\n" })
  local head = "import os\nimport sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))\nfrom textutils import slugify\n"
  local pytest_style = head .. "\n\ndef test_slugify():\n    assert slugify('A b') == 'a-b'\n"
  local unittest_style = head .. "import unittest\n\n\nclass TestSlugify(unittest.TestCase):\n    def test_slugify(self):\n        self.assertEqual(slugify('A b'), 'a-b')\n"
  local url, log = h.fake_llm({
    { text = "```python\n" .. pytest_style .. "```" },
    { text = "```python\n" .. unittest_style .. "```" },
  })
  h.setup(url)
  -- Which runner the project's tests get here decides which test it finds.
  local pytest = vim.system({ "python3", "-c", "import pytest" }):wait().code == 0
  local id = chimera.spawn("create tests/test_textutils.py with a test for slugify")
  h.eq(chimera.wait(id, 30000), "completed", "final state: " .. tostring(chimera.agent(id).error))
  local requests = vim.split(h.read(log) or "", "\n", { trimempty = true })
  if pytest then
    h.eq(#requests, 1, "pytest finds the first file's test")
    return
  end
  h.eq(#requests, 2, "asked again")
  h.truthy(requests[2]:find("has no test that unittest finds", 1, true), requests[2]:sub(-1500))
  h.truthy(chimera.agent(id).summary:find("tests passed", 1, true), chimera.agent(id).summary)
  h.eq(h.read(root .. "/tests/test_textutils.py"), nil, "nothing on disk before an accept")
end)

h.finish()
