//! `chimera mcp serve` as an MCP host meets it: the official SDK's client
//! (rmcp) starts the binary on a git project, lists its tools, reads,
//! writes and proposes; the proposal is what `chimera agents` shows and
//! `chimera accept` applies. Refusals: the preset, paths outside the
//! project, links, secrets.

mod support;

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use support::{project, Project, BIN};

type Host = RunningService<RoleClient, rmcp::model::ClientConfig>;

/// An MCP host named `name` with `chimera mcp serve ARGS` in `p`.
async fn host(p: &Project, name: &str, args: &[&str]) -> Host {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["mcp", "serve"])
        .args(args)
        .current_dir(&p.root)
        .env("XDG_CONFIG_HOME", &p.config_home)
        .env("XDG_DATA_HOME", &p.data_home)
        .stderr(Stdio::inherit());
    let transport = TokioChildProcess::new(cmd).expect("chimera mcp serve starts");
    let info = rmcp::model::ClientConfig::new(
        Default::default(),
        rmcp::model::Implementation::new(name, "1.0"),
    );
    info.serve(transport).await.expect("the MCP handshake")
}

/// Calls `tool` with `args`: its text and whether it is an error.
async fn call(h: &Host, tool: &str, args: Value) -> (String, bool) {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let result: CallToolResult = h.call_tool(params).await.expect("tools/call answers");
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, result.is_error == Some(true))
}

async fn ok(h: &Host, tool: &str, args: Value) -> String {
    let (text, error) = call(h, tool, args.clone()).await;
    assert!(!error, "{tool} {args}: {text}");
    text
}

async fn refused(h: &Host, tool: &str, args: Value) -> String {
    let (text, error) = call(h, tool, args.clone()).await;
    assert!(error, "{tool} {args} must be refused, got: {text}");
    text
}

