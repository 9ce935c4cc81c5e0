use super::fake::{FakeServer, Reply};
use super::*;
use serde_json::json;

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

/// The JSON body of scripted request `i`.
fn body_of(server: &FakeServer, i: usize) -> serde_json::Value {
    let req = server.requests.lock().unwrap()[i].clone();
    serde_json::from_str(req.split_once('\n').unwrap().1).unwrap()
}

#[tokio::test]
async fn ollama_is_asked_for_the_window_prompts_are_sized_to_and_to_keep_the_model() {
    // The model could take 32k tokens: Ollama is asked for the configured
    // 8192, which is what prompts are sized to.
    let server =
        FakeServer::start_with_window(vec![Reply::OllamaStream("ok".into())], Some(32_768)).await;
    let c = client(Provider::Ollama, &server.url, true);
    assert_eq!(chat(&c).await.unwrap(), "ok");
    let body = body_of(&server, 0);
    assert_eq!(body["options"]["num_ctx"], 8192, "{body}");
    assert_eq!(body["keep_alive"], "30m", "{body}");
    assert_eq!(c.context_window().await, 8192);

    // A model with a smaller window than configured: its own.
    let server =
        FakeServer::start_with_window(vec![Reply::OllamaStream("ok".into())], Some(2048)).await;
    let c = client(Provider::Ollama, &server.url, true);
    chat(&c).await.unwrap();
    assert_eq!(body_of(&server, 0)["options"]["num_ctx"], 2048);

    // The user's own num_ctx and options win; keep_alive can be left out.
    let server =
        FakeServer::start_with_window(vec![Reply::OllamaStream("ok".into())], Some(32_768)).await;
    let mut c = client(Provider::Ollama, &server.url, true);
    c.config.options =
        serde_json::from_value(json!({"num_ctx": 16384, "top_k": 5, "temperature": 0.9})).unwrap();
    c.config.keep_alive = None;
    chat(&c).await.unwrap();
    let body = body_of(&server, 0);
    assert_eq!(body["options"]["num_ctx"], 16384, "{body}");
    assert_eq!(body["options"]["top_k"], 5);
    assert_eq!(body["options"]["temperature"], 0.9);
    assert!(body.get("keep_alive").is_none(), "{body}");
    assert_eq!(c.context_window().await, 16384, "prompts sized to it too");
}

#[tokio::test]
async fn options_extra_fields_and_headers_reach_an_openai_server() {
    let server = FakeServer::start(vec![Reply::OpenaiJson("ok".into())]).await;
    let mut cfg = client(Provider::Openai, &server.url, false).config.clone();
    cfg.options = serde_json::from_value(json!({"top_p": 0.5, "temperature": 0.0})).unwrap();
    cfg.extra_body = serde_json::from_value(
        json!({"reasoning": {"effort": "low"}, "model": "not-this-one", "messages": []}),
    )
    .unwrap();
    std::env::set_var("CHIMERA_TEST_AZURE_KEY", "s3cret");
    cfg.headers = [
        ("api-key".to_owned(), "${CHIMERA_TEST_AZURE_KEY}".to_owned()),
        ("HTTP-Referer".to_owned(), "https://chimera.dev".to_owned()),
    ]
    .into();
    let c = LlmClient::new(&cfg).unwrap();
    assert_eq!(chat(&c).await.unwrap(), "ok");
    let body = body_of(&server, 0);
    assert_eq!(body["top_p"], 0.5);
    assert_eq!(body["temperature"], 0.0, "options win over Chimera's own");
    assert_eq!(body["reasoning"]["effort"], "low");
    assert_eq!(body["model"], "m", "extra fields never replace Chimera's");
    assert_eq!(body["messages"][0]["content"], "hi");
    let head = server.heads.lock().unwrap()[0].clone();
    assert!(head.contains("api-key: s3cret"), "{head}");
    assert!(head.contains("http-referer: https://chimera.dev"), "{head}");
}

#[test]
fn a_header_naming_an_unset_variable_or_a_bad_value_is_refused_by_name() {
    let cfg = |value: &str| LlmConfig {
        headers: [("api-key".to_owned(), value.to_owned())].into(),
        ..LlmConfig::default()
    };
    let err = LlmClient::new(&cfg("${CHIMERA_TEST_SURELY_UNSET}"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("api-key") && err.contains("CHIMERA_TEST_SURELY_UNSET"),
        "{err}"
    );
    let err = LlmClient::new(&cfg("${OPEN")).err().unwrap().to_string();
    assert!(err.contains("without its `}`"), "{err}");
    let err = LlmClient::new(&cfg("line\nbreak"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("not a valid header value"), "{err}");
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let server = FakeServer::start(vec![
        Reply::RetryAfter("1".into()),
        Reply::OpenaiJson("after the wait".into()),
    ])
    .await;
    let c = client(Provider::Openai, &server.url, false);
    let start = std::time::Instant::now();
    assert_eq!(chat(&c).await.unwrap(), "after the wait");
    let waited = start.elapsed();
    // The backoff alone would be 400 ms.
    assert!(waited >= Duration::from_millis(950), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}

fn tools() -> serde_json::Value {
    json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}])
}

