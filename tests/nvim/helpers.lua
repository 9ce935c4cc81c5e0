-- A small test harness for Lua scenarios run in a real headless Neovim
-- (`nvim --headless --clean -l tests/nvim/<file>.lua`) against the built
-- library ($CHIMERA_LIB). Each scenario gets a fresh project directory and
-- its own scripted fake LLM server (tests/fake_llm.py) on 127.0.0.1.
local M = {}

M.repo = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
vim.opt.rtp:prepend(M.repo)
vim.cmd("runtime plugin/chimera.lua")

local results = { passed = 0, failed = 0 }
local servers = {}

function M.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    results.passed = results.passed + 1
    io.stdout:write("ok   " .. name .. "\n")
  else
    results.failed = results.failed + 1
    io.stdout:write("FAIL " .. name .. "\n" .. tostring(err) .. "\n")
  end
  pcall(require("chimera").stop)
  vim.cmd("silent! %bwipeout!")
end

function M.finish()
  for _, s in ipairs(servers) do
    pcall(function()
      s:kill(9)
    end)
  end
  io.stdout:write(("%d passed, %d failed\n"):format(results.passed, results.failed))
  io.stdout:flush()
  os.exit(results.failed == 0 and 0 or 1)
end

function M.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(("%s: expected %s, got %s"):format(what or "value", vim.inspect(want), vim.inspect(got)), 2)
  end
end

function M.truthy(v, what)
  if not v then
    error((what or "value") .. ": expected a true value, got " .. vim.inspect(v), 2)
  end
  return v
end

function M.wait_for(what, pred, timeout)
  local ok = vim.wait(timeout or 30000, pred, 20)
  if not ok then
    error("timed out waiting for " .. what, 2)
  end
end

--- The effect log (`opts` as for chimera.effects), once the core answered.
function M.effects(opts)
  local effects
  require("chimera").effects(opts, function(e)
    effects = e
  end)
  M.wait_for("the effects", function()
    return effects ~= nil
  end)
  return effects
end

--- A fresh git-like project with `files` (path -> content); cwd moves there.
function M.project(files)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/.git", "p")
  for path, content in pairs(files) do
    local abs = dir .. "/" .. path
    vim.fn.mkdir(vim.fs.dirname(abs), "p")
    local f = assert(io.open(abs, "wb"))
    f:write(content)
    f:close()
  end
  dir = vim.uv.fs_realpath(dir)
  vim.cmd.cd(dir)
  return dir
end

function M.read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

--- Starts the fake LLM with `script` (list of replies); returns its base URL
--- and the path of its request log.
function M.fake_llm(script, opts)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local script_path, port_path, log = dir .. "/script.json", dir .. "/port", dir .. "/requests.log"
  local f = assert(io.open(script_path, "w"))
  f:write(vim.json.encode(script))
  f:close()
  local cmd = { "python3", M.repo .. "/tests/fake_llm.py", "--script", script_path, "--port-file", port_path, "--log", log }
  if opts and opts.models then
    vim.list_extend(cmd, { "--models", table.concat(opts.models, ",") })
  end
  if opts and opts.only_with_tools then
    table.insert(cmd, "--only-with-tools")
  end
  local proc = vim.system(cmd)
  table.insert(servers, proc)
  M.wait_for("the fake LLM to listen", function()
    return M.read(port_path) ~= nil
  end, 10000)
  return "http://127.0.0.1:" .. M.read(port_path), log
end

--- The first agent to end (neither queued nor running), within
--- `timeout_ms`: its record.
function M.ended_agent(timeout_ms)
  local id
  M.wait_for("an agent to end", function()
    for _, a in ipairs(require("chimera").agents()) do
      if a.state ~= "queued" and a.state ~= "running" then
        id = a.id
        return true
      end
    end
  end, timeout_ms)
  return require("chimera").agent(id)
end

--- The data of every `User {pattern}` event from now on, oldest first.
function M.user_events(pattern)
  local got = {}
  vim.api.nvim_create_autocmd("User", {
    pattern = pattern,
    callback = function(ev)
      table.insert(got, ev.data)
    end,
  })
  return got
end

--- Runs `action`, then waits until a notification containing `text` is
--- shown (what the user reads); returns it.
function M.wait_for_notice(text, action)
  local said = {}
  local notify = vim.notify
  vim.notify = function(msg, ...)
    table.insert(said, msg)
    return notify(msg, ...)
  end
  local ok, err = pcall(action)
  local found
  local waited, werr = pcall(M.wait_for, "the notice " .. text, function()
    for _, m in ipairs(said) do
      if tostring(m):find(text, 1, true) then
        found = m
        return true
      end
    end
  end)
  vim.notify = notify
  assert(ok, err)
  assert(waited, werr)
  return found
end

--- setup() pointing at `url` (an OpenAI-compatible fake), quiet UI.
function M.setup(url, extra)
  local opts = vim.tbl_deep_extend("force", {
    llm = { provider = "openai", url = url .. "/v1", model = "fake-model", max_retries = 0, timeout_ms = 10000 },
    ui = { progress = false },
    sync = { debounce_ms = 20 },
  }, extra or {})
  assert(require("chimera").setup(opts))
end

return M
