use super::*;
use crate::config::{LlmConfig, Provider};
use crate::llm::fake::{FakeServer, Reply};
use crate::nvim::messages::{ToCore, ToEditor};
use crate::store::AgentState;

/// The editor's message `msg` handed to the core as Neovim's module hands
/// it: in the port's words.
impl CoreHandle {
    fn send(&self, msg: ToCore) -> Result<(), RuntimeError> {
        crate::nvim::messages::hand(self, msg)
    }
}

const GOOD: &str = "```python\nsrc = read_file('app.py')\nwrite_file('app.py', src.replace('    return {}', '    \"\"\"Parse.\"\"\"\\n    return {}'))\nsubmit_result('Added a docstring', ['app.py'])\n```";

/// The message `:Chimera task {task}` sends, without a file.
fn spawn(id: &str, task: &str) -> ToCore {
    ToCore::Spawn {
        id: id.into(),
        spec: crate::task::TaskSpec::new(task),
    }
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join("app.py"),
        "def parse_config(path):\n    return {}\n",
    )
    .unwrap();
    dir
}

fn config(url: &str) -> Config {
    Config {
        llm: LlmConfig {
            provider: Provider::Openai,
            url: url.into(),
            max_retries: 0,
            timeout_ms: 5000,
            ..LlmConfig::default()
        },
        ..Config::default()
    }
}

/// Starts a core on `root`; returns it and the editor's end of its messages.
fn start_core(
    cfg: Config,
    root: impl Into<PathBuf>,
) -> (CoreHandle, mpsc::UnboundedReceiver<ToEditor>) {
    let (tx, rx) = mpsc::unbounded_channel::<ToEditor>();
    let core = start(cfg, root.into(), Arc::new(tx), None, Indexing::AtStart).unwrap();
    (core, rx)
}

async fn next_matching(
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
    pred: impl Fn(&ToEditor) -> bool,
) -> ToEditor {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("timed out")
            .expect("closed");
        if pred(&msg) {
            return msg;
        }
    }
}

/// The files of agent `id`'s proposal, once it is shown.
fn proposal_of(
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
    rt: &tokio::runtime::Runtime,
    id: &str,
) -> Vec<crate::diff::FileDiff> {
    wait_for(rx, rt, |m| match m {
        ToEditor::Agent {
            agent,
            proposal: Some(files),
            ..
        } if agent.id == id => Some(files.clone()),
        _ => None,
    })
}

fn wait_for<T>(
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
    rt: &tokio::runtime::Runtime,
    pred: impl Fn(&ToEditor) -> Option<T>,
) -> T {
    rt.block_on(async {
        loop {
            let msg = next_matching(rx, |_| true).await;
            if let Some(t) = pred(&msg) {
                return t;
            }
        }
    })
}

#[test]
fn spawn_propose_accept_end_to_end_through_messages() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Ready { .. }).then_some(())
    });
    core.send(spawn("a1", "add a docstring")).unwrap();
    let files = proposal_of(&mut rx, &rt, "a1");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, root.join("app.py").to_string_lossy());
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "def parse_config(path):\n    return {}\n"
    );
    core.send(ToCore::Accept {
        id: "a1".into(),
        buffers: vec![],
        hunk: None,
        write: false,
    })
    .unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Resolved { accepted: true, .. }).then_some(())
    });
    assert!(std::fs::read_to_string(root.join("app.py"))
        .unwrap()
        .contains("\"\"\"Parse.\"\"\""));
    core.shutdown(Duration::from_secs(2));
}

/// A front end (the API of `chimera task` run with no core) that sends a
/// task the moment it is opened, as a script does.
struct TaskAtOnce(Option<crate::port::Command>);

impl FrontEnd for TaskAtOnce {
    fn open(&mut self, port: Port) {
        if let Some(msg) = self.0.take() {
            // The spawn is recorded, and its agent has time to ask for its
            // start, before the front end's opening is over.
            let call = port.call(msg);
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(call)
            })
            .join()
            .unwrap();
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    fn close(&mut self) {}
}

/// `chimera task --file app.py` with no core running: the core starts and
/// the task arrives at once. It must find app.py, which the import has
/// not read yet when the front end opens.
#[test]
fn a_task_sent_the_moment_the_front_end_opens_sees_the_project() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    // The port's words: a project path.
    let spec = crate::task::TaskSpec {
        file: Some("app.py".into()),
        ..crate::task::TaskSpec::new("add a docstring")
    };
    let front = TaskAtOnce(Some(crate::port::Command::Spawn {
        id: "a1".into(),
        spec,
    }));
    let (tx, mut rx) = mpsc::unbounded_channel::<ToEditor>();
    let core = start(
        config(&server.url),
        root.clone(),
        Arc::new(tx),
        Some(Box::new(front)),
        Indexing::AtStart,
    )
    .unwrap();
    let agent = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent {
            agent, proposal, ..
        } if agent.id == "a1" && (proposal.is_some() || agent.state == AgentState::Failed) => {
            Some(agent.clone())
        }
        _ => None,
    });
    assert_eq!(agent.state, AgentState::Completed, "{:?}", agent.error);
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn a_failing_llm_ends_the_agent_failed_with_the_reason() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::Status(
        500,
        "model crashed".into(),
    )]));
    let dir = project();
    let (core, mut rx) = start_core(config(&server.url), dir.path().to_path_buf());
    core.send(spawn("a1", "t")).unwrap();
    let rec = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent { agent, .. } if agent.state == AgentState::Failed => Some(agent.clone()),
        _ => None,
    });
    assert!(rec.error.unwrap().contains("model crashed"));
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn shutdown_with_an_agent_in_flight_is_prompt() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::Hang]));
    let dir = project();
    let (core, mut rx) = start_core(config(&server.url), dir.path().to_path_buf());
    core.send(spawn("a1", "t")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.state == AgentState::Running)
            .then_some(())
    });
    let start = std::time::Instant::now();
    core.shutdown(Duration::from_secs(2));
    assert!(
        start.elapsed() < Duration::from_millis(1000),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn reject_of_a_running_agent_cancels_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::Hang]));
    let dir = project();
    let (core, mut rx) = start_core(config(&server.url), dir.path().to_path_buf());
    core.send(spawn("a1", "t")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.state == AgentState::Running)
            .then_some(())
    });
    core.send(ToCore::Reject {
        id: "a1".into(),
        feedback: None,
    })
    .unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.state == AgentState::Cancelled)
            .then_some(())
    });
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn an_agent_in_flight_when_neovim_quits_runs_again_at_the_next_start() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let hang = rt.block_on(FakeServer::start(vec![Reply::Hang]));
    let (core, mut rx) = start_core(config(&hang.url), root.clone());
    core.send(spawn("a1", "add a docstring")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.state == AgentState::Running)
            .then_some(())
    });
    core.shutdown(Duration::from_secs(2));

    let good = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]));
    let (core, mut rx) = start_core(config(&good.url), root.clone());
    // The state that makes the proposal reviewable comes with it.
    let (rec, proposal) = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent {
            agent, proposal, ..
        } if agent.id == "a1" && agent.state == AgentState::Completed => {
            Some((agent.clone(), proposal.clone()))
        }
        _ => None,
    });
    assert_eq!(rec.recoveries, 1);
    assert!(proposal.is_some_and(|files| files.len() == 1));
    core.shutdown(Duration::from_secs(2));

    // A third start shows the pending proposal again, without running anything.
    let (core, mut rx) = start_core(config(&good.url), root);
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, proposal: Some(_), .. } if agent.id == "a1")
            .then_some(())
    });
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn the_time_limit_fails_an_agent_with_the_reason() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::Hang]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.agents.timeout_ms = 300;
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    core.send(spawn("a1", "t")).unwrap();
    let rec = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent { agent, .. } if agent.state == AgentState::Failed => Some(agent.clone()),
        _ => None,
    });
    assert!(rec.error.unwrap().contains("agents.timeout_ms"));
    core.shutdown(Duration::from_secs(2));
}