const FIXED: &str = "def add(a, b):\n    return a + b\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_reads_writes_into_its_overlay_and_proposes_what_the_shell_accepts() {
    let p = project(&[]);
    std::fs::write(p.root.join(".env"), "TOKEN=secret\n").unwrap();
    let h = host(&p, "claude-code", &[]).await;
    let tools: Vec<String> = h
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for want in [
        "read_file",
        "list_dir",
        "search_files",
        "write_file",
        "delete_file",
        "propose",
        "proposal_status",
        "nodes",
        "node",
        "callers",
        "callees",
        "snapshot",
        "history",
    ] {
        assert!(tools.contains(&want.to_owned()), "{want} in {tools:?}");
    }
    assert_eq!(
        ok(&h, "read_file", json!({"path": "calc.py"})).await,
        p.file()
    );
    let listed = ok(&h, "list_dir", json!({})).await;
    assert!(
        listed.contains("calc.py") && !listed.contains(".env"),
        "secrets are not listed: {listed}"
    );
    assert!(ok(&h, "search_files", json!({"pattern": "a - b"}))
        .await
        .contains("calc.py"));

    // Writes go to the session's overlay: the session sees them, the disk does not.
    ok(
        &h,
        "write_file",
        json!({"path": "calc.py", "content": FIXED}),
    )
    .await;
    assert_eq!(ok(&h, "read_file", json!({"path": "calc.py"})).await, FIXED);
    assert_eq!(
        p.file(),
        "def add(a, b):\n    return a - b\n",
        "the human's file is untouched"
    );

    // Nothing outside the project, through a link, or secret.
    for bad in ["../outside.py", "/etc/passwd", "a/../../x.py"] {
        let why = refused(&h, "write_file", json!({"path": bad, "content": "x"})).await;
        assert!(!why.is_empty());
    }
    std::os::unix::fs::symlink("/tmp", p.root.join("tmplink")).unwrap();
    let why = refused(
        &h,
        "write_file",
        json!({"path": "tmplink/evil.py", "content": "x"}),
    )
    .await;
    assert!(why.contains("link"), "{why}");
    assert!(!std::path::Path::new("/tmp/evil.py").exists());
    for secret in [".env", ".ENV", "deploy/id_rsa"] {
        let why = refused(&h, "write_file", json!({"path": secret, "content": "x"})).await;
        assert!(why.contains("secret"), "{secret}: {why}");
    }
    assert!(refused(&h, "read_file", json!({"path": ".env"}))
        .await
        .contains("secret"));
    let huge = "#".repeat(3_000_000);
    let (why, error) = call(&h, "write_file", json!({"path": "big.py", "content": huge})).await;
    assert!(
        error && why.contains("bytes"),
        "a 3 MB write is refused: {why}"
    );
    refused(&h, "read_file", json!({"path": "big.py"})).await;

    // A proposal that does not parse goes back to the host.
    ok(
        &h,
        "write_file",
        json!({"path": "broken.py", "content": "def f(:\n"}),
    )
    .await;
    let why = refused(&h, "propose", json!({"summary": "broken"})).await;
    assert!(why.contains("broken.py"), "{why}");
    ok(&h, "delete_file", json!({"path": "broken.py"})).await;

    let proposed: Value =
        serde_json::from_str(&ok(&h, "propose", json!({"summary": "add adds"})).await).unwrap();
    let id = proposed["id"].as_str().unwrap().to_owned();
    assert_eq!(proposed["state"], "completed", "{proposed}");
    assert!(
        proposed["diff"]
            .as_str()
            .unwrap()
            .contains("+    return a + b"),
        "{proposed}"
    );
    let status: Value =
        serde_json::from_str(&ok(&h, "proposal_status", json!({"id": id})).await).unwrap();
    assert_eq!(status["state"], "completed");

    // The shell sees the host's proposal (its core is this server's) and accepts it.
    let agents = p.json(&["agents"]);
    let agent = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} in {agents}"));
    assert_eq!(agent["state"], "completed");
    assert_eq!(agent["external"], "mcp:claude-code");
    assert_eq!(agent["summary"], "add adds");
    p.ok(&["accept", &id]);
    assert_eq!(p.file(), FIXED);
    let status: Value =
        serde_json::from_str(&ok(&h, "proposal_status", json!({"id": id})).await).unwrap();
    assert_eq!(status["state"], "accepted");

    // Every call is in the effect log, refusals included.
    let effects = p.json(&["effects", "--kind", "mcp"]);
    let said: Vec<String> = effects
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} -> {}", e["input"], e["output"]))
        .collect();
    assert!(
        said.iter()
            .any(|s| s.contains("claude-code called write_file") && s.contains("calc.py")),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|s| s.contains("/etc/passwd") && s.contains("refused")),
        "{said:#?}"
    );
    assert!(
        said.iter().any(|s| s.contains("called propose")),
        "{said:#?}"
    );
    // The 3 MB write, refused before it reached the core, is there too,
    // its content shown by its size.
    assert!(
        said.iter().any(|s| s.contains("called write_file")
            && s.contains("big.py")
            && s.contains("<3000000 bytes>")
            && s.contains("refused")),
        "{said:#?}"
    );

    // Work not proposed when the host goes away is dropped, and said so.
    ok(
        &h,
        "write_file",
        json!({"path": "calc.py", "content": "def add(a, b):\n    return 0\n"}),
    )
    .await;
    let pending = p.json(&["agents"]);
    let open = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["state"] == "running")
        .unwrap_or_else(|| panic!("the session's new agent runs: {pending}"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.cancel().await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let ended = loop {
        let a = p.json(&["agent", &open]);
        if a["agent"]["state"] != "running" || std::time::Instant::now() > deadline {
            break a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(ended["agent"]["state"], "failed", "{ended}");
    assert!(ended["agent"]["error"]
        .as_str()
        .unwrap()
        .contains("ended before it proposed"));
    assert_eq!(p.file(), FIXED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_a_host_is_offered_reaches_a_handler_of_the_core() {
    let p = project(&[]);
    let h = host(&p, "claude-code", &[]).await;
    let tools = h.list_all_tools().await.unwrap();
    assert!(tools.len() >= 13, "{} tools", tools.len());
    for t in tools {
        // Called without its arguments: refused for what it lacks, never
        // as a tool nobody serves.
        let (said, _) = call(&h, &t.name, json!({})).await;
        assert!(!said.contains("no tool `"), "{}: {said}", t.name);
    }
    h.cancel().await.unwrap();
}

/// `write_definitions` is the agents' file tool, offered to MCP hosts by
/// its table row alone: a function replaced by name in the session's
/// overlay, the human's other lines kept; code that does not parse, or
/// that changes nothing, refused with why and nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_replaces_a_function_by_name_and_is_told_why_a_broken_one_is_not_written() {
    let p = project(&[]);
    std::fs::write(
        p.root.join("calc.py"),
        "import math\n\n\ndef add(a, b):\n    return a - b\n\n\ndef root(x):\n    return math.sqrt(x)\n",
    )
    .unwrap();
    let h = host(&p, "claude-code", &[]).await;
    let why = refused(
        &h,
        "write_definitions",
        json!({"path": "calc.py", "code": "def add(a, b:\n    return a + b\n"}),
    )
    .await;
    assert!(why.contains("write_definitions()"), "{why}");
    let why = refused(
        &h,
        "write_definitions",
        json!({"path": "calc.py", "code": "def add(a, b):\n    return a - b\n"}),
    )
    .await;
    assert!(why.contains("exactly as it was"), "{why}");
    ok(
        &h,
        "write_definitions",
        json!({"path": "calc.py", "code": FIXED}),
    )
    .await;
    let seen = ok(&h, "read_file", json!({"path": "calc.py"})).await;
    assert!(
        seen.contains("return a + b") && seen.contains("math.sqrt"),
        "{seen}"
    );
    assert!(
        p.file().contains("return a - b"),
        "the human's file is untouched"
    );
    let why = refused(
        &h,
        "write_definitions",
        json!({"path": ".env", "code": "X = 1\n"}),
    )
    .await;
    assert!(why.contains("secret"), "{why}");
    h.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readonly_host_reads_and_is_refused_every_change() {
    let p = project(&[]);
    let h = host(&p, "reader", &["--preset", "readonly"]).await;
    assert_eq!(
        ok(&h, "read_file", json!({"path": "calc.py"})).await,
        p.file()
    );
    for (tool, args) in [
        ("write_file", json!({"path": "calc.py", "content": FIXED})),
        ("delete_file", json!({"path": "calc.py"})),
        ("snapshot", json!({"message": "x"})),
    ] {
        let why = refused(&h, tool, args).await;
        assert!(why.contains("readonly"), "{tool}: {why}");
    }
    assert!(refused(&h, "propose", json!({}))
        .await
        .contains("nothing to propose"));
    assert_eq!(p.json(&["agents"]), json!([]), "no agent was made");
    h.cancel().await.unwrap();

    let bad = p.run(&["mcp", "serve", "--preset", "root"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("readonly"));
}

/// MCP's streamable HTTP on `/mcp` of `chimera serve`, as a host posts it.
struct HttpHost {
    url: String,
    token: String,
    session: Option<String>,
    http: reqwest::Client,
    next: u64,
}

impl HttpHost {
    /// POSTs one JSON-RPC message; the answer with its ID, if it is a request.
    async fn send(&mut self, method: &str, params: Value, request: bool) -> Value {
        let mut body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if request {
            self.next += 1;
            body["id"] = json!(self.next);
        }
        let mut req = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        assert!(
            status < 300,
            "{method}: HTTP {status}: {}",
            resp.text().await.unwrap()
        );
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_owned());
        }
        if !request {
            return Value::Null;
        }
        // The answer is one server-sent event (or plain JSON).
        let text = resp.text().await.unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(text.as_str()))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v["id"] == json!(self.next))
            .unwrap_or_else(|| panic!("{method}: no answer in {text:?}"))
    }

    async fn tool(&mut self, name: &str, args: Value) -> (String, bool) {
        let answer = self
            .send("tools/call", json!({"name": name, "arguments": args}), true)
            .await;
        let result = &answer["result"];
        assert!(result.is_object(), "{name}: {answer}");
        (
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            result["isError"] == json!(true),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_api_serves_mcp_on_slash_mcp_behind_its_token() {
    let mut p = project(&[]);
    let served = p.serve_http();
    let url = format!("http://127.0.0.1:{}/mcp", served.port);
    let http = chimera::http::http_client();
    let initialize = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "web-host", "version": "1"},
    });
    let anonymous = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401, "no token, no MCP");
    for wrong in [
        served.token.to_uppercase(),
        served.token[..16].to_owned(),
        "x".repeat(64),
    ] {
        let refused = http
            .post(&url)
            .bearer_auth(&wrong)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            refused.status().as_u16(),
            401,
            "a wrong token ({wrong}), no MCP"
        );
    }

    let mut h = HttpHost {
        url,
        token: served.token.clone(),
        session: None,
        http,
        next: 0,
    };
    let init = h.send("initialize", initialize, true).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "chimera", "{init}");
    h.send("notifications/initialized", json!({}), false).await;
    let (_, error) = h
        .tool("write_file", json!({"path": "calc.py", "content": FIXED}))
        .await;
    assert!(!error);
    let (text, error) = h.tool("propose", json!({"summary": "over HTTP"})).await;
    assert!(!error, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = p.json(&["agent", &id]);
    assert_eq!(agent["agent"]["state"], "completed");
    assert_eq!(agent["agent"]["external"], "mcp:web-host");
    assert_eq!(p.file(), "def add(a, b):\n    return a - b\n");
    let (why, error) = h
        .tool("write_file", json!({"path": "../x.py", "content": "x"}))
        .await;
    assert!(error, "{why}");
}

