//! Every process a command starts ends with it, whether or not it called
//! `setsid` or forked twice. The command runs under a supervisor forked
//! between `fork` and `exec`: a child subreaper (`PR_SET_CHILD_SUBREAPER`),
//! so that what its descendants orphan becomes the supervisor's child, not
//! init's. When the command exits, or the core asks it to stop — by closing
//! a pipe, which the kernel also does when the core dies — the supervisor
//! kills every child it has, level by level as their orphans come to it,
//! reaps them, and exits with the command's status.
//!
//! The supervisor runs in the child of a multi-threaded process: it makes
//! system calls only (no allocation, no locks), and never returns to Rust.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The core's end of a supervised command: dropping it (or the core
/// dying) ends the command and everything it started.
#[derive(Debug)]
pub struct Stop(#[allow(dead_code)] OwnedFd);

/// Starts `command` under a supervisor; the returned [`Stop`] ends it.
/// The `Child` is the supervisor, whose exit status is the command's
/// (128 + N when a signal N ended it).
pub fn spawn(command: &mut Command) -> std::io::Result<(std::process::Child, Stop)> {
    spawn_with(command, || Ok(()), || Ok(()))
}

/// [`spawn`], with `before` run in the supervisor before it forks the
/// command (namespaces the command is to be born in) and `in_command` in
/// the command before its `exec` (its confinement). Both run between
/// `fork` and `exec`: system calls only, no allocation.
pub fn spawn_with<B, C>(
    command: &mut Command,
    before: B,
    in_command: C,
) -> std::io::Result<(std::process::Child, Stop)>
where
    B: Fn() -> std::io::Result<()> + Send + Sync + 'static,
    C: Fn() -> std::io::Result<()> + Send + Sync + 'static,
{
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just made both and nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let (read_fd, write_fd) = (read.as_raw_fd(), write.as_raw_fd());
    // SAFETY: the closure makes only async-signal-safe system calls (and
    // the callers' closures promise the same); in the supervisor it never
    // returns (it `_exit`s).
    unsafe {
        command.pre_exec(move || {
            libc::close(write_fd);
            // A session of its own: no controlling terminal (the user's,
            // which `/dev/tty` would open), its own process group.
            // (It fails only for a group leader: the caller made one.)
            libc::setsid();
            before()?;
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => {
                    libc::close(read_fd);
                    in_command()
                }
                command_pid => supervisor(command_pid, read_fd),
            }
        });
    }
    let child = command.spawn()?;
    // The read end lives on in the supervisor only.
    drop(read);
    Ok((child, Stop(write)))
}

/// Closes every descriptor but `keep`: the supervisor holds no pipe of
/// the command's output open, nor the end `std` waits on to learn the
/// exec happened.
unsafe fn close_all_but(keep: i32) {
    let closed = libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32) == 0
        && libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32) == 0;
    if !closed {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 16) as i32
        } else {
            1024
        };
        for fd in (0..max).filter(|fd| *fd != keep) {
            libc::close(fd);
        }
    }
}

/// Sends SIGKILL to every child of this (single-threaded) process, as
/// `/proc/self/task/PID/children` lists them; returns how many.
unsafe fn kill_children() -> usize {
    let mut path = [0u8; 64];
    let mut n = 0;
    for b in b"/proc/self/task/" {
        path[n] = *b;
        n += 1;
    }
    let mut digits = [0u8; 12];
    let mut d = 0;
    let mut pid = libc::getpid();
    while pid > 0 {
        digits[d] = b'0' + (pid % 10) as u8;
        pid /= 10;
        d += 1;
    }
    while d > 0 {
        d -= 1;
        path[n] = digits[d];
        n += 1;
    }
    for b in b"/children\0" {
        path[n] = *b;
        n += 1;
    }
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return 0;
    }
    let mut killed = 0;
    let mut buf = [0u8; 4096];
    let mut pid: i32 = 0;
    loop {
        let got = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        if got <= 0 {
            break;
        }
        for &c in &buf[..got as usize] {
            if c.is_ascii_digit() {
                pid = pid * 10 + (c - b'0') as i32;
            } else if pid > 0 {
                libc::kill(pid, libc::SIGKILL);
                killed += 1;
                pid = 0;
            }
        }
    }
    if pid > 0 {
        libc::kill(pid, libc::SIGKILL);
        killed += 1;
    }
    libc::close(fd);
    killed
}

/// Sleeps `ms` milliseconds (poll with no descriptors).
unsafe fn nap(ms: i32) {
    libc::poll(std::ptr::null_mut(), 0, ms);
}

/// The supervisor: waits for the command or a stop, then ends the tree.
unsafe fn supervisor(command: libc::pid_t, stop: i32) -> ! {
    close_all_but(stop);
    // The command's exit wakes the wait at once where the kernel has
    // process descriptors (5.3); else the 20 ms poll finds it.
    let exited = libc::syscall(libc::SYS_pidfd_open, command, 0u32) as i32;
    let mut status: libc::c_int = 0;
    let mut ended = false;
    'watch: loop {
        loop {
            let mut st = 0;
            let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
            if r == command {
                status = st;
                ended = true;
                break 'watch;
            }
            if r <= 0 {
                break;
            }
        }
        let mut pfds = [
            libc::pollfd {
                fd: stop,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: exited,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let n = if exited >= 0 { 2 } else { 1 };
        if libc::poll(pfds.as_mut_ptr(), n, 20) > 0 && pfds[0].revents != 0 {
            break;
        }
    }
    if !ended {
        libc::kill(command, libc::SIGKILL);
    }
    // Killing a child hands its own children to this process: go on until
    // nothing is left to wait for.
    loop {
        kill_children();
        let mut st = 0;
        let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if r == command && !ended {
            status = st;
            ended = true;
        }
        if r < 0 {
            break;
        }
        if r == 0 {
            nap(5);
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    };
    libc::_exit(code)
}
