//! The newcomer's path of the README and docs/clients.md, with the binary as its user runs it:
//! `toolgate serve --seed config/demo-catalog.yaml`, `toolgate token`, `toolgate demo-upstream`,
//! the demo service imported as an `openapi` source, and a tool called through `/mcp` by an
//! official MCP SDK client that nobody here wrote.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::gateway::SECRET;
use crate::support::mcp_driver::{Driver, Sdk};
use crate::support::process::Process;

/// `toolgate demo-upstream --listen 127.0.0.1:0`, killed when dropped.
struct DemoUpstream {
    child: Child,
    base: String,
}

impl DemoUpstream {
    fn start() -> DemoUpstream {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["demo-upstream", "--listen", "127.0.0.1:0"])
            .env_clear()
            .stdout(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the listening line");
        let base = line
            .trim()
            .strip_prefix("demo upstream listening on ")
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        DemoUpstream { child, base }
    }
}

impl Drop for DemoUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolgate token ARGS…` with the gateway's secret, as the README mints tokens.
fn token(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("token")
        .args(args)
        .env_clear()
        .env("TOOLGATE_JWT_SECRET", SECRET)
        .output()
        .expect("toolgate token runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

async fn json_of(response: reqwest::Response) -> Value {
    let body = response.bytes().await.expect("a body");
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"))
}

fn blocking<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_upstream_answers_and_refuses_what_it_must() {
    let demo = DemoUpstream::start();
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("{}{path}", demo.base)).send();
    let document = json_of(get("/openapi.json").await.expect("up")).await;
    assert_eq!(document["openapi"], "3.1.0");
    let sum = json_of(get("/add?a=2&b=3").await.expect("up")).await;
    assert_eq!(sum, json!({"sum": 5}));
    let echoed = json_of(get("/echo?text=h%C3%A9").await.expect("up")).await;
    assert_eq!(echoed, json!({"text": "hé"}));
    let time = json_of(get("/time").await.expect("up")).await;
    let utc = time["utc"].as_str().expect("a string");
    assert!(chrono::DateTime::parse_from_rfc3339(utc).is_ok(), "{utc}");
    for (path, field) in [
        (format!("/add?a={}&b=1", i64::MAX), "a + b"),
        ("/add?a=x&b=1".to_owned(), "a, b"),
        ("/echo".to_owned(), "text"),
        (format!("/echo?text={}", "x".repeat(1_001)), "text"),
    ] {
        let answer = get(&path).await.expect("up");
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{path}");
        let problem = json_of(answer).await;
        assert!(
            problem["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with(field)),
            "{path}: {problem}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_imports_the_demo_service_and_calls_it_through_the_gateway() {
    let demo = DemoUpstream::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = Process::serve(
        &dir.path().join("data"),
        &["--seed", "config/demo-catalog.yaml"],
    );
    let admin = token(&["--sub", "alice", "--admin"]);
    let agent = token(&["--sub", "agent-7", "--role", "agent"]);
    let client = reqwest::Client::new();

    let created = client
        .post(format!("{}/admin/sources", gateway.base))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body(
            json!({"id": "demo", "name": "demo service", "type": "openapi",
                      "config": {"url": format!("{}/openapi.json", demo.base)}})
            .to_string(),
        )
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(created.status(), StatusCode::CREATED);

    let manifest = client
        .get(format!("{}/agents/tools", gateway.base))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("the gateway answers");
    let manifest = json_of(manifest).await;
    let ids: Vec<&str> = manifest["data"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["tool_id"].as_str())
        .filter(|id| id.starts_with("demo:"))
        .collect();
    assert_eq!(
        ids,
        ["demo:add", "demo:echo", "demo:get_time"],
        "{manifest}"
    );

    for sdk in [Sdk::Python, Sdk::TypeScript2] {
        let url = format!("{}/mcp", gateway.base);
        let mut driver = blocking(|| Driver::start(sdk, &url, &agent, &[]));
        assert_eq!(driver.ready["ready"], true, "{sdk:?}: {}", driver.ready);
        let listed = blocking(|| driver.list());
        let add = listed
            .iter()
            .find(|tool| tool["title"] == "Add two integers")
            .unwrap_or_else(|| panic!("{sdk:?}: no add tool in {listed:?}"));
        let name = add["name"].as_str().expect("a name").to_owned();
        let answer = blocking(|| driver.call(&name, json!({"a": 2, "b": 3})));
        assert_eq!(answer["result"]["isError"], false, "{sdk:?}: {answer}");
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"sum": 5}),
            "{sdk:?}: {answer}"
        );
        // The approved schema is checked before anything goes upstream.
        let refused = blocking(|| driver.call(&name, json!({"a": "two", "b": 3})));
        assert_eq!(refused["error"]["code"], -32602, "{sdk:?}: {refused}");
        blocking(|| driver.close());
    }
}
