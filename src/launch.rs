//! One launcher for every process Chimera starts on an agent's or a
//! project's behalf — an ACP agent and its terminals, `run_command`, the
//! test runs, and (unconfined, with the environment allow-list) the MCP
//! servers the options name. A process gets what it needs and nothing else, each rule a
//! line here:
//!
//! - **environment**: an allow-list ([`env`]); no `NVIM`, no socket
//!   address, no secret, unless the agent's configuration names it;
//! - **files**: what its [`Rules`] grant (Landlock, [`landlock`]);
//! - **sockets**: no Unix socket of the user's, named or abstract — the
//!   `socket(AF_UNIX)` call is refused ([`seccomp`]), abstract names are
//!   out of its Landlock scope;
//! - **other processes**: a PID namespace with its own `/proc`
//!   ([`namespaces`]); where the kernel gives no user namespaces, `/proc`
//!   holds only its own process folder and the machine's figures;
//!   signals reach only its own processes (Landlock scope);
//! - **network**: a network namespace with only its own loopback; the
//!   hosts its agent's configuration names are doors in it that the core
//!   forwards ([`forward`]), nothing else — no DNS, not the machine's
//!   127.0.0.1. Without namespaces: no socket at all when the network is
//!   off, else TCP to the named hosts' ports only (Landlock ABI 4);
//! - **devices**: `/dev/null`, `/dev/zero`, `/dev/full`, the random
//!   sources, and its own `/dev/shm` and `/dev/pts`; no controlling
//!   terminal (a session of its own), so `/dev/tty` is not the user's.
//!
//! Where the kernel cannot enforce the rules, [`Launch::new`] refuses
//! with [`ConfineError::Unavailable`]; the callers start the process
//! unconfined only when the user said so (`unconfined = true`).

pub mod env;
#[cfg(target_os = "linux")]
pub mod forward;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod namespaces;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(all(test, target_os = "linux"))]
mod tests;

use std::process::Command;

use crate::confine::{ConfineError, Rules};

/// Where a confined process's network reaches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// Nowhere: its own loopback at most.
    #[default]
    Off,
    /// These hosts' TCP ports (forwarded by the core; where there are no
    /// namespaces, those ports of any host: Landlock knows ports only).
    Hosts(Vec<Target>),
}

/// A host and port a process's network may reach.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// A launched process: its supervisor ([`crate::reaper`]; dropping `stop`
/// ends everything it started) and the doors of its network, which the
/// caller serves while it runs ([`Doors::serve`]).
pub struct Started {
    pub child: std::process::Child,
    pub stop: crate::reaper::Stop,
    pub doors: Doors,
}

/// Hears of each connection a process's network opens through its doors,
/// or could not (the effect log).
pub type Opened = std::sync::Arc<dyn Fn(&Target, std::io::Result<()>) + Send + Sync>;

#[cfg(target_os = "linux")]
pub use forward::Doors;

/// No doors where the network is not forwarded.
#[cfg(not(target_os = "linux"))]
pub struct Doors;

#[cfg(not(target_os = "linux"))]
impl Doors {
    pub fn serve(
        self,
        _stop: tokio_util::sync::CancellationToken,
        _opened: Opened,
    ) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a confined process is given.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub files: Rules,
    pub network: Network,
}

/// A process about to be launched: its `Command` (arguments, folder and
/// pipes are the caller's to set; the environment is the launcher's).
pub struct Launch {
    command: Command,
    #[cfg(target_os = "linux")]
    kernel: Option<linux::Kernel>,
}

/// How the launcher confines processes on this machine, for
/// `:checkhealth` and `chimera status`.
pub fn describe() -> String {
    #[cfg(target_os = "linux")]
    {
        linux::describe()
    }
    #[cfg(not(target_os = "linux"))]
    {
        if crate::confine::available() {
            "Seatbelt (files only: the network and sockets stay open on macOS)".into()
        } else {
            "none: this system cannot confine programs".into()
        }
    }
}

