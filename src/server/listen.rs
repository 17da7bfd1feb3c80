//! The accept loop: TCP connections served by hyper with the gateway's router, held to
//! [`ConnectionLimits`] (a cap on open connections, a time to send the request head, an idle
//! timeout for HTTP/1 and HTTP/2 alike), and a graceful shutdown that waits for in-flight
//! requests.
//!
//! Every open connection holds a file descriptor. Without an idle timeout an HTTP/2 connection
//! that only sent its preface stayed open for good, and about a thousand of them locked every
//! client out; without a cap the process runs out of descriptors for its store and clients
//! too.
//!
//! `axum::serve` would do, but its connection set-up costs an idle SSE stream most of its
//! memory. It serves each connection with hyper-util's `auto` builder, which reads the first
//! bytes to tell HTTP/1 from HTTP/2 and replays them to hyper as a prefix; the read that
//! follows the replayed prefix makes hyper's 8 KiB read buffer double to 16 KiB, and an idle
//! stream keeps that buffer for its whole life (heaptrack: 16.4 KiB of the ~29 KiB heap per
//! idle stream). Here the protocol is told by *peeking* at the socket, which consumes nothing,
//! and hyper's HTTP/1 or HTTP/2 connection gets the socket untouched.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

use super::activity::{Activity, TrackedBody};
use crate::telemetry::Metrics;

/// How long to pause accepting after an error that is not about one connection (e.g. out of
/// file descriptors), so that the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What a client sends first on an HTTP/2 connection without TLS ("prior knowledge").
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How often an HTTP/2 connection is pinged, and how long the answer may take: finds peers
/// that vanished while a stream (an SSE subscription) is open. An answered ping does not keep
/// an idle connection open; the idle timeout does that.
const HTTP2_PING_INTERVAL: Duration = Duration::from_secs(30);
const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// After a connection was asked to close (idle, or the server stopping), how long its peer
/// has to acknowledge (HTTP/2 waits for the answer to a ping) before the connection is dropped,
/// unless an exchange is still in flight.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The same when the server stops: an idle keep-alive connection whose peer never answers the
/// GOAWAY's ping held every SIGTERM for the whole [`CLOSE_GRACE`]. A request the peer sent
/// just before reading the GOAWAY is in flight within this long (and then waited for); an
/// idle peer loses nothing when its socket closes.
const STOP_GRACE: Duration = Duration::from_millis(100);

/// The limits every connection is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take to send its request head (HTTP/1; also how long an HTTP/1
    /// keep-alive connection may wait for its next one), or its preface (HTTP/2).
    pub header_timeout: Duration,
    /// A connection (HTTP/1 or HTTP/2) with no exchange in flight for this long is closed.
    pub idle_timeout: Duration,
    /// Connections open at once; past it, a new connection is closed as soon as accepted (and
    /// counted in `toolgate.connections.refused`).
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and waits for
/// every open connection to finish its current exchange. Streams must be ended by the caller
/// when `shutdown` resolves (they would otherwise never finish). A connection still silent at
/// that moment (nothing sent yet, so no exchange to finish) is closed at once: waiting for it
/// would hold the shutdown for up to the header timeout (an HTTP client's pool can open such
/// a connection and never use it).
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    // Shared: a connection's task holds one pointer to the settings, not a copy of both
    // builders for as long as it lives (an idle stream's connection lives for hours).
    let protocols = Arc::new(Protocols::new(limits));
    // One permit per open connection: the cap, and (all permits back) the end of the shutdown.
    // Bounded so that the shutdown can take every permit back in one call.
    let max_connections = limits
        .max_connections
        .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let slots = Arc::new(Semaphore::new(max_connections));
    // Tells every connection that shutdown started.
    let (stopping, stop) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) if is_per_connection(&error) => continue,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept connections; pausing");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            // Closed at once: its descriptor is what the cap protects.
            drop(stream);
            metrics.connection_refused();
            continue;
        };
        // Events and small responses go out at once rather than waiting for more bytes.
        let _ = stream.set_nodelay(true);
        let protocols = Arc::clone(&protocols);
        let (app, stop) = (app.clone(), stop.clone());
        tokio::spawn(async move {
            let _slot = slot;
            protocols.serve(stream, app, limits, stop).await;
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    // Every connection holds its permit until it ends.
    let all = u32::try_from(max_connections).expect("bounded to u32 above");
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// The HTTP/1 and HTTP/2 connection settings, shared by every connection.
struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

impl Protocols {
    fn new(limits: ConnectionLimits) -> Protocols {
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .keep_alive_interval(HTTP2_PING_INTERVAL)
            .keep_alive_timeout(HTTP2_PING_TIMEOUT);
        Protocols { http1, http2 }
    }

    /// Serves one accepted connection in the protocol its first bytes speak, until it ends.
    async fn serve(
        self: Arc<Self>,
        stream: TcpStream,
        app: Router,
        limits: ConnectionLimits,
        mut stop: watch::Receiver<bool>,
    ) {
        let activity = Activity::new();
        let service = TowerToHyperService::new(tracked(app, Arc::clone(&activity)));
        let detected = tokio::select! {
            detected = tokio::time::timeout(limits.header_timeout, is_http2(&stream)) => detected,
            _ = stop.wait_for(|stopping| *stopping) => return, // silent until shutdown
        };
        let served = match detected {
            Ok(Ok(false)) => {
                let connection = self.http1.serve_connection(TokioIo::new(stream), service);
                drive(
                    connection,
                    |c| c.graceful_shutdown(),
                    &activity,
                    limits,
                    stop,
                )
                .await
            }
            Ok(Ok(true)) => {
                let connection = self.http2.serve_connection(TokioIo::new(stream), service);
                // Boxed: the task of every connection is as large as its largest branch, and
                // HTTP/2's state is the larger.
                Box::pin(drive(
                    connection,
                    |c| c.graceful_shutdown(),
                    &activity,
                    limits,
                    stop,
                ))
                .await
            }
            Ok(Err(_)) | Err(_) => return, // gone, or silent: nothing to serve
        };
        if let Err(error) = served {
            tracing::trace!(%error, "connection ended with an error");
        }
    }
}

/// `app` for one connection, each exchange tracked in `activity` until its body is sent (what
/// the idle timeout and the shutdown wait for). Cloning a Router clones an `Arc`: its routes
/// are shared by every connection.
fn tracked(
    app: Router,
    activity: Arc<Activity>,
) -> impl tower::Service<
    Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send,
> + Clone {
    app.map_request(|request: Request<Incoming>| request.map(Body::new))
        .map_future(move |response| {
            let exchange = activity.begin();
            async move {
                let response: axum::response::Response = response.await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|body| TrackedBody::wrap(body, exchange)),
                )
            }
        })
}

