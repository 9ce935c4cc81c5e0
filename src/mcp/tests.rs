//! The client against the test server `tests/mcp_server.py`, over both
//! transports.

use super::*;
use serde_json::json;

fn script() -> String {
    format!("{}/tests/mcp_server.py", env!("CARGO_MANIFEST_DIR"))
}

fn stdio_config(log: &std::path::Path) -> McpConfig {
    let mut servers = BTreeMap::new();
    servers.insert(
        "t".to_owned(),
        ServerConfig {
            command: vec!["python3".into(), script()],
            env: [("MCP_LOG".to_owned(), log.display().to_string())].into(),
            url: None,
            pass_env: vec![],
        },
    );
    McpConfig {
        servers,
        timeout_ms: 10_000,
    }
}

/// Stdio servers by name, each a command line, with a time limit.
fn commands(timeout_ms: u64, servers: &[(&str, &[&str])]) -> McpConfig {
    McpConfig {
        timeout_ms,
        servers: servers
            .iter()
            .map(|(name, command)| {
                let server = ServerConfig {
                    command: command.iter().map(|a| (*a).to_owned()).collect(),
                    ..Default::default()
                };
                ((*name).to_owned(), server)
            })
            .collect(),
    }
}

/// Starts the HTTP flavour of the test server; returns its URL.
fn http_server(flags: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(script()).arg("--http").args(flags);
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the test MCP server");
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    (child, format!("http://127.0.0.1:{}/mcp", port.trim()))
}

fn log_lines(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn stdio_server_starts_on_first_use_lists_every_page_and_calls_tools() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let hub = Hub::new(stdio_config(&log), dir.path().to_owned());
    let cancel = CancellationToken::new();
    assert!(
        log_lines(&log).is_empty(),
        "nothing starts before it is needed"
    );

    let (tools, errors) = hub.tools(|_| true, &cancel).await;
    assert!(errors.is_empty(), "{errors:?}");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t.echo", "t.add", "t.fail", "t.write_marker"]);
    assert_eq!(tools[1].input_schema["required"], json!(["a", "b"]));

    // A notification arrives before echo's answer: it is skipped.
    let echoed = hub.call("t.echo", json!({"text": "hi"}), &cancel).await;
    assert_eq!(echoed.unwrap(), "hi");
    assert_eq!(
        hub.call("t.add", json!({"a": 2, "b": 3}), &cancel)
            .await
            .unwrap(),
        "5"
    );
    let failed = hub.call("t.fail", json!({"message": "no"}), &cancel).await;
    assert!(
        matches!(&failed, Err(McpError::Tool { message, .. }) if message == "no"),
        "{failed:?}"
    );
    let unknown = hub.call("t.nope", json!({}), &cancel).await.unwrap_err();
    assert!(
        unknown.to_string().contains("has no tool `nope`"),
        "{unknown}"
    );
    assert!(unknown.to_string().contains("t.echo"), "{unknown}");
    assert!(matches!(
        hub.call("x.echo", json!({}), &cancel).await,
        Err(McpError::UnknownServer(_))
    ));
    assert!(matches!(
        hub.call("echo", json!({}), &cancel).await,
        Err(McpError::BadName(_))
    ));
    let lines = log_lines(&log);
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("start")).count(),
        1,
        "one process for every call: {lines:?}"
    );
}

#[tokio::test]
async fn servers_not_wanted_are_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let hub = Hub::new(stdio_config(&log), dir.path().to_owned());
    let (tools, errors) = hub.tools(|_| false, &CancellationToken::new()).await;
    assert!(tools.is_empty() && errors.is_empty());
    assert!(log_lines(&log).is_empty());
}

#[tokio::test]
async fn a_server_that_cannot_start_or_dies_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let config = commands(
        5_000,
        &[
            ("missing", &["chimera-no-such-program"]),
            (
                "dies",
                &[
                    "python3",
                    "-c",
                    "import sys; sys.stderr.write('bad token\\n'); sys.exit(3)",
                ],
            ),
            ("empty", &[]),
        ],
    );
    let hub = Hub::new(config, dir.path().to_owned());
    let cancel = CancellationToken::new();
    let (tools, errors) = hub.tools(|_| true, &cancel).await;
    assert!(tools.is_empty());
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 3, "{text:?}");
    assert!(
        text.iter()
            .any(|e| e.contains("`dies` closed the connection") && e.contains("bad token")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|e| e.contains("`missing` could not be started")),
        "{text:?}"
    );
    assert!(text.iter().any(|e| e.contains("set `command`")), "{text:?}");
}

#[tokio::test]
async fn a_stdio_server_gets_the_allow_list_its_env_and_what_pass_env_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("env");
    let script = format!(
        "import os, sys; open({:?}, 'w').write(' '.join(sorted(os.environ))); sys.exit(3)",
        seen.display().to_string()
    );
    let mut config = commands(5_000, &[("peek", &["python3", "-c", &script])]);
    if let Some(s) = config.servers.get_mut("peek") {
        s.env = [("MINE".to_owned(), "1".to_owned())].into();
        // `cargo test` runs this with its CARGO_* variables set.
        s.pass_env = vec!["CARGO_PKG_NAME".into()];
    }
    let hub = Hub::new(config, dir.path().to_owned());
    let _ = hub.tools(|_| true, &CancellationToken::new()).await;
    let names = std::fs::read_to_string(&seen).unwrap();
    let names: Vec<&str> = names.split(' ').collect();
    assert!(
        names.contains(&"PATH") && names.contains(&"MINE"),
        "{names:?}"
    );
    assert!(names.contains(&"CARGO_PKG_NAME"), "pass_env: {names:?}");
    assert!(
        !names.contains(&"CARGO_MANIFEST_DIR"),
        "not passed: {names:?}"
    );
}

#[tokio::test]
async fn a_hanging_server_times_out_and_cancellation_stops_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = commands(
        300,
        &[("mute", &["python3", "-c", "import time; time.sleep(30)"])],
    );
    let hub = Hub::new(config, dir.path().to_owned());
    let err = hub
        .call("mute.x", json!({}), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("within 300 ms"), "{err}");
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(matches!(
        hub.call("mute.x", json!({}), &cancel).await,
        Err(McpError::Cancelled)
    ));
}

async fn http_round_trip(flags: &[&str]) {
    let (mut child, url) = http_server(flags);
    let mut config = McpConfig {
        timeout_ms: 5_000,
        ..Default::default()
    };
    config.servers.insert(
        "web".into(),
        ServerConfig {
            url: Some(url),
            ..Default::default()
        },
    );
    let hub = Hub::new(config, std::env::temp_dir());
    let cancel = CancellationToken::new();
    let (tools, errors) = hub.tools(|_| true, &cancel).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(tools.len(), 4);
    // The server refuses calls without the session it handed out.
    let r = hub
        .call("web.add", json!({"a": 1.5, "b": 2}), &cancel)
        .await;
    assert_eq!(r.unwrap(), "3.5");
    let r = hub.call("web.fail", json!({}), &cancel).await;
    assert!(matches!(r, Err(McpError::Tool { .. })), "{r:?}");
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn streamable_http_with_json_answers() {
    http_round_trip(&[]).await;
}

#[tokio::test]
async fn streamable_http_with_event_stream_answers() {
    http_round_trip(&["--sse"]).await;
}

/// Events separated by CRLF, on a stream the server keeps open.
#[tokio::test]
async fn streamable_http_with_crlf_events_on_an_open_stream() {
    http_round_trip(&["--sse", "--crlf"]).await;
}
