-- Tool mode through the editor: `:Chimera task --tools` runs the JSON
-- tool loop and its change arrives as a normal proposal.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

-- Resolved before any test changes the current directory.
local MCP_SERVER = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/mcp_server.py"

local APP = "def parse_config(path):\n    return {}\n"
local NEW = "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n"

h.test(":Chimera task --tools reaches a proposal through tool calls", function()
  h.project({ ["app.py"] = APP })
  local url, log = h.fake_llm({
    { text = vim.json.encode({ tool = "read_file", args = { path = "app.py" } }) },
    { text = "```json\n" .. vim.json.encode({ tool = "write_file", args = { path = "app.py", content = NEW } }) .. "\n```" },
    { text = vim.json.encode({ tool = "submit_result", args = { summary = "docstring", changed_files = { "app.py" } } }) },
  })
  h.setup(url, { agents = { tool_calls = "text" } })
  vim.cmd.edit("app.py")
  vim.cmd("Chimera task --tools add a docstring to parse_config")
  local id = chimera.agents()[1].id
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.eq(chimera.agent(id).summary, "docstring", "summary")
  h.wait_for("the ghost text", function()
    return #require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf()) == 1
  end)
  chimera.accept(id)
  h.wait_for("the accept", function()
    return vim.api.nvim_buf_get_lines(0, 1, 2, false)[1] == '    """Parse the config."""'
  end)
  h.truthy((h.read(log) or ""):find("response_format", 1, true), "constrained JSON was asked for")
end)

h.test("the seed's call shape, {tool_to_use, parameters}, reaches a proposal too", function()
  h.project({ ["app.py"] = APP })
  local url = h.fake_llm({
    { text = vim.json.encode({ tool_to_use = "read_file", parameters = { path = "app.py" } }) },
    { text = vim.json.encode({ tool_to_use = "write_file", parameters = { path = "app.py", content = NEW } }) },
    { text = vim.json.encode({ tool_to_use = "submit_result", parameters = { summary = "docstring, seed style", changed_files = { "app.py" } } }) },
  })
  h.setup(url, { agents = { tool_calls = "text" } })
  vim.cmd.edit("app.py")
  local id = chimera.spawn("add a docstring to parse_config", { mode = "tools" })
  h.eq(chimera.wait(id, 20000), "completed", tostring((chimera.agent(id) or {}).error))
  h.eq(chimera.agent(id).summary, "docstring, seed style")
  h.wait_for("the ghost text", function()
    return #require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf()) == 1
  end)
  chimera.reject(id)
end)

h.test(":Chimera chat --free: streamed answers, folded tool calls, proposals, kept across restarts", function()
  h.project({ ["app.py"] = APP })
  local url, log = h.fake_llm({
    -- A question to a small model is answered in prose, streamed.
    { text = "It returns an empty dict." },
    -- A change request runs the tool loop.
    { text = vim.json.encode({ tool = "read_file", args = { path = "app.py" } }) },
    { text = vim.json.encode({ tool = "write_file", args = { path = "app.py", content = NEW } }) },
    { text = vim.json.encode({ tool = "submit_result", args = { summary = "Added a docstring", changed_files = { "app.py" } } }) },
  })
  h.setup(url, { agents = { tool_calls = "text" } })
  vim.cmd.edit("app.py")
  local code_win = vim.api.nvim_get_current_win()
  vim.cmd("Chimera chat --free what does parse_config return?")
  local buf = vim.api.nvim_get_current_buf()
  h.eq(vim.api.nvim_buf_get_name(buf):match("chimera://chat/free$") ~= nil, true, "the chat buffer")
  local function text()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  end
  h.wait_for("the answer", function()
    return text():find("Agent: It returns an empty dict.", 1, true) ~= nil
  end)
  h.truthy(text():find("You: what does parse_config return?", 1, true), text())
  -- The question came with the file the human was in.
  h.truthy((h.read(log) or ""):find("The human is in app.py", 1, true), "the file went with the question")
  -- Typed in the chat buffer: a change arrives as a proposal, not as an edit.
  require("chimera.chat").send("free", "add a docstring to it")
  h.wait_for("the proposal", function()
    return text():find("-- Proposal ", 1, true) ~= nil
  end)
  local t = text()
  h.truthy(t:find('▸ read_file {"path":"app.py"}  ✓', 1, true), t)
  h.truthy(t:find("Agent: Added a docstring", 1, true), t)
  -- The tool's result is there, folded.
  local row = vim.fn.search("│ def parse_config", "n")
  h.truthy(row > 0, t)
  h.truthy(vim.fn.foldclosed(row) > 0, "the result is folded")
  vim.api.nvim_set_current_win(code_win)
  h.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false)[2], "    return {}", "the buffer is untouched")
  h.wait_for("the ghost text", function()
    return #require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf()) == 1
  end)
  -- After a restart the conversation is still there.
  chimera.stop()
  h.setup(url, { agents = { tool_calls = "text" } })
  vim.cmd("Chimera chat --free")
  h.wait_for("the history", function()
    return #chimera.chat_entries() >= 6
  end)
  h.truthy(text():find("Agent: It returns an empty dict.", 1, true), text())
  vim.cmd("Chimera chat --clear")
  h.wait_for("a cleared chat", function()
    return #chimera.chat_entries() == 0
  end)
