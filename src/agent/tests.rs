use super::attempt::write_checked;
use super::*;
use crate::config::{LlmConfig, Provider};
use crate::llm::fake::{FakeServer, Reply};
use crate::overlay::Overlay;
use crate::store::{AgentRecord, AgentState};

struct Setup {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    config: Config,
}

fn setup(url: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    store
        .stable_put(
            "app.py",
            b"def parse_config(path):\n    return {}\n",
            0o644,
            0,
            1 << 20,
        )
        .unwrap();
    store
        .agent_insert(&AgentRecord {
            state: AgentState::Running,
            ..AgentRecord::new("ag", "add a docstring to parse_config")
        })
        .unwrap();
    let config = Config {
        llm: LlmConfig {
            provider: Provider::Openai,
            url: url.into(),
            max_retries: 0,
            timeout_ms: 5_000,
            ..LlmConfig::default()
        },
        ..Config::default()
    };
    Setup {
        _dir: dir,
        store,
        config,
    }
}

fn job() -> Job {
    Job {
        spec: TaskSpec {
            task: "add a docstring to parse_config".into(),
            file: Some("app.py".into()),
            ..TaskSpec::default()
        },
        id: "ag".into(),
        ..Job::default()
    }
}

const GOOD: &str = "```python\nsrc = read_file('app.py')\nsrc = src.replace('def parse_config(path):\\n', 'def parse_config(path):\\n    \"\"\"Parse the config.\"\"\"\\n')\nwrite_file('app.py', src)\nsubmit_result('Added a docstring', ['app.py'])\n```";

/// Runs `job` against `s`'s store, config and server.
async fn run_on(s: &Setup, job: &Job) -> Result<Done, AgentError> {
    let llm = LlmClient::new(&s.config.llm).unwrap();
    let services = Services::new(&s.config, s._dir.path().to_owned());
    let cancel = CancellationToken::new();
    let run_ = Run::new(
        s.store.clone(),
        &s.config,
        Some(&llm),
        &services,
        job,
        &cancel,
        &|_| {},
    )?;
    run(&run_).await
}

async fn run_with(script: Vec<Reply>) -> (Result<Done, AgentError>, Setup, FakeServer) {
    let server = FakeServer::start(script).await;
    let s = setup(&server.url);
    let r = run_on(&s, &job()).await;
    (r, s, server)
}

/// An outside agent that says who it ran.
struct Recorder;

impl crate::agent::Outside for Recorder {
    fn run<'r>(
        &'r self,
        run: &'r Run<'r>,
    ) -> futures_util::future::BoxFuture<'r, Result<Done, AgentError>> {
        let summary = format!(
            "ran {} for {}",
            run.job.spec.external.clone().unwrap_or_default(),
            run.job.id
        );
        Box::pin(async move {
            Ok(Done {
                summary,
                changed_files: Vec::new(),
                rounds: 1,
                form: "external",
            })
        })
    }
}

