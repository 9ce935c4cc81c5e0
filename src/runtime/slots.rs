//! The agents' tasks on the core, each with its cancel, and the slots that
//! bound how many run at once (`agents.max_concurrent`). The one owner of
//! both: an agent's task enters, waits for a slot, and leaves here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub struct Slots {
    /// Each agent's task: its entry number and its cancel.
    tasks: Mutex<HashMap<String, (u64, CancellationToken)>>,
    entered: std::sync::atomic::AtomicU64,
    permits: Arc<Semaphore>,
}

/// One entry of an agent's task: what it leaves with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry(u64);

impl Slots {
    /// At most `max` agents at once (at least one).
    pub fn new(max: usize) -> Self {
        Slots {
            tasks: Mutex::new(HashMap::new()),
            entered: std::sync::atomic::AtomicU64::new(0),
            permits: Arc::new(Semaphore::new(max.max(1))),
        }
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, CancellationToken)>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Agent `id`'s task starts (queued until it gets a slot), stopped by `cancel`.
    pub fn enter(&self, id: &str, cancel: CancellationToken) -> Entry {
        let n = self
            .entered
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.tasks().insert(id.to_owned(), (n, cancel));
        Entry(n)
    }

    /// A free slot, held until the permit is dropped; `None` when `cancel`
    /// fires first.
    pub async fn slot(&self, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
        tokio::select! {
            p = self.permits.clone().acquire_owned() => p.ok(),
            _ = cancel.cancelled() => None,
        }
    }

    /// Agent `id`'s task of `entry` ended. A task the agent was started
    /// again with meanwhile (feedback, a recovery) stays, stoppable.
    pub fn leave(&self, id: &str, entry: Entry) {
        let mut tasks = self.tasks();
        if tasks.get(id).is_some_and(|(n, _)| Entry(*n) == entry) {
            tasks.remove(id);
        }
    }

    /// Stops agent `id`'s task at once, if it has one.
    pub fn stop(&self, id: &str) {
        if let Some((_, t)) = self.tasks().remove(id) {
            t.cancel();
        }
    }

    /// Stops every agent's task (the core stops).
    pub fn stop_all(&self) {
        for (_, (_, t)) in self.tasks().drain() {
            t.cancel();
        }
    }

    /// How many agents' tasks there are (running or waiting for a slot).
    pub fn count(&self) -> usize {
        self.tasks().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_that_ends_leaves_the_agents_next_run_stoppable() {
        let slots = Slots::new(1);
        let first = slots.enter("a", CancellationToken::new());
        let again = CancellationToken::new();
        slots.enter("a", again.clone());
        slots.leave("a", first);
        assert_eq!(slots.count(), 1);
        slots.stop("a");
        assert!(again.is_cancelled());
        assert_eq!(slots.count(), 0);
    }
}