end)

h.test("the chat prompt: several lines, #selection, #buffer and @file go with the message; secrets do not", function()
  h.project({ ["app.py"] = APP, ["util.py"] = "def helper(x):\n    return x * 2\n", [".env"] = "TOKEN=hunter2\n" })
  local url, log = h.fake_llm({ { text = "It parses the config." } })
  h.setup(url, { agents = { tool_calls = "text" } })
  vim.cmd.edit("app.py")
  -- Unsaved text, and a selection of line 1.
  vim.api.nvim_buf_set_lines(0, 1, 2, false, { "    return {'unsaved': True}" })
  vim.cmd("normal! Vy")
  vim.cmd("Chimera chat --free")
  local chat_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_feedkeys("i", "x", false)
  local prompt = vim.api.nvim_get_current_buf()
  h.eq(vim.api.nvim_buf_get_name(prompt):match("chimera://prompt/free$") ~= nil, true, "i opens the prompt")
  h.eq(vim.bo[prompt].filetype, "chimera-prompt")
  vim.cmd("stopinsert")
  -- @ completes project files, # the references.
  vim.api.nvim_buf_set_lines(prompt, 0, -1, false, { "see @ut" })
  vim.api.nvim_win_set_cursor(0, { 1, 7 })
  local omni = require("chimera.references").omnifunc
  h.eq(omni(1, ""), 4, "the reference starts at the @")
  h.eq(vim.tbl_map(function(c)
    return c.word
  end, omni(0, "@ut")), { "@util.py" })
  h.eq(vim.tbl_map(function(c)
    return c.word
  end, omni(0, "#s")), { "#selection" })
  -- The blink.cmp and nvim-cmp sources answer as those plugins ask them.
  local blink_items
  require("chimera.completion.blink").new():get_completions({ line = "see @ut", cursor = { 1, 7 } }, function(r)
    blink_items = r.items
  end)
  h.eq(blink_items[1].label, "@util.py")
  h.eq(blink_items[1].textEdit.range.start.character, 4)
  local cmp_items
  require("chimera.completion.cmp").new():complete({ context = { cursor_before_line = "and #buf" } }, function(r)
    cmp_items = r.items
  end)
  h.eq(cmp_items[1].label, "#buffer")
  -- A message of several lines, sent with <C-s>.
  vim.api.nvim_buf_set_lines(prompt, 0, -1, false, {
    "what does #selection do,",
    "given #buffer and @util.py (and @.env)?",
  })
  local warned
  local notify = vim.notify
  vim.notify = function(m)
    warned = m
  end
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  vim.notify = notify
  h.eq(vim.api.nvim_buf_get_lines(prompt, 0, -1, false), { "" }, "the prompt is emptied")
  h.truthy(warned and warned:find("@.env: a secret", 1, true), tostring(warned))
  local function chat_text()
    return table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n")
  end
  h.wait_for("the answer", function()
    return chat_text():find("Agent: It parses the config.", 1, true)
  end)
  h.truthy(chat_text():find("You: what does #selection do,\ngiven #buffer and @util.py (and @.env)?", 1, true), chat_text())
  local sent = h.read(log)
  h.truthy(sent:find("#selection (app.py, lines 1-1):\\n```\\ndef parse_config(path):", 1, true), "#selection went: " .. sent)
  h.truthy(sent:find("#buffer (app.py):\\n```\\ndef parse_config(path):\\n    return {'unsaved': True}", 1, true), "#buffer went, unsaved text included")
  h.truthy(sent:find("@util.py:\\n```\\ndef helper(x):\\n    return x * 2", 1, true), "@util.py went")
  h.truthy(not sent:find("hunter2", 1, true), "the secret did not")
end)

