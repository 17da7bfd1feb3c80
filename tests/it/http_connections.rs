//! Connections that hold a file descriptor without asking for anything: HTTP/2 connections
//! that only sent the preface, idle HTTP/1 keep-alive connections, and more connections than
//! the cap. Spoken over raw TCP, frame by frame, as an attacker would.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::gateway::{Gateway, config, hs_settings};
use support::sse::{Next, SseClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolgate::server::ConnectionLimits;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
const EMPTY_SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];
const FRAME_PING: u8 = 6;
const FRAME_GOAWAY: u8 = 7;

async fn gateway_with(limits: ConnectionLimits) -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    config.header_timeout = limits.header_timeout;
    config.idle_timeout = limits.idle_timeout;
    config.max_connections = Some(limits.max_connections);
    config.sse_ping = Duration::from_millis(500);
    (Gateway::start_with(config).await, dir)
}

fn limits(idle: Duration, max_connections: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_timeout: Duration::from_secs(30),
        idle_timeout: idle,
        max_connections,
    }
}

async fn connect(gateway: &Gateway) -> TcpStream {
    TcpStream::connect(gateway.base.trim_start_matches("http://"))
        .await
        .expect("connect")
}

/// How an HTTP/2 connection that sent only its preface and an empty SETTINGS ended.
struct Ended {
    after: Duration,
    frame_types: Vec<u8>,
}

/// Sends the HTTP/2 preface and an empty SETTINGS frame, then reads frames until the server
/// closes the connection (or `within` passes: `None`). With `answer_pings`, acknowledges the
/// server's pings as a live client does; without, it never writes again, as an attacker
/// holding descriptors needs not.
async fn preface_only(gateway: &Gateway, answer_pings: bool, within: Duration) -> Option<Ended> {
    let mut stream = connect(gateway).await;
    let start = Instant::now();
    stream.write_all(PREFACE).await.expect("preface");
    stream.write_all(&EMPTY_SETTINGS).await.expect("settings");
    let mut frame_types = Vec::new();
    let read_all = async {
        loop {
            let mut header = [0u8; 9];
            if stream.read_exact(&mut header).await.is_err() {
                return; // closed (or reset)
            }
            let length =
                usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
            let mut payload = vec![0u8; length];
            if stream.read_exact(&mut payload).await.is_err() {
                return;
            }
            frame_types.push(header[3]);
            let is_ping_request = header[3] == FRAME_PING && header[4] & 1 == 0;
            if answer_pings && is_ping_request {
                let mut ack = vec![0, 0, 8, FRAME_PING, 1, 0, 0, 0, 0];
                ack.extend_from_slice(&payload);
                let _ = stream.write_all(&ack).await;
            }
        }
    };
    tokio::time::timeout(within, read_all).await.ok()?;
    Some(Ended {
        after: start.elapsed(),
        frame_types,
    })
}

#[tokio::test]
async fn an_http2_connection_that_only_sent_its_preface_is_closed_after_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let (gateway, _dir) = gateway_with(limits(idle, 100)).await;
    // A client that answers pings gets a GOAWAY and is closed at the idle timeout.
    let polite = preface_only(&gateway, true, Duration::from_secs(10))
        .await
        .expect("the idle connection is closed");
    assert!(
        polite.after >= idle && polite.after < idle + Duration::from_secs(2),
        "closed after {:?}",
        polite.after
    );
    assert!(
        polite.frame_types.contains(&FRAME_GOAWAY),
        "{:?}",
        polite.frame_types
    );
    // One that never answers is dropped soon after.
    let silent = preface_only(&gateway, false, Duration::from_secs(10))
        .await
        .expect("the idle connection is closed");
    assert!(
        silent.after >= idle && silent.after < idle + Duration::from_secs(4),
        "closed after {:?}",
        silent.after
    );
}

#[tokio::test]
async fn an_idle_http1_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let (gateway, _dir) = gateway_with(limits(idle, 100)).await;
    let mut stream = connect(&gateway).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
        .await
        .expect("request");
    let answered = Instant::now();
    let mut received = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0u8; 1024];
        while let Ok(n) = stream.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buffer[..n]);
        }
    })
    .await;
    assert!(closed.is_ok(), "the keep-alive connection stays open");
    assert!(received.starts_with(b"HTTP/1.1 200"), "{received:?}");
    let after = answered.elapsed();
    assert!(
        after >= idle && after < idle + Duration::from_secs(2),
        "closed after {after:?}"
    );
}

#[tokio::test]
async fn an_open_stream_is_not_idle() {
    let idle = Duration::from_secs(1);
    let (gateway, _dir) = gateway_with(limits(idle, 100)).await;
    let token = Gateway::token(json!({"sub": "agent-1"}));
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &token).await;
    assert_eq!(stream.event(Duration::from_secs(5)).await.event, "tools");
    let until = Instant::now() + idle * 3;
    while Instant::now() < until {
        match stream.next(Duration::from_secs(2)).await {
            Next::Item(_) => {}
            other => panic!("the stream ended or stalled while open: {other:?}"),
        }
    }
}

#[tokio::test]
async fn connections_past_the_cap_are_closed_at_once_and_counted() {
    let (gateway, _dir) = gateway_with(limits(Duration::from_secs(30), 3)).await;
    // Three connections that say nothing hold the three slots.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect(&gateway).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await; // all three accepted
    let mut refused = connect(&gateway).await;
    let started = Instant::now();
    let mut buffer = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), refused.read(&mut buffer))
        .await
        .expect("the connection past the cap is closed at once");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() < Duration::from_secs(2));

    // A slot freed is a slot for the next client.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reply = gateway
        .client
        .get(format!("{}/metrics", gateway.base))
        .send()
        .await
        .expect("a client gets in once a slot is free");
    let text = reply.text().await.expect("metrics");
    assert!(
        text.lines().any(
            |line| line.starts_with("toolgate_connections_refused_total") && line.ends_with(" 1")
        ),
        "{text}"
    );
}
