//! The tool table is what runs: every tool tool mode offers every agent
//! reaches a handler of the host (a name in the table that nothing
//! handles would be offered and then fail as unknown).

use super::*;
use crate::agent::tools::table::{self, Offer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_offered_to_every_agent_has_a_handler() {
    let names: Vec<&str> = table::offered(Offer::Agent)
        .map(|t| t.name)
        .filter(|n| *n != "submit_result")
        .collect();
    let mut script: Vec<Reply> = names
        .iter()
        .map(|n| call(n, serde_json::json!({})))
        .collect();
    script.push(call(
        "submit_result",
        serde_json::json!({"summary": "nothing", "changed_files": []}),
    ));
    let (_, _, server) = run_tools(script, names.len() + 2).await;
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests.len() > names.len(), "{} requests", requests.len());
    for (i, r) in requests.iter().enumerate() {
        assert!(
            !r.contains("unknown host function") && !r.contains("There is no tool"),
            "request {i} (after calling {:?}): {r}",
            names.get(i.wrapping_sub(1))
        );
    }
}