h.test("#buffer and #selection from a secret, a link to one or a file outside the project send nothing", function()
  -- The link's target is a secret no other buffer shows (Neovim would
  -- reuse that buffer for the link, same inode, and the link rule would
  -- never be reached): the link's own name is no secret, so only the link
  -- rule keeps the buffer's text from the model.
  local root = h.project({
    ["app.py"] = APP,
    [".env"] = "TOKEN=hunter2\n",
    ["id_rsa"] = "RSA_KEY_TEXT\n",
    [".env.local"] = "LINKED_TEXT\n",
  })
  vim.uv.fs_symlink(root .. "/.env.local", root .. "/notes.txt")
  local outside = vim.fn.tempname()
  vim.fn.mkdir(outside, "p")
  local f = assert(io.open(outside .. "/creds.py", "w"))
  f:write("OUTSIDE_SECRET = 1\n")
  f:close()
  local script = {}
  for _ = 1, 4 do
    table.insert(script, { text = "It parses the config." })
  end
  local url, log = h.fake_llm(script)
  h.setup(url, { agents = { tool_calls = "text" } })
  for i, file in ipairs({ root .. "/.env", root .. "/id_rsa", root .. "/notes.txt", outside .. "/creds.py" }) do
    -- The person opens the file, selects a line and asks about it at once.
    vim.cmd.edit(file)
    vim.cmd("normal! Vy")
    vim.cmd("Chimera chat --free")
    local chat_buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_feedkeys("i", "x", false)
    local prompt = vim.api.nvim_get_current_buf()
    vim.cmd("stopinsert")
    vim.api.nvim_buf_set_lines(prompt, 0, -1, false, { "explain #buffer and #selection" })
    local warned
    local notify = vim.notify
    vim.notify = function(m)
      warned = m
    end
    vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
    vim.notify = notify
    h.truthy(warned and warned:find("#buffer: ", 1, true) and warned:find("#selection: ", 1, true), file .. ": " .. tostring(warned))
    local ok = pcall(h.wait_for, "answer " .. i, function()
      return table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n"):find("Agent: It parses the config.", 1, true)
    end)
    h.truthy(ok, file .. ": " .. table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n") .. vim.inspect(vim.api.nvim_buf_get_name(chat_buf)))
    vim.cmd("Chimera chat --clear")
    vim.cmd("only")
  end
  -- The server may log a request a moment after it answered it.
  local sent
  h.wait_for("the model's log of the four questions", function()
    sent = h.read(log) or ""
    local _, asked = sent:gsub("explain #buffer", "")
    return asked >= 4
  end)
  for _, leak in ipairs({ "hunter2", "RSA_KEY_TEXT", "LINKED_TEXT", "OUTSIDE_SECRET" }) do
    h.truthy(not sent:find(leak, 1, true), leak .. " was sent: " .. sent)
  end
end)

