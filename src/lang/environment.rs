//! A project's own environment for its tests, as a language's row finds
//! it (Python: the project's `.venv`, the activated one…): the program
//! that runs them, what the confined run may read besides its scratch
//! copy (the environment, even inside the project), the variables that
//! select it, and where it came from, in words. A leaf: data only.

use std::path::PathBuf;

/// Where a project's tests run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The interpreter or tool that runs them (`.venv/bin/python`).
    pub program: PathBuf,
    /// Folders the confined run reads (never writes): the environment.
    pub readable: Vec<PathBuf>,
    /// Variables set for the run (`VIRTUAL_ENV`, `PATH` with its `bin`).
    pub env: Vec<(String, String)>,
    /// Where it was found, for the user: "the project's .venv".
    pub found: String,
    /// Whether it has the test runner the language prefers (pytest).
    pub has_runner: bool,
}
