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