h.test("system_stats() tells a program the project's disk and the busiest processes", function()
  h.project({ ["app.py"] = APP })
  local program = table.concat({
    "```python",
    "s = system_stats()",
    "log('disk ' + str(s['disk']['total_mb'] > 0) + ' top ' + str(len(s['top_memory'])) + ' ' + str(len(s['top_cpu'])))",
    "write_file('app.py', read_file('app.py').replace('return {}', 'return dict()'))",
    "submit_result('looked around', ['app.py'])",
    "```",
  }, "\n")
  h.setup((h.fake_llm({ { text = program } })))
  vim.cmd.edit("app.py")
  local id = chimera.spawn("make parse_config return dict()")
  h.eq(chimera.wait(id, 20000), "completed", tostring((chimera.agent(id) or {}).error))
  local log = table.concat(chimera.agent(id).log or {}, "\n")
  h.truthy(log:find("disk True top 5 5", 1, true), log)
  chimera.reject(id)
end)

h.test("bad MCP server options are refused with the reason", function()
  local cases = {
    { { s = { command = "python3 srv.py" } }, "non-empty list of strings" },
    { { s = {} }, "set either `command`" },
    { { s = { command = { "x" }, url = "http://h" } }, "set either `command`" },
    { { s = { url = "ftp://h" } }, "http:// or https://" },
    { { ["a.b"] = { url = "http://h" } }, "letters, digits" },
    { { s = { url = "http://h", headers = {} } }, "unknown key `headers`" },
    { { s = { command = { "x" }, env = { A = 1 } } }, "map names to strings" },
  }
  for _, case in ipairs(cases) do
    local ok, err = require("chimera.config").resolve({ mcp = { servers = case[1] } })
    h.eq(ok, nil, vim.inspect(case[1]))
    h.truthy(err:find(case[2], 1, true), err)
  end
end)

h.test("bad A2A peers are refused with the reason; good ones pass", function()
  local cases = {
    { { p = "http://h" }, "must be a table" },
    { { p = { url = "ftp://h" } }, "must be a table" },
    { { ["a b"] = { url = "http://h" } }, "letters, digits" },
    { { p = { url = "http://h", secret = "x" } }, "unknown key `secret`" },
    { { p = { url = "http://h", token = 5 } }, "`token` must be a string" },
  }
  for _, case in ipairs(cases) do
    local ok, err = require("chimera.config").resolve({ a2a = { peers = case[1] } })
    h.eq(ok, nil, vim.inspect(case[1]))
    h.truthy(err:find(case[2], 1, true), err)
  end
  local ok, err = require("chimera.config").resolve({ a2a = { peers = { other = { url = "http://127.0.0.1:9", token = "t" } } } })
  h.truthy(ok, err)
end)

