-- One cycle of the Neovim crash harness (tests/crash/nvim_crash.py): spawn
-- an agent whose proposal rewrites ten files that are not loaded, wait for
-- it, say "ready", wait for the harness's "go" file, and accept. The
-- harness kills this Neovim with SIGKILL at a random moment around then.
vim.opt.rtp:prepend(vim.env.CHIMERA_REPO)
vim.cmd("runtime plugin/chimera.lua")
local chimera = require("chimera")
chimera.setup({
  llm = { provider = "openai", url = vim.env.CRASH_LLM_URL .. "/v1", model = "m", max_retries = 0 },
  ui = { progress = false },
  sync = { watch = false },
})
local go = vim.env.CRASH_GO
if vim.env.CRASH_RECOVER == "1" then
  -- After a kill: start, let recovery rebase, accept what is left.
  chimera.start()
  vim.wait(10000, function()
    local a = chimera.agent("crash01")
    return a and (a.state == "accepted" or (a.state == "completed" and chimera.proposals()[1] ~= nil)
      or a.state == "completed")
  end, 5)
  local a = chimera.agent("crash01")
  if vim.env.CRASH_RECOVER_ONLY == "1" then
    io.stdout:write((a or {}).state or "none", "\n")
    io.stdout:flush()
    os.exit(0)
  end
  if a and a.state == "completed" then
    vim.wait(1000, function()
      return chimera.proposals()[1] ~= nil
    end, 5)
    if chimera.proposals()[1] then
      chimera.accept("crash01")
      vim.wait(10000, function()
        return chimera.agent("crash01").state == "accepted"
      end, 5)
    end
  end
  io.stdout:write((chimera.agent("crash01") or {}).state or "none", "\n")
  io.stdout:flush()
  os.exit(0)
end
-- A fixed id lets the harness find the record.
local lib = require("chimera.loader").require()
chimera.start()
require("chimera.state").agents.crash01 = { id = "crash01", state = "queued", task = "crash", created_at = 0 }
lib.spawn("crash01", { task = "rewrite every module" })
if chimera.wait("crash01", 20000) ~= "completed" then
  io.stdout:write("not completed: ", tostring((chimera.agent("crash01") or {}).error), "\n")
  os.exit(1)
end
io.stdout:write("ready\n")
io.stdout:flush()
vim.wait(20000, function()
  return vim.uv.fs_stat(go) ~= nil
end, 1)
io.stdout:write("accepting\n")
io.stdout:flush()
chimera.accept("crash01")
vim.wait(10000, function()
  return chimera.agent("crash01").state == "accepted"
end, 1)
io.stdout:write("accepted\n")
io.stdout:flush()
os.exit(0)
