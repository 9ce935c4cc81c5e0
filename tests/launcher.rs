//! The launcher as an attacker meets it: a hostile program
//! (`tests/hostile_process.py`) launched as every agent's command and test
//! run is, tries each door out — the editor's socket (found by its path
//! and through `/proc/net/unix`), an abstract socket, a datagram socket,
//! another process's `environ` and `cmdline`, signals, `/dev/shm`, TCP to
//! 127.0.0.1, a terminal of the user's, the environment — with namespaces,
//! without them (a filter refuses `unshare`, as kernels that forbid user
//! namespaces do), and where Landlock is missing (nothing starts).

#![cfg(target_os = "linux")]

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use chimera::confine::{ConfineError, Rules};
use chimera::launch::{Launch, Network, Policy, Target};
use serde_json::{json, Value};

/// The doors a hostile program finds, held open by the test.
struct Doors {
    _dir: tempfile::TempDir,
    unix: UnixListener,
    dgram: UnixDatagram,
    abstract_: UnixListener,
    tcp: TcpListener,
    allowed: TcpListener,
    victim: std::process::Child,
    shm: std::path::PathBuf,
    pty: Option<(i32, String)>,
    _leaked: std::os::unix::net::UnixStream,
    spec: Value,
    /// Each connection the core forwarded: where, and whether it got there.
    opened: std::sync::Arc<std::sync::Mutex<Vec<(String, bool)>>>,
}

impl Drop for Doors {
    fn drop(&mut self) {
        let _ = self.victim.kill();
        let _ = self.victim.wait();
        let _ = std::fs::remove_file(&self.shm);
        if let Some(p) = self.spec["planted"].as_str() {
            let _ = std::fs::remove_file(p);
        }
        if let Some((fd, _)) = self.pty {
            unsafe { libc::close(fd) };
        }
    }
}

fn open_pty() -> Option<(i32, String)> {
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if fd < 0 || libc::grantpt(fd) != 0 || libc::unlockpt(fd) != 0 {
            return None;
        }
        let mut name = [0 as libc::c_char; 64];
        if libc::ptsname_r(fd, name.as_mut_ptr(), name.len()) != 0 {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        Some((fd, name))
    }
}

fn doors() -> Doors {
    use std::os::linux::net::SocketAddrExt;
    let dir = tempfile::tempdir().unwrap();
    let unix = UnixListener::bind(dir.path().join("nvim.0")).unwrap();
    unix.set_nonblocking(true).unwrap();
    let dgram = UnixDatagram::bind(dir.path().join("log.sock")).unwrap();
    dgram.set_nonblocking(true).unwrap();
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("chimera-test-{}-{n}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_ = UnixListener::bind_addr(&addr).unwrap();
    abstract_.set_nonblocking(true).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    allowed.set_nonblocking(true).unwrap();
    let victim = std::process::Command::new("sleep")
        .arg("60")
        .env("SECRET_FOR_TEST", "hunter2")
        .spawn()
        .unwrap();
    let shm = Path::new("/dev/shm").join(format!("chimera-test-{}-{n}", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&shm)
            .unwrap();
        std::io::Write::write_all(&mut f, b"shm-secret").unwrap();
    }
    let pty = open_pty();
    // A socket of the core's whose descriptor is not marked close-on-exec.
    let (leaked, _) = std::os::unix::net::UnixStream::pair().unwrap();
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&leaked);
        libc::fcntl(fd, libc::F_SETFD, 0);
    }
    let mut spec = json!({
        "unix": dir.path().join("nvim.0"),
        "unix_dgram": dir.path().join("log.sock"),
        "abstract": name,
        "pid": victim.id(),
        "shm": shm,
        "tcp": tcp.local_addr().unwrap().port(),
        "allowed": allowed.local_addr().unwrap().port(),
        "named": "model.example.invalid",
        "planted": format!("/dev/shm/chimera-planted-{}-{n}", std::process::id()),
    });
    if let Some((_, name)) = &pty {
        spec["pty"] = json!(name);
    }
    Doors {
        _dir: dir,
        unix,
        dgram,
        abstract_,
        tcp,
        allowed,
        victim,
        shm,
        pty,
        _leaked: leaked,
        spec,
        opened: Default::default(),
    }
}

