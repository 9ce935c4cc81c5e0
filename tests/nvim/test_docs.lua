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

h.finish()
