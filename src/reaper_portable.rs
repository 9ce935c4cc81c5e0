//! Where there is no child subreaper (not Linux), a command runs in a
//! process group of its own, which `command::run` kills whole; a daemon
//! that called `setsid` can outlive it there.

use std::process::Command;

/// Nothing to stop beyond the process group.
#[derive(Debug)]
pub struct Stop;

/// Starts `command` (in its own process group, set by the caller).
pub fn spawn(command: &mut Command) -> std::io::Result<(std::process::Child, Stop)> {
    Ok((command.spawn()?, Stop))
}
