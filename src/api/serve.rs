//! Serves a router on a listener (the HTTP port, the control socket) so
//! that no other process can starve the core of file descriptors: a
//! request's headers must arrive within [`Limits::headers`], a connection
//! idle for [`Limits::idle`] is closed, and at most [`Limits::connections`]
//! are open — past that a new one takes the place of the connection that
//! has been idle longest (a half-sent request is idle), so the owner's
//! requests, sent whole at once, are still served while another account
//! holds a thousand connections open. A connection busy with a response (a
//! live event stream) is never taken.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use axum::serve::Listener;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The limits of one server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time a client has to send a request's headers.
    pub headers: Duration,
    /// Time a connection may stay open with no request being answered.
    pub idle: Duration,
    /// Connections open at once.
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            headers: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            // Neovim opens 1,024 files at most; the core and the editor
            // keep most of them.
            connections: 128,
        }
    }
}

/// One open connection, as the accept loop sees it.
struct Conn {
    /// Requests being answered, bodies included.
    busy: AtomicUsize,
    /// When it last stopped being busy (ms since the server started).
    idle_since: AtomicU64,
    close: CancellationToken,
}

/// Counts a request as busy until its response's body is dropped (sent
/// whole, or the connection gone).
struct Busy(Arc<Conn>, Instant);

impl Busy {
    fn new(conn: Arc<Conn>, start: Instant) -> Self {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        Busy(conn, start)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0
            .idle_since
            .store(self.1.elapsed().as_millis() as u64, Ordering::SeqCst);
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request counted as busy while it lives.
struct Counted {
    inner: Body,
    _busy: Busy,
}

impl http_body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Serves `router` on `listener` under `limits` until `stop`.
pub async fn serve<L: Listener>(
    mut listener: L,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
) {
    let start = Instant::now();
    let open: Arc<Mutex<Vec<Arc<Conn>>>> = Arc::default();
    let all = |open: &Mutex<Vec<Arc<Conn>>>| open.lock().unwrap_or_else(|p| p.into_inner()).clone();
    // A slot is given back when its connection's task ends, its socket
    // closed: nothing is accepted that would go past the limit (one more
    // than the cap, for the newcomer that takes an idle one's place).
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.connections + 1));
    let tasks = tokio_util::task::TaskTracker::new();
    loop {
        let slot = tokio::select! {
            _ = stop.cancelled() => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (io, _) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(start.elapsed().as_millis() as u64),
            close: stop.child_token(),
        });
        let crowded = {
            let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
            open.push(conn.clone());
            open.len() > limits.connections
        };
        if crowded {
            // The one idle longest makes room; when every one is answering,
            // the newcomer waits in the listen queue for a slot instead.
            let longest_idle = all(&open)
                .into_iter()
                .filter(|c| !Arc::ptr_eq(c, &conn) && c.busy.load(Ordering::SeqCst) == 0)
                .min_by_key(|c| c.idle_since.load(Ordering::SeqCst));
            if let Some(c) = longest_idle {
                c.close.cancel();
            }
        }
        let (open, router) = (open.clone(), router.clone());
        tasks.spawn(async move {
            one_connection(io, router, conn.clone(), limits, start).await;
            open.lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|o| !Arc::ptr_eq(o, &conn));
            drop(slot);
        });
    }
    for c in all(&open) {
        c.close.cancel();
    }
    tasks.close();
    // Connections finish the response they are writing; a live stream
    // ends with its feed.
    let _ = tokio::time::timeout(Duration::from_secs(5), tasks.wait()).await;
}

async fn one_connection<Io>(io: Io, router: Router, conn: Arc<Conn>, limits: Limits, start: Instant)
where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let counted = conn.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let busy = Busy::new(counted.clone(), start);
        let router = router.clone();
        async move {
            let response: Response = match router.oneshot(req.map(Body::new)).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok::<_, std::convert::Infallible>(
                response.map(|inner| Body::new(Counted { inner, _busy: busy })),
            )
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.headers)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(served);
    let mut tick = tokio::time::interval(
        limits
            .idle
            .min(Duration::from_secs(1))
            .max(Duration::from_millis(50)),
    );
    loop {
        tokio::select! {
            _ = &mut served => return,
            _ = conn.close.cancelled() => break,
            _ = tick.tick() => {
                let idle_for = start.elapsed().as_millis() as u64 - conn.idle_since.load(Ordering::SeqCst);
                if conn.busy.load(Ordering::SeqCst) == 0 && idle_for >= limits.idle.as_millis() as u64 {
                    break;
                }
            }
        }
    }
    // Closed: a response being written is finished first; a half-sent
    // request is not waited for.
    if conn.busy.load(Ordering::SeqCst) == 0 {
        return;
    }
    served.as_mut().graceful_shutdown();
    // A connection still busy after 2 s is dropped with the server.
    let _ = tokio::time::timeout(Duration::from_secs(2), served).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads until the server closes `s`; how long that took.
    async fn closed_after(s: &mut tokio::net::TcpStream) -> Duration {
        let started = Instant::now();
        let mut buf = vec![0u8; 4096];
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await {
            if n == 0 {
                return started.elapsed();
            }
        }
        Duration::MAX
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn half_sent_and_idle_connections_are_closed_and_a_full_server_makes_room() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/", axum::routing::get(|| async { "hi" }));
        let limits = Limits {
            headers: Duration::from_millis(300),
            idle: Duration::from_millis(300),
            connections: 2,
        };
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, router, limits, stop.clone()));
        let connect = || tokio::net::TcpStream::connect(addr);

        let mut half = connect().await.unwrap();
        half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let took = closed_after(&mut half).await;
        assert!(
            took < Duration::from_secs(2),
            "a half-sent request held {took:?}"
        );

        let mut idle = connect().await.unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let took = closed_after(&mut idle).await;
        assert!(
            took < Duration::from_secs(2),
            "an idle keep-alive connection held {took:?}"
        );

        // Two held, a third comes: the one idle longest goes at once.
        let mut first = connect().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _second = connect().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut third = connect().await.unwrap();
        let took = closed_after(&mut first).await;
        assert!(
            took < Duration::from_millis(250),
            "the oldest stayed {took:?}"
        );
        third
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        third.read_to_string(&mut answer).await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("hi"),
            "{answer}"
        );
        stop.cancel();
    }
}
