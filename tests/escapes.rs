//! The escape suite: what an agent (or a project laid out by an attacker)
//! tries in order to reach past its overlay — symbolic links, case variants
//! of secret names, memory and time bombs — driven through the real core
//! and a scripted LLM server on 127.0.0.1. Every finding gets a test here.

use chimera::api::core::Indexing;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chimera::config::{Config, LlmConfig, Provider};
use chimera::llm::fake::{FakeServer, Reply};
use chimera::nvim::messages::{AgentView, ToCore, ToEditor};
use chimera::runtime::CoreHandle;
use chimera::store::AgentState;
use tokio::sync::mpsc;

struct Run {
    rt: tokio::runtime::Runtime,
    core: Option<CoreHandle>,
    rx: mpsc::UnboundedReceiver<ToEditor>,
    server: FakeServer,
    root: PathBuf,
}

fn program(code: &str) -> Reply {
    Reply::OpenaiStream(format!("```python\n{code}\n```"))
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

/// A core on `root` whose LLM answers `replies` in order.
fn start(root: &Path, replies: Vec<Reply>, tweak: impl FnOnce(&mut Config)) -> Run {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeServer::start(replies));
    let mut cfg = config(&server.url);
    cfg.agents.repair_rounds = 0;
    tweak(&mut cfg);
    let (tx, rx) = mpsc::unbounded_channel::<ToEditor>();
    let root = root.canonicalize().unwrap();
    let core =
        chimera::api::core::start(cfg, root.clone(), Arc::new(tx), Indexing::AtStart).unwrap();
    let mut run = Run {
        rt,
        core: Some(core),
        rx,
        server,
        root,
    };
    run.wait(|m| matches!(m, ToEditor::Ready { .. }).then_some(()));
    run
}

impl Run {
    fn send(&self, msg: ToCore) {
        chimera::nvim::messages::hand(self.core.as_ref().unwrap(), msg).unwrap();
    }

    fn wait<T>(&mut self, pred: impl Fn(&ToEditor) -> Option<T>) -> T {
        let rx = &mut self.rx;
        self.rt.block_on(async {
            loop {
                let msg = tokio::time::timeout(Duration::from_secs(20), rx.recv())
                    .await
                    .expect("timed out")
                    .expect("closed");
                if std::env::var("ESCAPES_DEBUG").is_ok() {
                    eprintln!("{msg:?}");
                }
                if let Some(t) = pred(&msg) {
                    return t;
                }
            }
        })
    }

    fn spawn(&self, id: &str, task: &str) {
        self.send(ToCore::Spawn {
            id: id.into(),
            spec: chimera::task::TaskSpec::new(task),
        });
    }

    /// The agent's record once it reached a state it stays in.
    fn settled(&mut self, id: &str) -> AgentView {
        self.wait(|m| match m {
            ToEditor::Agent { agent, .. }
                if agent.id == id
                    && !matches!(agent.state, AgentState::Queued | AgentState::Running) =>
            {
                Some(agent.clone())
            }
            _ => None,
        })
    }

