//! A path a model writes that is not in the project but ends with one
//! that is (`path/to/app.py` for `app.py`: a placeholder of the examples
//! small models learned from) is the file it means, or refused once with
//! that file's name — never a new file beside it that nobody asked for.

use super::*;

fn overlay_has(s: &Setup, path: &str) -> bool {
    overlay_file(s, path).is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_before_a_files_path_writes_that_file() {
    // 0.5B wrote `path/to/inventory/text.py` (eval: slugify-underscore,
    // truncate-ellipsis, slugify-collapse); it was proposed and accepted
    // as a new file, and the file the task was about never changed.
    let (r, s, server) = run_tools(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "path/to/app.py", "content": DOCSTRING}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        10,
    )
    .await;
    let done = r.unwrap();
    assert_eq!(done.changed_files, ["app.py"]);
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    assert!(!overlay_has(&s, "path/to/app.py"));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("`app.py`") && requests[1].contains("path/to/app.py"),
        "the model is told which file it wrote: {}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_path_of_a_path_only_write_is_answered_with_the_real_one() {
    // A small model gives a write only its path and sends the code next:
    // the answer names the file, so its later calls use the right path.
    let (r, s, server) = run_tools_with(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "./path/to/app.py"}),
            ),
            Reply::OpenaiStream(format!("```python\n{DOCSTRING}```")),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        Some(8192),
        |c| c.llm.model = "qwen2.5-coder:0.5b".into(),
    )
    .await;
    assert_eq!(r.unwrap().summary, "docstring");
    assert_eq!(overlay_text(&s).as_deref(), Some(DOCSTRING));
    assert!(!overlay_has(&s, "path/to/app.py"));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("write_file(`app.py`): ready"),
        "{}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_folder_before_a_files_path_is_refused_once_with_the_files_name() {
    // `lib/app.py` may be a new file the task wants, or `app.py` mistyped:
    // said once with the name, and taken as new if written again.
    let other = "def other():\n    return 1\n";
    let (r, s, server) = run_tools(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "lib/app.py", "content": other}),
            ),
            call(
                "write_file",
                serde_json::json!({"path": "lib/app.py", "content": other}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "copied", "changed_files": ["lib/app.py"]}),
            ),
        ],
        10,
    )
    .await;
    r.unwrap();
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[1].contains("`lib/app.py` is not in the project")
            && requests[1].contains("`app.py`"),
        "refused with the file's name: {}",
        requests[1]
    );
    assert_eq!(overlay_file(&s, "lib/app.py").as_deref(), Some(other));
    assert!(overlay_text(&s).is_some_and(|t| !t.contains("other")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_path_the_task_names_is_written_at_once() {
    let job = Job {
        spec: TaskSpec {
            task: "create lib/app.py with a function other".into(),
            mode: Some("tools".into()),
            ..job().spec
        },
        ..job()
    };
    let other = "def other():\n    return 1\n";
    let (r, s, server) = run_job(
        vec![
            call(
                "write_file",
                serde_json::json!({"path": "lib/app.py", "content": other}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "new", "changed_files": ["lib/app.py"]}),
            ),
        ],
        Some(8192),
        |_| {},
        job,
    )
    .await;
    r.unwrap();
    assert_eq!(overlay_file(&s, "lib/app.py").as_deref(), Some(other));
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        !requests[1].contains("not in the project"),
        "{}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_path_read_reads_the_file() {
    let (r, _s, server) = run_tools(
        vec![
            call("read_file", serde_json::json!({"path": "path/to/app.py"})),
            call(
                "write_file",
                serde_json::json!({"path": "app.py", "content": DOCSTRING}),
            ),
            call(
                "submit_result",
                serde_json::json!({"summary": "docstring", "changed_files": ["app.py"]}),
            ),
        ],
        10,
    )
    .await;
    r.unwrap();
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        !requests[1].contains("\\\"ok\\\":false") && requests[1].contains("reads `app.py`"),
        "{}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_programs_placeholder_path_is_said_in_the_agents_log() {
    // Code mode has no next call to tell: the human reads it in the log
    // (`chimera agent`, the agents window), beside what `log()` said.
    let program = GOOD.replace("write_file('app.py'", "write_file('path/to/app.py'");
    let (r, s, _server) = run_with(vec![Reply::OpenaiStream(program)]).await;
    r.unwrap();
    assert!(overlay_text(&s).is_some_and(|t| t.contains("Parse the config")));
    let log = s.store.agent("ag").unwrap().log;
    assert!(
        log.iter()
            .any(|l| l.contains("path/to/app.py") && l.contains("`app.py`")),
        "{log:?}"
    );
}
