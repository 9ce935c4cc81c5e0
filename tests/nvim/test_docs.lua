-- The docs follow the code: every subcommand and every option is in
-- doc/chimera.txt, and its help tags are valid (no duplicates).
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local doc = h.read(h.repo .. "/doc/chimera.txt")

h.test("every subcommand has a help tag", function()
  for name in pairs(require("chimera.commands").subcommands) do
    h.truthy(doc:find("*:Chimera-" .. name, 1, true), ":Chimera " .. name .. " is documented")
  end
end)

h.test("every option has a help tag", function()
  local function walk(t, prefix)
    for k, v in pairs(t) do
      local path = prefix and (prefix .. "." .. k) or k
      if type(v) == "table" and not vim.islist(v) and next(v) ~= nil then
        walk(v, path)
      else
        h.truthy(doc:find("*chimera-opt-" .. path .. "*", 1, true), "option " .. path .. " is documented")
      end
    end
  end
  walk(require("chimera.config").defaults)
end)

h.test("the help tags are valid", function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/doc", "p")
  vim.fn.writefile(vim.split(doc, "\n"), dir .. "/doc/chimera.txt")
  vim.cmd("helptags " .. dir .. "/doc")
  h.truthy(vim.uv.fs_stat(dir .. "/doc/tags"), "tags written")
end)

h.test(":help chimera lands on the introduction", function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/doc", "p")
  vim.fn.writefile(vim.split(doc, "\n"), dir .. "/doc/chimera.txt")
  vim.cmd("helptags " .. dir .. "/doc")
  vim.opt.rtp:prepend(dir)
  vim.cmd("help chimera")
  local line = vim.api.nvim_get_current_line()
  vim.cmd("helpclose")
  vim.opt.rtp:remove(dir)
  h.truthy(line:find("INTRODUCTION", 1, true), "the line :help chimera shows: " .. line)
end)

-- The core runs with its own defaults where no Neovim sent options (the
-- `chimera` command, `chimera serve`): they must be the ones documented here.
h.test("the core's defaults are the Lua defaults table", function()
  local config = require("chimera.config")
  local lib = require("chimera.loader").require()
  local from_lua = vim.json.decode(config.to_json(config.resolve({})))
  local from_rust = vim.json.decode(lib.default_config())
  local function empty(v)
    return v == nil or v == vim.NIL or (type(v) == "table" and next(v) == nil)
  end
  local differ = {}
  local function walk(a, b, path)
    local keys = {}
    for k in pairs(a) do
      keys[k] = true
    end
    for k in pairs(b) do
      keys[k] = true
    end
    for k in pairs(keys) do
      local p = path and (path .. "." .. k) or k
      local x, y = a[k], b[k]
      if type(x) == "table" and type(y) == "table" and not vim.islist(x) and not vim.islist(y) then
        walk(x, y, p)
      elseif not (empty(x) and empty(y)) and not vim.deep_equal(x, y) then
        table.insert(differ, ("%s: Lua %s, core %s"):format(p, vim.inspect(x), vim.inspect(y)))
      end
    end
  end
  walk(from_lua, from_rust)
  table.sort(differ)
  h.eq(differ, {}, "defaults that differ")
  -- Every section the user sets reaches the core (a2a.peers once did not).
  local peers = { other = { url = "http://127.0.0.1:9", token = "t" } }
  local sent = vim.json.decode(config.to_json(config.resolve({ a2a = { peers = peers } })))
  h.eq(sent.a2a.peers, peers, "a2a.peers is sent")
end)

h.finish()
