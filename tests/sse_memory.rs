//! Streams whose readers stop reading cannot pin memory (issue 12, item 7; issue 24, item 8):
//! each stream's queue is bounded in bytes, all streams' queues together too, and past either
//! bound a queue is dropped for one fresh snapshot later. An event takes exactly its length in
//! memory (a buffer that grew by doubling once pinned twice what the queues counted).
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
/// What one run measured.
struct Run {
    before: u64,
    after: u64,
    slowest: Duration,
    /// `toolgate_stream_bytes{state="queued"}` and `…{state="writing"}` after the changes.
    queued: f64,
    writing: f64,
    /// `toolgate_stream_budget_coalesced_total` after the changes.
    coalesced: f64,
}

/// The value of the metric line that starts with `series` (name and labels).
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

async fn run(stalled_count: usize, total_bytes: Option<&str>) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut env = vec![("TOOLGATE_BODY_LIMIT_BYTES", "16777216")];
    if let Some(total) = total_bytes {
        env.push(("TOOLGATE_CACHE_STREAM_TOTAL_BYTES", total));
    }
    let mut gateway = Process::serve_with_env(dir.path(), &[], &env);
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
        if total_bytes.is_some() && event.event == "tools" {
            // Past the shared budget (the stalled streams' unsent snapshots alone fill it)
            // every stream is coalesced to a snapshot: the whole manifest, still current.
            assert_eq!(event.json()["count"], TOOLS, "{round}");
        } else {
            assert_eq!(event.event, "tools_changed");
            assert_eq!(event.ids("updated").len(), TOOLS);
        }
        slowest = slowest.max(started.elapsed());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss(pid);
    let metrics = client
        .get(format!("{}/metrics", gateway.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    drop(stalled);
    gateway.signal("KILL");
    gateway.wait(Duration::from_secs(10));
    Run {
        before,
        after,
        slowest,
        queued: metric(&metrics, "toolgate_stream_bytes{state=\"queued\"}"),
        writing: metric(&metrics, "toolgate_stream_bytes{state=\"writing\"}"),
        coalesced: metric(&metrics, "toolgate_stream_budget_coalesced_total"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_streams_cost_a_bounded_amount_of_memory() {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    // The same changes without stalled streams: what the catalog revisions, the store and the
    // allocator cost, which the stalled streams must not add much to.
    let control = run(0, None).await;
    let stalled = run(STALLED, None).await;
    // The same with all streams' queues bounded at 16 MiB together.
    let bounded = run(STALLED, Some("16777216")).await;
    let growth = |run: &Run| run.after.saturating_sub(run.before);
    let line = |name: &str, run: &Run| {
        println!(
            "{name}: RSS +{:.0} MiB ({:.0} -> {:.0}); streams hold {:.1} MiB queued, {:.1} MiB \
             being written; {} coalesced to fit the budget; slowest change to a reading stream \
             {:?}",
            mib(growth(run)),
            mib(run.before),
            mib(run.after),
            run.queued / 1048576.0,
            run.writing / 1048576.0,
            run.coalesced,
            run.slowest,
        );
    };
    println!(
        "{CHANGES} changes of a {:.1} MB manifest, {STALLED} stalled streams:",
        (TOOLS * DESCRIPTION_BYTES) as f64 / 1e6
    );
    line("no stalled streams", &control);
    line("stalled, 64 MiB for all streams (default)", &stalled);
    line("stalled, 16 MiB for all streams", &bounded);
    // Each stalled stream holds at most the first event it could not send (a 2.4 MB snapshot,
    // counted as being written) and what its queue and the shared budget leave room for.
    assert!(
        growth(&stalled) < growth(&control) + 150 * 1024 * 1024,
        "stalled streams added {:.0} MiB",
        mib(growth(&stalled).saturating_sub(growth(&control)))
    );
    for run in [&stalled, &bounded] {
        // Each stalled stream was handed far more than a socket buffer takes (a snapshot and a
        // change of 2.4 MB each): what its writer still holds is counted.
        assert!(
            run.writing > 0.0,
            "the unsent events are counted: {}",
            run.writing
        );
    }
    assert!(
        bounded.queued + bounded.writing <= 16.0 * 1048576.0 + bounded.writing,
        "queues beyond the budget"
    );
    assert!(
        bounded.queued <= (16.0 * 1048576.0 - bounded.writing).max(0.0),
        "nothing is queued past what the budget leaves: {} queued, {} being written",
        bounded.queued,
        bounded.writing
    );
    // Under the default budget the stalled streams' queues (a 2.4 MB change each) fill it, and
    // it makes room by coalescing them. Under 16 MiB the unsent snapshots alone fill it: no
    // queue ever holds a quarter of it to free, so each change lags its own stream instead
    // (nothing queued, checked above).
    assert!(stalled.coalesced > 0.0, "the budget made room");
}
