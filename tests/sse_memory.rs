//! Streams whose readers stop reading cannot pin memory (issue 12, item 7): each stream's queue
//! is bounded in bytes, and past it the queue is dropped for one fresh snapshot later.
//!
//! Measured on the `toolgate` binary as a child process (its own RSS, from `/proc`): one token
//! opens 16 streams that never read (`?tools=*,x0` … `x15`, so 16 distinct manifests and 16
//! distinct events per change), then the catalog changes 18 times, each change rewriting a
//! manifest of about 2.4 MB. With a queue of 16 events per stream whatever their size, this
//! took the gateway from 80 MB to 775 MB. A reader that keeps reading meanwhile gets every
//! change promptly.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::gateway::Gateway;
use support::process::Process;
use support::sse::SseClient;
use tokio::io::AsyncWriteExt;

const TOOLS: usize = 600;
const DESCRIPTION_BYTES: usize = 4000;
const STALLED: usize = 16;
const CHANGES: usize = 18;

fn catalog(round: usize) -> Value {
    let mut filler: String = format!("round {round} ").repeat(DESCRIPTION_BYTES / 6);
    filler.truncate(DESCRIPTION_BYTES);
    let tools: Vec<Value> = (0..TOOLS)
        .map(|i| {
            json!({"source_id": "big", "operation_id": format!("op{i:04}"), "name": format!("op{i:04}"),
                   "method": "GET", "description": filler})
        })
        .collect();
    json!({
        "sources": [{"id": "big", "name": "big", "type": "manual"}],
        "tools": tools,
        "groups": [{"id": "g", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p", "name": "agents", "allowed_group_ids": ["g"],
                      "claim_matchers": [{"json_path": "roles", "operator": "equals", "value": "agent"}]}]
    })
}

/// Resident set size of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib * 1024
}

async fn put_catalog(client: &reqwest::Client, base: &str, round: usize) {
    let reply = client
        .put(format!("{base}/admin/catalog"))
        .bearer_auth(Gateway::admin())
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&catalog(round)).expect("json"))
        .send()
        .await
        .expect("reaches the gateway");
    let status = reply.status();
    let mut text = reply.text().await.unwrap_or_default();
    text.truncate(300);
    assert_eq!(status, 200, "{text}");
}

/// RSS (before, after) of a fresh gateway through [`CHANGES`] changes with `stalled` streams
/// that never read and one that does, and the slowest change to reach the reading one.
async fn run(stalled_count: usize) -> (u64, u64, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut gateway = Process::serve_with_env(
        dir.path(),
        &[],
        &[("TOOLGATE_BODY_LIMIT_BYTES", "16777216")],
    );
    let pid = gateway.child.id();
    let client = reqwest::Client::new();
    put_catalog(&client, &gateway.base, 0).await;

    let slow = Gateway::token(json!({"sub": "slow", "roles": ["agent"]}));
    let addr = gateway
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let mut stalled = Vec::new();
    for i in 0..stalled_count {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(16 * 1024).expect("rcvbuf");
        let mut stream = socket.connect(addr).await.expect("connect");
        stream
            .write_all(
                format!(
                    "GET /agents/tools/stream?tools=*,x{i} HTTP/1.1\r\nhost: x\r\n\
                     authorization: Bearer {slow}\r\n\r\n"
                )
                .as_bytes(),
            )
            .await
            .expect("request");
        stalled.push(stream);
    }
    let fast_token = Gateway::token(json!({"sub": "fast", "roles": ["agent"]}));
    let url = format!("{}/agents/tools/stream", gateway.base);
    let mut fast = SseClient::open_url(&client, &url, &fast_token, None)
        .await
        .expect("opens");
    assert_eq!(fast.event(Duration::from_secs(30)).await.event, "tools");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss(pid);

    let mut slowest = Duration::ZERO;
    for round in 1..=CHANGES {
        let started = Instant::now();
        put_catalog(&client, &gateway.base, round).await;
        let event = fast.event(Duration::from_secs(30)).await;
        assert_eq!(event.event, "tools_changed");
        assert_eq!(event.ids("updated").len(), TOOLS);
        slowest = slowest.max(started.elapsed());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss(pid);
    drop(stalled);
    gateway.signal("KILL");
    gateway.wait(Duration::from_secs(10));
    (before, after, slowest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_streams_cost_a_bounded_amount_of_memory() {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    // The same changes without stalled streams: what the catalog revisions, the store and the
    // allocator cost, which the stalled streams must not add much to.
    let (control_before, control_after, control_slowest) = run(0).await;
    let (before, after, slowest) = run(STALLED).await;
    let control = control_after.saturating_sub(control_before);
    let grown = after.saturating_sub(before);
    println!(
        "{CHANGES} changes of a {:.1} MB manifest: RSS +{:.0} MiB ({:.0} -> {:.0}) without \
         stalled streams, +{:.0} MiB ({:.0} -> {:.0}) with {STALLED}; slowest change to reach \
         a reading stream {control_slowest:?} / {slowest:?}",
        (TOOLS * DESCRIPTION_BYTES) as f64 / 1e6,
        mib(control),
        mib(control_before),
        mib(control_after),
        mib(grown),
        mib(before),
        mib(after),
    );
    // Each stalled stream holds at most its 4 MiB queue and the first event it could not
    // send (a 2.4 MB snapshot): about 100 MiB for 16. A queue of 16 events whatever their
    // size held ~700 MiB more here.
    assert!(
        grown < control + 150 * 1024 * 1024,
        "stalled streams added {:.0} MiB",
        mib(grown.saturating_sub(control))
    );
}
