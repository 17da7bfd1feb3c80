//! The metrics of one server: instruments recorded on the request path, and values the
//! gateway already counts (cache, streams, Redis, revision) observed only when collected.
//!
//! One OpenTelemetry meter provider per server, with two readers: a pull reader rendered by
//! `GET /metrics` ([`Metrics::render_prometheus`]) and, when a collector is configured, a
//! periodic OTLP push. Recording is the same either way.
//!
//! Label values are bounded by construction: methods (the standard ones, else `_OTHER`),
//! route *templates* (`/admin/tools/{id}`, never a raw path; at most [`MAX_ROUTES`]), status
//! codes, and small closed enums (event kind, rate-limit class, store operation and error
//! kind). No tool id, subject or claim value is ever a label; a source id is, for upstream
//! tokens only (see [`super::upstream_tokens`]).
//!
//! Cost on the hot path: the agent counters are striped atomics ([`StripedCounter`]: a thread
//! adds to its own cache line), observed at collection; so is `agent_resolution_time`
//! ([`StripedHistogram`]) unless a collector is configured, when it is the SDK's histogram so
//! that it is pushed too (no attributes: one short lock). The HTTP histogram is one read-locked
//! hash lookup and one short lock (its attribute values are static strings or interned route
//! names, so nothing is allocated).

use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};

use super::observed::{self, AgentCounts, Reading, ReadingKind};
use super::otel::{self, OtlpSettings};
use super::striped::StripedHistogram;
use super::{TelemetryError, prometheus};

/// Distinct route templates labelled; more (which the router cannot produce) count as `other`.
pub const MAX_ROUTES: usize = 256;

/// Bucket bounds of `http.server.request.duration`, seconds: from 50 µs (a cached manifest)
/// to 10 s (the slowest import).
const HTTP_SECONDS: [f64; 16] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 10.0,
];

/// Bucket bounds of `agent_resolution_time`, milliseconds: a cache hit is a few µs, a miss on
/// a large catalog a few ms, a Redis round trip at most 250 ms.
const RESOLUTION_MS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0,
];

const RESOLUTION_NAME: &str = "agent_resolution_time";
const RESOLUTION_UNIT: &str = "ms";
const RESOLUTION_HELP: &str = "Time from verified claims to manifest bytes, however served (the \
                               span 'resolve manifest' says whether from the cache)";

/// Where resolution times are recorded: striped (each thread on its own cache lines) when only
/// `GET /metrics` reads them, the SDK's histogram when they are also pushed over OTLP.
enum ResolutionTime {
    /// Boxed: 16 stripes of 256 bytes.
    Striped(Box<StripedHistogram<{ RESOLUTION_MS.len() }>>),
    Exported(Histogram<f64>),
}

impl ResolutionTime {
    /// `exported`: a collector is configured, so the times must be pushed too.
    fn new(meter: &Meter, exported: bool) -> ResolutionTime {
        if exported {
            ResolutionTime::Exported(
                meter
                    .f64_histogram(RESOLUTION_NAME)
                    .with_unit(RESOLUTION_UNIT)
                    .with_description(RESOLUTION_HELP)
                    .with_boundaries(RESOLUTION_MS.to_vec())
                    .build(),
            )
        } else {
            ResolutionTime::Striped(Box::new(StripedHistogram::new(RESOLUTION_MS)))
        }
    }
}

/// The meter provider with its two readers: the pull reader `GET /metrics` renders (returned
/// too, since rendering collects from it), and the OTLP push when `otlp` is given.
fn provider(
    otlp: Option<&OtlpSettings>,
) -> Result<(SdkMeterProvider, Arc<ManualReader>), TelemetryError> {
    let pull = Arc::new(ManualReader::builder().build());
    let mut builder = SdkMeterProvider::builder().with_reader(SharedReader(Arc::clone(&pull)));
    if let Some(otlp) = otlp {
        builder = builder
            .with_reader(otel::metric_reader(otlp)?)
            .with_resource(otel::metric_resource(otlp));
    }
    Ok((builder.build(), pull))
}

/// A histogram of durations in seconds with these bucket bounds.
fn seconds_histogram(
    meter: &Meter,
    name: &'static str,
    description: &'static str,
    boundaries: Vec<f64>,
) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(boundaries)
        .build()
}