/// The agent's record once it ends, and its progress lines until then.
fn until_it_ends(
    rt: &tokio::runtime::Runtime,
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
) -> (AgentView, Vec<String>) {
    let mut lines = Vec::new();
    let rec = rt.block_on(async {
        loop {
            match next_matching(rx, |_| true).await {
                ToEditor::Progress { message, .. } => lines.push(message),
                ToEditor::Agent { agent, .. } if !agent.state.is_active() => break agent,
                _ => {}
            }
        }
    });
    (rec, lines)
}

/// A llama.cpp server whose one slot works for someone else: the agent's
/// line says the server is busy rather than only "asking the model".
#[test]
fn a_busy_server_is_named_on_the_agents_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let reply = Reply::After(1600, Box::new(Reply::OpenaiStream(GOOD.into())));
    let server = rt.block_on(FakeServer::start_busy(vec![reply], 1));
    let dir = project();
    let (core, mut rx) = start_core(config(&server.url), dir.path().to_path_buf());
    core.send(spawn("a1", "add a docstring to parse_config"))
        .unwrap();
    let (rec, lines) = until_it_ends(&rt, &mut rx);
    assert_eq!(rec.state, AgentState::Completed, "{:?}", rec.error);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the server was busy with another request")),
        "{lines:?}"
    );
    core.shutdown(Duration::from_secs(2));
}

/// An Ollama server that holds another client's model in memory must load
/// this one first (`/api/ps` says what it holds): the agent's line says so
/// while no token came.
#[test]
fn an_ollama_server_loading_the_model_is_named_on_the_agents_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let reply = Reply::After(1600, Box::new(Reply::OllamaStream(GOOD.into())));
    let server = rt.block_on(FakeServer::start_ollama(vec![reply], &["llama3.1:8b"]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.llm.provider = Provider::Ollama;
    cfg.llm.model = "qwen2.5-coder:7b".into();
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    core.send(spawn("a1", "add a docstring to parse_config"))
        .unwrap();
    let (rec, lines) = until_it_ends(&rt, &mut rx);
    assert_eq!(rec.state, AgentState::Completed, "{:?}", rec.error);
    assert!(
        lines.iter().any(|l| l.contains(
            "the server is loading qwen2.5-coder:7b (it held llama3.1:8b for another request)"
        )),
        "{lines:?}"
    );
    core.shutdown(Duration::from_secs(2));
}

/// On a slow machine the model streams for longer than `agents.timeout_ms`:
/// the agent is working all along, so it is not stopped, and its line
/// shows the time taken and the tokens heard.
#[test]
fn an_agent_streaming_slowly_is_working_not_timed_out() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::SlowStream(GOOD.into(), 80)]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.agents.timeout_ms = 1500;
    cfg.llm.timeout_ms = 700;
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    core.send(spawn("a1", "add a docstring to parse_config"))
        .unwrap();
    let (rec, lines) = until_it_ends(&rt, &mut rx);
    assert_eq!(rec.state, AgentState::Completed, "{:?}", rec.error);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("asking the model (") && l.ends_with(" tokens)")),
        "{lines:?}"
    );
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn at_most_max_concurrent_agents_run_at_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::Hang; 5]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.agents.max_concurrent = 2;
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    for i in 0..4 {
        core.send(spawn(&format!("a{i}"), "t")).unwrap();
    }
    let mut running = std::collections::HashSet::new();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
        while let Ok(Some(m)) = tokio::time::timeout_at(deadline, rx.recv()).await {
            if let ToEditor::Agent { agent, .. } = m {
                if agent.state == AgentState::Running {
                    running.insert(agent.id);
                }
            }
        }
    });
    assert_eq!(running.len(), 2, "{running:?}");
    core.send(ToCore::Cancel { id: "a0".into() }).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.state == AgentState::Running && !running.contains(&agent.id)).then_some(())
    });
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn cancelling_an_agent_busy_in_the_sandbox_frees_its_place_at_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let busy = "```python\nwhile True:\n    x = 1\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(busy.into()),
        Reply::OpenaiStream(GOOD.into()),
    ]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.agents.max_concurrent = 1;
    cfg.agents.sandbox_timeout_ms = 30_000;
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    core.send(spawn("busy", "t")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Progress { id, message } if id == "busy" && message.contains("running the program")).then_some(())
    });
    core.send(spawn("next", "t")).unwrap();
    let cancelled_at = std::time::Instant::now();
    core.send(ToCore::Cancel { id: "busy".into() }).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.id == "next" && agent.state == AgentState::Running).then_some(())
    });
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "the queued agent waited {:?} for the cancelled one's program",
        cancelled_at.elapsed()
    );
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn reject_with_feedback_runs_the_agent_again_with_its_attempt_and_the_feedback() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let second = "```python\nsrc = read_file('app.py')\nwrite_file('app.py', src.replace('    return {}', '    \"\"\"Parse the config file at path.\"\"\"\\n    return {}'))\nsubmit_result('Longer docstring', ['app.py'])\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(GOOD.into()),
        Reply::OpenaiStream(second.into()),
    ]));
    let dir = project();
    let (core, mut rx) = start_core(config(&server.url), dir.path().to_path_buf());
    core.send(spawn("a1", "add a docstring")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, proposal: Some(_), .. } if agent.id == "a1")
            .then_some(())
    });
    core.send(ToCore::Reject {
        id: "a1".into(),
        feedback: Some("say what the path is".into()),
    })
    .unwrap();
    let rec = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent { agent, .. }
            if agent.state == AgentState::Completed && !agent.feedback.is_empty() =>
        {
            Some(agent.clone())
        }
        _ => None,
    });
    assert_eq!(rec.summary.as_deref(), Some("Longer docstring"));
    // The editor gets the feedback; the rejected attempt stays in the core
    // and goes into the retry's prompt.
    assert_eq!(rec.feedback, ["say what the path is"]);
    let retry = server.requests.lock().unwrap()[1].clone();
    assert!(
        retry.contains("say what the path is") && retry.contains("Parse."),
        "the retry prompt has both: {retry}"
    );
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn every_kind_of_llm_fault_fails_the_agent_with_its_reason_and_no_proposal() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let faults: Vec<(&str, Reply)> = vec![
        ("500", Reply::Status(500, "backend exploded".into())),
        (
            "truncated",
            Reply::Truncated("```python\nwrite_file('app.py', 'x'".into()),
        ),
        (
            "invalid JSON",
            Reply::Status(200, "data: {\"choices\": [oops\n\n".into()),
        ),
        ("timeout", Reply::Hang),
    ];
    for (name, reply) in faults {
        let server = rt.block_on(FakeServer::start(vec![reply; 3]));
        let dir = project();
        let mut cfg = config(&server.url);
        cfg.llm.timeout_ms = 300;
        cfg.llm.stream = true;
        let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
        core.send(spawn("a1", "t")).unwrap();
        let mut proposals = 0;
        let rec = rt.block_on(async {
            loop {
                let m = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                    .await
                    .expect(name)
                    .expect(name);
                match m {
                    ToEditor::Agent {
                        proposal: Some(_), ..
                    } => proposals += 1,
                    ToEditor::Agent { agent, .. } if agent.state == AgentState::Failed => {
                        return agent
                    }
                    _ => {}
                }
            }
        });
        let err = rec.error.unwrap_or_default();
        let want = match name {
            "500" => "backend exploded",
            "truncated" => "ended before the reply was complete",
            "invalid JSON" => "cannot read",
            _ => "sent nothing for",
        };
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(proposals, 0, "{name}: no partial proposal");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("app.py")).unwrap(),
            "def parse_config(path):\n    return {}\n"
        );
        core.shutdown(Duration::from_secs(2));
    }
}

