#!/usr/bin/env bash
# The README's lazy.nvim spec, loaded by lazy.nvim itself, as a new user
# meets it: a proposal made from the shell waits; Neovim opens the file
# (the spec read out of README.md as written, the plugin found through
# lazy's `dev` path instead of a clone) and `<Leader>a` is pressed at once,
# before the core is up; :checkhealth chimera must answer.
#
#   scripts/lazy-walk.sh LAZY_NVIM_DIR
#
# LAZY_NVIM_DIR is a checkout of https://github.com/folke/lazy.nvim. It is
# not part of `make test`: lazy.nvim is on no package registry that CI
# reaches, and this project does not vendor it. Run it before a release.
set -euo pipefail
lazy="${1:?usage: scripts/lazy-walk.sh LAZY_NVIM_DIR (a checkout of folke/lazy.nvim)}"
[ -f "$lazy/lua/lazy/init.lua" ] || { echo "lazy-walk: $lazy is not a lazy.nvim checkout" >&2; exit 2; }
lazy="$(cd "$lazy" && pwd)"
here="$(cd "$(dirname "$0")/.." && pwd)"
nvim="$("$here/scripts/install-nvim.sh")"
cargo build --quiet --manifest-path "$here/Cargo.toml"
lib="$here/target/debug/libchimera.so"
chimera="$here/target/debug/chimera"

work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/proj" "$work/dev" "$work/home"
ln -s "$here" "$work/dev/chimera.nvim"
cd "$work/proj"
git init -q
printf 'def parse_config(path):\n    return {}\n' > app.py
git add -A && git -c user.name=walk -c user.email=walk@localhost commit -qm init

cat > "$work/script.json" <<'EOF'
[{"text": "```python\nsrc = read_file('app.py')\nsrc = src.replace('def parse_config(path):\\n', 'def parse_config(path):\\n    \"\"\"Parse the config file.\"\"\"\\n')\nwrite_file('app.py', src)\nsubmit_result('Added a docstring to parse_config', ['app.py'])\n```"}]
EOF
python3 "$here/tests/fake_llm.py" --script "$work/script.json" --port-file "$work/port" &
server=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
"$chimera" --llm-provider openai --llm-url "http://127.0.0.1:$(cat "$work/port")/v1" --llm-model m \
  task "add a docstring to parse_config in app.py" >/dev/null

cat > "$work/init.lua" <<EOF
vim.opt.rtp:prepend("$lazy")
local readme = table.concat(vim.fn.readfile("$here/README.md"), "\n")
local block = assert(readme:match("With %[lazy.nvim%].-\`\`\`lua\n(.-)\`\`\`"), "no lazy.nvim spec in README.md")
require("lazy").setup({ assert(loadstring("return " .. block))() }, {
  dev = { path = "$work/dev", patterns = { "chimera-dev" }, fallback = false },
  install = { missing = false },
  rocks = { enabled = false },
  change_detection = { enabled = false },
  checker = { enabled = false },
})
EOF
cat > "$work/walk.lua" <<'EOF'
local said = {}
local notify = vim.notify
vim.notify = function(msg, ...)
  table.insert(said, msg)
  return notify(msg, ...)
end
local function fail(why)
  io.stderr:write("lazy-walk: FAIL: " .. why .. "\n")
  vim.cmd("cquit 1")
end
-- At once, as a person types: the core is not up yet.
vim.api.nvim_feedkeys(vim.keycode("<Leader>a"), "mx", false)
local accepted = vim.wait(20000, function()
  return vim.api.nvim_buf_get_lines(0, 1, 2, false)[1] == '    """Parse the config file."""'
end, 50)
if not accepted then
  return fail("<Leader>a pressed at start did not accept the waiting proposal; said: " .. vim.inspect(said))
end
if not vim.wait(5000, function()
  return vim.iter(said):any(function(m) return m:find("(u undoes it)", 1, true) ~= nil end)
end, 50) then
  return fail("the accept was not said: " .. vim.inspect(said))
end
vim.cmd("checkhealth chimera")
local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
if not report:find("Chimera: native library", 1, true) then
  return fail(":checkhealth chimera found no health check:\n" .. report)
end
io.stdout:write("lazy-walk: ok: the README's spec loaded by lazy.nvim; <Leader>a at start accepted; :checkhealth chimera answers\n")
vim.cmd("qa!")
EOF
env XDG_DATA_HOME="$work/home/data" XDG_STATE_HOME="$work/home/state" \
  XDG_CACHE_HOME="$work/home/cache" XDG_CONFIG_HOME="$work/home/config" CHIMERA_LIB="$lib" \
  "$nvim" --headless -u "$work/init.lua" app.py -c "luafile $work/walk.lua"
