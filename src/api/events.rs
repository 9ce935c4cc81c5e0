//! The core's live feed for API clients. Every [`crate::event::Event`] a
//! client may show — agent states, proposals, accepts, rejects, snapshots,
//! rollbacks, chat and Remora events, progress, streamed replies and
//! permission questions — is numbered as the core announces it, kept in a
//! ring so a client that reconnects with `Last-Event-ID` gets what it
//! missed, and announced to the streams waiting for it. Passing events (a
//! line of progress, a piece of a stream) share the numbering but are kept
//! fewer, and a client that missed some of them is not told to start over.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::event::{Event as Happened, Level, Listener};
use crate::port::ProposedFile;

/// Events kept for clients that reconnect.
const KEPT: usize = 4096;

/// Passing events kept among them: eight agents' progress lines take a
/// second each, a chat streams a few pieces a second.
const PASSING_KEPT: usize = 256;

/// One event of the feed.
#[derive(Debug)]
pub struct Event {
    /// Position in this core's feed, from 1.
    pub seq: u64,
    /// What happened: `agent`, `resolved`, `remora`, …
    pub kind: &'static str,
    /// The agents and nodes it concerns (for one agent's or node's stream).
    pub subjects: Vec<String>,
    /// The event as JSON.
    pub data: String,
    /// Only matters while it is fresh ([`Happened::passing`]).
    pub passing: bool,
}

/// Where a client resumes the feed.
#[derive(Debug, PartialEq, Eq)]
pub enum Resume {
    /// After event `seq`: nothing was lost.
    After(u64),
    /// The client's last event is gone (another core's, or dropped from
    /// the ring): it must re-read the state, then follow from `seq`.
    Lost(u64),
}

struct Ring {
    next: u64,
    events: VecDeque<Arc<Event>>,
    /// How many of `events` are passing.
    passing: usize,
    /// The newest lasting event dropped from the ring (0: none): a client
    /// that had not seen it missed something that counts.
    gone: u64,
}

impl Ring {
    /// Drops the oldest passing event.
    fn drop_passing(&mut self) {
        if let Some(at) = self.events.iter().position(|e| e.passing) {
            self.events.remove(at);
            self.passing -= 1;
        }
    }

    /// Drops the oldest event.
    fn drop_oldest(&mut self) {
        match self.events.pop_front() {
            Some(e) if e.passing => self.passing -= 1,
            Some(e) => self.gone = e.seq,
            None => {}
        }
    }
}

/// The feed: hears the core's events, keeps and announces the ones
/// clients show.
pub struct EventBus {
    /// Names this core's feed in event IDs, so an ID from an earlier core
    /// (whose numbers restarted) is never taken for one of ours.
    epoch: String,
    ring: Mutex<Ring>,
    newest: watch::Sender<u64>,
    /// Ends every stream: the core is stopping.
    closed: tokio_util::sync::CancellationToken,
    /// Streams open now: someone who can answer a question.
    followers: std::sync::atomic::AtomicUsize,
}

/// One open stream of the feed, counted while it lives.
pub struct Follower(Arc<EventBus>);

impl Drop for Follower {
    fn drop(&mut self) {
        self.0
            .followers
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl EventBus {
    pub fn new() -> Self {
        EventBus {
            epoch: crate::store::unique_digest().to_hex()[..8].to_owned(),
            ring: Mutex::new(Ring {
                next: 1,
                events: VecDeque::new(),
                passing: 0,
                gone: 0,
            }),
            newest: watch::Sender::new(0),
            closed: tokio_util::sync::CancellationToken::new(),
            followers: Default::default(),
        }
    }

    /// Counts a stream opened on the feed until the [`Follower`] drops.
    pub fn follower(self: &Arc<Self>) -> Follower {
        self.followers
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Follower(self.clone())
    }

    /// Ends the streams following the feed (a server waits for its
    /// connections to end before it stops).
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Resolves once [`EventBus::close`] was called.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The SSE `id:` of event `seq`.
    pub fn event_id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.epoch)
    }