fn conversation() -> Vec<ChatMessage> {
    let call = ToolCall {
        id: "toolu_0".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.py"}),
    };
    vec![
        ChatMessage::system("You edit code."),
        ChatMessage::user("fix a.py"),
        ChatMessage::assistant_call("Reading it.", &call),
        ChatMessage::tool_result("toolu_0", "x = 1\n"),
    ]
}

fn hosted(provider: Provider, url: String, key_var: &str) -> LlmClient {
    std::env::set_var(key_var, "k3y");
    LlmClient::new(&LlmConfig {
        provider,
        url,
        model: "m".into(),
        api_key_env: Some(key_var.into()),
        timeout_ms: 2_000,
        max_retries: 0,
        ..LlmConfig::default()
    })
    .unwrap()
}

#[tokio::test]
async fn anthropic_streams_text_and_tool_calls_with_its_own_key_header() {
    let server = FakeServer::start(vec![
        Reply::AnthropicStream("def f():\n    return 1\n".into()),
        Reply::AnthropicToolCall("read_file".into(), r#"{"path": "b.py"}"#.into()),
    ])
    .await;
    let c = hosted(
        Provider::Anthropic,
        format!("{}/v1", server.url),
        "CHIMERA_TEST_ANTHROPIC_KEY",
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let s2 = seen.clone();
    let text = c
        .chat(&conversation(), &CancellationToken::new(), &move |d| {
            s2.lock().unwrap().push_str(d)
        })
        .await
        .unwrap();
    assert_eq!(text, "def f():\n    return 1\n");
    assert_eq!(*seen.lock().unwrap(), text, "deltas arrive as streamed");
    let req = server.requests.lock().unwrap()[0].clone();
    assert!(req.starts_with("post /v1/messages"), "{req}");
    let head = server.heads.lock().unwrap()[0].clone();
    assert!(
        head.contains("x-api-key: k3y") && head.contains("anthropic-version: 2023-06-01"),
        "{head}"
    );
    assert!(!head.contains("authorization"), "{head}");
    let body = body_of(&server, 0);
    assert_eq!(body["system"], "You edit code.");
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": "fix a.py"})
    );
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_0", "name": "read_file", "input": {"path": "a.py"}})
    );
    assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "toolu_0");

    let opts = ChatOptions {
        tools: Some(tools()),
        ..ChatOptions::default()
    };
    let reply = c
        .chat_reply(&conversation(), &opts, &CancellationToken::new(), &|_| {})
        .await
        .unwrap();
    let call = reply.tool_call.unwrap();
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("toolu_1", "read_file")
    );
    assert_eq!(call.arguments, json!({"path": "b.py"}));
    assert_eq!(
        body_of(&server, 1)["tools"][0]["input_schema"]["properties"]["path"]["type"],
        "string"
    );
}

#[tokio::test]
async fn gemini_streams_text_and_function_calls_with_its_own_key_header() {
    let server = FakeServer::start(vec![
        Reply::GeminiStream("print(1)".into()),
        Reply::GeminiToolCall("read_file".into(), json!({"path": "b.py"})),
    ])
    .await;
    let c = hosted(
        Provider::Gemini,
        format!("{}/v1beta", server.url),
        "CHIMERA_TEST_GEMINI_KEY",
    );
    let text = c
        .chat(&conversation(), &CancellationToken::new(), &|_| {})
        .await
        .unwrap();
    assert_eq!(text, "print(1)");
    let req = server.requests.lock().unwrap()[0].clone();
    assert!(
        req.starts_with("post /v1beta/models/m:streamgeneratecontent?alt=sse"),
        "{req}"
    );
    let head = server.heads.lock().unwrap()[0].clone();
    assert!(head.contains("x-goog-api-key: k3y"), "{head}");
    let body = body_of(&server, 0);
    assert_eq!(
        body["systemInstruction"]["parts"][0]["text"],
        "You edit code."
    );
    assert_eq!(body["contents"][1]["role"], "model");
    assert_eq!(
        body["contents"][1]["parts"][1]["functionCall"]["name"],
        "read_file"
    );
    // A result answers its call by the function's name.
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"]["name"],
        "read_file"
    );

    let opts = ChatOptions {
        tools: Some(tools()),
        ..ChatOptions::default()
    };
    let reply = c
        .chat_reply(&conversation(), &opts, &CancellationToken::new(), &|_| {})
        .await
        .unwrap();
    let call = reply.tool_call.unwrap();
    assert_eq!(call.name, "read_file");
    assert_eq!(call.arguments, json!({"path": "b.py"}));
    assert_eq!(
        body_of(&server, 1)["tools"][0]["functionDeclarations"][0]["name"],
        "read_file"
    );
}

