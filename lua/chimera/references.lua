--- What a chat message can point at besides its words, as codecompanion
--- users write it: `#buffer` (the file the chat was opened from, as its
--- buffer holds it, unsaved text included), `#selection` (the lines last
--- selected there) and `@path` (a project file). They complete in the
--- prompt (omnifunc, and the blink.cmp and nvim-cmp sources) and go with
--- the turn as its context; the message itself stays as typed.
local state = require("chimera.state")

local M = {}

local origin = {} -- { buf, selection = { first, last } }: where the chat was opened from

--- Remembers buffer `buf` (and its last visual selection) as what
--- `#buffer` and `#selection` mean.
function M.remember(buf)
  local first, last = vim.api.nvim_buf_get_mark(buf, "<")[1], vim.api.nvim_buf_get_mark(buf, ">")[1]
  origin = { buf = buf, selection = first > 0 and last >= first and { first, last } or nil }
end

local listed = { at = 0, files = {} } -- the project's files, as last listed

--- Whether `name` lies in a `.git` or `.chimera` folder at any depth
--- (the core refuses those; completion does not offer them).
local function reserved(name)
  local l = "/" .. name:lower()
  return l:match("/%.git/") ~= nil or l:match("/%.chimera/") ~= nil
end

--- The project's files (as git sees them, else a walk of at most 5,000),
--- listed again at most every 10 s: completion asks at every key.
local function project_files()
  local now = vim.uv.now()
  if now - listed.at < 10000 then
    return listed.files
  end
  local root = state.root or vim.uv.cwd()
  local files = {}
  local r = vim.system({ "git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard" }):wait(2000)
  if r.code == 0 and r.stdout then
    files = vim.tbl_filter(function(name)
      return not reserved(name)
    end, vim.split(r.stdout, "\n", { trimempty = true }))
  else
    for name, kind in vim.fs.dir(root, { depth = 8 }) do
      if kind == "file" and not reserved(name) then
        table.insert(files, name)
        if #files >= 5000 then
          break
        end
      end
    end
  end
  listed = { at = now, files = files }
  return files
end

--- What `word` (being typed: `#…` or `@…`) can become, as completion
--- items { word, kind, menu }.
function M.candidates(word)
  local items = {}
  if vim.startswith(word, "#") then
    for _, name in ipairs({ "#buffer", "#selection" }) do
      if vim.startswith(name, word) then
        table.insert(items, { word = name, kind = "ref", menu = name == "#buffer" and "the file you came from" or "your last selection" })
      end
    end
  elseif vim.startswith(word, "@") then
    local typed = word:sub(2):lower()
    for _, path in ipairs(project_files()) do
      if typed == "" or path:lower():find(typed, 1, true) then
        table.insert(items, { word = "@" .. path, kind = "file", menu = "project file" })
        if #items >= 200 then
          break
        end
      end
    end
  end
  return items
end

--- The completions of the reference ending `before` (the line up to the
--- cursor) as LSP items, and the byte column (from 0) where it starts;
--- what the blink.cmp and nvim-cmp sources hand their plugin.
function M.lsp_items(before)
  local start = before:find("[#@][%w%._/%-]*$")
  if not start then
    return {}, nil
  end
  local kinds = vim.lsp.protocol.CompletionItemKind
  local items = {}
  for _, c in ipairs(M.candidates(before:sub(start))) do
    table.insert(items, {
      label = c.word,
      kind = c.kind == "file" and kinds.File or kinds.Reference,
      detail = c.menu,
    })
  end
  return items, start - 1
end

--- The text of project file `rel` (its buffer's when loaded), or why it
--- is not sent: the core's rules decide (no `..`, no link, no secret, at
--- most 200 KB of text).
local function file_text(rel)
  local root = state.root or vim.uv.cwd()
  local config = require("chimera.config")
  local text, why = require("chimera.loader").require().read_reference(config.to_json(state.config or config.resolve({})), root, rel)
  if not text then
    return nil, why
  end
  local loaded = require("chimera.buffers").find(root .. "/" .. rel)
  if loaded then
    return table.concat(vim.api.nvim_buf_get_lines(loaded, 0, -1, false), "\n")
  end
  return text
end

--- Why the buffer of file `name` may not go to the model as #buffer or
--- #selection (nil when it may): the core's rules for `@path`, and a file
--- of the project.
local function refuse_buffer(name)
  local root = state.root or vim.uv.cwd()
  local config = require("chimera.config")
  return require("chimera.loader").require().may_share_buffer(config.to_json(state.config or config.resolve({})), root, name)
end

local function block(title, text)
  return ("%s:\n```\n%s\n```"):format(title, text)
end

--- The context `message`'s references give, or nil when it makes none;
--- and the problems met (a reference that sent nothing).
function M.context(message)
  local parts, problems, seen = {}, {}, {}
  local name = origin.buf and vim.api.nvim_buf_is_valid(origin.buf) and vim.api.nvim_buf_get_name(origin.buf) or nil
  local rel_of = function(abs)
    local root = state.root or vim.uv.cwd()
    return vim.startswith(abs, root .. "/") and abs:sub(#root + 2) or abs
  end
  for ref in message:gmatch("[#@][%w%._/%-]+") do
    if not seen[ref] then
      seen[ref] = true
      local refused = (ref == "#buffer" or ref == "#selection") and name and name ~= "" and refuse_buffer(name)
      if refused then
        table.insert(problems, ("%s: %s"):format(ref, refused))
      elseif ref == "#buffer" then
        if name and name ~= "" then
          table.insert(parts, block("#buffer (" .. rel_of(name) .. ")", table.concat(vim.api.nvim_buf_get_lines(origin.buf, 0, -1, false), "\n")))
        else
          table.insert(problems, "#buffer: the chat was opened from no file")
        end
      elseif ref == "#selection" then
        local sel = origin.selection
        if name and sel then
          local lines = vim.api.nvim_buf_get_lines(origin.buf, sel[1] - 1, sel[2], false)
          table.insert(parts, block(("#selection (%s, lines %d-%d)"):format(rel_of(name), sel[1], sel[2]), table.concat(lines, "\n")))
        else
          table.insert(problems, "#selection: nothing was selected in the file you came from")
        end
      elseif ref:sub(1, 1) == "@" then
        local rel = ref:sub(2)
        local text, why = file_text(rel)
        if text then
          table.insert(parts, block(ref, text))
        else
          table.insert(problems, ("%s: %s"):format(ref, why))
        end
      end
    end
  end
  return #parts > 0 and table.concat(parts, "\n\n") or nil, problems
end

--- 'omnifunc' of the prompt: completes the `#…` or `@…` before the cursor.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local start = line:find("[#@][%w%._/%-]*$")
    return start and start - 1 or -3
  end
  return M.candidates(base)
end

return M
