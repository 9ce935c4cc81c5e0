//! ACP agents inside Chimera, against a scripted ACP agent process
//! (tests/fake_acp_agent.py on stdio) and the real core: their reads see
//! the human's unsaved text, their writes land in the overlay and become a
//! proposal, writes outside the project are refused, permission follows
//! the capabilities, cancel and feedback reach the same session, and the
//! process dies with the core.

use chimera::api::core::Indexing;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chimera::capabilities::CapabilitiesConfig;
use chimera::config::{Config, ExternalAgent};
use chimera::nvim::messages::{BufferText, ToCore, ToEditor};
use chimera::runtime::CoreHandle;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

const CALC: &str = "def add(a, b):\n    return a - b\n";

struct Run {
    _dir: tempfile::TempDir,
    root: PathBuf,
    log: PathBuf,
    core: Option<CoreHandle>,
    rx: UnboundedReceiver<ToEditor>,
    rt: tokio::runtime::Runtime,
}

/// A project with calc.py and a core whose agent `fake` plays `turns`.
fn run_with(turns: Value, preset: &str) -> Run {
    run_configured(turns, |c| c.capabilities.preset = preset.into())
}

/// The scripted ACP agent playing `turns`, logging to `dir/<name>.log`.
fn scripted(dir: &Path, name: &str, turns: &Value) -> (ExternalAgent, PathBuf) {
    // Its own folder, outside the project: a confined agent may write
    // there (its log) and nowhere else.
    let dir = &dir.join(format!("{name}-state"));
    std::fs::create_dir_all(dir).unwrap();
    let script = dir.join(format!("{name}.json"));
    std::fs::write(&script, turns.to_string()).unwrap();
    let log = dir.join(format!("{name}.log"));
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_acp_agent.py");
    let spec = ExternalAgent {
        command: vec![
            "python3".into(),
            agent.to_string_lossy().into(),
            "--script".into(),
            script.to_string_lossy().into(),
            "--log".into(),
            log.to_string_lossy().into(),
        ],
        writable: vec![dir.to_string_lossy().into()],
        ..Default::default()
    };
    (spec, log)
}

/// [`run_with`], with the options changed by `adjust`.
fn run_configured(turns: Value, adjust: impl FnOnce(&mut Config)) -> Run {
    run_in(CALC, turns, |c, _| adjust(c))
}

/// A project whose calc.py holds `calc`; `adjust` may add agents in the dir.
fn run_in(calc: &str, turns: Value, adjust: impl FnOnce(&mut Config, &Path)) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("calc.py"), calc).unwrap();
    let (fake, log) = scripted(dir.path(), "fake", &turns);
    let mut config = Config::default();
    config.tests.command = serde_json::from_value(json!("off")).unwrap();
    config.capabilities = CapabilitiesConfig::default();
    config.agents.external.insert("fake".into(), fake);
    adjust(&mut config, dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let core = {
        let _g = rt.enter();
        chimera::api::core::start(config, root.clone(), Arc::new(tx), Indexing::AtStart).unwrap()
    };
    Run {
        _dir: dir,
        root,
        log,
        core: Some(core),
        rx,
        rt,
    }
}

impl Run {
    fn send(&self, msg: ToCore) {
        chimera::nvim::messages::hand(self.core.as_ref().unwrap(), msg).unwrap();
    }

    fn spawn(&self, id: &str, task: &str) {
        self.spawn_by(id, task, Some("fake"));
    }

    /// Agent `id` on `task` in calc.py, by ACP agent `by` (`None`: Chimera's own).
    fn spawn_by(&self, id: &str, task: &str, by: Option<&str>) {
        self.send(ToCore::Spawn {
            id: id.into(),
            spec: chimera::task::TaskSpec {
                file: Some(self.root.join("calc.py").to_string_lossy().into()),
                line: Some(2),
                external: by.map(str::to_owned),
                ..chimera::task::TaskSpec::new(task)
            },
        });
    }

