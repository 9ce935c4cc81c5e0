//! Landlock through its three system calls, for the launcher: the rule
//! set is made in the child, between `fork` and `exec`, after the
//! process's own `/proc`, `/dev/shm` and `/dev/pts` are mounted — a rule
//! names an inode, and those exist only then. Everything that allocates
//! (paths as C strings, the rights each gets) is prepared before the
//! fork ([`Prepared`]); the child makes system calls only.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// The kernel's ABI (include/uapi/linux/landlock.h).
const RULE_PATH_BENEATH: u32 = 1;
const RULE_NET_PORT: u32 = 2;

const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;
const CONNECT_TCP: u64 = 1 << 1;
const BIND_TCP: u64 = 1 << 0;
const SCOPE_ABSTRACT_UNIX: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// The Landlock ABI this kernel speaks (0: none).
pub fn abi() -> i32 {
    crate::confine::landlock_abi()
}

/// The file rights ABI `abi` knows.
fn fs_rights(abi: i32) -> u64 {
    let mut all = (1u64 << 13) - 1; // ABI 1: execute … make_sym
    if abi >= 2 {
        all |= 1 << 13; // refer
    }
    if abi >= 3 {
        all |= TRUNCATE;
    }
    if abi >= 5 {
        all |= IOCTL_DEV;
    }
    all
}

/// What a rule may grant: to read, or everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    Read,
    Write,
}

/// One path and what it may be used for, ready for the child.
#[derive(Debug)]
struct PathRule {
    path: CString,
    access: u64,
}

/// The rule set, ready to be made in the child.
#[derive(Debug)]
pub struct Prepared {
    abi: i32,
    handled_fs: u64,
    handled_net: u64,
    scoped: u64,
    paths: Vec<PathRule>,
    /// Paths made for the process (its `/proc` …), granted once they are.
    fresh: Vec<PathRule>,
    ports: Vec<u16>,
    /// Grants the process's own `/proc/<pid>` (no private `/proc`).
    own_proc: bool,
}

impl Prepared {
    /// An empty rule set: nothing is reachable until granted; when
    /// `ports` are given, TCP only to them where the kernel says which
    /// (ABI 4), never a bind (`None`: the network is the namespace's).
    pub fn new(ports: Option<&[u16]>) -> Prepared {
        let abi = abi();
        Prepared {
            abi,
            handled_fs: fs_rights(abi),
            handled_net: if abi >= 4 && ports.is_some() {
                BIND_TCP | CONNECT_TCP
            } else {
                0
            },
            scoped: if abi >= 6 {
                SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
            } else {
                0
            },
            paths: Vec::new(),
            fresh: Vec::new(),
            ports: ports.unwrap_or_default().to_vec(),
            own_proc: false,
        }
    }

    /// Whether the kernel restricts TCP by port (asked for ports only).
    pub fn restricts_tcp(&self) -> bool {
        self.handled_net != 0
    }

    fn rule(&self, path: &Path, grant: Grant, is_dir: bool) -> Option<PathRule> {
        let mut access = match grant {
            Grant::Read => EXECUTE | READ_FILE | READ_DIR,
            Grant::Write => self.handled_fs,
        } & self.handled_fs;
        if !is_dir {
            access &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
        }
        Some(PathRule {
            path: CString::new(path.as_os_str().as_bytes()).ok()?,
            access,
        })
    }

    /// Grants `path` (which exists now).
    pub fn grant(&mut self, path: &Path, grant: Grant) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if let Some(r) = self.rule(path, grant, meta.is_dir()) {
            self.paths.push(r);
        }
    }

    /// Grants `path` as the child finds it after its mounts.
    pub fn grant_fresh(&mut self, path: &Path, grant: Grant, is_dir: bool) {
        if let Some(r) = self.rule(path, grant, is_dir) {
            self.fresh.push(r);
        }
    }

    /// Grants the child's own `/proc/<pid>` to read.
    pub fn grant_own_proc(&mut self) {
        self.own_proc = true;
    }

    /// Makes the rule set and enters it. Child only: system calls, no
    /// allocation.
    ///
    /// # Safety
    /// Between `fork` and `exec`.
    pub unsafe fn enter(&self) -> std::io::Result<()> {
        let attr = RulesetAttr {
            handled_access_fs: self.handled_fs,
            handled_access_net: self.handled_net,
            scoped: self.scoped,
        };
        let size = match self.abi {
            ..=3 => 8,
            4 | 5 => 16,
            _ => std::mem::size_of::<RulesetAttr>(),
        };
        let fd = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size,
            0u32,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = fd as i32;
        let done = self.add_all(fd);
        let entered = done.and_then(|()| {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
        libc::close(fd);
        entered
    }

    unsafe fn add_all(&self, ruleset: i32) -> std::io::Result<()> {
        for r in self.paths.iter().chain(&self.fresh) {
            add_path(ruleset, r.path.as_ptr(), r.access)?;
        }
        if self.own_proc {
            let mut path = [0u8; 32];
            proc_path(&mut path, libc::getpid());
            add_path(
                ruleset,
                path.as_ptr().cast(),
                EXECUTE | READ_FILE | READ_DIR,
            )?;
        }
        if self.handled_net != 0 {
            for port in &self.ports {
                let attr = NetPortAttr {
                    allowed_access: CONNECT_TCP,
                    port: *port as u64,
                };
                if libc::syscall(
                    libc::SYS_landlock_add_rule,
                    ruleset,
                    RULE_NET_PORT,
                    &attr as *const NetPortAttr,
                    0u32,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// Adds `path` (a C string) with `access`; a path that is gone is left
/// out (it grants nothing then).
unsafe fn add_path(ruleset: i32, path: *const libc::c_char, access: u64) -> std::io::Result<()> {
    let fd = libc::open(path, libc::O_PATH | libc::O_CLOEXEC);
    if fd < 0 {
        return Ok(());
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
    };
    let r = libc::syscall(
        libc::SYS_landlock_add_rule,
        ruleset,
        RULE_PATH_BENEATH,
        &attr as *const PathBeneathAttr,
        0u32,
    );
    let e = std::io::Error::last_os_error();
    libc::close(fd);
    if r != 0 {
        return Err(e);
    }
    Ok(())
}

/// Writes `/proc/<pid>\0` into `out` without allocating.
fn proc_path(out: &mut [u8; 32], pid: i32) {
    let mut n = 0;
    for b in b"/proc/" {
        out[n] = *b;
        n += 1;
    }
    let mut digits = [0u8; 12];
    let (mut d, mut p) = (0, pid.max(0));
    loop {
        digits[d] = b'0' + (p % 10) as u8;
        p /= 10;
        d += 1;
        if p == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        out[n] = digits[d];
        n += 1;
    }
    out[n] = 0;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pid_becomes_its_proc_folder() {
        let mut out = [0u8; 32];
        super::proc_path(&mut out, 40213);
        assert_eq!(&out[..12], b"/proc/40213\0");
        super::proc_path(&mut out, 0);
        assert_eq!(&out[..8], b"/proc/0\0");
    }
}