#[test]
fn a_second_instance_never_takes_a_live_instances_agent() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![
        Reply::Hang,
        Reply::OpenaiStream(GOOD.into()),
    ]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let (a, mut rx_a) = start_core(config(&server.url), root.clone());
    a.send(spawn("a1", "t")).unwrap();
    wait_for(&mut rx_a, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.state == AgentState::Running)
            .then_some(())
    });
    let (b, mut rx_b) = start_core(config(&server.url), root.clone());
    // B shows A's agent but does not run it.
    let seen = wait_for(&mut rx_b, &rt, |m| match m {
        ToEditor::Agent { agent, .. } if agent.id == "a1" => Some(agent.clone()),
        _ => None,
    });
    assert_eq!(seen.state, AgentState::Running);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "only A asked the model"
    );
    a.shutdown(Duration::from_secs(2));
    b.shutdown(Duration::from_secs(2));
}

#[test]
fn remora_indexes_the_project_follows_changes_and_writes_inline_ids_once_confirmed() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = project();
    std::fs::write(
        dir.path().join("util.py"),
        "from app import parse_config\n\ndef load():\n    return parse_config('x')\n",
    )
    .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut cfg = config("http://127.0.0.1:9");
    cfg.remora.ids = crate::config::IdMode::Inline;
    let (core, mut rx) = start_core(cfg, root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    {
        let ix = core.remora.read();
        let t = ix.topology();
        let load = t.node_at("util.py", 4).unwrap();
        assert_eq!(load.name, "load");
        let callees: Vec<String> = t.callees(&load.id).into_iter().map(|n| n.name).collect();
        assert_eq!(callees, ["parse_config"]);
    }
    // Not enabled yet: the files are untouched. Enabling asks first.
    core.send(ToCore::RemoraEnable { confirmed: false })
        .unwrap();
    let files = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::RemoraConfirm { files, .. } => Some(*files),
        _ => None,
    });
    assert_eq!(files, 2);
    assert!(!std::fs::read_to_string(root.join("app.py"))
        .unwrap()
        .contains("rm_"));
    core.send(ToCore::RemoraEnable { confirmed: true }).unwrap();
    wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Notify { message, .. } if message.contains("Remora is on") => Some(()),
        _ => None,
    });
    let app = std::fs::read_to_string(root.join("app.py")).unwrap();
    let id = core
        .remora
        .read()
        .topology()
        .node_at("app.py", 2)
        .unwrap()
        .id
        .clone();
    assert!(app.starts_with("# remora-file: rm_"), "{app}");
    assert!(
        app.contains(&format!("def parse_config(path):    # {id}\n")),
        "{app}"
    );
    // A new function typed on disk gets its ID too, and the old ones stay.
    std::fs::write(
        root.join("app.py"),
        format!("{app}\ndef extra():\n    pass\n"),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(root.join("app.py")).unwrap();
        if text.contains("def extra():    # rm_") {
            assert!(text.contains(&format!("def parse_config(path):    # {id}\n")));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no ID for extra(): {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    core.shutdown(Duration::from_secs(2));
}

/// Waits for the Remora event of `event_type`, collecting the others.
fn remora_event(
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
    rt: &tokio::runtime::Runtime,
    seen: &mut Vec<crate::remora::events::EventRecord>,
    event_type: &str,
) -> crate::remora::events::EventRecord {
    loop {
        if let Some(r) = seen.iter().find(|r| r.event.event_type() == event_type) {
            return r.clone();
        }
        let r = wait_for(rx, rt, |m| match m {
            ToEditor::RemoraEvent { record } => Some(record.clone()),
            _ => None,
        });
        seen.push(r);
    }
}

#[test]
fn node_agents_rewrite_themselves_message_each_other_and_stop_at_cycles() {
    use crate::remora::events::Event;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let load_reply = "```python\ncallee = get_my_callees()[0]['id']\nmessage_node(callee, 'please return 2')\n```";
    let helper_loop =
        "```python\nmessage_node(get_my_callers()[0]['id'], 'and you change too')\n```";
    let helper_rewrite = "```python\ndef helper():\n    return 2\n```";
    let chat_rewrite = "```python\ndef load(self) -> int:\n    return helper()\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(chat_rewrite.into()),
        Reply::OpenaiStream(load_reply.into()),
        Reply::OpenaiStream(helper_loop.into()),
        Reply::OpenaiStream(helper_rewrite.into()),
        Reply::OpenaiStream(
            "{\"tool\": \"rewrite_self\", \"args\": {\"new_source\": \"def helper():\\n    return 3\\n\"}}".into(),
        ),
        Reply::OpenaiStream("```python\ndef helper():\n    return 4\n```".into()),
    ]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let src = "class Config:\n    def load(self):\n        return helper()\n\n\ndef helper():\n    return 1\n";
    std::fs::write(dir.path().join("app.py"), src).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    let (load, helper) = {
        let ix = core.remora.read();
        let t = ix.topology();
        (
            t.node_at("app.py", 3).unwrap().clone(),
            t.node_at("app.py", 7).unwrap().clone(),
        )
    };

    // 1. The human chats with `load`; it rewrites exactly itself.
    core.send(ToCore::NodeChat {
        node_id: load.id.clone(),
        message: "add a return type".into(),
    })
    .unwrap();
    let mut seen = Vec::new();
    let proposal = remora_event(&mut rx, &rt, &mut seen, "RewriteProposalEvent");
    let Event::RewriteProposal {
        agent_id,
        new_source,
        diff,
        proposal_id,
        ..
    } = &proposal.event
    else {
        unreachable!()
    };
    assert_eq!(agent_id, &load.id);
    assert_eq!(
        new_source,
        "    def load(self) -> int:\n        return helper()"
    );
    assert!(
        diff.contains("-    def load(self):\n+    def load(self) -> int:\n"),
        "{diff}"
    );
    let chat = seen
        .iter()
        .find(|r| r.event.event_type() == "HumanChatEvent")
        .unwrap();
    assert_eq!(chat.correlation_id, proposal.correlation_id, "one chain");
    assert!(seen
        .iter()
        .any(|r| r.event.event_type() == "AgentStartEvent"));
    remora_event(&mut rx, &rt, &mut seen, "AgentCompleteEvent");
    // The system prompt is the seed's base prompt for `load`.
    let first = server.requests.lock().unwrap()[0].clone();
    assert!(
        first.contains("embodying a Python method: `load`"),
        "{first}"
    );
    assert!(first.contains(&format!("Node ID: {}", load.id)));
    // Rejecting logs the verdict.
    core.send(ToCore::Reject {
        id: proposal_id.clone(),
        feedback: None,
    })
    .unwrap();
    seen.clear();
    let rejected = remora_event(&mut rx, &rt, &mut seen, "RewriteRejectedEvent");
    assert!(
        matches!(&rejected.event, Event::RewriteRejected { agent_id, .. } if agent_id == &load.id)
    );

    // 2. `load` messages `helper`, which tries to message `load` back
    //    (refused: a cycle) and then rewrites itself.
    core.send(ToCore::NodeChat {
        node_id: load.id.clone(),
        message: "make helper return 2".into(),
    })
    .unwrap();
    seen.clear();
    let msg = remora_event(&mut rx, &rt, &mut seen, "AgentMessageEvent");
    assert!(
        matches!(&msg.event, Event::AgentMessage { from_agent, to_agent, .. }
        if from_agent == &load.id && to_agent == &helper.id)
    );
    // `load` only sent a message: it proposes no rewrite; the first
    // proposal of the chain is helper's.
    let proposal = remora_event(&mut rx, &rt, &mut seen, "RewriteProposalEvent");
    assert!(
        matches!(&proposal.event, Event::RewriteProposal { agent_id, .. } if agent_id == &helper.id),
        "{:?}",
        proposal.event
    );
    assert_eq!(
        proposal.correlation_id, msg.correlation_id,
        "the chain carries on"
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests.len() >= 4);
    assert!(
        requests[3].contains("already in this activation chain"),
        "the refusal went back to the model: {}",
        requests[3]
    );
    let Event::RewriteProposal { new_source, .. } = &proposal.event else {
        unreachable!()
    };
    assert_eq!(new_source, "def helper():\n    return 2");
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn a_node_asked_a_question_answers_it_and_the_answer_returns_to_the_caller() {
    use crate::remora::events::Event;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let asks = "```python\nsaid = message_node(get_my_callees()[0]['id'], 'What do you return?')\nrewrite_self('def load(self):\\n    \"\"\"' + said + '\"\"\"\\n    return helper()\\n')\n```";
    let asks_in_vain = "```python\ntry:\n    said = message_node(get_my_callees()[0]['id'], 'Why?')\nexcept Exception as e:\n    said = str(e)\nrewrite_self('def load(self):\\n    \"\"\"' + said + '\"\"\"\\n    return helper()\\n')\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(asks.into()),
        Reply::OpenaiStream("I return 1.".into()),
        Reply::OpenaiStream("The number one.".into()),
        Reply::OpenaiStream(asks_in_vain.into()),
        Reply::Hang,
    ]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let src = "class Config:\n    def load(self):\n        return helper()\n\n\ndef helper():\n    return 1\n";
    std::fs::write(dir.path().join("app.py"), src).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut cfg = config(&server.url);
    cfg.remora.cooldown_ms = 0;
    cfg.remora.answer_timeout_ms = 700;
    let (core, mut rx) = start_core(cfg, root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    let (load, helper) = {
        let ix = core.remora.read();
        let t = ix.topology();
        (
            t.node_at("app.py", 3).unwrap().clone(),
            t.node_at("app.py", 7).unwrap().clone(),
        )
    };

    // 1. `load` asks `helper`; the answer is what its call returns.
    core.send(ToCore::NodeChat {
        node_id: load.id.clone(),
        message: "document what helper returns".into(),
    })
    .unwrap();
    let mut seen = Vec::new();
    let proposal = remora_event(&mut rx, &rt, &mut seen, "RewriteProposalEvent");
    let Event::RewriteProposal { new_source, .. } = &proposal.event else {
        unreachable!()
    };
    assert!(
        new_source.contains("\"\"\"I return 1.\"\"\""),
        "{new_source}"
    );
    let question = remora_event(&mut rx, &rt, &mut seen, "AgentQuestionEvent");
    let answer = remora_event(&mut rx, &rt, &mut seen, "AgentAnswerEvent");
    assert_eq!(
        question.event,
        Event::AgentQuestion {
            from_agent: load.id.clone(),
            to_agent: helper.id.clone(),
            question: "What do you return?".into()
        }
    );
    assert_eq!(
        answer.event,
        Event::AgentAnswer {
            from_agent: helper.id.clone(),
            to_agent: load.id.clone(),
            answer: "I return 1.".into()
        }
    );
    assert_eq!(
        question.correlation_id, proposal.correlation_id,
        "one chain"
    );
    assert!(
        !seen.iter().any(
            |r| matches!(&r.event, Event::AgentStart { agent_id, .. } if agent_id == &helper.id)
        ),
        "no agent of helper ran: it only answered"
    );
    let asked = server.requests.lock().unwrap()[1].clone();
    assert!(
        asked.contains("embodying the Python function `helper`"),
        "{asked}"
    );
    assert!(
        asked.contains(&format!(
            "The method `load` ({}) asks: What do you return?",
            load.id
        )),
        "{asked}"
    );

    // 2. The human asks `helper` in its chat: answered there, no proposal.
    seen.clear();
    core.send(ToCore::NodeChat {
        node_id: helper.id.clone(),
        message: "What do you return?".into(),
    })
    .unwrap();
    let answer = remora_event(&mut rx, &rt, &mut seen, "AgentAnswerEvent");
    assert_eq!(
        answer.event,
        Event::AgentAnswer {
            from_agent: helper.id.clone(),
            to_agent: "human".into(),
            answer: "The number one.".into()
        }
    );
    assert!(
        !seen
            .iter()
            .any(|r| r.event.event_type() == "AgentStartEvent"),
        "{seen:?}"
    );

    // 3. No answer in time: the caller's call fails with a clear error.
    seen.clear();
    core.send(ToCore::NodeChat {
        node_id: load.id.clone(),
        message: "document why helper returns what it does".into(),
    })
    .unwrap();
    let error = remora_event(&mut rx, &rt, &mut seen, "AgentErrorEvent");
    assert!(
        matches!(&error.event, Event::AgentError { agent_id, error } if agent_id == &helper.id && error.contains("did not answer within 0.7 s (remora.answer_timeout_ms)")),
        "{:?}",
        error.event
    );
    let proposal = remora_event(&mut rx, &rt, &mut seen, "RewriteProposalEvent");
    let Event::RewriteProposal { new_source, .. } = &proposal.event else {
        unreachable!()
    };
    assert!(new_source.contains("did not answer within"), "{new_source}");
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn a_ghost_node_asked_for_from_the_ui_is_written_by_its_agent_as_a_proposal() {
    use crate::remora::events::Event;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(
        "```python\ndef parse(text):\n    return text.split()\n```".into(),
    )]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let src = "class Config:\n    def load(self):\n        return helper()\n\n\ndef helper():\n    return 1\n";
    std::fs::write(dir.path().join("app.py"), src).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    let file = root.join("app.py").to_string_lossy().into_owned();
    // A method with the cursor outside any class: refused with what to do.
    core.send(ToCore::NodeNew {
        file: file.clone(),
        line: 7,
        kind: "method".into(),
        name: "reset".into(),
        description: String::new(),
    })
    .unwrap();
    let refused = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Notify { message, .. } if message.contains("goes in a class") => {
            Some(message.clone())
        }
        _ => None,
    });
    assert!(refused.contains("put the cursor inside one"), "{refused}");
    // A function from inside `load`: after the class, written by its agent.
    core.send(ToCore::NodeNew {
        file: file.clone(),
        line: 3,
        kind: "function".into(),
        name: "parse".into(),
        description: "It splits text into words.".into(),
    })
    .unwrap();
    let (agent, line) = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::GhostNode {
            agent_id,
            path,
            line,
            label,
            indent,
        } if path == &file && label == "function parse" => {
            assert_eq!(indent, "", "a function of the file");
            Some((agent_id.clone(), *line))
        }
        _ => None,
    });
    assert_eq!(line, 4, "after Config, which ends on line 3");
    let mut seen = Vec::new();
    let proposal = remora_event(&mut rx, &rt, &mut seen, "RewriteProposalEvent");
    let Event::RewriteProposal {
        proposal_id,
        new_source,
        diff,
        ..
    } = &proposal.event
    else {
        unreachable!()
    };
    assert_eq!(proposal_id, &agent);
    assert_eq!(new_source, "def parse(text):\n    return text.split()");
    assert!(
        diff.contains("+def parse(text):\n+    return text.split()\n+\n+\n def helper():"),
        "{diff}"
    );
    let asked = server.requests.lock().unwrap()[0].clone();
    assert!(
        asked.contains("(none yet: the human asked for you by name"),
        "{asked}"
    );
    assert!(
        asked.contains("Write yourself: the new function `parse`. It splits text into words."),
        "{asked}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        src,
        "nothing is written before the accept"
    );
    core.shutdown(Duration::from_secs(2));
}

