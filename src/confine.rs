//! Confinement by the kernel of the programs agents start (an ACP agent,
//! and everything it starts in turn): they may read only the system's own
//! directories and the ones they are given, and write only into theirs.
//! On Linux this is Landlock: a rule set made in the core and entered by
//! the child between `fork` and `exec`, which every descendant inherits
//! and none can leave. On macOS it is a Seatbelt profile the program is
//! started under (`sandbox-exec`, [`seatbelt`]), inherited the same way.
//! The project root is never among the places given —
//! a rule that holds it or lies inside it is refused — so its files and
//! secrets are out of reach by any path, link or `..`.

use std::path::{Path, PathBuf};
#[cfg(not(target_os = "linux"))]
use std::process::Command;

pub mod refusals;
pub mod seatbelt;

/// Why a program could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("this system cannot confine programs (Linux with Landlock is needed: kernel 5.13 or later, `landlock` in the LSM list; or macOS with /usr/bin/sandbox-exec)")]
    Unavailable,
    #[error("{path} {how} the project ({root}); a confined program may not be given it — choose a folder outside the project")]
    TouchesProject {
        path: PathBuf,
        root: PathBuf,
        how: &'static str,
    },
    #[error("this kernel cannot limit a program's network to some ports (Landlock ABI 4, Linux 6.7, is needed); the agent does not start unless it runs unconfined")]
    NoPortRules,
    #[error("cannot set up the confinement: {0}")]
    Setup(String),
}

/// Where a confined program may go.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Folders and files it may read and run programs from.
    pub read: Vec<PathBuf>,
    /// Folders and files it may also create, change and delete.
    pub write: Vec<PathBuf>,
    /// Secrets inside what it may read, kept from it all the same: covered
    /// by an empty file or folder in its own mounts, or where it has none,
    /// left out of the rules (their folder granted entry by entry).
    pub hidden: Vec<PathBuf>,
}

/// The system's folders every program reads: its libraries and its
/// configuration. `/tmp`, `/home` and `/var` are not among them, nor
/// `/proc` and `/dev`, which the launcher gives of the process's own
/// ([`crate::launch`]).
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/nix",
    "/snap",
    "/sys",
    "/dev/random",
    "/dev/urandom",
    "/run/systemd/resolve",
    // macOS
    "/System",
    "/Library",
    "/private/var/db/timezone",
];

/// The system's settings, readable less [`SETTINGS_SECRETS`]: Linux's
/// as a whole with the secrets hidden, macOS's entry by entry (its
/// profile has no mounts to hide them with).
const SETTINGS: &str = "/etc";
const MAC_SETTINGS: &str = "/private/etc";

/// What the system's settings keep secret (names in a settings folder, or
/// `folder/name`): never readable by a confined program, even one run as
/// root, as in a container or on CI, where `/etc/shadow` was.
const SETTINGS_SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "master.passwd",
    "sudoers",
    "sudoers.d",
    "ssh",
    "ssl/private",
    "krb5.keytab",
    "NetworkManager/system-connections",
    "wpa_supplicant",
    "security/opasswd",
    "docker",
    "credstore",
    "credstore.encrypted",
];

/// The entries of `dir` less the `hidden` paths, descending into the
/// folders that hold one (their other entries kept).
pub fn entries_without(dir: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if hidden.contains(&path) {
            continue;
        }
        let holds =
            e.file_type().is_ok_and(|t| t.is_dir()) && hidden.iter().any(|h| h.starts_with(&path));
        match holds {
            true => out.extend(entries_without(&path, hidden)),
            false => out.push(path),
        }
    }
    out
}

/// The secrets of settings folder `dir` that exist here.
fn secrets_of(dir: &str) -> Vec<PathBuf> {
    SETTINGS_SECRETS
        .iter()
        .map(|s| Path::new(dir).join(s))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect()
}

/// Toolchains installed in the home folder that programs run from (read
/// only): compilers, interpreters and their package caches — not the
/// folders beside them that keep logins (`~/.cargo/credentials.toml`).
const TOOLCHAINS: &[&str] = &[
    "~/.rustup",
    "~/.cargo/bin",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.local/bin",
    "~/.local/lib",
    "~/.pyenv",
    "~/.nvm",
    "~/.asdf/installs",
    "~/.local/share/mise/installs",
    "~/go/pkg/mod",
];

