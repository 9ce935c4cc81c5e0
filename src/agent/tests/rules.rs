//! The project's rules (AGENTS.md, CLAUDE.md, copilot instructions) reach
//! the model in code mode and tool mode; one the agent may not read never
//! does.

use super::*;

fn with_rules(s: &mut Setup) {
    for (path, text) in [
        ("AGENTS.md", "Write every docstring in French."),
        ("CLAUDE.md", "SECRET-RULES-42"),
        (".github/copilot-instructions.md", "Prefer pathlib."),
    ] {
        s.store
            .stable_put(path, text.as_bytes(), 0o644, 0, 1 << 20)
            .unwrap();
    }
    // The user keeps CLAUDE.md from agents.
    s.config.capabilities.secrets.push("CLAUDE.md".into());
}

async fn first_request(mode: Option<&str>, script: Vec<Reply>) -> String {
    let server = FakeServer::start_with_window(script, Some(8192)).await;
    let mut s = setup(&server.url);
    with_rules(&mut s);
    let job = Job {
        spec: TaskSpec {
            mode: mode.map(str::to_owned),
            ..job().spec
        },
        ..job()
    };
    // Whether it proposes is not the point: what the model was asked is.
    run_on(&s, &job).await.ok();
    let first = server.requests.lock().unwrap()[0].clone();
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projects_rules_reach_the_model_in_both_modes_but_never_a_secret_one() {
    for (mode, script) in [
        (None, vec![Reply::OpenaiStream(GOOD.into())]),
        (
            Some("tools"),
            vec![call(
                "submit_result",
                serde_json::json!({"summary": "none", "files": []}),
            )],
        ),
    ] {
        let asked = first_request(mode, script).await;
        assert!(
            asked.contains("From `AGENTS.md`")
                && asked.contains("Write every docstring in French."),
            "{mode:?}: {asked}"
        );
        assert!(asked.contains("Prefer pathlib."), "{mode:?}: {asked}");
        assert!(
            !asked.contains("SECRET-RULES-42"),
            "{mode:?}: a secret file reached the model"
        );
    }
}
