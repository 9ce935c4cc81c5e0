//! The system-call filter a confined process runs under: the sockets it
//! may make. Landlock confines files, and connecting to a named Unix
//! socket (Neovim's server, Chimera's control socket, an SSH agent) is not
//! a file access it checks below ABI 9; the filter closes that door by
//! refusing `socket(AF_UNIX, …)` whatever the path, and every family but
//! the ones the process's network allows. `socketpair` stays (programs
//! talk to their own children through one: Node's `child_process`), but
//! only of a connected kind: a datagram pair could be pointed at a named
//! socket with `connect`. `io_uring` is refused: it makes sockets without
//! the `socket` call this filter sees.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule,
};

/// The socket families a process may make with `socket`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// None at all: no network, no Unix socket.
    None,
    /// IPv4, IPv6 and netlink (address lookups read the interfaces
    /// through it) — on a private loopback, or to the ports Landlock
    /// opens; never a Unix socket.
    Inet,
}

/// The x32 ABI's system calls carry this bit; they are the same calls.
const X32: i64 = 0x4000_0000;

/// The filter for `sockets`, compiled for this machine.
pub fn filter(sockets: Sockets) -> Result<BpfProgram, seccompiler::Error> {
    let arch = std::env::consts::ARCH.try_into()?;
    let cond = |arg, op, value| SeccompCondition::new(arg, Len::Dword, op, value);
    // A call listed here is refused when one of its rules holds (a rule:
    // all of its conditions); an empty list refuses it always.
    let socket = match sockets {
        Sockets::None => vec![],
        Sockets::Inet => vec![SeccompRule::new(vec![
            cond(0, Op::Ne, libc::AF_INET as u64)?,
            cond(0, Op::Ne, libc::AF_INET6 as u64)?,
            cond(0, Op::Ne, libc::AF_NETLINK as u64)?,
        ])?],
    };
    // The kind is the low bits of the type (flags above them).
    let kind = |k: i32| cond(1, Op::MaskedEq(0xf), k as u64);
    let socketpair = vec![
        SeccompRule::new(vec![cond(0, Op::Ne, libc::AF_UNIX as u64)?])?,
        SeccompRule::new(vec![kind(libc::SOCK_DGRAM)?])?,
        SeccompRule::new(vec![kind(libc::SOCK_RAW)?])?,
        SeccompRule::new(vec![kind(libc::SOCK_RDM)?])?,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let calls = [
        (libc::SYS_socket, socket),
        (libc::SYS_socketpair, socketpair),
        (libc::SYS_io_uring_setup, vec![]),
    ];
    for (call, refused) in calls {
        if cfg!(target_arch = "x86_64") {
            rules.insert(call | X32, refused.clone());
        }
        rules.insert(call, refused);
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )?
    .try_into()
    .map_err(seccompiler::Error::from)
}
