//! Collected OpenTelemetry metrics as Prometheus text (exposition format 0.0.4), for
//! `GET /metrics`.
//!
//! Names follow the OpenTelemetry-to-Prometheus rules: characters other than `[a-zA-Z0-9_:]`
//! become `_`, the unit is appended (`s` → `_seconds`, `ms` → `_milliseconds`; annotations
//! such as `{request}` are dropped), monotonic sums get `_total`, histograms become cumulative
//! `_bucket{le=…}` series with `_sum` and `_count`. Attribute keys become label names the same
//! way (`http.route` → `http_route`). Families are sorted by name and series by labels, so
//! that two scrapes of the same state are the same text.

use std::fmt::Write as _;

use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{
    AggregatedMetrics, HistogramDataPoint, Metric, MetricData, ResourceMetrics,
};

use super::striped::HistogramSnapshot;

/// The `Content-Type` of what [`render`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A histogram kept outside the SDK ([`StripedHistogram`](super::striped::StripedHistogram)),
/// written among the SDK's families under the same naming rules.
pub struct HistogramFamily<'a> {
    pub name: &'a str,
    pub unit: &'a str,
    pub help: &'a str,
    pub snapshot: HistogramSnapshot,
}

/// Every metric of `collected`, and the `extra` histograms, as Prometheus text.
pub fn render(collected: &ResourceMetrics, extra: &[HistogramFamily<'_>]) -> String {
    enum Source<'a> {
        Sdk(&'a Metric),
        Extra(&'a HistogramFamily<'a>),
    }
    let mut families: Vec<(String, Source<'_>)> = collected
        .scope_metrics()
        .flat_map(|scope| scope.metrics())
        .map(|metric| {
            (
                family_name(metric.name(), metric.unit()),
                Source::Sdk(metric),
            )
        })
        .chain(
            extra
                .iter()
                .map(|family| (family_name(family.name, family.unit), Source::Extra(family))),
        )
        .collect();
    families.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (name, source) in families {
        match source {
            Source::Sdk(metric) => {
                let help = metric.description();
                match metric.data() {
                    AggregatedMetrics::U64(data) => write_family(&mut out, &name, help, data),
                    AggregatedMetrics::I64(data) => write_family(&mut out, &name, help, data),
                    AggregatedMetrics::F64(data) => write_family(&mut out, &name, help, data),
                }
            }
            Source::Extra(family) => {
                header(&mut out, &name, family.help, "histogram");
                let snapshot = &family.snapshot;
                write_buckets(
                    &mut out,
                    &name,
                    &[],
                    snapshot
                        .bounds
                        .iter()
                        .copied()
                        .zip(snapshot.counts.iter().copied()),
                    snapshot.sum,
                    snapshot.count,
                );
            }
        }
    }
    out
}

/// Label names and values, sorted by name.
type Labels = Vec<(String, String)>;

/// A number as Prometheus writes it.
trait Sample: Copy {
    fn write(self, out: &mut String);
}

impl Sample for u64 {
    fn write(self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Sample for i64 {
    fn write(self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Sample for f64 {
    fn write(self, out: &mut String) {
        if self.is_nan() {
            out.push_str("NaN");
        } else if self.is_infinite() {
            out.push_str(if self > 0.0 { "+Inf" } else { "-Inf" });
        } else {
            let _ = write!(out, "{self}");
        }
    }
}

fn write_family<T: Sample>(out: &mut String, name: &str, help: &str, data: &MetricData<T>) {
    match data {
        MetricData::Sum(sum) if sum.is_monotonic() => {
            let name = format!("{name}_total");
            let points = sum
                .data_points()
                .map(|p| (labels(p.attributes()), p.value()));
            write_simple(out, &name, help, "counter", points);
        }
        MetricData::Sum(sum) => {
            let points = sum
                .data_points()
                .map(|p| (labels(p.attributes()), p.value()));
            write_simple(out, name, help, "gauge", points);
        }
        MetricData::Gauge(gauge) => {
            let points = gauge
                .data_points()
                .map(|p| (labels(p.attributes()), p.value()));
            write_simple(out, name, help, "gauge", points);
        }
        MetricData::Histogram(histogram) => {
            header(out, name, help, "histogram");
            let mut points: Vec<(Labels, &HistogramDataPoint<T>)> = histogram
                .data_points()
                .map(|point| (labels(point.attributes()), point))
                .collect();
            points.sort_by(|a, b| a.0.cmp(&b.0));
            for (labels, point) in points {
                let buckets = point.bounds().zip(point.bucket_counts());
                write_buckets(out, name, &labels, buckets, point.sum(), point.count());
            }
        }
        // Never created by toolgate (no instrument is configured to aggregate this way).
        MetricData::ExponentialHistogram(_) => {}
    }
}

fn write_simple<T: Sample>(
    out: &mut String,
    name: &str,
    help: &str,
    kind: &str,
    points: impl Iterator<Item = (Labels, T)>,
) {
    let mut points: Vec<_> = points.collect();
    if points.is_empty() {
        return;
    }
    points.sort_by(|a, b| a.0.cmp(&b.0));
    header(out, name, help, kind);
    for (labels, value) in points {
        series(out, name, &labels, None);
        value.write(out);
        out.push('\n');
    }
}

/// One histogram series: cumulative `_bucket`s from per-bucket `(bound, count)`, `+Inf`,
/// `_sum`, `_count`.
fn write_buckets<T: Sample>(
    out: &mut String,
    name: &str,
    labels: &[(String, String)],
    buckets: impl Iterator<Item = (f64, u64)>,
    sum: T,
    count: u64,
) {
    let bucket = format!("{name}_bucket");
    let mut cumulative = 0u64;
    let mut le = String::new();
    for (bound, count) in buckets {
        cumulative += count;
        le.clear();
        bound.write(&mut le);
        series(out, &bucket, labels, Some(&le));
        cumulative.write(out);
        out.push('\n');
    }
    series(out, &bucket, labels, Some("+Inf"));
    count.write(out);
    out.push('\n');
    series(out, &format!("{name}_sum"), labels, None);
    sum.write(out);
    out.push('\n');
    series(out, &format!("{name}_count"), labels, None);
    count.write(out);
    out.push('\n');
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    if !help.is_empty() {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(out, "# HELP {name} {help}");
    }
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `name{a="1",b="2"} ` (with `le` last for buckets), or `name ` without labels.
fn series(out: &mut String, name: &str, labels: &[(String, String)], le: Option<&str>) {
    out.push_str(name);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let le = le.map(|le| ("le", le));
        let all = labels
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .chain(le);
        for (i, (key, value)) in all.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(key);
            out.push_str("=\"");
            escape_label_value(out, value);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
}

fn escape_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Attributes as sorted `(label name, value)` pairs.
fn labels<'a>(attributes: impl Iterator<Item = &'a KeyValue>) -> Labels {
    let mut labels: Labels = attributes
        .map(|kv| (sanitize(kv.key.as_str()), kv.value.as_str().into_owned()))
        .collect();
    labels.sort();
    labels
}

/// A metric or label name: `[a-zA-Z0-9_:]`, other characters replaced by `_`, never starting
/// with a digit.
fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The family name: the sanitised name plus the unit's suffix, unless it already ends so.
fn family_name(name: &str, unit: &str) -> String {
    let name = sanitize(name);
    let suffix = match unit {
        "s" => "seconds",
        "ms" => "milliseconds",
        "By" => "bytes",
        _ => return name,
    };
    if name.ends_with(suffix) {
        name
    } else {
        format!("{name}_{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::reader::MetricReader as _;
    use opentelemetry_sdk::metrics::{ManualReader, SdkMeterProvider};

    use super::*;
    use crate::telemetry::metrics::SharedReader;

    fn collect(record: impl FnOnce(&opentelemetry::metrics::Meter)) -> String {
        let reader = Arc::new(ManualReader::builder().build());
        let provider = SdkMeterProvider::builder()
            .with_reader(SharedReader(Arc::clone(&reader)))
            .build();
        record(&provider.meter("test"));
        let mut collected = ResourceMetrics::default();
        reader.collect(&mut collected).expect("collect");
        render(&collected, &[])
    }

    #[test]
    fn counters_get_total_and_sorted_labels() {
        let text = collect(|meter| {
            let counter = meter
                .u64_counter("agent_access_resolutions")
                .with_description("Resolutions")
                .build();
            counter.add(2, &[KeyValue::new("b", "x"), KeyValue::new("a.b", "y")]);
            counter.add(1, &[KeyValue::new("b", "w\"q\\")]);
        });
        assert_eq!(
            text,
            "# HELP agent_access_resolutions_total Resolutions\n\
             # TYPE agent_access_resolutions_total counter\n\
             agent_access_resolutions_total{a_b=\"y\",b=\"x\"} 2\n\
             agent_access_resolutions_total{b=\"w\\\"q\\\\\"} 1\n"
        );
    }

    #[test]
    fn histograms_are_cumulative_with_unit_suffix() {
        let text = collect(|meter| {
            let histogram = meter
                .f64_histogram("agent_resolution_time")
                .with_unit("ms")
                .with_boundaries(vec![1.0, 10.0])
                .build();
            for value in [0.5, 2.0, 3.0, 50.0] {
                histogram.record(value, &[KeyValue::new("cache", "hit")]);
            }
        });
        assert_eq!(
            text,
            "# TYPE agent_resolution_time_milliseconds histogram\n\
             agent_resolution_time_milliseconds_bucket{cache=\"hit\",le=\"1\"} 1\n\
             agent_resolution_time_milliseconds_bucket{cache=\"hit\",le=\"10\"} 3\n\
             agent_resolution_time_milliseconds_bucket{cache=\"hit\",le=\"+Inf\"} 4\n\
             agent_resolution_time_milliseconds_sum{cache=\"hit\"} 55.5\n\
             agent_resolution_time_milliseconds_count{cache=\"hit\"} 4\n"
        );
    }

    #[test]
    fn extra_histograms_are_written_in_name_order() {
        let reader = Arc::new(ManualReader::builder().build());
        let provider = SdkMeterProvider::builder()
            .with_reader(SharedReader(Arc::clone(&reader)))
            .build();
        let meter = provider.meter("test");
        meter.u64_counter("b_first").build().add(1, &[]);
        meter.u64_counter("z_last").build().add(1, &[]);
        let mut collected = ResourceMetrics::default();
        reader.collect(&mut collected).expect("collect");
        let extra = HistogramFamily {
            name: "m_time",
            unit: "ms",
            help: "",
            snapshot: HistogramSnapshot {
                bounds: vec![1.0],
                counts: vec![2, 1],
                sum: 4.5,
                count: 3,
            },
        };
        assert_eq!(
            render(&collected, &[extra]),
            "# TYPE b_first_total counter\nb_first_total 1\n\
             # TYPE m_time_milliseconds histogram\n\
             m_time_milliseconds_bucket{le=\"1\"} 2\n\
             m_time_milliseconds_bucket{le=\"+Inf\"} 3\n\
             m_time_milliseconds_sum 4.5\n\
             m_time_milliseconds_count 3\n\
             # TYPE z_last_total counter\nz_last_total 1\n"
        );
    }

    #[test]
    fn gauges_and_dotted_names() {
        let text = collect(|meter| {
            meter
                .u64_observable_gauge("toolgate.sse.subscribers")
                .with_callback(|observer| observer.observe(3, &[]))
                .build();
        });
        assert_eq!(
            text,
            "# TYPE toolgate_sse_subscribers gauge\ntoolgate_sse_subscribers 3\n"
        );
    }

    #[test]
    fn names_are_sanitised_and_suffixed_once() {
        assert_eq!(
            family_name("http.server.request.duration", "s"),
            "http_server_request_duration_seconds"
        );
        assert_eq!(family_name("wait_seconds", "s"), "wait_seconds");
        assert_eq!(family_name("9lives", "{request}"), "_9lives");
    }
}