    /// The first message `pred` picks, within 20 s.
    fn wait<T>(&mut self, what: &str, mut pred: impl FnMut(&ToEditor) -> Option<T>) -> T {
        let rx = &mut self.rx;
        self.rt.block_on(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            loop {
                let msg = tokio::time::timeout_at(deadline, rx.recv())
                    .await
                    .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
                    .expect("the core stopped");
                if let Some(t) = pred(&msg) {
                    return t;
                }
            }
        })
    }

    /// Agent `id`'s record once it reaches `state`; its proposal's new lines.
    fn reaches(&mut self, id: &str, state: &str) -> (Value, Vec<String>) {
        self.wait(&format!("{id} {state}"), |m| match m {
            ToEditor::Agent {
                agent, proposal, ..
            } if agent.id == id && serde_json::to_value(agent.state).unwrap() == state => {
                let lines = proposal
                    .iter()
                    .flatten()
                    .flat_map(|f| f.hunks.iter().flat_map(|h| h.new_lines.clone()))
                    .collect();
                Some((serde_json::to_value(agent).unwrap(), lines))
            }
            ToEditor::Agent { agent, .. }
                if agent.id == id && matches!(agent.state.as_str(), "failed" | "cancelled") =>
            {
                panic!("{id} ended {}: {:?}", agent.state.as_str(), agent.error)
            }
            _ => None,
        })
    }

    /// What the agent process logged (received messages, answers).
    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn answers(&self, method: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|e| e["answer_to"] == method)
            .map(|e| e["answer"].clone())
            .collect()
    }

    fn received(&self, method: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|e| e["received"]["method"] == method)
            .map(|e| e["received"]["params"].clone())
            .collect()
    }

    fn disk(&self) -> String {
        std::fs::read_to_string(self.root.join("calc.py")).unwrap()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            core.shutdown(Duration::from_secs(2));
        }
    }
}

#[test]
fn an_acp_agent_reads_the_unsaved_buffer_and_its_writes_become_a_proposal() {
    let mut r = run_with(
        json!([[{"say": "Fixing add."}, {"replace": ["calc.py", "a - b", "a + b"]},
                {"permission": "Edit calc.py"}, {"tool": "edit calc.py"}]]),
        "sandbox",
    );
    // The human typed without saving: the agent must see that text.
    r.send(ToCore::BufferText(BufferText {
        path: r.root.join("calc.py").to_string_lossy().into(),
        text: "def add(a, b):\n    return a - b  # unsaved\n".into(),
    }));
    r.spawn("acp1", "fix add");
    let (agent, lines) = r.reaches("acp1", "completed");
    assert_eq!(lines, ["    return a + b  # unsaved"], "{agent}");
    assert_eq!(agent["summary"], "Fixing add.");
    assert_eq!(agent["external"], "fake");
    assert_eq!(
        r.disk(),
        CALC,
        "nothing touches the project before an accept"
    );
    // The sandbox preset allows edits: the agent was allowed.
    let perm = r.answers("session/request_permission");
    assert_eq!(
        perm[0]["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "allow"})
    );
    // The session is rooted at the project, with Chimera as its file system.
    let init = &r.received("initialize")[0];
    assert_eq!(init["clientCapabilities"]["fs"]["readTextFile"], true);
    assert_eq!(init["clientCapabilities"]["fs"]["writeTextFile"], true);
    // The session is rooted in the agent's own folder, outside the
    // project, holding the project as the agent sees it.
    let cwd = r.received("session/new")[0]["cwd"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !Path::new(&cwd).starts_with(&r.root) && !r.root.starts_with(&cwd),
        "{cwd}"
    );
    let prompt = r.received("session/prompt")[0]["prompt"][0]["text"].clone();
    assert!(prompt.as_str().unwrap().starts_with("fix add"), "{prompt}");
    assert!(
        prompt.as_str().unwrap().contains(&format!("{cwd}/calc.py")),
        "{prompt}"
    );
    // Every request is in the effect log.
    let store = chimera::store::Store::open(&r.root).unwrap();
    let effects = store.effects(0, Some("acp")).unwrap();
    let inputs: Vec<&str> = effects.iter().map(|e| e.input.as_str()).collect();
    assert!(
        inputs.iter().any(|i| i.starts_with("fs/read_text_file")),
        "{inputs:?}"
    );
    assert!(
        inputs.iter().any(|i| i.starts_with("fs/write_text_file")),
        "{inputs:?}"
    );
    assert!(
        inputs
            .iter()
            .any(|i| i.starts_with("session/request_permission")),
        "{inputs:?}"
    );
    // And in the agent's audit log, as its tool calls.
    let agent = effects[0].agent_id.clone().unwrap();
    let calls: Vec<String> = store
        .tool_calls(&agent, 0)
        .unwrap()
        .into_iter()
        .map(|c| format!("{} {} {}", c.tool, c.args, c.ok))
        .collect();
    assert!(
        calls.iter().any(|c| c.starts_with("fs/read_text_file ")
            && c.contains("calc.py")
            && c.ends_with("true")),
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.starts_with("fs/write_text_file ")),
        "{calls:?}"
    );
}

