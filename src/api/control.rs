//! The project's control socket. One core per project — the first to lock
//! `.chimera/core.lock` — serves the API on a Unix socket only its user can
//! open; the others keep trying while they run, so when the holder stops
//! (Neovim quits, a CLI command ends) another core takes over. The lock
//! dies with its process, so a crash leaves nothing to clean up.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Router;

use super::client::socket_path;
use tokio_util::sync::CancellationToken;

/// How often a core that does not hold the socket tries again (a lock
/// and an open: cheap), so that Neovim takes over from a `chimera`
/// command's core well within the 2 s a shell task has to show there.
const RETRY: Duration = Duration::from_millis(250);
/// Makes sure the folder of the project's socket is this user's alone
/// (mode 0700), when it is not the project's own `.chimera`: under
/// `$XDG_RUNTIME_DIR`, checked; under the temporary directory, a folder
/// with a random name made here (`mkdir` fails on a name another account
/// took) and recorded in `.chimera/socket-dir`, or the recorded one while
/// it is still this user's and private.
pub fn check_socket_dir(root: &Path) -> std::io::Result<()> {
    use super::client::{runtime_dir, socket_dir, socket_dir_record};
    let path = socket_path(root);
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    if dir == root.join(".chimera") {
        return Ok(());
    }
    if runtime_dir().is_some() {
        if !dir.exists() {
            std::fs::DirBuilder::new().mode(0o700).create(dir)?;
        }
        return private(dir);
    }
    if private(&socket_dir(root)).is_ok() {
        return Ok(());
    }
    // A new folder of a name no one else can have made.
    let made = tempfile::Builder::new()
        .prefix(&format!("chimera-{}-", rustix::process::getuid().as_raw()))
        .rand_bytes(12)
        .tempdir()?
        .keep();
    std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o700))?;
    std::fs::create_dir_all(root.join(".chimera"))?;
    std::fs::write(socket_dir_record(root), made.display().to_string())?;
    Ok(())
}

/// `dir` is a folder (not a link) of this user's that only they can open.
fn private(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir()
        || meta.uid() != rustix::process::getuid().as_raw()
        || meta.mode() & 0o077 != 0
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} must be a directory of yours that only you can open (mode 0700); remove it and try again",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The process whose core serves the project's control socket, if one does.
pub fn holder(root: &Path) -> Option<u32> {
    let path = root.join(".chimera").join("core.lock");
    let lock = File::open(&path).ok()?;
    // A lock we can take is held by no one (in this process too: locks
    // belong to open files, and this one is new).
    match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockShared) {
        Ok(()) => None,
        Err(_) => std::fs::read_to_string(&path).ok()?.trim().parse().ok(),
    }
}

/// The lock and the bound socket of the core that serves the project.
pub struct Held {
    _lock: File,
    listener: std::os::unix::net::UnixListener,
    path: PathBuf,
}

/// Takes the project's control socket if no other core holds it. Cheap
/// and synchronous, so a core takes it before its start returns: a
/// `chimera` command typed a moment later then finds it (and waits for it
/// to answer) instead of starting a core of its own.
pub fn hold(root: &Path) -> std::io::Result<Option<Held>> {
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
    // Who serves, for `holder` (`:checkhealth`, `chimera status`).
    {
        use std::io::Write;
        lock.set_len(0)?;
        (&lock).write_all(std::process::id().to_string().as_bytes())?;
    }
    check_socket_dir(root)?;
    let path = socket_path(root);
    // A socket file left by a core that died: we hold the lock, so no
    // live core serves it.
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = std::os::unix::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    listener.set_nonblocking(true)?;
    Ok(Some(Held {
        _lock: lock,
        listener,
        path,
    }))
}

/// What a core does with the project's control socket.
pub struct Serving {
    pub root: PathBuf,
    pub router: Router,
    /// Serve over HTTP as well (see [`super::http`]; 0 picks a free port).
    pub http_port: Option<u16>,
    /// What [`hold`] gave at the core's start.
    pub first: std::io::Result<Option<Held>>,
    pub stop: CancellationToken,
}

/// Serves the router on the project's control socket whenever this core
/// holds it, until `stop`. A core that did not hold it at its start keeps
/// trying and calls `taken` once it does: agents another core ran in the
/// meantime are in the store, not yet in this core. What goes wrong is
/// told to `trouble` (in Neovim, stderr is the screen). Returns at once;
/// the task is owned by `stop`.
pub fn spawn(
    serving: Serving,
    trouble: impl Fn(String) + Send + 'static,
    taken: impl FnOnce() + Send + 'static,
) {
    let Serving {
        root,
        router,
        http_port,
        first,
        stop,
    } = serving;
    tokio::spawn(async move {
        let mut attempt = first;
        let mut waited = false;
        let held = loop {
            match attempt {
                Ok(Some(held)) => break held,
                Ok(None) => {}
                Err(e) => {
                    trouble(format!(
                        "cannot serve the control socket of {}: {e}",
                        root.display()
                    ));
                    return;
                }
            }
            waited = true;
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(RETRY) => {}
            }
            attempt = hold(&root);
        };
        if waited {
            taken();
        }
        let listener = match tokio::net::UnixListener::from_std(held.listener) {
            Ok(l) => l,
            Err(e) => {
                // Best effort: a socket file left behind is replaced at the next start.
                let _ = std::fs::remove_file(&held.path);
                trouble(format!("cannot serve the control socket: {e}"));
                return;
            }
        };
        if let Some(port) = http_port {
            match super::http::bind(&root, port).await {
                Ok(bound) => {
                    tokio::spawn(bound.serve(router.clone(), stop.clone()));
                }
                Err(e) => trouble(format!("the HTTP API is off: {e}")),
            }
        }
        super::serve::serve(
            super::peer::OwnPeers(listener),
            router,
            super::serve::Limits::default(),
            stop.clone(),
        )
        .await;
        // As above: a stale socket file is replaced at the next start.
        let _ = std::fs::remove_file(&held.path);
    });
}
