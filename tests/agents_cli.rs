//! The agents users bring, through the `chimera` command as a person runs
//! it: Claude Code (real, its current adapter from npm, installed by the
//! project's script) against a scripted model speaking Anthropic's API.
//! Nobody can be asked from a shell: the preset decides, the edit is a
//! proposal, and the file changes only by `chimera accept`.

mod support;

use std::path::Path;

/// Where the project's script installed agent `name`.
fn installed(name: &str) -> String {
    let out = std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-agents.sh"),
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "scripts/install-agents.sh");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_owned))
        .unwrap_or_else(|| panic!("{name} is not among the installed agents"))
}

#[test]
fn claude_code_edits_through_the_cli_as_a_proposal_the_preset_deciding() {
    let claude = installed("claude-agent-acp");
    let p = support::project_with(
        &[
            serde_json::json!({"tool_calls": [{"name": "Read", "arguments": {"file_path": "{cwd}/calc.py"}}]}),
            serde_json::json!({"tool_calls": [{"name": "Edit", "arguments": {"file_path": "{cwd}/calc.py", "old_string": "a - b", "new_string": "a + b"}}]}),
            serde_json::json!({"text": "Fixed add."}),
        ],
        &["--only-with-tools"],
    );
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(p.config_home.join("chimera/config.json")).unwrap(),
    )
    .unwrap();
    let url = config["llm"]["url"]
        .as_str()
        .unwrap()
        .trim_end_matches("/v1");
    p.project_options(serde_json::json!({"agents": {"external": {"claude": {
        "command": [claude],
        "env": {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test", "IS_SANDBOX": "1"},
    }}}}));
    p.ok(&["trust", "--yes"]);
    let out = p
        .command(&["task", "--agent", "claude", "--file", "calc.py", "fix add"])
        .output()
        .unwrap();
    let agent = p.agent_of(&out);
    assert_eq!(agent["agent"]["state"], "completed", "{agent}");
    assert_eq!(agent["agent"]["summary"], "Fixed add.", "{agent}");
    assert_eq!(
        p.file(),
        "def add(a, b):\n    return a - b\n",
        "the disk waits for accept"
    );
    let id = agent["agent"]["id"].as_str().unwrap().to_owned();
    let diff = p.ok(&["diff", &id]);
    assert!(diff.contains("+    return a + b"), "{diff}");
    let effects = p.ok(&["effects", "--kind", "acp"]);
    assert!(
        effects.contains("session/request_permission edit: Edit calc.py"),
        "{effects}"
    );
    p.ok(&["accept", &id]);
    assert_eq!(p.file(), "def add(a, b):\n    return a + b\n");
}
