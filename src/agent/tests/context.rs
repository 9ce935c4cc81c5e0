//! Every request fits the model's context: a long conversation on a server
//! with a small window is cut before it goes, and an overflow the server
//! still reports is sent once more, smaller.

use super::*;

/// A run of `job()` on `s`, asking `messages` once as code mode does.
async fn ask(s: &Setup, messages: &[ChatMessage]) -> Result<String, AgentError> {
    let llm = LlmClient::new(&s.config.llm).unwrap();
    let services = Services::new(&s.config, s._dir.path().to_owned());
    let cancel = CancellationToken::new();
    let job = job();
    let run = Run::new(
        s.store.clone(),
        &s.config,
        Some(&llm),
        &services,
        &job,
        &cancel,
        &|_| {},
    )?;
    run.ask(": a question", messages, &ChatOptions::default())
        .await
}

/// A task with a long file and three repair rounds: ~24,000 characters.
fn long_conversation() -> Vec<ChatMessage> {
    let file = "def f(x):\n    return x\n\n\n".repeat(500);
    let mut m = vec![
        ChatMessage::system("You are a coding agent."),
        ChatMessage::user(format!("File `app.py`:\n```python\n{file}```\nTask: fix f")),
    ];
    for round in 1..=3 {
        m.push(ChatMessage::assistant(format!(
            "answer {round} {}",
            "y".repeat(1500)
        )));
        m.push(ChatMessage::user(format!(
            "repair {round}: the tests failed"
        )));
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_cut_to_the_servers_window_before_it_goes() {
    // llama.cpp with `-c 2048`: 2,048 tokens, 1,024 of them for the reply.
    let server =
        FakeServer::start_with_window(vec![Reply::OpenaiStream("ok".into())], Some(2048)).await;
    let mut s = setup(&server.url);
    s.config.llm.max_tokens = 1024;
    assert_eq!(ask(&s, &long_conversation()).await.unwrap(), "ok");
    let sent = server.requests.lock().unwrap()[0].clone();
    assert!(
        sent.len() < (2048 - 1024) * 3 + 1500,
        "{} bytes sent",
        sent.len()
    );
    assert!(sent.contains("repair 3"), "the last round stays");
    assert!(!sent.contains("repair 1"), "the oldest round went");
    assert!(sent.contains("left out to fit the model's context"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_the_server_reports_is_sent_once_more_smaller() {
    // The estimate was wrong for this tokenizer: the server says so.
    let refused = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
    let server = FakeServer::start_with_window(
        vec![
            Reply::Status(400, refused.into()),
            Reply::OpenaiStream("ok".into()),
        ],
        Some(8192),
    )
    .await;
    let s = setup(&server.url);
    assert_eq!(ask(&s, &long_conversation()).await.unwrap(), "ok");
    let requests = server.requests.lock().unwrap().clone();
    let sizes: Vec<usize> = requests
        .iter()
        .filter(|r| r.contains("Task: fix f"))
        .map(String::len)
        .collect();
    assert_eq!(sizes.len(), 2, "asked twice");
    assert!(sizes[1] < sizes[0], "{sizes:?}");
}