#[test]
fn writes_outside_the_project_or_to_secrets_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escaped.txt");
    let mut r = run_with(
        json!([[
            {"write": [escape.to_string_lossy(), "pwned"]},
            {"write": ["../up.txt", "pwned"]},
            {"write": [".env", "KEY=1"]},
            {"write": ["link/escaped2.txt", "pwned"]},
            {"read": "/etc/passwd"},
            {"write": ["calc.py", "def add(a, b):\n    return a + b\n"]},
            // Secrets in another case, and more than agents may write.
            {"write": [".ENV", "KEY=1"]},
            {"write": ["keys/ID_RSA", "key"]},
            {"write": ["big.py", "x".repeat(3 * 1024 * 1024)]}
        ]]),
        "sandbox",
    );
    std::os::unix::fs::symlink(outside.path(), r.root.join("link")).unwrap();
    r.spawn("acp2", "fix add");
    let (_, lines) = r.reaches("acp2", "completed");
    assert_eq!(lines, ["    return a + b"]);
    assert!(!escape.exists());
    assert!(!r.root.join("../up.txt").exists());
    let writes = r.answers("fs/write_text_file");
    for refused in &writes[..4] {
        assert!(refused["error"].is_object(), "{refused}");
    }
    assert!(writes[4].get("error").is_none(), "{}", writes[4]);
    for refused in &writes[5..] {
        assert!(refused["error"].is_object(), "{refused}");
    }
    assert_eq!(writes.len(), 8);
    assert!(!outside.path().join("escaped2.txt").exists());
    let read = &r.answers("fs/read_text_file")[0];
    assert!(
        read["error"]["data"]
            .as_str()
            .unwrap()
            .contains("outside the project"),
        "{read}"
    );
}

