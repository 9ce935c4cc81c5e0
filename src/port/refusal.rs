//! Why the core refused or could not do what it was asked, typed: the
//! editor shows it as a notice, a client that answers with a status (the
//! HTTP API) reads its kind — nobody parses the notice's words.

use crate::accept::AcceptError;
use crate::rootfs::DiskError;
use crate::store::StoreError;

/// What kind of no it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// What the command names does not exist.
    NotFound,
    /// It cannot be done as things are: no proposal, a conflict with the
    /// human's edits, a hunk that is not there.
    Conflict,
    /// The command itself is wrong (a bad name).
    Invalid,
    /// Something broke underneath (the database, the disk).
    Failed,
}

/// A refusal: its kind and what to say (without the editor's `Chimera: `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

impl From<&StoreError> for RefusalKind {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::NoAgent(_) | StoreError::NoSnapshot(_) | StoreError::NoSnapshotYet => {
                RefusalKind::NotFound
            }
            StoreError::BadBranch(_) => RefusalKind::Invalid,
            _ => RefusalKind::Failed,
        }
    }
}

impl From<&AcceptError> for RefusalKind {
    fn from(e: &AcceptError) -> Self {
        match e {
            AcceptError::Store(s) => s.into(),
            AcceptError::NotReady { .. }
            | AcceptError::Conflict(_)
            | AcceptError::NoHunk { .. }
            | AcceptError::HunkGone { .. } => RefusalKind::Conflict,
            // Refused for the human's sake: the disk moved, or a link or
            // a folder stands where the file goes.
            AcceptError::Disk(
                DiskError::Changed(_) | DiskError::Symlink(_) | DiskError::NotAFile(_),
            ) => RefusalKind::Conflict,
            AcceptError::Disk(_) => RefusalKind::Failed,
        }
    }
}

/// What a command brought about, for a client: the events it caused, and
/// the refusal if it was refused.
#[derive(Debug, Default)]
pub struct Told {
    pub events: Vec<crate::event::Event>,
    pub refused: Option<Refusal>,
}
