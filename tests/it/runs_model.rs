//! The run state machine against a small model, through the real server (docs/runs.md section
//! 2): random machines (up to 8 states and 20 tools, each with a random `available_in_states`
//! and `next_state`, some failing upstream) and random call sequences, each call through a
//! 2025-11-25 session or a 2026-07-28 request. Before every call the REST manifest and the
//! 2025 session's list are the model's tools of the current state, the 2026 list is every
//! tool; every call is forwarded or refused as the model says, leaves the state the model
//! says, and nothing refused reaches the recording upstream.

use crate::support;

use std::sync::atomic::Ordering;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::mcp_rpc::{call, envelope, initialize, modern, post as mcp_post, request};

use super::runs::{Recorded, agent, manifest, recording_upstream, run, settings};

/// One tool of a machine: the states it may be called in (`None`: every state; indexes into
/// the machine's states, `usize::MAX` standing for `*`), where a success leads, whether its
/// upstream fails.
#[derive(Debug, Clone)]
struct ModelTool {
    available: Option<Vec<usize>>,
    next: Option<usize>,
    fails: bool,
}

#[derive(Debug, Clone)]
struct Machine {
    tools: Vec<ModelTool>,
    /// (tool, through the 2026-07-28 revision)
    calls: Vec<(usize, bool)>,
}

const ANY: usize = usize::MAX;

fn machine() -> impl Strategy<Value = Machine> {
    (1usize..=8, 1usize..=20).prop_flat_map(|(states, tools)| {
        let state = 0..states;
        let available = prop::option::weighted(
            0.8,
            prop::collection::vec(prop_oneof![9 => state.clone(), 1 => Just(ANY)], 0..=3),
        );
        let tool = (
            available,
            prop::option::weighted(0.6, state.clone()),
            prop::bool::weighted(0.2),
        )
            .prop_map(|(available, next, fails)| ModelTool {
                available,
                next,
                fails,
            });
        (
            prop::collection::vec(tool, tools),
            prop::collection::vec((0..tools, any::<bool>()), 1..=24),
        )
            .prop_map(|(tools, calls)| Machine { tools, calls })
    })
}

fn state_name(state: usize) -> String {
    format!("s{state}")
}

fn tool_name(machine_tools: &[ModelTool], tool: usize) -> String {
    if machine_tools[tool].fails {
        format!("fail{tool}")
    } else {
        format!("t{tool}")
    }
}

impl ModelTool {
    fn available_in(&self, state: usize) -> bool {
        self.available
            .as_ref()
            .is_none_or(|states| states.iter().any(|s| *s == state || *s == ANY))
    }
}

