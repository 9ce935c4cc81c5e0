-- Remora in a real Neovim: topology queries, :Chimera node, and inline IDs
-- written into a loaded buffer as one undoable change (and on disk for the
-- files that are not loaded), only after `:Chimera remora enable`.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local APP = "from util import helper\n\n\nclass Config:\n    def load(self):\n        return helper(self)\n"
local UTIL = "def helper(x):\n    return x\n"

local function indexed(path)
  h.wait_for("the index of " .. path, function()
    return #chimera.nodes(path) > 1
  end, 20000)
end

h.test("nodes, node_at_cursor, callers and callees follow the code", function()
  local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL })
  h.setup("http://127.0.0.1:9")
  vim.cmd.edit("app.py")
  chimera.start()
  indexed(root .. "/app.py")
  indexed(root .. "/util.py")
  local names = {}
  for _, n in ipairs(chimera.nodes()) do
    table.insert(names, n.node_type .. ":" .. n.name)
  end
  h.eq(names, { "file:app.py", "class:Config", "method:load" }, "nodes of app.py")
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  local load = h.truthy(chimera.node_at_cursor(), "node at cursor")
  h.eq({ load.name, load.node_type, load.file_path, load.start_line, load.end_line, load.status },
    { "load", "method", "app.py", 5, 6, "active" }, "record")
  h.truthy(load.id:match("^rm_[a-z0-9]+$") and #load.id == 11, "id format " .. load.id)
  local callees = chimera.callees(load.id)
  h.eq(#callees, 1, "callees")
  h.eq(callees[1].name, "helper", "callee")
  h.eq(chimera.callers(callees[1].id)[1].id, load.id, "callers")
  h.eq(chimera.node(load.parent_id).name, "Config", "parent")
  -- :Chimera node shows the node at the cursor, in a float by the cursor.
  vim.cmd("Chimera node")
  local out = ""
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      out = out .. table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
      vim.api.nvim_win_close(win, true)
    end
  end
  h.truthy(out:find(load.id, 1, true) and out:find("callees: function helper", 1, true), out)
  -- Typing a new method: it becomes a node; the IDs of the others stay.
  vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "    def save(self):", "        return 1" })
  h.wait_for("the new node", function()
    local n = chimera.node_at_cursor()
    vim.api.nvim_win_set_cursor(0, { 9, 8 })
    n = chimera.node_at_cursor()
    vim.api.nvim_win_set_cursor(0, { 6, 8 })
    return n and n.name == "save"
  end, 10000)
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  h.eq(chimera.node_at_cursor().id, load.id, "load keeps its ID")
  -- :checkhealth reports the index.
  vim.cmd("checkhealth chimera")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  h.truthy(report:find("Remora index: %d+ nodes in 2 files"), report)
  vim.cmd("close")
  -- Shadow mode: the files are never touched.
  h.eq(h.read(root .. "/util.py"), UTIL, "util.py untouched")
  h.eq(vim.api.nvim_buf_get_lines(0, 0, 1, false)[1], "from util import helper", "buffer untouched")
end)

