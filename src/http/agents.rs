//! `GET /agents/tools` (and its alias `/api/agents/tools`): the hot path.
//!
//! Token → claims → claims key → cached bytes. On a hit the handler verifies the token (from
//! memory, for a token seen before), hashes the claims the policies read, does one cache lookup
//! and writes the stored bytes; the manifest is computed and rendered only on a miss, once per
//! (claims key, options, revision).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::field::Empty;

use super::AppState;
use super::errors::ApiError;
use super::extract::{Agent, IfNoneMatch, QueryPairs};
use super::limit::RouteClass;
use crate::auth::VerifiedToken;
use crate::cache::{CacheKey, RenderedManifest};
use crate::domain::claims::Claims;
use crate::domain::manifest::{Manifest, ManifestOptions};
use crate::domain::snapshot::Snapshot;

/// The query options of the agent endpoints, parsed strictly: an unknown parameter or a bad
/// boolean is a 400 that names it, so a typo (`groups=`) never silently widens a manifest.
#[derive(Debug, Default)]
pub struct AgentQuery {
    pub options: ManifestOptions,
    pub explain: bool,
}

impl AgentQuery {
    pub fn parse(pairs: &[(String, String)]) -> Result<AgentQuery, ApiError> {
        let mut query = AgentQuery::default();
        for (key, value) in pairs {
            match key.as_str() {
                "group" => extend(&mut query.options.groups, value),
                "tools" => extend(&mut query.options.tools, value),
                "state" => query.options.state = Some(value.clone()),
                "include_disabled" => query.options.include_disabled = boolean(key, value)?,
                "explain" => query.explain = boolean(key, value)?,
                other => {
                    return Err(ApiError::Malformed(format!(
                        "unknown query parameter '{other}'; expected group, state, tools, \
                         include_disabled or explain"
                    )));
                }
            }
        }
        Ok(query)
    }

    /// `include_disabled` and `explain` are for admins only.
    pub fn authorize(&self, agent: &Agent) -> Result<(), ApiError> {
        if (self.options.include_disabled || self.explain) && !agent.is_admin {
            return Err(ApiError::Forbidden(
                "include_disabled and explain require an admin token".to_owned(),
            ));
        }
        Ok(())
    }
}

/// Repeated list parameters (`group=a&group=b`) add up.
fn extend(list: &mut Option<Vec<String>>, value: &str) {
    list.get_or_insert_with(Vec::new)
        .extend(ManifestOptions::list(value));
}

fn boolean(key: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(ApiError::Malformed(format!(
            "query parameter '{key}' must be true or false, found '{other}'"
        ))),
    }
}

pub async fn list_tools(
    State(state): State<AppState>,
    agent: Agent,
    QueryPairs(pairs): QueryPairs,
    IfNoneMatch(if_none_match): IfNoneMatch,
) -> Result<Response, ApiError> {
    state.limit(RouteClass::AgentReads, &agent)?;
    let query = AgentQuery::parse(&pairs)?;
    query.authorize(&agent)?;
    let snapshot = state.catalog.snapshot();
    if query.explain {
        let explained = snapshot.explain(agent.claims(), &query.options);
        let body = with_explanation(&explained.manifest, &explained.explanation)?;
        return Ok(manifest_response(
            body,
            explained.manifest.etag(),
            &if_none_match,
        ));
    }
    let rendered = rendered_manifest(&state, &snapshot, &agent.token, query.options).await;
    Ok(manifest_response(
        rendered.body.clone(),
        &rendered.etag,
        &if_none_match,
    ))
}

/// How one resolution was served (the `cache` attribute of the `resolve` span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheOutcome {
    /// The rendered manifest was in this instance's cache.
    Hit,
    /// Rebuilt from an access decision another instance shared through Redis.
    Shared,
    /// The claims were evaluated here.
    Miss,
}

impl CacheOutcome {
    const fn name(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Shared => "shared",
            CacheOutcome::Miss => "miss",
        }
    }
}

/// The cached rendering of this agent's manifest, counted as one resolution (metrics, and a
/// `resolve` span saying how it was served and how many tools it holds).
pub async fn rendered_manifest(
    state: &AppState,
    snapshot: &Snapshot,
    token: &VerifiedToken,
    options: ManifestOptions,
) -> Arc<RenderedManifest> {
    let started = Instant::now();
    let span = tracing::debug_span!(
        "resolve",
        otel.name = "resolve manifest",
        revision = snapshot.revision(),
        cache = Empty,
        tools = Empty,
    );
    let (rendered, outcome) =
        crate::telemetry::in_span(&span, resolve(state, snapshot, token, options)).await;
    span.record("cache", outcome.name())
        .record("tools", rendered.tool_count);
    state
        .metrics
        .resolution(rendered.tool_count, rendered.denied, started.elapsed());
    rendered
}

