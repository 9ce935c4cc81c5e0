//! The only way out of a confined agent's network namespace: the hosts
//! its configuration names, each forwarded by the core. Inside, a host is
//! a listener — `127.0.0.N` for a name (its `/etc/hosts` says so), the
//! address itself for an address — made in the namespace between `fork`
//! and `exec` ([`super::namespaces`]) and handed to the core over a
//! socket pair; the core accepts there and connects each connection to
//! the real host and port, as the user's machine resolves it. TLS stays
//! end to end (the agent still names the host it means), and what the
//! namespace reaches is that list: no DNS, no other port, not the
//! machine's 127.0.0.1 unless named.

use std::io::Write;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::Target;
use crate::confine::ConfineError;

/// A listener to make inside the namespace, whose descriptor comes to
/// the core.
#[derive(Debug, Clone, Copy)]
pub struct Listener {
    pub addr: [u8; 4],
    pub port: u16,
}

/// The namespace's side of the targets: listeners, the addresses they
/// need on `lo`, its `/etc/hosts`.
pub struct Plan {
    pub targets: Vec<Target>,
    pub listeners: Vec<Listener>,
    pub aliases: Vec<[u8; 4]>,
    /// The namespace's `/etc/hosts`, kept until the process started.
    pub hosts: tempfile::NamedTempFile,
}

impl Plan {
    /// Where each of `targets` is inside the namespace.
    pub fn new(targets: &[Target]) -> Result<Plan, ConfineError> {
        let mut names: Vec<(String, [u8; 4])> = Vec::new();
        let mut listeners = Vec::new();
        let mut aliases: Vec<[u8; 4]> = Vec::new();
        for t in targets {
            let addr = match t.host.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(ip)) => ip.octets(),
                Ok(std::net::IpAddr::V6(ip)) if ip.is_loopback() => [127, 0, 0, 1],
                Ok(std::net::IpAddr::V6(_)) => {
                    return Err(ConfineError::Setup(format!(
                        "network entry {t}: an IPv6 address other than ::1 cannot be forwarded; name the host"
                    )))
                }
                Err(_) if t.host == "localhost" => [127, 0, 0, 1],
                Err(_) => match names.iter().find(|(n, _)| *n == t.host) {
                    Some((_, a)) => *a,
                    None => {
                        let n = names.len() + 2;
                        if n > 250 {
                            return Err(ConfineError::Setup("more than 248 hosts to reach".into()));
                        }
                        let a = [127, 0, 0, n as u8];
                        names.push((t.host.clone(), a));
                        a
                    }
                },
            };
            if addr[0] != 127 && !aliases.contains(&addr) {
                aliases.push(addr);
            }
            listeners.push(Listener { addr, port: t.port });
        }
        let mut hosts = tempfile::Builder::new()
            .prefix("chimera-hosts-")
            .tempfile()
            .map_err(|e| ConfineError::Setup(format!("the agent's /etc/hosts: {e}")))?;
        let mut text = String::from("127.0.0.1 localhost\n");
        for (name, a) in &names {
            text.push_str(&format!("{} {name}\n", Ipv4Addr::from(*a)));
        }
        hosts
            .write_all(text.as_bytes())
            .map_err(|e| ConfineError::Setup(format!("the agent's /etc/hosts: {e}")))?;
        Ok(Plan {
            targets: targets.to_vec(),
            listeners,
            aliases,
            hosts,
        })
    }
}

/// Sends descriptor `fd` numbered `n` over `channel`. Between `fork` and
/// `exec`: system calls only.
///
/// # Safety
/// `channel` and `fd` are open descriptors.
pub unsafe fn send_fd(channel: i32, fd: i32, n: u16) -> bool {
    let mut data = n.to_ne_bytes();
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // Room for one descriptor, aligned as the kernel wants.
    let mut space = [0u64; 4];
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as _;
    let cmsg = libc::CMSG_FIRSTHDR(&msg);
    (*cmsg).cmsg_level = libc::SOL_SOCKET;
    (*cmsg).cmsg_type = libc::SCM_RIGHTS;
    (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as _;
    std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>(), fd);
    libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) == data.len() as isize
}

/// The listeners the namespace sent, by number; all `count` of them are
/// queued once the process started.
pub fn receive(channel: &OwnedFd, count: usize) -> std::io::Result<Vec<(u16, OwnedFd)>> {
    let mut got = Vec::with_capacity(count);
    for _ in 0..count {
        let mut data = [0u8; 2];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut space = [0u64; 4];
        // SAFETY: every pointer is to a local that outlives the call.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = space.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&space) as _;
            let n = libc::recvmsg(
                channel.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            );
            if n != 2 {
                return Err(std::io::Error::other(format!(
                    "the agent's network: {} of {count} listeners came back",
                    got.len()
                )));
            }
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
                return Err(std::io::Error::other("the agent's network: no listener"));
            }
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>());
            got.push((u16::from_ne_bytes(data), OwnedFd::from_raw_fd(fd)));
        }
    }
    Ok(got)
}

