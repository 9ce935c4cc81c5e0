-- One evaluation task through the real plugin, in a headless Neovim:
-- open the file at the cursor line, spawn the agent, wait, accept the
-- proposal, save. Prints one JSON line with the outcome.
local task = vim.json.decode(io.open(vim.env.EVAL_TASK):read("*a"))
vim.opt.rtp:prepend(vim.env.CHIMERA_REPO)
vim.cmd("runtime plugin/chimera.lua")
local chimera = require("chimera")
local llm = {
  provider = "openai",
  url = vim.env.EVAL_URL,
  model = vim.env.EVAL_MODEL,
  timeout_ms = 180000,
  max_retries = 1,
}
if vim.env.EVAL_EDIT_FORM and vim.env.EVAL_EDIT_FORM ~= "" then
  llm.edit_form = vim.env.EVAL_EDIT_FORM
end
if vim.env.EVAL_JSON == "1" then
  llm.json_output = true
end
local agents = { mode = vim.env.EVAL_MODE or "code" }
if vim.env.EVAL_CANDIDATES and vim.env.EVAL_CANDIDATES ~= "" then
  agents.candidates = tonumber(vim.env.EVAL_CANDIDATES)
end
assert(chimera.setup({ llm = llm, agents = agents, ui = { progress = false } }))
-- Where the person types the task: in its file at its line, in a buffer
-- of no file, or in another file of the project.
local from = vim.env.EVAL_FROM or "file"
if from == "file" then
  vim.cmd.edit(task.file)
  pcall(vim.api.nvim_win_set_cursor, 0, { task.line or 1, 0 })
elseif from == "other" then
  local ext = task.file:match("%.(%w+)$") or "py"
  local others = vim.tbl_filter(function(f)
    return f ~= task.file and not f:find("__init__", 1, true)
  end, vim.fn.glob("**/*." .. ext, false, true))
  table.sort(others)
  vim.cmd.edit(others[1])
  pcall(vim.api.nvim_win_set_cursor, 0, { 3, 0 })
else
  vim.cmd.enew()
end
local t0 = vim.uv.hrtime()
local id = chimera.spawn(task.task)
local state = chimera.wait(id, 400000)
local ms = (vim.uv.hrtime() - t0) / 1e6
local a = chimera.agent(id) or {}
local accepted = false
if state == "completed" then
  chimera.accept(id)
  vim.wait(10000, function()
    return chimera.agent(id).state ~= "completed"
  end, 10)
  accepted = chimera.agent(id).state == "accepted"
  vim.wait(100)
  vim.cmd("silent! wall")
end
io.stdout:write(vim.json.encode({
  state = state,
  accepted = accepted,
  ms = ms,
  rounds = a.rounds,
  error = a.error,
  summary = a.summary,
}) .. "\n")
io.stdout:flush()
os.exit(0)