/// The catalog of `machine` on the upstream at `url`.
fn catalog(machine: &Machine, url: &str) -> Value {
    let tools: Vec<Value> = (0..machine.tools.len())
        .map(|i| {
            let tool = &machine.tools[i];
            let name = tool_name(&machine.tools, i);
            let available = tool.available.as_ref().map(|states| {
                states
                    .iter()
                    .map(|s| {
                        if *s == ANY {
                            "*".to_owned()
                        } else {
                            state_name(*s)
                        }
                    })
                    .collect::<Vec<_>>()
            });
            json!({"source_id": "api", "operation_id": name, "name": name, "method": "POST",
                   "path": format!("/op/{name}"), "available_in_states": available,
                   "next_state": tool.next.map(state_name),
                   "input_schema": {"type": "object"}})
        })
        .collect();
    let mut paths = serde_json::Map::new();
    for i in 0..machine.tools.len() {
        let name = tool_name(&machine.tools, i);
        paths.insert(
            format!("/op/{name}"),
            json!({"post": {"operationId": name, "responses": {"200": {"description": "ok"}}}}),
        );
    }
    let spec = json!({"openapi": "3.1.0", "info": {"title": "api", "version": "1"},
                      "servers": [{"url": url}], "paths": paths});
    json!({
        "sources": [{"id": "api", "name": "api", "type": "openapi", "config": {"spec": spec}}],
        "tools": tools,
        "groups": [{"id": "g-all", "name": "all", "selectors": [{"source_pattern": "api"}]}],
        "policies": [{"id": "p-agents", "name": "agents", "allowed_group_ids": ["g-all"],
                      "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                          "value": "agent"}]}]
    })
}

async fn modern_list(gateway: &Gateway, token: &str) -> Vec<String> {
    let reply = mcp_post(
        gateway,
        Some(token),
        &modern("tools/list", None),
        request(1, "tools/list", envelope(json!({}))),
    )
    .await
    .expect(StatusCode::OK);
    names(&reply.json()["result"]["tools"])
}

fn names(tools: &Value) -> Vec<String> {
    let mut names: Vec<String> = tools
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn check(condition: bool, what: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if condition {
        Ok(())
    } else {
        Err(TestCaseError::fail(what()))
    }
}

/// Plays `machine` against the gateway; `Err` at the first disagreement with the model.
async fn play(
    gateway: &Gateway,
    recorded: &Recorded,
    url: &str,
    machine: &Machine,
) -> Result<(), TestCaseError> {
    gateway.put_catalog(catalog(machine, url)).await;
    let (_, token) = run(gateway, &agent("model"), json!({"state": state_name(0)})).await;
    let (session, _) = initialize(gateway, &token, "2025-11-25").await;
    let every: Vec<String> = {
        let mut all: Vec<String> = (0..machine.tools.len())
            .map(|i| format!("api.{}", tool_name(&machine.tools, i)))
            .collect();
        all.sort();
        all
    };
    let mut state = 0;
    let sent_before = recorded.total.load(Ordering::SeqCst);
    let mut forwarded = 0;
    for (step, &(tool, modern_era)) in machine.calls.iter().enumerate() {
        let mut current: Vec<String> = (0..machine.tools.len())
            .filter(|i| machine.tools[*i].available_in(state))
            .map(|i| format!("api:{}", tool_name(&machine.tools, i)))
            .collect();
        current.sort();
        let listed = manifest(gateway, &token).await;
        check(listed == current, || {
            format!("step {step}: REST {listed:?}, model {current:?}")
        })?;
        let legacy = names(
            &call(gateway, &token, &session, "tools/list", json!({})).await["result"]["tools"],
        );
        let legacy_model: Vec<String> = current.iter().map(|id| id.replace(':', ".")).collect();
        check(legacy == legacy_model, || {
            format!("step {step}: 2025 list {legacy:?}, model {legacy_model:?}")
        })?;
        let modern_listed = modern_list(gateway, &token).await;
        check(modern_listed == every, || {
            format!("step {step}: 2026 list {modern_listed:?}")
        })?;

        let name = format!("api.{}", tool_name(&machine.tools, tool));
        let params = json!({"name": name, "arguments": {}});
        let answer = if modern_era {
            mcp_post(
                gateway,
                Some(&token),
                &modern("tools/call", Some(&name)),
                request(2, "tools/call", envelope(params)),
            )
            .await
            .expect(StatusCode::OK)
            .json()
        } else {
            call(gateway, &token, &session, "tools/call", params).await
        };
        let model = &machine.tools[tool];
        let result = &answer["result"];
        if model.available_in(state) {
            forwarded += 1;
            if !model.fails
                && let Some(next) = model.next
            {
                state = next;
            }
            let said = result["_meta"]["io.toolgate/run"]["state"].as_str();
            check(said == Some(state_name(state).as_str()), || {
                format!("step {step}: forwarded {name}, state {said:?}, model s{state}: {answer}")
            })?;
            check(result["isError"] == model.fails, || {
                format!(
                    "step {step}: {name} isError {}: {answer}",
                    result["isError"]
                )
            })?;
        } else {
            let reason = result["_meta"]["io.toolgate/refusal"]["reason"].as_str();
            check(reason == Some("run_state"), || {
                format!("step {step}: {name} should be refused in s{state}: {answer}")
            })?;
        }
        let sent = recorded.total.load(Ordering::SeqCst) - sent_before;
        check(sent == forwarded, || {
            format!("step {step}: the upstream received {sent}, the model forwarded {forwarded}")
        })?;
    }
    Ok(())
}

#[test]
fn every_decision_state_and_list_of_a_run_equals_the_models() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, recorded, url) = runtime.block_on(async {
        let mut settings = settings(dir.path());
        settings.rate_limits = toolgate::service::limits::RateLimits::UNLIMITED;
        let gateway = Gateway::start_with(settings).await;
        let (url, recorded) = recording_upstream().await;
        (gateway, recorded, url)
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&machine(), |machine| {
            runtime.block_on(play(&gateway, &recorded, &url, &machine))
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}
