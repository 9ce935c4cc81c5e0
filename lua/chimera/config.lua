--- Chimera's options: one commented defaults table, and the validation
--- that turns the user's `setup{}` options into the configuration handed to
--- the native core (as JSON, parsed into a typed Rust `Config`).
local M = {}

M.defaults = {
  -- Project root. nil: the nearest ancestor of the current directory that
  -- holds `.git` (else the current directory). The database lives in
  -- `<root>/.chimera/chimera.db`.
  root = nil,
  llm = {
    -- "ollama" (POST /api/chat), "openai" (POST /v1/chat/completions:
    -- llama.cpp server, vLLM, LM Studio, hosted APIs), "anthropic"
    -- (POST /v1/messages) or "gemini" (Google's generateContent).
    provider = "ollama",
    -- Base URL as other clients take it: http://127.0.0.1:11434 for
    -- Ollama, http://127.0.0.1:8080/v1 for OpenAI-compatible servers.
    url = "http://127.0.0.1:11434",
    model = "qwen2.5-coder:7b",
    -- Name of the environment variable holding the API key (nil: none).
    api_key_env = nil,
    -- How long the LLM server may stay silent (no part of the reply yet,
    -- or none since the last) before a request is given up, in ms.
    timeout_ms = 120000,
    -- Time limit of one whole request, however steadily it streams, in ms.
    request_timeout_ms = 1800000,
    -- Retries after connection errors, timeouts and 5xx answers.
    max_retries = 2,
    -- Stream replies (shows progress; detects cut-off replies).
    stream = true,
    temperature = 0.2,
    -- Upper bound of tokens generated per reply.
    max_tokens = 2048,
    -- What the model is asked to answer with; every form is accepted:
    -- "program" (Python calling host functions; multi-file changes),
    -- "definitions" (the new version of each changed function/class; what
    -- small models do well), or "auto": a program for models of 7B and up,
    -- definitions for smaller or unnamed ones when the task has a file.
    edit_form = "auto",
    -- Per-model overrides of edit_form: a model name, or a glob over names,
    -- to a form, e.g. { ["qwen2.5-coder:7b"] = "definitions", ["*0.5b*"] = "program" }.
    edit_forms = {},
    -- Model name or glob -> { input = $, output = $ } per million tokens.
    prices = {},
    -- Context window in tokens when the server does not report it
    -- (llama.cpp /props is asked first). Ollama runs a model with the
    -- window a request asks for: this one (sent as num_ctx), or the
    -- model's own when smaller.
    context_tokens = 8192,
    -- How long Ollama keeps the model loaded after a request ("30m", a
    -- number of seconds, -1 for ever; false: Ollama's default).
    keep_alive = "30m",
    -- Passed as they are: Ollama's `options` ({ num_gpu = 20, top_k = 40 }),
    -- top-level sampling fields for OpenAI-compatible servers
    -- ({ top_p = 0.9, seed = 1 }). They win over Chimera's own.
    options = {},
    -- More top-level fields of every chat request, e.g.
    -- { reasoning = { effort = "low" } }; never a field Chimera sets.
    extra_body = {},
    -- Headers of every request, e.g. { ["api-key"] = "${AZURE_OPENAI_KEY}" }
    -- (Azure) or { ["HTTP-Referer"] = "…" } (OpenRouter); ${VAR} is read
    -- from the environment.
    headers = {},
    -- A model per role on the same server, e.g. { chat = "qwen2.5-coder:1.5b",
    -- ask_llm = "qwen2.5-coder:0.5b" }. Roles: task (code-mode tasks),
    -- tools (tool-mode tasks), chat (free-chat turns), ask_llm (a program's
    -- ask_llm()), node (Remora node agents). Unnamed roles use `model`.
    roles = {},
    -- Ask for JSON {summary, code} through the server's constrained output
    -- (llama.cpp response_format, Ollama format) in the definitions form.
    json_output = false,
  },
  agents = {
    -- Agents running at once; the others wait in state "queued".
    max_concurrent = 3,
    -- Times a failing program goes back to the model with its error.
    repair_rounds = 2,
    candidates = 4,
    -- CPU time one sandboxed program may use (LLM waits not counted), ms.
    sandbox_timeout_ms = 5000,
    -- Memory one sandboxed program may take, MB; past it, a MemoryError.
    sandbox_memory_mb = 512,
    -- Python recursion limit inside the sandbox.
    max_recursion = 200,
    -- Time an agent may go without progress (a step, a part of the
    -- model's reply), ms; then it fails.
    timeout_ms = 300000,
    -- Ended agents (accepted, rejected, failed, cancelled), the content
    -- only they referenced and older effect-log entries are purged after
    -- this many hours (at start and every hour).
    retention_hours = 24,
    -- Times a proposal rejected with feedback is attempted again.
    feedback_rounds = 3,
    -- "code": the model writes Python (a program calling the host
    -- functions, or the new definitions). "tools": the model calls one
    -- tool per reply as JSON. A task can choose: spawn(task, {mode = ...}).
    mode = "code",
    -- Tool calls a tool-mode agent may make before it fails.
    max_iterations = 10,
    -- Time limit of one run_command (capabilities "developer"), ms.
    command_timeout_ms = 60000,
    -- Where this system cannot confine programs (no Landlock), run the
    -- project's tests and run_command anyway, unconfined (else refused).
    run_unconfined = false,
    -- How tool mode asks for calls: "native" (the provider's tool calling),
    -- "text" (one JSON object per reply, constrained where the server can),
    -- or "auto": native, except on llama.cpp servers.
    tool_calls = "auto",
    -- Coding agents of yours that speak the Agent Client Protocol, by name;
    -- `:Chimera task --agent NAME` gives them a task. Their reads and
    -- writes go through Chimera (your unsaved buffers in, a proposal out):
    --   opencode = { command = { "opencode", "acp" } },
    --   gemini = { command = { "gemini", "--experimental-acp" }, env = { GEMINI_API_KEY = "…" } },
    -- Each may also say `readable`, `writable` (lists of folders),
    -- `network` (URLs or host:port it may reach), `pass_env` (your
    -- variables it gets), `kind` and `unconfined` (:help chimera-confinement).
    external = {},
  },
  -- Tools beyond the project.
  tools = {
    -- A SearXNG-compatible search (GET <url>/search?q=...&format=json)
    -- for the web_search tool; nil: no web_search. Its host must also be
    -- in capabilities.hosts.
    web_search_url = nil,
    -- Results web_search returns.
    web_search_results = 5,
  },
  -- The project's tests, run on an agent's change before it is proposed
  -- (in a scratch copy: the human's files are never touched). A failure
  -- the change brought in goes back to the model as a repair round; the
  -- proposal's summary says how the tests went.
  tests = {
    -- "auto": the test files that import a changed module, with pytest
    -- when it is installed, else unittest. "off": never. Or a command,
    -- run as given in the project's copy: { "make", "test" }.
    command = "auto",
    -- Time limit of one run, ms.
    timeout_ms = 60000,
  },
  -- MCP servers. Their tools are offered to tool-mode agents as
  -- "server.tool", only where capabilities.mcp allows them. Each server:
  --   name = { command = { "prog", "arg" }, env = { KEY = "value" } }  (stdio)
  --   name = { url = "http://127.0.0.1:8000/mcp" }              (streamable HTTP)
  -- A server is started when an agent that may use it first needs it.
  -- Other agents (A2A) a tool-mode agent may hand a task to with its
  -- `delegate` tool; each one's host must be in capabilities.hosts:
  --   name = { url = "http://127.0.0.1:8765", token = "…" }
  a2a = {
    peers = {},
  },
  mcp = {
    servers = {},
    -- Time limit of one request to a server (start-up included), ms.
    timeout_ms = 30000,
  },
  -- An HTTP API and web dashboard for the project, on 127.0.0.1 only.
  -- Their port and token are written to .chimera/api.json (readable by
  -- you alone); `:Chimera dashboard` opens the page. See :h chimera-http.
  api = {
    enabled = false,
    -- 0: any free port.
    port = 0,
  },
  sync = {
    -- Quiet time before file-system changes are applied, ms.
    debounce_ms = 100,
    -- Files larger than this are never given to agents, bytes.
    max_file_bytes = 2 * 1024 * 1024,
    -- Follow changes made outside Neovim (git checkout, other editors).
    watch = true,
  },
  remora = {
    -- Index the project's Python files, classes, functions and methods as
    -- nodes with stable IDs and edges (calls, imports, inheritance).
    index = true,
    -- "shadow": IDs live in the database only. "inline": also as trailing
    -- `# rm_…` comments, written only after `:Chimera remora enable`.
    ids = "shadow",
    -- Longest chain of node agents messaging one another.
    max_depth = 5,
    -- Time before a node may be activated again by the same chain, ms.
    cooldown_ms = 30000,
    -- Time a node asked a question (message_node with a question, or
    -- yours in its chat) has to answer, ms.
    answer_timeout_ms = 120000,
  },
  -- What agents may do. Presets: "readonly" (read only), "sandbox" (read
  -- the project, write into their overlay, nothing else), "developer"
  -- (sandbox plus the `commands` below). A task can pick one:
  -- spawn(task, {capabilities = "readonly"}).
  capabilities = {
    preset = "sandbox",
    -- Globs of project paths agents may read / write (into their overlay).
    read = { "**" },
    write = { "**" },
    -- Programs a "developer" agent may run (e.g. "pytest").
    commands = {},
    -- Hosts agents may reach, and MCP tools ("server.tool", globs) they may call.
    hosts = {},
    mcp = {},
    -- Environment variables agents may read (env(), os.getenv), by name; globs.
    env = {},
    -- Files no agent may read or write, by name anywhere in the tree.
    secrets = { ".env*", "*.pem", "*.key", "id_*", "*.p12", ".netrc" },
    -- Ask you (vim.ui.select) when an ACP agent asks permission for what
    -- the preset would refuse, instead of refusing it.
    ask = false,
    -- snapshot / rollback (true or false): whether an agent may checkpoint
    -- its own changes and go back to a checkpoint (never your files).
    -- Unset: only the "developer" preset may.
  },
  -- Default mappings; set one to false to skip it. The <Plug> mappings
  -- (<Plug>(chimera-accept), <Plug>(chimera-reject)) always exist.
  keymaps = {
    accept = "<Leader>a",
    reject = "<Leader>r",
  },
  ui = {
    -- Show progress messages while agents work.
    progress = true,
    -- Report agents' progress as LSP $/progress of an in-process client
    -- named "chimera" (fidget.nvim, lualine and vim.lsp.status() show it).
    lsp_progress = true,
    -- Opening a file of a project that has a Chimera store (.chimera/)
    -- starts the core: its proposals come back as ghost text and its
    -- agents resume, with no command. Projects without one cost nothing.
    autostart = true,
  },
}

local enums = {
  ["llm.provider"] = { ollama = true, openai = true, anthropic = true, gemini = true },
  ["llm.edit_form"] = { auto = true, program = true, definitions = true },
  ["remora.ids"] = { shadow = true, inline = true },
  ["agents.mode"] = { code = true, tools = true },
  ["agents.tool_calls"] = { auto = true, native = true, text = true },
  ["capabilities.preset"] = { readonly = true, sandbox = true, developer = true },
}

local positive = {
  ["llm.timeout_ms"] = true,
  ["llm.request_timeout_ms"] = true,
  ["llm.context_tokens"] = true,
  ["agents.max_concurrent"] = true,
  ["agents.sandbox_timeout_ms"] = true,
  ["agents.sandbox_memory_mb"] = true,
  ["agents.max_recursion"] = true,
  ["agents.timeout_ms"] = true,
  ["sync.max_file_bytes"] = true,
  ["remora.max_depth"] = true,
  ["remora.answer_timeout_ms"] = true,
  ["agents.max_iterations"] = true,
  ["agents.command_timeout_ms"] = true,
  ["tools.web_search_results"] = true,
  ["mcp.timeout_ms"] = true,
  ["tests.timeout_ms"] = true,
}

-- Keys whose default is nil, with the type they take.
local optional = {
  root = "string",
  ["llm.api_key_env"] = "string",
  ["tools.web_search_url"] = "string",
  ["capabilities.snapshot"] = "boolean",
  ["capabilities.rollback"] = "boolean",
}

-- Options whose value is a list of strings (replaced, not merged).
local lists = {
  ["capabilities.read"] = true,
  ["capabilities.write"] = true,
  ["capabilities.commands"] = true,
  ["capabilities.hosts"] = true,
  ["capabilities.mcp"] = true,
  ["capabilities.env"] = true,
  ["capabilities.secrets"] = true,
}

local function is_string_list(v)
  if type(v) ~= "table" or not vim.islist(v) then
    return false
  end
  for _, x in ipairs(v) do
    if type(x) ~= "string" then
      return false
    end
  end
  return true
end

-- A program to start: `command` (a list of strings) and `env` (strings).
local function check_program(where, spec)
  if spec.command ~= nil and (not is_string_list(spec.command) or #spec.command == 0) then
    return where .. ": `command` must be a non-empty list of strings (program and arguments)"
  end
  if spec.env ~= nil then
    if type(spec.env) ~= "table" then
      return where .. ": `env` must be a table of strings"
    end
    for k, v in pairs(spec.env) do
      if type(k) ~= "string" or type(v) ~= "string" then
        return where .. ": `env` must map names to strings"
      end
    end
  end
end

-- `mcp.servers`: name -> { command = {...}, env = {...}, pass_env = {...} } or { url = "..." }.
local function check_servers(servers)
  if type(servers) ~= "table" then
    return "chimera: option `mcp.servers` must be a table of servers by name"
  end
  for name, server in pairs(servers) do
    local where = ("chimera: MCP server `mcp.servers.%s`"):format(tostring(name))
    if type(name) ~= "string" or not name:match("^[%w_-]+$") then
      return where .. ": the name must be letters, digits, _ or - (tools are called name.tool)"
    end
    if type(server) ~= "table" then
      return where .. " must be a table { command = {...} } or { url = ... }"
    end
    for key in pairs(server) do
      if key ~= "command" and key ~= "url" and key ~= "env" and key ~= "pass_env" then
        return ("%s: unknown key `%s` (command, env, pass_env, url)"):format(where, tostring(key))
      end
    end
    if (server.command == nil) == (server.url == nil) then
      return where .. ": set either `command` (a stdio server) or `url` (streamable HTTP)"
    end
    if server.url ~= nil and (type(server.url) ~= "string" or not server.url:match("^https?://")) then
      return where .. ": `url` must be an http:// or https:// URL"
    end
    local bad = check_program(where, server)
    if bad then
      return bad
    end
  end
end

-- `a2a.peers`: name -> { url = "http://…", token = "…" }.
local function check_peers(peers)
  if type(peers) ~= "table" then
    return "chimera: option `a2a.peers` must be a table of agents by name"
  end
  for name, peer in pairs(peers) do
    local where = ("chimera: A2A peer `a2a.peers.%s`"):format(tostring(name))
    if type(name) ~= "string" or not name:match("^[%w_-]+$") then
      return where .. ": the name must be letters, digits, _ or -"
    end
    if type(peer) ~= "table" or type(peer.url) ~= "string" or not peer.url:match("^https?://") then
      return where .. " must be a table { url = \"http://…\", token = \"…\" }"
    end
    for key in pairs(peer) do
      if key ~= "url" and key ~= "token" then
        return ("%s: unknown key `%s` (url, token)"):format(where, tostring(key))
      end
    end
    if peer.token ~= nil and type(peer.token) ~= "string" then
      return where .. ": `token` must be a string"
    end
  end
end

-- `agents.external`: name -> { command = {...}, env = {...}, readable, writable,
-- network, pass_env, kind, unconfined } (ACP agents).
local function check_external(agents)
  if type(agents) ~= "table" then
    return "chimera: option `agents.external` must be a table of agents by name"
  end
  for name, agent in pairs(agents) do
    local where = ("chimera: ACP agent `agents.external.%s`"):format(tostring(name))
    if type(name) ~= "string" or not name:match("^[%w_-]+$") then
      return where .. ": the name must be letters, digits, _ or -"
    end
    if type(agent) ~= "table" or agent.command == nil then
      return where .. " must be a table { command = { \"program\", \"arg\" }, env = {...} }"
    end
    local known = {
      command = true,
      env = true,
      readable = true,
      writable = true,
      network = true,
      pass_env = true,
      kind = true,
      unconfined = true,
    }
    for key in pairs(agent) do
      if not known[key] then
        return ("%s: unknown key `%s` (command, env, readable, writable, network, pass_env, kind, unconfined)"):format(
          where,
          tostring(key)
        )
      end
    end
    local lists = {
      readable = "folders or files (strings; ~ is your home)",
      writable = "folders or files (strings; ~ is your home)",
      network = "URLs or host:port (strings)",
      pass_env = "names of your environment variables (strings)",
    }
    for key, what in pairs(lists) do
      local list = agent[key]
      if list ~= nil and (type(list) ~= "table" or not vim.iter(list):all(function(p)
        return type(p) == "string"
      end)) then
        return ("%s: `%s` must be a list of %s"):format(where, key, what)
      end
    end
    if agent.kind ~= nil and type(agent.kind) ~= "string" then
      return where .. ": `kind` must be a string (claude, codex, gemini or opencode)"
    end
    if agent.unconfined ~= nil and type(agent.unconfined) ~= "boolean" then
      return where .. ": `unconfined` must be true or false"
    end
    local bad = check_program(where, agent)
    if bad then
      return bad
    end
  end
end

-- `llm.edit_forms`: model name or glob -> one of the edit forms.
local function check_edit_forms(forms)
  if type(forms) ~= "table" then
    return "chimera: option `llm.edit_forms` must be a table of model name (or glob) -> form"
  end
  local names = vim.tbl_keys(enums["llm.edit_form"])
  table.sort(names)
  for model, form in pairs(forms) do
    if type(model) ~= "string" then
      return "chimera: option `llm.edit_forms` must be keyed by model names, e.g. [\"qwen2.5-coder:7b\"]"
    end
    if not enums["llm.edit_form"][form] then
      return ("chimera: option `llm.edit_forms[%q]` must be one of %s, got %s"):format(
        model,
        table.concat(names, ", "),
        vim.inspect(form)
      )
    end
  end
end

-- `llm.prices`: model name or glob -> { input = n, output = n } (US
-- dollars per million tokens).
local function check_prices(prices)
  if type(prices) ~= "table" then
    return "chimera: option `llm.prices` must be a table of model name (or glob) -> { input = n, output = n }"
  end
  for model, price in pairs(prices) do
    if type(model) ~= "string" then
      return "chimera: option `llm.prices` must be keyed by model names, e.g. [\"gpt-4.1\"]"
    end
    if type(price) ~= "table" or type(price.input) ~= "number" or type(price.output) ~= "number" then
      return ("chimera: option `llm.prices[%q]` must be { input = n, output = n } (US dollars per million tokens), got %s"):format(
        model,
        vim.inspect(price)
      )
    end
  end
end

-- `tests.command`: "auto", "off", or a command: a list of strings, or a
-- line (split as a shell splits it, run without a shell).
local function check_test_command(command)
  if type(command) == "string" and vim.trim(command) ~= "" then
    return nil
  end
  if type(command) == "table" and vim.islist(command) and #command > 0 and is_string_list(command) then
    return nil
  end
  return ('chimera: option `tests.command` must be "auto", "off" or a command, as a line or a list of strings (e.g. "pytest -q" or { "pytest", "-q" }), got %s'):format(
    vim.inspect(command)
  )
end

-- Fields of a chat request Chimera sets itself (llm.extra_body may not).
local own_fields = {
  model = true,
  messages = true,
  stream = true,
  options = true,
  format = true,
  tools = true,
  tool_choice = true,
  response_format = true,
  keep_alive = true,
}

-- `llm.options` / `llm.extra_body`: a table of fields by name.
local function check_fields(path)
  return function(fields)
    if type(fields) ~= "table" or (vim.islist(fields) and #fields > 0) then
      return ("chimera: option `%s` must be a table of fields by name, e.g. { top_p = 0.9 }"):format(path)
    end
    for k in pairs(fields) do
      if type(k) ~= "string" then
        return ("chimera: option `%s` must be keyed by field names"):format(path)
      end
      if path == "llm.extra_body" and own_fields[k] then
        return ("chimera: option `llm.extra_body.%s`: Chimera sets `%s` itself%s"):format(
          k,
          k,
          k == "keep_alive" and " (use llm.keep_alive)" or (k == "options" and " (use llm.options)" or "")
        )
      end
    end
  end
end

-- `llm.headers`: header name -> value.
local function check_headers(headers)
  if type(headers) ~= "table" then
    return "chimera: option `llm.headers` must be a table of header name -> value"
  end
  for k, v in pairs(headers) do
    if type(k) ~= "string" or not k:match("^[%w!#$%%&'*+.^_`|~-]+$") then
      return ("chimera: option `llm.headers`: %s is not a header name"):format(vim.inspect(k))
    end
    if type(v) ~= "string" or v:find("[\r\n]") then
      return ("chimera: option `llm.headers[%q]` must be a string on one line"):format(k)
    end
  end
end

local ROLES = { task = true, tools = true, chat = true, ask_llm = true, node = true }

-- `llm.roles`: role -> model name.
local function check_roles(roles)
  if type(roles) ~= "table" then
    return "chimera: option `llm.roles` must be a table of role -> model name"
  end
  for role, model in pairs(roles) do
    if not ROLES[role] then
      return ("chimera: option `llm.roles`: unknown role %s (ask_llm, chat, node, task, tools)"):format(vim.inspect(role))
    end
    if type(model) ~= "string" or model == "" then
      return ("chimera: option `llm.roles.%s` must be a model name"):format(role)
    end
  end
end

-- `llm.keep_alive`: a duration, a number of seconds, or false.
local function check_keep_alive(v)
  if v == false or type(v) == "string" or (type(v) == "number" and v == math.floor(v)) then
    return nil
  end
  return ('chimera: option `llm.keep_alive` must be a duration like "30m", a whole number of seconds (-1: for ever) or false, got %s'):format(
    vim.inspect(v)
  )
end

-- Options that are tables keyed by the user's own names, checked whole.
local maps = {
  ["llm.options"] = check_fields("llm.options"),
  ["llm.extra_body"] = check_fields("llm.extra_body"),
  ["llm.headers"] = check_headers,
  ["llm.roles"] = check_roles,
  ["llm.keep_alive"] = check_keep_alive,
  ["tests.command"] = check_test_command,
  ["mcp.servers"] = check_servers,
  ["agents.external"] = check_external,
  ["a2a.peers"] = check_peers,
  ["llm.edit_forms"] = check_edit_forms,
  ["llm.prices"] = check_prices,
}

local function check(path, value, default)
  if maps[path] then
    return maps[path](value)
  end
  if lists[path] then
    if type(value) ~= "table" or not vim.islist(value) then
      return ("chimera: option `%s` must be a list of strings"):format(path)
    end
    for _, v in ipairs(value) do
      if type(v) ~= "string" then
        return ("chimera: option `%s` must be a list of strings, got a %s in it"):format(path, type(v))
      end
    end
    return nil
  end
  local opt_type = optional[path]
  if opt_type then
    if value ~= nil and type(value) ~= opt_type then
      return ("chimera: option `%s` must be a %s, got %s"):format(path, opt_type, type(value))
    end
    return nil
  end
  if path:match("^keymaps%.") then
    if value ~= false and type(value) ~= "string" then
      return ("chimera: option `%s` must be a key sequence or false, got %s"):format(path, type(value))
    end
    return nil
  end
  if type(value) ~= type(default) then
    return ("chimera: option `%s` must be a %s, got %s"):format(path, type(default), type(value))
  end
  if enums[path] and not enums[path][value] then
    local names = vim.tbl_keys(enums[path])
    table.sort(names)
    return ("chimera: option `%s` must be one of %s, got %q"):format(path, table.concat(names, ", "), value)
  end
  if type(value) == "number" then
    -- NaN, infinities and numbers past 2^53 cannot reach the core intact.
    if value ~= value or value == math.huge or value == -math.huge or math.abs(value) > 2 ^ 53 then
      return ("chimera: option `%s` must be a finite number no larger than 2^53, got %s"):format(path, tostring(value))
    end
    if value < 0 or (positive[path] and value <= 0) or value ~= math.floor(value) and path ~= "llm.temperature" then
      return ("chimera: option `%s` must be a %s number, got %s"):format(
        path,
        positive[path] and "positive whole" or "non-negative",
        tostring(value)
      )
    end
    if path == "api.port" and value > 65535 then
      return ("chimera: option `api.port` must be a port number (1-65535, or 0 for any free port), got %s"):format(
        tostring(value)
      )
    end
  end
end

local function validate(opts, defaults, prefix, errors)
  for key, value in pairs(opts) do
    local path = prefix and (prefix .. "." .. key) or key
    local default = defaults[key]
    if default == nil and not optional[path] then
      table.insert(errors, ("chimera: unknown option `%s`"):format(path))
    elseif type(default) == "table" and type(value) == "table" and not lists[path] and not maps[path] then
      validate(value, default, path, errors)
    else
      local err = check(path, value, default)
      if err then
        table.insert(errors, err)
      end
    end
  end
end

--- Merges `opts` over the defaults. Returns the config, or nil and every
--- problem found, one per line.
function M.resolve(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    return nil, "chimera: setup() takes a table of options"
  end
  local errors = {}
  validate(opts, M.defaults, nil, errors)
  if #errors > 0 then
    table.sort(errors)
    return nil, table.concat(errors, "\n")
  end
  local config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- A list given replaces the default list instead of merging by index.
  for path in pairs(lists) do
    local section, key = path:match("^(%w+)%.(%w+)$")
    if opts[section] and opts[section][key] then
      config[section][key] = vim.deepcopy(opts[section][key])
    end
  end
  return config
end

-- An empty Lua table encodes as a JSON list; maps must stay objects.
local function map_json(map)
  local out = vim.empty_dict()
  for k, v in pairs(map or {}) do
    out[k] = v
  end
  return out
end

local function servers_json(servers)
  local out = vim.empty_dict()
  for name, server in pairs(servers) do
    local env = map_json(server.env)
    out[name] = {
      command = server.command or {},
      url = server.url,
      env = env,
      readable = server.readable,
      writable = server.writable,
      network = server.network,
      pass_env = server.pass_env,
      kind = server.kind,
      unconfined = server.unconfined,
    }
  end
  return out
end

--- The part of the config the native core reads, as JSON.
function M.to_json(config)
  return vim.json.encode({
    root = config.root and vim.fn.expand(config.root) or nil,
    llm = vim.tbl_extend("force", config.llm, {
      edit_forms = map_json(config.llm.edit_forms),
      prices = map_json(config.llm.prices),
      options = map_json(config.llm.options),
      extra_body = map_json(config.llm.extra_body),
      headers = map_json(config.llm.headers),
      roles = map_json(config.llm.roles),
      -- false: not sent, Ollama's default applies.
      keep_alive = config.llm.keep_alive == false and vim.NIL or config.llm.keep_alive,
    }),
    agents = vim.tbl_extend("force", config.agents, { external = servers_json(config.agents.external) }),
    sync = config.sync,
    remora = config.remora,
    capabilities = config.capabilities,
    tools = config.tools,
    tests = config.tests,
    mcp = { servers = servers_json(config.mcp.servers), timeout_ms = config.mcp.timeout_ms },
    a2a = { peers = map_json(config.a2a.peers) },
    api = config.api,
  })
end

return M