    /// Where a client that last saw `last_event_id` (its `Last-Event-ID`
    /// header; `None`: a new client, which wants only what comes next)
    /// resumes.
    pub fn resume(&self, last_event_id: Option<&str>) -> Resume {
        let ring = self.ring();
        let newest = ring.next - 1;
        let Some(last) = last_event_id else {
            return Resume::After(newest);
        };
        let seq = last
            .split_once('-')
            .filter(|(epoch, _)| *epoch == self.epoch)
            .and_then(|(_, seq)| seq.parse::<u64>().ok());
        match seq {
            // Every lasting event after it is still kept.
            Some(seq) if seq <= newest && seq >= ring.gone => Resume::After(seq),
            _ => Resume::Lost(ring.gone),
        }
    }

    /// The kept events after `seq`, oldest first, and whether a lasting
    /// event after `seq` is no longer kept (the client must read the state
    /// again).
    pub fn after(&self, seq: u64) -> (Vec<Arc<Event>>, bool) {
        let ring = self.ring();
        let skip = ring.events.partition_point(|e| e.seq <= seq);
        let events = ring.events.iter().skip(skip).cloned().collect();
        (events, ring.gone > seq)
    }

    /// Wakes when an event is added.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    fn keep(&self, kind: &'static str, subjects: Vec<String>, mut data: Value, passing: bool) {
        // When it happened, in ms since the epoch (fractional): clients
        // order and age events by it, and `make bench` times delivery.
        if let Some(obj) = data.as_object_mut() {
            let at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64() * 1e3);
            obj.insert("at".into(), json!(at));
        }
        let mut ring = self.ring();
        let seq = ring.next;
        ring.next += 1;
        ring.events.push_back(Arc::new(Event {
            seq,
            kind,
            subjects,
            data: data.to_string(),
            passing,
        }));
        if passing {
            ring.passing += 1;
            if ring.passing > PASSING_KEPT {
                ring.drop_passing();
            }
        }
        if ring.events.len() > KEPT {
            ring.drop_oldest();
        }
        drop(ring);
        self.newest.send_replace(seq);
    }

    /// What clients are told of `event`, if anything: its kind, subjects
    /// and data.
    fn feed(event: &Happened) -> Option<(Vec<String>, Value)> {
        Some(match event {
            Happened::Ready { files } => (vec![], json!({ "files": files })),
            Happened::Agent {
                agent,
                proposal,
                cleared,
            } => {
                let files = proposal
                    .as_ref()
                    .map(|p| p.iter().map(ProposedFile::from).collect::<Vec<_>>());
                (
                    vec![agent.id.clone()],
                    json!({ "agent": agent, "proposal": files, "cleared": cleared }),
                )
            }
            Happened::Resolved {
                id,
                accepted,
                files,
                unsaved,
                hunk,
            } => (
                vec![id.clone()],
                json!({ "id": id, "accepted": accepted, "files": files, "unsaved": unsaved, "hunk": hunk }),
            ),
            Happened::FilesWritten { paths } => (vec![], json!({ "paths": paths })),
            // What the editor says in passing is not part of the feed.
            Happened::Notice { level, .. } if *level == Level::Info => return None,
            Happened::Notice { level, message } => {
                (vec![], json!({ "level": level, "message": message }))
            }
            Happened::Topology { path } => (vec![], json!({ "path": path })),
            Happened::Snapshots { snapshots } => (vec![], json!({ "snapshots": snapshots })),
            Happened::Rollback {
                id,
                dry_run,
                ok,
                report,
            } => (
                vec![],
                json!({ "id": id, "dry_run": dry_run, "ok": ok, "message": report }),
            ),
            Happened::Chat { entry } => (vec![], json!(entry)),
            Happened::Progress { agent, message } => (
                vec![agent.clone()],
                json!({ "agent": agent, "message": message }),
            ),
            Happened::ChatDelta { agent, text } => {
                (vec![agent.clone()], json!({ "agent": agent, "text": text }))
            }
            Happened::AgentSaid { agent, piece } => (
                vec![agent.clone()],
                json!({ "agent": agent, "piece": piece }),
            ),
            Happened::Permission {
                id,
                agent,
                question,
            } => (
                vec![agent.clone()],
                json!({ "id": id, "agent": agent, "question": question }),
            ),
            Happened::Answered { id, allow } => (vec![], json!({ "id": id, "allow": allow })),
            Happened::Remora { record } => {
                let subjects = [record.event.from_agent(), record.event.to_agent()]
                    .into_iter()
                    .flatten()
                    .map(str::to_owned)
                    .collect();
                (subjects, json!(record))
            }
        })
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl Listener for EventBus {
    fn heard(&self, event: &Happened) {
        if let Some((subjects, data)) = Self::feed(event) {
            self.keep(event.kind(), subjects, data, event.passing());
        }
    }

    /// A client following the feed (the dashboard, a script) is there to
    /// answer a permission question (`POST /questions/{id}`).
    fn answers(&self) -> bool {
        self.followers.load(std::sync::atomic::Ordering::SeqCst) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::AgentView;
    use crate::store::AgentRecord;

    fn bus() -> EventBus {
        EventBus::new()
    }

    fn agent(bus: &EventBus, id: &str) {
        bus.heard(&Happened::Agent {
            agent: AgentView::from(&AgentRecord::new(id, "t")),
            proposal: None,
            cleared: false,
        });
    }

    #[test]
    fn events_are_numbered_and_filtered() {
        let b = bus();
        agent(&b, "a1");
        b.heard(&Happened::notice(Level::Info, "said in passing"));
        b.heard(&Happened::Resolved {
            id: "a1".into(),
            accepted: true,
            files: vec!["x.py".into()],
            unsaved: vec![],
            hunk: None,
        });
        let (all, _) = b.after(0);
        assert_eq!(
            all.iter().map(|e| (e.seq, e.kind)).collect::<Vec<_>>(),
            [(1, "agent"), (2, "resolved")]
        );
        assert_eq!(all[1].subjects, ["a1"]);
        assert!(all[1].data.contains("\"x.py\""), "{}", all[1].data);
        assert_eq!(b.after(1).0.len(), 1);
    }

    #[test]
    fn resume_knows_its_own_ids_only() {
        let b = bus();
        for i in 0..3 {
            agent(&b, &format!("a{i}"));
        }
        assert_eq!(b.resume(None), Resume::After(3));
        assert_eq!(b.resume(Some(&b.event_id(1))), Resume::After(1));
        assert_eq!(b.resume(Some("other-1")), Resume::Lost(0));
        assert_eq!(b.resume(Some("garbage")), Resume::Lost(0));
        // A number this core never gave.
        assert_eq!(b.resume(Some(&b.event_id(99))), Resume::Lost(0));
    }

    /// Eight agents' progress for an hour must not push an accept out of
    /// the ring, nor tell a client that missed a progress line to read
    /// everything again.
    #[test]
    fn passing_events_are_kept_fewer_and_never_force_a_reset() {
        let b = bus();
        agent(&b, "a1");
        for i in 0..KEPT * 2 {
            b.heard(&Happened::Progress {
                agent: format!("a{}", i % 8),
                message: format!("asking the model ({i} s)"),
            });
        }
        let (kept, missed) = b.after(0);
        assert!(!missed, "only passing events were dropped");
        assert_eq!(kept.len(), 1 + PASSING_KEPT);
        assert_eq!((kept[0].seq, kept[0].kind), (1, "agent"));
        assert!(kept[1..].iter().all(|e| e.passing && e.kind == "progress"));
        assert!(kept[PASSING_KEPT]
            .data
            .contains(&format!("({} s)", KEPT * 2 - 1)));
        assert_eq!(b.resume(Some(&b.event_id(2))), Resume::After(2));
        assert_eq!(kept[1].subjects.len(), 1);
    }

    #[test]
    fn the_ring_forgets_the_oldest() {
        let b = bus();
        for i in 0..KEPT + 10 {
            agent(&b, &format!("a{i}"));
        }
        let (kept, missed) = b.after(0);
        assert_eq!((kept.len(), kept[0].seq, missed), (KEPT, 11, true));
        assert!(!b.after(10).1, "nothing lasting after 10 was dropped");
        assert_eq!(b.resume(Some(&b.event_id(5))), Resume::Lost(10));
        assert_eq!(b.resume(Some(&b.event_id(10))), Resume::After(10));
    }
}
