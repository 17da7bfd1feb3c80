//! OTLP export end to end: the real binary, configured only by the standard `OTEL_*`
//! variables, sends its spans and metrics to an OTLP/HTTP receiver inside the test. One request
//! that carries a W3C `traceparent` arrives as a server span whose parent is the caller's span,
//! with token verification and resolution (and the Redis lookup under it) as children; an admin
//! write has its store commit as a child.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use reqwest::StatusCode;
use serde_json::json;
use support::gateway::Gateway;
use support::logged::LoggedProcess;
use support::redis::RedisServer;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// What the receiver was sent.
#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

type Shared = Arc<Mutex<Received>>;

/// An OTLP/HTTP (protobuf) receiver on a random port.
async fn receiver() -> (String, Shared) {
    async fn traces(State(received): State<Shared>, body: Bytes) -> StatusCode {
        match ExportTraceServiceRequest::decode(body) {
            Ok(request) => {
                received.lock().expect("lock").traces.push(request);
                StatusCode::OK
            }
            Err(_) => StatusCode::BAD_REQUEST,
        }
    }
    async fn metrics(State(received): State<Shared>, body: Bytes) -> StatusCode {
        match ExportMetricsServiceRequest::decode(body) {
            Ok(request) => {
                received.lock().expect("lock").metrics.push(request);
                StatusCode::OK
            }
            Err(_) => StatusCode::BAD_REQUEST,
        }
    }
    let received = Shared::default();
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(Arc::clone(&received));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, received)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &Option<AnyValue>) -> Option<String> {
    match value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(text) => Some(text.clone()),
        any_value::Value::IntValue(number) => Some(number.to_string()),
        any_value::Value::BoolValue(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn attributes(list: &[KeyValue]) -> HashMap<String, String> {
    list.iter()
        .filter_map(|kv| Some((kv.key.clone(), text(&kv.value)?)))
        .collect()
}

/// The one span named `name`.
fn span<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|span| span.name == name).collect();
    assert_eq!(
        found.len(),
        1,
        "one span named {name:?} among {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

/// The one child of `parent` named `name`.
fn child<'a>(spans: &'a [Span], parent: &Span, name: &str) -> &'a Span {
    let found: Vec<&Span> = spans
        .iter()
        .filter(|span| span.parent_span_id == parent.span_id && span.name == name)
        .collect();
    assert_eq!(found.len(), 1, "one child {name:?} of {:?}", parent.name);
    found[0]
}

fn children<'a>(spans: &'a [Span], parent: &Span) -> Vec<&'a str> {
    let mut names: Vec<&str> = spans
        .iter()
        .filter(|span| span.parent_span_id == parent.span_id)
        .map(|span| span.name.as_str())
        .collect();
    names.sort();
    names
}