/// Devices every program may write to (`/dev/tty` is no terminal of the
/// user's: a launched process has a session of its own).
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The folders of `PYTHONPATH` (`value`) that exist, absolute: where the
/// user's Python finds its packages (pytest installed with `--target`),
/// which a confined test run imports as the user's own would. Relative
/// ones name folders of the scratch copy, readable already. One that is
/// or holds the `home` folder is left out: it would open the user's keys.
fn python_path(value: Option<&std::ffi::OsStr>, home: Option<&Path>) -> Vec<PathBuf> {
    let home = home.map(real);
    value
        .map(|v| {
            std::env::split_paths(v)
                .filter(|p| p.is_absolute() && p.is_dir())
                .filter(|p| {
                    home.as_ref()
                        .is_none_or(|h| h.strip_prefix(real(p)).is_err())
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Rules {
    /// The system's folders and the toolchains in the home folder (read),
    /// and devices (write), as far as they exist here.
    pub fn system() -> Rules {
        let existing = |list: &[&str]| -> Vec<PathBuf> {
            list.iter()
                .map(PathBuf::from)
                .filter(|p| p.exists())
                .collect()
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let toolchains = TOOLCHAINS.iter().filter_map(|t| {
            let p = home.as_ref()?.join(t.strip_prefix("~/")?);
            p.exists().then_some(p)
        });
        let python_path = python_path(std::env::var_os("PYTHONPATH").as_deref(), home.as_deref());
        let mac_settings = entries_without(Path::new(MAC_SETTINGS), &secrets_of(MAC_SETTINGS));
        Rules {
            read: existing(SYSTEM)
                .into_iter()
                .chain(existing(&[SETTINGS]))
                .chain(mac_settings)
                .chain(toolchains)
                .chain(python_path)
                .collect(),
            write: existing(DEVICES),
            hidden: secrets_of(SETTINGS),
        }
    }

    /// Checks that no rule holds `root` or lies inside it. A system
    /// folder that holds it (a project under `/opt`) is dropped: the
    /// program loses that folder, not the project its protection.
    pub fn keep_out(&mut self, root: &Path) -> Result<(), ConfineError> {
        let root = real(root);
        for rules in [&mut self.read, &mut self.write] {
            let mut kept = Vec::with_capacity(rules.len());
            for p in rules.drain(..) {
                match touches(&p, &root) {
                    None => kept.push(p),
                    Some("holds")
                        if SYSTEM.iter().chain([&SETTINGS]).any(|s| Path::new(s) == p) => {}
                    // A project kept among the system's settings: not theirs to give.
                    Some(_) if p.parent() == Some(Path::new(MAC_SETTINGS)) => {}
                    Some(how) => return Err(ConfineError::TouchesProject { path: p, root, how }),
                }
            }
            *rules = kept;
        }
        Ok(())
    }

    /// Drops every rule that holds `root` or lies inside it: for rules
    /// made up automatically (a command's), where losing a folder is
    /// better than failing.
    pub fn drop_touching(&mut self, root: &Path) {
        let root = real(root);
        for rules in [&mut self.read, &mut self.write] {
            rules.retain(|p| touches(p, &root).is_none());
        }
    }

    /// The folder a program is installed in, readable: `program` as found
    /// on `PATH`, its links resolved (see [`install_dir`]), and for a
    /// script, its interpreter's (`#!/usr/bin/env node`).
    pub fn program(&mut self, program: &str) {
        let Some(real) = find_program(program).and_then(|p| p.canonicalize().ok()) else {
            return;
        };
        self.read.extend(install_dir(&real));
        let interpreter = interpreter_of(&real)
            .and_then(|i| find_program(&i))
            .and_then(|p| p.canonicalize().ok());
        self.read
            .extend(interpreter.as_deref().and_then(install_dir));
    }

    /// The existing files that `args` name by absolute path, readable: a
    /// script and its configuration on a command line the user wrote
    /// (never one an agent chose).
    pub fn files_named(&mut self, args: &[String]) {
        for a in args {
            let p = Path::new(a);
            if p.is_absolute() && p.is_file() {
                self.read.push(p.to_path_buf());
            }
        }
    }
}

/// Where the program at `real` is installed: for a package of
/// `node_modules`, that `node_modules` (a launcher runs its platform's
/// package beside it); else the folder above its `bin` or `shims`, or its
/// own folder.
fn install_dir(real: &Path) -> Option<PathBuf> {
    let node_modules = real
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"));
    let dir = match node_modules {
        Some(n) => n.to_path_buf(),
        None => {
            // `bin/` of a prefix, or `shims/` of a version manager (pyenv,
            // asdf, mise) whose shims run the versions beside them.
            let bin = real.parent()?;
            let above = bin
                .parent()
                .filter(|_| bin.ends_with("bin") || bin.ends_with("shims"));
            above.unwrap_or(bin).to_path_buf()
        }
    };
    // Never a whole file system or a home folder; of a hidden folder of
    // the home (`~/.cargo`, `~/.local`, which may hold logins) only the
    // `bin/` itself — its toolchain is in [`TOOLCHAINS`].
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let hidden_in_home = dir.parent() == home.as_deref()
        && dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
    if hidden_in_home {
        return real.parent().map(Path::to_path_buf);
    }
    (dir.parent().is_some() && Some(&dir) != home.as_ref()).then_some(dir)
}

/// The interpreter a script names on its `#!` line (through `env`).
fn interpreter_of(script: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first.ends_with("/env") {
        words.find(|w| !w.starts_with('-')).map(str::to_owned)
    } else {
        Some(first.to_owned())
    }
}

/// `p` with its links resolved, as the kernel sees it (as given when it
/// does not exist).
fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// How rule `p` touches the project at `root` (resolved): it "lies
/// inside" it, it "holds" it, or not at all.
fn touches(p: &Path, root: &Path) -> Option<&'static str> {
    let p = real(p);
    if p.starts_with(root) {
        Some("lies inside")
    } else if root.starts_with(&p) {
        Some("holds")
    } else {
        None
    }
}

/// `name` as a shell would run it: a path as given, else the first
/// executable of that name on `PATH`.
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Whether this system can confine programs at all (asked of the kernel
/// once).
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(imp::available)
}

/// A command that runs `program` confined to `rules` where that is a
/// wrapper program (macOS's `sandbox-exec`); on Linux the launcher
/// confines the process itself ([`crate::launch`]).
#[cfg(not(target_os = "linux"))]
pub fn command(program: &str, rules: Option<&Rules>) -> Result<Command, ConfineError> {
    match rules {
        None => Ok(Command::new(program)),
        Some(rules) => imp::command(program, rules),
    }
}

/// The Landlock ABI this kernel speaks (0: none), asked of the kernel.
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> i32 {
    const CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the version query reads no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    v.max(0) as i32
}

#[cfg(target_os = "linux")]
mod imp {
    /// Landlock, in any version.
    pub fn available() -> bool {
        super::landlock_abi() >= 1
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use std::path::Path;
    use std::process::{Command, Stdio};

    use super::seatbelt::{arguments, SANDBOX_EXEC};
    use super::{ConfineError, Rules};

    /// `sandbox-exec` is there and enters a profile.
    pub fn available() -> bool {
        Command::new(SANDBOX_EXEC)
            .args(["-p", "(version 1)(allow default)", "/usr/bin/true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    pub fn command(program: &str, rules: &Rules) -> Result<Command, ConfineError> {
        let mut command = Command::new(SANDBOX_EXEC);
        command.args(arguments(Path::new(program), rules));
        Ok(command)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    use super::{ConfineError, Rules};
    use std::process::Command;

    pub fn available() -> bool {
        false
    }

    pub fn command(_: &str, _: &Rules) -> Result<Command, ConfineError> {
        Err(ConfineError::Unavailable)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_folders_of_pythonpath_that_exist_are_readable() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir(&site).unwrap();
        let value = std::env::join_paths([
            site.as_path(),
            Path::new("relative"),
            &dir.path().join("gone"),
        ])
        .unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        assert_eq!(super::python_path(Some(&value), Some(&home)), [site]);
        assert!(super::python_path(None, Some(&home)).is_empty());
        // `PYTHONPATH=$HOME` (or `/`) would open the whole home folder,
        // keys and all: such an entry is left out.
        let wide = std::env::join_paths([home.as_path(), dir.path(), Path::new("/")]).unwrap();
        assert!(super::python_path(Some(&wide), Some(&home)).is_empty());
    }

    use super::*;

    #[test]
    fn a_rule_that_holds_the_project_or_lies_in_it_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("proj");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let mut holds = Rules {
            read: vec![t.path().to_path_buf()],
            ..Rules::default()
        };
        assert!(matches!(
            holds.keep_out(&root),
            Err(ConfineError::TouchesProject { how: "holds", .. })
        ));
        let mut inside = Rules {
            write: vec![root.join("sub")],
            ..Rules::default()
        };
        assert!(matches!(
            inside.keep_out(&root),
            Err(ConfineError::TouchesProject {
                how: "lies inside",
                ..
            })
        ));
    }
}
