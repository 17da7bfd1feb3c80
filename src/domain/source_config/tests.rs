use serde_json::json;

use super::*;

fn source(kind: &str, config: Value) -> Source {
    serde_json::from_value(json!({"id": "s", "name": "s", "type": kind, "config": config}))
        .expect("a source")
}

fn fields(source: &Source) -> Vec<String> {
    check(source).into_iter().map(|e| e.field).collect()
}

#[test]
fn empty_config_is_valid_for_every_type() {
    for kind in ["manual", "openapi", "mcp", "tool-service"] {
        assert!(check(&source(kind, json!({}))).is_empty(), "{kind}");
    }
}

#[test]
fn openapi_needs_exactly_one_of_spec_and_url() {
    assert_eq!(fields(&source("openapi", json!({"headers": {}}))), ["spec"]);
    assert_eq!(
        fields(&source(
            "openapi",
            json!({"spec": {}, "url": "https://x.example/o.json"})
        )),
        ["spec"]
    );
    assert!(fields(&source("openapi", json!({"spec": "openapi: 3.0.0"}))).is_empty());
    assert_eq!(
        fields(&source(
            "openapi",
            json!({"url": "ftp://x", "refresh_interval_secs": 1})
        )),
        ["refresh_interval_secs", "url"]
    );
}

#[test]
fn an_openapi_base_url_must_be_http_and_is_read_back() {
    let with = |base: Value| {
        source(
            "openapi",
            json!({"spec": "openapi: 3.0.0", "base_url": base}),
        )
    };
    assert!(fields(&with(json!("https://api.example/v1"))).is_empty());
    assert_eq!(
        base_url(&with(json!("https://api.example/v1"))),
        Some("https://api.example/v1")
    );
    assert_eq!(fields(&with(json!("/v1"))), ["base_url"]);
    assert_eq!(fields(&with(json!(5))), ["base_url"]);
    assert_eq!(
        fields(&source(
            "mcp",
            json!({"url": "https://m.example/mcp", "base_url": "https://x.example"})
        )),
        ["base_url"],
        "only openapi sources have one"
    );
}

#[test]
fn mcp_needs_a_url_and_rejects_unknown_keys() {
    assert_eq!(
        fields(&source("mcp", json!({"headers": {"A": "b"}}))),
        ["url"]
    );
    assert_eq!(
        fields(&source("mcp", json!({"url": "http://h/mcp", "spec": {}}))),
        ["spec"]
    );
    assert_eq!(
        fields(&source(
            "mcp",
            json!({"url": "http://h/mcp", "headers": {"A": 1}})
        )),
        ["headers.A"]
    );
}

#[test]
fn tool_service_descriptor_follows_seed_001() {
    let ok = source(
        "tool-service",
        json!({"id": "custom-rag", "request-queue": "q1", "response-queue": "q2",
               "config-params": [{"name": "collection", "required": true}, {"name": "style"}]}),
    );
    let descriptor = service_descriptor(&ok.config).expect("valid");
    assert_eq!(
        descriptor.config_params,
        [
            ConfigParam {
                name: "collection".into(),
                required: true
            },
            ConfigParam {
                name: "style".into(),
                required: false
            }
        ]
    );
    let bad = source(
        "tool-service",
        json!({"request-queue": "q1", "queue": "x",
               "config-params": [{"name": "a"}, {"name": "a", "required": "yes"}]}),
    );
    assert_eq!(
        fields(&bad),
        [
            "queue",
            "response-queue",
            "config-params[1].required",
            "config-params[1].name"
        ]
    );
}
