-- Shared by the headless demo scripts: loads the plugin from
-- $CHIMERA_REPO, sets it up against the model server at $CHIMERA_DEMO_URL
-- (named $CHIMERA_DEMO_MODEL: its size picks the small-model paths), with
-- `extra` options over that. Returns the plugin and a print that flushes.
return function(extra)
  vim.opt.rtp:prepend(vim.env.CHIMERA_REPO)
  vim.cmd("runtime plugin/chimera.lua")
  local chimera = require("chimera")
  chimera.setup(vim.tbl_deep_extend("force", {
    llm = {
      provider = "openai",
      url = vim.env.CHIMERA_DEMO_URL,
      model = vim.env.CHIMERA_DEMO_MODEL or "qwen2.5-coder",
      timeout_ms = 120000,
    },
    ui = { progress = false },
  }, extra or {}))
  local function say(s)
    io.stdout:write(s .. "\n")
    io.stdout:flush()
  end
  return chimera, say
end
