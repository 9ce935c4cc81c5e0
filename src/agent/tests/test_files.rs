//! A test file an agent writes must load the way `pytest` loads it, not
//! only under `python3 -m pytest`, which puts the project's folder on the
//! import path. (Needs pytest, which `make test` puts on PYTHONPATH.)

use super::*;

/// These tests are pytest's: without it they would say nothing true.
fn pytest_is_importable() {
    let found = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "these tests need pytest: PYTHONPATH=$(scripts/install-pytest.sh) cargo test (make test does so)"
    );
}

const TEXTUTILS: &str = "def slugify(text):\n    return text.lower().replace(' ', '-')\n";

/// A project of `textutils.py`, its model at `url`.
fn textutils_project(url: &str) -> Setup {
    let s = setup(url);
    s.store
        .stable_put("textutils.py", TEXTUTILS.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    s
}

/// The task, typed from a buffer of no file.
fn create_tests() -> Job {
    Job {
        spec: TaskSpec {
            task: "create tests/test_textutils.py with a pytest test for slugify".into(),
            file: None,
            ..job().spec
        },
        ..job()
    }
}

fn test_file(head: &str) -> Reply {
    Reply::OpenaiStream(format!(
        "```python\n{head}from textutils import slugify\n\n\ndef test_slugify():\n    assert slugify('A b') == 'a-b'\n```"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_file_that_pytest_cannot_load_goes_back_to_the_model() {
    pytest_is_importable();
    let server = FakeServer::start(vec![test_file(""), test_file(PATH_FIX)]).await;
    let s = textutils_project(&server.url);
    let done = run_on(&s, &create_tests()).await.unwrap();
    assert_eq!(done.rounds, 2, "{}", done.summary);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("does not load when `pytest tests/test_textutils.py` runs it")
            && second.contains("No module named 'textutils'"),
        "{second}"
    );
    assert!(overlay_file(&s, "tests/test_textutils.py")
        .unwrap()
        .contains("sys.path.insert"));
    assert!(done.summary.contains("tests passed"), "{}", done.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_the_projects_own_tests_load_only_under_python_m_pytest_so_may_a_new_one() {
    pytest_is_importable();
    let server = FakeServer::start(vec![test_file("")]).await;
    let s = textutils_project(&server.url);
    s.store
        .stable_put(
            "tests/test_old.py",
            b"from textutils import slugify\n\n\ndef test_old():\n    assert slugify('x') == 'x'\n",
            0o644,
            0,
            1 << 20,
        )
        .unwrap();
    let done = run_on(&s, &create_tests()).await.unwrap();
    assert_eq!(done.rounds, 1, "{}", done.summary);
}

/// A test file whose functions are not named `test_…`: pytest collects
/// nothing from it.
fn testless_file(head: &str) -> Reply {
    Reply::OpenaiStream(format!(
        "```python\n{head}from textutils import slugify\n\n\ndef check_slugify():\n    assert slugify('A b') == 'a-b'\n```"
    ))
}

const PATH_FIX: &str =
    "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), \"..\"))\n\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_file_in_which_no_test_is_found_goes_back_to_the_model() {
    pytest_is_importable();
    let server = FakeServer::start(vec![testless_file(PATH_FIX), test_file(PATH_FIX)]).await;
    let s = textutils_project(&server.url);
    let done = run_on(&s, &create_tests()).await.unwrap();
    assert_eq!(done.rounds, 2, "{}", done.summary);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("`tests/test_textutils.py` has no test that pytest finds"),
        "{second}"
    );
    assert!(done.summary.contains("tests passed"), "{}", done.summary);
}

/// Asked for tests, the model wrote one that expects what the code does
/// not do: the test is what to correct, not the code (which the task does
/// not ask to change), and the file comes back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_written_test_that_fails_on_the_code_as_it_is_goes_back_as_the_test_to_correct() {
    pytest_is_importable();
    let wrong = Reply::OpenaiStream(format!(
        "```python\n{PATH_FIX}from textutils import slugify\n\n\ndef test_slugify():\n    assert slugify('A b') == 'A-b'\n```"
    ));
    let server = FakeServer::start(vec![wrong, test_file(PATH_FIX)]).await;
    let mut s = textutils_project(&server.url);
    s.config.llm.model = "qwen2.5-coder:1.5b".into();
    let done = run_on(&s, &create_tests()).await.unwrap();
    assert_eq!(done.rounds, 2, "{}", done.summary);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(
        second.contains("The tests you wrote fail on the code as it is")
            && second.contains("the whole file `tests/test_textutils.py`")
            && !second.contains("Fix the code"),
        "{second}"
    );
    assert!(done.summary.contains("tests passed"), "{}", done.summary);
}

/// A reply that loops, one assertion after another with a number counting
/// on, is cut once it is plainly a loop, as the token limit would cut it,
/// not heard out; what came before the cut is the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_loops_is_cut_where_the_loop_shows() {
    pytest_is_importable();
    let mut looping =
        format!("```python\n{PATH_FIX}from textutils import slugify\n\n\ndef test_slugify():\n");
    for i in 0..2000 {
        looping.push_str(&format!("    assert slugify('a{i}') == 'a{i}'\n"));
    }
    // A machine that writes the 2,000 lines in about 40 s.
    let server = FakeServer::start(vec![Reply::SlowStream(looping, 2)]).await;
    let mut s = textutils_project(&server.url);
    s.config.llm.model = "qwen2.5-coder:1.5b".into();
    let started = std::time::Instant::now();
    let done = run_on(&s, &create_tests()).await.unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "heard out: {:?}",
        started.elapsed()
    );
    assert_eq!(done.rounds, 1, "{}", done.summary);
    let written = overlay_file(&s, "tests/test_textutils.py").unwrap();
    assert_eq!(written.matches("assert slugify").count(), 20, "{written}");
    let said = s.store.effects(0, Some("llm")).unwrap();
    assert!(
        said[0].output.ends_with(
            "[cut: the reply went into a loop, lines like `assert slugify('a0') == 'a0'`]"
        ),
        "{}",
        said[0].output
    );
}

/// Asked for a test of `slugify`, the model also tested a function the
/// task does not name, expecting what it does not do, and gave that back
/// unchanged when told: the unasked failing test is left out, the asked
/// one stands, and the summary says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_test_of_what_the_task_does_not_name_is_left_out() {
    pytest_is_importable();
    let both = format!(
        "```python\n{PATH_FIX}from textutils import shout, slugify\n\n\ndef test_slugify():\n    assert slugify('A b') == 'a-b'\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n```"
    );
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(both.clone()),
        Reply::OpenaiStream(both),
    ])
    .await;
    let mut s = textutils_project(&server.url);
    s.config.llm.model = "qwen2.5-coder:1.5b".into();
    let module = format!("{TEXTUTILS}\n\ndef shout(text):\n    return text + '!'\n");
    s.store
        .stable_put("textutils.py", module.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    let done = run_on(&s, &create_tests()).await.unwrap();
    assert_eq!(done.rounds, 1, "{}", done.summary);
    let written = overlay_file(&s, "tests/test_textutils.py").unwrap();
    assert!(
        written.contains("def test_slugify") && !written.contains("def test_shout"),
        "{written}"
    );
    assert!(
        done.summary.contains(
            "left out tests the task did not ask for, which fail on the code as it is: test_shout"
        ) && done.summary.contains("tests passed"),
        "{}",
        done.summary
    );
}