/// An external agent runs behind the same door as ours, without a model of
/// ours, by whoever was given its process; with nobody given, it is said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_agent_runs_behind_the_one_door_without_our_model() {
    let s = setup("http://127.0.0.1:9");
    let services = Services::new(&s.config, s._dir.path().to_owned());
    let cancel = CancellationToken::new();
    let mut external = job();
    external.spec.external = Some("opencode".into());
    let run_ = || {
        Run::new(
            s.store.clone(),
            &s.config,
            None,
            &services,
            &external,
            &cancel,
            &|_| {},
        )
        .unwrap()
    };
    let done = run(&run_().with_outside(&Recorder)).await.unwrap();
    assert_eq!(done.summary, "ran opencode for ag");
    let alone = run(&run_()).await.unwrap_err().to_string();
    assert!(alone.contains("nothing here runs its process"), "{alone}");
    // Ours asks for the model it was not given, and says so.
    let ours = job();
    let ours = Run::new(
        s.store.clone(),
        &s.config,
        None,
        &services,
        &ours,
        &cancel,
        &|_| {},
    )
    .unwrap();
    let said = run(&ours).await.unwrap_err().to_string();
    assert!(said.contains("started without a model"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_program_leaves_its_change_in_the_overlay_only() {
    let (r, s, server) = run_with(vec![Reply::OpenaiStream(GOOD.into())]).await;
    let done = r.unwrap();
    assert_eq!(done.summary, "Added a docstring");
    assert_eq!(done.changed_files, vec!["app.py"]);
    assert_eq!(done.rounds, 1);
    let ov = Overlay::new(&s.store, "ag", 1 << 20);
    let text = ov
        .read_text(&crate::paths::ProjectPath::parse("app.py").unwrap())
        .unwrap();
    assert!(text.contains("\"\"\"Parse the config.\"\"\""), "{text}");
    let e = s.store.stable_entry("app.py").unwrap().unwrap();
    assert_eq!(
        s.store.blob(&e.hash).unwrap(),
        b"def parse_config(path):\n    return {}\n"
    );
    let req = server.requests.lock().unwrap()[0].clone();
    assert!(
        req.contains("parse_config") && req.contains("submit_result"),
        "prompt has task and functions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traceback_goes_back_to_the_model_and_the_repair_is_used() {
    let bad = "```python\nx = read_file('missing.py')\n```";
    let (r, _s, server) = run_with(vec![
        Reply::OpenaiStream(bad.into()),
        Reply::OpenaiStream(GOOD.into()),
    ])
    .await;
    assert_eq!(r.unwrap().rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("missing.py") && second.contains("does not exist"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_submit_and_no_change_are_repaired_then_the_agent_gives_up() {
    let no_submit = "```python\nwrite_file('app.py', 'x = 1\\n')\n```";
    let no_change = "```python\nsubmit_result('did nothing', [])\n```";
    let (r, s, server) = run_with(vec![
        Reply::OpenaiStream(no_submit.into()),
        Reply::OpenaiStream(no_change.into()),
        Reply::OpenaiStream("I cannot do that.".into()),
    ])
    .await;
    let err = r.unwrap_err();
    assert!(matches!(err, AgentError::GaveUp { rounds: 2, .. }), "{err}");
    let reqs = server.requests.lock().unwrap();
    assert!(reqs[1].contains("without calling submit_result"));
    assert!(reqs[2].contains("changed no file"));
    assert!(
        s.store.overlay_entries("ag").unwrap().is_empty(),
        "no partial change left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_root_are_refused_to_the_program() {
    let evil = "```python\ntry:\n    write_file('../outside.py', 'x')\nexcept RuntimeError as e:\n    log(str(e))\n    raise\n```";
    let (r, _s, server) = run_with(vec![Reply::OpenaiStream(evil.into()); 3]).await;
    assert!(r.is_err());
    assert!(server.requests.lock().unwrap()[1].contains("leaves the project root"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_is_stopped_and_reported() {
    let spin = "```python\nwhile True:\n    pass\n```";
    let server = FakeServer::start(vec![Reply::OpenaiStream(spin.into()); 3]).await;
    let mut s = setup(&server.url);
    s.config.agents.sandbox_timeout_ms = 100;
    s.config.agents.repair_rounds = 0;
    let err = run_on(&s, &job()).await.unwrap_err();
    assert!(err.to_string().contains("time limit"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_llm_reaches_the_model_from_inside_the_program() {
    let prog = "```python\ndoc = ask_llm('Write a docstring', 'def f(): pass')\nwrite_file('doc.txt', doc)\nsubmit_result('doc', ['doc.txt'])\n```";
    let (r, s, _server) = run_with(vec![
        Reply::OpenaiStream(prog.into()),
        Reply::OpenaiStream("Does f.".into()),
    ])
    .await;
    r.unwrap();
    let ov = Overlay::new(&s.store, "ag", 1 << 20);
    assert_eq!(
        ov.read_text(&crate::paths::ProjectPath::parse("doc.txt").unwrap())
            .unwrap(),
        "Does f."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_llm_fails_with_the_reason() {
    let (r, _s, _server) = run_with(vec![Reply::Status(500, "boom".into())]).await;
    let err = r.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_reply_is_spliced_into_the_target() {
    let reply = "Here you go:\n```python\ndef parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n```";
    let (r, s, _server) = run_with(vec![Reply::OpenaiStream(reply.into())]).await;
    let done = r.unwrap();
    assert_eq!((done.form, done.rounds), ("definitions", 1));
    let ov = Overlay::new(&s.store, "ag", 1 << 20);
    let text = ov
        .read_text(&crate::paths::ProjectPath::parse("app.py").unwrap())
        .unwrap();
    assert_eq!(
        text,
        "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_does_not_parse_is_never_proposed_and_goes_back_with_the_line() {
    let broken = "```python\ndef parse_config(path):\n    \"\"\"Parse the \"\"\"config\"\"\" file.\n    return {}\n```";
    let good = "```python\ndef parse_config(path):\n    \"\"\"Parse the config file.\"\"\"\n    return {}\n```";
    let (r, _s, server) = run_with(vec![
        Reply::OpenaiStream(broken.into()),
        Reply::OpenaiStream(good.into()),
    ])
    .await;
    assert_eq!(r.unwrap().rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("SyntaxError near line") && second.contains("not valid Python"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_function_nothing_defines_goes_back_before_any_test_runs_it() {
    // 1.5B made parse_config check `file_exists(path)`, defined nowhere
    // (eval, config-missing): it parses, and no test of the project runs
    // that line, so it was proposed and would fail in the human's hands.
    // (Here another name: `file_exists` is a host function of the program
    // form this model is asked for, which the reply would be read as.)
    let invented = "```python\ndef parse_config(path):\n    if not config_file_exists(path):\n        return {}\n    return {}\n```";
    let good = "```python\nimport os\n\n\ndef parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    if not os.path.exists(path):\n        return {}\n    return {}\n```";
    let (r, _s, server) = run_with(vec![
        Reply::OpenaiStream(invented.into()),
        Reply::OpenaiStream(good.into()),
    ])
    .await;
    assert_eq!(r.unwrap().rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("calls `config_file_exists`, which nothing in it defines or imports"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_changes_nothing_is_sent_back() {
    let same = "```python\ndef parse_config(path):\n    return {}\n```";
    let (r, _s, server) = run_with(vec![Reply::OpenaiStream(same.into()); 3]).await;
    assert!(matches!(r.unwrap_err(), AgentError::GaveUp { .. }));
    let reqs = server.requests.lock().unwrap();
    assert!(reqs[1].contains("exactly as it was"));
    assert!(
        reqs[0].contains("\"temperature\":0.2") && reqs[1].contains("\"temperature\":0.5"),
        "repairs sample more freely"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_asks_for_constrained_replies_and_reads_them() {
    let reply = serde_json::json!({"summary": "Documented parse_config", "code": "def parse_config(path):\n    \"\"\"Doc.\"\"\"\n    return {}\n"}).to_string();
    let server = FakeServer::start(vec![Reply::OpenaiStream(reply)]).await;
    let mut s = setup(&server.url);
    s.config.llm.json_output = true;
    s.config.llm.model = "qwen2.5-coder:1.5b".into();
    let done = run_on(&s, &job()).await.unwrap();
    assert_eq!(done.summary, "Documented parse_config");
    let req = server.requests.lock().unwrap()[0].clone();
    assert!(
        req.contains("\"response_format\"") && req.contains("json_schema"),
        "{req}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_answered_unchanged_is_asked_for_anew_in_the_last_round() {
    let echo = "```python\ndef parse_config(path):\n    return {}\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(echo.into()),
        Reply::OpenaiStream(echo.into()),
        Reply::OpenaiStream("```python\ndef parse_config(path):\n    return []\n```".into()),
    ])
    .await;
    let mut s = setup(&server.url);
    s.config.llm.model = "qwen2.5-coder:0.5b".into();
    let job = Job {
        spec: TaskSpec {
            task: "make parse_config return an empty list".into(),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    assert_eq!(done.rounds, 3);
    assert!(
        done.summary.contains("written anew"),
        "the human is told: {}",
        done.summary
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("exactly as it was") && requests[1].contains("return {}"),
        "the first repair keeps the conversation: {}",
        requests[1]
    );
    let last = &requests[2];
    assert!(
        last.contains("anew") && last.contains("def parse_config(path)"),
        "{last}"
    );
    assert!(
        !last.contains("return {}"),
        "the old code is not there to copy: {last}"
    );
    let text = Overlay::new(&s.store, "ag", 1 << 20)
        .read_text(&crate::paths::ProjectPath::parse("app.py").unwrap())
        .unwrap();
    assert_eq!(text, "def parse_config(path):\n    return []\n");
}

#[test]
fn the_prompt_form_follows_the_model_size() {
    let mut c = Config::default();
    c.llm.model = "qwen2.5-coder:7b".into();
    assert_eq!(choose_form(&c, true), EditForm::Program);
    c.llm.model = "qwen2.5-coder:1.5b".into();
    assert_eq!(choose_form(&c, true), EditForm::Definitions);
    assert_eq!(
        choose_form(&c, false),
        EditForm::Program,
        "no target file: only a program can find it"
    );
    c.llm.edit_form = crate::config::EditFormSetting::Program;
    assert_eq!(choose_form(&c, true), EditForm::Program);
}

#[test]
fn a_per_model_edit_form_overrides_the_general_one() {
    use crate::config::EditFormSetting;
    let mut c = Config::default();
    c.llm.edit_forms = [
        ("*0.5B*".to_owned(), EditFormSetting::Program),
        ("qwen2.5-coder:7b".to_owned(), EditFormSetting::Definitions),
        ("*:7b".to_owned(), EditFormSetting::Program),
    ]
    .into();
    c.llm.model = "qwen2.5-coder:7b".into();
    assert_eq!(
        choose_form(&c, true),
        EditForm::Definitions,
        "an exact name wins over a glob"
    );
    c.llm.model = "Qwen/qwen2.5-coder-0.5b-instruct".into();
    assert_eq!(choose_form(&c, true), EditForm::Program, "glob, any case");
    c.llm.model = "qwen2.5-coder:1.5b".into();
    assert_eq!(
        choose_form(&c, true),
        EditForm::Definitions,
        "no entry: edit_form (auto) decides by size"
    );
}

// ---- tool mode ----------------------------------------------------------

fn call(tool: &str, args: serde_json::Value) -> Reply {
    Reply::OpenaiStream(serde_json::json!({"tool": tool, "args": args}).to_string())
}

/// Tool mode against a fake llama.cpp server (it answers `/props`, so the
/// text protocol is used).
async fn run_tools(
    script: Vec<Reply>,
    max_iterations: usize,
) -> (Result<Done, AgentError>, Setup, FakeServer) {
    run_tools_with(script, Some(8192), |c| {
        c.agents.max_iterations = max_iterations
    })
    .await
}

/// Tool mode against a fake server that reports a context window (like
/// llama.cpp) or not (`window: None`), under the config `tweak` makes.
async fn run_tools_with(
    script: Vec<Reply>,
    window: Option<u32>,
    tweak: impl FnOnce(&mut Config),
) -> (Result<Done, AgentError>, Setup, FakeServer) {
    let job = Job {
        spec: TaskSpec {
            mode: Some("tools".into()),
            ..job().spec
        },
        ..job()
    };
    run_job(script, window, tweak, job).await
}

/// `job` against a fake server, under the config `tweak` makes.
async fn run_job(
    script: Vec<Reply>,
    window: Option<u32>,
    tweak: impl FnOnce(&mut Config),
    job: Job,
) -> (Result<Done, AgentError>, Setup, FakeServer) {
    let server = FakeServer::start_with_window(script, window).await;
    let mut s = setup(&server.url);
    tweak(&mut s.config);
    let r = run_on(&s, &job).await;
    (r, s, server)
}

fn overlay_text(s: &Setup) -> Option<String> {
    overlay_file(s, "app.py")
}

const DOCSTRING: &str =
    "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_mode_reads_writes_and_submits_and_asks_for_json() {
    let (r, s, server) = run_tools(
        vec![
            call("read_file", serde_json::json!({"path": "app.py"})),
            call("write_file", serde_json::json!({"path": "app.py", "content": DOCSTRING})),
            Reply::OpenaiStream(format!("```json\n{}\n```", serde_json::json!({"tool": "submit_result", "args": {"summary": "docstring", "changed_files": ["app.py"]}}))),
        ],
        10,
    )
    .await;
    let done = r.unwrap();
    assert_eq!(
        (done.summary.as_str(), done.form, done.rounds),
        ("docstring", "tools", 3)
    );
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].contains("response_format"),
        "constrained output asked: {}",
        requests[0]
    );
    assert!(
        requests[1].contains("\\\"ok\\\":true") && requests[1].contains("def parse_config"),
        "the file went back: {}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_mode_errors_go_back_to_the_model() {
    let (r, s, server) = run_tools(
        vec![
            Reply::OpenaiStream("{\"tool\": \"read_file\", \"args\": {\"path\": ".into()),
            call("rm_rf", serde_json::json!({})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": 5}),
            ),
            call(
                "write_file",
                serde_json::json!({"path": "../outside.py", "content": "x"}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "nothing", "changed_files": []}),
            ),
            // Asked for a code block after the empty submit: a broken one.
            Reply::OpenaiStream("```python\ndef parse_config(path:\n    return {}\n```".into()),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "fixed", "changed_files": ["app.py"]}),
            ),
        ],
        10,
    )
    .await;
    assert_eq!(r.unwrap().summary, "fixed");
    let requests = server.requests.lock().unwrap().clone();
    let told = |i: usize, what: &str| {
        assert!(
            requests[i].contains(what),
            "request {i} should say {what:?}: {}",
            requests[i]
        );
    };
    told(1, "not closed");
    told(2, "There is no tool `rm_rf`");
    told(3, "must be a str");
    told(4, "outside");
    told(5, "no file is changed yet");
    told(6, "not valid Python");
    assert!(
        !requests[6].contains("Next: if the task is done"),
        "no submit after a failed write"
    );
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_stops_proposes_what_it_wrote_at_the_limit() {
    // It writes the change, then keeps looking instead of submitting (6
    // of 20 tool-mode tasks, 1.5B): the change is checked as any
    // proposal's and proposed, said to be cut.
    let mut script = vec![call(
        "write_file",
        serde_json::json!({"path": "app.py", "content": DOCSTRING}),
    )];
    script.extend((0..5).map(|_| call("read_file", serde_json::json!({"path": "app.py"}))));
    let (r, s, _server) = run_tools(script, 4).await;
    let done = r.unwrap();
    assert_eq!(done.changed_files, ["app.py"]);
    assert!(
        done.summary.contains("did not finish within 4 tool calls"),
        "{}",
        done.summary
    );
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_refused_for_changing_nothing_asks_for_the_change_as_a_code_block() {
    // 1.5B wrote parse_config back unchanged and reformatted a function the
    // task does not name, which the gate put back; told at submit that
    // nothing changed, it did both again until the call limit (eval,
    // doc-parse-config: 10 calls). Asked for a block, it writes the change.
    const APP: &str =
        "def parse_config(path):\n    return {}\n\n\ndef greet(name):\n    return 'hi ' + name\n";
    let submit = || {
        call(
            "submit_result",
            serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
        )
    };
    let server = FakeServer::start_with_window(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": APP.replace("'hi ' + name", "f'hi {name}'")}),
            ),
            submit(),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            submit(),
        ],
        Some(8192),
    )
    .await;
    let s = setup(&server.url);
    s.store
        .stable_put("app.py", APP.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    let job = Job {
        spec: TaskSpec {
            mode: Some("tools".into()),
            ..job().spec
        },
        ..job()
    };
    assert_eq!(run_on(&s, &job).await.unwrap().summary, "docstring");
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[2].contains("exactly as it was") && requests[2].contains("```python block"),
        "told and asked for a block: {}",
        requests[2]
    );
    assert!(!requests[2].contains("response_format"), "{}", requests[2]);
    assert_eq!(
        overlay_text(&s).as_deref(),
        Some(format!("{DOCSTRING}\n\ndef greet(name):\n    return 'hi ' + name\n").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_model_gives_a_write_its_path_and_sends_the_code_as_a_block() {
    // Tool mode with 1.5B passed 39/73 of the small set, most failures a
    // first write whose code, inside a JSON string, lost the change; in a
    // block (code mode's form) the same model passes nine in ten.
    let submit = || {
        call(
            "submit_result",
            serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
        )
    };
    for (tool, block) in [
        ("write_definitions", DOCSTRING.to_owned()),
        ("write_file", DOCSTRING.to_owned()),
    ] {
        let (r, s, server) = run_tools_with(
            vec![
                call(tool, serde_json::json!({"path": "app.py"})),
                Reply::OpenaiStream(format!("```python\n{block}```")),
                submit(),
            ],
            Some(8192),
            |c| c.llm.model = "qwen2.5-coder:1.5b".into(),
        )
        .await;
        assert_eq!(r.unwrap().summary, "docstring", "{tool}");
        assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING), "{tool}");
        let requests = server.requests.lock().unwrap().clone();
        assert!(
            requests[0].contains(&format!("- {tool}(path: string): "))
                && !requests[0].contains("\"code\":{")
                && !requests[0].contains("\"content\":{"),
            "{tool} takes only a path: {}",
            requests[0]
        );
        assert!(
            requests[1].contains("```python block") && !requests[1].contains("response_format"),
            "{tool}: the code asked as a block: {}",
            requests[1]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_sent_where_a_code_block_was_asked_is_asked_for_again_not_written() {
    // Asked for a new test file's code as a block, 1.5B answered with the
    // JSON it was just shown as the call's result (`{"ok": true, …}`): it
    // was written as the file (eval, new-mathutil-tests), whose tests then
    // failed on `true`. JSON is no Python file's content: asked again.
    let (r, s, server) = run_tools_with(
        vec![
            call("write_file", serde_json::json!({"path": "app.py"})),
            Reply::OpenaiStream("{\n  \"ok\": true,\n  \"result\": \"send the code\"\n}".into()),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        Some(8192),
        |c| c.llm.model = "qwen2.5-coder:1.5b".into(),
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        !requests[1].contains("\\\"ok\\\":true"),
        "the path-only write's answer is no JSON to copy: {}",
        requests[1]
    );
    assert!(
        requests[2].contains("not the code") && requests[2].contains("whole new content"),
        "told, and the whole file asked for again: {}",
        requests[2]
    );
    assert!(!requests[2].contains("response_format"), "{}", requests[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_code_does_not_parse_is_asked_again_as_a_code_block() {
    // Under the JSON grammar 1.5B put its code on one line ("def mean(xs):
    // return … def median(xs): …") and sent that same call ten times
    // (eval, mean-empty). In a block it writes lines.
    let one_line = "def parse_config(path): \"\"\"Parse.\"\"\" return {}";
    let (r, s, server) = run_tools(
        vec![
            call(
                "write_definitions",
                serde_json::json!({"path": "app.py", "code": one_line}),
            ),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        10,
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("not valid Python") && requests[1].contains("```python block"),
        "told and asked for a block: {}",
        requests[1]
    );
    assert!(!requests[1].contains("response_format"), "{}", requests[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_for_going_round_in_a_loop_is_asked_again_as_a_code_block() {
    // 1.5B under the JSON grammar wrote the file into `code` over and over
    // until the token limit (eval, slugify-underscore: 234 s, twice). The
    // loop is cut as it streams; the next reply is asked as a code block,
    // which small models write right.
    let block =
        "def parse_config(path):\n    return {}\n\n\ndef unrelated_helper(x):\n    return x\n\n\n";
    let looping = serde_json::json!({"tool": "write_definitions", "args": {"path": "app.py", "code": block.repeat(8)}});
    let (r, s, server) = run_tools(
        vec![
            Reply::OpenaiStream(looping.to_string()),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        10,
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("went round in a loop") && requests[1].contains("```python block"),
        "told why and asked for a block: {}",
        requests[1]
    );
    assert!(
        !requests[1].contains("response_format"),
        "a block, not JSON: {}",
        requests[1]
    );
    assert!(
        requests[1].matches("unrelated_helper").count() <= 1,
        "the loop is not sent back: {}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_block_cut_for_a_loop_neither_the_cut_code_nor_the_error_is_taken_as_the_file() {
    // eval, new-text-tests (1.5B): its test file went round in a loop and
    // was cut; it then answered with the error it was told, as JSON (with
    // "```python" inside the string), which was written as the file; later
    // it copied the cut start kept in the conversation, which ends in "…",
    // and, when a note took its place, the note.
    let looping = format!(
        "```python\ndef parse_config(path):\n{}",
        "    assert slugify('a and more and more and more and more') == 'a-and-more'\n".repeat(12)
    );
    let echo = serde_json::json!({"ok": false, "error": "Your reply went round in a loop. Now reply in one ```python block"});
    let submit = call(
        "submit_result",
        serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
    );
    let (r, s, server) = run_tools_with(
        vec![
            call("write_file", serde_json::json!({"path": "app.py"})),
            Reply::OpenaiStream(looping),
            Reply::OpenaiStream(echo.to_string()),
            // (then the note the cut reply left, copied)
            Reply::OpenaiStream("(code that went round in a loop, cut)".into()),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            submit,
        ],
        Some(8192),
        |c| c.llm.model = "qwen2.5-coder:1.5b".into(),
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[2].contains("went round in a loop") && requests[2].contains("whole new content"),
        "{}",
        requests[2]
    );
    assert!(
        !requests[3].contains("(path):\\n    assert"),
        "no cut code left to copy: {}",
        requests[3]
    );
    assert!(requests[3].contains("not the code"), "{}", requests[3]);
    assert!(
        requests[4].contains("no fenced code block"),
        "{}",
        requests[4]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_only_read_is_asked_once_for_the_code_itself_at_the_limit() {
    let mut script: Vec<Reply> = (0..4)
        .map(|_| call("read_file", serde_json::json!({"path": "app.py"})))
        .collect();
    script.push(Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")));
    let (r, s, server) = run_tools(script, 4).await;
    let done = r.unwrap();
    assert!(
        done.summary.contains("one request for the code itself"),
        "{}",
        done.summary
    );
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    assert_eq!(
        server.requests.lock().unwrap().len(),
        5,
        "four calls and one last request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_whose_writes_never_pass_is_asked_once_for_the_code_itself_at_the_limit() {
    // 0.5B wrote text.py back as it was and submitted, three times over,
    // until the limit (eval, title-case-first): asked for the code alone,
    // it may still write the change.
    const APP: &str = "def parse_config(path):\n    return {}\n";
    let mut script = Vec::new();
    for _ in 0..2 {
        script.push(call(
            "write_file",
            serde_json::json!({"path": "app.py", "content": format!("{APP}\n")}),
        ));
        script.push(call(
            "submit_result",
            serde_json::json!({"summary": "done", "changed_files": ["app.py"]}),
        ));
    }
    script.push(Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")));
    let (r, s, server) = run_tools(script, 4).await;
    let done = r.unwrap();
    assert!(
        done.summary.contains("one request for the code itself"),
        "{}",
        done.summary
    );
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    assert_eq!(server.requests.lock().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_that_documents_nothing_asked_asks_for_the_change_as_a_code_block() {
    // 0.5B, asked to document parse_config, added an import and a
    // function and submitted (eval, doc-parse-config).
    let import = "import json\n\n\ndef parse_config(path):\n    return {}\n";
    let (r, s, server) = run_tools(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": import}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "done", "changed_files": ["app.py"]}),
            ),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        10,
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert!(overlay_text(&s).is_some_and(|t| t.contains("Parse the config")));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[2].contains("adds none to `parse_config` (app.py)")
            && requests[2].contains("```python block"),
        "{}",
        requests[2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_stops_and_wrote_nothing_fails_at_the_limit() {
    let script = (0..6)
        .map(|_| call("get_file_tree", serde_json::json!({})))
        .collect();
    let (r, s, _server) = run_tools(script, 4).await;
    match r {
        Err(e @ AgentError::TooManySteps(4)) => {
            assert!(e.to_string().contains("within 4 tool calls"), "{e}")
        }
        other => panic!("expected the iteration limit, got {other:?}"),
    }
    assert!(
        s.store.overlay_entries("ag").unwrap().is_empty(),
        "nothing written"
    );
}

// ---- capabilities ---------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_attempts_are_refused_and_secrets_never_reach_the_model() {
    let attempts = "```python\nout = []\nfor p in ['.env', 'keys/site.pem', '../outside.txt', '/etc/passwd', 'config/.env.local']:\n    try:\n        out.append(read_file(p))\n    except Exception as e:\n        out.append('ERR ' + str(e))\nfor p in ['.env', '../x.py', 'a/../../x.py']:\n    try:\n        write_file(p, 'x')\n    except Exception as e:\n        out.append('ERR ' + str(e))\nout.append(str(search_files('TOP_SECRET')))\nout.append(str(search_files('*.pem')))\nlog(' | '.join(out))\nraise Exception(' | '.join(out))\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(attempts.into()),
        Reply::OpenaiStream(GOOD.into()),
    ])
    .await;
    let s = setup(&server.url);
    for (p, data) in [
        (".env", "TOKEN=TOP_SECRET\n"),
        ("keys/site.pem", "TOP_SECRET pem\n"),
        ("config/.env.local", "TOP_SECRET=1\n"),
    ] {
        s.store
            .stable_put(p, data.as_bytes(), 0o600, 0, 1 << 20)
            .unwrap();
    }
    let r = run_on(&s, &job()).await;
    assert!(r.is_ok(), "{r:?}");
    let requests = server.requests.lock().unwrap().clone();
    let repair = &requests[1];
    assert!(
        !repair.contains("TOKEN=") && !repair.contains("TOP_SECRET pem"),
        "a secret leaked: {repair}"
    );
    assert_eq!(
        repair.matches("secret pattern").count(),
        4,
        "three reads and one write of secrets refused: {repair}"
    );
    assert!(repair.contains("[]"), "searches find no secret: {repair}");
    assert!(!repair.contains("root:"), "/etc/passwd was not read");
    let denied = s
        .store
        .events_since(0)
        .unwrap()
        .into_iter()
        .filter(|e| e.2 == "denied")
        .count();
    assert_eq!(denied, 4, "each refusal is logged");
    // Nothing was written outside the rules.
    let entries: Vec<String> = s
        .store
        .overlay_entries("ag")
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(entries, ["app.py"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readonly_agent_writes_nothing_and_a_secret_target_is_refused_at_once() {
    let server = FakeServer::start(vec![Reply::OpenaiStream(GOOD.into()); 3]).await;
    let s = setup(&server.url);
    let ro = Job {
        spec: TaskSpec {
            capabilities: Some("readonly".into()),
            ..job().spec
        },
        ..job()
    };
    let r = run_on(&s, &ro).await;
    let err = r.unwrap_err().to_string();
    assert!(err.contains("may not write"), "{err}");
    assert!(s.store.overlay_entries("ag").unwrap().is_empty());
    s.store
        .stable_put(".env", b"TOKEN=TOP_SECRET\n", 0o600, 0, 1 << 20)
        .unwrap();
    // Typed in the secret's buffer, about nothing else: the buffer is the place.
    let on_secret = Job {
        spec: TaskSpec {
            task: "add a comment on top".into(),
            file: Some(".env".into()),
            ..job().spec
        },
        ..job()
    };
    let before = server.requests.lock().unwrap().len();
    let r = run_on(&s, &on_secret).await;
    assert!(
        matches!(r, Err(AgentError::Denied(ref e)) if e.contains("secret pattern")),
        "{r:?}"
    );
    assert_eq!(
        server.requests.lock().unwrap().len(),
        before,
        "the model was never asked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_mode_can_replace_one_definition() {
    let (r, s, server) = run_tools(
        vec![
            // Written back unchanged: said at once, not at submit_result.
            call(
                "write_definitions",
                serde_json::json!({"path": "app.py", "code": "def parse_config(path):\n    return {}\n"}),
            ),
            // Then asked for a block, not JSON, it makes the change.
            Reply::OpenaiStream(format!("Here it is:\n```python\n{DOCSTRING}```")),
            call("submit_result", serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]})),
        ],
        10,
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(second.contains("would stay exactly as it was"), "{second}");
    assert!(
        second.contains("```python block") && second.contains("The task: add a docstring"),
        "{second}"
    );
    assert!(
        !second.contains("response_format"),
        "no JSON grammar: {second}"
    );
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_sees_the_agents_change_only_when_allowed() {
    let program = "```python\nwrite_file('app.py', 'def parse_config(path):\\n    \"\"\"Parse.\"\"\"\\n    return {}\\n')\nout = run_command(['cat', 'app.py'])\nif 'Parse.' not in out:\n    raise Exception('not seen: ' + out)\nsubmit_result('checked', ['app.py'])\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(program.into()),
        Reply::OpenaiStream(program.into()),
        Reply::OpenaiStream(GOOD.into()),
    ])
    .await;
    let mut s = setup(&server.url);
    s.config.capabilities.commands = vec!["cat".into()];
    let dev = Job {
        spec: TaskSpec {
            capabilities: Some("developer".into()),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &dev).await.unwrap();
    assert_eq!(done.summary, "checked");
    let effects = s.store.effects(0, Some("command")).unwrap();
    assert_eq!(effects.len(), 1);
    assert_eq!(effects[0].input, "cat app.py");
    assert!(
        effects[0].output.starts_with("exit status 0"),
        "{}",
        effects[0].output
    );
    // The default preset runs nothing: the program's error says why.
    s.store.overlay_clear("ag").unwrap();
    let r = run_on(&s, &job()).await;
    assert!(r.is_ok(), "the repair round succeeds: {r:?}");
    let repair = server.requests.lock().unwrap()[2].clone();
    assert!(
        repair.contains("running \\\"cat\\\" is not allowed"),
        "{repair}"
    );
    assert_eq!(
        s.store.effects(0, Some("command")).unwrap().len(),
        1,
        "nothing else ran"
    );
}

/// An agent's `run_command` runs in the project's own environment, as
/// its tests do: `python3` is the project's `.venv`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_runs_in_the_projects_own_venv() {
    let program = "```python\nout = run_command(['python3', '-c', 'import sys; print(sys.prefix)'])\nif '.venv' not in out:\n    raise Exception('not the venv: ' + out)\nwrite_file('app.py', 'def parse_config(path):\\n    \\\"\\\"\\\"Parse.\\\"\\\"\\\"\\n    return {}\\n')\nsubmit_result('in the venv', ['app.py'])\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(program.into()),
        Reply::OpenaiStream(program.into()),
    ])
    .await;
    let mut s = setup(&server.url);
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(s.store.root().join(".venv"))
        .status()
        .unwrap();
    assert!(made.success());
    s.config.capabilities.commands = vec!["python3".into()];
    let dev = Job {
        spec: TaskSpec {
            capabilities: Some("developer".into()),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &dev).await;
    let asked = server.requests.lock().unwrap().clone();
    assert_eq!(
        done.map(|d| d.summary).ok().as_deref(),
        Some("in the venv"),
        "{:?}",
        asked.get(1)
    );
}

fn submit(summary: &str) -> Reply {
    call(
        "submit_result",
        serde_json::json!({"summary": summary, "changed_files": ["app.py"]}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_tool_calls_are_used_where_the_server_is_not_llama_cpp() {
    let args = |v: serde_json::Value| v.to_string();
    let (r, s, server) = run_tools_with(
        vec![
            Reply::OpenaiToolCall(
                "read_file".into(),
                args(serde_json::json!({"path": "app.py"})),
            ),
            Reply::OpenaiToolCall(
                "write_file".into(),
                args(serde_json::json!({"path": "app.py", "content": DOCSTRING})),
            ),
            // A reply in the text protocol is still understood.
            submit("docstring"),
        ],
        None,
        |_| {},
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests[0].contains("\"tools\":[") && !requests[0].contains("response_format"));
    assert!(requests[0].contains("\"name\":\"write_definitions\""));
    // The call is in the history as a call, its result as a tool message.
    assert!(
        requests[1].contains("\"tool_calls\":[") && requests[1].contains("\"role\":\"tool\""),
        "{}",
        requests[1]
    );
    assert!(requests[1].contains("\"tool_call_id\":\"call_read_file\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_protocol_can_be_forced_and_native_calls_with_bad_json_go_back() {
    let (r, _s, server) = run_tools_with(
        vec![
            Reply::OpenaiToolCall("read_file".into(), "{\"path\": ".into()),
            Reply::OpenaiToolCall(
                "write_file".into(),
                serde_json::json!({"path": "app.py", "content": DOCSTRING}).to_string(),
            ),
            submit("ok"),
        ],
        None,
        |c| c.agents.tool_calls = crate::config::ToolCalls::Native,
    )
    .await;
    assert_eq!(r.unwrap().summary, "ok");
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("args") && requests[1].contains("must be a JSON object"),
        "{}",
        requests[1]
    );
    let (_, _, server) = run_tools_with(vec![submit("x")], None, |c| {
        c.agents.tool_calls = crate::config::ToolCalls::Text
    })
    .await;
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests[0].contains("response_format") && !requests[0].contains("\"tools\":["));
}

fn mcp_config(c: &mut Config, log: &std::path::Path, allow: &[&str]) {
    c.mcp.servers.insert(
        "t".into(),
        crate::mcp::ServerConfig {
            command: vec![
                "python3".into(),
                format!("{}/tests/mcp_server.py", env!("CARGO_MANIFEST_DIR")),
            ],
            env: [("MCP_LOG".to_owned(), log.display().to_string())].into(),
            url: None,
            pass_env: vec![],
        },
    );
    c.capabilities.mcp = allow.iter().map(|s| s.to_string()).collect();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_join_the_registry_gated_by_capabilities_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let marker = dir.path().join("marker");
    let (r, s, server) = run_tools_with(
        vec![
            call("t.add", serde_json::json!({"a": 1, "b": 2})),
            call(
                "t.write_marker",
                serde_json::json!({"path": marker.display().to_string()}),
            ),
            call("t.echo", serde_json::json!({"text": "hello"})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            submit("with mcp"),
        ],
        Some(8192),
        |c| mcp_config(c, &log, &["t.echo", "t.write_*"]),
    )
    .await;
    assert_eq!(r.unwrap().summary, "with mcp");
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].contains("t.echo(text: string)"),
        "{}",
        requests[0]
    );
    assert!(
        !requests[0].contains("t.add("),
        "a tool not allowed is not offered"
    );
    assert!(requests[1].contains("There is no tool `t.add`"));
    assert!(marker.exists(), "the allowed MCP call ran");
    assert!(requests[3].contains("hello"), "{}", requests[3]);
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("call"))
        .map(str::to_owned)
        .collect();
    assert_eq!(calls.len(), 2, "t.add never reached the server: {calls:?}");
    let effects = s.store.effects(0, Some("mcp")).unwrap();
    assert_eq!(effects.len(), 2);
    assert!(effects[0].input.starts_with("t.write_marker"));
    assert_eq!(effects[1].output, "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_mcp_capability_no_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let (r, _s, server) = run_tools_with(
        vec![
            call("t.echo", serde_json::json!({"text": "x"})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            submit("no mcp"),
        ],
        Some(8192),
        |c| mcp_config(c, &log, &[]),
    )
    .await;
    assert!(r.is_ok());
    assert!(!log.exists(), "the server was started");
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests[1].contains("There is no tool `t.echo`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_calls_mcp_tools_under_the_same_capabilities_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let program = r#"```python
out = mcp_call("t", "echo", {"text": "hi there", "n": [1, 2.5, None, True]})
for server, tool, a in [("t", "add", {"a": 1, "b": 2}), ("nosuch", "x", {}), ("t", "nosuch", {}), ("t", "echo", "text")]:
    try:
        mcp_call(server, tool, a)
    except Exception as e:
        out = out + "\n" + str(e)
write_file("notes.txt", out)
submit_result("called mcp", ["notes.txt"])
```"#;
    let (r, s, server) = run_job(
        vec![Reply::OpenaiStream(program.into())],
        None,
        |c| mcp_config(c, &log, &["t.echo", "t.nosuch"]),
        job(),
    )
    .await;
    assert_eq!(r.unwrap().summary, "called mcp");
    let prompt = server.requests.lock().unwrap()[0].clone();
    assert!(
        prompt.contains("mcp_call(server, tool, args)") && prompt.contains("server (t)"),
        "{prompt}"
    );
    let notes = overlay_file(&s, "notes.txt").unwrap();
    let lines: Vec<&str> = notes.lines().collect();
    assert!(lines[0].contains("hi there"), "{notes}");
    assert!(lines[1].contains("\"t.add\" is not allowed"), "{notes}");
    assert!(
        lines[2].contains("no MCP server `nosuch` (mcp.servers has: t)"),
        "{notes}"
    );
    assert!(lines[3].contains("nosuch"), "{notes}");
    assert!(lines[4].contains("`args` must be a dict"), "{notes}");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        calls.lines().filter(|l| l.starts_with("call")).count(),
        1,
        "{calls}"
    );
    let effects = s.store.effects(0, Some("mcp")).unwrap();
    assert_eq!(effects.len(), 2, "{effects:?}");
    assert!(effects[0].input.starts_with("t.echo"), "{effects:?}");
    assert!(effects[1].output.starts_with("error:"), "{effects:?}");
    let denied = s.store.events_since(0).unwrap();
    assert!(
        denied
            .iter()
            .any(|e| e.2 == "denied" && e.3.contains("t.add")),
        "{denied:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_rolls_its_own_overlay_back_to_a_checkpoint() {
    let program = r#"```python
write_file("app.py", "def parse_config(path):\n    \"\"\"Parse.\"\"\"\n    return {'ok': True}\n")
name = snapshot("works")
write_file("app.py", "def parse_config(path:\n")
write_file("junk.py", "junk\n")
delete_file("app.py")
ask_llm("is this right?")
log(rollback(name))
try:
    rollback("nosuch")
except Exception as e:
    log(str(e))
log(snapshot())
submit_result("tried, then went back", ["app.py"])
```"#;
    let developer = Job {
        spec: TaskSpec {
            capabilities: Some("developer".into()),
            ..job().spec
        },
        ..job()
    };
    let (r, s, server) = run_job(
        vec![
            Reply::OpenaiStream(program.into()),
            Reply::OpenaiStream("no".into()),
        ],
        None,
        |_| {},
        developer,
    )
    .await;
    assert_eq!(r.unwrap().summary, "tried, then went back");
    assert!(server.requests.lock().unwrap()[0].contains("- rollback(name) -> str"));
    assert_eq!(
        overlay_text(&s).unwrap(),
        "def parse_config(path):\n    \"\"\"Parse.\"\"\"\n    return {'ok': True}\n"
    );
    assert!(
        overlay_file(&s, "junk.py").is_none(),
        "written after the checkpoint"
    );
    let log = s.store.agent("ag").unwrap().log;
    assert!(
        log[0].contains("as at checkpoint `works`")
            && log[0].contains("Not undone: 1")
            && log[0].contains("llm"),
        "{log:?}"
    );
    assert!(
        log[1].contains("no checkpoint `nosuch`") && log[1].contains("are: works"),
        "{log:?}"
    );
    assert_eq!(log[2], "checkpoint-2");
    let human = s.store.stable_entry("app.py").unwrap().unwrap();
    assert_eq!(
        s.store.blob(&human.hash).unwrap(),
        b"def parse_config(path):\n    return {}\n",
        "the human's file is as it was"
    );

    // Under the default preset (sandbox) neither is offered nor allowed.
    let program = r#"```python
try:
    snapshot("x")
except Exception as e:
    log(str(e))
write_file("app.py", "x = 1\n")
submit_result("no checkpoints", ["app.py"])
```"#;
    let (r, s, server) = run_job(
        vec![Reply::OpenaiStream(program.into())],
        None,
        |_| {},
        job(),
    )
    .await;
    r.unwrap();
    assert!(!server.requests.lock().unwrap()[0].contains("snapshot("));
    let log = s.store.agent("ag").unwrap().log;
    assert!(
        log[0].contains("checkpoints are not allowed (capabilities.snapshot"),
        "{log:?}"
    );
    assert!(s.store.checkpoints("ag").unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_mode_offers_checkpoints_where_allowed() {
    let (r, s, server) = run_tools_with(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            call("snapshot", serde_json::json!({})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": "broken(\n"}),
            ),
            call("rollback", serde_json::json!({"name": "checkpoint-1"})),
            submit("rolled back"),
        ],
        Some(8192),
        |c| {
            c.capabilities.snapshot = Some(true);
            c.capabilities.rollback = Some(true);
        },
    )
    .await;
    assert_eq!(r.unwrap().summary, "rolled back");
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].contains("rollback(name: string)"),
        "{}",
        requests[0]
    );
    assert!(
        requests[2].contains("checkpoint-1"),
        "the name goes back to the model"
    );
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
}

/// A SearXNG-like endpoint answering every request with `results`.
async fn fake_search(results: serde_json::Value) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            seen2
                .lock()
                .unwrap()
                .push(head.lines().next().unwrap_or("").to_owned());
            let body = serde_json::json!({"results": results}).to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_and_system_stats_answer_and_the_search_is_logged() {
    let (url, seen) = fake_search(serde_json::json!([
        {"title": "Tree-sitter docs", "url": "https://tree-sitter.github.io", "content": "Parsing."},
    ]))
    .await;
    let (r, s, server) = run_tools_with(
        vec![
            call(
                "web_search",
                serde_json::json!({"query": "tree sitter & python"}),
            ),
            call("system_stats", serde_json::json!({})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            submit("searched"),
        ],
        Some(8192),
        |c| {
            c.tools.web_search_url = Some(url.clone());
            c.capabilities.hosts = vec!["127.0.0.1".into()];
        },
    )
    .await;
    assert_eq!(r.unwrap().summary, "searched");
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests[0].contains("web_search(query: string)"));
    assert!(requests[1].contains("Tree-sitter docs"), "{}", requests[1]);
    assert!(requests[2].contains("cpus"), "{}", requests[2]);
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with("GET /search?q=tree+sitter+%26+python&format=json"),
        "{asked:?}"
    );
    let effects = s.store.effects(0, Some("network")).unwrap();
    assert_eq!(effects.len(), 1);
    assert!(effects[0].input.contains("tree sitter & python"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_is_not_offered_without_an_endpoint_or_an_allowed_host() {
    let (url, seen) = fake_search(serde_json::json!([])).await;
    let (_, _, server) = run_tools_with(
        vec![call("web_search", serde_json::json!({"query": "x"}))],
        Some(8192),
        |c| {
            c.tools.web_search_url = Some(url.clone());
            c.agents.max_iterations = 1;
        },
    )
    .await;
    let requests = server.requests.lock().unwrap().clone();
    assert!(!requests[0].contains("web_search("));
    assert!(seen.lock().unwrap().is_empty(), "the host was not allowed");
    let (_, _, server) = run_tools_with(vec![], Some(8192), |c| {
        c.capabilities.hosts = vec!["127.0.0.1".into()];
        c.agents.max_iterations = 1;
    })
    .await;
    let requests = server.requests.lock().unwrap().clone();
    assert!(!requests[0].contains("web_search("));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_whose_same_call_is_repeated_leaves_the_grammar() {
    let read = || call("read_file", serde_json::json!({"path": "app.py"}));
    let (r, _s, server) = run_tools(
        vec![
            read(),
            read(),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            submit("done"),
        ],
        10,
    )
    .await;
    assert!(r.is_ok());
    let requests = server.requests.lock().unwrap().clone();
    let offers_read = |i: usize| requests[i].contains("\"const\":\"read_file\"");
    assert!(offers_read(0) && offers_read(1));
    assert!(!offers_read(2), "read_file is gone after the repeat");
    assert!(!offers_read(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_empty_submit_the_next_step_can_only_write() {
    let unchanged = "def parse_config(path):\n    return {}\n";
    let (r, s, server) = run_tools(
        vec![
            // What 1.5B did: the file written back as it was, then submitted.
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": unchanged}),
            ),
            submit("done"),
            // Asked for a block, it writes the change.
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            submit("done"),
        ],
        10,
    )
    .await;
    assert!(r.unwrap().summary.starts_with("done"));
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
    let requests = server.requests.lock().unwrap().clone();
    let offers = |i: usize, tool: &str| requests[i].contains(&format!("\"const\":\"{tool}\""));
    assert!(offers(1, "submit_result"));
    assert!(
        requests[2].contains("no file is changed yet"),
        "{}",
        requests[2]
    );
    assert!(
        requests[2].contains("in one ```python block") && !offers(2, "write_file"),
        "the next reply is a code block, not a JSON call: {}",
        requests[2]
    );
    assert!(
        offers(3, "submit_result"),
        "a write that changed something frees it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_request_acts_before_it_may_reply_and_an_echo_is_no_answer() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let job = Job {
        spec: TaskSpec {
            mode: Some("tools".into()),
            ..job().spec
        },
        chat: Some(tools::ChatTurn {
            history: vec![],
            events: tx,
        }),
        ..job()
    };
    let task = job.spec.task.clone();
    let (r, _s, server) = run_job(
        vec![
            // The grammar does not offer reply yet; a model that sends it
            // anyway only repeats the request.
            call("reply", serde_json::json!({"text": task})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            submit("Added a docstring"),
        ],
        Some(8192),
        |_| {},
        job,
    )
    .await;
    let done = r.unwrap();
    assert_eq!(done.changed_files, ["app.py"]);
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests[0].contains("The human is in app.py:"));
    assert!(!requests[0].contains("\"const\":\"reply\""));
    assert!(requests[1].contains("\"const\":\"reply\""));
    assert!(requests[1].contains("that is the human's own message"));
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    assert!(events
        .iter()
        .any(|e| matches!(e, tools::ChatEvent::Delta(_))));
    let steps = events
        .iter()
        .filter(|e| matches!(e, tools::ChatEvent::Step { .. }))
        .count();
    assert_eq!(steps, 1, "the write is a step: {events:?}");
    assert_eq!(
        events.last(),
        Some(&tools::ChatEvent::Reply("Added a docstring".into()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_question_to_a_small_model_is_answered_in_prose() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let job = Job {
        spec: TaskSpec {
            task: "What does parse_config return?".into(),
            mode: Some("tools".into()),
            ..job().spec
        },
        chat: Some(tools::ChatTurn {
            history: vec![ChatMessage::user("hello"), ChatMessage::assistant("Hi.")],
            events: tx,
        }),
        ..job()
    };
    let (r, _s, server) = run_job(
        vec![Reply::OpenaiStream("An empty dict.".into())],
        Some(8192),
        |c| c.llm.model = "qwen2.5-coder-1.5b".into(),
        job,
    )
    .await;
    let done = r.unwrap();
    assert_eq!(
        (done.summary.as_str(), done.form),
        ("An empty dict.", "chat")
    );
    assert!(done.changed_files.is_empty());
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].contains("response_format"), "prose, not JSON");
    assert!(requests[0].contains("Earlier in this chat:\\nHuman: hello\\nYou: Hi."));
    assert!(requests[0].contains("def parse_config(path):"));
    let mut streamed = String::new();
    while let Ok(e) = rx.try_recv() {
        if let tools::ChatEvent::Delta(d) = e {
            streamed.push_str(&d);
        }
    }
    assert_eq!(streamed, "An empty dict.");
}

/// A module too long to show whole: `mean` and 150 other functions.
fn long_module() -> String {
    let mut src = String::from("def mean(xs):\n    return sum(xs) / len(xs) + 1\n");
    for i in 0..150 {
        src.push_str(&format!(
            "\n\ndef helper_{i}(value):\n    return value * {i} + {i}\n"
        ));
    }
    src
}

async fn run_on_module(
    script: Vec<Reply>,
    task: &str,
) -> (Result<Done, AgentError>, Setup, FakeServer) {
    let server = FakeServer::start(script).await;
    let s = setup(&server.url);
    s.store
        .stable_put("stats.py", long_module().as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    let job = Job {
        spec: TaskSpec {
            task: task.into(),
            file: Some("stats.py".into()),
            ..job().spec
        },
        ..job()
    };
    let r = run_on(&s, &job).await;
    (r, s, server)
}

fn stats_text(s: &Setup) -> String {
    Overlay::new(&s.store, "ag", 1 << 20)
        .read_text(&crate::paths::ProjectPath::parse("stats.py").unwrap())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outline_echoed_around_the_fix_changes_only_the_fix() {
    // What Qwen2.5-Coder 1.5B answered on a real package: the signatures it
    // was shown, and the one function it fixed.
    let mut echo = String::from("```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n");
    for i in 0..150 {
        echo.push_str(&format!(
            "\n\ndef helper_{i}(value):  # line {}\n",
            4 + 4 * i
        ));
    }
    echo.push_str("```");
    let (r, s, _server) = run_on_module(
        vec![Reply::OpenaiStream(echo)],
        "fix mean in stats.py: it adds 1",
    )
    .await;
    let done = r.unwrap();
    assert_eq!(done.rounds, 1);
    let want = long_module().replace("len(xs) + 1\n", "len(xs)\n");
    assert_eq!(stats_text(&s), want, "only mean changed; every helper kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_file_that_drops_definitions_gets_them_back_and_stands() {
    // A program that writes the file with only the function it fixed: the
    // fix stands, the definitions it left out (which the task does not
    // name) are put back where they were, and the summary says so.
    let only_mean = "```python\nwrite_file('stats.py', 'def mean(xs):\\n    return sum(xs) / len(xs)\\n')\nsubmit_result('fixed mean', ['stats.py'])\n```";
    let (r, s, server) = run_on_module(
        vec![Reply::OpenaiStream(only_mean.into())],
        "fix mean in stats.py: it adds 1",
    )
    .await;
    let done = r.unwrap();
    assert_eq!(done.rounds, 1, "{}", done.summary);
    assert_eq!(server.requests.lock().unwrap().len(), 1);
    assert!(
        done.summary
            .contains("left out changes the task did not ask for")
            && done.summary.contains("helper_0"),
        "{}",
        done.summary
    );
    assert_eq!(
        stats_text(&s),
        long_module().replace("len(xs) + 1\n", "len(xs)\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_the_task_did_not_ask_for_is_left_out_and_the_summary_says_so() {
    let both = "```python\ndef parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n\n\ndef greet(name):\n    return f\"Hello, {name}!\"\n```";
    let server = FakeServer::start(vec![Reply::OpenaiStream(both.into())]).await;
    let s = setup(&server.url);
    let src = "def parse_config(path):\n    return {}\n\n\ndef greet(name):\n    return 'Hello, ' + name\n";
    s.store
        .stable_put("app.py", src.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    let done = run_on(&s, &job()).await.unwrap();
    assert_eq!(
        overlay_text(&s).unwrap(),
        src.replace(
            "def parse_config(path):\n",
            "def parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n"
        ),
        "greet as it was"
    );
    assert!(
        done.summary
            .contains("left out changes the task did not ask for: app.py: greet"),
        "{}",
        done.summary
    );
}

const MEAN: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const MEAN_TEST: &str = "import unittest\n\nfrom mathx import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n";

/// A project of `mathx.py` and the unittest file that tests it.
fn put_mean_project(s: &Setup, mathx: &str, test: &str) {
    for (path, text) in [("mathx.py", mathx), ("tests/test_mathx.py", test)] {
        s.store
            .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_breaks_the_projects_tests_goes_back_with_the_failure() {
    let broken =
        "```python\ndef mean(xs):\n    \"\"\"The mean of xs.\"\"\"\n    return sum(xs)\n```";
    let good = "```python\ndef mean(xs):\n    \"\"\"The mean of xs.\"\"\"\n    return sum(xs) / len(xs)\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(broken.into()),
        Reply::OpenaiStream(good.into()),
    ])
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, MEAN, MEAN_TEST);
    let job = Job {
        spec: TaskSpec {
            task: "add a docstring to mean in mathx.py".into(),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    assert_eq!(done.rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("tests fail with your change") && second.contains("test_mean"),
        "the failure goes back: {second}"
    );
    assert!(done.summary.contains("tests passed: "), "{}", done.summary);
    // What the human has is untouched: the tests ran in a copy.
    assert_eq!(
        String::from_utf8(
            s.store
                .blob(&s.store.stable_entry("mathx.py").unwrap().unwrap().hash)
                .unwrap()
        )
        .unwrap(),
        MEAN
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tests_that_already_failed_are_not_held_against_the_change_and_off_means_off() {
    let doc = "```python\ndef mean(xs):\n    \"\"\"The mean of xs.\"\"\"\n    return sum(xs) / len(xs)\n```";
    let server = FakeServer::start(vec![Reply::OpenaiStream(doc.into()); 2]).await;
    let mut s = setup(&server.url);
    put_mean_project(&s, MEAN, &MEAN_TEST.replace("), 2)", "), 3)"));
    let job = Job {
        spec: TaskSpec {
            task: "add a docstring to mean in mathx.py".into(),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    assert_eq!(
        done.rounds, 1,
        "no repair for a failure the change did not bring"
    );
    assert!(
        done.summary
            .contains("tests fail with and without this change"),
        "{}",
        done.summary
    );
    s.config.tests.command = crate::config::TestCommand::Named(crate::config::TestsMode::Off);
    s.store.overlay_clear("ag").unwrap();
    let done = run_on(&s, &job).await.unwrap();
    assert!(!done.summary.contains("tests"), "{}", done.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_to_fix_starts_from_the_failing_tests_and_is_not_done_while_they_fail() {
    let buggy = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n";
    let still = "```python\ndef mean(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / (len(xs) + 1)\n```";
    let fixed = "```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(still.into()),
        Reply::OpenaiStream(fixed.into()),
    ])
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, buggy, MEAN_TEST);
    // Typed from a buffer of no file, as a person pastes a failure.
    let fix = Job {
        spec: TaskSpec {
            task: "fix mean in mathx.py: test_mean fails".into(),
            file: None,
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &fix).await.unwrap();
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].contains("tests fail now") && requests[0].contains("test_mean"),
        "the first question shows what fails: {}",
        requests[0]
    );
    // The second try is the first question again, not a conversation
    // around the failed answer (which small models give back as it was).
    assert!(
        requests[1].contains("tests fail now")
            && !requests[1].contains("The mean.")
            && !requests[1].contains("tests still fail with your change"),
        "{}",
        requests[1]
    );
    assert_eq!(done.rounds, 2);
    let proposed = Overlay::new(&s.store, "ag", 1 << 20)
        .read_text(&crate::paths::ProjectPath::parse("mathx.py").unwrap())
        .unwrap();
    assert_eq!(proposed, MEAN);
    assert!(done.summary.contains("tests passed"), "{}", done.summary);
    // A task that fixes nothing is not shown the failures.
    let doc = Job {
        spec: TaskSpec {
            task: "add a docstring to mean in mathx.py".into(),
            ..job().spec
        },
        ..job()
    };
    let server2 = FakeServer::start(vec![Reply::OpenaiStream(still.into())]).await;
    let s2 = setup(&server2.url);
    put_mean_project(&s2, buggy, MEAN_TEST);
    let done = run_on(&s2, &doc).await.unwrap();
    assert_eq!(done.rounds, 1);
    assert!(!server2.requests.lock().unwrap()[0].contains("tests fail now"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_the_tests_ask_for_is_never_asked_for_anew_without_the_old_code() {
    let buggy = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n";
    let echo = format!("```python\n{buggy}```");
    let server = FakeServer::start(vec![Reply::OpenaiStream(echo); 3]).await;
    let mut s = setup(&server.url);
    s.config.agents.candidates = 3;
    put_mean_project(&s, buggy, MEAN_TEST);
    let fix = Job {
        spec: TaskSpec {
            task: "fix mean in mathx.py".into(),
            ..job().spec
        },
        ..job()
    };
    assert!(
        run_on(&s, &fix).await.is_err(),
        "nothing unchanged is proposed"
    );
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2].contains("tests fail now") && !requests[2].contains("anew"),
        "the last round keeps the code and the failures: {}",
        requests[2]
    );
}

#[test]
fn fix_words_are_whole_words() {
    use super::checks::asks_to_fix;
    assert!(asks_to_fix("fix mean in mathx.py"));
    assert!(asks_to_fix("median is broken for even lists"));
    assert!(asks_to_fix("test_slugify FAILS: expected 'a-b'"));
    assert!(!asks_to_fix("add a docstring to prefix_sum"));
    assert!(!asks_to_fix("rename fixture to setup"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_code_the_project_has_no_place_for_goes_where_the_model_says() {
    let variance = "```python\ndef variance(xs):\n    m = mean(xs)\n    return sum((x - m) ** 2 for x in xs) / len(xs)\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream("mathx.py".into()),
        Reply::OpenaiStream(variance.into()),
    ])
    .await;
    let s = setup(&server.url);
    s.store
        .stable_put("mathx.py", MEAN.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    // Typed in a buffer of no file.
    let job = Job {
        spec: TaskSpec {
            task: "add a function variance(xs) returning the population variance".into(),
            file: None,
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    let first = server.requests.lock().unwrap()[0].clone();
    assert!(
        first.contains("Which file should it go in") && first.contains("- mathx.py: mean"),
        "{first}"
    );
    let entries = s.store.overlay_entries("ag").unwrap();
    assert_eq!(
        entries.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        ["mathx.py"],
        "{}",
        done.summary
    );
}

/// The files the agent's overlay changes.
fn changed(s: &Setup) -> Vec<String> {
    s.store
        .overlay_entries("ag")
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// The text of `path` as the agent sees it.
fn overlay_file(s: &Setup, path: &str) -> Option<String> {
    Overlay::new(&s.store, "ag", 1 << 20)
        .read_text(&crate::paths::ProjectPath::parse(path).unwrap())
        .ok()
}

const SPREAD: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - mean(xs)\n";
const REPORT_PY: &str =
    "from mathx import mean\n\n\ndef average_price(prices):\n    return mean(prices)\n";

/// mathx.py (`mean`, and `spread` which uses it), report.py which imports
/// `mean`, stats.py, and a unittest file for `mean`.
fn put_three_files(s: &mut Setup) {
    s.config.llm.model = "qwen2.5-coder:1.5b".into();
    put_mean_project(s, SPREAD, MEAN_TEST);
    for (path, text) in [
        ("report.py", REPORT_PY),
        ("stats.py", "def total(xs):\n    return sum(xs)\n"),
    ] {
        s.store
            .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
            .unwrap();
    }
}

/// Runs `task`, typed in `file`'s buffer, on the three-file project
/// ([`put_three_files`]) with a model answering `replies`.
async fn on_three_files(
    replies: &[&str],
    task: &str,
    file: Option<&str>,
) -> (Done, Setup, FakeServer) {
    on_three_files_in(None, replies, task, file).await
}

/// [`on_three_files`] in agents mode `mode` (code mode when `None`).
async fn on_three_files_in(
    mode: Option<&str>,
    replies: &[&str],
    task: &str,
    file: Option<&str>,
) -> (Done, Setup, FakeServer) {
    let script = replies
        .iter()
        .map(|r| Reply::OpenaiStream((*r).into()))
        .collect();
    let server = FakeServer::start(script).await;
    let mut s = setup(&server.url);
    put_three_files(&mut s);
    let job = Job {
        spec: TaskSpec {
            task: task.into(),
            file: file.map(str::to_owned),
            mode: mode.map(str::to_owned),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    (done, s, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_changes_both_files_and_the_imports_that_named_the_old_place() {
    // The model writes `mean` into stats.py and nothing else, as 1.5B does.
    let reply = "```python\n# file: stats.py\ndef mean(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n```";
    let task = "move mean from mathx.py to stats.py and give it a docstring";
    let (done, s, server) = on_three_files(&[reply], task, None).await;
    let first = server.requests.lock().unwrap()[0].clone();
    assert!(
        first.contains("File `stats.py`:")
            && first.contains("File `report.py`:")
            && first.contains("`# file: <its path>`"),
        "every file it may change is shown, with how to name them: {first}"
    );
    let mathx = overlay_file(&s, "mathx.py").unwrap();
    assert!(
        mathx.starts_with("from stats import mean\n") && !mathx.contains("def mean"),
        "{mathx}"
    );
    assert!(overlay_file(&s, "stats.py")
        .unwrap()
        .contains("def mean(xs):\n    \"\"\"The mean.\"\"\""));
    assert!(
        overlay_file(&s, "report.py")
            .unwrap()
            .starts_with("from stats import mean\n"),
        "report.py imports it from its new place"
    );
    assert!(
        done.summary.contains("taken out of mathx.py") && done.summary.contains("tests passed"),
        "{}",
        done.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_alone_is_done_without_the_model_in_every_file_that_uses_the_name() {
    let task = "rename mean to average everywhere";
    let (done, s, server) = on_three_files(&[], task, Some("report.py")).await;
    assert_eq!(
        overlay_file(&s, "mathx.py").unwrap(),
        SPREAD.replace("mean", "average"),
        "in its old place, its use in spread too"
    );
    assert_eq!(
        overlay_file(&s, "report.py").unwrap(),
        REPORT_PY
            .replace("mean(", "average(")
            .replace("import mean", "import average")
    );
    let test = overlay_file(&s, "tests/test_mathx.py").unwrap();
    assert!(test.contains("from mathx import average") && test.contains("average([1, 2, 3])"));
    assert!(done.summary.contains("tests passed"), "{}", done.summary);
    assert_eq!((done.rounds, done.form), (0, "rename"));
    assert!(server.requests.lock().unwrap().is_empty(), "no model asked");
    assert_eq!(
        changed(&s),
        ["mathx.py", "report.py", "tests/test_mathx.py"],
        "a file without the name is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_alone_in_tool_mode_is_done_without_the_model_too() {
    // Asked in tool mode, 1.5B wrote `average` beside `mean` and left
    // report.py as it was (eval, rename-mean): the rename is the tree's.
    let task = "rename mean to average everywhere";
    let (done, s, server) = on_three_files_in(Some("tools"), &[], task, Some("report.py")).await;
    assert_eq!(
        overlay_file(&s, "mathx.py").unwrap(),
        SPREAD.replace("mean", "average")
    );
    assert!(overlay_file(&s, "report.py")
        .unwrap()
        .contains("import average"));
    assert_eq!((done.rounds, done.form), (0, "rename"));
    assert!(server.requests.lock().unwrap().is_empty(), "no model asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docstring_the_task_asks_for_and_the_change_leaves_out_goes_back() {
    // 1.5B documented mean and never touched report.py (eval,
    // two-docstrings): half the task was proposed as the whole.
    let half = "```python\n# file: mathx.py\ndef mean(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n```";
    let both = "```python\n# file: mathx.py\ndef mean(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n\n# file: report.py\ndef average_price(prices):\n    \"\"\"The average price.\"\"\"\n    return mean(prices)\n```";
    let task = "add docstrings to mean in mathx.py and to average_price in report.py";
    let (done, s, server) = on_three_files(&[half, both], task, None).await;
    assert_eq!(done.rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("`average_price` (report.py)") && second.contains("no docstring"),
        "{second}"
    );
    assert_eq!(changed(&s), ["mathx.py", "report.py"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_naming_two_files_changes_both_and_a_block_for_a_third_goes_back() {
    let wrong = "```python\n# file: stats.py\ndef total(xs):\n    \"\"\"Sum.\"\"\"\n    return sum(xs)\n```";
    let good = "File `mathx.py`:\n```python\ndef mean(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n```\n\n```python\n# file: report.py\ndef average_price(prices):\n    \"\"\"The average price.\"\"\"\n    return mean(prices)\n```";
    let task = "add docstrings to mean in mathx.py and to average_price in report.py";
    let (done, s, server) = on_three_files(&[wrong, good], task, None).await;
    assert_eq!(done.rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second
            .contains("`stats.py` is not one of the files this task changes (mathx.py, report.py)"),
        "{second}"
    );
    assert!(overlay_file(&s, "mathx.py")
        .unwrap()
        .contains("\"\"\"The mean.\"\"\""));
    assert!(overlay_file(&s, "report.py")
        .unwrap()
        .contains("\"\"\"The average price.\"\"\""));
    assert_eq!(changed(&s), ["mathx.py", "report.py"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_with_more_to_do_asks_the_model_and_finishes_the_rename_after_it() {
    // The model writes `average` with its change, beside `mean`, and
    // gives report.py back as it was: the rename reaches it all the same.
    let reply = "```python\n# file: mathx.py\ndef average(xs):\n    xs = [x for x in xs if x is not None]\n    return sum(xs) / len(xs)\n\n# file: report.py\ndef average_price(prices):\n    return mean(prices)\n```";
    let task = "rename mean to average and make it skip None";
    let (done, s, _server) = on_three_files(&[reply], task, None).await;
    assert_eq!(done.rounds, 1);
    let mathx = overlay_file(&s, "mathx.py").unwrap();
    assert!(
        mathx.starts_with("def average(xs):\n    xs = [x for x in xs if x is not None]")
            && mathx.contains("max(xs) - average(xs)")
            && !mathx.contains("mean"),
        "{mathx}"
    );
    assert_eq!(
        overlay_file(&s, "report.py").unwrap(),
        REPORT_PY.replace("mean", "average"),
        "its import kept and renamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_naming_a_path_outside_the_project_is_refused_and_nothing_lands_there() {
    let escape = "```python\n# file: ../outside.py\nX = 1\n```\n```python\n# file: /etc/passwd.py\nY = 2\n```";
    let good = "```python\n# file: mathx.py\ndef mean(xs):\n    \"\"\"The mean.\"\"\"\n    return sum(xs) / len(xs)\n```";
    let task = "add a docstring to mean in mathx.py, using report.py";
    let (done, s, server) = on_three_files(&[escape, good], task, None).await;
    assert_eq!(done.rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("`../outside.py` is not one of the files"),
        "{second}"
    );
    assert_eq!(changed(&s), ["mathx.py"]);
    assert!(!s._dir.path().parent().unwrap().join("outside.py").exists());
}

/// A project of one file, `path` holding `text`, whose model is asked in
/// the definitions form and answers `replies` in turn.
async fn definitions_project(path: &str, text: &str, replies: &[&str]) -> (Setup, FakeServer) {
    let server = FakeServer::start(
        replies
            .iter()
            .map(|r| Reply::OpenaiStream((*r).into()))
            .collect(),
    )
    .await;
    let mut s = setup(&server.url);
    s.config.llm.edit_form = crate::config::EditFormSetting::Definitions;
    s.store
        .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    (s, server)
}

const STACK_GO: &str = "package stack\n\n// Stack holds ints.\ntype Stack struct {\n\titems []int\n}\n\n// Push adds x on top.\nfunc (s *Stack) Push(x int) {\n\ts.items = append(s.items, x)\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_task_typed_from_anywhere_is_asked_and_spliced_in_go() {
    let broken = "```go\nfunc (s *Stack) Pop() int {\n\tn := len(s.items\n\treturn n\n}\n```";
    let good = "Here you go:\n```go\nfunc (s *Stack) Pop() int {\n\tx := s.items[len(s.items)-1]\n\ts.items = s.items[:len(s.items)-1]\n\treturn x\n}\n```";
    let (s, server) = definitions_project("stack/stack.go", STACK_GO, &[broken, good]).await;
    let job = Job {
        spec: TaskSpec {
            task: "add a Pop method to Stack in stack.go".into(),
            file: None,
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    assert_eq!(done.changed_files, ["stack/stack.go"]);
    assert_eq!(done.rounds, 2);
    assert_eq!(
        overlay_file(&s, "stack/stack.go").unwrap(),
        format!("{STACK_GO}\nfunc (s *Stack) Pop() int {{\n\tx := s.items[len(s.items)-1]\n\ts.items = s.items[:len(s.items)-1]\n\treturn x\n}}\n")
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].contains("expert Go programmer"),
        "{}",
        requests[0]
    );
    assert!(
        requests[0].contains("```go\\npackage stack"),
        "{}",
        requests[0]
    );
    assert!(requests[0].contains("one ```go block"), "{}", requests[0]);
    assert!(
        requests[1].contains("not valid Go: Go syntax error") && requests[1].contains("line 2"),
        "the repair names the language and the line: {}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_typescript_method_lands_in_its_class_and_the_rest_stays() {
    let ts = "export class Cart {\n  private items: number[] = [];\n\n  /** Adds a price. */\n  add(price: number): void {\n    this.items.push(price);\n  }\n\n  total(): number {\n    return 0;\n  }\n}\n";
    let reply = "```typescript\ntotal(): number {\n  return this.items.reduce((a, b) => a + b, 0);\n}\n\nadd(price: number): void {\n  this.items.push(Math.abs(price));\n}\n```";
    let (s, _server) = definitions_project("src/cart.ts", ts, &[reply]).await;
    let job = Job {
        spec: TaskSpec {
            task: "make the total method return the sum".into(),
            file: Some("src/cart.ts".into()),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    // total is the task's; the change to add was not asked for and is put back.
    assert_eq!(
        overlay_file(&s, "src/cart.ts").unwrap(),
        ts.replace(
            "    return 0;",
            "    return this.items.reduce((a, b) => a + b, 0);"
        )
    );
    assert!(
        done.summary
            .contains("left out changes the task did not ask for: src/cart.ts: Cart.add"),
        "{}",
        done.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_of_no_file_goes_back_and_a_doc_in_a_body_moves_above_it() {
    let ts = "export interface Item {\n  price: number;\n}\n\nexport class Cart {\n  private items: Item[] = [];\n\n  total(): number {\n    return 0;\n  }\n}\n";
    // 1.5B's answers: a helper imported from a file that was never
    // there; then the JSDoc where a docstring would go.
    let first = "```typescript\nimport { sum } from './math';\n\nexport class Cart {\n  total(): number {\n    return sum(this.items.map((i) => i.price));\n  }\n}\n```";
    let second = "```typescript\ntotal(): number {\n  /**\n   * The sum of the prices.\n   */\n  return 0;\n}\n```";
    let (s, server) = definitions_project("src/cart.ts", ts, &[first, second]).await;
    let job = Job {
        spec: TaskSpec {
            task: "add a JSDoc comment to Cart.total".into(),
            file: Some("src/cart.ts".into()),
            ..job().spec
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    assert_eq!(done.rounds, 2);
    let repair = server.requests.lock().unwrap()[1].clone();
    assert!(
        repair.contains("now imports `./math`, which is no file of this project"),
        "{repair}"
    );
    assert_eq!(
        overlay_file(&s, "src/cart.ts").unwrap(),
        ts.replace(
            "  total(): number {",
            "  /**\n   * The sum of the prices.\n   */\n  total(): number {"
        )
    );
}

#[test]
fn a_change_written_after_the_file_moved_on_keeps_what_happened_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let read = "function f() {\n  return 1;\n}\n\nfunction g() {\n  return 2;\n}\n";
    // While the model answered, Remora wrote IDs into the buffer.
    let now = "// remora-file: rm_aaaaaaaa\n\nfunction f() {    // rm_bbbbbbbb\n  return 1;\n}\n\nfunction g() {    // rm_cccccccc\n  return 2;\n}\n";
    store
        .stable_put("a.js", now.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    store
        .agent_insert(&AgentRecord::new("ag", "change g"))
        .unwrap();
    let config = Config::default();
    let llm = LlmClient::new(&config.llm).unwrap();
    let services = Services::new(&config, dir.path().to_owned());
    let job = Job {
        id: "ag".into(),
        ..Job::default()
    };
    let cancel = CancellationToken::new();
    let run = Run::new(
        store.clone(),
        &config,
        Some(&llm),
        &services,
        &job,
        &cancel,
        &|_| {},
    )
    .unwrap();
    let path = crate::paths::ProjectPath::parse("a.js").unwrap();
    let answer = read.replace("return 2;", "return 3;");
    if let Err(e) = write_checked(&run, &path, read, &answer, "definitions") {
        panic!("{e}");
    }
    let ov = Overlay::new(&store, "ag", 1 << 20);
    assert_eq!(
        ov.read_text(&path).unwrap(),
        now.replace("return 2;", "return 3;")
    );
    // A change in the very lines that moved is refused, not written over them.
    store.overlay_clear("ag").unwrap();
    let clash = read.replace("function g() {", "function g(x) {");
    let Err(err) = write_checked(&run, &path, read, &clash, "definitions") else {
        panic!("written over the moved lines");
    };
    assert_eq!(
        err,
        Problem::Moved {
            path: "a.js".into()
        }
    );
    assert!(store.overlay_entries("ag").unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_that_repeats_the_task_is_replaced_by_what_the_diff_does() {
    let echo = GOOD.replace("Added a docstring", "Add a docstring to parse_config.");
    let server = FakeServer::start(vec![Reply::OpenaiStream(echo)]).await;
    let s = setup(&server.url);
    let done = run_on(&s, &job()).await.unwrap();
    assert!(
        done.summary.starts_with("app.py: ") && done.summary.contains("parse_config"),
        "{}",
        done.summary
    );
}

/// A reply whose only change is an import copied from what the model was
/// shown (`import pytest` in a library module) changed nothing: it is
/// asked again, and the import never reaches the proposal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_import_alone_is_no_change_and_never_lands() {
    let echo = "```python\nimport pytest\n\n\ndef parse_config(path):\n    return {}\n```";
    let fixed = "```python\nimport pytest\n\n\ndef parse_config(path):\n    \"\"\"Parse the config.\"\"\"\n    return {}\n```";
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(echo.into()),
        Reply::OpenaiStream(fixed.into()),
    ])
    .await;
    let s = setup(&server.url);
    let done = run_on(&s, &job()).await.unwrap();
    assert_eq!(done.rounds, 2, "{}", done.summary);
    assert_eq!(overlay_text(&s).unwrap(), DOCSTRING);
    assert!(
        done.summary
            .contains("dropped imports copied from what the model was shown"),
        "{}",
        done.summary
    );
}

mod context;
mod fixing;
mod meant_paths;
mod methods;
mod rules;
mod test_files;
mod tool_table;
mod usage;