/// A server's instruments and the readers behind them.
pub struct Metrics {
    provider: SdkMeterProvider,
    pull: Arc<ManualReader>,
    meter: Meter,
    http_duration: Histogram<f64>,
    agents: Arc<AgentCounts>,
    resolution_time: ResolutionTime,
    rate_limited: Counter<u64>,
    decisions: Counter<u64>,
    decision_duration: Histogram<f64>,
    store_errors: Counter<u64>,
    connections_refused: Counter<u64>,
    import_operations: Counter<u64>,
    refresh_failures: Counter<u64>,
    impact_runs: Counter<u64>,
    impact_duration: Histogram<f64>,
    delegations: Counter<u64>,
    /// The MCP endpoint's instruments.
    pub mcp: super::mcp::McpMetrics,
    /// Runs' instruments.
    pub runs: super::runs::RunMetrics,
    /// Tokens asked of token endpoints for upstream calls.
    pub upstream_tokens: super::upstream_tokens::TokenMetrics,
    routes: RouteNames,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Instruments read by `GET /metrics`, and pushed to `otlp` when given. Builds the OTLP
    /// exporter's blocking HTTP client: call from a blocking context (or before the runtime).
    pub fn new(otlp: Option<&OtlpSettings>) -> Result<Metrics, TelemetryError> {
        let (provider, pull) = provider(otlp)?;
        let meter = provider.meter("toolgate");
        let metrics = Metrics {
            http_duration: seconds_histogram(
                &meter,
                "http.server.request.duration",
                "HTTP requests by method, route template and status, until the response head \
                 (a stream counts until it opens); its _count is the request count",
                HTTP_SECONDS.to_vec(),
            ),
            agents: observed::agent_counts(&meter),
            resolution_time: ResolutionTime::new(&meter, otlp.is_some()),
            rate_limited: meter
                .u64_counter("toolgate.rate_limited")
                .with_description("Requests refused with 429 by the per-subject rate limits")
                .build(),
            decisions: meter
                .u64_counter("toolgate.decisions")
                .with_description(
                    "Decisions about single tools (may this subject call this tool?), by \
                     endpoint and result (permit or deny); a batch counts each of its answers",
                )
                .build(),
            decision_duration: seconds_histogram(
                &meter,
                "toolgate.decision.duration",
                "Time to answer one decision request (a single evaluation, a batch, a search) \
                 once its token is verified and its body read, by endpoint",
                HTTP_SECONDS.to_vec(),
            ),
            store_errors: meter
                .u64_counter("toolgate.store.errors")
                .with_description("Failed catalog store calls by operation and kind")
                .build(),
            connections_refused: meter
                .u64_counter("toolgate.connections.refused")
                .with_description(
                    "Connections closed as soon as accepted because the cap on open \
                     connections was reached",
                )
                .build(),
            import_operations: meter
                .u64_counter("toolgate.import.operations")
                .with_description(
                    "Upstream operations an import skipped or cut (outcome), each time it \
                     did; the refresh answer and audit record say which and why",
                )
                .build(),
            refresh_failures: meter
                .u64_counter("toolgate.refresh.failures")
                .with_description(
                    "Source refreshes that failed and changed nothing, by trigger (admin or \
                     periodic)",
                )
                .build(),
            impact_runs: meter
                .u64_counter("toolgate.impact.runs")
                .with_description(
                    "Impact previews (POST /admin/impact) by outcome: ok, or refused (invalid \
                     change, stale If-Match, failed import)",
                )
                .build(),
            impact_duration: seconds_histogram(
                &meter,
                "toolgate.impact.duration",
                "Time of an impact preview: applying and compiling the change, and comparing \
                 the manifests of every claim set",
                vec![0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10.0, 60.0],
            ),
            delegations: meter
                .u64_counter("toolgate.delegations")
                .with_description(
                    "Token exchanges at POST /oauth/token by outcome: issued, or the OAuth \
                     error code of the refusal",
                )
                .build(),
            mcp: super::mcp::McpMetrics::new(&meter),
            runs: super::runs::RunMetrics::new(&meter),
            upstream_tokens: super::upstream_tokens::TokenMetrics::new(&meter),
            provider,
            pull,
            meter,
            routes: RouteNames::default(),
        };
        metrics.start_at_zero();
        Ok(metrics)
    }

    /// Records zero on the counters that can stay at zero for a server's whole life, so that
    /// their series exist from the start: a rate or an alert on them sees 0, not nothing.
    fn start_at_zero(&self) {
        self.connections_refused.add(0, &[]);
        self.import_issues(0, 0);
        for trigger in ["admin", "periodic"] {
            self.refresh_failures
                .add(0, &[KeyValue::new("trigger", trigger)]);
        }
    }

    /// One HTTP request, answered. `route` is the matched template (`None`: no route matched).
    pub fn http_request(
        &self,
        method: &Method,
        route: Option<&str>,
        status: StatusCode,
        elapsed: Duration,
    ) {
        self.http_duration.record(
            elapsed.as_secs_f64(),
            &[
                KeyValue::new("http.request.method", method_name(method)),
                KeyValue::new("http.route", self.routes.value(route)),
                KeyValue::new("http.response.status_code", i64::from(status.as_u16())),
            ],
        );
    }