/// Serves one connection until it ends, it has been idle for the idle timeout, or the server
/// stops; in the last two cases it is asked to close (`close`: HTTP/1 closes after the current
/// exchange, HTTP/2 sends GOAWAY) and then given [`CLOSE_GRACE`] before being dropped, unless
/// an exchange is still in flight (requests are bounded by the request timeout).
async fn drive<C>(
    connection: C,
    close: impl FnOnce(Pin<&mut C>),
    activity: &Activity,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) -> Result<(), hyper::Error>
where
    C: Future<Output = Result<(), hyper::Error>>,
{
    let mut connection = std::pin::pin!(connection);
    let grace = tokio::select! {
        served = connection.as_mut() => return served,
        () = activity.idle_for(limits.idle_timeout) => {
            tracing::debug!(idle = ?limits.idle_timeout, "closing an idle connection");
            CLOSE_GRACE
        }
        _ = stop.wait_for(|stopping| *stopping) => STOP_GRACE,
    };
    close(connection.as_mut());
    loop {
        match tokio::time::timeout(grace, connection.as_mut()).await {
            Ok(served) => return served,
            Err(_) if !activity.is_busy() => return Ok(()), // dropped: the socket closes
            Err(_) => {}
        }
    }
}

/// Whether the client opens with the HTTP/2 preface, judged from as few bytes as tell it.
/// Consumes nothing.
async fn is_http2(stream: &TcpStream) -> io::Result<bool> {
    let mut start = [0u8; HTTP2_PREFACE.len()];
    loop {
        let n = stream.peek(&mut start).await?;
        if n == 0 || start[..n] != HTTP2_PREFACE[..n] {
            return Ok(false);
        }
        if n == HTTP2_PREFACE.len() {
            return Ok(true);
        }
        // So far a prefix of the preface, split over packets: peeking again at once would
        // return the same bytes, so give the rest a moment to arrive.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Errors of one incoming connection (it was reset before we accepted it, …): skip it.
fn is_per_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// A connected pair: what the client writes, `is_http2` judges on the server side.
    async fn judge(parts: &[&[u8]]) -> bool {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        let expected_first = parts[0][0];
        let parts: Vec<Vec<u8>> = parts.iter().map(|part| part.to_vec()).collect();
        let writer = tokio::spawn(async move {
            for part in parts {
                client.write_all(&part).await.expect("write");
                client.flush().await.expect("flush");
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            client
        });
        let verdict = is_http2(&server).await.expect("peek");
        let _client = writer.await.expect("writer");
        // Peeking consumed nothing: hyper will read the request from its first byte.
        let mut first = [0u8; 1];
        assert_eq!(server.peek(&mut first).await.expect("peek"), 1);
        assert_eq!(first[0], expected_first);
        verdict
    }

    #[tokio::test]
    async fn a_connection_that_never_speaks_does_not_hold_the_shutdown() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let metrics = Arc::new(Metrics::new(None).expect("metrics"));
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            max_connections: 10,
        };
        let server = tokio::spawn(serve(
            listener,
            Router::new(),
            limits,
            metrics,
            async move {
                let _ = stopped.await;
            },
        ));
        let _silent = TcpStream::connect(addr).await.expect("connect");
        tokio::time::sleep(Duration::from_millis(50)).await; // accepted, peeking
        stop.send(()).expect("the server waits");
        tokio::time::timeout(Duration::from_secs(2), server)
            .await
            .expect("shutdown does not wait for the silent connection")
            .expect("task")
            .expect("served");
    }

    #[tokio::test]
    async fn an_http1_request_is_not_http2() {
        assert!(!judge(&[b"GET /agents/tools HTTP/1.1\r\nhost: x\r\n\r\n"]).await);
    }

    #[tokio::test]
    async fn the_http2_preface_is_recognised_even_split_over_packets() {
        assert!(judge(&[HTTP2_PREFACE]).await);
        assert!(judge(&[b"PRI * HT", b"TP/2.0\r\n\r\nSM\r\n\r\n"]).await);
    }

    #[tokio::test]
    async fn a_request_that_only_starts_like_the_preface_is_http1() {
        assert!(!judge(&[b"P", b"OST /admin/tools HTTP/1.1\r\n\r\n"]).await);
    }
}