/// On a miss: the access decision another instance shared for these claims at this revision
/// if there is one (no claim evaluation), else the claims evaluated here, and shared.
async fn resolve(
    state: &AppState,
    snapshot: &Snapshot,
    token: &VerifiedToken,
    options: ManifestOptions,
) -> (Arc<RenderedManifest>, CacheOutcome) {
    let claims = &token.claims;
    let key = CacheKey::new(snapshot, state.admin_rule.paths(), claims, options);
    let Some(shared) = &state.shared else {
        return local(state, snapshot, claims, key);
    };
    if let Some(hit) = state.cache.get(&key, snapshot.revision()) {
        return (hit, CacheOutcome::Hit);
    }
    let access = shared.access(&key.fingerprint, snapshot.revision()).await;
    let rebuilt = access
        .as_ref()
        .and_then(|access| snapshot.manifest_for_access(access, &key.options));
    let (rendered, outcome) = match rebuilt {
        Some(manifest) => (render(&manifest), CacheOutcome::Shared),
        None => {
            let (manifest, access) = snapshot.manifest_with_access(claims, &key.options);
            shared.remember(&key.fingerprint, access, snapshot);
            (render(&manifest), CacheOutcome::Miss)
        }
    };
    state.cache.insert(key, Arc::clone(&rendered));
    (rendered, outcome)
}

/// [`rendered_manifest`] without the shared cache and uncounted, for callers that cannot wait
/// (a stream resynchronising from inside its event loop, which holds the claims it shares with
/// its group rather than a token).
pub fn render_local(
    state: &AppState,
    snapshot: &Snapshot,
    claims: &Claims,
    options: ManifestOptions,
) -> Arc<RenderedManifest> {
    let key = CacheKey::new(snapshot, state.admin_rule.paths(), claims, options);
    local(state, snapshot, claims, key).0
}

/// `key` must be the key of `claims` at `snapshot`.
fn local(
    state: &AppState,
    snapshot: &Snapshot,
    claims: &Claims,
    key: CacheKey,
) -> (Arc<RenderedManifest>, CacheOutcome) {
    if let Some(hit) = state.cache.get(&key, snapshot.revision()) {
        return (hit, CacheOutcome::Hit);
    }
    let rendered = render(&snapshot.manifest(claims, &key.options));
    state.cache.insert(key, Arc::clone(&rendered));
    (rendered, CacheOutcome::Miss)
}

fn render(manifest: &Manifest<'_>) -> Arc<RenderedManifest> {
    Arc::new(RenderedManifest {
        body: manifest.to_json().into(),
        etag: manifest.etag().to_owned(),
        revision: manifest.revision(),
        tool_count: manifest.len(),
        denied: manifest.is_denied(),
    })
}

/// A manifest body followed by `"explanation": …`.
pub fn with_explanation(
    manifest: &Manifest<'_>,
    explanation: &crate::domain::explain::Explanation,
) -> Result<bytes::Bytes, ApiError> {
    let mut body = manifest.to_json();
    body.pop(); // the closing brace
    body.extend_from_slice(b",\"explanation\":");
    serde_json::to_writer(&mut body, explanation)
        .map_err(|error| ApiError::Internal(format!("cannot serialise an explanation: {error}")))?;
    body.push(b'}');
    Ok(body.into())
}

/// 200 with the body, or 304 when `If-None-Match` already names this etag.
fn manifest_response(body: bytes::Bytes, etag: &str, if_none_match: &[HeaderValue]) -> Response {
    let etag_value = HeaderValue::from_str(etag).unwrap_or(HeaderValue::from_static("\"\""));
    let cache_control = HeaderValue::from_static("private, no-cache");
    if if_none_match_hits(if_none_match, etag) {
        return (
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag_value),
                (header::CACHE_CONTROL, cache_control),
            ],
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::ETAG, etag_value),
            (header::CACHE_CONTROL, cache_control),
        ],
        Body::from(body),
    )
        .into_response()
}

/// RFC 9110 `If-None-Match`: `*` or a list of entity tags compared weakly.
fn if_none_match_hits(values: &[HeaderValue], etag: &str) -> bool {
    values
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn query_options_parse_and_add_up() {
        let query = AgentQuery::parse(&pairs(&[
            ("group", "a, b"),
            ("group", "c"),
            ("state", "research"),
            ("tools", ""),
            ("include_disabled", "true"),
        ]))
        .expect("valid");
        assert_eq!(
            query.options.groups,
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            query.options.tools,
            Some(vec![]),
            "an empty list keeps none"
        );
        assert_eq!(query.options.state.as_deref(), Some("research"));
        assert!(query.options.include_disabled);
    }

    #[test]
    fn unknown_parameters_and_bad_booleans_are_rejected() {
        for bad in [&[("groups", "a")][..], &[("include_disabled", "yes")][..]] {
            assert!(matches!(
                AgentQuery::parse(&pairs(bad)),
                Err(ApiError::Malformed(_))
            ));
        }
    }

    #[test]
    fn if_none_match_forms() {
        let listed = [
            HeaderValue::from_static("\"a\", W/\"b\""),
            HeaderValue::from_static("\"d\""),
        ];
        assert!(if_none_match_hits(&listed, "\"b\""));
        assert!(
            if_none_match_hits(&listed, "\"d\""),
            "a second header counts"
        );
        assert!(!if_none_match_hits(&listed, "\"c\""));
        assert!(if_none_match_hits(
            &[HeaderValue::from_static("*")],
            "\"c\""
        ));
        assert!(!if_none_match_hits(&[], "\"c\""));
    }
}