/// Takes snapshot `id` through the core and waits until the editor is told of it.
fn snapshot(
    core: &CoreHandle,
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
    rt: &tokio::runtime::Runtime,
    id: &str,
    message: &str,
) {
    core.send(ToCore::Snapshot {
        id: id.into(),
        message: message.into(),
    })
    .unwrap();
    wait_for(rx, rt, |m| match m {
        ToEditor::Snapshots { snapshots } if snapshots.iter().any(|s| s.id == id) => Some(()),
        _ => None,
    });
}

#[test]
fn snapshots_rollback_effects_and_fork_through_messages() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fork_reply = "```python\nsrc = read_file('app.py')\nwrite_file('app.py', src.replace('return {}', 'return {\"forked\": True}'))\nsubmit_result('fork', ['app.py'])\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(GOOD.into()),
        Reply::OpenaiStream(fork_reply.into()),
    ]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Ready { .. }).then_some(())
    });
    snapshot(&core, &mut rx, &rt, "snap0001", "start");
    // An agent's change is accepted: a snapshot is taken first, and its
    // LLM call is in the effect log.
    core.send(spawn("ag1", "add a docstring to parse_config"))
        .unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, proposal: Some(_), .. } if agent.id == "ag1")
            .then_some(())
    });
    core.send(ToCore::Accept {
        id: "ag1".into(),
        buffers: vec![],
        hunk: None,
        write: false,
    })
    .unwrap();
    let snapshots = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Snapshots { snapshots }
            if snapshots
                .iter()
                .any(|s| s.message == "before accepting ag1") =>
        {
            Some(snapshots.clone())
        }
        _ => None,
    });
    assert_eq!(snapshots.len(), 2);
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Resolved { accepted: true, .. }).then_some(())
    });
    let changed = std::fs::read_to_string(root.join("app.py")).unwrap();
    assert!(changed.contains("Parse."));
    core.send(ToCore::Effects {
        since: crate::nvim::messages::EffectsSince::Seq(0),
        kind: Some("llm".into()),
    })
    .unwrap();
    let effects = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Effects { effects } => Some(effects.clone()),
        _ => None,
    });
    assert_eq!(effects.len(), 1);
    assert_eq!(effects[0].agent_id.as_deref(), Some("ag1"));
    assert_eq!(effects[0].snapshot_id.as_deref(), Some("snap0001"));
    // Seed 004's `effects --since <snapshot>`: after snap0001, the LLM call;
    // after the snapshot the accept took, nothing.
    for (since, want) in [("snap0001", 1), (snapshots[0].id.as_str(), 0)] {
        core.send(ToCore::Effects {
            since: crate::nvim::messages::EffectsSince::Snapshot(since.into()),
            kind: None,
        })
        .unwrap();
        let effects = wait_for(&mut rx, &rt, |m| match m {
            ToEditor::Effects { effects } => Some(effects.clone()),
            _ => None,
        });
        assert_eq!(effects.len(), want, "since {since}");
    }
    // A dry run says what would change and which effects stay; nothing moves.
    core.send(ToCore::Rollback {
        id: "snap0001".into(),
        dry_run: true,
        buffers: vec![],
    })
    .unwrap();
    let plan = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Rollback {
            dry_run: true,
            message,
            ..
        } => Some(message.clone()),
        _ => None,
    });
    assert!(plan.contains("restore app.py"), "{plan}");
    assert!(plan.contains("cannot be undone: 1 llm"), "{plan}");
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        changed
    );
    core.send(ToCore::Rollback {
        id: "snap0001".into(),
        dry_run: false,
        buffers: vec![],
    })
    .unwrap();
    let done = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Rollback {
            dry_run: false,
            ok: true,
            message,
            ..
        } => Some(message.clone()),
        _ => None,
    });
    // The message names the snapshot that undoes the rollback.
    let before_rollback = done
        .split("A rollback to ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "def parse_config(path):\n    return {}\n"
    );
    // A fork starts from the snapshot taken before the rollback (with the
    // docstring), and its proposal holds that state plus its own change.
    core.send(ToCore::Fork {
        id: "fk1".into(),
        snapshot: before_rollback,
        task: "mark forked".into(),
    })
    .unwrap();
    let files = proposal_of(&mut rx, &rt, "fk1");
    let added: Vec<String> = files[0]
        .hunks
        .iter()
        .flat_map(|h| h.new_lines.clone())
        .collect();
    assert!(added.iter().any(|l| l.contains("Parse.")), "{added:?}");
    assert!(added.iter().any(|l| l.contains("forked")), "{added:?}");
    core.shutdown(Duration::from_secs(2));
}