    /// One manifest resolution for an agent.
    pub fn resolution(&self, tools: usize, denied: bool, took: Duration) {
        self.agents.resolutions.add(1);
        if denied {
            self.agents.denied.add(1);
        }
        self.agents
            .tools
            .add(u64::try_from(tools).unwrap_or(u64::MAX));
        let ms = took.as_secs_f64() * 1000.0;
        match &self.resolution_time {
            ResolutionTime::Striped(histogram) => histogram.record(ms),
            ResolutionTime::Exported(histogram) => histogram.record(ms, &[]),
        }
    }

    /// Writes the rate-limit counter of each class from the start, at 0, rather than having it
    /// appear with the first refusal. (The classes are the HTTP layer's; telemetry only counts.)
    pub fn rate_limit_classes(&self, classes: &[&'static str]) {
        for class in classes {
            self.rate_limited.add(0, &[KeyValue::new("class", *class)]);
        }
    }

    /// Writes the decision counters of each endpoint and result from the start, at 0. (The
    /// endpoints are the transports'; telemetry only counts.)
    pub fn decision_endpoints(&self, endpoints: &[&'static str]) {
        for endpoint in endpoints {
            for result in ["permit", "deny"] {
                self.decisions.add(
                    0,
                    &[
                        KeyValue::new("endpoint", *endpoint),
                        KeyValue::new("result", result),
                    ],
                );
            }
        }
    }

    /// One decision request answered at `endpoint`: how many of its answers permitted and
    /// denied (none for a search), and how long it took.
    pub fn decisions(&self, endpoint: &'static str, permits: u64, denies: u64, took: Duration) {
        for (result, count) in [("permit", permits), ("deny", denies)] {
            if count > 0 {
                self.decisions.add(
                    count,
                    &[
                        KeyValue::new("endpoint", endpoint),
                        KeyValue::new("result", result),
                    ],
                );
            }
        }
        self.decision_duration
            .record(took.as_secs_f64(), &[KeyValue::new("endpoint", endpoint)]);
    }

    /// One request of route class `class` refused by a rate limit.
    pub fn rate_limited(&self, class: &'static str) {
        self.rate_limited.add(1, &[KeyValue::new("class", class)]);
    }

    /// One connection closed at once because the connection cap was reached.
    pub fn connection_refused(&self) {
        self.connections_refused.add(1, &[]);
    }

    /// One failed store call.
    pub fn store_error(&self, operation: &'static str, kind: &'static str) {
        self.store_errors.add(
            1,
            &[
                KeyValue::new("operation", operation),
                KeyValue::new("kind", kind),
            ],
        );
    }

    /// Registers an instrument whose values `read` returns at each collection (a count the
    /// gateway keeps itself: cache lookups, open streams, the revision…), never on a request.
    pub fn observe(
        &self,
        kind: ReadingKind,
        name: &'static str,
        description: &'static str,
        read: impl Fn() -> Vec<Reading> + Send + Sync + 'static,
    ) {
        observed::register(&self.meter, kind, name, description, read);
    }

    /// The operations one import skipped and cut.
    pub fn import_issues(&self, skipped: usize, cut: usize) {
        for (outcome, count) in [("skipped", skipped), ("cut", cut)] {
            self.import_operations.add(
                u64::try_from(count).unwrap_or(u64::MAX),
                &[KeyValue::new("outcome", outcome)],
            );
        }
    }

    /// One refresh that failed; `trigger` is `admin` or `periodic`.
    pub fn refresh_failed(&self, trigger: &'static str) {
        self.refresh_failures
            .add(1, &[KeyValue::new("trigger", trigger)]);
    }

    /// One impact preview, how it ended (`ok` or `refused`) and how long it took.
    pub fn impact(&self, outcome: &'static str, took: Duration) {
        self.impact_runs
            .add(1, &[KeyValue::new("outcome", outcome)]);
        self.impact_duration.record(took.as_secs_f64(), &[]);
    }

    /// One token exchange at `POST /oauth/token`: `issued`, or the OAuth error code.
    pub fn delegation(&self, outcome: &'static str) {
        self.delegations
            .add(1, &[KeyValue::new("outcome", outcome)]);
    }

    /// Everything recorded so far, as Prometheus text.
    pub fn render_prometheus(&self) -> Result<String, TelemetryError> {
        let mut collected = ResourceMetrics::default();
        self.pull
            .collect(&mut collected)
            .map_err(|error| TelemetryError::Export(error.to_string()))?;
        let extra = match &self.resolution_time {
            ResolutionTime::Striped(histogram) => vec![prometheus::HistogramFamily {
                name: RESOLUTION_NAME,
                unit: RESOLUTION_UNIT,
                help: RESOLUTION_HELP,
                snapshot: histogram.snapshot(),
            }],
            ResolutionTime::Exported(_) => Vec::new(),
        };
        Ok(prometheus::render(&collected, &extra))
    }

    /// Pushes the last values to the collector (if any) and stops the push thread. Blocks:
    /// call from a blocking context.
    pub fn shutdown(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "the last metrics were not exported");
        }
    }
}

