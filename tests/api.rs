//! The HTTP/SSE API as its clients use it: `chimera serve` on 127.0.0.1
//! with the token from `.chimera/api.json`; every route; the live stream,
//! a reconnect with `Last-Event-ID`; and nothing reachable without the
//! token, with another Host, or on any address but 127.0.0.1.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{fix_add, project, Http, Project};

struct Api {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Api {
    fn new(h: &Http) -> Self {
        Api {
            base: format!("http://127.0.0.1:{}", h.port),
            token: h.token.clone(),
            http: client(),
        }
    }

    async fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path} answered non-JSON {text:?}: {e}"));
        (status, value)
    }

    async fn get(&self, path: &str) -> Value {
        let (status, v) = self.send("GET", path, None).await;
        assert_eq!(status, 200, "GET {path}: {v}");
        v
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.send("POST", path, Some(body)).await;
        assert_eq!(status, 200, "POST {path}: {v}");
        v
    }

    async fn stream(&self, path: &str, last_event_id: Option<&str>) -> Stream {
        let mut req = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(id) = last_event_id {
            req = req.header("Last-Event-ID", id);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Stream {
            resp,
            buf: String::new(),
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
struct Ev {
    id: String,
    event: String,
    data: Value,
}

/// An SSE response read event by event (the wire format, as a browser reads it).
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    /// The next event within `limit` (keep-alive comments skipped).
    async fn next(&mut self, limit: Duration) -> Option<Ev> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if event.is_empty() {
                    continue;
                }
                return Some(Ev {
                    id,
                    event,
                    data: serde_json::from_str(&data).unwrap(),
                });
            }
            let chunk = tokio::time::timeout_at(deadline, self.resp.chunk()).await;
            match chunk {
                Ok(Ok(Some(bytes))) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }

    /// Events until one satisfies `done` (included), failing after 30 s.
    async fn until(&mut self, done: impl Fn(&Ev) -> bool) -> Vec<Ev> {
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(e) = self.next(Duration::from_secs(1)).await {
                let stop = done(&e);
                seen.push(e);
                if stop {
                    return seen;
                }
            }
        }
        panic!("the awaited event never came; saw {seen:#?}");
    }
}

/// An HTTP client (reqwest is built with rustls, whose crypto is chosen once).
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn agent_state(e: &Ev, id: &str) -> Option<String> {
    (e.event == "agent" && e.data["agent"]["id"] == id)
        .then(|| e.data["agent"]["state"].as_str().unwrap_or("").to_owned())
}

