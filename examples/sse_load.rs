//! Load client of `scripts/bench/sse.sh`: opens many SSE subscriptions to a running gateway,
//! measures the server's memory per idle subscriber, makes one admin change that alters every
//! subscriber's manifest, and reports how fast the `tools_changed` event reached them.
//!
//!   sse_load <base-url> <hmac-secret> <server-pid> <subscribers> <claim-sets> <tool-id> [sse|mcp]
//!
//! With `mcp`, each subscriber is an MCP session instead (2025-11-25): `initialize` on its
//! connection, then the session's `GET /mcp` notification stream on the same connection; its
//! first event is the priming event and the change is `notifications/tools/list_changed`.
//!
//! With `sse-h2`, the SSE subscriptions are HTTP/2 streams (prior knowledge), up to
//! [`STREAMS_PER_CONNECTION`] on each connection: how one process reaches 100,000 subscribers
//! where the open-file limit is far below that (each HTTP/1.1 subscriber holds a socket on both
//! sides).
//!
//! Lean on purpose: raw HTTP/1.1 over `TcpStream`, one small task per subscription, so the
//! client's own cost does not hide the server's. Latency is measured per subscriber from the
//! admin write's response (and, more conservatively, from just before the write was sent) to
//! the arrival of the bytes `event: tools_changed` on its socket.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if !(7..=8).contains(&args.len()) {
        bail!(
            "usage: sse_load <base-url> <hmac-secret> <server-pid> <subscribers> <claim-sets> <tool-id> [sse|mcp]"
        );
    }
    let mode = match args.get(7).map(String::as_str) {
        None | Some("sse") => Mode::Sse,
        Some("sse-h2") => Mode::SseH2,
        Some("mcp") => Mode::Mcp,
        Some(other) => bail!("unknown mode '{other}': sse, sse-h2 or mcp"),
    };
    let mcp = mode == Mode::Mcp;
    let base = args[1].trim_end_matches('/').to_owned();
    let secret = &args[2];
    let pid: u32 = args[3].parse().context("server pid")?;
    let subscribers: usize = args[4].parse().context("subscribers")?;
    let claim_sets: usize = args[5].parse().context("claim sets")?;
    let tool_id = &args[6];
    let addr = base.trim_start_matches("http://").to_owned();

    let tokens: Vec<String> = (0..claim_sets)
        .map(|set| {
            mint(
                secret,
                json!({"sub": format!("bench-{set}"), "roles": ["agent"], "team": set}),
            )
        })
        .collect::<anyhow::Result<_>>()?;

    let rss_before = rss_kib(pid)?;
    let (connected_tx, mut connected_rx) = mpsc::unbounded_channel::<()>();
    let (arrived_tx, mut arrived_rx) = mpsc::unbounded_channel::<Instant>();
    // Bounded connect concurrency: the listen backlog is finite.
    let opening = Arc::new(Semaphore::new(256));
    let started = Instant::now();
    let mut h2_connection: Option<(h2::client::SendRequest<bytes::Bytes>, usize)> = None;
    for i in 0..subscribers {
        if mode == Mode::SseH2 {
            let send = match h2_connection.take() {
                Some((send, open)) if open < STREAMS_PER_CONNECTION => {
                    h2_connection = Some((send.clone(), open + 1));
                    send
                }
                _ => {
                    let send = h2_connect(&addr).await?;
                    h2_connection = Some((send.clone(), 1));
                    send
                }
            };
            let (token, addr, opening) = (
                tokens[i % claim_sets].clone(),
                addr.clone(),
                Arc::clone(&opening),
            );
            let (connected, arrived) = (connected_tx.clone(), arrived_tx.clone());
            tokio::spawn(async move {
                if let Err(error) =
                    h2_subscriber(send, &addr, &token, opening, connected, arrived).await
                {
                    eprintln!("subscriber {i}: {error:#}");
                }
            });
            continue;
        }
        let token = tokens[i % claim_sets].clone();
        let (addr, opening) = (addr.clone(), Arc::clone(&opening));
        let (connected, arrived) = (connected_tx.clone(), arrived_tx.clone());
        tokio::spawn(async move {
            let outcome = if mcp {
                mcp_subscriber(&addr, &token, opening, connected, arrived).await
            } else {
                let request = format!(
                    "GET /agents/tools/stream HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\naccept: text/event-stream\r\n\r\n"
                );
                subscriber(&addr, request, opening, connected, arrived).await
            };
            if let Err(error) = outcome {
                eprintln!("subscriber {i}: {error:#}");
            }
        });
    }
    drop((connected_tx, arrived_tx));
    for n in 0..subscribers {
        tokio::time::timeout(Duration::from_secs(120), connected_rx.recv())
            .await
            .with_context(|| {
                format!("only {n} of {subscribers} subscribers got their first event")
            })?
            .context("subscribers failed")?;
    }
    let connect_time = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await; // let allocators settle
    let rss_idle = rss_kib(pid)?;

    let client = reqwest::Client::builder().no_proxy().build()?;
    let admin = mint(secret, json!({"sub": "bench-admin", "roles": ["admin"]}))?;
    let sent = Instant::now();
    let reply = client
        .patch(format!("{base}/admin/tools/{tool_id}"))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(
            &json!({"description": format!("changed at {:?}", std::time::SystemTime::now())}),
        )?)
        .send()
        .await?;
    let answered = Instant::now();
    if !reply.status().is_success() {
        bail!(
            "the admin write failed: {} {}",
            reply.status(),
            reply.text().await?
        );
    }
    let mut arrivals = Vec::with_capacity(subscribers);
    while arrivals.len() < subscribers {
        match tokio::time::timeout(Duration::from_secs(30), arrived_rx.recv()).await {
            Ok(Some(at)) => arrivals.push(at),
            _ => break,
        }
    }
    arrivals.sort_unstable();
    let from_sent: Vec<f64> = arrivals
        .iter()
        .map(|at| ms(at.duration_since(sent)))
        .collect();
    let from_answer: Vec<f64> = arrivals
        .iter()
        .map(|at| ms(at.saturating_duration_since(answered)))
        .collect();

    println!(
        "subscribers: {subscribers} over {claim_sets} claim sets, all connected in {:.1} s",
        connect_time.as_secs_f64()
    );
    println!(
        "server RSS: {:.1} MiB before, {:.1} MiB with all idle subscribers: {:.2} KiB per subscriber",
        rss_before as f64 / 1024.0,
        rss_idle as f64 / 1024.0,
        (rss_idle.saturating_sub(rss_before)) as f64 / subscribers as f64
    );
    println!(
        "admin write answered in {:.2} ms",
        ms(answered.duration_since(sent))
    );
    println!(
        "{} received by {} of {subscribers}",
        if mcp {
            "notifications/tools/list_changed"
        } else {
            "tools_changed"
        },
        arrivals.len()
    );
    for (label, series) in [
        ("from the write's response", &from_answer),
        ("from sending the write", &from_sent),
    ] {
        println!(
            "latency {label}: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms; 1,000th subscriber at {:.1} ms, last at {:.1} ms",
            percentile(series, 0.50),
            percentile(series, 0.90),
            percentile(series, 0.99),
            series.last().copied().unwrap_or(f64::NAN),
            series.get(999).copied().unwrap_or(f64::NAN),
            series.last().copied().unwrap_or(f64::NAN),
        );
    }
    if arrivals.len() < subscribers {
        bail!(
            "{} subscribers never received the change",
            subscribers - arrivals.len()
        );
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sse,
    SseH2,
    Mcp,
}