/// What reached the test's side of the doors.
fn knocked(d: &Doors) -> Vec<&'static str> {
    let mut got = Vec::new();
    if d.unix.accept().is_ok() {
        got.push("unix");
    }
    if d.abstract_.accept().is_ok() {
        got.push("abstract");
    }
    if d.dgram.recv(&mut [0u8; 64]).is_ok() {
        got.push("unix_dgram");
    }
    if d.tcp.accept().is_ok() {
        got.push("tcp");
    }
    got
}

/// Python itself, not a version manager's shim (which sets variables of
/// its own on the way).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The hostile program, launched as the launcher launches agents' work,
/// in a folder of its own.
fn attack(d: &Doors, network: Network) -> Result<Value, ConfineError> {
    let work = tempfile::tempdir().unwrap();
    let mut rules = Rules::system();
    let python = python();
    rules.program(&python);
    rules
        .read
        .push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
    rules.write.push(work.path().to_path_buf());
    let policy = Policy {
        files: rules,
        network,
    };
    let mut launch = Launch::new(&python, Some(&policy), &[], [])?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile_process.py");
    launch
        .command()
        .arg(script)
        .arg(d.spec.to_string())
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = launch.spawn().expect("the launch starts");
    let mut child = started.child;
    // The doors of its network, served as the core serves an agent's.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let opened = d.opened.clone();
    rt.block_on(async {
        started
            .doors
            .serve(
                stop.clone(),
                std::sync::Arc::new(move |t, r| {
                    opened.lock().unwrap().push((t.to_string(), r.is_ok()))
                }),
            )
            .unwrap()
    });
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    child.wait().unwrap();
    stop.cancel();
    Ok(serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}")))
}

fn reached(r: &Value, door: &str) -> bool {
    r[door].as_bool().unwrap_or(false)
}

/// What every launch holds, with namespaces or without.
fn assert_held(r: &Value, d: &Doors) {
    for door in [
        "unix",
        "abstract",
        "unix_dgram",
        "environ",
        "cmdline",
        "signal",
        "shm",
        "shm_plant",
        "tcp_outside",
        "pty",
        "tty",
        "io_uring",
        "inherited",
        "shadow",
    ] {
        assert!(!reached(r, door), "the hostile program reached {door}: {r}");
    }
    assert_eq!(knocked(d), Vec::<&str>::new(), "{r}");
    let planted = Path::new(d.spec["planted"].as_str().unwrap());
    assert!(
        !planted.exists(),
        "it planted a file in the user's /dev/shm"
    );
    assert!(
        reached(r, "own_proc"),
        "its own /proc/self stays readable: {r}"
    );
    // Its environment is the allow-list and nothing else: none of the
    // test process's CARGO_*, RUST_* or anything a shell exported.
    let names: Vec<&str> = r["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in &names {
        assert!(
            chimera::launch::env::passed(name)
                || ["PWD", "LC_CTYPE", "PYTHONDONTWRITEBYTECODE"].contains(name),
            "{name} reached the launched program"
        );
    }
    assert!(names.contains(&"PATH"));
}

#[test]
fn a_hostile_program_reaches_no_socket_process_or_port_of_the_users() {
    let d = doors();
    let r = attack(&d, Network::Off).unwrap();
    assert_held(&r, &d);
    // Its own world: it does not even see the others.
    assert!(!reached(&r, "unix_by_proc"), "{r}");
    assert!(!reached(&r, "sees_process"), "{r}");
    // A test may still serve on its own loopback and use a terminal.
    assert!(reached(&r, "own_loopback"), "{r}");
    assert!(reached(&r, "own_pty"), "{r}");
    assert!(!reached(&r, "tcp_allowed"), "{r}");
}

