//! Questions put to the human (an ACP agent's permission requests under
//! `capabilities.ask`), each waiting for its answer for at most
//! [`ASK_LIMIT`]: the one owner of the questions still open.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::Core;
use crate::event::Event;

/// How long a question to the human waits before it counts as refused.
const ASK_LIMIT: Duration = Duration::from_secs(120);

/// The questions still open, by ID, each with where its answer goes.
#[derive(Default)]
pub struct Questions {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<bool>>>,
}

impl Questions {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<bool>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new question: its ID, and where its answer arrives.
    fn open(&self) -> (u64, oneshot::Receiver<bool>) {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(id, tx);
        (id, rx)
    }

    /// The human answered question `id` (an answer to a question no longer
    /// open is dropped).
    pub fn answer(&self, id: u64, allow: bool) {
        if let Some(tx) = self.waiting().remove(&id) {
            // The asker gave up waiting: nobody to tell.
            let _ = tx.send(allow);
        }
    }

    fn forget(&self, id: u64) {
        self.waiting().remove(&id);
    }
}

/// The longest question put to the human, in characters.
const QUESTION_CHARS: usize = 500;

/// A question in the agent's words as every client may show it: on one
/// line, without the terminal's escape sequences (a `chimera task`
/// prints it raw), and not longer than a person reads.
fn readable(question: &str) -> String {
    let line: String = question
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(QUESTION_CHARS + 1)
        .collect();
    match line.chars().count() > QUESTION_CHARS {
        true => line.chars().take(QUESTION_CHARS - 1).chain(['…']).collect(),
        false => line,
    }
}

/// How an ACP agent of `core` asks the human for permission when
/// `capabilities.ask` is on: through whoever is there to ask when the
/// question comes (the editor, a dashboard opened since the agent started).
pub(super) fn asker(core: &Arc<Core>, agent: &str) -> Option<crate::acp::requests::Ask> {
    use crate::acp::requests::Answer;
    if !core.config.capabilities.ask {
        return None;
    }
    // Weak: the question lives in the agent's route, which the core owns.
    let weak = Arc::downgrade(core);
    let agent = agent.to_owned();
    Some(Arc::new(move |question: String| {
        let weak = weak.clone();
        let agent = agent.clone();
        Box::pin(async move {
            let Some(core) = weak.upgrade() else {
                return Answer::NobodyAsked;
            };
            if !core.out.asks_the_human() {
                return Answer::NobodyAsked;
            }
            let (id, rx) = core.questions.open();
            core.out.event(Event::Permission {
                id,
                agent,
                question: readable(&question),
            });
            drop(core);
            let answer = match tokio::time::timeout(ASK_LIMIT, rx).await {
                Ok(Ok(allow)) => Some(allow),
                _ => None,
            };
            if let Some(core) = weak.upgrade() {
                if answer.is_none() {
                    core.questions.forget(id);
                }
                // Every client showing the question stops: one answered it.
                core.out.event(Event::Answered { id, allow: answer });
            }
            answer.map_or(Answer::Silent, Answer::Said)
        })
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_question_reaches_every_client_without_escapes_and_at_a_readable_length() {
        let shown = super::readable("Edit `calc.py`\u{1b}[2J\u{7}\nand more");
        assert_eq!(shown, "Edit `calc.py` [2J  and more");
        let long = super::readable(&"x".repeat(100_000));
        assert_eq!(long.chars().count(), super::QUESTION_CHARS);
        assert!(long.ends_with('…'));
    }
}
