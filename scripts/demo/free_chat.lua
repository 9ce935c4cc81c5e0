-- The free chat against a real local model: per round, a question (the
-- turn must end in a reply) and a change request (it must end in a
-- proposal that parses). Prints one line per turn and a tally.
local chimera, say = dofile(vim.env.CHIMERA_REPO .. "/scripts/demo/setup.lua")()
vim.cmd.edit("app.py")
local rounds = tonumber(vim.env.CHAT_ROUNDS or "5")
local turns = {
  { "What does parse_config return?", "reply" },
  { "Add a docstring to greet.", "proposal" },
}
local ok, total = 0, 0
for round = 1, rounds do
  vim.cmd("Chimera chat --clear")
  assert(vim.bo.buftype ~= "", "the chat buffer is current")
  for _, turn in ipairs(turns) do
    local t0 = vim.uv.hrtime()
    -- As typed in the chat buffer.
    local id = require("chimera.chat").send("free", turn[1])
    local state = chimera.wait(id, 300000)
    local a = chimera.agent(id) or {}
    local got
    if state == "completed" and #(a.changed_files or {}) > 0 then
      got = "proposal"
      chimera.reject(id)
    elseif state == "completed" or state == "accepted" then
      -- An answer leaves nothing to review; its turn ends accepted.
      got = "reply"
    else
      got = state .. ": " .. tostring(a.error)
    end
    total = total + 1
    if got == turn[2] then
      ok = ok + 1
    end
    say(("round %d %-32s -> %s in %.1f s: %s"):format(round, turn[1], got, (vim.uv.hrtime() - t0) / 1e9,
      (a.summary or ""):gsub("\n", " "):sub(1, 100)))
    if vim.env.CHAT_DEBUG and got ~= turn[2] then
      vim.cmd("Chimera chat --free")
      vim.wait(2000)
      for _, e in ipairs(chimera.chat_entries()) do
        if e.agent_id == id then
          say(("    %s: %s"):format(e.role, e.content:gsub("\n", " | "):sub(1, 300)))
        end
      end
      vim.cmd("close")
    end
  end
end
say(("free chat: %d/%d turns ended as asked (a reply to the question, a proposal for the change)"):format(ok, total))
os.exit(0)