    /// Agent `id`'s proposal once it is there: its files, and every line
    /// it adds, joined.
    fn proposed(&mut self, id: &str) -> (Vec<String>, String) {
        self.wait(|m| match m {
            ToEditor::Agent {
                agent,
                proposal: Some(files),
                ..
            } if agent.id == id => Some((
                files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
                files
                    .iter()
                    .flat_map(|f| f.hunks.iter().flat_map(|h| h.new_lines.clone()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
            ToEditor::Agent { agent, .. }
                if agent.id == id && agent.state == AgentState::Failed =>
            {
                panic!("failed: {:?}", agent.error)
            }
            _ => None,
        })
    }

    /// Everything the model was sent, all requests joined.
    fn model_saw(&self) -> String {
        self.server.requests.lock().unwrap().join("\n")
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            core.shutdown(Duration::from_secs(2));
        }
    }
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("app.py"), "def f():\n    return 1\n").unwrap();
    dir
}

#[test]
fn a_write_through_a_linked_folder_never_becomes_a_proposal_or_a_file() {
    let outside = tempfile::tempdir().unwrap();
    let dir = project();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    let code =
        "write_file('linkdir/secret.txt', 'pwned')\nsubmit_result('wrote', ['linkdir/secret.txt'])";
    let mut run = start(dir.path(), vec![program(code)], |_| {});
    run.spawn("a1", "write a file");
    let rec = run.settled("a1");
    assert_ne!(rec.state, AgentState::Completed, "proposed: {rec:?}");
    assert!(rec.error.unwrap_or_default().contains("symbolic link"));
    assert!(!outside.path().join("secret.txt").exists());
}

#[test]
fn a_file_a_task_names_to_create_never_lands_through_a_link_on_a_secret_or_outside() {
    let outside = tempfile::tempdir().unwrap();
    let dir = project();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    // A small model's answer for a file the task creates: its content.
    let definitions = Reply::OpenaiStream("```python\ndef pwn():\n    return 1\n```".into());
    let mut run = start(dir.path(), vec![definitions; 5], |c| {
        c.llm.model = "qwen2.5-coder-0.5b-instruct".into()
    });
    for (id, task, why) in [
        (
            "link",
            "create linkdir/evil.py with a function pwn",
            "symbolic link",
        ),
        (
            "secret",
            "create keys/Server.PEM with a function pwn",
            "secret",
        ),
        (
            "up",
            "create ../evil.py with a function pwn",
            "leaves the project root",
        ),
        (
            "hooks",
            "write vendor/lib/.git/hooks/post-checkout to print hi",
            "inside a `.git` or `.chimera` folder",
        ),
    ] {
        run.spawn(id, task);
        let rec = run.settled(id);
        let error = rec.error.clone().unwrap_or_default();
        assert!(
            rec.state != AgentState::Completed
                || !rec
                    .changed_files
                    .iter()
                    .any(|f| f.contains("evil") || f.contains("PEM")),
            "{id}: proposed {rec:?}"
        );
        assert!(error.contains(why), "{id}: {error}");
    }
    assert!(!outside.path().join("evil.py").exists());
    assert!(!dir.path().parent().unwrap().join("evil.py").exists());
    // A task naming a path thousands of folders deep is read, not a crash.
    let deep = format!("create {}x.py with a function pwn", "a/".repeat(5_000));
    run.spawn("deep", &deep);
    assert!(!run.settled("deep").state.is_active());
}

#[test]
fn an_accept_never_writes_through_a_link_made_after_the_proposal() {
    let outside = tempfile::tempdir().unwrap();
    let dir = project();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let code = "write_file('sub/new.txt', 'hello')\nsubmit_result('wrote', ['sub/new.txt'])";
    let mut run = start(dir.path(), vec![program(code)], |_| {});
    run.spawn("a1", "write a file");
    assert_eq!(run.settled("a1").state, AgentState::Completed);
    // Between the proposal and the accept, the folder becomes a link out.
    std::fs::remove_dir(run.root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), run.root.join("sub")).unwrap();
    run.send(ToCore::Accept {
        id: "a1".into(),
        buffers: vec![],
        hunk: None,
        write: false,
    });
    let message = run.wait(|m| match m {
        ToEditor::Notify { message, .. } if message.contains("a1") => Some(message.clone()),
        ToEditor::Resolved { .. } => Some("resolved".into()),
        _ => None,
    });
    assert!(message.contains("symbolic link"), "{message}");
    assert!(!outside.path().join("new.txt").exists());
}

const DOCSTRING: &str = "src = read_file('app.py')\nwrite_file('app.py', src.replace('    return 1', '    \"\"\"One.\"\"\"\\n    return 1'))\nsubmit_result('docstring', ['app.py'])";

fn accept(run: &Run, id: &str) {
    run.send(ToCore::Accept {
        id: id.into(),
        buffers: vec![],
        hunk: None,
        write: false,
    });
}

#[test]
fn an_edit_on_disk_just_before_the_accept_is_never_written_over() {
    let dir = project();
    // The watcher would report the edit only after 5 s: the accept comes first.
    let mut run = start(dir.path(), vec![program(DOCSTRING)], |c| {
        c.sync.debounce_ms = 5_000
    });
    run.spawn("a1", "add a docstring");
    assert_eq!(run.settled("a1").state, AgentState::Completed);
    let app = run.root.join("app.py");
    let appended = "def f():\n    return 1\n\ndef added_outside():\n    return 2\n";
    std::fs::write(&app, appended).unwrap();
    accept(&run, "a1");
    let message = run.wait(|m| match m {
        ToEditor::Notify { message, .. } if message.contains("a1") => Some(message.clone()),
        ToEditor::Resolved { .. } => Some("accepted over the edit".into()),
        _ => None,
    });
    assert!(message.contains("changed on disk"), "{message}");
    assert_eq!(std::fs::read_to_string(&app).unwrap(), appended);
    // The proposal was rebased onto the edit: accepting it now keeps both.
    accept(&run, "a1");
    run.wait(|m| matches!(m, ToEditor::Resolved { accepted: true, .. }).then_some(()));
    let now = std::fs::read_to_string(&app).unwrap();
    assert!(
        now.contains("\"\"\"One.\"\"\"") && now.contains("added_outside"),
        "{now}"
    );
}

/// A model takes seconds between reading a file and writing it whole:
/// what the human typed meanwhile is merged with the write, never undone
/// by it.
#[test]
fn a_whole_file_written_after_the_human_typed_in_it_keeps_what_they_typed() {
    let dir = project();
    let code = "src = read_file('app.py')\n\
        run_command(['sleep', '2'])\n\
        write_file('app.py', src.replace('return 1', 'return 2'))\n\
        submit_result('two', ['app.py'])";
    let mut run = start(dir.path(), vec![program(code)], |c| {
        c.capabilities.preset = "developer".into();
        c.capabilities.commands = vec!["sleep".into()];
    });
    run.spawn("a1", "return 2");
    run.wait(|m| match m {
        ToEditor::Agent { agent, .. } if agent.id == "a1" && agent.state == AgentState::Running => {
            Some(())
        }
        _ => None,
    });
    std::thread::sleep(Duration::from_millis(700));
    let app = run.root.join("app.py");
    std::fs::write(&app, "# typed by the human\ndef f():\n    return 1\n").unwrap();
    assert_eq!(run.settled("a1").state, AgentState::Completed);
    accept(&run, "a1");
    run.wait(|m| matches!(m, ToEditor::Resolved { accepted: true, .. }).then_some(()));
    assert_eq!(
        std::fs::read_to_string(&app).unwrap(),
        "# typed by the human\ndef f():\n    return 2\n"
    );
}

#[test]
fn a_multi_file_accept_with_one_unwritable_file_changes_nothing() {
    let dir = project();
    std::fs::write(dir.path().join("b.py"), "b = 1\n").unwrap();
    let code = "write_file('app.py', 'def f():\\n    return 2\\n')\nwrite_file('b.py', 'b = 2\\n')\nsubmit_result('both', ['app.py', 'b.py'])";
    let mut run = start(dir.path(), vec![program(code)], |c| {
        c.sync.debounce_ms = 5_000
    });
    run.spawn("a1", "change both");
    assert_eq!(run.settled("a1").state, AgentState::Completed);
    std::fs::remove_file(run.root.join("b.py")).unwrap();
    std::fs::create_dir(run.root.join("b.py")).unwrap();
    accept(&run, "a1");
    let message = run.wait(|m| match m {
        ToEditor::Notify { message, .. } if message.contains("a1") => Some(message.clone()),
        ToEditor::Resolved { .. } => Some("resolved".into()),
        _ => None,
    });
    assert!(message.contains("b.py"), "{message}");
    assert_eq!(
        std::fs::read_to_string(run.root.join("app.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&run.root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".chimera-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let store = chimera::store::Store::open(&run.root).unwrap();
    assert_eq!(
        store.agent("a1").unwrap().state,
        AgentState::Completed,
        "still reviewable"
    );
}

#[test]
fn a_buffer_opened_through_a_link_never_reaches_the_model() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("creds"), "OUTSIDE_SECRET=1\n").unwrap();
    let dir = project();
    std::fs::write(dir.path().join(".env"), "ENV_SECRET=1\n").unwrap();
    std::os::unix::fs::symlink(".env", dir.path().join("notes.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("creds"), dir.path().join("creds.txt")).unwrap();
    let read =
        "print(read_file('notes.txt'))\nprint(read_file('creds.txt'))\nsubmit_result('read', [])";
    let mut run = start(dir.path(), vec![program(read), program(read)], |_| {});
    for (i, (name, text)) in [
        ("notes.txt", "ENV_SECRET=1\n"),
        ("creds.txt", "OUTSIDE_SECRET=1\n"),
    ]
    .into_iter()
    .enumerate()
    {
        let path = run.root.join(name).to_string_lossy().into_owned();
        // The person opens the link in Neovim and types a task at once.
        run.send(ToCore::BufferText(chimera::nvim::messages::BufferText {
            path: path.clone(),
            text: text.into(),
        }));
        run.send(ToCore::Spawn {
            id: format!("a{i}"),
            spec: chimera::task::TaskSpec {
                file: Some(path),
                line: Some(2),
                ..chimera::task::TaskSpec::new("summarise this file")
            },
        });
        run.settled(&format!("a{i}"));
    }
    let seen = run.model_saw();
    assert!(
        seen.contains("summarise this file"),
        "the model was asked: {seen}"
    );
    assert!(!seen.contains("ENV_SECRET"), "{seen}");
    assert!(!seen.contains("OUTSIDE_SECRET"), "{seen}");
}

#[test]
fn secret_files_are_invisible_whatever_their_case_and_never_copied_for_commands() {
    let dir = project();
    for (name, text) in [
        (".env", "A_SECRET=1\n"),
        (".ENV", "B_SECRET=1\n"),
        ("keys/ID_RSA", "C_SECRET\n"),
        ("Server.PEM", "D_SECRET\n"),
    ] {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let code = "seen = [str(list_dir('')), str(list_dir('keys')), get_file_tree(), str(file_exists('.ENV')), str(file_exists('Server.PEM'))]\n\
        for name in ['.env', '.ENV', 'keys/ID_RSA', 'Server.PEM']:\n    try:\n        seen.append(read_file(name))\n    except Exception as e:\n        seen.append('refused')\n\
        seen.append(run_command(['cat', '.env', '.ENV', 'keys/ID_RSA', 'Server.PEM']))\n\
        seen.append(run_command(['ls', '-a', '.', 'keys']))\n\
        write_file('seen.txt', ' | '.join(seen))\n\
        submit_result('looked', ['seen.txt'])";
    let mut run = start(dir.path(), vec![program(code)], |c| {
        c.capabilities.preset = "developer".into();
        c.capabilities.commands = vec!["cat".into(), "ls".into()];
    });
    run.spawn("a1", "look around");
    let summary = run.wait(|m| match m {
        ToEditor::Agent {
            agent,
            proposal: Some(files),
            ..
        } if agent.id == "a1" => Some(
            files
                .iter()
                .flat_map(|f| f.hunks.iter().flat_map(|h| h.new_lines.clone()))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        ToEditor::Agent { agent, .. } if agent.state == AgentState::Failed => {
            Some(format!("failed: {:?}", agent.error))
        }
        _ => None,
    });
    assert!(summary.contains("app.py"), "the program ran: {summary}");
    assert!(!summary.contains("SECRET"), "a secret leaked: {summary}");
    // The commands' own error messages repeat the names they were given;
    // everything before them must not know the names at all.
    let (listings, commands) = summary.split_at(summary.find("exit status").unwrap());
    for leak in [".env", ".ENV", "ID_RSA", "PEM", "True"] {
        assert!(!listings.contains(leak), "{leak} leaked: {listings}");
    }
    assert!(commands.contains("No such file"), "{commands}");
}

#[test]
fn run_command_is_confined_to_its_checkout_by_the_kernel() {
    let dir = project();
    std::fs::write(dir.path().join(".env"), "ENV_SECRET=1\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE_SECRET=1\n").unwrap();
    let (root, out) = (
        dir.path().canonicalize().unwrap().display().to_string(),
        outside.path().display().to_string(),
    );
    // By absolute paths, which a checkout does not change, and by a
    // child that leaves the process group and writes later.
    let code = format!(
        "seen = [run_command(['cat', '{root}/.env', '{out}/secret.txt'])]\n\
        seen.append(run_command(['sh', '-c', 'echo owned > {root}/app.py; echo owned > {out}/planted; echo mine > app.py; (setsid sh -c \"sleep 1; echo late > {root}/late.py\" &)']))\n\
        write_file('seen.txt', ' | '.join(seen))\n\
        submit_result('looked', ['seen.txt'])"
    );
    let mut run = start(dir.path(), vec![program(&code)], |c| {
        c.capabilities.preset = "developer".into();
        c.capabilities.commands = vec!["cat".into(), "sh".into()];
    });
    run.spawn("a1", "look around");
    let (_, seen) = run.proposed("a1");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        seen.contains("Permission denied"),
        "the kernel refused: {seen}"
    );
    assert!(!seen.contains("SECRET"), "a secret leaked: {seen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("app.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    assert!(!dir.path().join("late.py").exists());
    assert!(!outside.path().join("planted").exists());
}

#[test]
fn memory_bombs_end_the_agent_failed_and_never_the_process() {
    let dir = project();
    let bombs = [
        "s = 'x' * 100000000000\nsubmit_result('big', [])",
        "chunks = []\nwhile True:\n    chunks.append('y' * 1000000 + str(len(chunks)))",
        "n = 10 ** 10 ** 10",
    ];
    let mut run = start(
        dir.path(),
        bombs.iter().map(|b| program(b)).collect(),
        |c| {
            c.agents.sandbox_memory_mb = 64;
            c.agents.sandbox_timeout_ms = 60_000;
            c.agents.max_concurrent = 1;
        },
    );
    for i in 0..bombs.len() {
        let id = format!("bomb{i}");
        run.spawn(&id, "allocate");
        let rec = run.settled(&id);
        assert_eq!(rec.state, AgentState::Failed, "{rec:?}");
        let error = rec.error.unwrap_or_default();
        assert!(error.contains("memory"), "{id}: {error}");
    }
}

#[test]
fn another_neovims_unsaved_text_never_reaches_the_disk() {
    let dir = project();
    let docstring = "src = read_file('app.py')\nwrite_file('app.py', src.replace('def f():', 'def f():\\n    \"\"\"One.\"\"\"'))\nsubmit_result('docstring', ['app.py'])";
    // Instance A has app.py open with an unsaved line.
    let a = start(dir.path(), vec![], |_| {});
    let unsaved = "def f():\n    return 1\n\nUNSAVED_IN_A = True\n";
    a.send(ToCore::BufferText(chimera::nvim::messages::BufferText {
        path: a.root.join("app.py").to_string_lossy().into_owned(),
        text: unsaved.into(),
    }));
    std::thread::sleep(Duration::from_millis(300));
    // Instance B (app.py not open there) runs an agent and accepts.
    let mut b = start(
        dir.path(),
        vec![program(docstring), program(docstring)],
        |_| {},
    );
    b.spawn("b1", "add a docstring");
    assert_eq!(b.settled("b1").state, AgentState::Completed);
    for _ in 0..2 {
        accept(&b, "b1");
        b.wait(|m| match m {
            ToEditor::Resolved { .. } | ToEditor::Notify { .. } => Some(()),
            _ => None,
        });
        std::thread::sleep(Duration::from_millis(300));
        let disk = std::fs::read_to_string(b.root.join("app.py")).unwrap();
        assert!(
            !disk.contains("UNSAVED_IN_A"),
            "A's unsaved text was written: {disk}"
        );
    }
    let disk = std::fs::read_to_string(b.root.join("app.py")).unwrap();
    assert!(
        disk.contains("\"\"\"One.\"\"\""),
        "B's accept landed on the disk's text: {disk}"
    );
}

#[test]
fn a_repository_cloned_inside_the_project_keeps_its_git_folder_from_agents() {
    let dir = project();
    let code = "seen = [get_file_tree(), str(list_dir('vendor/lib')), str(search_files('TOKEN'))]\n\
        for name in ['vendor/lib/.git/config', 'vendor/lib/.GIT/config', 'sub/.Chimera/api.json', 'vendor/lib/.git./config']:\n    try:\n        seen.append(read_file(name))\n    except Exception as e:\n        seen.append('refused')\n\
        for name in ['vendor/lib/.git/config', 'vendor/lib/.Git/hooks/post-checkout']:\n    try:\n        write_file(name, '[core]\\n\\tfsmonitor = touch pwned\\n')\n    except Exception as e:\n        seen.append('write refused')\n\
        write_file('seen.txt', ' | '.join(seen))\n\
        submit_result('looked', ['seen.txt'])";
    let mut run = start(dir.path(), vec![program(code)], |_| {});
    // While the core runs, the person clones a library into vendor/lib
    // (its remote URL carries a token) and a tool leaves a nested store.
    for (name, text) in [
        (
            "vendor/lib/.git/config",
            "[remote \"origin\"]\n\turl = https://me:GIT_TOKEN_1@example.com/lib\n",
        ),
        (
            "vendor/lib/.GIT/config",
            "url = https://GIT_TOKEN_2@example.com\n",
        ),
        ("vendor/lib/lib.py", "def g():\n    return 2\n"),
        ("sub/.Chimera/api.json", "{\"token\": \"API_TOKEN_3\"}\n"),
    ] {
        let p = run.root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    // The watcher has seen the clone once the library's own file is in
    // the stable layer.
    let store = chimera::store::Store::open(&run.root).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store.stable_entry("vendor/lib/lib.py").unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the watcher never saw the clone"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    run.spawn("a1", "look around");
    let (paths, text) = run.proposed("a1");
    assert!(text.contains("lib.py"), "the program ran: {text}");
    assert!(
        !text.contains("TOKEN_"),
        "a nested .git or .chimera leaked: {text}"
    );
    assert_eq!(text.matches("write refused").count(), 2, "{text}");
    assert!(
        paths.iter().all(|p| p.ends_with("seen.txt")),
        "a write into a nested .git became a proposal: {paths:?}"
    );
    let stored = store.stable_paths().unwrap();
    assert!(
        stored.iter().all(|p| !p.to_lowercase().contains("/.git") && !p.to_lowercase().contains("/.chimera")),
        "the stable layer holds a nested .git or .chimera: {stored:?}"
    );
}

#[test]
fn another_account_reads_no_secret_from_the_store() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project();
    // A project as people keep them: readable by all, its secrets not.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, text) in [(".env", "ENV_SECRET_1=abc\n"), ("id_rsa", "RSA_SECRET_2\n")] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut run = start(dir.path(), vec![], |_| {});
    // The person opens .env in Neovim and edits it.
    run.send(ToCore::BufferText(chimera::nvim::messages::BufferText {
        path: run.root.join(".env").to_string_lossy().into_owned(),
        text: "ENV_SECRET_1=abc\nENV_SECRET_4=typed\n".into(),
    }));
    run.send(ToCore::Snapshot {
        id: "s1".into(),
        message: "with the secret open".into(),
    });
    run.wait(|m| matches!(m, ToEditor::Snapshots { .. }).then_some(()));
    let store_dir = run.root.join(".chimera");
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(&store_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            bytes.extend(std::fs::read(&path).unwrap());
        }
    }
    for secret in ["ENV_SECRET_1", "ENV_SECRET_4", "RSA_SECRET_2"] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} is in .chimera/"
        );
    }
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store_dir), 0o700);
    assert_eq!(mode(&store_dir.join("chimera.db")), 0o600);
    // As another account would try it, where this machine has one.
    let as_nobody = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--", "cat"])
        .arg(store_dir.join("chimera.db"))
        .output();
    if let Ok(out) = as_nobody {
        if rustix::process::getuid().is_root() {
            assert!(!out.status.success(), "nobody read the store");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// A scripted HTTP peer on 127.0.0.1: `answer` maps a request's first
/// line to the whole response; every request it gets is kept.
fn http_peer(
    answer: impl Fn(&str) -> String + Send + 'static,
) -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = heard.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            stream
                .set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8_lossy(&got).to_string();
            let first = text.lines().next().unwrap_or_default().to_owned();
            kept.lock().unwrap().push(text);
            let _ = stream.write_all(answer(&first).as_bytes());
        }
    });
    (port, heard)
}

