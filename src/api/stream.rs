//! The SSE routes: `/events/stream` (the whole feed) and
//! `/events/stream/{id}` (one agent's or node's), each event with an `id:`
//! so a client that reconnects with `Last-Event-ID` resumes where it was.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;

use super::backend::Shared;
use super::events::{Event, EventBus, Resume};

/// A stream's place in the feed.
struct Follow {
    bus: Arc<EventBus>,
    wake: tokio::sync::watch::Receiver<u64>,
    /// The last event looked at.
    seq: u64,
    ready: VecDeque<SseEvent>,
    /// Only events about this agent or node.
    subject: Option<String>,
    /// Counts the stream as someone who can answer a question.
    _follower: super::events::Follower,
}

impl Follow {
    fn sse(&self, e: &Event) -> SseEvent {
        SseEvent::default()
            .id(self.bus.event_id(e.seq))
            .event(e.kind)
            .data(&e.data)
    }

    /// Tells the client its state is stale: what it missed is gone.
    fn lost(&self, seq: u64) -> SseEvent {
        SseEvent::default()
            .id(self.bus.event_id(seq))
            .event("reset")
            .data(r#"{"reason":"events were missed; read the state again"}"#)
    }

    async fn next(mut self) -> Option<(Result<SseEvent, Infallible>, Self)> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some((Ok(e), self));
            }
            let (fresh, missed) = self.bus.after(self.seq);
            if missed {
                // A client too slow for the ring.
                let gone = fresh.first().map_or(self.seq, |e| e.seq - 1);
                self.ready.push_back(self.lost(gone));
                self.seq = gone;
            }
            if fresh.is_empty() {
                // The stream ends with its core.
                tokio::select! {
                    woke = self.wake.changed() => woke.ok()?,
                    _ = self.bus.closed() => return None,
                }
                continue;
            }
            for e in &fresh {
                if self
                    .subject
                    .as_ref()
                    .is_none_or(|s| e.subjects.iter().any(|x| x == s))
                {
                    let sse = self.sse(e);
                    self.ready.push_back(sse);
                }
                self.seq = e.seq;
            }
        }
    }
}

fn follow(
    b: &Shared,
    headers: &HeaderMap,
    subject: Option<String>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>> + use<>> {
    let bus = b.events();
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty());
    let wake = bus.watch();
    let mut f = Follow {
        _follower: bus.follower(),
        bus,
        wake,
        seq: 0,
        ready: VecDeque::new(),
        subject,
    };
    f.seq = match f.bus.resume(last) {
        Resume::After(seq) => seq,
        Resume::Lost(seq) => {
            let lost = f.lost(seq);
            f.ready.push_back(lost);
            seq
        }
    };
    Sse::new(futures_util::stream::unfold(f, Follow::next)).keep_alive(KeepAlive::default())
}

pub(super) async fn all(
    State(b): State<Shared>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    follow(&b, &headers, None)
}

pub(super) async fn one(
    State(b): State<Shared>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    follow(&b, &headers, Some(id))
}