fn text_call(tool: &str, args: serde_json::Value) -> Reply {
    Reply::OpenaiStream(serde_json::json!({"tool": tool, "args": args}).to_string())
}

fn chat(id: &str, message: &str) -> ToCore {
    ToCore::Chat {
        id: id.into(),
        message: message.into(),
        file: None,
        cursor_line: None,
        context: None,
    }
}

/// The chat entries sent to the editor until `agent`'s entry with `role`.
fn chat_until(
    rx: &mut mpsc::UnboundedReceiver<ToEditor>,
    rt: &tokio::runtime::Runtime,
    agent: &str,
    role: &str,
) -> (Vec<crate::store::ChatEntry>, String) {
    let mut entries = Vec::new();
    let mut streamed = String::new();
    loop {
        match wait_for(rx, rt, |m| match m {
            ToEditor::ChatEntry { .. } | ToEditor::ChatDelta { .. } => Some(m.clone()),
            _ => None,
        }) {
            ToEditor::ChatDelta { agent_id, text } if agent_id == agent => streamed.push_str(&text),
            ToEditor::ChatEntry { entry } => {
                let done = entry.agent_id.as_deref() == Some(agent) && entry.role == role;
                entries.push(entry);
                if done {
                    return (entries, streamed);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_free_chat_streams_keeps_its_history_across_restarts_and_proposes_changes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start_with_window(
        vec![
            text_call("read_file", serde_json::json!({"path": "app.py"})),
            text_call("reply", serde_json::json!({"text": "It returns an empty dict."})),
            text_call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": "def parse_config(path):\n    \"\"\"Parse.\"\"\"\n    return {}\n"}),
            ),
            text_call(
                "submit_result",
                serde_json::json!({"summary": "Added a docstring", "changed_files": ["app.py"]}),
            ),
        ],
        Some(8192),
    ));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Ready { .. }).then_some(())
    });
    core.send(ToCore::Chat {
        id: "c1".into(),
        message: "what does parse_config return?".into(),
        file: Some(root.join("app.py").display().to_string()),
        cursor_line: None,
        context: None,
    })
    .unwrap();
    let (entries, streamed) = chat_until(&mut rx, &rt, "c1", "assistant");
    let roles: Vec<&str> = entries.iter().map(|e| e.role.as_str()).collect();
    assert_eq!(roles, ["user", "tool", "assistant"]);
    let call: serde_json::Value =
        serde_json::from_str(entries[1].content.lines().next().unwrap()).unwrap();
    assert_eq!(
        call,
        serde_json::json!({"tool": "read_file", "args": {"path": "app.py"}})
    );
    assert!(
        entries[1].content.contains("def parse_config"),
        "the result is kept"
    );
    assert_eq!(entries[2].content, "It returns an empty dict.");
    // An answer leaves nothing to review: the turn ends (its state may
    // have been announced before the answer's chat entry).
    let store = Store::open(&root).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store.agent("c1").unwrap().state != AgentState::Settled {
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never ended: {:?}",
            store.agent("c1").unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        streamed.contains("\"tool\": \"reply\"") || streamed.contains("\"reply\""),
        "{streamed}"
    );
    core.shutdown(Duration::from_secs(2));

    // A new start: the conversation is still there and the model sees it.
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    core.send(ToCore::ChatHistory).unwrap();
    let history = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::ChatHistory { entries } => Some(entries.clone()),
        _ => None,
    });
    assert_eq!(history.len(), 3);
    core.send(chat("c2", "add a docstring to it")).unwrap();
    let (entries, _) = chat_until(&mut rx, &rt, "c2", "status");
    let last = entries.last().unwrap();
    assert!(
        last.content.starts_with("Proposal c2: app.py"),
        "{}",
        last.content
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].contains("The human is in app.py:\\n```\\ndef parse_config(path):"),
        "the file the human is in is shown: {}",
        requests[0]
    );
    let second_turn = &requests[2];
    assert!(
        second_turn.contains("what does parse_config return?")
            && second_turn.contains("It returns an empty dict."),
        "{second_turn}"
    );
    assert!(second_turn.contains("reply(text: string)"));
    // The change is a proposal: the file is untouched until accepted.
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "def parse_config(path):\n    return {}\n"
    );
    core.send(ToCore::ChatClear).unwrap();
    let history = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::ChatHistory { entries } => Some(entries.clone()),
        _ => None,
    });
    assert!(history.is_empty());
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn a_chat_request_to_a_tiny_model_runs_in_code_mode_and_says_what_it_did() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let mut cfg = config(&server.url);
    cfg.llm.model = "qwen2.5-coder-0.5b-instruct".into();
    let (core, mut rx) = start_core(cfg, root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Ready { .. }).then_some(())
    });
    core.send(ToCore::Chat {
        id: "t1".into(),
        message: "add a docstring to parse_config".into(),
        file: Some(root.join("app.py").display().to_string()),
        cursor_line: Some(0),
        context: None,
    })
    .unwrap();
    let (entries, _) = chat_until(&mut rx, &rt, "t1", "status");
    let roles: Vec<&str> = entries.iter().map(|e| e.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "status"]);
    assert_eq!(entries[1].content, "Added a docstring");
    assert!(entries[2].content.starts_with("Proposal t1: app.py"));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        !requests[0].contains("response_format")
            && !requests[0].contains("Answer with exactly ONE JSON object"),
        "code mode, not the tool protocol: {}",
        requests[0]
    );
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn a_broken_database_fails_a_new_agent_at_once_with_the_reason() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = project();
    std::fs::create_dir_all(dir.path().join(".chimera")).unwrap();
    std::fs::write(dir.path().join(".chimera/chimera.db"), vec![0x5a; 8192]).unwrap();
    let (core, mut rx) = start_core(config("http://127.0.0.1:9"), dir.path().to_path_buf());
    core.send(spawn("a1", "add a docstring")).unwrap();
    let rec = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent { agent, .. } if agent.id == "a1" => Some(agent.clone()),
        _ => None,
    });
    assert_eq!(rec.state, AgentState::Failed);
    let error = rec.error.unwrap_or_default();
    assert!(
        error.contains("database") && error.contains("checkhealth"),
        "{error}"
    );
    core.shutdown(Duration::from_secs(2));
}

