-- `make demo HEADLESS=1`: the demo scenario without a UI. Spawns the agent,
-- waits for its proposal, prints it, accepts it and prints the result.
local chimera, say = dofile(vim.env.CHIMERA_REPO .. "/scripts/demo/setup.lua")()
vim.cmd.edit("app.py")
local buf = vim.api.nvim_get_current_buf()
local task = vim.env.DEMO_TASK or "add a docstring to parse_config"
local t0 = vim.uv.hrtime()
local id = chimera.spawn(task, { mode = vim.env.DEMO_MODE })
say(("task:  %s (agent %s)"):format(task, id))
local state = chimera.wait(id, 300000)
local shown
vim.wait(2000, function()
  shown = #require("chimera.ghost").extmarks(buf) > 0
  return shown
end, 5)
local ms = (vim.uv.hrtime() - t0) / 1e6
local a = chimera.agent(id)
say(("state: %s after %.1f s%s"):format(state, ms / 1000, a.error and (" — " .. a.error) or ""))
if state ~= "completed" then
  os.exit(1)
end
say("summary: " .. (a.summary or ""))
say("proposal (ghost text " .. (shown and "shown" or "NOT shown") .. "):")
for _, p in ipairs(chimera.proposals()) do
  for _, f in ipairs(p.files) do
    say("  " .. f.path)
    for _, hk in ipairs(f.hunks) do
      say(("  @@ line %d"):format(hk.old_start + 1))
      for _, l in ipairs(hk.old_lines) do
        say("  - " .. l)
      end
      for _, l in ipairs(hk.new_lines) do
        say("  + " .. l)
      end
    end
  end
end
chimera.accept(id)
vim.wait(5000, function()
  return chimera.agent(id).state == "accepted"
end, 10)
say("accepted: " .. tostring(chimera.agent(id).state == "accepted"))
vim.cmd("silent write")
say("result (app.py):")
for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, 14, false)) do
  say("  | " .. l)
end
os.exit(0)
