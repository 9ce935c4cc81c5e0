//! The project's control socket. One core per project — the first to lock
//! `.chimera/core.lock` — serves the API on a Unix socket only its user can
//! open; the others keep trying while they run, so when the holder stops
//! (Neovim quits, a CLI command ends) another core takes over. The lock
//! dies with its process, so a crash leaves nothing to clean up.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Router;
use tokio_util::sync::CancellationToken;

/// How often a core that does not hold the socket tries again.
const RETRY: Duration = Duration::from_secs(2);
/// Longest socket path the platform takes (`sun_path`, with room to spare).
const MAX_SOCKET_PATH: usize = 100;

/// Where the control socket of the project at `root` lives:
/// `.chimera/core.sock`, or, when that path is too long for a socket, a
/// file named after the root in a directory of the user's under the
/// system's temporary directory.
pub fn socket_path(root: &Path) -> PathBuf {
    let inside = root.join(".chimera").join("core.sock");
    if inside.as_os_str().len() <= MAX_SOCKET_PATH {
        return inside;
    }
    let hash = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
    private_dir().join(format!("{}.sock", &hash[..16]))
}

/// `<tmp>/chimera-<uid>`: the short home of sockets whose project path is long.
fn private_dir() -> PathBuf {
    std::env::temp_dir().join(format!("chimera-{}", rustix::process::getuid().as_raw()))
}

/// The lock and the bound socket of the core that serves the project.
struct Held {
    _lock: File,
    listener: tokio::net::UnixListener,
    path: PathBuf,
}

/// Takes the project's control socket if no other core holds it.
fn try_hold(root: &Path) -> std::io::Result<Option<Held>> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = root.join(".chimera");
    std::fs::create_dir_all(&dir)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join("core.lock"))?;
    match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let path = socket_path(root);
    if let Some(parent) = path.parent() {
        if !parent.exists() {
            std::fs::create_dir_all(parent)?;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    // A socket file left by a core that died: we hold the lock, so no
    // live core serves it.
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Some(Held {
        _lock: lock,
        listener,
        path,
    }))
}

/// Serves `router` on the project's control socket whenever this core
/// holds it, until `stop`. Returns at once; the task is owned by `stop`.
pub fn spawn(root: PathBuf, router: Router, stop: CancellationToken) {
    tokio::spawn(async move {
        loop {
            match try_hold(&root) {
                Ok(Some(held)) => {
                    let served = axum::serve(held.listener, router.clone())
                        .with_graceful_shutdown(stop.clone().cancelled_owned())
                        .await;
                    let _ = std::fs::remove_file(&held.path);
                    if let Err(e) = served {
                        eprintln!("chimera: the control socket stopped: {e}");
                    }
                    return;
                }
                Ok(None) => {}
                Err(e) => {
                    eprintln!(
                        "chimera: cannot serve the control socket of {}: {e}",
                        root.display()
                    );
                    return;
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(RETRY) => {}
            }
        }
    });
}