h.test("an MCP tool configured in setup() is called by a tool-mode agent", function()
  local root = h.project({ ["app.py"] = APP })
  local marker = root .. "/../mcp-marker-" .. vim.fn.getpid()
  local url, log = h.fake_llm({
    { text = vim.json.encode({ tool = "t.write_marker", args = { path = marker } }) },
    { text = vim.json.encode({ tool = "write_file", args = { path = "app.py", content = NEW } }) },
    { text = vim.json.encode({ tool = "submit_result", args = { summary = "used mcp", changed_files = { "app.py" } } }) },
  })
  h.setup(url, {
    agents = { tool_calls = "text" },
    mcp = { servers = { t = { command = { "python3", MCP_SERVER }, env = {} } } },
    capabilities = { mcp = { "t.write_marker" } },
  })
  local id = chimera.spawn("add a docstring", { mode = "tools" })
  h.eq(chimera.wait(id, 20000), "completed", "state: " .. tostring(chimera.agent(id).error))
  h.eq(vim.fn.filereadable(marker), 1, "the MCP tool ran")
  os.remove(marker)
  local effects = h.effects({ kind = "mcp" })
  h.eq(#effects, 1, "one MCP effect")
  h.truthy(effects[1].input:find("t.write_marker", 1, true), effects[1].input)
  h.truthy((h.read(log) or ""):find("t.write_marker(path: string)", 1, true), "offered to the model")
end)

h.test(":Chimera calls shows every tool call an agent made, refused ones marked", function()
  h.project({ ["app.py"] = APP, [".env"] = "TOKEN=x\n" })
  local url = h.fake_llm({
    { text = vim.json.encode({ tool = "list_dir", args = { path = "" } }) },
    { text = vim.json.encode({ tool = "read_file", args = { path = ".env" } }) },
    { text = vim.json.encode({ tool = "write_file", args = { path = "app.py", content = NEW } }) },
    { text = vim.json.encode({ tool = "submit_result", args = { summary = "audited", changed_files = { "app.py" } } }) },
  })
  h.setup(url, { agents = { tool_calls = "text" } })
  vim.cmd.edit("app.py")
  vim.cmd("Chimera task --tools add a docstring to parse_config")
  local id = chimera.agents()[1].id
  h.eq(chimera.wait(id, 20000), "completed", tostring((chimera.agent(id) or {}).error))
  vim.cmd("Chimera calls " .. id)
  local buf
  h.wait_for("the calls buffer", function()
    buf = vim.fn.bufnr("chimera://calls")
    return buf > 0 and #vim.api.nvim_buf_get_lines(buf, 0, -1, false) >= 6
  end)
  local lines = vim.api.nvim_buf_get_lines(buf, 2, -1, false)
  h.eq(#lines, 4, table.concat(lines, "\n"))
  h.truthy(lines[1]:find('list_dir(path="")', 1, true), lines[1])
  h.truthy(lines[2]:find("✗", 1, true) and lines[2]:find('read_file(path=".env")', 1, true), lines[2])
  h.truthy(lines[3]:find("content=<", 1, true), "a file's content by its size: " .. lines[3])
  h.truthy(lines[4]:find("submit_result", 1, true), lines[4])
  vim.cmd("close")
  -- From the agents window, `t` on the agent's line.
  vim.cmd("Chimera agents")
  local row
  h.wait_for("the agent's line", function()
    for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
      if l:find(id, 1, true) then
        row = i
        return true
      end
    end
  end)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.api.nvim_feedkeys("t", "x", false)
  h.wait_for("the calls buffer again", function()
    return vim.api.nvim_get_current_buf() == vim.fn.bufnr("chimera://calls")
      and #vim.api.nvim_buf_get_lines(0, 0, -1, false) == 6
  end)
  chimera.reject(id)
end)

h.test("an agent tries a change, checkpoints, breaks it and rolls its own overlay back; your file never moves", function()
  h.project({ ["app.py"] = APP })
  local program = table.concat({
    "```python",
    "src = read_file('app.py')",
    "write_file('app.py', src.replace('    return {}', '    \"\"\"Parse the config.\"\"\"\\n    return {}'))",
    "cp = snapshot('docstring')",
    "write_file('app.py', 'def parse_config(path:\\n')",
    "write_file('scratch.py', 'x = 1\\n')",
    "log(rollback(cp))",
    "submit_result('docstring, after a rollback', ['app.py'])",
    "```",
  }, "\n")
  local url = h.fake_llm({ { text = program } })
  h.setup(url, { llm = { edit_form = "program" }, capabilities = { snapshot = true, rollback = true } })
  vim.cmd.edit("app.py")
  vim.cmd("Chimera task add a docstring to parse_config")
  local id = chimera.agents()[1].id
  h.eq(chimera.wait(id, 20000), "completed", tostring((chimera.agent(id) or {}).error))
  h.truthy(table.concat(chimera.agent(id).log, "\n"):find("as at checkpoint `docstring`", 1, true), vim.inspect(chimera.agent(id).log))
  -- The proposal is the state at the checkpoint: one file, the docstring.
  h.wait_for("the ghost text", function()
    return #require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf()) == 1
  end)
  h.eq(chimera.agent(id).changed_files, { "app.py" }, "only the file as at the checkpoint")
  h.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), vim.split(APP, "\n", { trimempty = true }), "the buffer waits for the accept")
  vim.cmd("Chimera calls " .. id)
  h.wait_for("the calls", function()
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return text:find('snapshot("docstring")', 1, true) and text:find('rollback("docstring")', 1, true)
  end)
  vim.cmd("close")
  chimera.accept(id)
  h.wait_for("the accept", function()
    return vim.api.nvim_buf_get_lines(0, 1, 2, false)[1] == '    """Parse the config."""'
  end)
  h.eq(vim.fn.filereadable("scratch.py"), 0, "what was rolled back never reaches the disk")
  vim.cmd("checkhealth chimera")
  local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout")
  h.truthy(health:find("agents may checkpoint their own changes and roll them back", 1, true), health)
end)

