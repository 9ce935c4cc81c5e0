//! `run_command` for agents: a program the capabilities allow, run without
//! a shell in a scratch checkout of the agent's view of the project (the
//! human's files plus the agent's overlay), with a time limit and an output
//! cap, so an agent can run the tests on its own change before proposing it.
//! The kernel confines it to that checkout ([`crate::confine`]): it can
//! neither read nor change the human's files.

mod environment;

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::overlay::Overlay;
use crate::paths::ProjectPath;

/// Why a command did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("run_command(): the command is empty")]
    Empty,
    #[error("run_command(): no scratch folder: {0}")]
    Scratch(std::io::Error),
    #[error("run_command(): cannot check out the project: {0}")]
    Checkout(String),
    #[error("run_command(): {0}")]
    Confine(String),
    #[error("run_command(): {0}; the project's code does not run unconfined unless agents.run_unconfined = true (:help chimera-confinement)")]
    Unconfinable(crate::confine::ConfineError),
    #[error("run_command(): cannot start {program:?}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("run_command(): cancelled")]
    Cancelled,
    #[error("run_command(): {0}")]
    Wait(std::io::Error),
}

impl From<CommandError> for crate::sandbox::HostError {
    fn from(e: CommandError) -> Self {
        crate::sandbox::HostError::Failed(e.to_string())
    }
}

/// Output kept from a command, per stream.
pub const OUTPUT_CAP: usize = 16 * 1024;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// `None` when it was killed at the time limit.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

