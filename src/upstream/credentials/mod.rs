//! The `Authorization` a call sends upstream when its source's `config.auth` asks for a token
//! (docs/api.md, "Credentials for upstream calls"): a client-credentials token for the gateway, or
//! a token exchanged for the caller's. The caller's own token is never sent upstream; with
//! `token_exchange` it goes only to the configured token endpoint, as the subject.
//!
//! A token is asked for once and then served from [`cache::TokenCache`] until shortly before
//! it expires (and, for an exchange, never past the caller's own token). When no token can be
//! had the call is over: the result says why, and nothing is sent upstream.

mod cache;
pub mod endpoint;

use std::sync::Arc;
use std::time::Duration;

use self::cache::{Got, TokenCache};
use self::endpoint::{Grant, TokenFailure};
use super::{CallLimits, CallOutcome, CallResult};
use crate::domain::model::Source;
use crate::domain::source_config::{CallSettings, TokenClient, UpstreamAuth};
use crate::telemetry::upstream_tokens::{TokenMetrics, TokenOutcome};

/// How long a token is used when its endpoint does not say (`expires_in` is only
/// recommended, RFC 6749 §5.1).
pub const UNSTATED_LIFETIME: Duration = Duration::from_secs(60);

/// A token is used until this long before it expires (or a tenth of its lifetime, if
/// shorter): a call that starts with it must not reach the upstream with it expired.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// A token is used for a day at most, whatever its endpoint says (an `expires_in` of 2^64 − 1
/// seconds is an answer too).
pub const LONGEST_USE: Duration = Duration::from_secs(24 * 3600);

/// Who a call is made for: what a token exchange presents, and whom its token is kept for.
#[derive(Clone, Copy)]
pub struct OnBehalf<'a> {
    /// The caller's identity ([`crate::service::Caller::identity`]): the cache key.
    pub identity: &'a str,
    /// The caller's verified bearer token: the exchange's `subject_token`.
    pub token: &'a str,
    /// The caller's token's `exp` (unix seconds): an exchanged token is not kept past it.
    pub expires_at: Option<i64>,
}

impl std::fmt::Debug for OnBehalf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnBehalf")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// Issued tokens and the instruments that count them.
#[derive(Default)]
pub(super) struct Credentials {
    cache: TokenCache,
    metrics: Option<TokenMetrics>,
}

impl Credentials {
    /// Credentials counted by `metrics`, whose tokens expire by `clock`.
    pub(super) fn new(
        metrics: Option<TokenMetrics>,
        clock: Arc<dyn crate::clock::Clock>,
    ) -> Credentials {
        Credentials {
            cache: TokenCache::new(clock),
            metrics,
        }
    }

    /// The `Authorization` value a call of `source` sends, if its `auth` asks for a token
    /// (`None` for `static`); the failed call's result when there is no token.
    pub(super) async fn authorization(
        &self,
        http: &reqwest::Client,
        limits: CallLimits,
        (source, settings): (&Source, &CallSettings),
        caller: Option<OnBehalf<'_>>,
    ) -> Result<Option<Arc<str>>, CallResult> {
        let (client, grant) = match (&settings.auth, caller) {
            (UpstreamAuth::Static, _) => return Ok(None),
            (UpstreamAuth::ClientCredentials(client), _) => (client, Grant::ClientCredentials),
            (UpstreamAuth::TokenExchange(client), Some(caller)) => (
                client,
                Grant::Exchange {
                    subject_token: caller.token,
                },
            ),
            (UpstreamAuth::TokenExchange(_), None) => {
                return Err(CallResult::failure(
                    CallOutcome::NotExecutable,
                    "this tool's upstream is called with a token exchanged for the caller's, \
                     and this call has no caller",
                    None,
                ));
            }
        };
        let name = settings.auth.grant();
        let identity = match grant {
            Grant::Exchange { .. } => caller.map(|caller| caller.identity),
            Grant::ClientCredentials => None,
        };
        let key = key(name, &source.id, &settings.auth_digest, identity);
        let cap = caller
            .and_then(|caller| caller.expires_at)
            .filter(|_| identity.is_some());
        let issue = || self.issue(http, limits, (source, name), client, grant, cap);
        match self.cache.get(key, issue).await {
            Ok((authorization, got)) => {
                if got == Got::Cached
                    && let Some(metrics) = &self.metrics
                {
                    metrics.cache_hit(&source.id, name);
                }
                Ok(Some(authorization))
            }
            Err(failure) => Err(failed(name, failure)),
        }
    }

