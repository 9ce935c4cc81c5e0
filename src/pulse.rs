//! When something last showed it was working: a model's reply streaming
//! in, an agent's steps. What a limit on silence counts from (not a limit
//! on the whole, which a slow machine's steady work would hit). A leaf.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Pulse {
    start: Instant,
    /// Milliseconds from `start` to the last beat.
    last_ms: AtomicU64,
}

impl Default for Pulse {
    fn default() -> Self {
        Self::new()
    }
}

impl Pulse {
    /// A pulse whose first beat is now.
    pub fn new() -> Self {
        Pulse {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    /// It showed it is working, now.
    pub fn beat(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Time since the start, and since the last beat.
    pub fn elapsed(&self) -> (Duration, Duration) {
        let since_start = self.start.elapsed();
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        (since_start, since_start.saturating_sub(last))
    }

    /// Resolves once `silence` passed without a beat, or `whole` since the
    /// start: which of the two.
    pub async fn stopped(&self, silence: Duration, whole: Duration) -> Stopped {
        loop {
            let (since_start, since_beat) = self.elapsed();
            if since_start >= whole {
                return Stopped::Whole;
            }
            if since_beat >= silence {
                return Stopped::Silent;
            }
            tokio::time::sleep((silence - since_beat).min(whole - since_start)).await;
        }
    }
}

/// Which limit a [`Pulse`] reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// No beat for the limit on silence.
    Silent,
    /// The limit on the whole.
    Whole,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn beats_put_off_the_limit_on_silence_but_not_the_whole() {
        let pulse = Pulse::new();
        let beating = async {
            for _ in 0..8 {
                tokio::time::sleep(Duration::from_millis(40)).await;
                pulse.beat();
            }
            std::future::pending::<()>().await
        };
        let silence = Duration::from_millis(100);
        let stopped = tokio::select! {
            s = pulse.stopped(silence, Duration::from_secs(60)) => s,
            _ = beating => unreachable!(),
        };
        assert_eq!(stopped, Stopped::Silent);
        assert!(
            pulse.elapsed().0 >= Duration::from_millis(320),
            "beats put it off"
        );
        let again = Pulse::new();
        let whole = again
            .stopped(Duration::from_secs(60), Duration::from_millis(50))
            .await;
        assert_eq!(whole, Stopped::Whole);
    }
}