#[test]
fn under_readonly_permission_is_refused_and_nothing_is_written() {
    let mut r = run_with(
        json!([[{"permission": "Edit calc.py"},
                {"write": ["calc.py", "def add(a, b):\n    return a + b\n"]},
                {"say": "I could not write."}]]),
        "readonly",
    );
    r.spawn("acp3", "fix add");
    let error = r.wait("acp3 failed", |m| match m {
        ToEditor::Agent { agent, .. } if agent.id == "acp3" && agent.state.as_str() == "failed" => {
            Some(agent.error.clone().unwrap_or_default())
        }
        _ => None,
    });
    assert!(
        error.contains("changed no file") && error.contains("I could not write"),
        "{error}"
    );
    assert_eq!(
        r.answers("session/request_permission")[0]["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "reject"})
    );
    assert!(r.answers("fs/write_text_file")[0]["error"].is_object());
}

#[test]
fn cancel_reaches_the_agent_and_feedback_starts_it_again_told_everything() {
    let mut r = run_with(
        json!([
            [{"say": "thinking"}, {"wait_cancel": true}],
            [{"replace": ["calc.py", "a - b", "a + b"]}],
            [{"replace": ["calc.py", "a - b", "b + a"]}]
        ]),
        "sandbox",
    );
    r.spawn("slow", "fix add");
    r.wait("its words", |m| match m {
        ToEditor::Progress { id, message } if id == "slow" && message == "thinking" => Some(()),
        _ => None,
    });
    r.send(ToCore::Cancel { id: "slow".into() });
    r.reaches("slow", "cancelled");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while r.received("session/cancel").is_empty() {
        assert!(std::time::Instant::now() < deadline, "no session/cancel");
        std::thread::sleep(Duration::from_millis(20));
    }

    r.spawn("fb", "fix add");
    r.reaches("fb", "completed");
    r.send(ToCore::Reject {
        id: "fb".into(),
        feedback: Some("put b first".into()),
    });
    let (_, lines) = r.reaches("fb", "completed");
    assert_eq!(lines, ["    return b + a"]);
    let prompts = r.received("session/prompt");
    let (first, again) = (&prompts[1], &prompts[2]);
    // Each run is a process of its own: the feedback comes first, then
    // the whole story.
    assert_ne!(first["sessionId"], again["sessionId"]);
    let text = again["prompt"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("The human rejected your change with this feedback: put b first")
            && text.contains("fix add"),
        "{text}"
    );
}

#[test]
fn a_change_that_does_not_parse_goes_back_to_the_agent_and_the_process_dies_with_the_core() {
    let mut r = run_with(
        json!([
            [{"write": ["calc.py", "def add(a, b)\n    return a + b\n"]}],
            [{"write": ["calc.py", "def add(a, b):\n    return a + b\n"]}]
        ]),
        "sandbox",
    );
    r.spawn("rep", "fix add");
    let (agent, lines) = r.reaches("rep", "completed");
    assert_eq!(lines, ["    return a + b"]);
    assert_eq!(agent["rounds"], 2, "{agent}");
    let prompts = r.received("session/prompt");
    let repair = prompts[1]["prompt"][0]["text"].as_str().unwrap();
    assert!(repair.contains("does not parse"), "{repair}");
    assert!(
        r.log().iter().any(|e| e["pid"].as_i64().is_some()),
        "the agent logged its pid"
    );
    // Its PID is its namespace's: it is found by its command line.
    let marker = r.log.display().to_string();
    drop(r);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !running_with(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent process outlived the core"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes running (not zombies) whose command line holds
/// `marker`, as the machine sees them.
fn running_with(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| {
                st.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            });
            !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

#[test]
fn terminals_run_allowed_commands_in_the_agents_folder_and_what_they_change_is_proposed() {
    let mut r = run_configured(
        json!([[
            {"write": ["calc.py", "def add(a, b):\n    return a + b\n"]},
            {"terminal": ["python3", "-c", "import calc; print(calc.add(2, 3)); open('ran.txt', 'w').write('5\\n')"]},
            {"terminal": ["rm", "-rf", "."]}
        ]]),
        |c| {
            c.capabilities.preset = "developer".into();
            c.capabilities.commands = vec!["python3".into()];
        },
    );
    r.spawn("term", "fix add and check it");
    let (_, lines) = r.reaches("term", "completed");
    assert_eq!(
        lines,
        ["    return a + b", "5"],
        "what the command wrote is part of the proposal"
    );
    assert_eq!(r.disk(), CALC);
    assert!(!r.root.join("ran.txt").exists(), "and not in the project");
    // The allowed command ran on the agent's version of the file.
    let created = r.answers("terminal/create");
    assert!(
        created[0]["result"]["terminalId"].is_string(),
        "{}",
        created[0]
    );
    let exit = &r.answers("terminal/wait_for_exit")[0]["result"];
    assert_eq!(exit["exitCode"], 0, "{exit}");
    let output = &r.answers("terminal/output")[0]["result"];
    assert_eq!(output["output"].as_str().unwrap().trim(), "5", "{output}");
    // Not on the list: refused, and said why.
    let refused = &created[1]["error"]["data"];
    assert!(
        refused.as_str().unwrap().contains("\"rm\""),
        "{}",
        created[1]
    );
    let store = chimera::store::Store::open(&r.root).unwrap();
    let commands = store.effects(0, Some("command")).unwrap();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(
        commands[1].output.starts_with("refused"),
        "{:?}",
        commands[1]
    );
}

#[test]
fn a_permission_naming_only_its_call_is_judged_by_the_kind_it_was_announced_with() {
    // Claude Code's edit: its request carries no kind; the default preset
    // allows edits (into the overlay), and nobody is asked.
    let mut r = run_with(
        json!([[{"asked_edit": ["calc.py", "a - b", "a + b"]}, {"say": "Fixed."}]]),
        "sandbox",
    );
    r.spawn("claude", "fix add");
    let (_, lines) = r.reaches("claude", "completed");
    assert_eq!(lines, ["    return a + b"]);
    assert_eq!(r.disk(), CALC);
    let answer = &r.answers("session/request_permission")[0]["result"]["outcome"];
    assert_eq!(answer["optionId"], "default", "allowed once: {answer}");
    let store = chimera::store::Store::open(&r.root).unwrap();
    let asked: Vec<_> = store
        .effects(0, Some("acp"))
        .unwrap()
        .into_iter()
        .filter(|e| e.input.starts_with("session/request_permission"))
        .collect();
    assert_eq!(
        (asked[0].input.as_str(), asked[0].output.as_str()),
        ("session/request_permission edit: Edit `calc.py`", "ok"),
        "{asked:?}"
    );
}

/// Under a preset that writes nothing, `capabilities.ask` puts an edit to
/// the human; allowed, the edit is made (into the overlay: a proposal),
/// refused, it is not — the answer decides the write, not only the reply
/// to the agent.
#[test]
fn an_edit_the_human_allows_when_asked_is_written_and_one_refused_is_not() {
    let mut r = run_configured(
        json!([
            [{"asked_edit": ["calc.py", "a - b", "a + b"]}, {"say": "Fixed."}],
            [{"asked_edit": ["calc.py", "a - b", "b + a"]}, {"say": "Fixed."}]
        ]),
        |c| {
            c.capabilities.preset = "readonly".into();
            c.capabilities.ask = true;
        },
    );
    for (id, allow) in [("yes", true), ("no", false)] {
        r.spawn(id, "fix add");
        let question = r.wait("the question", |m| match m {
            ToEditor::Permission {
                id: q, question, ..
            } => Some((*q, question.clone())),
            _ => None,
        });
        assert!(question.1.contains("calc.py"), "{question:?}");
        r.send(ToCore::PermissionAnswer {
            id: question.0,
            allow,
        });
        if allow {
            let (_, lines) = r.reaches(id, "completed");
            assert_eq!(lines, ["    return a + b"]);
        } else {
            let failed = r.wait("the refused agent's end", |m| match m {
                ToEditor::Agent { agent, .. }
                    if agent.id == id && !matches!(agent.state.as_str(), "queued" | "running") =>
                {
                    Some(agent.clone())
                }
                _ => None,
            });
            assert_eq!(failed.state.as_str(), "failed", "{failed:?}");
        }
    }
    assert_eq!(r.disk(), CALC, "the project's file is untouched");
    let outcomes: Vec<Value> = r
        .answers("session/request_permission")
        .iter()
        .map(|a| a["result"]["outcome"]["optionId"].clone())
        .collect();
    assert_eq!(outcomes, [json!("default"), json!("plan")]);
}

#[test]
fn a_shell_line_is_judged_by_the_programs_it_runs_and_runs_confined() {
    let mut r = run_configured(
        json!([[
            {"line": "cat calc.py | python3 -c 'import sys; print(len(sys.stdin.read()))' > size.txt && echo done"},
            {"line": "cat calc.py; rm -rf ."},
            {"line": "echo $(cat ../.env)"},
            {"terminal": ["bash", "-c", "python3 -c 'print(1)' | rm x"]}
        ]]),
        |c| {
            c.capabilities.preset = "developer".into();
            c.capabilities.commands = vec!["python3".into(), "cat".into()];
        },
    );
    r.spawn("line", "measure calc.py");
    let (_, lines) = r.reaches("line", "completed");
    assert_eq!(lines, ["32"], "what the line wrote is the proposal");
    assert!(!r.root.join("size.txt").exists());
    let created = r.answers("terminal/create");
    assert!(
        created[0]["result"]["terminalId"].is_string(),
        "{}",
        created[0]
    );
    let output = &r.answers("terminal/output")[0]["result"];
    assert_eq!(
        output["output"].as_str().unwrap().trim(),
        "done",
        "{output}"
    );
    let refused = |i: usize| {
        created[i]["error"]["data"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(
        refused(1).contains("running \"rm\" is not allowed"),
        "{}",
        created[1]
    );
    assert!(
        refused(2).contains("cannot be judged before it runs: it substitutes a command's output"),
        "{}",
        created[2]
    );
    assert!(refused(3).contains("\"rm\""), "{}", created[3]);
}

#[test]
fn what_the_sandbox_refused_is_shown_in_the_effect_log_the_agents_log_and_the_summary() {
    let home = std::env::var("HOME").unwrap();
    let mut r = run_configured(
        json!([[
            {"line": format!("ls {home}")},
            {"ran": ["bash", "cat: /elsewhere/.env: Permission denied\n"]},
            {"ran": ["bash", "cat: /elsewhere/.env: Permission denied\n"]},
            {"write": ["calc.py", "def add(a, b):\n    return a + b\n"]},
            {"say": "Fixed add."}
        ]]),
        |c| {
            c.capabilities.preset = "developer".into();
            c.capabilities.commands = vec!["ls".into()];
        },
    );
    r.spawn("refused", "fix add");
    let (agent, _) = r.reaches("refused", "completed");
    assert_eq!(
        agent["summary"],
        "Fixed add. (the sandbox refused 2 accesses outside its folder: ~, /elsewhere/.env)",
        "{agent}"
    );
    let store = chimera::store::Store::open(&r.root).unwrap();
    let refused: Vec<(String, String)> = store
        .effects(0, Some("acp"))
        .unwrap()
        .into_iter()
        .filter(|e| e.input.starts_with("refused by the sandbox"))
        .map(|e| (e.input, e.output))
        .collect();
    assert_eq!(
        refused,
        [
            (
                "refused by the sandbox: ~".to_owned(),
                "your home: it has one of its own".to_owned()
            ),
            (
                "refused by the sandbox: /elsewhere/.env".to_owned(),
                "outside the folders it is given".to_owned()
            ),
        ]
    );
    let log = store.agent("refused").unwrap().log;
    assert!(
        log.iter()
            .any(|l| l == "⊘ the sandbox refused ~ (your home: it has one of its own)"),
        "{log:?}"
    );
}

#[test]
fn an_agent_that_dies_mid_turn_is_said_in_its_own_last_words_never_its_escapes() {
    let mut r = run_with(
        json!([[{"say": "Looking."}, {"die": "Error: ANTHROPIC_API_KEY is not set"}]]),
        "sandbox",
    );
    r.spawn("dies", "fix add");
    let (agent, _) = r.reaches("dies", "failed");
    let error = agent["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the agent fake stopped; it said: ")
            && error.ends_with("garbage / Error: ANTHROPIC_API_KEY is not set"),
        "{agent}"
    );
    assert!(
        !error.contains('\u{1b}') && !error.contains('\u{7}'),
        "{error:?}"
    );
}

#[test]
fn an_agent_that_asks_for_a_login_is_logged_in_by_the_variable_it_is_given_and_said_otherwise() {
    let turns = json!([[{"write": ["calc.py", "def add(a, b):\n    return a + b\n"]}]]);
    // Known as Codex: its login methods read CODEX_API_KEY, then OPENAI_API_KEY.
    let codex = |spec: &mut ExternalAgent, key: Option<&str>| {
        spec.command
            .extend(["--login".into(), "codex-api-key".into()]);
        spec.kind = Some("codex".into());
        spec.network = Some(vec![]);
        if let Some(key) = key {
            spec.env.insert("CODEX_API_KEY".into(), key.into());
        }
    };
    for (key, ends) in [(Some("sk-test"), "completed"), (None, "failed")] {
        let mut r = run_in(CALC, turns.clone(), |c, _| {
            codex(c.agents.external.get_mut("fake").unwrap(), key)
        });
        r.spawn("login", "fix add");
        let (agent, lines) = r.reaches("login", ends);
        match key {
            Some(_) => assert_eq!(lines, ["    return a + b"]),
            None => assert!(
                agent["error"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("fake needs a login: set CODEX_API_KEY or OPENAI_API_KEY"),
                "{agent}"
            ),
        }
    }
}

#[test]
fn two_acp_agents_and_a_built_in_one_on_one_file_make_three_proposals_each_acceptable() {
    const THREE: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let program = "```python\nsrc = read_file('calc.py')\nwrite_file('calc.py', src.replace('def mul(a, b):\\n    return a + b', 'def mul(a, b):\\n    return a * b'))\nsubmit_result('fixed mul', ['calc.py'])\n```";
    let llm = rt.block_on(chimera::llm::fake::FakeServer::start(vec![
        chimera::llm::fake::Reply::OpenaiStream(program.into());
        3
    ]));
    let mut r = run_in(
        THREE,
        json!([[{"sleep": 0.3}, {"replace": ["calc.py", "return a - b", "return a + b"]}]]),
        |c, dir| {
            let (other, _) = scripted(
                dir,
                "other",
                &json!([[{"replace": ["calc.py", "def sub(a, b):\n    return a + b", "def sub(a, b):\n    return a - b"]}]]),
            );
            c.agents.external.insert("other".into(), other);
            c.llm.url = llm.url.clone();
            c.llm.provider = chimera::config::Provider::Openai;
            c.llm.max_retries = 0;
            c.llm.edit_form = serde_json::from_value(json!("program")).unwrap();
        },
    );
    r.spawn_by("a1", "fix add", Some("fake"));
    r.spawn_by("a2", "fix sub", Some("other"));
    r.spawn_by("a3", "fix mul", None);
    let mut done = std::collections::HashMap::new();
    while done.len() < 3 {
        let (id, lines) = r.wait("three proposals", |m| match m {
            ToEditor::Agent {
                agent,
                proposal: Some(p),
                ..
            } if agent.state.as_str() == "completed" => Some((
                agent.id.clone(),
                p.iter()
                    .flat_map(|f| f.hunks.iter().flat_map(|h| h.new_lines.clone()))
                    .collect::<Vec<_>>(),
            )),
            ToEditor::Agent { agent, .. } if agent.state.as_str() == "failed" => {
                panic!("{} failed: {:?}", agent.id, agent.error)
            }
            _ => None,
        });
        done.insert(id, lines);
    }
    assert_eq!(done["a1"], ["    return a + b"]);
    assert_eq!(done["a2"], ["    return a - b"]);
    assert_eq!(done["a3"], ["    return a * b"]);
    assert_eq!(r.disk(), THREE, "none touched the file before an accept");
    for id in ["a1", "a2", "a3"] {
        r.send(ToCore::Accept {
            id: id.into(),
            buffers: vec![],
            hunk: None,
            write: false,
        });
        r.wait(&format!("{id} accepted"), |m| match m {
            ToEditor::Resolved {
                id: of,
                accepted: true,
                ..
            } if of == id => Some(()),
            ToEditor::Notify {
                level: chimera::nvim::messages::Level::Error,
                message,
            } => panic!("{message}"),
            _ => None,
        });
    }
    assert_eq!(
        r.disk(),
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    );
}

#[test]
fn feedback_after_the_agent_process_died_starts_a_new_session_with_the_whole_story() {
    let mut r = run_with(
        json!([[{"replace": ["calc.py", "a - b", "a + b"]}, {"exit_after_turn": true}]]),
        "sandbox",
    );
    r.spawn("gone", "fix add");
    r.reaches("gone", "completed");
    r.send(ToCore::Reject {
        id: "gone".into(),
        feedback: Some("put b first".into()),
    });
    let (_, lines) = r.reaches("gone", "completed");
    assert_eq!(lines, ["    return a + b"]);
    assert_eq!(
        r.received("initialize").len(),
        2,
        "a new process was started"
    );
    let prompts = r.received("session/prompt");
    assert_ne!(prompts[0]["sessionId"], prompts[1]["sessionId"]);
    let text = prompts[1]["prompt"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("fix add") && text.contains("put b first"),
        "{text}"
    );
}

#[test]
fn the_agents_turn_streams_to_the_editor_and_stays_in_its_log() {
    let mut r = run_with(
        json!([
            [{"plan": ["read calc.py", "fix add"]}, {"think": "a - b is wrong"},
             {"say": "Fixing "}, {"say": "add.\n"}, {"tool": "Read calc.py"},
             {"replace": ["calc.py", "a - b", "a + b"]},
             {"tool": "Run the tests", "fail": true}, {"say": "Done."}],
            [{"say": "Swapped."}, {"replace": ["calc.py", "a - b", "b + a"]}]
        ]),
        "sandbox",
    );
    r.spawn("talk", "fix add");
    let mut pieces = vec![];
    let agent = r.wait("talk completed", |m| match m {
        ToEditor::AgentSaid { id, piece } if id == "talk" => {
            pieces.push(serde_json::to_value(piece).unwrap());
            None
        }
        ToEditor::Agent { agent, .. }
            if agent.id == "talk" && agent.state.as_str() == "completed" =>
        {
            Some(agent.clone())
        }
        _ => None,
    });
    let kinds: Vec<&str> = pieces.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "prompt", "plan", "thought", "message", "message", "tool", "tool", "tool", "tool",
            "message"
        ],
        "{pieces:#?}"
    );
    assert_eq!(
        pieces[1]["entries"],
        json!(["[x] read calc.py", "[ ] fix add"])
    );
    assert_eq!(pieces[2]["text"], "a - b is wrong");
    assert_eq!(
        (&pieces[8]["title"], &pieces[8]["status"]),
        (&json!("Run the tests"), &json!("failed"))
    );
    // The turn is kept in order, one line per tool call at its last state;
    // thoughts are not kept.
    assert_eq!(
        agent.log,
        [
            "» fix add",
            "Fixing add.",
            "▸ Read calc.py (done)",
            "▸ Run the tests (failed)",
            "Done."
        ]
    );
    // Its last message is the summary: what it did, not what it was about to.
    assert_eq!(agent.summary.as_deref(), Some("Done."));

    // Feedback starts the next run, said first.
    r.send(ToCore::Reject {
        id: "talk".into(),
        feedback: Some("put b first".into()),
    });
    let (agent, _) = r.reaches("talk", "completed");
    let log: Vec<&str> = agent["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        log[5..],
        [
            "» The human rejected your change with this feedback: put b first",
            "Swapped."
        ]
    );
    // `chimera agent` reads the same record.
    let store = chimera::store::Store::open(&r.root).unwrap();
    assert_eq!(store.agent("talk").unwrap().log.len(), 7);
}

/// Every file under `dir` but the agents' own state and the store: path
/// and content (a link: its target).
fn everything_under(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let mut all = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if name.ends_with("-state") || name.ends_with(".chimera") {
                continue;
            }
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                stack.push(p);
            } else if kind.is_symlink() {
                all.insert(name, format!("-> {:?}", std::fs::read_link(&p).unwrap()));
            } else {
                all.insert(name, std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    all
}

#[test]
fn a_hostile_agent_writing_and_reading_on_its_own_reaches_nothing_outside_its_folder() {
    let outside = std::cell::RefCell::new(PathBuf::new());
    let script = |root: &Path, out: &Path| {
        let r = root.display();
        json!([[
            {"disk_write": ["calc.py", "def add(a, b):\n    return a + b\n"]},
            {"disk_write": ["../evil.py", "x"]},
            {"disk_write": ["evil\nname.py", "x = 1\n"]},
            {"disk_write": [format!("{r}/calc.py"), "owned"]},
            {"disk_write": [format!("{r}/new.py"), "owned"]},
            {"disk_write": [format!("{}/planted.txt", out.display()), "owned"]},
            {"symlink": [format!("{r}/calc.py"), "link.py"]},
            {"disk_write": ["link.py", "through the link"]},
            {"symlink": [format!("{r}/.env"), "env_link"]},
            {"disk_read": "env_link"},
            {"disk_read": format!("{r}/.env")},
            {"disk_read": ".env"},
            {"disk_read": format!("{}/secret.txt", out.display())},
            {"detached_write": [format!("{r}/late.py"), "late", 1.5]},
            {"detached_write": ["late.py", "late", 1.5]},
            {"ignore_term": true},
            {"say": "Fixed add."}
        ]])
    };
    // The script names the project's real path, known once it is made.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("proj");
    *outside.borrow_mut() = t.path().join("outside");
    let mut r = run_in(CALC, json!([]), |c, dir| {
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(dir.join("outside/secret.txt"), "OUTSIDE_SECRET=1\n").unwrap();
        std::fs::write(dir.join("proj/.env"), "API_KEY=hunter2\n").unwrap();
        let (fake, _) = scripted(
            dir,
            "fake",
            &script(&dir.join("proj"), &dir.join("outside")),
        );
        c.agents.external.insert("fake".into(), fake);
        c.capabilities.preset = "sandbox".into();
    });
    let _ = (root, t);
    let base = r.root.parent().unwrap().to_path_buf();
    let before = everything_under(&base);
    r.spawn("evil", "fix add");
    let (agent, lines) = r.reaches("evil", "completed");
    assert_eq!(lines, ["    return a + b"], "{agent}");
    // The detached children had time to write, had they lived.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        everything_under(&base),
        before,
        "nothing outside its folder changed"
    );
    let results: Vec<Value> = r
        .log()
        .into_iter()
        .filter(|e| e.get("disk").is_some())
        .collect();
    let outcome = |step: &str, path: &str| -> Value {
        results
            .iter()
            .find(|e| {
                // A bare name is the relative try; `dir/name`, the absolute one.
                e["disk"] == step
                    && e["path"].as_str().is_some_and(|p| {
                        p == path || (path.contains('/') && p.ends_with(&format!("/{path}")))
                    })
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {step} of {path}: {results:#?}"))
    };
    assert_eq!(
        outcome("disk_write", "calc.py")["ok"],
        true,
        "its folder is its own"
    );
    assert_eq!(
        outcome("symlink", "link.py")["ok"],
        true,
        "links in it are its own business"
    );
    for (step, refused) in [
        ("disk_write", "../evil.py"),
        ("disk_write", "proj/calc.py"),
        ("disk_write", "proj/new.py"),
        ("disk_write", "outside/planted.txt"),
        ("disk_write", "link.py"),
        ("disk_read", "env_link"),
        ("disk_read", "proj/.env"),
        ("disk_read", "outside/secret.txt"),
    ] {
        let o = outcome(step, refused);
        assert_eq!(o["ok"], false, "{step} {refused}: {o:#?}");
    }
    assert!(
        outcome("disk_read", ".env")["error"]
            .as_str()
            .unwrap()
            .contains("No such file"),
        "a secret is not in its folder at all"
    );
    let said = serde_json::to_string(&r.log()).unwrap();
    assert!(
        !said.contains("hunter2") && !said.contains("OUTSIDE_SECRET"),
        "no secret was read"
    );
    // Nor is one anywhere Chimera keeps what the agent did.
    let store = chimera::store::Store::open(&r.root).unwrap();
    let kept = format!(
        "{:?} {:?} {:?} {:?}",
        store.agent("evil").unwrap(),
        store.effects(0, None).unwrap(),
        store.tool_calls("evil", 0).unwrap(),
        chimera::accept::proposal_unified(&store, "evil").unwrap()
    );
    assert!(!kept.contains("hunter2") && !kept.contains("OUTSIDE_SECRET"));
    // The link it left is refused when its folder is read back.
    assert!(kept.contains("link.py"), "the refusal is in the log");
    // Its detached children ended with its run, before they could try.
    assert!(
        !results.iter().any(|e| e["disk"] == "detached_write"),
        "{results:#?}"
    );
    assert!(r.log().iter().any(|e| e["detached"].as_i64().is_some()));
    // A forked child keeps its parent's command line.
    let marker = r.log.display().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while !running_with(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "a detached child outlived the run: {:?}",
            running_with(&marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_ended_agents_folder_is_removed_and_a_pending_ones_kept() {
    let mut r = run_with(
        json!([[{"replace": ["calc.py", "a - b", "a + b"]}]]),
        "sandbox",
    );
    let folder =
        |r: &Run, n: usize| PathBuf::from(r.received("session/new")[n]["cwd"].as_str().unwrap());
    r.spawn("one", "fix add");
    r.reaches("one", "completed");
    r.spawn("two", "fix add");
    r.reaches("two", "completed");
    let (one, two) = (folder(&r, 0), folder(&r, 1));
    assert!(one.exists() && two.exists(), "both may still run again");
    r.send(ToCore::Reject {
        id: "one".into(),
        feedback: None,
    });
    r.reaches("one", "rejected");
    r.spawn("three", "fix add");
    r.reaches("three", "completed");
    assert!(
        !one.exists(),
        "the rejected agent's copy of the project is gone"
    );
    assert!(two.exists(), "a pending proposal keeps its folder");
}