    /// Asks the endpoint, counts the outcome, and says how long the token may be used.
    async fn issue(
        &self,
        http: &reqwest::Client,
        limits: CallLimits,
        (source, name): (&Source, &'static str),
        client: &TokenClient,
        grant: Grant<'_>,
        caller_expires_at: Option<i64>,
    ) -> Result<(Arc<str>, Duration), TokenFailure> {
        let answer = endpoint::request(http, client, grant, limits.timeout).await;
        let outcome = match &answer {
            Ok(_) => TokenOutcome::Issued,
            Err(TokenFailure::Refused { .. }) => TokenOutcome::Refused,
            Err(_) => TokenOutcome::Failed,
        };
        if let Some(metrics) = &self.metrics {
            metrics.request(&source.id, name, outcome);
        }
        match &answer {
            Ok(_) => tracing::debug!(source = %source.id, grant = name, "upstream token issued"),
            Err(failure) => tracing::warn!(
                source = %source.id,
                grant = name,
                failure = %describe(failure),
                "no upstream token: the call is not made"
            ),
        }
        let issued = answer?;
        let usable = usable_for(
            issued.lifetime,
            caller_expires_at,
            self.cache.clock().unix_now(),
        );
        Ok((Arc::from(format!("Bearer {}", issued.access_token)), usable))
    }
}

/// How long a token that lives `lifetime` is used: until [`EXPIRY_MARGIN`] (or a tenth of its
/// life) before it expires, and never past the caller's own token (`caller_expires_at`).
fn usable_for(lifetime: Option<Duration>, caller_expires_at: Option<i64>, now: i64) -> Duration {
    let lifetime = lifetime.unwrap_or(UNSTATED_LIFETIME);
    let margin = EXPIRY_MARGIN.min(lifetime / 10);
    let mut usable = lifetime.saturating_sub(margin).min(LONGEST_USE);
    if let Some(exp) = caller_expires_at {
        let left = u64::try_from(exp.saturating_sub(now)).unwrap_or(0);
        usable = usable.min(Duration::from_secs(left));
    }
    usable
}

/// The cache key: the grant, the source, a digest of its `auth` config as it is now, and the
/// identity a token exchange was made for. Length-prefixed parts, so no two inputs hash alike.
fn key(grant: &str, source_id: &str, auth_digest: &[u8; 32], identity: Option<&str>) -> cache::Key {
    let mut hasher = blake3::Hasher::new();
    for part in [
        grant.as_bytes(),
        source_id.as_bytes(),
        auth_digest,
        identity.unwrap_or("").as_bytes(),
    ] {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    *hasher.finalize().as_bytes()
}

/// The call's result when no token could be had. An OAuth error code is the endpoint's own
/// answer and is passed on; anything else is told in the gateway's words, the cause logged.
fn failed(grant: &str, failure: TokenFailure) -> CallResult {
    let what = match grant {
        "token_exchange" => "the token exchange for this call",
        _ => "the token request for this call",
    };
    match failure {
        TokenFailure::Refused { code, .. } => CallResult::failure(
            CallOutcome::ToolError,
            format!("the token endpoint refused {what} ({code}); nothing was sent upstream"),
            None,
        ),
        TokenFailure::Timeout => CallResult::hidden(
            CallOutcome::Timeout,
            format!("the token endpoint did not answer {what} in time"),
            None,
        ),
        TokenFailure::Unreachable(cause) => CallResult::hidden(
            CallOutcome::Unreachable,
            format!("the token endpoint could not be reached: {cause}"),
            None,
        ),
        TokenFailure::Bad { message, status } => CallResult::hidden(
            CallOutcome::BadUpstream,
            format!("the token endpoint's answer is unusable: {message}"),
            status,
        ),
    }
}

/// A failure for the log: never a token, a secret or the endpoint's URL.
fn describe(failure: &TokenFailure) -> String {
    match failure {
        TokenFailure::Refused { code, status } => format!("refused: {code} (HTTP {status})"),
        TokenFailure::Timeout => "timed out".to_owned(),
        TokenFailure::Unreachable(cause) => format!("unreachable: {cause}"),
        TokenFailure::Bad { message, status } => match status {
            Some(status) => format!("{message} (HTTP {status})"),
            None => message.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_used_until_shortly_before_they_expire() {
        let secs = Duration::from_secs;
        assert_eq!(usable_for(Some(secs(3600)), None, 0), secs(3570));
        assert_eq!(usable_for(Some(secs(100)), None, 0), secs(90));
        assert_eq!(usable_for(None, None, 0), secs(54));
        assert_eq!(usable_for(Some(secs(3600)), Some(1_000), 900), secs(100));
        assert_eq!(usable_for(Some(secs(3600)), Some(800), 900), secs(0));
        assert_eq!(usable_for(Some(secs(u64::MAX)), None, 0), LONGEST_USE);
    }

    #[test]
    fn keys_part_identities_grants_and_configs() {
        let digest = |auth: serde_json::Value| {
            let source: Source = serde_json::from_value(serde_json::json!(
                {"id": "s", "name": "s", "type": "mcp", "config": {"url": "http://x", "auth": auth}}))
            .expect("a source");
            CallSettings::of(&source).auth_digest
        };
        let a = digest(serde_json::json!({"type": "token_exchange", "client_id": "1"}));
        let b = digest(serde_json::json!({"type": "token_exchange", "client_id": "2"}));
        let ka = key("token_exchange", "s", &a, Some("alice"));
        assert_ne!(ka, key("token_exchange", "s", &a, Some("bob")));
        assert_ne!(ka, key("token_exchange", "s", &b, Some("alice")));
        assert_ne!(ka, key("client_credentials", "s", &a, Some("alice")));
        assert_ne!(ka, key("token_exchange", "t", &a, Some("alice")));
        assert_eq!(ka, key("token_exchange", "s", &a, Some("alice")));
    }

    #[test]
    fn only_an_oauth_error_code_reaches_the_agent() {
        let refused = failed(
            "token_exchange",
            TokenFailure::Refused {
                code: "invalid_grant".to_owned(),
                status: 400,
            },
        );
        assert_eq!(refused.outcome, CallOutcome::ToolError);
        let text = refused.result["content"][0]["text"].as_str().expect("text");
        assert!(
            text.contains("invalid_grant") && text.contains("exchange"),
            "{text}"
        );
        let unreachable = failed(
            "client_credentials",
            TokenFailure::Unreachable("http://secret@idp".to_owned()),
        );
        assert!(
            unreachable.result.is_null(),
            "told by Upstream in its own words"
        );
    }
}
