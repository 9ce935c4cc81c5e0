//! `chimera a2a` against another Chimera serving its project: discover its
//! card, delegate a task and read the proposal it made, ask its status;
//! the token is needed and the call is an a2a effect of the caller.

mod support;

use support::{fix_add, project};

#[test]
fn one_chimera_delegates_to_another_over_a2a() {
    let mut peer = project(&[fix_add()]);
    let served = peer.serve_http();
    let url = format!("http://127.0.0.1:{}", served.port);
    let me = project(&[]);

    let card = me.json(&["a2a", "discover", &url]);
    assert_eq!(card["name"], "Chimera");
    assert_eq!(card["url"], format!("{url}/a2a"));
    let shown = me.ok(&["a2a", "discover", &url]);
    assert!(
        shown.contains("needs a token") && shown.contains("code-change"),
        "{shown}"
    );

    let refused = me.run(&["a2a", "delegate", &url, "fix add in calc.py"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("401"),
        "{refused:?}"
    );

    let task = me.json(&[
        "a2a",
        "delegate",
        &url,
        "fix add in calc.py",
        "--token",
        &served.token,
    ]);
    assert_eq!(task["status"]["state"], "completed", "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let printed = me.ok(&["a2a", "status", &url, &id, "--token", &served.token]);
    assert!(printed.starts_with(&format!("{id} completed")), "{printed}");
    assert!(
        printed.contains("+    return a + b"),
        "the diff is the artifact: {printed}"
    );
    assert_eq!(
        peer.file(),
        "def add(a, b):\n    return a - b\n",
        "the peer's human has not accepted"
    );

    let effects = me.json(&["effects", "--kind", "a2a"]);
    let input = effects[effects.as_array().unwrap().len() - 1]["input"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        input.contains("delegate to Chimera") && input.contains("fix add"),
        "{effects}"
    );
    let unknown = me.run(&["a2a", "status", &url, "nosuch", "--token", &served.token]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("-32001"));
    peer.stop_serving();
}

#[test]
fn a_tool_mode_agent_delegates_to_a_peer_and_its_change_lands_in_the_overlay() {
    let mut peer = project(&[fix_add()]);
    let served = peer.serve_http();
    let call = |tool: &str, args: serde_json::Value| serde_json::json!({"text": serde_json::json!({"tool": tool, "args": args}).to_string()});
    let me = project(&[
        call(
            "delegate",
            serde_json::json!({"peer": "other", "task": "fix add in calc.py so it adds"}),
        ),
        call(
            "submit_result",
            serde_json::json!({"summary": "add adds, by the other agent", "changed_files": ["calc.py"]}),
        ),
    ]);
    // The project's own options name the peer: they apply once trusted.
    me.project_options(serde_json::json!({
        "a2a": {"peers": {"other": {"url": format!("http://127.0.0.1:{}", served.port), "token": served.token}}},
        "capabilities": {"hosts": ["127.0.0.1"]},
    }));
    me.ok(&["trust", "--yes"]);

    let id = me
        .ok(&[
            "task",
            "--mode",
            "tools",
            "--file",
            "calc.py",
            "have the other agent fix add",
        ])
        .trim()
        .to_owned();
    let agent = me.json(&["agent", &id]);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    let diff = me.ok(&["diff", &id]);
    assert!(
        diff.contains("+    return a + b"),
        "the peer's change is in the proposal: {diff}"
    );
    assert_eq!(
        me.file(),
        "def add(a, b):\n    return a - b\n",
        "nothing lands before the accept"
    );
    assert_eq!(peer.file(), "def add(a, b):\n    return a - b\n");
    let effects = me.json(&["effects", "--kind", "a2a"]);
    assert_eq!(effects[0]["agent_id"], id.as_str(), "{effects}");
    assert!(
        effects[0]["input"]
            .as_str()
            .unwrap()
            .contains("delegate to other"),
        "{effects}"
    );
    let fetched = me.json(&["effects", "--kind", "network"]);
    assert!(
        fetched[0]["input"]
            .as_str()
            .unwrap()
            .starts_with("GET the agent card of other"),
        "the card's fetch is a network effect too: {fetched}"
    );
    assert_eq!(fetched[0]["agent_id"], id.as_str());
    me.ok(&["accept", &id]);
    assert_eq!(me.file(), "def add(a, b):\n    return a + b\n");
    peer.stop_serving();
}

#[test]
fn a2a_refuses_a_file_through_a_link_a_huge_message_and_a_wrong_token() {
    let mut peer = project(&[]);
    std::os::unix::fs::symlink("/tmp", peer.root.join("tmplink")).unwrap();
    let served = peer.serve_http();
    let url = format!("http://127.0.0.1:{}/a2a", served.port);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let http = chimera::http::http_client();
    let post = |token: &str, body: serde_json::Value| {
        rt.block_on(async {
            let resp = http
                .post(&url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap())
        })
    };
    let send = |text: &str, file: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": "m1",
            "parts": [{"kind": "text", "text": text}], "metadata": {"file": file}}}})
    };
    for file in ["tmplink/evil.py", "../outside.py", "/etc/passwd"] {
        let (status, body) = post(&served.token, send("fix it", file));
        assert_eq!(status, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{file}: {answer}");
    }
    // A 3 MB message is refused unread: its announced length is enough.
    // Sent by hand, as tests/api.rs does, since a client still writing the
    // body races the server's close (a broken pipe instead of the answer).
    {
        use std::io::{Read, Write};
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", served.port)).unwrap();
        raw.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let body = send(&"x".repeat(3_000_000), "calc.py").to_string();
        write!(
            raw,
            "POST /a2a HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            served.port,
            served.token,
            body.len(),
            &body[..1000]
        )
        .unwrap();
        let mut answer = [0u8; 12];
        raw.read_exact(&mut answer).unwrap();
        assert_eq!(
            &answer,
            b"HTTP/1.1 413",
            "a 3 MB message is refused unread: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    for wrong in [served.token.to_uppercase(), String::new()] {
        let (status, _) = post(&wrong, send("fix it", "calc.py"));
        assert_eq!(status, 401);
    }
    assert_eq!(
        peer.json(&["agents"]),
        serde_json::json!([]),
        "no agent was started"
    );
    peer.stop_serving();
}