/// A task that makes the agent panic (see `run_agent`).
pub(super) const PANIC_TASK: &str = "panic, for the test of a crashing agent";

#[test]
fn an_agent_that_panics_ends_failed_and_frees_its_place() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.agents.max_concurrent = 1;
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    core.send(spawn("boom", PANIC_TASK)).unwrap();
    let rec = wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Agent { agent, .. } if agent.id == "boom" && !agent.state.is_active() => {
            Some(agent.clone())
        }
        _ => None,
    });
    assert_eq!(rec.state, AgentState::Failed);
    assert!(rec.error.unwrap_or_default().contains("crashed"));
    // The only slot is free again.
    core.send(spawn("next", "add a docstring")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, .. } if agent.id == "next" && agent.state == AgentState::Completed).then_some(())
    });
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn what_a_program_logs_stays_with_its_agent_even_when_it_fails() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let logs_then_works = "```python\nlog('looking at parse_config')\nsrc = read_file('app.py')\nwrite_file('app.py', src.replace('    return {}', '    \"\"\"Parse.\"\"\"\\n    return {}'))\nlog('wrote the docstring')\nsubmit_result('Added a docstring', ['app.py'])\n```";
    let logs_then_fails =
        "```python\nlog('about to read a missing file')\nread_file('missing.py')\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(logs_then_works.into()),
        Reply::OpenaiStream(logs_then_fails.into()),
    ]));
    let dir = project();
    let mut cfg = config(&server.url);
    cfg.agents.repair_rounds = 0;
    let (core, mut rx) = start_core(cfg, dir.path().to_path_buf());
    for (id, want) in [
        ("ok", vec!["looking at parse_config", "wrote the docstring"]),
        ("bad", vec!["about to read a missing file"]),
    ] {
        core.send(spawn(id, "add a docstring")).unwrap();
        let rec = wait_for(&mut rx, &rt, |m| match m {
            ToEditor::Agent { agent, .. } if agent.id == id && !agent.state.is_active() => {
                Some(agent.clone())
            }
            _ => None,
        });
        assert_eq!(rec.log, want, "{id}: {rec:?}");
    }
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn the_watcher_rebases_a_proposal_onto_a_change_made_outside_neovim() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let mut cfg = config(&server.url);
    cfg.sync.debounce_ms = 50;
    let (core, mut rx) = start_core(cfg, root.clone());
    core.send(spawn("a1", "add a docstring")).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Agent { agent, proposal: Some(_), .. } if agent.id == "a1")
            .then_some(())
    });
    let appended =
        "def parse_config(path):\n    return {}\n\n\ndef added_outside():\n    return 2\n";
    std::fs::write(root.join("app.py"), appended).unwrap();
    // The watcher reports it; the proposal is shown again, rebased.
    let files = proposal_of(&mut rx, &rt, "a1");
    assert_eq!(files[0].hunks.len(), 1);
    core.send(ToCore::Accept {
        id: "a1".into(),
        buffers: vec![],
        hunk: None,
        write: false,
    })
    .unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Resolved { accepted: true, .. }).then_some(())
    });
    let now = std::fs::read_to_string(root.join("app.py")).unwrap();
    assert!(
        now.contains("Parse.") && now.contains("added_outside"),
        "{now}"
    );
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn each_role_asks_its_model_and_a_switch_reaches_new_agents_only() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A program that asks ask_llm() too: the task's model writes it, the
    // ask_llm model answers it.
    let asking = "```python\nsrc = read_file('app.py')\ndoc = ask_llm('one line doc for parse_config')\nwrite_file('app.py', src.replace('    return {}', '    \"\"\"' + doc.strip() + '\"\"\"\\n    return {}'))\nsubmit_result('Added a docstring', ['app.py'])\n```";
    let server = rt.block_on(FakeServer::start(vec![
        Reply::OpenaiStream(asking.into()),
        Reply::OpenaiStream("Parse it.".into()),
        Reply::OpenaiStream(GOOD.into()),
    ]));
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let mut cfg = config(&server.url);
    cfg.llm.model = "base-7b".into();
    cfg.llm.roles = [("ask_llm".to_owned(), "small-0.5b".to_owned())].into();
    cfg.tests.command = serde_json::from_value(serde_json::json!("off")).unwrap();
    let (core, mut rx) = start_core(cfg, root.clone());
    let done = |rx: &mut mpsc::UnboundedReceiver<ToEditor>, id: &'static str| {
        wait_for(rx, &rt, |m| match m {
            ToEditor::Agent { agent, .. }
                if agent.id == id && agent.state.as_str() == "completed" =>
            {
                Some(())
            }
            ToEditor::Agent { agent, .. } if agent.id == id && agent.state.as_str() == "failed" => {
                panic!("{id} failed: {:?}", agent.error)
            }
            _ => None,
        })
    };
    core.send(spawn("a1", "add a docstring to parse_config"))
        .unwrap();
    done(&mut rx, "a1");
    core.send(ToCore::SetModel {
        model: "other-7b".into(),
    })
    .unwrap();
    wait_for(&mut rx, &rt, |m| match m {
        ToEditor::Notify { message, .. } if message.contains("new agents ask model `other-7b`") => {
            Some(())
        }
        _ => None,
    });
    core.send(spawn("a2", "add a docstring to parse_config again"))
        .unwrap();
    done(&mut rx, "a2");
    let models: Vec<String> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| {
            let body: serde_json::Value =
                serde_json::from_str(r.split_once('\n').unwrap().1).unwrap();
            body["model"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(models, ["base-7b", "small-0.5b", "other-7b"]);
    core.shutdown(Duration::from_secs(2));
}

#[test]
fn a_chat_whose_node_cannot_be_subscribed_says_it_will_not_wake() {
    use crate::remora::events::Event;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(vec![]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("app.py"), "def helper():\n    return 1\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    let helper = core
        .remora
        .read()
        .topology()
        .node_at("app.py", 1)
        .unwrap()
        .clone();
    // A store that refuses the subscription's write (a full disk, a
    // locked file), through a connection of its own.
    let db = rusqlite::Connection::open(root.join(".chimera/chimera.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON subscriptions BEGIN SELECT RAISE(FAIL, 'refused'); END;",
    )
    .unwrap();
    core.send(ToCore::NodeChat {
        node_id: helper.id.clone(),
        message: "return 2".into(),
    })
    .unwrap();
    let mut seen = Vec::new();
    let error = remora_event(&mut rx, &rt, &mut seen, "AgentErrorEvent");
    let Event::AgentError { agent_id, error } = &error.event else {
        unreachable!()
    };
    assert_eq!(agent_id, &helper.id);
    assert!(
        error.contains("cannot wake the node") && error.contains("refused"),
        "{error}"
    );
    core.shutdown(Duration::from_secs(2));
}

/// How many files of `root`'s stable layer are still unread, seen from a
/// connection of its own (the store's own reads would read them).
fn unread_files(root: &std::path::Path) -> i64 {
    rusqlite::Connection::open(root.join(".chimera/chimera.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM stable WHERE unread = 1", [], |r| {
            r.get(0)
        })
        .unwrap()
}

#[test]
fn a_core_that_lives_on_reads_what_the_import_left_unread_and_a_one_command_core_does_not() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    for i in 0..2_500 {
        std::fs::write(root.join(format!("m{i}.py")), format!("x = {i}\n")).unwrap();
    }
    let mut cfg = config("http://127.0.0.1:9");
    cfg.remora.index = false;
    let start_as = |indexing| {
        let (tx, rx) = mpsc::unbounded_channel::<ToEditor>();
        let core = start(cfg.clone(), root.clone(), Arc::new(tx), None, indexing).unwrap();
        (core, rx)
    };
    let (core, mut rx) = start_as(Indexing::OnDemand);
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Ready { .. }).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        unread_files(&root),
        2_501,
        "a core for one command reads nothing ahead"
    );
    core.shutdown(Duration::from_secs(5));

    let (core, mut rx) = start_as(Indexing::AtStart);
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Ready { .. }).then_some(())
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while unread_files(&root) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "still unread: {}",
            unread_files(&root)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let store = Store::open(&root).unwrap();
    let e = store.stable_entry("m7.py").unwrap().unwrap();
    assert_eq!(store.blob_text(&e.hash).unwrap(), "x = 7\n");
    core.shutdown(Duration::from_secs(5));
}