fn catalog() -> serde_json::Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices", "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}
        ],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_arrives_as_a_span_tree_under_the_callers_traceparent() {
    let (endpoint, received) = receiver().await;
    let redis = RedisServer::start();
    let mut gateway = tokio::task::spawn_blocking({
        let endpoint = endpoint.clone();
        let redis_url = redis.url.clone();
        move || {
            LoggedProcess::serve(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
                ("OTEL_SERVICE_NAME", "toolgate-under-test"),
                ("TOOLGATE_REDIS_URL", &redis_url),
                ("TOOLGATE_LOG_LEVEL", "warn"),
            ])
        }
    })
    .await
    .expect("started");
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let written = client
        .put(format!("{}/admin/catalog", gateway.base))
        .bearer_auth(Gateway::admin())
        .header("content-type", "application/json")
        .body(catalog().to_string())
        .send()
        .await
        .expect("write");
    assert_eq!(written.status(), StatusCode::OK);
    let read = client
        .get(format!("{}/agents/tools", gateway.base))
        .bearer_auth(Gateway::token(
            json!({"sub": "agent-1", "roles": ["reader"]}),
        ))
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .send()
        .await
        .expect("read");
    assert_eq!(read.status(), StatusCode::OK);
    let request_id = read
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("request id")
        .to_owned();

    // A clean exit exports whatever is still buffered.
    let gateway = tokio::task::spawn_blocking(move || {
        gateway.terminate();
        gateway
    })
    .await
    .expect("terminated");
    let log = gateway.log();
    let received = received.lock().expect("lock");

    let resources: Vec<HashMap<String, String>> = received
        .traces
        .iter()
        .flat_map(|request| &request.resource_spans)
        .filter_map(|spans| spans.resource.as_ref())
        .map(|resource| attributes(&resource.attributes))
        .collect();
    assert!(!resources.is_empty(), "no spans exported; log:\n{log}");
    for resource in &resources {
        assert_eq!(
            resource.get("service.name").map(String::as_str),
            Some("toolgate-under-test")
        );
    }
    let spans: Vec<Span> = received
        .traces
        .iter()
        .flat_map(|request| &request.resource_spans)
        .flat_map(|spans| &spans.scope_spans)
        .flat_map(|scope| scope.spans.clone())
        .collect();

    // The read: a server span, child of the caller's span, in the caller's trace.
    let request = span(&spans, "GET /agents/tools");
    assert_eq!(hex(&request.trace_id), TRACE_ID);
    assert_eq!(hex(&request.parent_span_id), CALLER_SPAN);
    assert_eq!(request.kind, SpanKind::Server as i32);
    let attrs = attributes(&request.attributes);
    assert_eq!(attrs["http.request.method"], "GET");
    assert_eq!(attrs["http.route"], "/agents/tools");
    assert_eq!(attrs["http.response.status_code"], "200");
    assert_eq!(attrs["request_id"], request_id);
    assert_eq!(attrs["subject"].len(), 16, "a hash of sub, not sub");
    assert!(!attrs.values().any(|value| value.contains("agent-1")));

    assert_eq!(
        children(&spans, request),
        ["resolve manifest", "verify token"]
    );
    let verify = child(&spans, request, "verify token");
    assert_eq!(attributes(&verify.attributes)["outcome"], "ok");
    let resolve = child(&spans, request, "resolve manifest");
    let resolved = attributes(&resolve.attributes);
    assert_eq!(resolved["cache"], "miss");
    assert_eq!(resolved["tools"], "2");
    for child in [verify, resolve] {
        assert_eq!(hex(&child.trace_id), TRACE_ID);
    }
    // The shared-cache lookup in Redis happens inside the resolution.
    let lookup = child(&spans, resolve, "redis GET");
    assert_eq!(lookup.kind, SpanKind::Client as i32);
    assert_eq!(attributes(&lookup.attributes)["db.system.name"], "redis");
    // ... and the decision it made is shared in the background, still in the same trace.
    let shared = child(&spans, resolve, "redis SET");
    assert_eq!(hex(&shared.trace_id), TRACE_ID);

    // The write: its commit (in a task of its own) is still its child, and it started a trace
    // of its own (no traceparent was sent).
    let write = span(&spans, "PUT /admin/catalog");
    assert!(write.parent_span_id.is_empty());
    assert_ne!(hex(&write.trace_id), TRACE_ID);
    assert_eq!(
        attributes(&child(&spans, write, "verify token").attributes)["outcome"],
        "ok"
    );
    let commit = child(&spans, write, "store commit");
    assert_eq!(
        attributes(&commit.attributes)["db.operation.name"],
        "commit"
    );
    let publish = span(&spans, "redis PUBLISH");
    assert_eq!(
        publish.trace_id, write.trace_id,
        "the change announcement is in the write's trace"
    );

    // The same process pushed its metrics, the reference design's included.
    let mut resolutions = None;
    for metric in received
        .metrics
        .iter()
        .flat_map(|request| &request.resource_metrics)
        .flat_map(|metrics| &metrics.scope_metrics)
        .flat_map(|scope| &scope.metrics)
    {
        if metric.name == "agent_access_resolutions"
            && let Some(metric::Data::Sum(sum)) = &metric.data
        {
            resolutions = sum.data_points.last().map(|point| point.value);
        }
    }
    assert_eq!(
        resolutions,
        Some(Some(
            opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(1)
        )),
        "agent_access_resolutions was pushed with the one resolution"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_nothing_is_exported() {
    let (endpoint, received) = receiver().await;
    // The collector exists but is not configured: nothing may reach it.
    let mut gateway = tokio::task::spawn_blocking(|| {
        LoggedProcess::serve(&[("OTEL_SERVICE_NAME", "toolgate-under-test")])
    })
    .await
    .expect("started");
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let reply = client
        .get(format!("{}/agents/tools", gateway.base))
        .bearer_auth(Gateway::token(json!({"sub": "agent-1"})))
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .send()
        .await
        .expect("read");
    assert_eq!(reply.status(), StatusCode::OK);
    tokio::task::spawn_blocking(move || gateway.terminate())
        .await
        .expect("terminated");
    let received = received.lock().expect("lock");
    assert!(
        received.traces.is_empty() && received.metrics.is_empty(),
        "{endpoint}"
    );
}