h.test("checkhealth lists the project's rules files agents read for the file in view, never a secret one", function()
  h.project({
    ["AGENTS.md"] = "root rules",
    ["pkg/AGENTS.md"] = "package rules",
    ["pkg/x.py"] = "x = 1\n",
    ["CLAUDE.md"] = "kept from agents",
    [".github/copilot-instructions.md"] = string.rep("y", 2500),
  })
  h.setup((h.fake_llm({ { text = "unused" } })), { capabilities = { secrets = { "CLAUDE.md", ".env*" } } })
  vim.cmd.edit("pkg/x.py")
  vim.cmd("checkhealth chimera")
  local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout")
  h.truthy(health:find("agents read the project's rules in pkg/AGENTS.md (13 characters)", 1, true), health)
  h.truthy(health:find("rules in .github/copilot-instructions.md (1987 characters, 513 more cut: rules are capped)", 1, true), health)
  h.truthy(not health:find("CLAUDE.md", 1, true), "a secret rules file is not listed")
end)

h.test("a code-mode program calls an MCP tool with mcp_call(); the call is in the effect log", function()
  local root = h.project({ ["app.py"] = APP })
  local marker = root .. "/../mcp-code-marker-" .. vim.fn.getpid()
  local program = table.concat({
    "```python",
    ('said = mcp_call("t", "write_marker", {"path": %q})'):format(marker),
    "try:",
    '    mcp_call("t", "echo", {"text": "not allowed"})',
    "except Exception as e:",
    "    log(str(e))",
    "src = read_file('app.py')",
    "write_file('app.py', src.replace('def parse_config(path):\\n', 'def parse_config(path):\\n    \"\"\"Parse the config.\"\"\"\\n'))",
    "submit_result('used mcp from code: ' + said, ['app.py'])",
    "```",
  }, "\n")
  local url, log = h.fake_llm({ { text = program } })
  h.setup(url, {
    llm = { edit_form = "program" },
    mcp = { servers = { t = { command = { "python3", MCP_SERVER }, env = {} } } },
    capabilities = { mcp = { "t.write_marker" } },
  })
  vim.cmd.edit("app.py")
  vim.cmd("Chimera task add a docstring to parse_config")
  local id = chimera.agents()[1].id
  h.eq(chimera.wait(id, 20000), "completed", tostring((chimera.agent(id) or {}).error))
  h.eq(vim.fn.filereadable(marker), 1, "the MCP tool ran")
  os.remove(marker)
  h.truthy(chimera.agent(id).summary:find("used mcp from code", 1, true), chimera.agent(id).summary)
  h.truthy(table.concat(chimera.agent(id).log, "\n"):find('"t.echo" is not allowed', 1, true), vim.inspect(chimera.agent(id).log))
  h.truthy((h.read(log) or ""):find("mcp_call(server, tool, args)", 1, true), "offered to the model")
  local effects = h.effects({ kind = "mcp" })
  h.eq(#effects, 1, "one MCP effect: the refused call never ran")
  h.truthy(effects[1].input:find("t.write_marker", 1, true), effects[1].input)
  h.eq(effects[1].agent_id, id, "the effect names its agent")
  h.wait_for("the ghost text", function()
    return #require("chimera.ghost").hunk_rows(vim.api.nvim_get_current_buf()) == 1
  end)
  chimera.reject(id)
end)

h.finish()