h.test("remora enable writes inline IDs: buffer as one undo step, other files on disk", function()
  local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL })
  h.setup("http://127.0.0.1:9", { remora = { ids = "inline" } })
  vim.cmd.edit("app.py")
  chimera.start()
  indexed(root .. "/app.py")
  indexed(root .. "/util.py")
  local buf = vim.api.nvim_get_current_buf()
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- Declining the question changes nothing.
  local asked
  local confirm = vim.fn.confirm
  vim.fn.confirm = function(q)
    asked = q
    return 2
  end
  vim.cmd("Chimera remora enable")
  h.wait_for("the question", function()
    return asked ~= nil
  end, 10000)
  h.truthy(asked:find("2 files", 1, true), asked)
  vim.wait(300)
  h.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before, "declined: buffer unchanged")
  h.eq(h.read(root .. "/util.py"), UTIL, "declined: file unchanged")
  vim.fn.confirm = confirm
  -- --yes skips the question.
  vim.cmd("Chimera remora enable --yes")
  h.wait_for("IDs in the buffer", function()
    return (vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] or ""):match("^# remora%-file: rm_") ~= nil
  end, 10000)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local load = chimera.nodes(root .. "/app.py")[3]
  h.eq(lines[6], "    def load(self):    # " .. load.id, "trailing ID comment")
  h.truthy(lines[5]:match("^class Config:    # rm_[a-z0-9]+$"), lines[5])
  h.wait_for("IDs on disk", function()
    return (h.read(root .. "/util.py") or ""):match("^# remora%-file: rm_[a-z0-9]+\ndef helper%(x%):    # rm_[a-z0-9]+\n    return x\n$") ~= nil
  end, 10000)
  h.eq(h.read(root .. "/app.py"), APP, "the buffer's file is not written behind the human's back")
  -- One undo removes every ID from the buffer.
  vim.cmd("silent undo")
  h.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before, "one undo step")
end)

h.test("chat with a node, review its proposal in the panel, history survives a restart", function()
  local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL })
  local url = h.fake_llm({
    { text = "```python\ndef load(self) -> dict:\n    return helper(self)\n```" },
  })
  h.setup(url)
  vim.cmd.edit("app.py")
  local buf = vim.api.nvim_get_current_buf()
  chimera.start()
  indexed(root .. "/app.py")
  indexed(root .. "/util.py")
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  local load = chimera.node_at_cursor()
  vim.cmd("Chimera panel")
  local panel = require("chimera.panel")
  h.eq(panel.node_id(), load.id, "the panel follows the cursor")
  h.truthy(vim.tbl_contains(panel.lines(), "method load"), vim.inspect(panel.lines()))
  h.truthy(vim.tbl_contains(panel.lines(), "  " .. chimera.callees(load.id)[1].id .. " function helper"), "callees listed")
  -- The chat buffer sends the message; the node's agent answers with a proposal.
  vim.cmd("Chimera chat add a return type")
  local chat_buf = vim.api.nvim_get_current_buf()
  h.truthy(vim.api.nvim_buf_get_name(chat_buf):find("chimera://chat/" .. load.id, 1, true), "chat buffer")
  h.wait_for("the proposal in the panel", function()
    return vim.tbl_contains(panel.lines(), "+    def load(self) -> dict:")
  end, 20000)
  -- The panel reads the proposal state, the chat the node's events: the
  -- chat says so when the event arrives.
  local chat_text
  -- (The message and the proposal come by two events, in either order.)
  local ok = pcall(h.wait_for, "the message and the proposal in the chat", function()
    chat_text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n")
    return chat_text:find("proposal %w+ ready") and chat_text:find("You: add a return type", 1, true)
  end)
  h.truthy(ok, chat_text)
  -- `a` in the panel accepts: the buffer changes, exactly the node's span.
  vim.cmd("close")
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr("chimera://panel"))[1])
  vim.api.nvim_feedkeys("a", "x", false)
  h.wait_for("the accepted rewrite", function()
    return vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1] == "    def load(self) -> dict:"
  end, 10000)
  h.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    vim.split(APP:gsub("def load%(self%):", "def load(self) -> dict:"), "\n", { trimempty = true }), "only load changed")
  panel.close()
  -- The conversation persists across a restart of the core.
  chimera.stop()
  require("chimera.remora").history = {}
  chimera.start()
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  h.wait_for("the index after restart", function()
    local n = chimera.node_at_cursor()
    return n and n.id == load.id
  end, 20000)
  vim.cmd("Chimera chat")
  h.wait_for("the history", function()
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return text:find("You: add a return type", 1, true) and text:find("accepted", 1, true)
  end, 10000)
end)