#[test]
fn a_redirect_never_takes_an_agents_request_to_a_host_it_may_not_reach() {
    // B is not in capabilities.hosts; it would answer with a diff.
    let (b, b_heard) = http_peer(|_| {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","status":{"state":"completed"},"artifacts":[{"parts":[{"kind":"text","text":"--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 666\n"}]}]}}"#;
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
    });
    // A is allowed: its card is real, its endpoint redirects to B.
    let own_port = Arc::new(std::sync::atomic::AtomicU16::new(0));
    let known = own_port.clone();
    let (a, _) = http_peer(move |first| {
        if first.starts_with("GET /.well-known/agent-card.json") {
            let body = format!(
                r#"{{"name":"a","url":"http://127.0.0.1:{}/a2a","version":"1","skills":[]}}"#,
                known.load(std::sync::atomic::Ordering::SeqCst)
            );
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
        } else if first.starts_with("GET /moved/") {
            format!("HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{b}/.well-known/agent-card.json\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        } else {
            format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:{b}/a2a\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        }
    });
    own_port.store(a, std::sync::atomic::Ordering::SeqCst);
    let code = "out = []\nfor peer in ['posts', 'card']:\n    try:\n        out.append(delegate(peer, 'fix f'))\n    except Exception as e:\n        out.append('refused: ' + str(e))\ntry:\n    out.append(web_search('where'))\nexcept Exception as e:\n    out.append('refused: ' + str(e))\nwrite_file('seen.txt', ' | '.join(out))\nsubmit_result('delegated', ['seen.txt'])";
    let dir = project();
    let mut run = start(dir.path(), vec![program(code)], |c| {
        c.capabilities.hosts = vec![format!("127.0.0.1:{a}")];
        c.tools.web_search_url = Some(format!("http://127.0.0.1:{a}"));
        for (name, url) in [
            ("posts", format!("http://127.0.0.1:{a}")),
            ("card", format!("http://127.0.0.1:{a}/moved/x")),
        ] {
            c.a2a
                .peers
                .insert(name.into(), chimera::config::A2aPeer { url, token: None });
        }
    });
    run.spawn("a1", "delegate");
    let (paths, text) = run.proposed("a1");
    assert!(
        b_heard.lock().unwrap().is_empty(),
        "a redirect reached B: {:?}",
        b_heard.lock().unwrap()
    );
    assert!(
        paths.len() == 1 && paths[0].ends_with("/seen.txt"),
        "B's diff was applied: {paths:?} {text}"
    );
    assert_eq!(text.matches("not followed").count(), 3, "{text}");
    let store = chimera::store::Store::open(&run.root).unwrap();
    let log: Vec<String> = store
        .effects(0, None)
        .unwrap()
        .into_iter()
        .map(|e| format!("{} {}", e.input, e.output))
        .collect();
    let log = log.join("\n");
    assert!(
        log.contains(&format!("127.0.0.1:{b}")),
        "the effect log names where the redirect led: {log}"
    );
}

#[test]
fn another_neovim_typing_after_the_proposal_never_gets_its_unsaved_text_written() {
    let dir = project();
    let docstring = "src = read_file('app.py')\nwrite_file('app.py', src.replace('def f():', 'def f():\\n    \"\"\"One.\"\"\"'))\nsubmit_result('docstring', ['app.py'])";
    let a = start(dir.path(), vec![], |_| {});
    let mut b = start(
        dir.path(),
        vec![program(docstring), program(docstring), program(docstring)],
        |_| {},
    );
    b.spawn("b1", "add a docstring");
    assert_eq!(b.settled("b1").state, AgentState::Completed);
    // Now, in instance A, the person types into app.py without saving.
    let unsaved = "def f():\n    return 1\n\nUNSAVED_IN_A = True\n";
    a.send(ToCore::BufferText(chimera::nvim::messages::BufferText {
        path: a.root.join("app.py").to_string_lossy().into_owned(),
        text: unsaved.into(),
    }));
    std::thread::sleep(Duration::from_millis(300));
    let mut said = Vec::new();
    for _ in 0..2 {
        accept(&b, "b1");
        said.push(b.wait(|m| match m {
            ToEditor::Resolved { .. } => Some("resolved".to_owned()),
            ToEditor::Notify { message, .. } => Some(message.clone()),
            _ => None,
        }));
        std::thread::sleep(Duration::from_millis(300));
        let disk = std::fs::read_to_string(b.root.join("app.py")).unwrap();
        assert!(
            !disk.contains("UNSAVED_IN_A"),
            "A's unsaved text was written: {disk}\n{said:?}"
        );
    }
    assert!(
        !said.iter().any(|m| m.contains("changed on disk")),
        "the disk did not change, another Neovim has unsaved text: {said:?}"
    );
}
