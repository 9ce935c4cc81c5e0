use super::fake::{FakeServer, Reply};
use super::*;

fn client(provider: Provider, url: &str, stream: bool) -> LlmClient {
    LlmClient::new(&LlmConfig {
        provider,
        url: url.to_owned(),
        model: "m".into(),
        timeout_ms: 2_000,
        max_retries: 2,
        stream,
        ..LlmConfig::default()
    })
    .unwrap()
}

async fn chat(c: &LlmClient) -> Result<String, LlmError> {
    c.chat(
        &[ChatMessage::user("hi")],
        &CancellationToken::new(),
        &|_| {},
    )
    .await
}

#[tokio::test]
async fn openai_stream_is_assembled_and_sent_to_the_v1_path() {
    let server =
        FakeServer::start(vec![Reply::OpenaiStream("def f():\n    return 1\n".into())]).await;
    let c = client(Provider::Openai, &format!("{}/v1", server.url), true);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let s2 = seen.clone();
    let text = c
        .chat(
            &[ChatMessage::user("hi")],
            &CancellationToken::new(),
            &move |d| s2.lock().unwrap().push_str(d),
        )
        .await
        .unwrap();
    assert_eq!(text, "def f():\n    return 1\n");
    assert_eq!(*seen.lock().unwrap(), text, "deltas arrive as streamed");
    let req = server.requests.lock().unwrap()[0].clone();
    assert!(req.starts_with("post /v1/chat/completions"), "{req}");
    assert!(req.contains("\"stream\":true"), "{req}");
}

#[tokio::test]
async fn openai_non_streamed() {
    let server = FakeServer::start(vec![Reply::OpenaiJson("hello".into())]).await;
    let c = client(Provider::Openai, &server.url, false);
    assert_eq!(chat(&c).await.unwrap(), "hello");
}

#[tokio::test]
async fn ollama_stream_uses_api_chat() {
    let server = FakeServer::start(vec![Reply::OllamaStream("print(1)".into())]).await;
    let c = client(Provider::Ollama, &server.url, true);
    assert_eq!(chat(&c).await.unwrap(), "print(1)");
    assert!(server.requests.lock().unwrap()[0].starts_with("post /api/chat"));
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = FakeServer::start(vec![
        Reply::Status(500, "overloaded".into()),
        Reply::OpenaiJson("recovered".into()),
    ])
    .await;
    let c = client(Provider::Openai, &server.url, false);
    assert_eq!(chat(&c).await.unwrap(), "recovered");

    let server = FakeServer::start(vec![Reply::Status(500, "down".into()); 3]).await;
    let c = client(Provider::Openai, &server.url, false);
    let err = chat(&c).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 500, .. }), "{err}");
    assert_eq!(
        server.requests.lock().unwrap().len(),
        3,
        "one try and two retries"
    );
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = FakeServer::start(vec![Reply::Status(404, "model not found".into())]).await;
    let c = client(Provider::Openai, &server.url, false);
    let err = chat(&c).await.unwrap_err();
    assert!(
        err.to_string().contains("404") && err.to_string().contains("model not found"),
        "{err}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn truncated_streams_invalid_json_and_empty_replies_fail() {
    let server = FakeServer::start(vec![Reply::Truncated("def f(".into()); 3]).await;
    let c = client(Provider::Openai, &server.url, true);
    assert!(matches!(chat(&c).await.unwrap_err(), LlmError::Truncated));

    let server = FakeServer::start(vec![Reply::Status(200, "data: {not json\n\n".into())]).await;
    let c = client(Provider::Openai, &server.url, true);
    assert!(matches!(chat(&c).await.unwrap_err(), LlmError::BadReply(_)));

    let server = FakeServer::start(vec![Reply::OpenaiJson("   ".into())]).await;
    let c = client(Provider::Openai, &server.url, false);
    assert!(matches!(chat(&c).await.unwrap_err(), LlmError::Empty));
}

#[tokio::test]
async fn a_web_page_instead_of_the_api_says_to_check_the_url() {
    let page = "<!doctype html><html><head><title>Open WebUI</title></head><body>app</body></html>";
    for (provider, stream) in [
        (Provider::Openai, true),
        (Provider::Openai, false),
        (Provider::Ollama, true),
    ] {
        let server = FakeServer::start(vec![Reply::Html(page.into())]).await;
        let c = client(provider, &server.url, stream);
        let err = chat(&c).await.unwrap_err();
        assert!(matches!(err, LlmError::NotTheApi { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("Open WebUI") && text.contains("llm.url"),
            "{text}"
        );
        assert_eq!(server.requests.lock().unwrap().len(), 1, "not retried");
    }
}

#[tokio::test]
async fn unreachable_server_names_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut cfg = LlmConfig {
        url: url.clone(),
        max_retries: 0,
        ..LlmConfig::default()
    };
    cfg.provider = Provider::Openai;
    let err = chat(&LlmClient::new(&cfg).unwrap()).await.unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains(&url));
}

#[tokio::test]
async fn timeouts_and_cancellation_end_a_hanging_request() {
    let server = FakeServer::start(vec![Reply::Hang]).await;
    let mut c = client(Provider::Openai, &server.url, false);
    c.config.timeout_ms = 200;
    c.config.max_retries = 0;
    assert!(matches!(
        chat(&c).await.unwrap_err(),
        LlmError::Timeout { .. }
    ));

    let server = FakeServer::start(vec![Reply::Hang]).await;
    let c = client(Provider::Openai, &server.url, false);
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let start = std::time::Instant::now();
    let err = c
        .chat(&[ChatMessage::user("x")], &cancel, &|_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Cancelled));
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn missing_api_key_variable_is_reported_by_name() {
    let cfg = LlmConfig {
        api_key_env: Some("CHIMERA_TEST_SURELY_UNSET".into()),
        ..LlmConfig::default()
    };
    let err = LlmClient::new(&cfg).err().unwrap();
    assert!(err.to_string().contains("CHIMERA_TEST_SURELY_UNSET"));
}

#[tokio::test]
async fn the_context_window_is_asked_from_the_server_once_else_configured() {
    let server = FakeServer::start_with_window(vec![], Some(4096)).await;
    let c = client(Provider::Openai, &format!("{}/v1", server.url), false);
    assert_eq!(c.context_window().await, 4096);
    assert_eq!(c.context_window().await, 4096);

    let server = FakeServer::start(vec![]).await;
    let mut c = client(Provider::Openai, &format!("{}/v1", server.url), false);
    c.config.context_tokens = 1234;
    assert_eq!(
        c.context_window().await,
        1234,
        "no /props: the configured window"
    );
}