impl Ran {
    /// The result in words, for the agent.
    pub fn describe(&self) -> String {
        let status = match self.status {
            Some(code) => format!("exit status {code}"),
            None => "killed at the time limit".into(),
        };
        format!(
            "{status}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        )
    }
}

/// What [`drain`] kept of a stream: its start, its end, and its length.
#[derive(Default)]
struct Kept {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

/// A stream's text within [`OUTPUT_CAP`]: its start and its end, where a
/// test runner says how it went, with the middle left out and said so.
fn capped(kept: Kept) -> String {
    let whole = kept.total == kept.head.len() + kept.tail.len();
    let mut bytes = kept.head;
    if whole {
        bytes.extend(kept.tail);
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    let head = String::from_utf8_lossy(&bytes);
    let tail: Vec<u8> = kept.tail.into_iter().collect();
    let tail = String::from_utf8_lossy(&tail);
    // Whole lines of the end only.
    let tail = tail.split_once('\n').map_or(&*tail, |(_, rest)| rest);
    format!(
        "{head}\n… ({} bytes in all; the middle left out) …\n{tail}",
        kept.total
    )
}

/// Writes the agent's view of the project into `dir`: only the files it
/// may see (`visible`), so a command it runs cannot read a secret either.
pub fn checkout(
    overlay: &Overlay<'_>,
    dir: &Path,
    visible: impl Fn(&str) -> bool,
) -> Result<usize, CommandError> {
    let failed = |e: String| CommandError::Checkout(e);
    let files = overlay.files().map_err(|e| failed(e.to_string()))?;
    let mut n = 0;
    for f in files.into_iter().filter(|f| visible(f)) {
        let p = ProjectPath::parse(&f).map_err(|e| failed(e.to_string()))?;
        // A file too large for agents is left out of their copy too.
        let data = match overlay.read(&p) {
            Err(crate::overlay::OverlayError::TooLarge { .. }) => continue,
            other => other.map_err(|e| failed(e.to_string()))?,
        };
        if let Some(data) = data {
            let target = dir.join(p.as_str());
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| failed(format!("{f}: {e}")))?;
            }
            std::fs::write(&target, data).map_err(|e| failed(format!("{f}: {e}")))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Ends a supervised tree ([`crate::reaper`]): `stop` dropped, the
/// supervisor ends everything the command started and exits; only one
/// that cannot within 2 s (stuck in the kernel) is killed with its group.
/// Killing it first would orphan what it has yet to end.
pub fn end_tree(child: &mut std::process::Child, stop: crate::reaper::Stop) {
    drop(stop);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        // It may have ended on its own since the wait; what ends it next
        // is `child.kill`.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    // Already dead: the group kill above, or its own end.
    let _ = child.kill();
    // Reaps it; an error means it was reaped already.
    let _ = child.wait();
}

/// A supervised process tree ([`crate::reaper`]) owned by what started it:
/// dropped, it ends every process the tree holds and reaps the supervisor
/// (on a thread of its own: that may take a moment).
pub struct Supervised(Option<(std::process::Child, crate::reaper::Stop)>);

impl Supervised {
    pub fn new(child: std::process::Child, stop: crate::reaper::Stop) -> Supervised {
        Supervised(Some((child, stop)))
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if let Some((mut child, stop)) = self.0.take() {
            std::thread::spawn(move || end_tree(&mut child, stop));
        }
    }
}

/// Runs `argv` in `dir` (no shell; stdin closed) for at most `limit`, or
/// until `cancelled` says so. The command runs under a supervisor
/// ([`crate::reaper`]) that ends everything it started when it exits, at
/// the limit, at a cancel or when the core dies: a child it left running
/// (a test server, `sleep &`, a daemon that called `setsid`) neither
/// outlives it nor holds its output open.
pub fn run(
    argv: &[String],
    dir: &Path,
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Ran, CommandError> {
    run_confined(argv, dir, None, limit, cancelled)
}

/// Reads `stream` to its end on a thread of its own (so the child never
/// blocks on a full pipe), keeping its first and last [`OUTPUT_CAP`] / 2
/// bytes and the count.
fn drain(stream: Option<Box<dyn Read + Send>>) -> std::thread::JoinHandle<Kept> {
    std::thread::spawn(move || {
        let half = OUTPUT_CAP / 2;
        let mut kept = Kept::default();
        if let Some(mut s) = stream {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = s.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                kept.total += n;
                let rest = &chunk[..n];
                let to_head = half.saturating_sub(kept.head.len()).min(n);
                kept.head.extend_from_slice(&rest[..to_head]);
                kept.tail.extend(&rest[to_head..]);
                let over = kept.tail.len().saturating_sub(half);
                kept.tail.drain(..over);
            }
        }
        kept
    })
}

/// Waits for `child` until `limit` after `started` or a cancel; its exit
/// code (`None`: killed at the limit). Stopping the supervisor ends the
/// whole tree; it exits once all of it is gone. One that cannot (a
/// process stuck in the kernel) is not waited for longer than a moment,
/// and its group is killed.
fn wait(
    child: &mut std::process::Child,
    stop: crate::reaper::Stop,
    started: Instant,
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<i32>, CommandError> {
    let ended = loop {
        match child.try_wait() {
            // The supervisor ended what the command left behind.
            Ok(Some(s)) => return Ok(s.code()),
            Ok(None) if started.elapsed() >= limit => break Ok(None),
            Ok(None) if cancelled() => break Err(CommandError::Cancelled),
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(CommandError::Wait(e)),
        }
    };
    end_tree(child, stop);
    ended
}

/// What a confined command is given ([`crate::launch`]), and its own
/// temporary folder (`TMPDIR`).
#[derive(Debug, Clone)]
pub struct Confined {
    pub policy: crate::launch::Policy,
    pub tmp: std::path::PathBuf,
}

impl Confined {
    /// A command working in `dir`: the system's folders, the program's
    /// install, `dir` and `tmp` — nothing that holds or lies in `root`
    /// (a program installed in the project is not readable). Where the
    /// kernel cannot confine ([`crate::confine::available`]): `None` when
    /// the user allows that (`unconfined`), else refused.
    pub fn in_scratch(
        argv: &[String],
        (dir, tmp): (&Path, &Path),
        root: &Path,
        how: &How<'_>,
    ) -> Result<Option<Confined>, CommandError> {
        let unconfined = how.unconfined;
        if !crate::confine::available() {
            return match unconfined {
                true => Ok(None),
                false => Err(CommandError::Unconfinable(
                    crate::confine::ConfineError::Unavailable,
                )),
            };
        }
        let mut rules = crate::confine::Rules::system();
        if let Some(program) = argv.first() {
            rules.program(program);
        }
        rules.drop_touching(root);
        // The project's environment, read-only, even inside the project;
        // its build cache, Chimera's own.
        if let Some(env) = how.environment {
            rules.read.extend(env.readable.iter().cloned());
            rules.write.extend(env.writable.iter().cloned());
        }
        rules.write.push(dir.to_path_buf());
        rules.write.push(tmp.to_path_buf());
        Ok(Some(Confined {
            policy: crate::launch::Policy {
                files: rules,
                network: crate::launch::Network::Off,
            },
            tmp: tmp.to_path_buf(),
        }))
    }
}

/// How a command runs in a checkout: its time limit; whether the user
/// lets it run unconfined where the kernel cannot confine; the project's
/// environment it runs in (the folders it reads, a `.venv` even inside
/// the project; the build cache it writes; the folder of the checkout it
/// runs in and the variables that select it).
#[derive(Debug, Clone, Default)]
pub struct How<'a> {
    pub limit: Duration,
    pub unconfined: bool,
    pub environment: Option<&'a crate::lang::Environment>,
}

/// Runs `argv` as [`run`] does, in a scratch checkout of `view` (only the
/// files `visible` lets it see) that is removed afterwards, confined by
/// the kernel to that checkout where it can be
/// ([`Confined::in_scratch`]): `run_command`'s and the test runs' way.
pub fn run_in_checkout(
    view: &Overlay<'_>,
    visible: impl Fn(&str) -> bool,
    argv: &[String],
    how: &How<'_>,
    cancelled: &dyn Fn() -> bool,
) -> Result<Ran, CommandError> {
    let checkouts = how.environment.and_then(|e| e.checkouts.as_deref());
    let scratch = environment::Scratch::new(checkouts).map_err(CommandError::Scratch)?;
    let (dir, tmp) = (scratch.path().join("files"), scratch.path().join("tmp"));
    for d in [&dir, &tmp] {
        std::fs::create_dir_all(d).map_err(CommandError::Scratch)?;
    }
    let confined = Confined::in_scratch(argv, (&dir, &tmp), view.root(), how)?;
    checkout(view, &dir, visible)?;
    let (cwd, env) = match how.environment {
        Some(e) => (environment::prepare(e, view.root(), &dir)?, &e.env[..]),
        None => (dir.clone(), &[][..]),
    };
    run_with(argv, &cwd, (confined.as_ref(), env), how.limit, cancelled)
}

/// [`run`], confined by the kernel when `confined` is given.
pub fn run_confined(
    argv: &[String],
    dir: &Path,
    confined: Option<&Confined>,
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Ran, CommandError> {
    run_with(argv, dir, (confined, &[]), limit, cancelled)
}

/// [`run_confined`], with `env` set besides.
fn run_with(
    argv: &[String],
    dir: &Path,
    (confined, env): (Option<&Confined>, &[(String, String)]),
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Ran, CommandError> {
    let (program, args) = argv.split_first().ok_or(CommandError::Empty)?;
    let started = Instant::now();
    let tmp = confined.map(|c| ("TMPDIR".to_string(), c.tmp.display().to_string()));
    let set = env.iter().cloned().chain(tmp);
    let mut launch = crate::launch::Launch::new(program, confined.map(|c| &c.policy), &[], set)
        .map_err(|e| CommandError::Confine(e.to_string()))?;
    launch
        .command()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its network is off: no doors to serve.
    let crate::launch::Started {
        mut child, stop, ..
    } = launch.spawn().map_err(|source| CommandError::Start {
        program: program.clone(),
        source,
    })?;
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .map(drain);
    let status = wait(&mut child, stop, started, limit, cancelled);
    let [out, err] = readers.map(|h| h.join().unwrap_or_default());
    let status = status?;
    Ok(Ran {
        status,
        stdout: capped(out),
        stderr: capped(err),
        duration: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn commands_run_without_a_shell_with_a_time_limit_and_an_output_cap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let r = run(
            &argv(&["cat", "a.txt"]),
            dir.path(),
            Duration::from_secs(5),
            &never,
        )
        .unwrap();
        assert_eq!((r.status, r.stdout.as_str()), (Some(0), "hello\n"));
        // No shell: `;` is just an argument.
        let r = run(
            &argv(&["echo", "x; touch pwned"]),
            dir.path(),
            Duration::from_secs(5),
            &never,
        )
        .unwrap();
        assert_eq!(r.stdout, "x; touch pwned\n");
        assert!(!dir.path().join("pwned").exists());
        let r = run(
            &argv(&["sleep", "10"]),
            dir.path(),
            Duration::from_millis(200),
            &never,
        )
        .unwrap();
        assert_eq!(r.status, None);
        assert!(r.duration < Duration::from_secs(5));
        let r = run(
            &argv(&["head", "-c", "100000", "/dev/zero"]),
            dir.path(),
            Duration::from_secs(5),
            &never,
        )
        .unwrap();
        assert!(r.stdout.len() < OUTPUT_CAP + 100 && r.stdout.contains("100000 bytes in all"));
        // A test runner says how it went last: the end of a long output stays.
        let r = run(
            &argv(&["seq", "1", "100000"]),
            dir.path(),
            Duration::from_secs(5),
            &never,
        )
        .unwrap();
        assert!(r.stdout.len() < OUTPUT_CAP + 100, "{}", r.stdout.len());
        assert!(r.stdout.starts_with("1\n2\n3\n"), "the start stays");
        assert!(r.stdout.ends_with("99999\n100000\n"), "the end stays");
        assert!(r.stdout.contains("588895 bytes in all"), "and the count");
        // Within the cap nothing is left out, however it was kept.
        let r = run(
            &argv(&["seq", "1", "2800"]),
            dir.path(),
            Duration::from_secs(5),
            &never,
        )
        .unwrap();
        let whole: String = (1..=2800).map(|n| format!("{n}\n")).collect();
        assert_eq!(r.stdout, whole);
        assert!(run(
            &argv(&["no-such-program-xyz"]),
            dir.path(),
            Duration::from_secs(1),
            &never,
        )
        .is_err());
    }

    fn never() -> bool {
        false
    }

    /// Whether process `pid` still runs (a zombie waiting to be reaped by
    /// a container's init does not).
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    #[test]
    fn children_left_running_are_killed_at_the_time_limit() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let r = run(
            &argv(&["sh", "-c", "sleep 40 & echo $! > child.pid; sleep 40"]),
            dir.path(),
            Duration::from_millis(300),
            &never,
        )
        .unwrap();
        assert_eq!(r.status, None);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let pid = std::fs::read_to_string(dir.path().join("child.pid")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid.trim()), "the background child survived");
        // It also goes when the command itself exits first.
        let r = run(
            &argv(&["sh", "-c", "sleep 40 & echo $! > child2.pid"]),
            dir.path(),
            Duration::from_secs(10),
            &never,
        )
        .unwrap();
        assert_eq!(r.status, Some(0));
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
        let pid = std::fs::read_to_string(dir.path().join("child2.pid")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid.trim()));
    }

    /// A daemon as servers make one: fork, `setsid`, fork again; the
    /// grandchild writes its PID to `name` and sleeps.
    fn daemon(name: &str) -> Vec<String> {
        argv(&[
            "python3",
            "-c",
            &format!(
                "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        open('{name}', 'w').write(str(os.getpid()))\n        time.sleep(40)\n    os._exit(0)\ntime.sleep(0.3)\nimport sys; sys.stdout.write('parent done')"
            ),
        ])
    }

    fn pid_in(dir: &Path, name: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(pid) = std::fs::read_to_string(dir.join(name)) {
                if !pid.is_empty() {
                    return pid;
                }
            }
            assert!(Instant::now() < deadline, "{name} was never written");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_daemon_that_left_the_session_ends_with_its_command() {
        let dir = tempfile::tempdir().unwrap();
        // The command exits first, its daemon running.
        let r = run(
            &daemon("d1.pid"),
            dir.path(),
            Duration::from_secs(10),
            &never,
        )
        .unwrap();
        assert_eq!((r.status, r.stdout.as_str()), (Some(0), "parent done"));
        // Not held open by the daemon's copy of the output either.
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        let pid = pid_in(dir.path(), "d1.pid");
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid.trim()), "the setsid daemon outlived its command");
        // At the time limit.
        let mut slow = daemon("d2.pid");
        slow[2] = slow[2].replace("time.sleep(0.3)", "time.sleep(30)");
        let r = run(&slow, dir.path(), Duration::from_millis(800), &never).unwrap();
        assert_eq!(r.status, None);
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        let pid = pid_in(dir.path(), "d2.pid");
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !alive(pid.trim()),
            "the setsid daemon outlived the time limit"
        );
        // At a cancel.
        let started = Instant::now();
        let cancel = || started.elapsed() > Duration::from_millis(800);
        let mut slow = daemon("d3.pid");
        slow[2] = slow[2].replace("time.sleep(0.3)", "time.sleep(30)");
        assert!(run(&slow, dir.path(), Duration::from_secs(60), &cancel).is_err());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let pid = pid_in(dir.path(), "d3.pid");
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid.trim()), "the setsid daemon outlived the cancel");
    }

