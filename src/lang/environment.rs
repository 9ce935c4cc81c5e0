//! A project's own environment for its tests, as a language's row finds
//! it (Python: the project's `.venv`, the activated one; JavaScript:
//! `package.json`'s `test` script under its lockfile's package manager;
//! Rust: `cargo test` of the file's package…): the program that runs
//! them, what the confined run may read besides its scratch copy (the
//! environment, even inside the project) and write (a build cache of
//! Chimera's own), the variables that select it, and where it came from,
//! in words. A leaf: data only.

use std::path::PathBuf;

/// Where a project's tests run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Environment {
    /// The interpreter or tool that runs them (`.venv/bin/python`, `npm`).
    pub program: PathBuf,
    /// The whole command for a language whose tool picks the tests itself
    /// (`npm test`, `cargo test --offline`); `None` for Python, whose test
    /// files are chosen by the change and run with `program`.
    pub command: Option<Vec<String>>,
    /// The project folder the command runs in (`web`, `crates/core`; ""
    /// for the root): the package of the task's file.
    pub folder: String,
    /// Folders the confined run reads (never writes): the environment.
    pub readable: Vec<PathBuf>,
    /// Folders of Chimera's own the run writes, made when missing: a
    /// build cache reused between runs (`CARGO_TARGET_DIR`, `GOCACHE`).
    pub writable: Vec<PathBuf>,
    /// A build cache of the user's copied into one of `writable` the
    /// first time (user's, Chimera's): the first run is then incremental
    /// too, and the user's own is never written.
    pub seed: Option<(PathBuf, PathBuf)>,
    /// Where the scratch copies are made, at the same paths run after run
    /// (`checkouts/0`, `checkouts/1`…), when the build cache remembers
    /// paths: cargo's incremental builds redo a whole crate found at a
    /// new path (1.2 s for 0.4 s, measured). `None`: a fresh temporary
    /// folder each run.
    pub checkouts: Option<PathBuf>,
    /// Folders of the project that the scratch copy links to rather than
    /// holds (project paths: `node_modules`): the packages the tests
    /// import, read where they are.
    pub linked: Vec<String>,
    /// Variables set for the run (`VIRTUAL_ENV`, `PATH` with its `bin`).
    pub env: Vec<(String, String)>,
    /// Where it was found, for the user: "the project's .venv".
    pub found: String,
    /// What the user types to add a test package to it, before the
    /// package's name: `uv add --dev`, `.venv/bin/python -m pip install`.
    pub adds: String,
    /// Whether it has the test runner the language prefers (pytest).
    pub has_runner: bool,
}
