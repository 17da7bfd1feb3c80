//! `GET /metrics` read back into samples, to assert exact values.

use std::collections::BTreeMap;

use super::gateway::Gateway;

/// One scrape: `name{labels}` → value, labels in the order the server wrote them (sorted).
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub text: String,
    samples: BTreeMap<String, f64>,
}

impl Scrape {
    /// Scrapes the gateway, without a token (the endpoint needs none).
    pub async fn of(gateway: &Gateway) -> Scrape {
        let reply = gateway
            .request(reqwest::Method::GET, "/metrics", None, None)
            .await;
        assert_eq!(reply.status, reqwest::StatusCode::OK);
        assert_eq!(
            reply.header("content-type"),
            Some("text/plain; version=0.0.4; charset=utf-8")
        );
        Scrape::parse(&String::from_utf8(reply.body).expect("UTF-8 text"))
    }

    pub fn parse(text: &str) -> Scrape {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("`series value`");
                let value = match value {
                    "+Inf" => f64::INFINITY,
                    other => other.parse().expect("a number"),
                };
                (series.to_owned(), value)
            })
            .collect();
        Scrape {
            text: text.to_owned(),
            samples,
        }
    }

    /// The sample `name` with exactly these labels (given in sorted order), if present.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.get(&series(name, labels)).copied()
    }

    /// [`Scrape::get`], 0 when absent (a counter never incremented is not written).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels).unwrap_or(0.0)
    }

    /// Every series of the family `name` (its `_bucket`, `_sum`, … included).
    pub fn series_of(&self, name: &str) -> Vec<(&str, f64)> {
        self.samples
            .iter()
            .filter(|(series, _)| series.starts_with(name))
            .map(|(series, value)| (series.as_str(), *value))
            .collect()
    }
}

/// `name{a="1",b="2"}`, or `name` without labels.
pub fn series(name: &str, labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let labels: Vec<String> = labels
        .iter()
        .map(|(key, value)| format!("{key}=\"{value}\""))
        .collect();
    format!("{name}{{{}}}", labels.join(","))
}
