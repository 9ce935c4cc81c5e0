//! The private world a confined process lives in, where the kernel lets
//! an unprivileged user make one (user namespaces): a PID namespace, so
//! `/proc` — mounted afresh — shows its own processes and nobody else's
//! `environ` or `cmdline`; a `/dev/shm` and a `/dev/pts` of its own; and,
//! when its network is off, a network namespace whose only interface is
//! its own loopback (a test may serve on 127.0.0.1; nothing of the
//! machine's 127.0.0.1 is reachable). The user and group stay the user's
//! (mapped to themselves).
//!
//! When the process's network is some hosts of its configuration, its
//! namespace still has no way out: each host is a listener inside it
//! (`127.0.0.N`, named in its own `/etc/hosts`, or the address itself),
//! whose descriptor goes to the core, which connects each connection on
//! to the real host ([`super::forward`]). So it reaches those hosts, by
//! name, and nothing else: not the machine's 127.0.0.1, not DNS.
//!
//! The steps run between `fork` and `exec` ([`crate::reaper`]'s
//! supervisor forks the command in between): system calls on buffers made
//! before the fork.

use std::ffi::{CStr, CString};

use super::forward::{send_fd, Listener};

/// What to make, ready for the child.
#[derive(Debug, Clone)]
pub struct Prepared {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// A network namespace of its own.
    pub private_network: bool,
    /// Addresses beyond 127/8 that listeners use, put on `lo`.
    pub aliases: Vec<[u8; 4]>,
    pub listeners: Vec<Listener>,
    /// Where the listeners' descriptors go (a socket of the core's).
    pub channel: Option<i32>,
    /// A file bound over `/etc/hosts`.
    pub hosts: Option<CString>,
    /// Secrets covered in its mounts: a file by an empty one, a folder
    /// (`true`) by an empty one.
    pub hidden: Vec<(CString, bool)>,
}

impl Prepared {
    pub fn new(private_network: bool) -> Prepared {
        let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
        Prepared {
            uid_map: format!("{0} {0} 1\n", uid.as_raw()).into_bytes(),
            gid_map: format!("{0} {0} 1\n", gid.as_raw()).into_bytes(),
            private_network,
            aliases: Vec::new(),
            listeners: Vec::new(),
            channel: None,
            hosts: None,
            hidden: Vec::new(),
        }
    }

    /// Covers `secrets` (those that exist) in the command's mounts.
    pub fn hide(&mut self, secrets: &[std::path::PathBuf]) {
        use std::os::unix::ffi::OsStrExt;
        self.hidden = secrets
            .iter()
            .filter_map(|h| {
                let folder = std::fs::metadata(h).ok()?.is_dir();
                Some((CString::new(h.as_os_str().as_bytes()).ok()?, folder))
            })
            .collect();
    }

    /// In the supervisor, before it forks the command: a user namespace
    /// (the user as itself) and a PID namespace for the children to come,
    /// and the private network with its loopback up.
    ///
    /// # Safety
    /// Between `fork` and `exec`.
    pub unsafe fn enter(&self) -> std::io::Result<()> {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWPID;
        if self.private_network {
            flags |= libc::CLONE_NEWNET;
        }
        check(libc::unshare(flags))?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        if self.private_network {
            loopback_up()?;
            for (n, addr) in self.aliases.iter().enumerate() {
                alias(n, *addr)?;
            }
            if let Some(channel) = self.channel {
                for (n, l) in self.listeners.iter().enumerate() {
                    listen_and_send(*l, n as u16, channel)?;
                }
            }
        }
        Ok(())
    }

    /// In the command's first process: [`init`], with `/etc/hosts` bound
    /// over first when the network names hosts.
    ///
    /// # Safety
    /// Between `fork` and `exec`.
    pub unsafe fn init(&self) -> std::io::Result<()> {
        init(self.hosts.as_deref(), &self.hidden)
    }
}

/// In the command's first process (PID 1 of its namespace): its own
/// mounts, with a `/proc` of its namespace, an empty `/dev/shm` and a
/// new instance of `/dev/pts`; then it forks the command and stays as its
/// init — reaping orphans, exiting with the command's status, which ends
/// everything left in the namespace. Returns in the command.
///
/// # Safety
/// Between `fork` and `exec`.
unsafe fn init(hosts: Option<&CStr>, hidden: &[(CString, bool)]) -> std::io::Result<()> {
    // Dies with the supervisor, whatever kills it.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    check(libc::unshare(libc::CLONE_NEWNS))?;
    mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    if let Some(hosts) = hosts {
        mount(Some(hosts), c"/etc/hosts", None, libc::MS_BIND, None)?;
    }
    let quiet = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // Read as empty: a few mounts instead of a rule per entry of `/etc`.
    for (path, folder) in hidden {
        match folder {
            true => mount(
                Some(c"tmpfs"),
                path,
                Some(c"tmpfs"),
                quiet | libc::MS_RDONLY,
                Some(c"size=4k,mode=0555"),
            )?,
            false => mount(Some(c"/dev/null"), path, None, libc::MS_BIND, None)?,
        }
    }
    mount(Some(c"proc"), c"/proc", Some(c"proc"), quiet, None)?;
    if exists(c"/dev/shm") {
        mount(
            Some(c"tmpfs"),
            c"/dev/shm",
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(c"mode=1777"),
        )?;
    }
    if exists(c"/dev/pts") && exists(c"/dev/ptmx") {
        mount(
            Some(c"devpts"),
            c"/dev/pts",
            Some(c"devpts"),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            Some(c"newinstance,ptmxmode=0666,mode=0620"),
        )?;
        mount(
            Some(c"/dev/pts/ptmx"),
            c"/dev/ptmx",
            None,
            libc::MS_BIND,
            None,
        )?;
    }
    match libc::fork() {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(()),
        command => reap(command),
    }
}