h.test("a node's event that arrives while the panel and the chat both wait for its history is kept", function()
  -- The panel asks for a node's history, the chat asks again, the human's
  -- message is logged: the first answer comes, then the second, read from
  -- the store before the message was written. (Seen flaky in the chat
  -- test above: the chat lost "You: ..." about one run in eight.)
  h.project({ ["app.py"] = APP })
  local url = h.fake_llm({})
  h.setup(url)
  chimera.start()
  local remora = require("chimera.remora")
  local loader = require("chimera.loader")
  local real = loader.require
  loader.require = function()
    return { node_history = function() end }
  end
  local ok, err = pcall(function()
    local id = "rm_race0001"
    remora.request_history(id)
    remora.request_history(id)
    local said = { event_id = 7, event_type = "HumanChatEvent", agent_id = id, message = "add a return type" }
    remora.event({ record = said })
    local older = { event_id = 3, event_type = "AgentStartEvent", agent_id = id }
    remora.history_arrived({ node_id = id, events = { older } })
    remora.history_arrived({ node_id = id, events = { older } })
    local ids = vim.tbl_map(function(r)
      return r.event_id
    end, remora.history[id])
    h.eq(ids, { 3, 7 }, "the message is in the history")
  end)
  loader.require = real
  assert(ok, err)
end)

h.test("a node asked a question answers it in the chat; a node asking a neighbour gets its answer", function()
  local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL })
  local asks = table.concat({
    "```python",
    "said = message_node(get_my_callees()[0]['id'], 'What do you return?')",
    "rewrite_self('def load(self):\\n    \"\"\"' + said + '\"\"\"\\n    return helper(self)\\n')",
    "```",
  }, "\n")
  local url, log = h.fake_llm({
    { text = "It returns what helper makes of the config." },
    { text = asks },
    { text = "My argument, unchanged." },
  })
  h.setup(url, { remora = { cooldown_ms = 0 } })
  vim.cmd.edit("app.py")
  -- Your question, typed as soon as the file is open: answered in the
  -- node's chat, no proposal.
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  vim.cmd("Chimera chat What do you return?")
  local chat_buf, text
  h.wait_for("the answer in the chat", function()
    chat_buf = vim.api.nvim_get_current_buf()
    text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n")
    return text:find("answer: It returns what helper makes of the config.", 1, true)
  end, 20000)
  local load = vim.iter(chimera.nodes(root .. "/app.py")):find(function(n)
    return n.name == "load"
  end)
  local helper = chimera.callees(load.id)[1]
  h.truthy(vim.api.nvim_buf_get_name(chat_buf):find("chimera://chat/" .. load.id, 1, true), "the node's chat, not the free chat")
  h.truthy(text:find("You: What do you return?", 1, true), text)
  h.eq(#chimera.proposals(), 0, "a question changes nothing")
  h.truthy((h.read(log) or ""):find("asks: What do you return?", 1, true), "asked as the node")
  -- load asks helper; helper's answer comes back into load's call.
  require("chimera.remora").chat(load.id, "document what helper returns")
  h.wait_for("the exchange in load's chat", function()
    text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n")
    return text:find("→ " .. helper.id .. " asked: What do you return?", 1, true)
      and text:find("← " .. helper.id .. " answers: My argument, unchanged.", 1, true)
      and text:find("proposal %w+ ready")
  end, 20000)
  local p = chimera.proposals()[1]
  h.truthy(p, "load's proposal")
  vim.api.nvim_set_current_buf(vim.fn.bufnr(root .. "/app.py"))
  h.wait_for("the ghost text with the answer", function()
    local marks = vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { details = true })
    for _, m in ipairs(marks) do
      for _, vl in ipairs(m[4].virt_lines or {}) do
        for _, chunk in ipairs(vl) do
          if chunk[1]:find("My argument, unchanged.", 1, true) then
            return true
          end
        end
      end
    end
  end)
  chimera.reject(p.id)
end)