/// A core that keeps the project's Remora index finds the file a task
/// names by the index: also past the 5,000 files a task reads at most
/// when it has only the files' texts to go by.
#[test]
fn a_task_finds_a_definition_past_the_files_it_could_read_by_the_index() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let edit = "```python\nsrc = read_file('zz/late.py')\nwrite_file('zz/late.py', src.replace('    return sum(xs) * 7919', '    \"\"\"Total.\"\"\"\\n    return sum(xs) * 7919'))\nsubmit_result('Added a docstring', ['zz/late.py'])\n```";
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(edit.into())]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    for i in 0..5000 {
        let folder = dir.path().join(format!("pkg{}", i / 500));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("m{i}.py")),
            format!("def f{i}():\n    return {i}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.path().join("zz")).unwrap();
    std::fs::write(
        dir.path().join("zz/late.py"),
        "def compute_late_total(xs):\n    return sum(xs) * 7919\n",
    )
    .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    core.send(spawn("a1", "add a docstring to compute_late_total"))
        .unwrap();
    let files = proposal_of(&mut rx, &rt, "a1");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, root.join("zz/late.py").to_string_lossy());
    let asked = server.requests.lock().unwrap().first().cloned().unwrap();
    assert!(
        asked.contains("7919"),
        "the model is shown the file the task is about: {asked}"
    );
    core.shutdown(Duration::from_secs(2));
}

