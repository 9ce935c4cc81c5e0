//! The `chimera` command: the core loop, snapshots and effects from a
//! shell. It speaks the API ([`crate::api`]) to the core already serving the
//! project (Neovim's, or `chimera serve`); without one it reads the store
//! itself, and for a command that changes something it starts a core in
//! this process for as long as the command needs one.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `println!` for the command's output. A reader that has gone (`chimera
/// history | head -1`) ends the command quietly: a closed pipe is the
/// reader's choice, not an error.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            $crate::cli::stdout_failed(e)
        }
    }};
}

mod config;
mod output;
mod session;

/// Ends the command after its output could not be written.
pub(crate) fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(exit::OK)
    }
    eprintln!("chimera: cannot write the output: {e}");
    std::process::exit(exit::FAILED)
}

pub use config::{load as load_config, project_file, Loaded, ProjectOptions};

/// Exit codes (documented in `chimera --help` and doc/chimera.txt).
pub mod exit {
    /// Done.
    pub const OK: i32 = 0;
    /// The command ran but did not succeed (unknown agent, conflict…).
    pub const FAILED: i32 = 1;
    /// Bad arguments or configuration.
    pub const USAGE: i32 = 2;
    /// `wait` ran out of time.
    pub const TIMEOUT: i32 = 3;
}

#[derive(Debug, Parser)]
#[command(
    name = "chimera",
    version = crate::VERSION,
    about = "AI agents propose changes to your code; you review and accept them.",
    after_help = "Exit codes: 0 done, 1 the command failed (an agent that failed or was cancelled, a diff of nothing), 2 bad arguments or configuration, 3 `wait` timed out.\nOptions are read from $XDG_CONFIG_HOME/chimera/config.json with <root>/.chimera/config.json over it (the keys of setup{}); what the project's file would run, reach or read waits for `chimera trust`."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Default, Args)]