h.test("the seed's extension file runs as written: its read_env tool reads an allowed variable", function()
  local seed_extension = table.concat({
    "from remora import ExtensionNode, tool",
    "",
    "class ConfigHandler(ExtensionNode):",
    '    """Handles all Config* classes."""',
    "",
    '    match_type = "class"',
    '    match_pattern = "Config*"  # fnmatch syntax',
    "",
    '    system_prompt = """',
    "    You are a configuration specialist.",
    '    """',
    "",
    "    @tool",
    "    async def read_env(self, key: str) -> str:",
    '        """Read an environment variable."""',
    '        return os.environ.get(key, "")',
    "",
  }, "\n")
  local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL, [".remora/models/config_agents.py"] = seed_extension })
  vim.env.CHIMERA_TEST_MODE = "staging"
  local program = table.concat({
    "```python",
    "mode = read_env('CHIMERA_TEST_MODE')",
    "try:",
    "    variable = env('HOME')",
    "except Exception as e:",
    "    log(str(e))",
    "rewrite_self('class Config:\\n    MODE = \"' + mode + '\"\\n\\n    def load(self):\\n        return helper(self)\\n')",
    "```",
  }, "\n")
  local url, log = h.fake_llm({ { text = program } })
  h.setup(url, { capabilities = { env = { "CHIMERA_TEST_*" } } })
  vim.cmd.edit("app.py")
  -- Typed as soon as the file is open.
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  vim.cmd("Chimera chat name the mode we run in")
  h.wait_for("the proposal", function()
    return #chimera.proposals() == 1
  end, 20000)
  local id = chimera.proposals()[1].id
  h.truthy((h.read(log) or ""):find("read_env(key: str) -> str (Read an environment variable.)", 1, true), "the tool is offered to the model")
  h.truthy((h.read(log) or ""):find("configuration specialist", 1, true), "the extension's prompt")
  h.truthy(table.concat(chimera.agent(id).log, "\n"):find('"HOME" is not allowed (capabilities.env)', 1, true), vim.inspect(chimera.agent(id).log))
  vim.api.nvim_set_current_buf(vim.fn.bufnr(root .. "/app.py"))
  chimera.accept(id)
  h.wait_for("the accept", function()
    return vim.api.nvim_buf_get_lines(0, 4, 5, false)[1] == '    MODE = "staging"'
  end, 10000)
  vim.env.CHIMERA_TEST_MODE = nil
end)

h.test(":Chimera node new: a ghost method at the cursor's class is written by its agent; a placeholder shows meanwhile", function()
  local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL })
  local url, log = h.fake_llm({
    { text = "```python\ndef reset(self):\n    self.values = {}\n```", chunk_delay = 0.3 },
  })
  h.setup(url)
  vim.cmd.edit("app.py")
  local buf = vim.api.nvim_get_current_buf()
  -- Typed as soon as the file is open, as a person does: no waiting for
  -- the index. A method outside a class is refused with what to do.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  h.wait_for_notice("a method goes in a class", function()
    vim.cmd("Chimera node new method reset empties the values")
  end)
  -- In load, typed at once: the placeholder after load, then the proposal.
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  vim.cmd("Chimera node new method reset empties the values")
  h.wait_for("the placeholder", function()
    local marks = vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })
    for _, m in ipairs(marks) do
      local vl = m[4].virt_lines
      if vl and vl[1][1][1]:find("^    ◌ new method reset") then
        return m[2] == 5
      end
    end
  end, 20000)
  h.wait_for("the proposal", function()
    return #chimera.proposals() == 1 and vim.tbl_isempty(require("chimera.remora").ghosts())
  end, 20000)
  local prompt = h.read(log) or ""
  h.truthy(prompt:find("Write yourself: the new method `reset`. empties the values", 1, true), prompt)
  h.eq(h.read(root .. "/app.py"), APP, "nothing written before the accept")
  chimera.accept(chimera.proposals()[1].id)
  h.wait_for("the accepted method", function()
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    return lines[8] == "    def reset(self):" and lines[9] == "        self.values = {}"
  end, 10000)
  h.eq(vim.api.nvim_buf_get_lines(buf, 4, 6, false), { "    def load(self):", "        return helper(self)" }, "load as it was")