#[test]
fn an_agent_reaches_the_hosts_its_configuration_names_and_no_other() {
    let d = doors();
    let port = d.allowed.local_addr().unwrap().port();
    let hosts = vec![
        Target {
            host: "127.0.0.1".into(),
            port,
        },
        Target {
            host: "model.example.invalid".into(),
            port: 443,
        },
    ];
    let r = attack(&d, Network::Hosts(hosts)).unwrap();
    assert_held(&r, &d);
    assert!(reached(&r, "tcp_allowed"), "{r}");
    assert!(
        d.allowed.accept().is_ok(),
        "forwarded to the machine's port"
    );
    // A named host is a loopback address of its own inside, forwarded by
    // the core (which cannot resolve this one: the attempt is logged).
    assert!(
        r["named"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.")),
        "{r}"
    );
    let opened = d.opened.lock().unwrap().clone();
    assert!(
        opened.contains(&(format!("127.0.0.1:{port}"), true)),
        "{opened:?}"
    );
    assert!(
        opened.contains(&("model.example.invalid:443".to_string(), false)),
        "{opened:?}"
    );
    // Nothing else: its own loopback still works, the rest is refused.
    assert!(reached(&r, "own_loopback"), "{r}");
}

/// Runs test `name` of this binary again in a child process whose system
/// calls `refused` fail with `errno`, as on a kernel without them; what it
/// prints on its last line comes back.
fn under_filter(name: &str, refused: &[i64], errno: i32) -> String {
    let mut rules = std::collections::BTreeMap::new();
    for call in refused {
        rules.insert(*call, vec![]);
    }
    let filter: seccompiler::BpfProgram = seccompiler::SeccompFilter::new(
        rules,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(errno as u32),
        std::env::consts::ARCH.try_into().unwrap(),
    )
    .unwrap()
    .try_into()
    .unwrap();
    inner(name, move || {
        seccompiler::apply_filter(&filter).map_err(|e| std::io::Error::other(e.to_string()))
    })
}

/// Runs test `name` of this binary again in a child process, `before`
/// run in it first (between fork and exec); what it prints after
/// `RESULT ` on its last such line.
fn inner(
    name: &str,
    before: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) -> String {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("CHIMERA_LAUNCHER_INNER", "1");
    unsafe {
        cmd.pre_exec(before);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
        .next_back()
        .unwrap_or_default()
        .to_owned()
}

/// The attack from a process that has a controlling terminal (the user's,
/// as Neovim in a terminal has): the launched program must not.
#[test]
fn with_a_terminal_inner() {
    if std::env::var("CHIMERA_LAUNCHER_INNER").is_err() {
        return;
    }
    let mine = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    assert!(mine.is_ok(), "this process has a terminal");
    let d = doors();
    let r = attack(&d, Network::Off).unwrap();
    println!("RESULT {r}");
}

#[test]
fn a_launched_program_has_no_terminal_of_the_users() {
    let (master, slave) = open_pty().expect("a pseudo-terminal");
    let slave = std::ffi::CString::new(slave).unwrap();
    let said = inner("with_a_terminal_inner", move || unsafe {
        // A session of its own whose terminal is the pseudo-terminal.
        libc::setsid();
        let fd = libc::open(slave.as_ptr(), libc::O_RDWR);
        if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    });
    unsafe { libc::close(master) };
    let r: Value = serde_json::from_str(&said).unwrap();
    assert!(!reached(&r, "tty"), "{r}");
}

/// Where the kernel refuses user namespaces: the attack as above.
#[test]
fn without_namespaces_inner() {
    if std::env::var("CHIMERA_LAUNCHER_INNER").is_err() {
        return;
    }
    let said = chimera::launch::describe();
    assert!(said.contains("no namespaces"), "{said}");
    let d = doors();
    let r = attack(&d, Network::Off).unwrap();
    assert_held(&r, &d);
    println!("RESULT {r}");
}

#[test]
fn without_namespaces_a_hostile_program_reaches_no_socket_process_or_port() {
    let r: Value = serde_json::from_str(&under_filter(
        "without_namespaces_inner",
        &[libc::SYS_unshare],
        libc::EPERM,
    ))
    .unwrap();
    // No network at all then, not even its own loopback.
    assert!(!reached(&r, "own_loopback"), "{r}");
}

/// Where Landlock is missing: nothing starts confined.
#[test]
fn without_landlock_inner() {
    if std::env::var("CHIMERA_LAUNCHER_INNER").is_err() {
        return;
    }
    let d = doors();
    let r = attack(&d, Network::Off);
    println!("RESULT {}", json!(r.map_err(|e| e.to_string()).err()));
}

#[test]
fn without_landlock_nothing_starts_confined() {
    let said = under_filter(
        "without_landlock_inner",
        &[libc::SYS_landlock_create_ruleset],
        libc::ENOSYS,
    );
    assert!(said.contains("cannot confine"), "{said}");
}

/// A cloned repository's test file, run as "auto" tests run it, where
/// Landlock is missing: refused, unless the user says otherwise.
#[test]
fn without_landlock_tests_inner() {
    if std::env::var("CHIMERA_LAUNCHER_INNER").is_err() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let home_key = dir.path().join("id_rsa");
    std::fs::write(&home_key, "PRIVATE KEY").unwrap();
    let store = chimera::store::Store::open_in_memory(&root).unwrap();
    let test = format!("print(open({:?}).read())\n", home_key.display().to_string());
    store
        .stable_put("test_evil.py", test.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    let view = chimera::overlay::Overlay::new(&store, "a", 1 << 20);
    let argv = vec![python(), "test_evil.py".to_string()];
    let run = |unconfined| {
        chimera::command::run_in_checkout(
            &view,
            |_| true,
            &argv,
            &chimera::command::How {
                limit: Duration::from_secs(20),
                unconfined,
                ..Default::default()
            },
            &|| false,
        )
    };
    let refused = run(false).map(|r| r.stdout).unwrap_err().to_string();
    let allowed = run(true).map(|r| r.stdout).unwrap_or_default();
    println!("RESULT {}", json!({"refused": refused, "allowed": allowed}));
}

#[test]
fn without_landlock_the_projects_code_does_not_run_unless_the_user_says_so() {
    let said: Value = serde_json::from_str(&under_filter(
        "without_landlock_tests_inner",
        &[libc::SYS_landlock_create_ruleset],
        libc::ENOSYS,
    ))
    .unwrap();
    let refused = said["refused"].as_str().unwrap();
    assert!(
        refused.contains("cannot confine") && refused.contains("agents.run_unconfined = true"),
        "{refused}"
    );
    // Said so, it runs — and reaches what the kernel would have kept out.
    assert!(
        said["allowed"].as_str().unwrap().contains("PRIVATE KEY"),
        "{said}"
    );
}

#[test]
fn starting_a_confined_process_is_quick() {
    // The p99 over 100 starts is `make bench`'s; here, a bound that only a
    // broken launcher (a probe per start, a sleep) would pass.
    let mut rules = Rules::system();
    rules.program("true");
    let policy = Policy {
        files: rules,
        network: Network::Off,
    };
    let started = std::time::Instant::now();
    for _ in 0..20 {
        let mut launch = Launch::new("true", Some(&policy), &[], []).unwrap();
        launch.command().stdout(Stdio::null());
        let mut started = launch.spawn().unwrap();
        assert!(started.child.wait().unwrap().success());
    }
    let each = started.elapsed() / 20;
    assert!(each < Duration::from_millis(200), "{each:?} per start");
}
