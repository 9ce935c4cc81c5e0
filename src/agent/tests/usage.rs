//! Every model call's tokens add to its agent's totals, priced by
//! `llm.prices`; a server that does not count them is estimated.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_tokens_are_summed_and_priced() {
    let server = FakeServer::start(vec![Reply::OpenaiStream(GOOD.into())]).await;
    let mut s = setup(&server.url);
    s.config.llm.model = "gpt-priced".into();
    s.config.llm.prices.insert(
        "gpt-*".into(),
        crate::config::Price {
            input: 2.0,
            output: 8.0,
        },
    );
    run_on(&s, &job()).await.unwrap();
    let used = s.store.agent("ag").unwrap().usage;
    // The fake server counts nothing: about four characters a token.
    let sent = server.requests.lock().unwrap()[0].len() as u64;
    assert!(used.estimated, "{used:?}");
    assert!(
        used.input > 100 && used.input <= sent / 4 + 1,
        "{used:?} of {sent} bytes sent"
    );
    assert_eq!(used.output, (GOOD.len() as u64).div_ceil(4), "{used:?}");
    let cost = (used.input as f64 * 2.0 + used.output as f64 * 8.0) / 1e6;
    assert!((used.cost - cost).abs() < 1e-12, "{used:?}");
    // The editor's view of the agent carries them.
    let view = crate::event::AgentView::from(&s.store.agent("ag").unwrap());
    assert_eq!(*view.usage, used);
}