impl Launch {
    /// `program` with the environment allow-list, the user's variables
    /// `pass` besides and `set` over them, confined by `policy` when given
    /// (`None`: the user chose to run it unconfined).
    pub fn new(
        program: &str,
        policy: Option<&Policy>,
        pass: &[String],
        set: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Launch, ConfineError> {
        let mut command = match policy {
            #[cfg(not(target_os = "linux"))]
            Some(policy) => crate::confine::command(program, Some(&policy.files))?,
            _ => Command::new(program),
        };
        command
            .env_clear()
            .envs(env::environment(std::env::vars_os(), pass, set));
        #[cfg(not(target_os = "linux"))]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        Ok(Launch {
            command,
            #[cfg(target_os = "linux")]
            kernel: policy.map(linux::Kernel::new).transpose()?,
        })
    }

    /// The command, for its arguments, folder and pipes.
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Starts it under its supervisor ([`crate::reaper`]).
    pub fn spawn(mut self) -> std::io::Result<Started> {
        #[cfg(target_os = "linux")]
        if let Some(kernel) = self.kernel.take() {
            return kernel.spawn(&mut self.command);
        }
        let (child, stop) = crate::reaper::spawn(&mut self.command)?;
        #[cfg(target_os = "linux")]
        let doors = Doors(Vec::new());
        #[cfg(not(target_os = "linux"))]
        let doors = Doors;
        Ok(Started { child, stop, doors })
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::Path;
    use std::process::Command;
    use std::sync::{Arc, OnceLock};

    use super::forward::{self, Doors};
    use super::landlock::{self, Grant};
    use super::namespaces;
    use super::seccomp::{self, Sockets};
    use super::{Network, Policy, Started};
    use crate::confine::ConfineError;

    /// What the kernel is asked for one process, ready before the fork.
    pub struct Kernel {
        namespaces: Option<namespaces::Prepared>,
        landlock: Option<landlock::Prepared>,
        filter: Option<seccompiler::BpfProgram>,
        /// The doors of its network: the plan (its `/etc/hosts` kept until
        /// it started) and the socket pair the listeners come back on.
        doors: Option<(forward::Plan, OwnedFd, OwnedFd)>,
    }

    /// The machine's files every process reads where it has no `/proc` of
    /// its own: figures, not processes.
    const PROC_FIGURES: &[&str] = &[
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/stat",
        "/proc/loadavg",
        "/proc/uptime",
        "/proc/version",
        "/proc/filesystems",
        "/proc/sys",
    ];

    /// Whether this kernel lets us make the private world of
    /// [`namespaces`]: asked once, by launching `true` in one.
    pub fn private_world() -> bool {
        static WORKS: OnceLock<bool> = OnceLock::new();
        *WORKS.get_or_init(|| {
            let Some(truth) = ["/bin/true", "/usr/bin/true"]
                .into_iter()
                .find(|p| Path::new(p).exists())
            else {
                return false;
            };
            let kernel = Kernel {
                namespaces: Some(namespaces::Prepared::new(true)),
                landlock: None,
                filter: None,
                doors: None,
            };
            let mut command = Command::new(truth);
            command
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            kernel
                .spawn(&mut command)
                .and_then(|mut started| started.child.wait())
                .is_ok_and(|s| s.success())
        })
    }

    pub fn describe() -> String {
        let abi = landlock::abi();
        if abi < 1 {
            return "none: this kernel has no Landlock (5.13 or later, `landlock` in the LSM list)"
                .into();
        }
        let world = if private_world() {
            "a PID, mount and network namespace of its own (its own /proc, /dev/shm, /dev/pts, loopback)"
        } else {
            "no namespaces (this kernel refuses unprivileged user namespaces): /proc shows its own process only, no network at all when it is off"
        };
        let ports = if private_world() {
            "an agent's network reaches only the hosts its configuration names, forwarded by Chimera"
        } else if abi >= 4 {
            "an agent's TCP reaches only its configured hosts' ports (of any host)"
        } else {
            "no TCP port rules (Landlock ABI < 4): an agent that needs the network does not start"
        };
        format!("Landlock ABI {abi}, no Unix sockets (seccomp), {world}; {ports}")
    }

    impl Kernel {
        pub fn new(policy: &Policy) -> Result<Kernel, ConfineError> {
            if landlock::abi() < 1 {
                return Err(ConfineError::Unavailable);
            }
            let private = private_world();
            let hosts: &[super::Target] = match &policy.network {
                Network::Off => &[],
                Network::Hosts(h) => h,
            };
            // With namespaces the network is the namespace's; without,
            // Landlock's ports are all there is.
            let ports: Option<Vec<u16>> = match (&policy.network, private) {
                (Network::Hosts(h), false) => Some(h.iter().map(|t| t.port).collect()),
                _ => None,
            };
            let mut rules = landlock::Prepared::new(ports.as_deref());
            if ports.is_some() && !rules.restricts_tcp() {
                return Err(ConfineError::NoPortRules);
            }
            let hidden = &policy.files.hidden;
            for p in &policy.files.read {
                match private || !hidden.iter().any(|h| h.starts_with(p)) {
                    // Its own mounts cover the secrets inside.
                    true => rules.grant(p, Grant::Read),
                    false => {
                        for e in crate::confine::entries_without(p, hidden) {
                            rules.grant(&e, Grant::Read);
                        }
                    }
                }
            }
            for p in &policy.files.write {
                rules.grant(p, Grant::Write);
            }
            if private {
                rules.grant_fresh(Path::new("/proc"), Grant::Read, true);
                rules.grant_fresh(Path::new("/dev/shm"), Grant::Write, true);
                rules.grant_fresh(Path::new("/dev/pts"), Grant::Write, true);
                rules.grant_fresh(Path::new("/dev/ptmx"), Grant::Write, false);
            } else {
                for p in PROC_FIGURES {
                    rules.grant(Path::new(p), Grant::Read);
                }
                rules.grant_own_proc();
            }
            let sockets = if private || !hosts.is_empty() {
                Sockets::Inet
            } else {
                Sockets::None
            };
            let filter = seccomp::filter(sockets)
                .map_err(|e| ConfineError::Setup(format!("the system-call filter: {e}")))?;
            let mut namespaces = private.then(|| {
                let mut ns = namespaces::Prepared::new(true);
                ns.hide(hidden);
                ns
            });
            let mut doors = None;
            if let (Some(ns), false) = (namespaces.as_mut(), hosts.is_empty()) {
                let plan = forward::Plan::new(hosts)?;
                let (core_end, child_end) = forward::channel()
                    .map_err(|e| ConfineError::Setup(format!("the agent's network: {e}")))?;
                ns.listeners = plan.listeners.clone();
                ns.aliases = plan.aliases.clone();
                ns.channel = Some(child_end.as_raw_fd());
                ns.hosts = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
                    plan.hosts.path().as_os_str(),
                ))
                .ok();
                doors = Some((plan, core_end, child_end));
            }
            Ok(Kernel {
                namespaces,
                landlock: Some(rules),
                filter: Some(filter),
                doors,
            })
        }

        pub fn spawn(mut self, command: &mut Command) -> std::io::Result<Started> {
            let doors = self.doors.take();
            let kernel = Arc::new(self);
            let before = kernel.clone();
            let (child, stop) = crate::reaper::spawn_with(
                command,
                // SAFETY (both): run between fork and exec, system calls
                // only.
                move || unsafe {
                    match &before.namespaces {
                        Some(ns) => ns.enter(),
                        None => Ok(()),
                    }
                },
                move || unsafe { kernel.confine() },
            )?;
            let doors = match doors {
                None => Doors(Vec::new()),
                Some((plan, core_end, child_end)) => {
                    drop(child_end);
                    let got = forward::receive(&core_end, plan.listeners.len())?;
                    Doors(
                        got.into_iter()
                            .filter_map(|(n, fd)| Some((fd, plan.targets.get(n as usize)?.clone())))
                            .collect(),
                    )
                }
            };
            Ok(Started { child, stop, doors })
        }

        /// In the command, last before its `exec`.
        unsafe fn confine(&self) -> std::io::Result<()> {
            if let Some(ns) = &self.namespaces {
                ns.init()?;
            }
            if let Some(rules) = &self.landlock {
                rules.enter()?;
            }
            if let Some(filter) = &self.filter {
                let prog = libc::sock_fprog {
                    len: filter.len() as u16,
                    filter: filter.as_ptr() as *mut libc::sock_filter,
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                    || libc::syscall(
                        libc::SYS_seccomp,
                        libc::SECCOMP_SET_MODE_FILTER,
                        0u32,
                        &prog as *const libc::sock_fprog,
                    ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Nothing the core holds open (a descriptor it did not mark
            // close-on-exec) reaches the program.
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        }
    }
}
