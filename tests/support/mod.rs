//! What the tests of the `chimera` binary share: a git project whose
//! options point at the scripted fake LLM server (tests/fake_llm.py) on
//! 127.0.0.1, and the binary run in it as a person runs it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_chimera");

/// A git project with `calc.py`, and a user whose own options (outside the
/// project) point at a fake LLM server that answers with `replies` in order.
pub struct Project {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    /// The user's `$XDG_CONFIG_HOME`.
    pub config_home: PathBuf,
    /// The user's `$XDG_DATA_HOME` (the trusted files).
    pub data_home: PathBuf,
    llm: Child,
    /// Every request the fake LLM server was sent, a JSON line each.
    llm_log: PathBuf,
    pub serve: Option<Child>,
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.llm.kill();
        if let Some(s) = &mut self.serve {
            let _ = s.kill();
            let _ = s.wait();
        }
    }
}

pub fn project(replies: &[serde_json::Value]) -> Project {
    project_with(replies, &[])
}

/// [`project`] whose fake LLM is given `args` too (`--only-with-tools`:
/// an agent's side requests do not take the script's replies).
pub fn project_with(replies: &[serde_json::Value], args: &[&str]) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, serde_json::to_string(replies).unwrap()).unwrap();
    let port_file = dir.path().join("port");
    let llm = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_llm.py"))
        .arg("--script")
        .arg(&script)
        .arg("--port-file")
        .arg(&port_file)
        .arg("--log")
        .arg(dir.path().join("llm.log"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs tests/fake_llm.py");
    let deadline = Instant::now() + Duration::from_secs(20);
    let port = loop {
        if let Some(p) = std::fs::read_to_string(&port_file)
            .ok()
            .filter(|p| !p.trim().is_empty())
        {
            break p.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the fake LLM server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let config_home = dir.path().join("config");
    std::fs::create_dir_all(config_home.join("chimera")).unwrap();
    std::fs::write(
        config_home.join("chimera/config.json"),
        serde_json::json!({
            "llm": {"provider": "openai", "url": format!("http://127.0.0.1:{port}/v1"), "model": "fake", "max_retries": 0},
            "tests": {"command": "off"},
        })
        .to_string(),
    )
    .unwrap();
    Project {
        data_home: dir.path().join("data"),
        llm_log: dir.path().join("llm.log"),
        _dir: dir,
        root,
        config_home,
        llm,
        serve: None,
    }
}

impl Project {
    /// Every request the model was sent so far, as the server logged them.
    pub fn model_saw(&self) -> String {
        std::fs::read_to_string(&self.llm_log).unwrap_or_default()
    }
}

pub fn fix_add() -> serde_json::Value {
    serde_json::json!({"text": "```python\ndef add(a, b):\n    return a + b\n```"})
}

impl Project {
    /// The `chimera` binary as the project's user runs it there, with ARGS.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(&self.root)
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", &self.config_home)
            .env("XDG_DATA_HOME", &self.data_home);
        cmd
    }

    /// `chimera ARGS` run in the project's folder.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .expect("the chimera binary runs")
    }

    /// Writes the project's own options file (`.chimera/config.json`).
    pub fn project_options(&self, options: serde_json::Value) {
        std::fs::create_dir_all(self.root.join(".chimera")).unwrap();
        std::fs::write(self.root.join(".chimera/config.json"), options.to_string()).unwrap();
    }

    /// [`Project::run`], which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "chimera {args:?} failed ({:?}): {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).expect("--json prints JSON")
    }

    /// The agent a `chimera task` that printed its ID made (`out` must
    /// say it succeeded), as `chimera agent ID --json` shows it.
    pub fn agent_of(&self, out: &Output) -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        self.json(&["agent", &id])
    }

    pub fn file(&self) -> String {
        std::fs::read_to_string(self.root.join("calc.py")).unwrap()
    }

    /// `chimera serve` in the background, once its socket answers.
    pub fn serve(&mut self) {
        let child = self
            .command(&["serve"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.serve = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.json(&["status"])["core"].is_object() {
            assert!(Instant::now() < deadline, "chimera serve did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Where `chimera serve` listens, and its token.
pub struct Http {
    pub port: u16,
    pub token: String,
    pub dashboard: String,
}

impl Project {
    /// Writes a project file.
    pub fn write(&self, path: &str, text: &str) {
        let p = self.root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// `chimera serve --port 0 --json`, once it prints where it listens.
    pub fn serve_http(&mut self) -> Http {
        use std::io::BufRead;
        let mut child = self
            .command(&["serve", "--port", "0", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        self.serve = Some(child);
        let said: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("chimera serve --json printed {line:?}: {e}"));
        let info: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(self.root.join(".chimera/api.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(info["port"], said["port"]);
        Http {
            port: said["port"].as_u64().unwrap() as u16,
            token: info["token"].as_str().unwrap().to_owned(),
            dashboard: said["dashboard"].as_str().unwrap().to_owned(),
        }
    }

    /// Stops `chimera serve` as Ctrl-C would.
    pub fn stop_serving(&mut self) {
        if let Some(mut child) = self.serve.take() {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "chimera serve did not stop");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}
