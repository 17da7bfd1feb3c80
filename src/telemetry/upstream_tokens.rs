//! Tokens toolgate asks token endpoints for, to call upstreams (`config.auth` of a source):
//! requests by source, grant and outcome, and calls served by a cached token. The source id is
//! a label here (docs/api.md asks for counts by source): source ids are written by admins, so they
//! are as few as the catalog's sources, never a value an agent chooses.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Meter};

/// What became of one request to a token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenOutcome {
    /// A token was issued.
    Issued,
    /// The endpoint answered with an OAuth error.
    Refused,
    /// No usable answer: unreachable, late, or not a token answer.
    Failed,
}

impl TokenOutcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            TokenOutcome::Issued => "issued",
            TokenOutcome::Refused => "refused",
            TokenOutcome::Failed => "failed",
        }
    }
}

/// The instruments; cheap to clone (handles to the meter's instruments).
#[derive(Clone)]
pub struct TokenMetrics {
    requests: Counter<u64>,
    cache_hits: Counter<u64>,
}

impl TokenMetrics {
    pub(super) fn new(meter: &Meter) -> TokenMetrics {
        TokenMetrics {
            requests: meter
                .u64_counter("toolgate.upstream_token.requests")
                .with_description(
                    "Requests to token endpoints for upstream calls (config.auth), by source, \
                     grant (client_credentials, token_exchange) and outcome (issued, refused, \
                     failed)",
                )
                .build(),
            cache_hits: meter
                .u64_counter("toolgate.upstream_token.cache_hits")
                .with_description(
                    "Upstream calls that used a token issued earlier (cached until shortly \
                     before it expires), by source and grant",
                )
                .build(),
        }
    }

    /// One request to a token endpoint for `source`.
    pub fn request(&self, source: &str, grant: &'static str, outcome: TokenOutcome) {
        self.requests.add(
            1,
            &[
                KeyValue::new("source", source.to_owned()),
                KeyValue::new("grant", grant),
                KeyValue::new("outcome", outcome.as_str()),
            ],
        );
    }

    /// One call of `source` served by a cached token.
    pub fn cache_hit(&self, source: &str, grant: &'static str) {
        self.cache_hits.add(
            1,
            &[
                KeyValue::new("source", source.to_owned()),
                KeyValue::new("grant", grant),
            ],
        );
    }
}
