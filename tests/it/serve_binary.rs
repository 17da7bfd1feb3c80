//! `toolgate serve` as users run it: a real process, killed and restarted.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::process::Process;
use support::sse::{Next, SseClient};

async fn send(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let mut request = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(Gateway::admin());
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let bytes = response.bytes().await.expect("body");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_killed_gateway_restarts_with_everything_it_committed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Process::serve(dir.path(), &["--seed", "config/demo-catalog.yaml"]);
    let (status, _) = send(
        &first.base,
        reqwest::Method::POST,
        "/admin/tools/billing:list_invoices/disable",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, catalog) = send(&first.base, reqwest::Method::GET, "/admin/catalog", None).await;
    let (_, audit) = send(&first.base, reqwest::Method::GET, "/admin/audit", None).await;
    assert_eq!(audit["count"], json!(2), "seed + disable");
    first.signal("KILL");
    drop(first);

    // The seed is not applied again: the store is not empty.
    let second = Process::serve(dir.path(), &["--seed", "config/demo-catalog.yaml"]);
    let (_, again) = send(&second.base, reqwest::Method::GET, "/admin/catalog", None).await;
    assert_eq!(again, catalog);
    let (_, audit_again) = send(&second.base, reqwest::Method::GET, "/admin/audit", None).await;
    assert_eq!(audit_again, audit);
}

/// A `--seed` left unapplied because the data dir already holds a catalog is said, with where
/// and at which revision: otherwise a walk-through on a used data dir answers otherwise than
/// it says, and nothing tells why.
#[test]
fn a_seed_not_loaded_into_a_store_in_use_is_said() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let log = dir.path().join("stderr.log");
    for _ in 0..2 {
        let mut command = Process::serve_command(&data, &["--seed", "config/demo-catalog.yaml"]);
        command.stderr(std::fs::File::create(&log).expect("log"));
        let mut process = Process::spawn(command);
        process.signal("TERM");
        assert_eq!(process.wait(Duration::from_secs(10)), Some(true));
    }
    let text = std::fs::read_to_string(&log).expect("the second start's log");
    assert!(
        text.contains("WARN")
            && text.contains("the seed catalog was not loaded")
            && text.contains(&format!("the data dir {}", data.display()))
            && text.contains("revision=1"),
        "{text}"
    );
}

#[tokio::test]
async fn sigterm_shuts_down_gracefully() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut process = Process::serve(dir.path(), &[]);
    let (status, _) = send(&process.base, reqwest::Method::GET, "/admin/catalog", None).await;
    assert_eq!(status, StatusCode::OK);
    process.signal("TERM");
    assert_eq!(
        process.wait(Duration::from_secs(10)),
        Some(true),
        "exits 0 after SIGTERM"
    );
}

/// Idle keep-alive connections (an HTTP/1 client's pool, an HTTP/2 peer that never answers the
/// GOAWAY's ping) do not hold the shutdown: it took their whole 2 s close grace before.
#[tokio::test]
async fn sigterm_is_quick_with_idle_keep_alive_connections() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut process = Process::serve(dir.path(), &[]);
    let address = process.base.trim_start_matches("http://").to_owned();
    let mut silent_h2 = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    silent_h2
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .expect("preface and settings");
    let pooled = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let answer = pooled
        .get(format!("{}/healthz", process.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(answer.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = std::time::Instant::now();
    process.signal("TERM");
    assert_eq!(process.wait(Duration::from_secs(10)), Some(true));
    let took = asked.elapsed();
    assert!(took < Duration::from_millis(1_000), "SIGTERM took {took:?}");
    drop(silent_h2);
}

#[tokio::test]
async fn sigterm_ends_open_streams_and_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut process = Process::serve(dir.path(), &["--seed", "config/demo-catalog.yaml"]);
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let token = Gateway::token(json!({"sub": "dev-agent", "roles": ["agent"]}));
    let url = format!("{}/agents/tools/stream", process.base);
    let mut stream = SseClient::open_url(&client, &url, &token, None)
        .await
        .unwrap_or_else(|reply| panic!("stream refused: {}", reply.status));
    assert_eq!(stream.event(Duration::from_secs(5)).await.event, "tools");
    process.signal("TERM");
    // The stream ends (clients reconnect elsewhere) instead of holding the shutdown open.
    let next = stream.next(Duration::from_secs(10)).await;
    assert!(matches!(next, Next::End), "got {next:?}");
    assert_eq!(
        process.wait(Duration::from_secs(10)),
        Some(true),
        "exits 0 after SIGTERM with a stream open"
    );
}

#[tokio::test]
async fn the_demo_seed_serves_the_dev_agent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let process = Process::serve(dir.path(), &["--seed", "config/demo-catalog.yaml"]);
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let token = Gateway::token(json!({"sub": "dev-agent", "roles": ["agent"]}));
    let body: Value = client
        .get(format!("{}/agents/tools", process.base))
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
        .json_or_panic()
        .await;
    let ids: Vec<&str> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| e["tool_id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        [
            "billing:list_invoices",
            "crm:get_customer",
            "crm:search_customers"
        ]
    );
}

