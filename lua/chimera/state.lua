--- The editor's mirror of the core: agent records and proposals, updated
--- only from the core's messages (see bridge.lua). Reading it never blocks.
return {
  --- The resolved config, once setup() ran.
  config = nil,
  --- Project root (absolute), once started.
  root = nil,
  --- The core finished importing the project and showed what waits.
  ready = false,
  --- What waits for `ready` (a key pressed before the core was up).
  on_ready = {},
  --- id -> agent record (id, state, task, summary, error, changed_files, ...).
  agents = {},
  --- id -> list of { path, change, hunk_count, added, removed, conflicted };
  --- each file's `hunks` ({key, number, old_start, old_lines, new_lines})
  --- are fetched from the library when first read (see bridge.lua).
  proposals = {},
  --- Last progress line per running agent.
  progress = {},
  --- id -> path: an accept into that buffer the human undid with `u`
  --- (shown "undone" until redone; the core still counts it accepted).
  undone = {},
  --- Last answer of check_llm().
  llm_status = nil,
}
