#!/usr/bin/env python3
"""A plugin manager's build step with a time limit, as lazy.nvim runs it
(lua/lazy/manage/process.lua): `$SHELL -c make` spawned by Neovim in the
plugin's fresh clone, stdin closed, output piped, and SIGTERM then SIGKILL
to that process once `git.timeout` has passed (120 s by default; 5 s here,
far shorter than any build). Without a release the build is from source:
the step must end by itself inside the limit, the real cargo build go on in
the background, and a Neovim started meanwhile say so, then load the
library by itself once it is built — no manual step.

The build is a debug one in the repository's own target folder
(CHIMERA_CARGO_PROFILE=debug, CARGO_TARGET_DIR) so that it takes a minute or
two, not the 10 to 25 minutes of a cold release build; everything else is
what a user's first install runs.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT_MS = 5000

# What lazy.nvim's Process does with a build command, in a headless Neovim.
STEP = r"""
local clone, limit, out = _G.arg[1], tonumber(_G.arg[2]), _G.arg[3]
local stdout, stderr = vim.uv.new_pipe(), vim.uv.new_pipe()
local output, code, signal, killed = {}, nil, nil, false
local started = vim.uv.hrtime()
local handle
handle = vim.uv.spawn(vim.env.SHELL or "sh", {
  args = { "-c", "make" },
  cwd = clone,
  stdio = { nil, stdout, stderr },
}, function(c, s)
  code, signal = c, s
  handle:close()
end)
local function read(err, data)
  if data then
    table.insert(output, data)
  end
end
stdout:read_start(read)
stderr:read_start(read)
local timer = vim.uv.new_timer()
timer:start(limit, 1000, function()
  if handle:is_closing() then
    return
  end
  killed = true
  handle:kill(signal == nil and "sigterm" or "sigkill")
end)
vim.wait(limit + 5000, function()
  return code ~= nil
end, 50)
local f = assert(io.open(out, "w"))
f:write(vim.json.encode({
  code = code,
  killed = killed,
  seconds = (vim.uv.hrtime() - started) / 1e9,
  output = table.concat(output),
}))
f:close()
os.exit(0)
"""

# A user's Neovim opened while the build runs: setup() and nothing else.
USER = r"""
local clone, out = _G.arg[1], _G.arg[2]
vim.opt.rtp:prepend(clone)
vim.cmd("runtime plugin/chimera.lua")
require("chimera").setup({})
local said = require("chimera.say").log()
local first = said[1] and said[1].text
vim.wait(900000, function()
  return package.loaded.chimera_native ~= nil or (said[#said] or {}).level == vim.log.levels.ERROR
end, 500)
local f = assert(io.open(out, "w"))
f:write(vim.json.encode({
  first = first,
  said = vim.tbl_map(function(m)
    return m.text
  end, said),
  loaded = package.loaded.chimera_native ~= nil,
  works = package.loaded.chimera_native ~= nil and require("chimera.loader").load().version() or vim.NIL,
}))
f:close()
os.exit(0)
"""


def nvim():
    return subprocess.run([os.path.join(REPO, "scripts/install-nvim.sh")], capture_output=True, text=True,
                          check=True).stdout.strip()


class BuildStepTest(unittest.TestCase):
    def test_a_source_build_outlives_the_step_and_neovim_loads_it_when_done(self):
        work = tempfile.mkdtemp()
        clone = os.path.join(work, "chimera.nvim")
        subprocess.run(["git", "clone", "-q", REPO, clone], check=True)
        env = dict(os.environ, CHIMERA_CARGO_PROFILE="debug",
                   CARGO_TARGET_DIR=os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"))
        env.pop("CHIMERA_LIB", None)
        for name, text in (("step.lua", STEP), ("user.lua", USER)):
            with open(os.path.join(work, name), "w") as f:
                f.write(text)

        step_out = os.path.join(work, "step.json")
        subprocess.run([nvim(), "--headless", "--clean", "-l", os.path.join(work, "step.lua"), clone,
                        str(LIMIT_MS), step_out], env=env, check=True, timeout=120)
        with open(step_out) as f:
            step = json.load(f)
        self.assertFalse(step["killed"], "the step ended by itself inside the limit:\n" + step["output"])
        self.assertEqual(step["code"], 0, step["output"])
        self.assertLess(step["seconds"], LIMIT_MS / 1000)
        self.assertIn("building from source in the background", step["output"])
        self.assertFalse(os.path.exists(os.path.join(clone, "lua/chimera_native.so")), "not built yet")

        started = time.time()
        user_out = os.path.join(work, "user.json")
        subprocess.run([nvim(), "--headless", "--clean", "-l", os.path.join(work, "user.lua"), clone, user_out],
                       env=env, check=True, timeout=960)
        with open(user_out) as f:
            user = json.load(f)
        log = os.path.join(clone, ".build/build.log")
        self.assertIn("is being built from source in the background", user["first"] or "", user["said"])
        if not user["loaded"]:
            with open(log) as f:
                self.fail(f"{user['said']}\n{f.read()[-3000:]}")
        self.assertIn("built and loaded: ready", user["said"][-1])
        self.assertTrue(user["works"])
        self.assertFalse(os.path.exists(os.path.join(clone, ".build/pid")))
        self.assertFalse(os.path.exists(os.path.join(clone, ".build/failed")))
        print(f"  the step took {step['seconds']:.1f} s; the background build {time.time() - started:.0f} s more",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