/// PID 1's work: reap every child until the command ends, then exit with
/// its status.
unsafe fn reap(command: libc::pid_t) -> ! {
    libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
    loop {
        let mut st = 0;
        let r = libc::waitpid(-1, &mut st, 0);
        if r == command {
            let code = if libc::WIFEXITED(st) {
                libc::WEXITSTATUS(st)
            } else if libc::WIFSIGNALED(st) {
                128 + libc::WTERMSIG(st)
            } else {
                1
            };
            libc::_exit(code);
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            libc::_exit(1);
        }
    }
}

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

unsafe fn exists(path: &CStr) -> bool {
    libc::access(path.as_ptr(), libc::F_OK) == 0
}

unsafe fn mount(
    source: Option<&CStr>,
    target: &CStr,
    kind: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> std::io::Result<()> {
    let ptr = |c: Option<&CStr>| c.map_or(std::ptr::null(), CStr::as_ptr);
    check(libc::mount(
        ptr(source),
        target.as_ptr(),
        ptr(kind),
        flags,
        ptr(data).cast(),
    ))
}

unsafe fn write_file(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    let e = std::io::Error::last_os_error();
    libc::close(fd);
    if n != data.len() as isize {
        return Err(e);
    }
    Ok(())
}

/// Puts `addr` on `lo` as its alias number `n` (`lo:n`).
unsafe fn alias(n: usize, addr: [u8; 4]) -> std::io::Result<()> {
    let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut ifr: libc::ifreq = std::mem::zeroed();
    // "lo:" and up to three digits.
    let mut name = [b'l', b'o', b':', 0, 0, 0];
    let digits = if n >= 100 {
        3
    } else if n >= 10 {
        2
    } else {
        1
    };
    let mut v = n;
    for i in (0..digits).rev() {
        name[3 + i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    for (i, b) in name.iter().enumerate() {
        ifr.ifr_name[i] = *b as libc::c_char;
    }
    let sin = &mut ifr.ifr_ifru.ifru_addr as *mut libc::sockaddr as *mut libc::sockaddr_in;
    (*sin).sin_family = libc::AF_INET as libc::sa_family_t;
    (*sin).sin_addr.s_addr = u32::from_ne_bytes(addr);
    let r = libc::ioctl(s, libc::SIOCSIFADDR, &ifr);
    let e = std::io::Error::last_os_error();
    libc::close(s);
    if r != 0 {
        return Err(e);
    }
    Ok(())
}

/// Listens on `l` inside the namespace and sends the listener to the
/// core through `channel`, numbered `n`.
unsafe fn listen_and_send(l: Listener, n: u16, channel: i32) -> std::io::Result<()> {
    let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let one: libc::c_int = 1;
    libc::setsockopt(
        s,
        libc::SOL_SOCKET,
        libc::SO_REUSEADDR,
        (&one as *const libc::c_int).cast(),
        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
    );
    let mut sin: libc::sockaddr_in = std::mem::zeroed();
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    sin.sin_port = l.port.to_be();
    sin.sin_addr.s_addr = u32::from_ne_bytes(l.addr);
    let bound = libc::bind(
        s,
        (&sin as *const libc::sockaddr_in).cast(),
        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    ) == 0
        && libc::listen(s, 128) == 0;
    let sent = bound && send_fd(channel, s, n);
    let e = std::io::Error::last_os_error();
    libc::close(s);
    if !sent {
        return Err(e);
    }
    Ok(())
}

/// Brings up `lo` of the new network namespace.
unsafe fn loopback_up() -> std::io::Result<()> {
    let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut ifr: libc::ifreq = std::mem::zeroed();
    ifr.ifr_name[0] = b'l' as libc::c_char;
    ifr.ifr_name[1] = b'o' as libc::c_char;
    let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr);
    if r == 0 {
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        r = libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr);
    }
    let e = std::io::Error::last_os_error();
    libc::close(s);
    if r != 0 {
        return Err(e);
    }
    Ok(())
}