/// A host reads a file, the human types in it, the host writes the file
/// whole from what it read: the proposal keeps the human's lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_whole_after_the_human_typed_keeps_what_they_typed() {
    let p = project(&[]);
    let h = host(&p, "claude-code", &[]).await;
    let before = ok(&h, "read_file", json!({"path": "calc.py"})).await;
    let typed = format!("{before}\n\ndef typed_by_the_human():\n    return 1\n");
    std::fs::write(p.root.join("calc.py"), &typed).unwrap();
    // The watcher reports it (a debounce of a fraction of a second).
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    ok(
        &h,
        "write_file",
        json!({"path": "calc.py", "content": before.replace("a - b", "a + b")}),
    )
    .await;
    let proposed: Value =
        serde_json::from_str(&ok(&h, "propose", json!({"summary": "add adds"})).await).unwrap();
    let id = proposed["id"].as_str().unwrap().to_owned();
    p.ok(&["accept", &id]);
    assert_eq!(p.file(), typed.replace("a - b", "a + b"));
}

/// A host that reads the moment its session opens, on a project whose
/// import is still running, reads the file as it is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_once_on_a_large_project_waits_for_the_import() {
    let p = project(&[]);
    for i in 0..3000 {
        let folder = p.root.join(format!("pkg{}", i / 100));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(format!("m{i}.py")), format!("x = {i}\n")).unwrap();
    }
    let h = host(&p, "eager", &[]).await;
    assert_eq!(
        ok(&h, "read_file", json!({"path": "calc.py"})).await,
        p.file()
    );
    assert_eq!(
        ok(&h, "read_file", json!({"path": "pkg29/m2999.py"})).await,
        "x = 2999\n"
    );
    h.cancel().await.unwrap();
}