pub struct Global {
    /// The project (default: the nearest folder above holding .git).
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print records as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Override `llm.provider`.
    #[arg(long, global = true, value_name = "NAME",
          value_parser = ["ollama", "openai", "anthropic", "gemini"])]
    pub llm_provider: Option<String>,
    /// Override `llm.url`.
    #[arg(long, global = true, value_name = "URL")]
    pub llm_url: Option<String>,
    /// Override `llm.model`.
    #[arg(long, global = true, value_name = "NAME")]
    pub llm_model: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Where the project, the core and each option come from, and where
    /// its tests run.
    Status {
        /// Also run the project's tests once, as they are, the way an
        /// agent's change is tested: passing, failing, or why they
        /// cannot run.
        #[arg(long)]
        tests: bool,
    },
    /// Trust the project's .chimera/config.json as it is now: its options
    /// that run a program, reach a host, read the environment or widen the
    /// capabilities apply (until the file changes). Read it first.
    Trust {
        /// Take the trust back instead.
        #[arg(long)]
        revoke: bool,
        /// Trust without asking (for scripts; read the file first).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Start an agent on TEXT; prints its ID. Without a running core the
    /// agent runs in this process until its proposal is ready.
    Task {
        /// What the agent should do.
        #[arg(required = true, num_args = 1.., value_name = "TEXT")]
        text: Vec<String>,
        /// The file the task is about (relative to the root).
        #[arg(long, value_name = "F")]
        file: Option<String>,
        /// The cursor line in --file, from 1.
        #[arg(long, value_name = "N")]
        line: Option<usize>,
        /// code or tools (default: agents.mode).
        #[arg(long, value_name = "MODE")]
        mode: Option<String>,
        /// An ACP agent of agents.external to do it (opencode, …).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Wait until agent ID has a proposal or has ended; prints its state.
    Wait {
        id: String,
        /// Give up after S seconds (exit code 3).
        #[arg(long, value_name = "S", default_value_t = 600.0)]
        timeout: f64,
    },
    /// The agents, oldest first (the newest last, above your prompt).
    Agents,
    /// One agent: its task, state, summary, log and files.
    Agent { id: String },
    /// Agent ID's proposal as a unified diff.
    Diff { id: String },
    /// Accept agent ID's proposal (or one hunk of it).
    Accept {
        id: String,
        /// Only hunk N (from 1, in file order).
        #[arg(long, value_name = "N")]
        hunk: Option<usize>,
        /// A file open in Neovim is written there too (when it has no other
        /// unsaved change), not left for :w.
        #[arg(long)]
        write: bool,
    },
    /// Reject agent ID's proposal; with --feedback the agent tries again.
    Reject {
        id: String,
        #[arg(long, value_name = "TEXT")]
        feedback: Option<String>,
        /// Only hunk N (from 1, in file order).
        #[arg(long, value_name = "N")]
        hunk: Option<usize>,
    },
    /// Stop a queued or running agent.
    Cancel { id: String },
    /// Snapshot the project now.
    Snapshot {
        #[arg(num_args = 0.., value_name = "MESSAGE")]
        message: Vec<String>,
    },
    /// The snapshots, newest first.
    History,
    /// Name a line of snapshots: branch NAME at SNAPSHOT (default: the
    /// newest), or move it there; fork, rollback and --since take its
    /// name. Without NAME: the branches.
    Branch {
        name: Option<String>,
        snapshot: Option<String>,
    },
    /// Start an agent on TEXT working on the project as in snapshot ID.
    Fork {
        id: String,
        #[arg(required = true, num_args = 1.., value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Roll the project back to snapshot ID.
    Rollback {
        id: String,
        /// Only say what would change.
        #[arg(long)]
        dry_run: bool,
    },
    /// The irreversible actions agents took (LLM calls, commands, network).
    Effects {
        /// After this snapshot ID or effect sequence number.
        #[arg(long, value_name = "SNAPSHOT|SEQ")]
        since: Option<String>,
        /// Only this kind (llm, command, network, mcp, acp, a2a).
        #[arg(long, value_name = "K")]
        kind: Option<String>,
    },
    /// Agent ID's audit log: every tool call it made (reads and lists
    /// too), with its arguments and result in brief.
    Calls { id: String },
    /// The Remora nodes (functions, classes, methods) of project file PATH.
    Nodes { path: String },
    /// One Remora node: where it is, its callers and callees.
    Node { id: String },
    /// Say MESSAGE to node ID's agent; prints the events it started.
    Chat {
        id: String,
        #[arg(required = true, num_args = 1.., value_name = "MESSAGE")]
        message: Vec<String>,
    },
    /// The MCP servers of `mcp.servers`, from the shell.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Remora: `chimera remora enable` indexes the project's nodes.
    Remora {
        #[command(subcommand)]
        action: RemoraAction,
    },
    /// Run a core for the project in the foreground, serving the API and
    /// the web dashboard on 127.0.0.1 (and the control socket), until
    /// interrupted.
    Serve {
        /// The HTTP port (default: `api.port`, else any free port).
        #[arg(long, value_name = "N")]
        port: Option<u16>,
    },
    /// A2A (Agent2Agent): serve this project as an agent, or work with
    /// other agents.
    A2a {
        #[command(subcommand)]
        action: A2aAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum A2aAction {
    /// `chimera serve` with its agent card: other agents send tasks to
    /// /a2a (with the API's token) and get proposals you review.
    Serve {
        /// The HTTP port (default: `api.port`, else any free port).
        #[arg(long, value_name = "N")]
        port: Option<u16>,
    },
    /// Show the agent card at URL (or URL/.well-known/agent-card.json).
    Discover { url: String },
    /// Send TEXT as a task to the agent at URL and wait for its answer;
    /// prints the task's ID, state and artifacts. An a2a effect.
    Delegate {
        url: String,
        #[arg(required = true, num_args = 1.., value_name = "TEXT")]
        text: Vec<String>,
        /// Bearer token for the agent (else $A2A_TOKEN).
        #[arg(long, value_name = "T")]
        token: Option<String>,
        /// Return at once with the task's ID instead of waiting.
        #[arg(long)]
        no_wait: bool,
    },
    /// The state and artifacts of TASK at the agent at URL.
    Status {
        url: String,
        task: String,
        /// Bearer token for the agent (else $A2A_TOKEN).
        #[arg(long, value_name = "T")]
        token: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Every tool of every configured server, as `server.tool`.
    List,
    /// Serve Chimera's own tools to an MCP host on stdin/stdout: it reads
    /// the project as you see it, writes into an overlay of its own and
    /// proposes; you review in Neovim (or `chimera agents`). Every call is
    /// an mcp effect.
    Serve {
        /// What the host may do: readonly, sandbox or developer (default:
        /// capabilities.preset).
        #[arg(long, value_name = "PRESET")]
        preset: Option<String>,
    },
    /// Call tool SERVER.TOOL with ARGS (a JSON object); prints its output.
    /// The call is recorded in the effect log (kind mcp).
    Call {
        #[arg(value_name = "SERVER.TOOL")]
        tool: String,
        #[arg(value_name = "ARGS", default_value = "{}")]
        args: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum RemoraAction {
    /// Index the project and give every node its ID (as
    /// `:Chimera remora enable`, confirmed).
    Enable,
}

/// Runs the command line `args` (the program name first); returns the exit code.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            // Writing the usage failed (a closed stdout): the exit code says it.
            let _ = e.print();
            return code;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("chimera: cannot start: {e}");
            return exit::FAILED;
        }
    };
    runtime.block_on(session::run(cli))
}
