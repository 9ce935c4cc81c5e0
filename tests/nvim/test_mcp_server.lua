-- An MCP host (Claude Code, say) configured with `chimera mcp serve` while
-- Neovim has the project open: the host reads the human's unsaved text,
-- writes, proposes; the proposal shows as ghost text in the open buffer
-- and in `chimera agents`, and <Leader>a's accept takes it. The host here
-- speaks MCP's JSON-RPC lines on the server's stdin/stdout by hand.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local BIN = vim.fs.dirname(assert(os.getenv("CHIMERA_LIB"), "CHIMERA_LIB names the library")) .. "/chimera"
local CALC = "def add(a, b):\n    return a - b\n"

--- `chimera mcp serve ARGS` in `root`, with a function per request that
--- waits for its answer.
local function mcp_host(root, args)
  local answers, buffered = {}, ""
  local cmd = { BIN, "mcp", "serve" }
  vim.list_extend(cmd, args or {})
  local proc = vim.system(cmd, {
    cwd = root,
    stdin = true,
    stdout = function(_, data)
      buffered = buffered .. (data or "")
      while true do
        local line, rest = buffered:match("^([^\n]*)\n(.*)$")
        if not line then
          break
        end
        buffered = rest
        local ok, msg = pcall(vim.json.decode, line)
        if ok and msg.id then
          answers[msg.id] = msg
        end
      end
    end,
  })
  local next_id = 0
  local host = { proc = proc }
  function host.request(method, params)
    next_id = next_id + 1
    local id = next_id
    proc:write(vim.json.encode({ jsonrpc = "2.0", id = id, method = method, params = params }) .. "\n")
    h.wait_for("the MCP answer to " .. method, function()
      return answers[id] ~= nil
    end, 20000)
    h.truthy(answers[id].result, method .. ": " .. vim.inspect(answers[id].error))
    return answers[id].result
  end
  function host.tool(name, arguments)
    local result = host.request("tools/call", { name = name, arguments = arguments })
    return result.content[1].text, result.isError == true
  end
  host.request("initialize", {
    protocolVersion = "2025-06-18",
    capabilities = vim.empty_dict(),
    clientInfo = { name = "claude-code", version = "1" },
  })
  proc:write(vim.json.encode({ jsonrpc = "2.0", method = "notifications/initialized" }) .. "\n")
  return host
end

h.test("an MCP host's proposal shows as ghost text in the open buffer and is accepted as one undo step", function()
  local root = h.project({ ["calc.py"] = CALC })
  h.setup((h.fake_llm({ { text = "unused" } })))
  vim.cmd.edit("calc.py")
  local buf = vim.api.nvim_get_current_buf()
  chimera.start()
  -- Typed, not saved: the host reads what the human sees.
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    return a - b  # mine" })
  local host = mcp_host(root)
  local seen
  h.wait_for("the host to read the unsaved line", function()
    seen = host.tool("read_file", { path = "calc.py" })
    return seen:find("# mine", 1, true) ~= nil
  end, 10000)
  local _, err = host.tool("write_file", { path = "calc.py", content = seen:gsub("a %- b", "a + b") })
  h.eq(err, false, "write_file")
  local text, refused = host.tool("propose", { summary = "add adds" })
  h.eq(refused, false, "propose: " .. text)
  local id = vim.json.decode(text).id
  h.wait_for("the host's proposal in Neovim", function()
    local a = chimera.agent(id)
    return a ~= nil and a.state == "completed" and #vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, {}) > 0
  end, 5000)
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return a - b  # mine", "the buffer waits for the accept")
  local listed = vim.system({ BIN, "agents", "--json" }, { cwd = root }):wait()
  local agents = vim.json.decode(listed.stdout)
  h.eq(agents[1].id, id, "chimera agents shows it")
  h.eq(agents[1].external, "mcp:claude-code", "named after the host")
  chimera.accept(id)
  h.wait_for("the accept in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return a + b  # mine"
  end)
  h.eq(h.read(root .. "/calc.py"), CALC, "the file waits for :write")
  vim.cmd("silent undo")
  h.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1], "    return a - b  # mine", "one undo step")
  local status = vim.json.decode((host.tool("proposal_status", { id = id })))
  h.eq(status.state, "accepted", "the host hears the verdict")
  host.proc:write(nil)
  h.eq(host.proc:wait(10000).code, 0, "the server ends with its host")
  vim.cmd("checkhealth chimera")
  local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  h.truthy(health:find("chimera mcp serve --root " .. root, 1, true), "checkhealth says how MCP hosts connect:\n" .. health)
end)

h.finish()
