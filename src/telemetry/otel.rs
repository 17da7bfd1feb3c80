//! OpenTelemetry over OTLP: where to send (the standard `OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_SERVICE_NAME`), the trace pipeline behind the `tracing` layer, the metric reader that
//! pushes a server's metrics, and W3C trace-context extraction for incoming requests.
//!
//! Transport: HTTP/protobuf with the *blocking* reqwest client, on the SDK's own export threads
//! (batch span processor, periodic metric reader). The async reqwest client can panic on an
//! export thread that has no runtime and drop spans silently; gRPC would add tonic to the build
//! for no gain here. A collector listens for this on port 4318.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::HeaderMap;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::PeriodicReader;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

use super::TelemetryError;

/// How OTLP is sent. One transport today; the setting exists so that a collector configured
/// for another one gets a clear refusal instead of silence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpProtocol {
    /// `http/protobuf`: `POST {endpoint}/v1/traces` and `/v1/metrics`.
    #[default]
    HttpProtobuf,
}

/// Where traces and metrics go, and under which `service.name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The collector's base URL without a trailing `/`, e.g. `http://localhost:4318`.
    pub endpoint: String,
    pub protocol: OtlpProtocol,
    pub service_name: String,
}

impl OtlpSettings {
    /// `{endpoint}/v1/{signal}`, as the spec builds signal URLs from the base endpoint.
    fn signal_url(&self, signal: &str) -> String {
        format!("{}/v1/{signal}", self.endpoint)
    }

    fn resource(&self) -> Resource {
        Resource::builder()
            .with_service_name(self.service_name.clone())
            .build()
    }

    fn protocol(&self) -> Protocol {
        match self.protocol {
            OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        }
    }
}

/// Set once the OpenTelemetry layer is installed; read per request to decide whether a
/// `traceparent` is worth parsing and span names worth formatting.
static EXPORTING: AtomicBool = AtomicBool::new(false);

pub(super) fn mark_exporting() {
    EXPORTING.store(true, Ordering::Release);
}

/// Whether spans are exported (an OTLP endpoint is configured and the layer is installed).
pub fn exporting_traces() -> bool {
    EXPORTING.load(Ordering::Acquire)
}

/// The trace pipeline: a batch span processor exporting over OTLP.
pub(super) struct TraceExport {
    provider: SdkTracerProvider,
}

impl TraceExport {
    pub(super) fn start(settings: &OtlpSettings) -> Result<TraceExport, TelemetryError> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(settings.protocol())
            .with_endpoint(settings.signal_url("traces"))
            .build()
            .map_err(|error| TelemetryError::Export(error.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(settings.resource())
            .build();
        Ok(TraceExport { provider })
    }

    /// The `tracing` layer that turns toolgate's spans into OpenTelemetry spans. Its own filter
    /// (toolgate's spans down to `debug`) is independent of the log level: traces stay whole
    /// when logs are quiet, and other crates' spans (and the SDK's own logs) never loop back.
    pub(super) fn layer<S>(&self) -> Box<dyn Layer<S> + Send + Sync>
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let tracer = self.provider.tracer("toolgate");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_threads(false)
            .with_filter(Targets::new().with_target("toolgate", LevelFilter::DEBUG))
            .boxed()
    }

    /// Exports what is buffered and stops the export thread.
    pub(super) fn shutdown(self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("toolgate: flushing the last spans failed: {error}");
        }
    }
}

/// A reader that pushes a meter provider's metrics to the collector every
/// `OTEL_METRIC_EXPORT_INTERVAL` milliseconds (60 s unless set), and once more at shutdown.
pub fn metric_reader(
    settings: &OtlpSettings,
) -> Result<PeriodicReader<MetricExporter>, TelemetryError> {
    let exporter = MetricExporter::builder()
        .with_http()
        .with_protocol(settings.protocol())
        .with_endpoint(settings.signal_url("metrics"))
        .build()
        .map_err(|error| TelemetryError::Export(error.to_string()))?;
    Ok(PeriodicReader::builder(exporter).build())
}

/// The `service.name` resource of a server's metrics.
pub fn metric_resource(settings: &OtlpSettings) -> Resource {
    settings.resource()
}

/// The remote parent a request names in its W3C `traceparent` (and `tracestate`) headers; an
/// empty context when it names none or a malformed one.
pub fn remote_parent(headers: &HeaderMap) -> opentelemetry::Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

struct HeaderExtractor<'a>(&'a HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TraceContextExt as _;

    use super::*;

    #[test]
    fn a_traceparent_header_becomes_the_remote_parent() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .expect("header value"),
        );
        let parent = remote_parent(&headers);
        let span = parent.span();
        let context = span.span_context();
        assert!(context.is_remote() && context.is_sampled());
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.span_id().to_string(), "00f067aa0ba902b7");
    }

    #[test]
    fn no_or_a_malformed_traceparent_is_no_parent() {
        let mut headers = HeaderMap::new();
        assert!(!remote_parent(&headers).span().span_context().is_valid());
        headers.insert("traceparent", "00-zz-yy-01".parse().expect("header value"));
        assert!(!remote_parent(&headers).span().span_context().is_valid());
    }

    #[test]
    fn signal_urls_extend_the_base_endpoint() {
        let settings = OtlpSettings {
            endpoint: "http://collector:4318".into(),
            protocol: OtlpProtocol::HttpProtobuf,
            service_name: "toolgate".into(),
        };
        assert_eq!(
            settings.signal_url("traces"),
            "http://collector:4318/v1/traces"
        );
    }
}
