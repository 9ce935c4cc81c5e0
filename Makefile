# Chimera — see README.md. `make` installs the native library (prebuilt
# release asset when the checkout is at a tag, else cargo build --release).
SHELL := /bin/bash
NVIM ?= $(shell scripts/install-nvim.sh)
DEBUG_LIB := $(CURDIR)/target/debug/libchimera.so

.PHONY: all lib test test-core test-lua test-scripts debug-lib demo bench eval crash-test sim clean

all: lib

lib:
	scripts/build.sh

debug-lib:
	cargo build

## Everything CI runs.
test: test-core test-lua test-scripts

# pytest on PYTHONPATH: the checks of test files an agent writes need it.
test-core:
	PYTHONPATH=$$(scripts/install-pytest.sh) cargo test --no-default-features
	cargo clippy --all-targets -- -D warnings

# The real opencode, Claude Code, Gemini CLI and Codex (npm) for
# tests/nvim/test_opencode.lua and test_agents.lua.
test-lua: debug-lib
	scripts/install-opencode.sh >/dev/null
	scripts/install-agents.sh >/dev/null
	@set -e; for t in tests/nvim/test_*.lua; do \
	  echo "== $$t"; \
	  CHIMERA_LIB=$(DEBUG_LIB) timeout 300 $(NVIM) --headless --clean -l $$t; \
	done

test-scripts: debug-lib
	python3 tests/test_build_script.py
	timeout 1200 python3 tests/test_plugin_manager_build.py
	scripts/install-browser.sh >/dev/null
	timeout 300 python3 tests/web/test_dashboard.py
	scripts/install-a2a.sh
	timeout 300 python3 tests/a2a/test_a2a.py
	CHIMERA_LIB=$(DEBUG_LIB) python3 tests/crash/nvim_crash.py 10
	scripts/install-tmux.sh >/dev/null
	CHIMERA_LIB=$(DEBUG_LIB) timeout 300 python3 tests/tui/test_terminal.py
	timeout 300 python3 tests/tui/test_cli_question.py

## SIGKILL during accept, 500 times: the core's accept in a child process,
## then a real headless Neovim; an accept cut after every one of 120
## renames, and each rename failing in turn; and during rollback, purge and
## snapshot (make test runs shorter rounds).
crash-test: debug-lib
	CHIMERA_CRASH_CYCLES=500 CHIMERA_CRASH_EVERY=1 cargo test --no-default-features --test crash -- --nocapture
	CHIMERA_LIB=$(DEBUG_LIB) python3 tests/crash/nvim_crash.py 500

## The lifecycle simulation, 1,000,000 steps (make test runs 10,000);
## SIM_STEPS and SIM_SEED choose another run.
sim:
	CHIMERA_SIM_STEPS=$${SIM_STEPS:-1000000} $${SIM_SEED:+CHIMERA_SIM_SEED=$$SIM_SEED} \
	  cargo test --release --no-default-features --test simulation -- --nocapture

demo:
	scripts/demo.sh

bench:
	scripts/bench.sh

clean:
	cargo clean
	rm -f lua/chimera_native.so

## The small-model evaluation (needs the local models: scripts/setup-model.sh).
eval:
	cargo build --release
	python3 scripts/eval.py $(EVAL_ARGS)
