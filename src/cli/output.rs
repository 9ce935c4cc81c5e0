//! How the CLI prints what the API answered: short tables and lines for a
//! person, or the records themselves with `--json`.

use std::io::IsTerminal;
use std::path::Path;

use serde_json::{json, Value};

use super::Loaded;

fn print_json(v: &Value) {
    out!("{v}");
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// "3 min ago" for milliseconds since the epoch.
fn ago(ms: i64) -> String {
    let secs = (crate::store::now_ms() - ms).max(0) / 1000;
    match secs {
        0..=59 => format!("{secs} s ago"),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// The first line of `s`, at most `n` characters.
pub fn line(s: &str, n: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() > n {
        format!(
            "{}…",
            first.chars().take(n.saturating_sub(1)).collect::<String>()
        )
    } else {
        first.to_owned()
    }
}

pub fn id(id: &str, json: bool) {
    if json {
        print_json(&json!({ "id": id }));
    } else {
        out!("{id}");
    }
}

pub fn status(
    root: &Path,
    loaded: &Loaded,
    core: Option<&Value>,
    baseline: Option<&crate::agent::baseline::Baseline>,
    json: bool,
) {
    let config_file = loaded.file().map(|f| f.display().to_string());
    let llm = &loaded.config.llm;
    let provider = serde_json::to_value(llm.provider).unwrap_or(Value::Null);
    if json {
        let project = loaded.project.as_ref().map(|p| {
            json!({
                "file": p.file.display().to_string(),
                "trusted": p.trusted,
                "ignored": p.ignored(),
                "trust_error": p.trust_error,
            })
        });
        print_json(&json!({
            "root": root.display().to_string(),
            "core": core,
            "config_file": config_file,
            "user_config_file": loaded.user_file.as_ref().map(|f| f.display().to_string()),
            "project_config": project,
            "confinement": confinement(&loaded.config),
            "tests": tests(root, &loaded.config),
            "tests_now": baseline.map(ToString::to_string),
            "llm": {
                "provider": { "value": provider, "from": loaded.source("provider") },
                "url": { "value": llm.url, "from": loaded.source("url") },
                "model": { "value": llm.model, "from": loaded.source("model") },
            },
        }));
        return;
    }
    out!("project   {}", root.display());
    match core {
        Some(c) => out!(
            "core      running (pid {}; its own options apply)",
            c["pid"]
        ),
        None => out!("core      none running (commands that change something start one)"),
    }
    match &loaded.user_file {
        Some(f) => out!("options   {}", f.display()),
        None => out!("options   no file of yours (defaults)"),
    }
    if let Some(p) = &loaded.project {
        out!("          {}{}", p.file.display(), trust_note(p));
    }
    out!(
        "llm       provider {} ({})",
        provider.as_str().unwrap_or("?"),
        loaded.source("provider")
    );
    out!("          url {} ({})", llm.url, loaded.source("url"));
    out!("          model {} ({})", llm.model, loaded.source("model"));
    out!("confined  {}", confinement(&loaded.config));
    out!("tests     {}", tests(root, &loaded.config));
    match baseline {
        Some(b) => out!("          now: {b}"),
        None => out!("          (`chimera status --tests` runs them once, as they are)"),
    }
}

/// How the project's tests run (`tests.command`), in words.
fn tests(root: &Path, config: &crate::config::Config) -> String {
    use crate::config::{TestCommand, TestsMode};
    let auto = crate::agent::checks::Auto::of(root, None);
    match &config.tests.command {
        TestCommand::Named(TestsMode::Off) => "off".into(),
        TestCommand::Argv(argv) => format!("{} (in {})", argv.join(" "), auto.env.found),
        TestCommand::Named(TestsMode::Auto) => format!("auto: {}", auto.describe()),
    }
}

/// How the programs agents run are confined here, in words.
fn confinement(config: &crate::config::Config) -> String {
    if crate::confine::available() {
        crate::launch::describe()
    } else if config.agents.run_unconfined {
        "NOT CONFINED: this system cannot confine programs, and agents.run_unconfined = true runs the tests and run_command anyway".into()
    } else {
        "nothing can be: this system cannot confine programs, so the tests, run_command and ACP agents are refused (agents.run_unconfined, agents.external.NAME.unconfined)".into()
    }
}

/// What applies of the project's options file, in words.
pub fn trust_note(p: &super::config::ProjectOptions) -> String {
    if let Some(e) = &p.trust_error {
        return format!(
            " (not trusted: {e}; ignored: {})",
            if p.guarded.is_empty() {
                "nothing".to_owned()
            } else {
                p.guarded.join(", ")
            }
        );
    }
    match (p.trusted, p.guarded.is_empty()) {
        (true, _) => " (trusted)".to_owned(),
        (false, true) => " (not trusted; it sets nothing that needs trust)".to_owned(),
        (false, false) => format!(
            " (not trusted, so ignored: {}; read it, then `chimera trust`)",
            p.guarded.join(", ")
        ),
    }
}

/// One line about an agent: its ID, state, and what it said.
/// `: <error>` when `agent` ended with one, else nothing.
pub fn why(agent: &Value) -> String {
    match text(agent, "error") {
        "" => String::new(),
        e => format!(": {}", line(e, 300)),
    }
}

pub fn agent_state(agent: &Value, json: bool) {
    if json {
        print_json(agent);
        return;
    }
    let mut out = format!("{} {}", text(agent, "id"), state_of(agent));
    if agent["conflicted"].as_bool() == Some(true) {
        out.push_str(" (conflict)");
    }
    for key in ["summary", "error"] {
        if !text(agent, key).is_empty() {
            out.push_str(&format!(": {}", line(text(agent, key), 200)));
        }
    }
    out!("{out}");
}

/// A list of records: as JSON, else `none` when it is empty, else
/// `header` and a `row` per record.
fn list(all: &Value, json: bool, none: &str, header: String, row: impl Fn(&Value) -> String) {
    if json {
        print_json(all);
        return;
    }
    let items = all.as_array().map(Vec::as_slice).unwrap_or_default();
    if items.is_empty() {
        out!("{none}");
        return;
    }
    out!("{header}");
    for item in items {
        out!("{}", row(item));
    }
}

/// An agent's state as the human's text has it: "accepted (undone)" for
/// an accept undone in the buffer it went into.
fn state_of(agent: &Value) -> String {
    match agent["undone"].as_bool() {
        Some(true) => format!("{} (undone)", text(agent, "state")),
        _ => text(agent, "state").to_owned(),
    }
}

/// An agent's tokens in a few characters: "12.3k $0.004", "≈850" (the
/// server did not count them), "" for none.
fn tokens(usage: &Value) -> String {
    let n = usage["input"].as_u64().unwrap_or(0) + usage["output"].as_u64().unwrap_or(0);
    if n == 0 {
        return String::new();
    }
    let count = if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    };
    let cost = usage["cost"].as_f64().unwrap_or(0.0);
    format!(
        "{}{count}{}",
        if usage["estimated"].as_bool() == Some(true) {
            "≈"
        } else {
            ""
        },
        if cost > 0.0 {
            format!(" ${cost:.3}")
        } else {
            String::new()
        }
    )
}

pub fn agents(all: &Value, json: bool) {
    let header = format!(
        "{:<10} {:<10} {:<12} {:<14} {:<28} TASK",
        "ID", "STATE", "UPDATED", "TOKENS", "FILES"
    );
    list(all, json, "no agents", header, |a| {
        let files: Vec<&str> = a["changed_files"]
            .as_array()
            .map(|f| f.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        format!(
            "{:<10} {:<10} {:<12} {:<14} {:<28} {}",
            text(a, "id"),
            state_of(a),
            ago(a["updated_at"].as_i64().unwrap_or(0)),
            tokens(&a["usage"]),
            line(&files.join(","), 28),
            line(text(a, "task"), 60)
        )
    });
}

pub fn agent(one: &Value, json: bool) {
    if json {
        print_json(one);
        return;
    }
    let a = &one["agent"];
    out!("agent     {}", text(a, "id"));
    out!("state     {}", state_of(a));
    out!("task      {}", text(a, "task"));
    if !text(a, "file").is_empty() {
        out!("file      {}", text(a, "file"));
    }
    for key in ["summary", "error"] {
        if !text(a, key).is_empty() {
            out!("{key:<9} {}", text(a, key));
        }
    }
    if let Some(files) = a["changed_files"].as_array().filter(|f| !f.is_empty()) {
        let names: Vec<&str> = files.iter().filter_map(Value::as_str).collect();
        out!("changes   {}", names.join(", "));
    }
    out!("rounds    {}", a["rounds"]);
    let u = &a["usage"];
    if u["input"].as_u64().unwrap_or(0) + u["output"].as_u64().unwrap_or(0) > 0 {
        out!(
            "tokens    {} in, {} out{} ({})",
            u["input"],
            u["output"],
            if u["estimated"].as_bool() == Some(true) {
                ", estimated: the server did not count them"
            } else {
                ""
            },
            match u["cost"].as_f64().unwrap_or(0.0) {
                0.0 => "no price set: llm.prices".to_owned(),
                cost => format!("${cost:.4}"),
            }
        );
    }
    if let Some(log) = a["log"].as_array().filter(|l| !l.is_empty()) {
        out!("log:");
        for l in log.iter().filter_map(Value::as_str) {
            out!("  {l}");
        }
    }
}

/// A unified diff, coloured on a terminal (not when `NO_COLOR` is set).
/// Prints agent `one`'s proposal as a diff; `false` when it proposes
/// nothing (said on stderr).
pub fn diff(one: &Value, json: bool) -> bool {
    let text = text(one, "diff");
    if json {
        print_json(&json!({ "id": one["agent"]["id"], "diff": text }));
        return !text.is_empty();
    }
    if text.is_empty() {
        eprintln!(
            "chimera: agent {} proposes nothing (it is {}{})",
            one["agent"]["id"].as_str().unwrap_or("?"),
            one["agent"]["state"].as_str().unwrap_or("?"),
            why(&one["agent"])
        );
        return false;
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    for l in text.lines() {
        let code = match l.as_bytes().first() {
            _ if !colour => None,
            Some(b'+') if !l.starts_with("+++") => Some("32"),
            Some(b'-') if !l.starts_with("---") => Some("31"),
            Some(b'@') => Some("36"),
            _ if l.starts_with("---") || l.starts_with("+++") => Some("1"),
            _ => None,
        };
        match code {
            Some(c) => out!("\x1b[{c}m{l}\x1b[0m"),
            None => out!("{l}"),
        }
    }
    true
}

/// What an accept did; `write`: the Neovim holding a file was asked to
/// write it too.
pub fn accepted(answer: &Value, write: bool, json: bool) {
    if json {
        print_json(answer);
        return;
    }
    let list = |key: &str| -> Vec<String> {
        answer[key]
            .as_array()
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let (files, unsaved) = (list("files"), list("unsaved"));
    let on_disk: Vec<&str> = files
        .iter()
        .filter(|f| !unsaved.contains(f))
        .map(String::as_str)
        .collect();
    let mut said = Vec::new();
    if !on_disk.is_empty() {
        said.push(format!("written to {}", on_disk.join(", ")));
    }
    if !unsaved.is_empty() && write {
        said.push(format!(
            "applied to {} in the Neovim that has it open, which writes it unless it holds other unsaved changes there (it says so); u there undoes it",
            unsaved.join(", ")
        ));
    } else if !unsaved.is_empty() {
        said.push(format!(
            "applied to {} in the Neovim that has it open, not yet written: save it there (:w) or accept with --write; u there undoes it",
            unsaved.join(", ")
        ));
    }
    out!(
        "accepted {}: {}",
        text(&answer["agent"], "id"),
        if said.is_empty() {
            "nothing left to write".to_owned()
        } else {
            said.join("; ")
        }
    );
}

pub fn history(all: &Value, json: bool) {
    let header = format!("{:<14} {:<12} {:>6}  MESSAGE", "ID", "TAKEN", "FILES");
    list(all, json, "no snapshots", header, |s| {
        format!(
            "{:<14} {:<12} {:>6}  {}",
            text(s, "id"),
            ago(s["created_at"].as_i64().unwrap_or(0)),
            s["files"].as_u64().unwrap_or(0),
            line(text(s, "message"), 70)
        ) + &branch_names(s)
    });
}

/// ` (head of exp, main)` for a snapshot some branches point at.
fn branch_names(s: &Value) -> String {
    let names: Vec<&str> = s["branches"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if names.is_empty() {
        String::new()
    } else {
        format!("  (head of {})", names.join(", "))
    }
}

/// An answer that is a sentence (a rollback's report).
pub fn message(answer: &Value, json: bool) {
    if json {
        print_json(answer);
    } else {
        out!("{}", text(answer, "message"));
    }
}

pub fn effects(all: &Value, json: bool) {
    let header = format!(
        "{:>6}  {:<8} {:<10} {:>8}  {:<12} INPUT -> OUTCOME",
        "SEQ", "KIND", "AGENT", "MS", "WHEN"
    );
    list(all, json, "no effects", header, |e| {
        format!(
            "{:>6}  {:<8} {:<10} {:>8}  {:<12} {} -> {}",
            e["seq"].as_i64().unwrap_or(0),
            text(e, "kind"),
            text(e, "agent_id"),
            e["duration_ms"].as_i64().unwrap_or(0),
            ago(e["created_at"].as_i64().unwrap_or(0)),
            line(text(e, "input"), 60),
            line(text(e, "output"), 60)
        )
    });
}

pub fn branches(all: &Value, json: bool) {
    let header = format!("{:<24} {:<14} MOVED", "BRANCH", "HEAD");
    list(all, json, "no branches", header, |b| {
        format!(
            "{:<24} {:<14} {}",
            text(b, "name"),
            text(b, "snapshot_id"),
            ago(b["updated_at"].as_i64().unwrap_or(0))
        )
    });
}

pub fn branch(set: &Value, json: bool) {
    if json {
        print_json(set);
    } else {
        out!("{} -> {}", text(set, "name"), text(set, "snapshot_id"));
    }
}

pub fn calls(all: &Value, json: bool) {
    let header = format!("{:>6}  {:>6}  {:<12} CALL -> RESULT", "SEQ", "MS", "WHEN");
    list(all, json, "no tool calls", header, |c| {
        let outcome = if c["ok"].as_bool().unwrap_or(false) {
            line(text(c, "result"), 40)
        } else {
            format!("error: {}", line(text(c, "result"), 60))
        };
        format!(
            "{:>6}  {:>6}  {:<12} {}({}) -> {}",
            c["seq"].as_i64().unwrap_or(0),
            c["duration_ms"].as_i64().unwrap_or(0),
            ago(c["created_at"].as_i64().unwrap_or(0)),
            text(c, "tool"),
            line(text(c, "args"), 50),
            outcome
        )
    });
}

pub fn nodes(all: &Value, json: bool) {
    let header = format!(
        "{:<12} {:<9} {:>6}  {:>7} {:>7}  NAME",
        "ID", "TYPE", "LINE", "CALLERS", "CALLEES"
    );
    list(all, json, "no nodes", header, |n| {
        let node = &n["node"];
        format!(
            "{:<12} {:<9} {:>6}  {:>7} {:>7}  {}",
            text(node, "id"),
            text(node, "node_type"),
            node["start_line"].as_u64().unwrap_or(0),
            n["callers"].as_u64().unwrap_or(0),
            n["callees"].as_u64().unwrap_or(0),
            text(node, "qualname"),
        )
    });
}

pub fn node(one: &Value, json: bool) {
    if json {
        print_json(one);
        return;
    }
    let n = &one["node"];
    out!("node      {}", text(n, "id"));
    out!("{:<9} {}", text(n, "node_type"), text(n, "qualname"));
    out!(
        "where     {}:{}-{}",
        text(n, "file_path"),
        n["start_line"],
        n["end_line"]
    );
    if one["parent"].is_object() {
        out!("parent    {}", neighbour(&one["parent"]));
    }
    if let Some(source) = one["source"].as_str() {
        out!("source:");
        for l in source.lines() {
            out!("  {l}");
        }
    }
    for key in ["callers", "callees"] {
        let all = one[key].as_array().map(Vec::as_slice).unwrap_or_default();
        out!("{key:<9} {}", if all.is_empty() { "none" } else { "" });
        for m in all {
            out!("  {}", neighbour(m));
        }
    }
}

fn neighbour(n: &Value) -> String {
    format!(
        "{} {} {} ({}:{})",
        text(n, "id"),
        text(n, "node_type"),
        text(n, "name"),
        text(n, "file_path"),
        n["start_line"]
    )
}

/// Remora events, one line each.
pub fn events(all: &Value, json: bool) {
    let header = format!("{:>6}  {:<12} {:<22} WHAT", "SEQ", "WHEN", "EVENT");
    list(all, json, "no events", header, |e| {
        let what = ["message", "result", "error", "summary"]
            .iter()
            .map(|k| text(e, k))
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        format!(
            "{:>6}  {:<12} {:<22} {}",
            e["seq"].as_i64().unwrap_or(0),
            ago(e["timestamp"].as_i64().unwrap_or(0)),
            text(e, "event_type"),
            line(what, 80)
        )
    });
}

/// Where the HTTP API of a running core listens, for `status`.
pub fn api(port: Option<u64>) {
    match port {
        Some(p) => out!("api       http://127.0.0.1:{p}/ (token in .chimera/api.json)"),
        None => out!("api       off (`chimera serve`, or `api.enabled`)"),
    }
}

/// `chimera mcp list`.
pub fn mcp_tools(tools: &[crate::mcp::McpTool], json: bool) {
    if json {
        let all: Vec<Value> = tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
            .collect();
        print_json(&json!(all));
        return;
    }
    for t in tools {
        out!("{:<28} {}", t.name, line(&t.description, 80));
    }
}

/// An A2A agent's card: who it is, where it answers, what it can do.
pub fn a2a_card(card: &Value, json: bool) {
    if json {
        print_json(card);
        return;
    }
    out!(
        "{} {} (A2A {})",
        card["name"].as_str().unwrap_or("?"),
        card["version"].as_str().unwrap_or(""),
        card["protocolVersion"].as_str().unwrap_or("?")
    );
    out!(
        "  {}",
        line(card["description"].as_str().unwrap_or(""), 100)
    );
    out!("  answers at {}", card["url"].as_str().unwrap_or("?"));
    if card["securitySchemes"]
        .as_object()
        .is_some_and(|s| !s.is_empty())
    {
        out!("  needs a token (--token or $A2A_TOKEN)");
    }
    for skill in card["skills"].as_array().into_iter().flatten() {
        out!(
            "  skill {:<20} {}",
            skill["id"].as_str().unwrap_or("?"),
            line(skill["description"].as_str().unwrap_or(""), 80)
        );
    }
}

/// An A2A task: its ID, state, and what it produced.
pub fn a2a_task(task: &Value, json: bool) {
    if json {
        print_json(task);
        return;
    }
    if task["kind"] == "message" {
        out!("{}", crate::a2a::artifact_text(task));
        return;
    }
    out!(
        "{} {}",
        task["id"].as_str().unwrap_or("?"),
        task["status"]["state"].as_str().unwrap_or("?")
    );
    for part in task["status"]["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(t) = part["text"].as_str() {
            out!("{t}");
        }
    }
    let artifacts = crate::a2a::artifact_text(task);
    if !artifacts.is_empty() {
        out!("{artifacts}");
    }
}