fn proj() -> Project {
    let p = project(&[fix_add(), json!({"hang": true})]);
    p.write(
        "use.py",
        "from calc import add\n\n\ndef twice(x):\n    return add(x, x)\n",
    );
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_core_loop_over_http_with_a_live_stream_that_resumes() {
    let mut p = proj();
    let h = p.serve_http();
    let api = Api::new(&h);
    // The printed link logs in once, and never shows the token.
    assert!(!h.dashboard.contains(&h.token), "{}", h.dashboard);
    let code = h.dashboard.split("#login=").nth(1).expect("a login link");
    let anon = Api {
        token: String::new(),
        ..Api::new(&h)
    };
    let (status, answer) = anon
        .send("POST", "/login", Some(json!({"code": code})))
        .await;
    assert_eq!(
        (status, answer["token"].as_str()),
        (200, Some(h.token.as_str()))
    );
    let (status, answer) = anon
        .send("POST", "/login", Some(json!({"code": code})))
        .await;
    assert_eq!(status, 401);
    assert!(
        answer["error"].as_str().unwrap().contains("used already"),
        "{answer}"
    );
    let (status, _) = anon
        .send("POST", "/login", Some(json!({"code": "1.2.3"})))
        .await;
    assert_eq!(status, 401);
    assert_eq!(api.get("/status").await["api_port"], h.port);

    let mut live = api.stream("/events/stream", None).await;
    let id = api
        .post("/tasks", json!({"task": "fix add", "file": "calc.py"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen = live
        .until(|e| agent_state(e, &id).as_deref() == Some("completed"))
        .await;
    let states: Vec<String> = seen.iter().filter_map(|e| agent_state(e, &id)).collect();
    assert_eq!(
        states.first().map(String::as_str),
        Some("queued"),
        "{states:?}"
    );
    assert!(states.contains(&"running".to_owned()), "{states:?}");
    let done = seen.last().unwrap();
    assert_eq!(done.data["proposal"][0]["path"], "calc.py");
    assert_eq!(done.data["proposal"][0]["hunk_count"], 1);

    // Read as a client reads it.
    let agents = api.get("/agents").await;
    assert!(agents
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["id"] == id.as_str() && a["state"] == "completed"));
    let one = api.get(&format!("/agents/{id}")).await;
    let hunk = &one["proposal"][0]["hunks"][0];
    assert_eq!(hunk["new_lines"], json!(["    return a + b"]));
    assert_eq!(hunk["number"], 1, "{hunk}");
    // With the lines around it, as `:Chimera diff` shows them.
    assert_eq!(hunk["before"], json!(["def add(a, b):"]), "{hunk}");
    assert_eq!(hunk["after"], json!([]), "{hunk}");
    assert!(one["diff"].as_str().unwrap().contains("+    return a + b"));

    // A client that lost its connection after the first event resumes
    // with exactly what came after it.
    drop(live);
    let mut again = api.stream("/events/stream", Some(&seen[0].id)).await;
    let replayed = again.until(|e| e.id == done.id).await;
    assert_eq!(
        replayed.iter().map(|e| &e.id).collect::<Vec<_>>(),
        seen[1..].iter().map(|e| &e.id).collect::<Vec<_>>()
    );
    // An ID this core never gave (an earlier core's): told to re-read.
    let mut stale = api
        .stream(&format!("/events/stream/{id}"), Some("0000-7"))
        .await;
    let first = stale.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.event, "reset");
    // One agent's stream carries only that agent: its records, and its
    // progress lines.
    let mine = stale.until(|e| e.id == done.id).await;
    assert!(
        mine.iter().all(|e| match e.event.as_str() {
            "progress" => e.data["agent"] == id.as_str(),
            _ => e.data["agent"]["id"] == id.as_str(),
        }),
        "{mine:#?}"
    );
    assert!(mine.iter().any(|e| e.event == "progress"), "{mine:#?}");

    // Accept: the file changes on disk and every stream hears it.
    let accepted = api
        .post(&format!("/proposal/{id}/approve"), json!({}))
        .await;
    assert_eq!(accepted["files"], json!(["calc.py"]));
    assert_eq!(p.file(), "def add(a, b):\n    return a + b\n");
    let resolved = again.until(|e| e.event == "resolved").await;
    let resolved = resolved.last().unwrap();
    assert_eq!(resolved.data["id"], id.as_str());
    assert_eq!(resolved.data["accepted"], true);
    let (status, err) = api
        .send("POST", &format!("/proposal/{id}/approve"), None)
        .await;
    assert_eq!(status, 409, "{err}");
    assert!(err["error"].as_str().unwrap().contains("no proposal"));

    // Snapshots, a dry-run rollback, the effect log.
    let before_accept = api.get("/snapshots").await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let snap = api
        .post("/snapshots", json!({"message": "by the api"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(api.get("/snapshots").await[0]["message"], "by the api");
    let dry = api
        .post(&format!("/rollback/{before_accept}?dry_run=1"), json!({}))
        .await;
    assert_eq!(dry["dry_run"], true);
    assert!(
        dry["message"].as_str().unwrap().contains("calc.py"),
        "{dry}"
    );
    assert_eq!(p.file(), "def add(a, b):\n    return a + b\n");
    let llm = api.get("/effects?kind=llm").await;
    assert_eq!(llm.as_array().unwrap().len(), 1);
    assert_eq!(llm[0]["agent_id"], id.as_str());
    assert_eq!(api.get(&format!("/effects?since={snap}")).await, json!([]));
    assert_eq!(
        api.send("GET", "/effects?since=nosuchsnap", None).await.0,
        404
    );

    // A fork from the snapshot, then cancelled while its model hangs.
    let fork = api
        .post(
            &format!("/snapshots/{snap}/fork"),
            json!({"task": "slow work"}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = api.post(&format!("/agents/{fork}/cancel"), json!({})).await;
    assert_eq!(cancelled["agent"]["state"], "cancelled");
    let rolled = api
        .post(&format!("/rollback/{before_accept}"), json!({}))
        .await;
    assert_eq!(rolled["dry_run"], false);
    assert_eq!(p.file(), "def add(a, b):\n    return a - b\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remora_nodes_their_events_and_a_chat() {
    let mut p = proj();
    let h = p.serve_http();
    let api = Api::new(&h);
    api.post("/remora/enable", json!({})).await;
    // The index is built in the background.
    let deadline = Instant::now() + Duration::from_secs(20);
    let nodes = loop {
        let (status, v) = api.send("GET", "/nodes/calc.py", None).await;
        if status == 200 {
            break v;
        }
        assert!(Instant::now() < deadline, "calc.py was never indexed: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let add = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"]["name"] == "add")
        .unwrap_or_else(|| panic!("{nodes}"));
    assert_eq!(add["callers"], 1);
    let add_id = add["node"]["id"].as_str().unwrap().to_owned();
    let one = api.get(&format!("/node/{add_id}")).await;
    assert_eq!(one["callers"][0]["name"], "twice");
    assert_eq!(one["source"], "def add(a, b):\n    return a - b", "{one}");
    assert_eq!(one["callers"][0]["file_path"], "use.py");

    let mut live = api.stream(&format!("/events/stream/{add_id}"), None).await;
    let chat = api
        .post(
            &format!("/node/{add_id}/chat"),
            json!({"message": "what do you return?"}),
        )
        .await;
    let told = chat["events"].as_array().unwrap();
    assert!(
        told.iter()
            .any(|e| e["event_type"] == "HumanChatEvent" && e["message"] == "what do you return?"),
        "{chat}"
    );
    let heard = live.until(|e| e.event == "remora").await;
    assert_eq!(heard.last().unwrap().data["event_type"], "HumanChatEvent");
    let events = api.get(&format!("/node/{add_id}/events")).await;
    assert!(events
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event_type"] == "HumanChatEvent"));

    assert_eq!(api.send("GET", "/node/rm_nosuchnode", None).await.0, 404);
    assert_eq!(api.send("GET", "/nodes/nosuch.py", None).await.0, 404);
    let (status, err) = api.send("GET", "/nodes/../../etc/passwd", None).await;
    assert!(status == 400 || status == 404, "{status} {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_json_errors() {
    let mut p = proj();
    let h = p.serve_http();
    let api = Api::new(&h);
    for (method, path, body, status, says) in [
        ("POST", "/tasks", json!({"task": "  "}), 400, "empty"),
        (
            "POST",
            "/tasks",
            json!({"task": "x", "file": "../up.py"}),
            400,
            "root",
        ),
        (
            "POST",
            "/tasks",
            json!({"task": "x", "mode": "fast"}),
            400,
            "mode",
        ),
        ("POST", "/tasks", json!({"nothing": 1}), 422, "task"),
        ("GET", "/agents/nosuch", Value::Null, 404, "no agent"),
        (
            "POST",
            "/proposal/nosuch/reject",
            json!({}),
            404,
            "no agent",
        ),
        (
            "POST",
            "/proposal/nosuch/approve",
            json!({"hunk": 0}),
            404,
            "no agent",
        ),
        (
            "POST",
            "/snapshots/nosuch/fork",
            json!({"task": "x"}),
            404,
            "no snapshot",
        ),
        ("POST", "/questions/first", json!({"allow": true}), 400, ""),
        (
            "POST",
            "/questions/1",
            json!({"allow": "yes"}),
            422,
            "allow",
        ),
        ("POST", "/questions/1", json!({}), 422, "allow"),
        ("GET", "/no/such/route", Value::Null, 404, ""),
    ] {
        let body = (!body.is_null()).then_some(body);
        let (got, v) = api.send(method, path, body).await;
        assert_eq!(got, status, "{method} {path}: {v}");
        assert!(
            v["error"].as_str().unwrap().contains(says),
            "{method} {path} should say {says:?}: {v}"
        );
    }
    // Malformed JSON is refused in JSON too.
    let resp = api
        .http
        .post(format!("{}/tasks", api.base))
        .bearer_auth(&api.token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"].is_string(), "{v}");
    // A huge body is refused before it is read at all: the announced
    // length is enough (a client still sending would see the socket close).
    use std::io::{Read, Write};
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", h.port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        raw,
        "POST /tasks HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{{\"task\": \"",
        h.port,
        h.token,
        8 * 1024 * 1024
    )
    .unwrap();
    let mut answer = [0u8; 12];
    raw.read_exact(&mut answer).unwrap();
    assert_eq!(
        &answer,
        b"HTTP/1.1 413",
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(api.get("/agents").await, json!([]));
}

/// The scripted ACP agent `fake` of the project, asking what `steps`
/// say, under a preset that refuses edits and `capabilities.ask` on; the
/// file its answers are logged in.
fn asking_agent(p: &mut Project, steps: Value) -> std::path::PathBuf {
    let state = p.root.parent().unwrap().join("fake-state");
    std::fs::create_dir_all(&state).unwrap();
    let (script, log) = (state.join("fake.json"), state.join("fake.log"));
    std::fs::write(&script, json!([steps]).to_string()).unwrap();
    let config_file = p.config_home.join("chimera/config.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    let agent = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_acp_agent.py");
    config["agents"] = json!({"external": {"fake": {
        "command": ["python3", agent, "--script", script, "--log", log],
        "writable": [state],
    }}});
    // The preset refuses the edit; `ask` puts it to the human instead.
    config["capabilities"] = json!({"preset": "readonly", "ask": true});
    std::fs::write(&config_file, config.to_string()).unwrap();
    log
}

/// What the agent heard in answer to its permission questions, in order.
fn permission_answers(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["answer_to"] == "session/request_permission")
        .map(|e| e["answer"]["result"]["outcome"].clone())
        .collect()
}

/// What only Neovim heard before — an agent's progress, what an ACP agent
/// says as it works, its permission questions — every client of the feed
/// hears now, and the dashboard (or a script) answers a question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_permission_questions_reach_every_client_which_may_answer() {
    let mut p = proj();
    let log = asking_agent(
        &mut p,
        json!([{"say": "looking at calc.py"}, {"permission": "Edit calc.py"}, {"say": "Done."}]),
    );
    let h = p.serve_http();
    let api = Api::new(&h);
    let mut feed = api.stream("/events/stream", None).await;
    let id = api
        .post(
            "/tasks",
            json!({"task": "fix add", "file": "calc.py", "agent": "fake"}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen = feed.until(|e| e.event == "permission").await;
    assert!(
        seen.iter().any(|e| e.event == "agent_said"
            && e.data["agent"] == id.as_str()
            && e.data["piece"]["text"] == "looking at calc.py"),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|e| e.event == "progress" && e.data["agent"] == id.as_str()),
        "{seen:#?}"
    );
    let question = &seen.last().unwrap().data;
    assert_eq!(question["agent"], id.as_str());
    assert!(
        question["question"]
            .as_str()
            .unwrap()
            .contains("Edit calc.py"),
        "{question}"
    );
    let asked = question["id"].as_u64().unwrap();
    api.post(&format!("/questions/{asked}"), json!({"allow": true}))
        .await;
    // Every client still showing it hears that it is closed.
    let closed = feed.until(|e| e.event == "answered").await;
    assert_eq!(
        closed.last().unwrap().data["allow"],
        true,
        "{:?}",
        closed.last()
    );
    assert_eq!(closed.last().unwrap().data["id"], asked);
    feed.until(|e| {
        e.event == "agent"
            && e.data["agent"]["id"] == id.as_str()
            && !matches!(
                e.data["agent"]["state"].as_str(),
                Some("queued" | "running")
            )
    })
    .await;
    let answered = permission_answers(&log);
    assert_eq!(
        answered,
        [json!({"outcome": "selected", "optionId": "allow"})],
        "{answered:?}"
    );
}

/// A question goes to whoever is there when it comes, not when the agent
/// started: a dashboard opened while the agent works is asked, and its
/// refusal is what the agent hears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_follows_after_the_agent_started_is_asked() {
    let mut p = proj();
    let log = asking_agent(
        &mut p,
        json!([{"say": "reading"}, {"sleep": 3}, {"permission": "Edit calc.py"}, {"say": "Done."}]),
    );
    let h = p.serve_http();
    let api = Api::new(&h);
    let id = api
        .post(
            "/tasks",
            json!({"task": "fix add", "file": "calc.py", "agent": "fake"}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Opened once the agent is at work, as a person opens the dashboard.
    let deadline = Instant::now() + Duration::from_secs(20);
    while api.get(&format!("/agents/{id}")).await["agent"]["state"] != "running" {
        assert!(Instant::now() < deadline, "the agent never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut feed = api.stream("/events/stream", None).await;
    let seen = feed.until(|e| e.event == "permission").await;
    let asked = seen.last().unwrap().data["id"].as_u64().unwrap();
    api.post(&format!("/questions/{asked}"), json!({"allow": false}))
        .await;
    feed.until(|e| {
        agent_state(e, &id).is_some_and(|s| !matches!(s.as_str(), "queued" | "running"))
    })
    .await;
    let answered = permission_answers(&log);
    assert_eq!(
        answered,
        [json!({"outcome": "selected", "optionId": "reject"})],
        "{answered:?}"
    );
}

/// A spawn and a fork are transitions as an accept is: when the core
/// cannot make the agent, the client that asked is told why, rather than
/// handed the ID of an agent that never existed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_or_fork_the_core_cannot_record_is_refused_with_the_reason() {
    let mut p = proj();
    let h = p.serve_http();
    let api = Api::new(&h);
    api.post("/snapshots", json!({"message": "one"})).await;
    let snap = api.get("/snapshots").await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A store that refuses every new agent (a full disk, a locked file),
    // through a connection of its own.
    let db = rusqlite::Connection::open(p.root.join(".chimera/chimera.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON agents BEGIN SELECT RAISE(FAIL, 'disk full'); END;",
    )
    .unwrap();
    let (status, v) = api
        .send("POST", "/tasks", Some(json!({"task": "fix add"})))
        .await;
    let said = v["error"].as_str().unwrap_or_default();
    assert_eq!(status, 500, "{v}");
    assert!(
        said.contains("cannot create agent") && said.contains("disk full"),
        "{v}"
    );
    let (status, v) = api
        .send(
            "POST",
            &format!("/snapshots/{snap}/fork"),
            Some(json!({"task": "x"})),
        )
        .await;
    let said = v["error"].as_str().unwrap_or_default();
    assert_eq!(status, 500, "{v}");
    assert!(
        said.contains("cannot fork snapshot") && said.contains("disk full"),
        "{v}"
    );
    assert_eq!(api.get("/agents").await, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_without_the_token_nor_on_any_address_but_loopback() {
    use std::os::unix::fs::PermissionsExt;
    let mut p = proj();
    let h = p.serve_http();
    let info = p.root.join(".chimera/api.json");
    assert_eq!(
        std::fs::metadata(&info).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let base = format!("http://127.0.0.1:{}", h.port);
    let http = client();
    let tokens = [
        None,
        Some("wrong".to_owned()),
        Some(h.token.to_uppercase()),
        Some(h.token[..63].to_owned()),
        Some(format!("{} ", h.token) + "x"),
    ];
    for token in &tokens {
        for (method, path) in [
            ("GET", "/agents"),
            ("POST", "/tasks"),
            ("GET", "/events/stream"),
            ("POST", "/snapshots"),
            ("GET", "/status"),
            ("POST", "/branches"),
            ("GET", "/branches"),
            ("GET", "/agents/x/calls"),
            ("POST", "/questions/1"),
        ] {
            let mut req = http
                .request(method.parse().unwrap(), format!("{base}{path}"))
                .json(&json!({"task": "sneaky"}));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status(), 401, "{method} {path} with {token:?}");
            let v: Value = resp.json().await.unwrap();
            assert!(v["error"].as_str().unwrap().contains("api.json"));
        }
    }
    // The token as a query or cookie is not a token.
    let resp = http
        .get(format!("{base}/agents?token={}", h.token))
        .header("cookie", format!("token={}", h.token))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    // Nothing got through.
    let api = Api::new(&h);
    assert_eq!(api.get("/agents").await, json!([]));
    assert_eq!(api.get("/snapshots").await.as_array().unwrap().len(), 0);
    assert_eq!(api.get("/branches").await, json!([]));

    // With the token, a branch name is still only a name: no path, no
    // snapshot's ID in another case's clothes, nothing huge.
    api.post("/snapshots", json!({"message": "one"})).await;
    let snap = api.get("/snapshots").await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for name in [
        "../../etc".to_owned(),
        "/abs".to_owned(),
        "a b".to_owned(),
        snap.clone(),
        "x".repeat(100_000),
    ] {
        let (status, v) = api
            .send("POST", "/branches", Some(json!({"name": name})))
            .await;
        assert_eq!(status, 400, "{}: {v}", &name[..name.len().min(20)]);
        assert!(
            v["error"].as_str().unwrap().contains("not a branch name"),
            "{v}"
        );
    }
    let (status, v) = api
        .send(
            "POST",
            "/branches",
            Some(json!({"name": "ok", "snapshot": "../x"})),
        )
        .await;
    assert_eq!(status, 404, "{v}");
    // A name in another case is another branch, never the snapshot.
    let upper = api
        .post("/branches", json!({"name": snap.to_uppercase()}))
        .await;
    assert_eq!(upper["snapshot_id"], snap.as_str());
    let (status, _) = api.send("GET", "/agents/..%2F..%2Fetc/calls", None).await;
    assert_eq!(status, 404);

    // A page whose domain was rebound to 127.0.0.1 names itself as Host.
    let resp = http
        .get(format!("{base}/agents"))
        .bearer_auth(&h.token)
        .header("host", format!("evil.example:{}", h.port))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = http
        .get(format!("{base}/"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    // The dashboard's page needs no token (it asks for it) and may not be framed.
    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let page = http
        .get(format!("http://localhost:{}/", h.port))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);

    // Only 127.0.0.1 listens: not another loopback address, not IPv6,
    // not the machine's other addresses.
    let mut others = vec![
        std::net::SocketAddr::from(([127, 0, 0, 2], h.port)),
        std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, h.port)),
    ];
    if let Some(ip) = outward_address() {
        others.push(std::net::SocketAddr::new(ip, h.port));
    }
    for addr in others {
        let got = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2));
        assert!(got.is_err(), "something listens on {addr}");
    }

    // Stopped, the server takes its announcement with it.
    p.stop_serving();
    assert!(!info.exists(), ".chimera/api.json outlived the server");
    assert!(std::net::TcpStream::connect(("127.0.0.1", h.port)).is_err());
}

#[test]
fn a_taken_port_is_refused_at_once() {
    let p = proj();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let started = Instant::now();
    let out = p.run(&["serve", "--port", &port]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("--port"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!p.root.join(".chimera/api.json").exists());
}

/// The address this machine would use to reach others, if it has one
/// (no packet is sent).
fn outward_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn a_thousand_half_sent_requests_from_another_process_never_starve_the_owner() {
    use std::io::{BufRead, Read, Write};
    let p = proj();
    // `chimera serve` with the file limit Neovim runs under.
    let mut serve = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -n 256 && exec \"$0\" serve --port 0 --json",
            support::BIN,
        ])
        .current_dir(&p.root)
        .env("XDG_CONFIG_HOME", &p.config_home)
        .env("XDG_DATA_HOME", &p.data_home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = serde_json::from_str::<Value>(&line).unwrap()["port"]
        .as_u64()
        .unwrap();
    let token: String = serde_json::from_str::<Value>(
        &std::fs::read_to_string(p.root.join(".chimera/api.json")).unwrap(),
    )
    .unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The attacker: a thousand connections, each with half a request.
    let mut held = Vec::new();
    for _ in 0..1000 {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port as u16)) {
            let _ = s.write_all(
                format!("GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes(),
            );
            held.push(s);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    // The owner, meanwhile: every request answered, at once.
    for _ in 0..5 {
        let started = Instant::now();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port as u16));
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .expect("the owner could not even connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(
            format!("GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "the owner was not served: {answer:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    let fds = std::fs::read_dir(format!("/proc/{}/fd", serve.id()))
        .unwrap()
        .count();
    assert!(fds < 200, "the server holds {fds} files");
    drop(held);
    let _ = serve.kill();
    let _ = serve.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_empty_is_no_body_and_one_that_is_not_json_is_never_ignored() {
    let mut p = proj();
    let h = p.serve_http();
    let api = Api::new(&h);
    let id = api
        .post("/tasks", json!({"task": "fix add", "file": "calc.py"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while api.get(&format!("/agents/{id}")).await["agent"]["state"] != "completed" {
        assert!(Instant::now() < deadline, "no proposal");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let raw = |content_type: &'static str, body: &'static str| {
        api.http
            .post(format!("{}/proposal/{id}/approve", api.base))
            .bearer_auth(&api.token)
            .header("content-type", content_type)
            .body(body)
    };
    // A hunk asked for in a body the client forgot to label: read, not
    // dropped (which would accept the whole proposal).
    let resp = raw("text/plain", r#"{"hunk": 99}"#).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 409);
    assert!(resp.text().await.unwrap().contains("no hunk 99"));
    let resp = raw("application/json", "{not json").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert!(resp.text().await.unwrap().contains("not the JSON"));
    assert_eq!(
        api.get(&format!("/agents/{id}")).await["agent"]["state"],
        "completed"
    );
    // An empty JSON body is the whole proposal, as no body is.
    let resp = raw("application/json", "").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{:?}", resp.text().await);
    assert_eq!(
        api.get(&format!("/agents/{id}")).await["agent"]["state"],
        "accepted"
    );
}