end)

h.test("the panel shows an ordinary task's proposal for the node it changes, live", function()
  local two = "def first():\n    return 1\n\n\ndef second():\n    return 2\n"
  local root = h.project({ ["m.py"] = two })
  local program = "```python\nsrc = read_file('m.py')\nwrite_file('m.py', src.replace('return 2', 'return 20'))\nsubmit_result('second returns 20', ['m.py'])\n```"
  h.setup((h.fake_llm({ { text = program } })))
  vim.cmd.edit("m.py")
  local code = vim.api.nvim_get_current_win()
  chimera.start()
  indexed(root .. "/m.py")
  local id = chimera.spawn("make second return 20")
  h.eq(chimera.wait(id, 20000), "completed")
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("Chimera panel")
  local panel = require("chimera.panel")
  h.wait_for("the task's proposal in the panel", function()
    return vim.tbl_contains(panel.lines(), "PROPOSAL " .. id) and vim.tbl_contains(panel.lines(), "+    return 20")
  end)
  h.truthy(vim.tbl_contains(panel.lines(), "second returns 20"), vim.inspect(panel.lines()))
  -- A node the proposal does not touch shows none.
  vim.api.nvim_set_current_win(code)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", {})
  h.wait_for("the other node", function()
    return vim.tbl_contains(panel.lines(), "function first")
  end)
  h.eq(vim.tbl_contains(panel.lines(), "PROPOSAL " .. id), false, vim.inspect(panel.lines()))
  vim.api.nvim_win_set_cursor(0, { 6, 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", {})
  h.wait_for("back on second", function()
    return vim.tbl_contains(panel.lines(), "PROPOSAL " .. id)
  end)
  -- `a` in the panel takes it; the panel follows the proposal state.
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr("chimera://panel"))[1])
  vim.api.nvim_feedkeys("a", "x", false)
  h.wait_for("the accept", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.wait_for("the panel without it", function()
    return not vim.tbl_contains(panel.lines(), "PROPOSAL " .. id)
  end)
  panel.close()
end)

h.test("remora enable, then a file opened at once: the buffer is never left stale", function()
  for round = 1, 4 do
    local root = h.project({ ["app.py"] = APP, ["util.py"] = UTIL, ["loader.py"] = "def load_all():\n    return []\n" })
    h.setup("http://127.0.0.1:9", { remora = { ids = "inline" } })
    chimera.start()
    -- As a person types it: enable, then open a file, no waiting between.
    vim.cmd("Chimera remora enable --yes")
    if round % 2 == 1 then
      vim.cmd.edit("loader.py")
    else
      -- The core hears of the buffer only after it wrote the file: what a
      -- busy editor sees when its push comes late.
      vim.o.eventignore = "all"
      vim.cmd.edit("loader.py")
      vim.o.eventignore = ""
    end
    local buf = vim.api.nvim_get_current_buf()
    h.wait_for("round " .. round .. ": IDs in loader.py", function()
      local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      return (h.read(root .. "/loader.py") or ""):find("# rm_", 1, true) ~= nil or text:find("# rm_", 1, true) ~= nil
    end, 10000)
    vim.wait(500)
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
    local disk = h.read(root .. "/loader.py")
    h.truthy(text:find("# rm_", 1, true), "round " .. round .. ": IDs in the buffer: " .. text)
    if disk:find("# rm_", 1, true) then
      -- Written on disk before the buffer was known: the buffer shows it.
      h.eq(text, disk, "round " .. round .. ": the buffer shows the file as it is")
      h.eq(vim.bo[buf].modified, false, "round " .. round .. ": nothing to write")
    else
      -- Given to the buffer: the file is as the buffer read it, so :write
      -- never says it changed since reading.
      h.eq(disk, "def load_all():\n    return []\n", "round " .. round .. ": the file untouched")
    end
    chimera.stop()
    vim.cmd("silent! %bwipeout!")
  end
end)

h.finish()