/// A socket pair for the listeners: the core's end, and the child's.
pub fn channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for both.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just made, owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Connections one agent's doors forward at once; more wait, unaccepted,
/// in the kernel's queue: an agent holding a thousand idle connections
/// makes the core (Neovim's process) hold this many, not a thousand.
const FORWARDED: usize = 64;

/// Listeners inside a namespace and where each leads.
pub struct Doors(pub Vec<(OwnedFd, Target)>);

impl Doors {
    /// Serves every door until `stop`: each connection accepted inside is
    /// connected to its target and copied both ways; `opened` hears of
    /// each (the effect log), `refused` of a target that cannot be
    /// reached.
    pub fn serve(self, stop: CancellationToken, opened: super::Opened) -> std::io::Result<()> {
        let slots = Arc::new(Semaphore::new(FORWARDED));
        for (fd, target) in self.0 {
            let std_listener = std::net::TcpListener::from(fd);
            std_listener.set_nonblocking(true)?;
            let listener = tokio::net::TcpListener::from_std(std_listener)?;
            let door = Door {
                target,
                stop: stop.clone(),
                opened: opened.clone(),
            };
            tokio::spawn(door.accept(listener, slots.clone()));
        }
        Ok(())
    }
}

/// One door being served.
#[derive(Clone)]
struct Door {
    target: Target,
    stop: CancellationToken,
    opened: super::Opened,
}

impl Door {
    /// Accepts while a slot is free, until `stop`.
    async fn accept(self, listener: tokio::net::TcpListener, slots: Arc<Semaphore>) {
        loop {
            let accepted = tokio::select! {
                _ = self.stop.cancelled() => return,
                slot = slots.clone().acquire_owned() => match slot {
                    Ok(slot) => listener.accept().await.map(|(s, _)| (s, slot)),
                    Err(_) => return,
                },
            };
            let Ok((inside, slot)) = accepted else {
                return;
            };
            tokio::spawn(self.clone().forward(inside, slot));
        }
    }

    /// Connects `inside` to the target and copies both ways until either
    /// ends or `stop`; the slot is free again then.
    async fn forward(self, mut inside: tokio::net::TcpStream, _slot: OwnedSemaphorePermit) {
        let target = &self.target;
        let mut outside =
            match tokio::net::TcpStream::connect((target.host.as_str(), target.port)).await {
                Ok(o) => o,
                Err(e) => return (self.opened)(target, Err(e)),
            };
        (self.opened)(target, Ok(()));
        tokio::select! {
            _ = self.stop.cancelled() => {}
            _ = tokio::io::copy_bidirectional(&mut inside, &mut outside) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(host: &str, port: u16) -> Target {
        Target {
            host: host.into(),
            port,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_agent_holding_hundreds_of_connections_gets_at_most_the_cap_forwarded() {
        // The real host: counts what reaches it and holds it open.
        let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = host.local_addr().unwrap().port();
        let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = reached.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in host.incoming().flatten() {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(s);
            }
        });
        // The door, as the namespace would hand it over.
        let door = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let inside = door.local_addr().unwrap();
        let stop = CancellationToken::new();
        Doors(vec![(OwnedFd::from(door), t("127.0.0.1", port))])
            .serve(stop.clone(), std::sync::Arc::new(|_, _| {}))
            .unwrap();
        // Past the cap and the kernel's queue, a connection waits: the
        // agent gives up on it.
        let mut idle = Vec::new();
        for _ in 0..300 {
            let wait = std::time::Duration::from_millis(20);
            if let Ok(Ok(s)) =
                tokio::time::timeout(wait, tokio::net::TcpStream::connect(inside)).await
            {
                idle.push(s);
            }
        }
        assert!(idle.len() > FORWARDED, "{} connections made", idle.len());
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let n = reached.load(std::sync::atomic::Ordering::SeqCst);
        assert!(n > 0 && n <= FORWARDED, "{n} connections reached the host");
        stop.cancel();
    }

    #[test]
    fn names_get_loopback_addresses_of_their_own_and_addresses_stay() {
        let plan = Plan::new(&[
            t("api.anthropic.com", 443),
            t("127.0.0.1", 8080),
            t("192.168.1.10", 11434),
            t("api.anthropic.com", 8443),
            t("localhost", 9000),
        ])
        .unwrap();
        let at: Vec<([u8; 4], u16)> = plan.listeners.iter().map(|l| (l.addr, l.port)).collect();
        assert_eq!(
            at,
            [
                ([127, 0, 0, 2], 443),
                ([127, 0, 0, 1], 8080),
                ([192, 168, 1, 10], 11434),
                ([127, 0, 0, 2], 8443),
                ([127, 0, 0, 1], 9000),
            ]
        );
        assert_eq!(plan.aliases, [[192, 168, 1, 10]]);
        let hosts = std::fs::read_to_string(plan.hosts.path()).unwrap();
        assert_eq!(hosts, "127.0.0.1 localhost\n127.0.0.2 api.anthropic.com\n");
        assert!(Plan::new(&[t("2001:db8::1", 443)]).is_err());
    }
}
