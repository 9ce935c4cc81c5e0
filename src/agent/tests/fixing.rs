//! A task to fix what fails: the failing tests decide. A change is
//! progress only when it fixes a test that failed and breaks none; one
//! that leaves the same tests failing, or the named function as it was,
//! is never proposed.

use super::*;

/// `mean` off by one in the divisor: both tests of [`TWO_TESTS`] fail.
const BUGGY: &str = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n";
const TWO_TESTS: &str = "import unittest\n\nfrom mathx import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n    def test_single(self):\n        self.assertEqual(mean([4]), 4)\n";

fn answer(body: &str) -> Reply {
    Reply::OpenaiStream(format!("```python\ndef mean(xs):\n{body}```"))
}

fn fix(task: &str) -> Job {
    Job {
        spec: TaskSpec {
            task: task.into(),
            ..job().spec
        },
        ..job()
    }
}

fn proposed(s: &Setup) -> String {
    overlay_file(s, "mathx.py").unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_after_which_the_same_tests_fail_is_never_proposed() {
    // Four tries (`agents.candidates`), each a change, each failing both
    // tests as before.
    let server = FakeServer::start(vec![
        answer("    return sum(xs) / (len(xs) + 2)\n"),
        answer("    return sum(xs) / (len(xs) + 3)\n"),
        answer("    return sum(xs) / (len(xs) + 4)\n"),
        answer("    return sum(xs) / (1 + len(xs))\n"),
    ])
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let err = run_on(&s, &fix("fix mean in mathx.py"))
        .await
        .expect_err("a change that fixes nothing is no proposal");
    let said = err.to_string();
    assert!(
        said.contains("fixed none of the failing tests") && said.contains("test_mean"),
        "{said}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 4);
    assert!(
        s.store.overlay_entries("ag").unwrap().is_empty(),
        "nothing is left in the overlay"
    );
    // The project as it is did not change between the tries: its tests
    // ran once, not once before and once after each try.
    let as_is: Vec<String> = s
        .store
        .effects(0, Some("command"))
        .unwrap()
        .into_iter()
        .map(|e| e.input)
        .filter(|r| r.contains("(the project as it is)"))
        .collect();
    assert_eq!(as_is.len(), 1, "{as_is:?}");
}

/// The human changes the project between two tries: the tests of the
/// project as it is run again, on what it is now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_as_it_is_is_tested_again_once_it_changed() {
    let s = setup("http://127.0.0.1:9");
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let t = crate::agent::checks::Tests {
        store: s.store.clone(),
        agent: "ag".into(),
        config: Default::default(),
        caps: crate::capabilities::Capabilities::new(&Default::default(), None).unwrap(),
        max_bytes: 1 << 20,
        as_is: Default::default(),
        unconfined: false,
        near: None,
    };
    let never = || false;
    assert!(t.failing_now("mathx.py", &never).is_some());
    assert!(t.failing_now("mathx.py", &never).is_some());
    s.store
        .stable_put("mathx.py", MEAN.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    assert!(
        t.failing_now("mathx.py", &never).is_none(),
        "the fixed project passes"
    );
    let as_is = s
        .store
        .effects(0, Some("command"))
        .unwrap()
        .into_iter()
        .filter(|e| e.input.contains("(the project as it is)"))
        .count();
    assert_eq!(as_is, 2, "run, kept, run again after the change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_fixes_one_failing_test_and_breaks_none_is_proposed_saying_what_still_fails()
{
    let mends_one = "    return sum(xs) / len(xs) if len(xs) > 1 else sum(xs) / 2\n";
    let server = FakeServer::start(vec![answer(mends_one)]).await;
    let s = setup(&server.url);
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let done = run_on(&s, &fix("fix mean in mathx.py")).await.unwrap();
    assert_eq!(done.rounds, 1);
    assert!(proposed(&s).contains("if len(xs) > 1"));
    assert!(
        done.summary.contains("fixes 1 failing test") && done.summary.contains("test_single"),
        "{}",
        done.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_tries_that_all_break_something_the_one_that_fixed_most_is_proposed_marked() {
    // The first fixes both tests and breaks a third; the others fix nothing.
    let three =
        format!("{TWO_TESTS}\n    def test_empty(self):\n        self.assertEqual(mean([]), 0)\n");
    let server = FakeServer::start(vec![
        answer("    return sum(xs) / len(xs)\n"),
        answer("    return sum(xs) / (len(xs) + 2)\n"),
        answer("    return sum(xs) / (len(xs) + 3)\n"),
        answer("    return sum(xs) / (len(xs) + 4)\n"),
    ])
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, BUGGY, &three);
    let done = run_on(&s, &fix("fix mean in mathx.py")).await.unwrap();
    assert_eq!(proposed(&s), MEAN, "the try that fixed two tests");
    assert!(
        done.summary.contains("TESTS FAIL") && done.summary.contains("test_empty"),
        "{}",
        done.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_leaves_the_function_the_task_names_as_it_was_is_no_fix() {
    // Without tests to judge: the first answer adds a helper and leaves
    // `mean` as it was.
    let helper = format!("```python\n{BUGGY}\n\ndef _count(xs):\n    return len(xs)\n```");
    let server = FakeServer::start(vec![
        Reply::OpenaiStream(helper),
        answer("    return sum(xs) / len(xs)\n"),
    ])
    .await;
    let mut s = setup(&server.url);
    s.config.tests.command = crate::config::TestCommand::Named(crate::config::TestsMode::Off);
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let done = run_on(&s, &fix("fix mean in mathx.py")).await.unwrap();
    assert_eq!(done.rounds, 2);
    let second = server.requests.lock().unwrap()[1].clone();
    assert!(second.contains("leaves `mean` as it was"), "{second}");
    assert_eq!(proposed(&s), MEAN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_after_the_first_are_drawn_at_once_when_the_server_has_free_slots() {
    // Four slots: the first try alone, then the other three at once.
    let slow = |body: &str| Reply::After(300, Box::new(answer(body)));
    let server = FakeServer::start_slots(
        vec![
            slow("    return sum(xs) / (len(xs) + 2)\n"),
            slow("    return sum(xs) / (len(xs) + 3)\n"),
            slow("    return sum(xs) / (len(xs) + 4)\n"),
            slow("    return sum(xs) / len(xs)\n"),
        ],
        4,
    )
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let done = run_on(&s, &fix("fix mean in mathx.py")).await.unwrap();
    assert_eq!(proposed(&s), MEAN);
    assert!(done.summary.contains("tests passed"), "{}", done.summary);
    assert_eq!(
        server
            .most_at_once
            .load(std::sync::atomic::Ordering::SeqCst),
        3
    );
    // Each try is a model call of its own in the effect log, named so.
    let calls: Vec<String> = s
        .store
        .effects(0, Some("llm"))
        .unwrap()
        .into_iter()
        .map(|e| e.input)
        .collect();
    for i in 1..=4 {
        assert!(
            calls.iter().any(|c| c.contains(&format!("try {i} of 4"))),
            "{calls:?}"
        );
    }
    // So is each test run: the project's code ran, with and without a try.
    let runs: Vec<String> = s
        .store
        .effects(0, Some("command"))
        .unwrap()
        .into_iter()
        .map(|e| e.input)
        .collect();
    assert!(
        runs.iter().any(|r| r.contains("(with the change)"))
            && runs.iter().any(|r| r.contains("(the project as it is)")),
        "{runs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_try_that_fixes_is_proposed_without_drawing_others_beside_it() {
    let server = FakeServer::start_slots(
        vec![
            answer("    return sum(xs) / len(xs)\n"),
            answer("    return sum(xs) / (len(xs) + 2)\n"),
        ],
        4,
    )
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let done = run_on(&s, &fix("fix mean in mathx.py")).await.unwrap();
    assert_eq!(proposed(&s), MEAN);
    assert_eq!(done.rounds, 1);
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_slot_candidates_come_one_after_another_and_stop_at_the_first_fix() {
    let server = FakeServer::start_slots(
        vec![
            answer("    return sum(xs) / (len(xs) + 2)\n"),
            answer("    return sum(xs) / len(xs)\n"),
        ],
        1,
    )
    .await;
    let s = setup(&server.url);
    put_mean_project(&s, BUGGY, TWO_TESTS);
    let done = run_on(&s, &fix("fix mean in mathx.py")).await.unwrap();
    assert_eq!(done.rounds, 2);
    assert_eq!(
        server.requests.lock().unwrap().len(),
        2,
        "no third answer asked for"
    );
    assert_eq!(proposed(&s), MEAN);
}
