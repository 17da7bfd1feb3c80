//! A multi-step run driven end to end by the official MCP SDK clients (tests/mcp_clients/):
//! the Python SDK 2.x on a 2025 session and at 2026-07-28, the TypeScript SDK v1 on a 2025
//! session and v2 at 2026-07-28. Each lists what its revision shows of the run, is refused a
//! tool of another state with a tool error that says what to call first, moves the run with a
//! successful call (a 2025 session is told `tools/list_changed`), and never reaches the
//! upstream with a refused call.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::mcp_driver::{Driver, Sdk};

use super::runs::{agent, gateway_in, run, status};

fn blocking<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

fn names(tools: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = tools
        .iter()
        .map(|tool| tool["name"].as_str().expect("name").to_owned())
        .collect();
    names.sort();
    names
}

async fn multi_step_run(sdk: Sdk, env: &[(&str, &str)], every_state: bool) {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, recorded) = gateway_in(dir.path()).await;
    let (id, token) = run(&gateway, &agent("sdk"), json!({"budget": {"calls": 10}})).await;
    let url = format!("{}/mcp", gateway.base);
    let mut driver = blocking(|| Driver::start(sdk, &url, &token, env));
    assert_eq!(driver.ready["ready"], true, "{sdk:?}: {}", driver.ready);

    let listed = names(&blocking(|| driver.list()));
    if every_state {
        assert_eq!(
            listed.len(),
            6,
            "{sdk:?}: every state at 2026-07-28: {listed:?}"
        );
    } else {
        assert_eq!(
            listed,
            ["api.free", "api.spawn_agents", "api.start"],
            "{sdk:?}"
        );
    }
    // Another state's tool: a tool error the model can act on, nothing sent.
    let refused = blocking(|| driver.call("api.edit", json!({})));
    if every_state {
        assert_eq!(refused["result"]["isError"], true, "{sdk:?}: {refused}");
        let text = refused["result"]["content"][0]["text"]
            .as_str()
            .expect("text");
        assert!(
            text.contains("call one of [api:start] first") && text.contains("run_state"),
            "{sdk:?}: {text}"
        );
    } else {
        // Not listed in this state: the SDK may refuse it itself, or the server's tool error.
        assert!(
            refused["result"]["isError"] == true || refused.get("error").is_some(),
            "{sdk:?}: {refused}"
        );
    }
    assert!(recorded.names().is_empty(), "{sdk:?}");

    blocking(|| driver.changes());
    let started = blocking(|| driver.call("api.start", json!({})));
    assert_eq!(started["result"]["isError"], false, "{sdk:?}: {started}");
    if !every_state {
        let told = blocking(|| driver.wait_changed(Duration::from_secs(10)));
        assert!(
            told >= 1,
            "{sdk:?}: a 2025 session is told of the transition"
        );
        assert_eq!(
            names(&blocking(|| driver.list())),
            ["api.edit", "api.fail", "api.free", "api.spawn_agents"],
            "{sdk:?}"
        );
    }
    let edited = blocking(|| driver.call("api.edit", json!({})));
    assert_eq!(edited["result"]["isError"], false, "{sdk:?}: {edited}");
    let published = blocking(|| driver.call("api.publish", json!({})));
    assert_eq!(
        published["result"]["isError"], false,
        "{sdk:?}: {published}"
    );
    blocking(|| driver.close());

    let described = status(&gateway, &token, &id).await;
    assert_eq!(described["state"], "done", "{sdk:?}");
    assert_eq!(described["budget"]["calls"], 7, "{sdk:?}");
    assert_eq!(recorded.names(), ["start", "edit", "publish"], "{sdk:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_runs_a_multi_step_run_on_a_2025_session() {
    multi_step_run(Sdk::Python, &[("MCP_NEGOTIATION", "legacy")], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_runs_a_multi_step_run_at_2026_07_28() {
    multi_step_run(Sdk::Python, &[("MCP_PROTOCOL_VERSION", "2026-07-28")], true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v1_runs_a_multi_step_run() {
    multi_step_run(Sdk::TypeScript, &[], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_v2_runs_a_multi_step_run_at_2026_07_28() {
    multi_step_run(
        Sdk::TypeScript2,
        &[("MCP_PROTOCOL_VERSION", "2026-07-28")],
        true,
    )
    .await;
}