/// HTTP/2 streams opened on one connection (the server allows 200 at once).
const STREAMS_PER_CONNECTION: usize = 190;

/// A new HTTP/2 connection (prior knowledge), driven in the background.
async fn h2_connect(addr: &str) -> anyhow::Result<h2::client::SendRequest<bytes::Bytes>> {
    let socket = TcpStream::connect(addr).await?;
    socket.set_nodelay(true)?;
    // SSE events are small DATA frames, and 190 streams' worth queue up while this machine's
    // two cores are busy: h2's guard against floods of small frames is for untrusted peers.
    let (send, connection) = h2::client::Builder::new()
        .data_frame_budget(usize::MAX / 2)
        .handshake(socket)
        .await?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            eprintln!("an HTTP/2 connection ended: {error}");
        }
    });
    Ok(send)
}

/// One subscription on an HTTP/2 stream: as [`subscriber`].
async fn h2_subscriber(
    send: h2::client::SendRequest<bytes::Bytes>,
    addr: &str,
    token: &str,
    opening: Arc<Semaphore>,
    connected: mpsc::UnboundedSender<()>,
    arrived: mpsc::UnboundedSender<Instant>,
) -> anyhow::Result<()> {
    let permit = opening.acquire().await?;
    let mut send = send.ready().await?;
    let request = axum::http::Request::get(format!("http://{addr}/agents/tools/stream"))
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "text/event-stream")
        .body(())?;
    let (response, _) = send.send_request(request, true)?;
    let response = response.await?;
    if !response.status().is_success() {
        bail!("the stream was refused: {}", response.status());
    }
    let markers = Markers {
        ready: b"event: tools\n",
        changed: b"event: tools_changed",
    };
    listen(
        Source::H2(response.into_body()),
        markers,
        permit,
        connected,
        arrived,
    )
    .await
}

/// Where a subscription's bytes come from.
enum Source {
    Tcp(TcpStream),
    H2(h2::RecvStream),
}

impl Source {
    /// Appends what arrives next to `window`; 0 when the stream ended.
    async fn read_into(&mut self, window: &mut Vec<u8>) -> anyhow::Result<usize> {
        match self {
            Source::Tcp(socket) => {
                let mut chunk = [0u8; 8192];
                let n = socket.read(&mut chunk).await?;
                window.extend_from_slice(&chunk[..n]);
                Ok(n)
            }
            Source::H2(body) => match body.data().await {
                None => Ok(0),
                Some(data) => {
                    let data = data?;
                    let _ = body.flow_control().release_capacity(data.len());
                    window.extend_from_slice(&data);
                    Ok(data.len().max(1))
                }
            },
        }
    }
}

