//! Who may speak on the control socket: a process of this user in this
//! user namespace — the user's own shell, Neovim, the `chimera` command.
//! A confined process lives in a user namespace of its own
//! ([`crate::launch`]) and is refused here even if it got a Unix socket
//! some other way than the one the launcher's filter refuses; so is
//! another account (the socket is 0600 besides).

use std::path::PathBuf;

/// The control socket's listener, accepting only the user's own
/// processes.
pub struct OwnPeers(pub tokio::net::UnixListener);

/// The user namespace of process `pid`, as the kernel names it.
fn user_namespace(pid: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/user")).ok()
}

/// Whether the peer of `stream` is this user, in this user namespace
/// (where there are user namespaces: Linux).
pub fn is_own(stream: &tokio::net::UnixStream) -> bool {
    let Ok(cred) = stream.peer_cred() else {
        return false;
    };
    if cred.uid() != rustix::process::getuid().as_raw() {
        return false;
    }
    if !cfg!(target_os = "linux") {
        return true;
    }
    match cred.pid() {
        Some(pid) => {
            let theirs = user_namespace(&pid.to_string());
            theirs.is_some() && theirs == user_namespace("self")
        }
        // No pid (another PID namespace's process, which the kernel does
        // not name): not one of ours.
        None => false,
    }
}

impl axum::serve::Listener for OwnPeers {
    type Io = tokio::net::UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, addr)) if is_own(&stream) => return (stream, addr),
                // Refused: dropped unanswered.
                Ok(_) => {}
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}
