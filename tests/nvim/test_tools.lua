-- Tool mode through the editor: `:Chimera task --tools` runs the JSON
-- tool loop and its change arrives as a normal proposal.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local APP = "def parse_config(path):\n    return {}\n"
local NEW = "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n"

h.test(":Chimera task --tools reaches a proposal through tool calls", function()
  h.project({ ["app.py"] = APP })
  local url, log = h.fake_llm({
    { text = vim.json.encode({ tool = "read_file", args = { path = "app.py" } }) },
    { text = "```json\n" .. vim.json.encode({ tool = "write_file", args = { path = "app.py", content = NEW } }) .. "\n```" },
    { text = vim.json.encode({ tool = "submit_result", args = { summary = "docstring", changed_files = { "app.py" } } }) },
  })
  h.setup(url)
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

h.finish()