    /// The core whose death the next test checks: runs a daemon's command
    /// and waits to be killed. Run by that test only.
    #[test]
    fn a_core_that_dies() {
        let Ok(dir) = std::env::var("CHIMERA_DYING_CORE") else {
            return;
        };
        let mut slow = daemon("d4.pid");
        slow[2] = slow[2].replace("time.sleep(0.3)", "time.sleep(30)");
        let _ = run(&slow, Path::new(&dir), Duration::from_secs(60), &never);
    }

    #[test]
    fn a_daemon_ends_when_the_core_that_ran_its_command_dies() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "command::tests::a_core_that_dies",
                "--test-threads=1",
            ])
            .env("CHIMERA_DYING_CORE", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = pid_in(dir.path(), "d4.pid");
        assert!(alive(pid.trim()));
        core.kill().unwrap(); // SIGKILL: no destructor runs
        core.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(3);
        while alive(pid.trim()) {
            assert!(Instant::now() < deadline, "the daemon outlived the core");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_cancel_stops_the_command_and_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let cancel = || started.elapsed() > Duration::from_millis(200);
        let r = run(
            &argv(&["sh", "-c", "sleep 40 & echo $! > child.pid; wait"]),
            dir.path(),
            Duration::from_secs(60),
            &cancel,
        );
        assert!(matches!(r, Err(CommandError::Cancelled)));
        assert!(started.elapsed() < Duration::from_secs(3));
        let pid = std::fs::read_to_string(dir.path().join("child.pid")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid.trim()));
    }
}
