//! Chimera: AI agents propose changes to your code in copy-on-write overlays;
//! you review them as ghost text in Neovim and accept or reject them.
//!
//! The crate has two halves. The *core* (everything but `nvim`) never touches
//! Neovim and is tested with `cargo test --no-default-features`:
//!
//! - [`task`]: a task as every client gives it ([`task::TaskSpec`]), checked once.
//! - [`capabilities`]: what an agent may read, write, run and reach.
//! - [`workspace`]: the one door through which an agent touches files
//!   (path, links, capabilities, secrets, size), and what its folder held
//!   taken back through it.
//! - [`workdir`], [`confine`]: the real folder an external agent works in,
//!   and the kernel's confinement to it (Landlock; Seatbelt on macOS).
//! - [`command`]: `run_command` in a scratch checkout of an agent's view
//!   (its errors typed, [`command::CommandError`]).
//! - [`suites`]: how a project's tests run in the languages whose own tool
//!   runs them (`npm test`, `cargo test`, `go test`, `busted`); Python's
//!   environment is [`python::environment`].
//! - [`pulse`]: when something last showed it was working; what limits on
//!   silence count from (a model's reply, an agent's steps). A leaf.
//! - [`hash`], [`brief`]: content hashes and fresh IDs; how a call's
//!   arguments show in the logs (leaves).
//! - [`config`]: the typed configuration, resolved from the Lua options table.
//! - [`paths`]: the project root and project-relative paths that cannot escape it.
//! - [`rootfs`]: the project's files on disk, reached without following
//!   links; batches of writes that are all or nothing.
//! - [`store`]: one SQLite database per project: blobs, the stable layer,
//!   overlays, agent records, proposals and the event log.
//! - [`overlay`]: an agent's copy-on-write view of the project.
//! - [`sync`]: keeps the stable layer equal to the human's files (import, watcher).
//! - [`diff`]: proposals as hunks, and applying them.
//! - [`accept`]: proposals, rebase onto the human's edits, and accepting or
//!   rejecting them (whole or by hunk), atomically.
//! - [`lifecycle`]: the one owner of every agent and proposal transition,
//!   and the one function that turns their outcomes into [`event::Event`]s;
//!   a refusal is typed there ([`lifecycle::RefusalKind`]) for clients that
//!   answer with a status.
//! - [`rollback`]: rolling the project back to a snapshot, naming what
//!   cannot be undone.
//! - [`llm`]: LLM providers (Ollama, OpenAI-compatible, Anthropic, Gemini)
//!   over HTTP, and what a request waits for at the server (`llm::queue`).
//! - [`memory`]: counts the library's live bytes, for the sandbox's memory limit.
//! - [`sandbox`]: runs model-written Python in Monty with host functions
//!   (which fail with a typed [`sandbox::HostError`]).
//! - [`lang`]: the language table, one row per language (grammar, names,
//!   queries under `queries/`, and hooks for what a language does its own
//!   way, [`lang::OwnSplice`]); `lang::language` is the row's type, a leaf
//!   below the table and everything that reads a language.
//! - [`python`]: Python with tree-sitter: syntax checks, definitions, and
//!   splicing a reply's definitions into a file.
//! - [`remora`]: every Python file, class, function and method as a node
//!   with a stable ID, and the topology between them.
//! - [`agent`]: Chimera's own agents through one door ([`agent::run`]): the
//!   brain chosen once ([`agent::Brain`]: code mode, tool mode, a Remora
//!   node), one [`agent::Run`] context, and what goes back to the model typed
//!   ([`agent::Problem`]).
//! - [`port`]: what any client asks the core, in the core's own words:
//!   [`port::Command`]s (answered with what they caused, or a typed
//!   refusal) and [`port::Query`]s (answered from the store), files named
//!   by project path. The clients outside the editor (`api`, `cli`, `mcp`,
//!   `a2a`) reach the core through it alone (a test holds them to it).
//! - [`runtime`]: the tokio runtime thread and the message loop between the
//!   halves; a front end in the same process reaches it through its typed
//!   [`runtime::Port`].
//! - [`event`]: what happened in the core, typed, with project paths, as
//!   every client hears it (the editor's messages and the API's feed are
//!   both made of it).
//! - [`api`]: the HTTP API clients outside Neovim use, on the project's
//!   control socket (its shared types in `api::backend`, below the routes);
//!   `api::core::start` starts a core with it, as Neovim and the CLI do;
//!   [`cli`] is the `chimera` command built on it.
//! - [`acp`], [`mcp`], [`a2a`]: other agents as Chimera's agents (ACP),
//!   MCP clients and servers, A2A peers.
//!
//! The editor layer, [`nvim`], only adapts: its [`nvim::messages`] are
//! Neovim's words for the port's, and (feature `neovim`) it turns Lua calls
//! into [`nvim::messages::ToCore`] and [`nvim::messages::ToEditor`] into Lua
//! calls.

pub mod a2a;
pub mod accept;
pub mod acp;
pub mod agent;
pub mod api;
pub mod brief;
pub mod capabilities;
pub mod cli;
pub mod command;
pub mod config;
pub mod confine;
pub mod diff;
pub mod event;
pub mod failpoint;
pub mod hash;
pub mod http;
pub mod lang;
pub mod launch;
pub mod lifecycle;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod overlay;
pub mod paths;
pub mod port;
pub mod pulse;
pub mod python;
#[cfg(target_os = "linux")]
pub mod reaper;
#[cfg(not(target_os = "linux"))]
#[path = "reaper_portable.rs"]
pub mod reaper;
pub mod remora;
pub mod rollback;
pub mod rootfs;
pub mod rules;
pub mod runtime;
pub mod sandbox;
pub mod shell_line;
pub mod store;
pub mod suites;
pub mod sync;
pub mod task;
pub mod trust;
pub mod workdir;
pub mod workspace;

pub mod nvim;

/// Every Rust allocation of the library is counted, so a sandboxed program
/// can be stopped before it takes the editor's memory.
#[global_allocator]
static ALLOCATOR: memory::Counting = memory::Counting;

/// The version stamp of this build, compared by the Lua loader with the
/// plugin's own version to detect a stale library.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit this library was built from ("unknown" outside a git checkout).
pub const BUILD_COMMIT: &str = env!("CHIMERA_BUILD_COMMIT");