/// The OpenTelemetry name of a method: the standard ones, else `_OTHER` (so that made-up
/// methods cannot grow the label set).
fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

/// Route templates as shared label values: each distinct template is allocated once, and the
/// set is capped, so a label value never costs an allocation per request.
#[derive(Default)]
struct RouteNames {
    known: RwLock<HashMap<Box<str>, Arc<str>>>,
}

impl RouteNames {
    /// The label value of `route`: the template itself, `unmatched` for no route, `other` once
    /// [`MAX_ROUTES`] templates are known.
    fn value(&self, route: Option<&str>) -> Value {
        let Some(route) = route else {
            return Value::from("unmatched");
        };
        let known = self
            .known
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(name) = known.get(route) {
            return Value::from(Arc::clone(name));
        }
        drop(known);
        let mut known = self
            .known
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if known.len() >= MAX_ROUTES && !known.contains_key(route) {
            return Value::from("other");
        }
        let name = known
            .entry(route.into())
            .or_insert_with(|| Arc::from(route));
        Value::from(Arc::clone(name))
    }
}

/// A pull reader that both the meter provider (which owns its readers) and `GET /metrics` hold.
#[derive(Debug)]
pub struct SharedReader(pub Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, collected: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(collected)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_labels_are_templates_shared_and_capped() {
        let routes = RouteNames::default();
        let first = routes.value(Some("/admin/tools/{id}"));
        assert_eq!(first.as_str(), "/admin/tools/{id}");
        assert_eq!(routes.value(None).as_str(), "unmatched");
        for i in 0..MAX_ROUTES {
            routes.value(Some(&format!("/r{i}")));
        }
        assert_eq!(routes.value(Some("/one/too/many")).as_str(), "other");
        assert_eq!(
            routes.value(Some("/admin/tools/{id}")).as_str(),
            "/admin/tools/{id}",
            "known templates keep their name"
        );
    }

    #[test]
    fn made_up_methods_share_one_label() {
        let method = Method::from_bytes(b"BREW").expect("a token");
        assert_eq!(method_name(&method), "_OTHER");
        assert_eq!(method_name(&Method::PATCH), "PATCH");
    }

    #[test]
    fn decisions_count_by_endpoint_and_result() {
        let metrics = Metrics::new(None).expect("metrics");
        metrics.decision_endpoints(&["evaluation", "evaluations"]);
        metrics.decisions("evaluations", 3, 97, Duration::from_micros(40));
        metrics.decisions("search", 0, 0, Duration::from_micros(40));
        let text = metrics.render_prometheus().expect("render");
        for line in [
            "toolgate_decisions_total{endpoint=\"evaluation\",result=\"permit\"} 0",
            "toolgate_decisions_total{endpoint=\"evaluations\",result=\"permit\"} 3",
            "toolgate_decisions_total{endpoint=\"evaluations\",result=\"deny\"} 97",
            "toolgate_decision_duration_seconds_count{endpoint=\"evaluations\"} 1",
            "toolgate_decision_duration_seconds_count{endpoint=\"search\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
        assert!(
            !text.contains("endpoint=\"search\",result"),
            "a search decides nothing"
        );
    }

    #[test]
    fn a_resolution_counts_everywhere_it_should() {
        let metrics = Metrics::new(None).expect("metrics");
        metrics.resolution(3, false, Duration::from_micros(300));
        metrics.resolution(0, true, Duration::from_micros(3));
        let text = metrics.render_prometheus().expect("render");
        for line in [
            "agent_access_resolutions_total 2",
            "agent_access_denied_total 1",
            "agent_tools_resolved_total 3",
            "agent_resolution_time_milliseconds_count 2",
            "agent_resolution_time_milliseconds_bucket{le=\"0.005\"} 1",
            "agent_resolution_time_milliseconds_bucket{le=\"0.25\"} 1",
            "agent_resolution_time_milliseconds_bucket{le=\"0.5\"} 2",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
    }
}