/// A forked agent sees the project as it was in its snapshot, which the
/// Remora index no longer describes: its task finds its place in the
/// snapshot's files, not in the index of today's.
#[test]
fn a_fork_finds_its_place_in_its_snapshot_which_the_index_no_longer_holds() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let edit = "```python\nsrc = read_file('legacy.py')\nwrite_file('legacy.py', src.replace('    return sum(xs) * 7919', '    \"\"\"Total.\"\"\"\\n    return sum(xs) * 7919'))\nsubmit_result('Added a docstring', ['legacy.py'])\n```";
    let server = rt.block_on(FakeServer::start(vec![Reply::OpenaiStream(edit.into())]));
    let dir = project();
    let legacy = dir.path().join("legacy.py");
    std::fs::write(
        &legacy,
        "def legacy_total(xs):\n    return sum(xs) * 7919\n",
    )
    .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (core, mut rx) = start_core(config(&server.url), root.clone());
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: None }).then_some(())
    });
    snapshot(&core, &mut rx, &rt, "snap0001", "with legacy.py");
    // The file goes; the index follows.
    std::fs::remove_file(&legacy).unwrap();
    wait_for(&mut rx, &rt, |m| {
        matches!(m, ToEditor::Topology { path: Some(p) } if p.ends_with("legacy.py")).then_some(())
    });
    core.send(ToCore::Fork {
        id: "fk1".into(),
        snapshot: "snap0001".into(),
        task: "add a docstring to legacy_total".into(),
    })
    .unwrap();
    let files = proposal_of(&mut rx, &rt, "fk1");
    assert!(
        files.iter().any(|f| f.path.ends_with("legacy.py")),
        "{files:?}"
    );
    let asked = server.requests.lock().unwrap().first().cloned().unwrap();
    assert!(
        asked.contains("7919"),
        "the model is shown the snapshot's file: {asked}"
    );
    core.shutdown(Duration::from_secs(2));
}