/// One subscription: first event → `connected`; `tools_changed` arrival time → `arrived`.
async fn subscriber(
    addr: &str,
    request: String,
    opening: Arc<Semaphore>,
    connected: mpsc::UnboundedSender<()>,
    arrived: mpsc::UnboundedSender<Instant>,
) -> anyhow::Result<()> {
    let permit = opening.acquire().await?;
    let mut socket = TcpStream::connect(addr).await?;
    socket.set_nodelay(true)?;
    socket.write_all(request.as_bytes()).await?;
    let markers = Markers {
        ready: b"event: tools\n",
        changed: b"event: tools_changed",
    };
    listen(Source::Tcp(socket), markers, permit, connected, arrived).await
}

/// One MCP session: `initialize`, then its notification stream on the same connection; the
/// priming event → `connected`; `list_changed` arrival time → `arrived`.
async fn mcp_subscriber(
    addr: &str,
    token: &str,
    opening: Arc<Semaphore>,
    connected: mpsc::UnboundedSender<()>,
    arrived: mpsc::UnboundedSender<Instant>,
) -> anyhow::Result<()> {
    let permit = opening.acquire().await?;
    let mut socket = TcpStream::connect(addr).await?;
    socket.set_nodelay(true)?;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sse_load","version":"1"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await?;
    let session = read_session_id(&mut socket).await?;
    let request = format!(
        "GET /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await?;
    let markers = Markers {
        ready: b"id: ",
        changed: b"notifications/tools/list_changed",
    };
    listen(Source::Tcp(socket), markers, permit, connected, arrived).await
}

/// What a subscription's stream shows when it is open, and when the change arrived.
struct Markers {
    /// The first event's start (the rest of it, up to a blank line, is read too).
    ready: &'static [u8],
    changed: &'static [u8],
}

/// Reads a subscription's stream: its first event → `connected` (and the opening permit goes
/// back), the change's arrival time → `arrived`; then stays connected until the process ends,
/// so nobody's disconnect disturbs the measurement.
async fn listen(
    mut source: Source,
    markers: Markers,
    permit: tokio::sync::SemaphorePermit<'_>,
    connected: mpsc::UnboundedSender<()>,
    arrived: mpsc::UnboundedSender<Instant>,
) -> anyhow::Result<()> {
    let mut window: Vec<u8> = Vec::with_capacity(8192);
    wait_for(&mut source, &mut window, markers.ready, b"\n\n").await?;
    drop(permit);
    let _ = connected.send(());
    wait_for(&mut source, &mut window, markers.changed, b"").await?;
    let _ = arrived.send(Instant::now());
    loop {
        window.clear();
        if source.read_into(&mut window).await? == 0 {
            return Ok(());
        }
    }
}

/// Reads one whole HTTP response (headers and a `content-length` body) and returns its
/// `mcp-session-id`.
async fn read_session_id(socket: &mut TcpStream) -> anyhow::Result<String> {
    let mut received: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = find(&received, b"\r\n\r\n") {
            break at + 4;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            bail!("the server closed the connection during initialize");
        }
        received.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&received[..head_end]).into_owned();
    // Header names are case-insensitive; the session id's value is not.
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .context("no content-length")?
        .parse()?;
    while received.len() < head_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            bail!("the server closed the connection during initialize");
        }
        received.extend_from_slice(&chunk[..n]);
    }
    header("mcp-session-id").with_context(|| format!("no session: {head}"))
}

/// Reads until `needle` (then `then`, when not empty) has been seen, keeping only a small tail.
async fn wait_for(
    source: &mut Source,
    window: &mut Vec<u8>,
    needle: &[u8],
    then: &[u8],
) -> anyhow::Result<()> {
    let mut found_at = None;
    loop {
        if found_at.is_none() {
            found_at = find(window, needle).map(|at| at + needle.len());
        }
        if let Some(at) = found_at {
            if then.is_empty() || find(&window[at..], then).is_some() {
                window.clear();
                return Ok(());
            }
        } else if window.len() > 64 {
            window.drain(..window.len() - 64);
        }
        if source.read_into(window).await? == 0 {
            bail!(
                "the server closed the stream: {}",
                String::from_utf8_lossy(window)
            );
        }
        if let Some(at) = found_at
            && window.len() > at + 64
        {
            window.drain(at..window.len() - 64);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn mint(secret: &str, claims: Value) -> anyhow::Result<String> {
    let mut claims: Map<String, Value> = claims.as_object().context("claims")?.clone();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    claims.insert("iat".into(), json!(now));
    claims.insert("exp".into(), json!(now + 3600));
    Ok(toolgate::auth::mint_hs256(secret, &claims)?)
}

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .context("no VmRSS in /proc/<pid>/status")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}