#[tokio::test]
async fn a_hosted_stream_cut_off_before_its_end_is_truncated() {
    // The Anthropic stream of a Truncated reply never sends message_stop.
    let server = FakeServer::start(vec![Reply::Truncated("partial".into())]).await;
    let c = hosted(
        Provider::Anthropic,
        format!("{}/v1", server.url),
        "CHIMERA_TEST_ANTHROPIC_KEY2",
    );
    assert!(matches!(chat(&c).await.unwrap_err(), LlmError::Truncated));
}

/// `llm.timeout_ms` limits silence, not a whole reply: a slow machine's
/// model that streams for longer than it, never pausing that long, gets
/// its answer through; a server that says nothing for that long is given
/// up on, and the message says which limit to raise.
#[tokio::test]
async fn a_slow_stream_is_not_cut_while_it_keeps_coming() {
    let text = "def add(a, b):\n    return a + b\n# streamed slowly, a piece at a time\n";
    let server = FakeServer::start(vec![Reply::SlowStream(text.into(), 120)]).await;
    let mut c = client(Provider::Openai, &server.url, true);
    c.config.timeout_ms = 500;
    c.config.max_retries = 0;
    let started = std::time::Instant::now();
    let reply = chat(&c).await.expect("a reply that never paused 500 ms");
    assert_eq!(reply, text);
    assert!(
        started.elapsed() > Duration::from_millis(1000),
        "it did stream slowly"
    );

    let server = FakeServer::start(vec![Reply::Hang]).await;
    let mut c = client(Provider::Openai, &server.url, true);
    c.config.timeout_ms = 300;
    c.config.max_retries = 0;
    let err = chat(&c).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("llm.timeout_ms"), "{err}");

    // The whole reply has its own, generous cap.
    let server = FakeServer::start(vec![Reply::SlowStream(text.into(), 120)]).await;
    let mut c = client(Provider::Openai, &server.url, true);
    c.config.timeout_ms = 500;
    c.config.request_timeout_ms = 600;
    c.config.max_retries = 0;
    let err = chat(&c).await.unwrap_err();
    assert!(err.to_string().contains("llm.request_timeout_ms"), "{err}");
}

/// Ollama's `/api/ps` decides whether a request waits for its model to load:
/// a name without a tag is its `:latest`; a server that lists nothing is
/// loading it; one that does not answer says nothing.
#[tokio::test]
async fn ollama_says_when_it_loads_the_model_first() {
    let held = FakeServer::start_ollama(vec![], &["m:latest"]).await;
    let c = client(Provider::Ollama, &held.url, true);
    assert_eq!(c.wait_ahead().await, None, "m is m:latest, already loaded");
    let empty = FakeServer::start_ollama(vec![], &[]).await;
    let c = client(Provider::Ollama, &empty.url, true);
    let ahead = c.wait_ahead().await;
    assert_eq!(
        ahead.as_ref().map(ToString::to_string).as_deref(),
        Some("the server is loading m")
    );
    let other = FakeServer::start(vec![]).await;
    let c = client(Provider::Ollama, &other.url, true);
    assert_eq!(c.wait_ahead().await, None, "no /api/ps: nothing said");
}

#[test]
fn every_providers_token_counts_are_heard() {
    use serde_json::json;
    let heard = |pieces: &[serde_json::Value]| {
        let mut u = super::Usage::default();
        for p in pieces {
            u.heard(p);
        }
        (u.input, u.output)
    };
    // OpenAI, whole or in the last streamed piece.
    assert_eq!(
        heard(&[json!({"usage": {"prompt_tokens": 12, "completion_tokens": 3}})]),
        (Some(12), Some(3))
    );
    // Anthropic: the input when the message starts, the output at its end.
    assert_eq!(
        heard(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 40, "output_tokens": 1}}}),
            json!({"type": "message_delta", "usage": {"output_tokens": 25}}),
        ]),
        (Some(40), Some(25))
    );
    // Gemini.
    assert_eq!(
        heard(&[json!({"usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 9}})]),
        (Some(7), Some(9))
    );
    // Ollama's last line.
    assert_eq!(
        heard(&[json!({"done": true, "prompt_eval_count": 30, "eval_count": 8})]),
        (Some(30), Some(8))
    );
    // A server that says nothing.
    assert_eq!(heard(&[json!({"choices": []})]), (None, None));
}
