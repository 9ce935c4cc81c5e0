--- `:checkhealth chimera`: the library, Neovim, the database and the LLM.
local M = {}

--- The project's own .chimera/config.json: Neovim reads only setup{}; the
--- `chimera` command applies it, minus what waits for `chimera trust`.
function M.check_project_options(h, lib, root)
  if not (lib and root) then
    return
  end
  local ok, p = pcall(lib.project_options, root)
  if not ok or not p then
    return
  end
  if p.trusted == nil then
    h.warn(("%s cannot be used by the chimera command: %s"):format(p.file, p.error))
  elseif p.trusted then
    h.info(("%s is trusted (chimera trust): the chimera command applies all of it; Neovim uses setup{}"):format(p.file))
  elseif #p.ignored > 0 then
    h.warn(
      ("%s is not trusted, so the chimera command ignores %s%s; Neovim uses setup{} alone"):format(
        p.file,
        table.concat(p.ignored, ", "),
        p.error and (" (" .. p.error .. ")") or ""
      ),
      { "a cloned repository chooses that file: read it, then run `chimera trust` in the project" }
    )
  else
    h.info(("%s sets nothing that needs trust; Neovim uses setup{}"):format(p.file))
  end
end

function M.check()
  local h = vim.health
  local state = require("chimera.state")
  local loader = require("chimera.loader")

  h.start("Chimera: native library")
  local lib, err = loader.load()
  if lib then
    h.ok(("library %s loaded (version %s, commit %s), matches the plugin%s"):format(
      loader.active_path(),
      lib.version(),
      lib.commit(),
      vim.env.CHIMERA_LIB and " ($CHIMERA_LIB)" or ""
    ))
  else
    h.error(err)
  end

  h.start("Chimera: Neovim")
  if vim.fn.has("nvim-0.11") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim 0.11 or newer is required, this is " .. tostring(vim.version()))
  end

  if lib then
    h.start("Chimera: languages")
    for _, l in ipairs(lib.languages()) do
      local exts = l.extensions:gsub("(%S+)", ".%1")
      if l.error then
        h.error(("%s (%s): %s"):format(l.name, exts, l.error), {
          "nodes and edit forms in these files do not work; please report it",
        })
      else
        h.ok(("%s (%s): queries compiled, IDs as `%s rm_…`"):format(l.name, exts, l.comment))
      end
    end
  end

  h.start("Chimera: configuration")
  if state.config then
    h.ok("setup() was called")
    h.info(("llm: %s %s, model %s"):format(state.config.llm.provider, state.config.llm.url, state.config.llm.model))
    local ok_form, form = false, nil
    if lib then
      ok_form, form = pcall(lib.edit_form, require("chimera.config").to_json(state.config))
    end
    if ok_form then
      h.info("code-mode agents are asked for " .. form)
    end
  else
    h.warn("setup() was not called; defaults are used", { "add require('chimera').setup({}) to your config" })
  end
  M.check_project_options(h, lib, state.root)

  h.start("Chimera: database")
  if state.root then
    local db = state.root .. "/.chimera/chimera.db"
    local lib = require("chimera.loader").load()
    local broken = vim.uv.fs_stat(db) and lib and lib.check_database(state.root)
    if broken then
      h.error("the database cannot be used: " .. broken, {
        "agents cannot start in this project until it is fixed",
        "move " .. state.root .. "/.chimera away to start afresh (proposals and snapshots in it are lost)",
      })
    elseif vim.uv.fs_stat(db) then
      h.ok("database " .. db .. (state.ready and " (project imported)" or " (import in progress)"))
    else
      h.error("no database at " .. db, { "check that " .. state.root .. " is writable" })
    end
  else
    h.info("the core starts on first use (:Chimera task …); run :Chimera start to check the database now")
  end

  h.start("Chimera: responsiveness")
  local times = lib and lib.running() and lib.callback_times() or {}
  if #times == 0 then
    h.info("no messages from the core since the last check")
  else
    table.sort(times)
    local worst = times[#times]
    local line = ("the core's messages held the main thread at most %.1f ms (median %.2f ms) over %d deliveries since the last check"):format(
      worst,
      times[math.floor(#times / 2) + 1],
      #times
    )
    if worst > 16 then
      h.warn(line, { "longer than a frame: please report it with what Chimera was doing" })
    else
      h.ok(line)
    end
  end

  h.start("Chimera: Remora")
  if not (state.config and state.config.remora.index) then
    h.info("remora.index is off: no nodes are indexed")
  elseif lib and state.root then
    local ok, stats = pcall(lib.remora_stats)
    if ok and stats then
      h.ok(("Remora index: %d nodes in %d files, %d edges; IDs %s"):format(
        stats.nodes,
        stats.files,
        stats.edges,
        state.config.remora.ids == "inline" and "inline (after :Chimera remora enable)" or "in the database only"
      ))
    else
      h.error("cannot read the Remora index: " .. tostring(stats))
    end
  else
    h.info("start the core (:Chimera start) to check the Remora index")
  end

  require("chimera.keymaps").check(h)
  M.check_tools(h, state.config, state.root)
  M.check_clients(h, state)
  M.check_acp(h, state.config)

  h.start("Chimera: LLM server")
  if not lib then
    h.info("the library is needed to check the LLM server")
    return
  end
  local st
  if state.root and lib.running() then
    -- The core's own options (a project's .chimera/config.json included).
    state.llm_status = nil
    if pcall(lib.check_llm) then
      vim.wait(10000, function()
        return state.llm_status ~= nil
      end, 20)
    end
    st = state.llm_status
  else
    local ok, res = pcall(lib.check_llm_now, require("chimera.config").to_json(state.config or require("chimera.config").resolve({})))
    st = ok and res or { ok = false, message = tostring(res), models = {} }
  end
  if not st then
    h.error("no answer from the core while checking the LLM server")
  elseif st.ok and st.warning then
    h.warn(st.message, {
      ("give the server's model the same name (llama.cpp: --alias %s), or keep llm.model if its size is right"):format(
        state.config and state.config.llm.model or "NAME"
      ),
    })
  elseif st.ok then
    h.ok(st.message)
  elseif st.models and #st.models > 0 then
    h.error(st.message, { "set llm.model to one of: " .. table.concat(st.models, ", ") })
  else
    h.error(st.message, {
      "start the server (make demo starts a local llama.cpp server), or set llm.url / llm.model in setup()",
    })
  end
end

--- ACP agents (agents.external): their programs can be started.
function M.check_acp(h, config)
  local agents = config and config.agents.external or {}
  if vim.tbl_isempty(agents) then
    return
  end
  h.start("Chimera: ACP agents")
  local lib = require("chimera.loader").load()
  local can_confine = lib and lib.can_confine and lib.can_confine()
  local names = vim.tbl_keys(agents)
  table.sort(names)
  for _, name in ipairs(names) do
    local agent = agents[name]
    local program = agent.command[1]
    if vim.fn.executable(program) == 1 then
      h.ok(("%s: %s (:Chimera task --agent %s …)"):format(name, table.concat(agent.command, " "), name))
    else
      h.error(("%s: `%s` is not an executable on PATH"):format(name, program), {
        "install it, or give its full path in agents.external." .. name .. ".command",
      })
    end
    if agent.unconfined then
      h.warn(("%s runs unconfined: only its good manners keep it out of your files and secrets"):format(name), {
        "remove agents.external." .. name .. ".unconfined where the kernel can confine it (:help chimera-confinement)",
      })
    elseif can_confine then
      h.ok(("%s is confined by the kernel to its own folder (it cannot read or change the project)"):format(name))
      if lib.agent_network then
        local hosts, why = lib.agent_network(name, vim.json.encode(agent))
        if hosts and #hosts > 0 then
          h.info(("%s's network reaches only %s"):format(name, table.concat(hosts, ", ")))
        elseif hosts then
          h.info(("%s has no network (agents.external.%s.network names no host)"):format(name, name))
        else
          h.error(("%s: %s"):format(name, tostring(why)), {
            "give agents.external." .. name .. ".network as URLs or host:port (:help chimera-confinement)",
          })
        end
      end
    elseif lib then
      h.error(("%s cannot start: this system cannot confine it (Linux with Landlock, or macOS, is needed)"):format(name), {
        "set agents.external." .. name .. ".unconfined = true to run it anyway, at your own risk",
      })
    end
  end
end

--- Clients outside Neovim: the control socket and the HTTP API.
function M.check_clients(h, state)
  h.start("Chimera: clients outside Neovim")
  local api_on = state.config and state.config.api.enabled
  local served = require("chimera").served()
  if not served then
    h.info("start the core (:Chimera start) to serve the `chimera` command" .. (api_on and " and the HTTP API" or ""))
    return
  end
  if served.own then
    h.ok("this Neovim serves the project to the `chimera` command on " .. served.socket)
    h.info(("MCP hosts (Claude Code, Cursor…) propose here through `chimera mcp serve --root %s` (:help chimera-mcp-server)"):format(state.root))
  elseif served.pid then
    h.info(("process %d (another Neovim, or `chimera serve`) serves the project on %s; this one takes over when it stops"):format(
      served.pid,
      served.socket
    ))
  else
    h.warn("no core serves " .. served.socket .. " yet", { "a core takes it as it starts; see :messages for why it could not" })
  end
  if served.api then
    h.ok(("HTTP API and dashboard on http://127.0.0.1:%d/, MCP on /mcp (token in %s/.chimera/api.json; :Chimera dashboard opens it)"):format(
      served.api.port,
      state.root
    ))
  elseif api_on and served.own then
    h.warn("api.enabled is set but the HTTP API is not listening", { "see :messages: the port may be taken (api.port)" })
  elseif not api_on then
    h.info("HTTP API off (set `api = { enabled = true }` for the web dashboard)")
  end
end

--- The project's rules files Chimera's agents read (AGENTS.md, CLAUDE.md,
--- .github/copilot-instructions.md), for the file in view.
function M.check_rules(h, config, root)
  local lib = require("chimera.loader").load()
  root = root or vim.fs.root(0, ".git") or vim.fn.getcwd()
  if not (lib and lib.project_rules) then
    return
  end
  -- The file last in view (the health report is in a buffer of its own).
  local last
  for _, b in ipairs(vim.fn.getbufinfo({ buflisted = 1 })) do
    if b.name ~= "" and vim.bo[b.bufnr].buftype == "" and (not last or b.lastused > last.lastused) then
      last = b
    end
  end
  local file = last and last.name or ""
  local near = vim.startswith(file, root .. "/") and file:sub(#root + 2) or nil
  local ok, found = pcall(lib.project_rules, root, require("chimera.config").to_json(config), near)
  if not ok then
    return h.warn("the project's rules files could not be read: " .. tostring(found))
  end
  if #found == 0 then
    return h.info("no project rules for agents (AGENTS.md, CLAUDE.md, .github/copilot-instructions.md)")
  end
  for _, f in ipairs(found) do
    h.ok(("agents read the project's rules in %s (%d characters%s)"):format(
      f.path,
      f.chars,
      f.cut > 0 and (", %d more cut: rules are capped"):format(f.cut) or ""
    ))
  end
end

--- Tools beyond the project: capabilities, web search, MCP servers.
function M.check_tools(h, config, root)
  h.start("Chimera: tools and capabilities")
  if not config then
    h.info("call require('chimera').setup() to check the tools")
    return
  end
  local caps = config.capabilities
  local tests = config.tests.command
  if tests == "off" then
    h.info("the project's tests are not run on agents' changes (tests.command = \"off\")")
  else
    local lib = require("chimera.loader").load()
    local where = lib and lib.tests_environment and lib.tests_environment(root or vim.fn.getcwd())
    if tests == "auto" and where and not where.runner then
      -- The project's own tool (npm test, cargo test…), or none found.
      local report = vim.startswith(where.describe, "none:") and h.warn or h.ok
      report(("agents' changes are tested with %s (tests.command = \"auto\")"):format(where.describe))
    elseif tests == "auto" then
      h.ok(("agents' changes are tested with %s, by the test files that import what changed (tests.command)"):format(
        where and where.describe or "pytest or unittest"
      ))
      if where and where.runner == "unittest" then
        h.info("pytest is not in that environment: pytest-style tests will not load (install it there, e.g. `pip install pytest`)")
      end
    else
      local line = type(tests) == "table" and table.concat(tests, " ") or tostring(tests)
      h.ok(("agents' changes are tested with `%s`%s (tests.command)"):format(line, where and (", in " .. where.found) or ""))
    end
    -- One run of the tests as the project is now, before a proposal
    -- depends on them: passing, failing, or why they cannot run.
    if lib and lib.tests_now then
      local ok, said, level = pcall(lib.tests_now, root or vim.fn.getcwd(), require("chimera.config").to_json(config))
      if ok then
        local report = ({ ok = h.ok, warn = h.warn })[level] or h.info
        report("the project's tests as they are now: " .. said)
      else
        h.warn("the project's tests could not be tried: " .. tostring(said))
      end
    end
  end
  h.ok(("agents run as %q (%s mode, tool calls %s)"):format(caps.preset, config.agents.mode, config.agents.tool_calls))
  M.check_rules(h, config, root)
  local function preset_allows(key)
    if caps[key] == nil then
      return caps.preset == "developer"
    end
    return caps[key]
  end
  local may_snapshot, may_rollback = preset_allows("snapshot"), preset_allows("rollback")
  if may_snapshot and may_rollback then
    h.ok("agents may checkpoint their own changes and roll them back (snapshot(), rollback(); never your files)")
  elseif may_snapshot or may_rollback then
    h.warn(("agents may %s but not %s: set capabilities.snapshot and capabilities.rollback alike"):format(
      may_snapshot and "checkpoint (snapshot())" or "roll back (rollback())",
      may_snapshot and "roll back to a checkpoint" or "take a checkpoint"
    ))
  else
    h.info("agents may not checkpoint their own changes (capabilities.snapshot / rollback; on in the developer preset)")
  end
  if #caps.env > 0 then
    h.ok("agents may read the environment variables " .. table.concat(caps.env, ", ") .. " (capabilities.env)")
  end
  if caps.preset == "developer" and #caps.commands == 0 then
    h.warn("the developer preset allows capabilities.commands, which is empty: run_command runs nothing")
  end
  local lib = require("chimera.loader").load()
  if (tests ~= "off" or #caps.commands > 0) and lib and lib.can_confine then
    if lib.can_confine() then
      h.ok("the programs agents run (tests, run_command) are confined by the kernel to a copy of the project")
      if lib.confinement then
        h.info("confinement: " .. lib.confinement())
      end
    elseif config.agents.run_unconfined then
      h.warn("the programs agents run (tests, run_command) run unconfined (agents.run_unconfined): one that names your files by their full path reaches them, and your environment", {
        "a Linux kernel with Landlock (5.13 or later, enabled) or macOS confines them (:help chimera-confinement)",
      })
    else
      h.error("this system cannot confine programs: the tests and run_command are refused (each task says so)", {
        "a Linux kernel with Landlock (5.13 or later, enabled) or macOS confines them (:help chimera-confinement)",
        "or set agents.run_unconfined = true to run them unconfined, at your own risk",
        "or set tests.command = \"off\" and leave capabilities.commands empty",
      })
    end
  end
  local url = config.tools.web_search_url
  if not url then
    h.info("web_search is off (set tools.web_search_url to a SearXNG endpoint)")
  else
    local host = url:match("^%a+://([^/]+)") or ""
    local name = host:gsub(":%d+$", "")
    if vim.tbl_contains(caps.hosts, host) or vim.tbl_contains(caps.hosts, name) then
      h.ok("web_search through " .. url)
    else
      h.warn("web_search is configured but " .. name .. " is not in capabilities.hosts, so no agent may use it")
    end
  end
  local names = vim.tbl_keys(config.mcp.servers)
  table.sort(names)
  if #names == 0 then
    h.info("no MCP servers configured (mcp.servers)")
  end
  for _, name in ipairs(names) do
    local server = config.mcp.servers[name]
    local allowed = vim.tbl_filter(function(p)
      return p:sub(1, #name + 1) == name .. "." or p:match("^[%*%?%[{]") ~= nil
    end, caps.mcp)
    local where = server.url or table.concat(server.command, " ")
    if server.command and vim.fn.executable(server.command[1]) ~= 1 then
      h.error(("MCP server %s: `%s` is not an executable on $PATH"):format(name, server.command[1]))
    elseif #allowed == 0 then
      h.warn(("MCP server %s (%s): no capabilities.mcp pattern allows its tools, so it is never started"):format(name, where))
    else
      h.ok(("MCP server %s (%s), tools allowed: %s"):format(name, where, table.concat(allowed, ", ")))
    end
  end
end

return M
