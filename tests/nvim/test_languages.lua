-- Every language as a person meets it: open a JavaScript, TypeScript, Go,
-- Rust or Lua file, `:Chimera remora enable`, chat with a function's node,
-- accept its rewrite. The ID comments go in in the language's own syntax,
-- the rewrite lands as one change, and every other byte stays.
local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")
local chimera = require("chimera")

-- For each language: its file, the first line of the function to chat
-- with, that function as the node rewrites it (without its ID comment),
-- the line the rewrite adds and the one it replaces.
local CASES = {
  {
    file = "pkg/mathx.py",
    def = "def clamp(x, lo, hi):",
    comment = "#",
    src = "LIMIT = 10\n\n\ndef clamp(x, lo, hi):\n    return min(hi, max(lo, x))\n",
    reply = "```python\ndef clamp(x, lo, hi):\n    return min(hi, max(lo, x)) if lo <= hi else lo\n```",
    added = "    return min(hi, max(lo, x)) if lo <= hi else lo",
    removed = "    return min(hi, max(lo, x))",
  },
  {
    file = "lib/mathx.js",
    def = "function clamp(x, lo, hi) {",
    comment = "//",
    src = "const LIMIT = 10;\n\nfunction clamp(x, lo, hi) {\n  return Math.min(hi, Math.max(lo, x));\n}\n\nfunction double(x) {\n  return 2 * x;\n}\n\nmodule.exports = { clamp, double };\n",
    reply = "```javascript\nfunction clamp(x, lo, hi) {\n  if (lo > hi) throw new RangeError(\"lo > hi\");\n  return Math.min(hi, Math.max(lo, x));\n}\n```",
    added = '  if (lo > hi) throw new RangeError("lo > hi");',
  },
  {
    file = "src/cart.ts",
    def = "  total(): number {",
    comment = "//",
    src = "export interface Item {\n  price: number;\n}\n\nexport class Cart {\n  private items: Item[] = [];\n\n  total(): number {\n    return 0;\n  }\n}\n",
    reply = "```typescript\ntotal(): number {\n  return this.items.reduce((sum, i) => sum + i.price, 0);\n}\n```",
    added = "    return this.items.reduce((sum, i) => sum + i.price, 0);",
    removed = "    return 0;",
  },
  {
    file = "stack/stack.go",
    def = "func (s *Stack) Len() int {",
    comment = "//",
    src = "package stack\n\n// Stack holds ints.\ntype Stack struct {\n\titems []int\n}\n\n// Len is the number of items.\nfunc (s *Stack) Len() int {\n\treturn 0\n}\n",
    reply = "```go\nfunc (s *Stack) Len() int {\n\treturn len(s.items)\n}\n```",
    added = "\treturn len(s.items)",
    removed = "\treturn 0",
  },
  {
    file = "src/lib.rs",
    def = "    pub fn len(&self) -> usize {",
    comment = "//",
    src = "/// A stack.\n#[derive(Debug, Default)]\npub struct Stack {\n    items: Vec<i32>,\n}\n\nimpl Stack {\n    pub fn len(&self) -> usize {\n        0\n    }\n}\n",
    reply = "```rust\npub fn len(&self) -> usize {\n    self.items.len()\n}\n```",
    added = "        self.items.len()",
    removed = "        0",
  },
  {
    file = "lua/util.lua",
    def = "function M.trim(s)",
    comment = "--",
    src = "local M = {}\n\nfunction M.trim(s)\n  return s\nend\n\nreturn M\n",
    reply = "```lua\nfunction M.trim(s)\n  return (s:gsub(\"^%s+\", \"\"):gsub(\"%s+$\", \"\"))\nend\n```",
    added = '  return (s:gsub("^%s+", ""):gsub("%s+$", ""))',
    removed = "  return s",
  },
}

for _, case in ipairs(CASES) do
  h.test(case.file .. ": remora enable, chat with a node, accept its rewrite", function()
    local root = h.project({ [case.file] = case.src })
    local url, log = h.fake_llm({ { text = case.reply } })
    h.setup(url, { remora = { ids = "inline" } })
    chimera.start()
    -- As a person types it: enable, then open the file at once.
    vim.cmd("Chimera remora enable --yes")
    vim.cmd.edit(case.file)
    local buf = vim.api.nvim_get_current_buf()
    local marker = case.comment .. " rm_"
    -- The function's line (1-based) in the buffer.
    local line
    h.wait_for("ID comments in " .. case.file, function()
      for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
        if l:sub(1, #case.def) == case.def then
          line = i
          return l:find(marker, 1, true) ~= nil
        end
      end
    end, 15000)
    local with_ids = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    -- Every line is the original one, or it with an ID comment at its end
    -- (the file's own ID on a line of its own, then a blank line).
    local original = vim.split(case.src, "\n", { trimempty = true })
    local kept = vim.tbl_filter(function(l)
      return not l:find("^" .. vim.pesc(case.comment) .. " remora%-file: rm_") and l ~= ""
    end, with_ids)
    local stripped = vim.tbl_map(function(l)
      return (l:gsub("%s+" .. vim.pesc(case.comment) .. " rm_[a-z0-9]+$", ""))
    end, kept)
    h.eq(stripped, vim.tbl_filter(function(l)
      return l ~= ""
    end, original), "only ID comments were added")
    -- As a person does: the cursor on the function, and chat at once.
    vim.api.nvim_win_set_cursor(0, { line, 2 })
    vim.cmd("Chimera chat fix this")
    local chat_buf = vim.api.nvim_get_current_buf()
    local chat_name = vim.api.nvim_buf_get_name(chat_buf)
    local id
    h.wait_for("the proposal", function()
      local text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), "\n")
      id = text:match("proposal (%w+) ready")
      return id ~= nil
    end, 20000)
    -- The prompt said which language the node is in.
    local asked = h.read(log) or ""
    h.truthy(asked:find("```" .. case.reply:match("^```(%w+)"), 1, true), "the node's source in its fence")
    vim.cmd("close")
    vim.api.nvim_win_set_cursor(0, { line, 2 })
    local node = h.truthy(chimera.node_at_cursor(), "the node at the cursor")
    h.truthy(chat_name:find("chimera://chat/" .. node.id, 1, true), "the chat was the function's: " .. chat_name)
    chimera.accept(id)
    h.wait_for("the accepted rewrite", function()
      return vim.tbl_contains(vim.api.nvim_buf_get_lines(buf, 0, -1, false), case.added)
    end, 10000)
    local now = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    -- The node keeps its ID on its line; nothing else moved.
    h.truthy(now[line]:find(node.id, 1, true), "the ID stays: " .. vim.inspect(now))
    local want = vim.deepcopy(with_ids)
    local at = line + 1
    if case.removed then
      h.eq(want[at], case.removed, "the replaced line")
      want[at] = case.added
    else
      table.insert(want, at, case.added)
    end
    h.eq(now, want, "only the rewrite changed the buffer")
    -- One undo takes the accept back.
    vim.cmd("silent undo")
    h.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), with_ids, "one undo step")
    vim.cmd("silent redo")
    vim.cmd("silent write")
    h.eq(h.read(root .. "/" .. case.file), table.concat(want, "\n") .. "\n", "saved")
  end)
end

h.finish()