trait JsonOrPanic {
    async fn json_or_panic(self) -> Value;
}

impl JsonOrPanic for reqwest::Response {
    async fn json_or_panic(self) -> Value {
        let bytes = self.bytes().await.expect("body");
        serde_json::from_slice(&bytes).expect("JSON body")
    }
}

/// Starts `toolgate serve --data-dir DATA_DIR [extra…]` expecting it to refuse to start: asserts
/// a failing exit within 30 s and returns what it wrote on stderr.
fn refused_start(data_dir: &std::path::Path, extra: &[&str]) -> String {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("stderr.log");
    let mut command = Process::serve_command(data_dir, extra);
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"));
    let mut child = command.spawn().expect("the binary starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "toolgate started instead of refusing; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&log).expect("read the log");
    assert!(!status.success(), "exits non-zero; log:\n{stderr}");
    stderr
}

#[test]
fn a_zero_byte_or_garbage_store_file_stops_the_start_even_with_a_seed() {
    for (name, contents) in [
        ("zero bytes", Vec::new()),
        ("garbage", b"garbage".repeat(500)),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join(toolgate::store::embedded::FILE_NAME);
        std::fs::write(&file, &contents).expect("write the store file");
        let stderr = refused_start(dir.path(), &["--seed", "config/demo-catalog.yaml"]);
        assert!(
            stderr.contains(&file.display().to_string()),
            "{name}: the message names the file:\n{stderr}"
        );
        assert!(
            stderr.contains("is not a valid toolgate store") && stderr.contains("backup"),
            "{name}: the message says what is wrong and what to do:\n{stderr}"
        );
        assert_eq!(
            std::fs::read(&file).expect("read"),
            contents,
            "{name}: the file is left as it was"
        );
    }
}

#[tokio::test]
async fn a_missing_data_dir_is_created_and_seeded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("not").join("yet");
    let process = Process::serve(&data_dir, &["--seed", "config/demo-catalog.yaml"]);
    let (status, audit) = send(&process.base, reqwest::Method::GET, "/admin/audit", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(audit["count"], json!(1), "the seed");
    assert!(
        data_dir
            .join(toolgate::store::embedded::FILE_NAME)
            .is_file()
    );
}

#[tokio::test]
async fn a_start_that_cannot_listen_stores_nothing_so_a_corrected_seed_still_loads() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("addr").port();
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("stderr.log");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path())
        .args(["--seed", "config/demo-catalog.yaml"])
        .env_clear()
        .env("TOOLGATE_JWT_SECRET", support::gateway::SECRET)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .status()
        .expect("the binary runs");
    let stderr = std::fs::read_to_string(&log).expect("read the log");
    assert!(!status.success(), "the port is taken; log:\n{stderr}");
    assert!(stderr.contains("cannot listen"), "{stderr}");
    assert!(
        !dir.path()
            .join(toolgate::store::embedded::FILE_NAME)
            .exists(),
        "nothing was stored by the failed start"
    );
    drop(taken);
    // The corrected start (another seed) loads its seed: the store was still empty.
    let seed = dir.path().join("seed.json");
    std::fs::write(
        &seed,
        json!({"sources": [{"id": "corrected", "name": "corrected", "type": "manual"}]})
            .to_string(),
    )
    .expect("write the seed");
    let process = Process::serve(dir.path(), &["--seed", seed.to_str().expect("utf-8 path")]);
    let (status, sources) = send(&process.base, reqwest::Method::GET, "/admin/sources", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sources["data"][0]["id"], json!("corrected"));
}
