-- Agents find their place (issue 13), as a person types tasks: from any
-- buffer, naming a file or a function, and only what was asked changes.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

local MATHX = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(lst):\n    s = sorted(lst)\n    return s[len(s) // 2]\n"
local INVENTORY = "class Inventory:\n    def __init__(self):\n        self.items = []\n\n    def add(self, item):\n        self.items.append(item)\n"
local DOC = '```python\ndef mean(xs):\n    """Return the arithmetic mean of xs."""\n    return sum(xs) / len(xs)\n```'

local function proposed_paths(id)
  local p = chimera.proposals()
  local out = {}
  for _, prop in ipairs(p) do
    if prop.id == id then
      for _, f in ipairs(prop.files) do
        table.insert(out, vim.fn.fnamemodify(f.path, ":t"))
      end
    end
  end
  return out
end

h.test("a task naming a file goes to that file, whatever buffer it was typed in", function()
  local root = h.project({ ["mathx.py"] = MATHX, ["inventory.py"] = INVENTORY })
  local url, log = h.fake_llm({ { text = DOC } })
  h.setup(url)
  -- The person is in inventory.py (which has a method `add`) and types at once.
  vim.cmd.edit("inventory.py")
  vim.api.nvim_win_set_cursor(0, { 5, 4 })
  vim.cmd("Chimera task add a docstring to mean in mathx.py")
  local id = chimera.agents()[1].id
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.eq(proposed_paths(id), { "mathx.py" }, "the proposal")
  local prompt = h.read(log)
  h.truthy(prompt:find("return sum(xs) / len(xs)", 1, true), "the model saw mathx.py")
  h.truthy(not prompt:find("self.items.append", 1, true), "and not the buffer it was typed in")
  chimera.accept(id)
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.eq(h.read(root .. "/mathx.py"), MATHX:gsub("def mean%(xs%):\n", 'def mean(xs):\n    """Return the arithmetic mean of xs."""\n'), "mathx.py on disk")
  h.eq(h.read(root .. "/inventory.py"), INVENTORY, "inventory.py untouched")
end)

h.test("a task naming only a function finds its file from a buffer of no file", function()
  h.project({ ["mathx.py"] = MATHX, ["inventory.py"] = INVENTORY })
  h.setup((h.fake_llm({ { text = DOC } })))
  vim.cmd.enew()
  local id = chimera.spawn("add a docstring to mean")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  h.eq(proposed_paths(id), { "mathx.py" }, "the proposal")
end)

h.test("a task naming a file that does not exist yet creates it, with the files it names to read", function()
  local root = h.project({ ["mathx.py"] = MATHX, ["inventory.py"] = INVENTORY })
  local test = '```python\nfrom mathx import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n```'
  local url, log = h.fake_llm({ { text = test } })
  h.setup(url)
  vim.cmd.edit("inventory.py")
  local id = chimera.spawn("create tests/test_mathx.py with a test for mean in mathx.py")
  h.eq(chimera.wait(id, 20000), "completed", "state")
  local files = chimera.proposals()[1].files
  h.eq(#files, 1, "one file")
  h.eq({ files[1].path, files[1].change }, { root .. "/tests/test_mathx.py", "added" }, "the new file")
  local prompt = h.read(log)
  h.truthy(prompt:find("does not exist yet", 1, true), "the model is told it creates the file")
  h.truthy(prompt:find("return sum(xs) / len(xs)", 1, true), "with mathx.py to read")
  chimera.accept(id)
  h.wait_for("accepted", function()
    return chimera.agent(id).state == "accepted"
  end)
  h.eq(h.read(root .. "/tests/test_mathx.py"), "from mathx import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n", "on disk")
  h.eq(h.read(root .. "/mathx.py"), MATHX, "mathx.py untouched")
end)

h.test("tests.command takes auto, off or a command, and says what it wants otherwise", function()
  local config = require("chimera.config")
  for _, ok in ipairs({ "auto", "off", { "make", "test" }, "python3 -m pytest -q" }) do
    local c, err = config.resolve({ tests = { command = ok } })
    h.truthy(c, vim.inspect(ok) .. ": " .. tostring(err))
    -- The core reads what Lua sends.
    h.truthy(require("chimera.loader").require().edit_form(config.to_json(c)), "the core takes " .. vim.inspect(ok))
  end
  for _, bad in ipairs({ "", "   ", {}, { "make", 1 }, 42 }) do
    local c, err = config.resolve({ tests = { command = bad } })
    h.eq(c, nil, vim.inspect(bad))
    h.truthy(err:find('must be "auto", "off" or a command', 1, true), err)
  end
end)

h.finish()
