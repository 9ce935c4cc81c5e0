-- Chats with Remora nodes of the demo sample against a real model and
-- reports, per request, whether the node's agent reached a proposal (or a
-- message to another node) and how long it took. Proposals are rejected so
-- every request starts from the same file.
local chimera, say = dofile(vim.env.CHIMERA_REPO .. "/scripts/demo/setup.lua")({ remora = { cooldown_ms = 0 } })
vim.cmd.edit("app.py")
chimera.start()
vim.wait(30000, function()
  return #chimera.nodes() > 3
end, 50)
local only = tonumber(vim.env.ONLY or "")
local requests = {
  { "parse_config", "add a docstring" },
  { "greet", "add type hints" },
  { "greet", "use an f-string" },
  { "main", "print a blank line after the greeting" },
  { "parse_config", "skip keys that start with an underscore" },
  { "main", "ask greet with message_node to add a docstring", expect = "message" },
}
local events = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "ChimeraRemoraEvent",
  callback = function(ev)
    table.insert(events, ev.data)
  end,
})
local ok, times, tried = 0, {}, 0
for i, r in ipairs(requests) do
  if only and i ~= only then
    goto continue
  end
  tried = tried + 1
  local node
  for _, n in ipairs(chimera.nodes()) do
    if n.name == r[1] then
      node = n
    end
  end
  events = {}
  local t0 = vim.uv.hrtime()
  require("chimera.remora").chat(node.id, r[2])
  local outcome
  vim.wait(300000, function()
    for _, e in ipairs(events) do
      if e.event_type == "RewriteProposalEvent" and e.agent_id == node.id then
        outcome = "proposal"
      elseif e.event_type == "AgentMessageEvent" and e.from_agent == node.id then
        outcome = "message to " .. e.to_agent
      elseif e.event_type == "AgentErrorEvent" and e.agent_id == node.id then
        outcome = outcome or ("error: " .. e.error:sub(1, 120))
      elseif e.event_type == "AgentCompleteEvent" and e.agent_id == node.id then
        outcome = outcome or "completed without change"
      end
    end
    return outcome ~= nil
  end, 50)
  local s = (vim.uv.hrtime() - t0) / 1e9
  local good = (outcome or ""):match("^" .. (r.expect or "proposal")) ~= nil
  if good then
    ok = ok + 1
    table.insert(times, s)
  end
  say(("  %d. %s: %q -> %s (%.1f s)"):format(i, r[1], r[2], outcome or "timeout", s))
  for _, e in ipairs(events) do
    if e.event_type == "RewriteProposalEvent" then
      for _, l in ipairs(vim.split(e.new_source, "\n")) do
        say("       | " .. l)
      end
      chimera.reject(e.proposal_id)
    end
  end
  vim.wait(5000, function()
    return #chimera.proposals() == 0
  end, 20)
  vim.wait(500)
  ::continue::
end
table.sort(times)
say(("remora node chat: %d/%d requests ended as expected (a proposal, or a message for the last); median %.1f s"):format(
  ok,
  tried,
  #times > 0 and times[math.floor((#times + 1) / 2)] or 0
))
os.exit(0)
