//! `run_command` for agents: a program the capabilities allow, run without
//! a shell in a scratch checkout of the agent's view of the project (the
//! human's files plus the agent's overlay), with a time limit and an output
//! cap, so an agent can run the tests on its own change before proposing it.
//! Nothing it does touches the human's files.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::overlay::Overlay;
use crate::paths::ProjectPath;

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

fn capped((mut data, total): (Vec<u8>, usize)) -> String {
    data.truncate(OUTPUT_CAP);
    let mut s = String::from_utf8_lossy(&data).into_owned();
    if total > OUTPUT_CAP {
        s.push_str(&format!("\n… ({total} bytes in all)"));
    }
    s
}

/// Writes the agent's view of the project into `dir`: only the files it
/// may see (`visible`), so a command it runs cannot read a secret either.
pub fn checkout(
    overlay: &Overlay<'_>,
    dir: &Path,
    visible: impl Fn(&str) -> bool,
) -> Result<usize, String> {
    let files = overlay.files().map_err(|e| e.to_string())?;
    let mut n = 0;
    for f in files.into_iter().filter(|f| visible(f)) {
        let p = ProjectPath::parse(&f).map_err(|e| e.to_string())?;
        // A file too large for agents is left out of their copy too.
        let data = match overlay.read(&p) {
            Err(crate::overlay::OverlayError::TooLarge { .. }) => continue,
            other => other.map_err(|e| e.to_string())?,
        };
        if let Some(data) = data {
            let target = dir.join(p.as_str());
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{f}: {e}"))?;
            }
            std::fs::write(&target, data).map_err(|e| format!("{f}: {e}"))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Runs `argv` in `dir` (no shell; stdin closed) for at most `limit`, or
/// until `cancelled` says so. The command runs in a process group of its
/// own, and the whole group is killed at the limit or a cancel: a child it
/// left running (a test server, `sleep &`) neither outlives it nor holds
/// its output open.
pub fn run(
    argv: &[String],
    dir: &Path,
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Ran, String> {
    let (program, args) = argv
        .split_first()
        .ok_or("run_command(): the command is empty")?;
    let started = Instant::now();
    let mut command = Command::new(program);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("run_command(): cannot start {program:?}: {e}"))?;
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
    .map(|stream| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut total = 0;
            if let Some(mut s) = stream {
                // Read everything (so the child never blocks on a full
                // pipe) but keep only the cap.
                let mut chunk = [0u8; 8192];
                while let Ok(n) = s.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    total += n;
                    if buf.len() < OUTPUT_CAP + 1 {
                        buf.extend_from_slice(&chunk[..n]);
                    }
                }
            }
            (buf, total)
        })
    });
    let kill_group = |child: &mut std::process::Child| {
        #[cfg(unix)]
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => {
                // Whatever it left behind goes with it.
                kill_group(&mut child);
                break Ok(s.code());
            }
            Ok(None) if started.elapsed() >= limit => {
                kill_group(&mut child);
                break Ok(None);
            }
            Ok(None) if cancelled() => {
                kill_group(&mut child);
                break Err("run_command(): cancelled".to_owned());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                kill_group(&mut child);
                break Err(format!("run_command(): {e}"));
            }
        }
    };
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
        assert!(r.unwrap_err().contains("cancelled"));
        assert!(started.elapsed() < Duration::from_secs(3));
        let pid = std::fs::read_to_string(dir.path().join("child.pid")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid.trim()));
    }
}
