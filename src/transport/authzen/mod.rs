//! The OpenID AuthZEN Authorization API 1.0 over HTTP: "may this subject call this tool?" for
//! executors that run tool calls, answered by the decision service
//! ([`crate::service::decisions`]) from the evaluation `GET /agents/tools` is built from, so
//! that listing and calling never disagree.
//!
//! - `POST /access/v1/evaluation`: one decision. A deny is `200 {"decision": false}` (or the
//!   configured deny status, for proxies that read any 2xx as allow).
//! - `POST /access/v1/evaluations`: a batch, with top-level defaults and
//!   `options.evaluations_semantic`.
//! - `POST /access/v1/search/resource`: the tools the subject may call, paged.
//! - `GET /.well-known/authzen-configuration`: where these are (no token).
//!
//! Handlers map only: read the body ([`request`]), settle whose claims are asked about
//! ([`request::claims_for`]: the caller's, or any with the admin rule), ask the service, write
//! the reply ([`reply`]). Every decision request takes one request from the subject's
//! `decisions` budget, and a batch one more for each distinct (claims, context) evaluation it
//! needs beyond the first: a batch costs what its work costs. A batch holds at most
//! [`MAX_BATCH_ITEMS`] items.

mod fields;
mod page;
pub mod reply;
pub mod request;

use std::time::Instant;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, HOST};
use axum::http::request::Parts as RequestParts;
use axum::http::uri::Authority;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use self::reply::{Configuration, Decision, Decisions, Page, SearchContext, SearchPage, ToolRef};
use self::request::Complete;
use super::AppState;
use super::errors::ApiError;
use super::extract::JsonValue;
use crate::app::DecisionDesk;
use crate::service::Caller;
use crate::service::decisions::{Answer, Question, Search, Semantic};

pub const EVALUATION: &str = "/access/v1/evaluation";
pub const EVALUATIONS: &str = "/access/v1/evaluations";
pub const SEARCH_RESOURCE: &str = "/access/v1/search/resource";
pub const CONFIGURATION: &str = "/.well-known/authzen-configuration";

/// The `endpoint` label of the decision metrics, per route.
pub const DECISION_ENDPOINTS: [&str; 2] = [EVALUATION_LABEL, EVALUATIONS_LABEL];
/// The metric label of `POST /access/v1/evaluation`.
const EVALUATION_LABEL: &str = "evaluation";
/// The metric label of `POST /access/v1/evaluations`.
const EVALUATIONS_LABEL: &str = "evaluations";
const SEARCH_ENDPOINT: &str = "search_resource";

/// Results on a search page when the request sets no `page.limit`.
pub const DEFAULT_PAGE_LIMIT: usize = 100;
/// The most results on one search page, whatever `page.limit` asks.
pub const MAX_PAGE_LIMIT: usize = 1000;
/// The most items one batch may hold: a batch is answered whole, in one request's time, so
/// its work must stay within what one request may take (more is a 400 at `evaluations`).
pub const MAX_BATCH_ITEMS: usize = 1000;

/// The decision routes (they need a token, and run under the request timeout).
pub fn routes() -> Router<AppState> {
    super::routes::router([
        (EVALUATION, post(evaluation)),
        (EVALUATIONS, post(evaluations)),
        (SEARCH_RESOURCE, post(search_resource)),
    ])
}

/// The discovery document, open like `/healthz`.
pub fn open_routes() -> Router<AppState> {
    super::routes::router([(CONFIGURATION, get(configuration))])
}

/// `POST /access/v1/evaluation`.
async fn evaluation(
    State(state): State<AppState>,
    agent: Caller,
    JsonValue(body): JsonValue,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let desk = state.app.decisions(&agent).await?;
    let parts = request::single(&body)?;
    let (answer, revision) = decide_one(&state, &desk, &parts, EVALUATION_LABEL, started)?;
    let status = match state.http.authz_deny_status {
        Some(status) if !answer.permitted => status,
        _ => StatusCode::OK,
    };
    Ok(no_store(
        (status, Json(Decision::new(answer, revision))).into_response(),
    ))
}

/// The one evaluation `parts` make, answered and counted at `endpoint`; and the revision.
fn decide_one(
    state: &AppState,
    desk: &DecisionDesk<'_>,
    parts: &request::Parts,
    endpoint: &'static str,
    started: Instant,
) -> Result<(Answer, u64), ApiError> {
    let complete = request::complete_single(parts)?;
    let (mut answers, revision) = decide(desk, &[complete], Semantic::ExecuteAll)?;
    let answer = answers.pop().ok_or_else(|| {
        ApiError::Internal("the decision service answered no question".to_owned())
    })?;
    record(state, endpoint, std::slice::from_ref(&answer), started);
    Ok((answer, revision))
}

/// `POST /access/v1/evaluations`. Without `evaluations` (or with an empty list), the request is
/// a single evaluation and is answered like one (always 200), as AuthZEN says.
async fn evaluations(
    State(state): State<AppState>,
    agent: Caller,
    JsonValue(body): JsonValue,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let desk = state.app.decisions(&agent).await?;
    let batch = request::batch(&body)?;
    if batch.items.is_empty() {
        let (answer, revision) =
            decide_one(&state, &desk, &batch.defaults, EVALUATIONS_LABEL, started)?;
        return Ok(no_store(
            Json(Decision::new(answer, revision)).into_response(),
        ));
    }
    let items = request::complete(&batch)?;
    let (answers, revision) = decide(&desk, &items, batch.semantic)?;
    record(&state, EVALUATIONS_LABEL, &answers, started);
    let evaluations = answers
        .into_iter()
        .map(|answer| Decision::new(answer, revision))
        .collect();
    Ok(no_store(Json(Decisions { evaluations }).into_response()))
}

/// The answers to `items`, each about the claims its subject stands for (403 or 400 at the
/// item's subject otherwise), and the revision answered at; 429 when the budget cannot pay
/// for the distinct evaluations they need.
fn decide(
    desk: &DecisionDesk<'_>,
    items: &[Complete<'_>],
    semantic: Semantic,
) -> Result<(Vec<Answer>, u64), ApiError> {
    let questions = items
        .iter()
        .map(|item| {
            Ok(Question {
                claims: request::claims_for(desk, item.subject, item.subject_at)?,
                scope: item.scope,
                action: item.action,
                resource_type: item.resource_type,
                tool_id: item.tool_id,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(desk.answer(&questions, semantic)?)
}

/// `POST /access/v1/search/resource`.
async fn search_resource(
    State(state): State<AppState>,
    agent: Caller,
    JsonValue(body): JsonValue,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let desk = state.app.decisions(&agent).await?;
    let search = request::search(&body)?;
    let key = page::request_key(&body, agent.sub());
    let after = search
        .token
        .as_deref()
        .map(|token| page::decode(&key, token))
        .transpose()?;
    let claims = request::claims_for(&desk, search.subject.as_ref(), "")?;
    let limit = search.limit.map_or(DEFAULT_PAGE_LIMIT, |limit| {
        usize::try_from(limit).map_or(MAX_PAGE_LIMIT, |limit| limit.min(MAX_PAGE_LIMIT))
    });
    let (found, revision) = desk.search(&Search {
        claims,
        scope: &search.scope,
        action: &search.action,
        resource_type: &search.resource_type,
        after: after.as_deref(),
        limit,
    });
    let next_token = if found.more {
        let last = found
            .tool_ids
            .last()
            .map(String::as_str)
            .or(after.as_deref())
            .unwrap_or_default();
        page::encode(&key, last)
    } else {
        String::new()
    };
    let reply = SearchPage {
        page: Page {
            next_token,
            count: found.tool_ids.len(),
            total: found.total,
        },
        context: SearchContext { revision },
        results: found.tool_ids.into_iter().map(ToolRef::new).collect(),
    };
    state
        .app
        .metrics()
        .decisions(SEARCH_ENDPOINT, 0, 0, started.elapsed());
    Ok(no_store(Json(reply).into_response()))
}

/// `GET /.well-known/authzen-configuration`: the endpoints as absolute URLs on the host the
/// request was sent to (`Host`, or the HTTP/2 authority), over `https` when a proxy in front
/// says so with `X-Forwarded-Proto`.
async fn configuration(request: RequestParts) -> Result<Response, ApiError> {
    let host = request
        .uri
        .authority()
        .map(Authority::as_str)
        .or_else(|| request.headers.get(HOST).and_then(|v| v.to_str().ok()))
        .ok_or_else(|| {
            ApiError::Malformed(
                "the request names no host (Host header), so the endpoints' URLs cannot be \
                 given"
                    .to_owned(),
            )
        })?;
    let authority = host
        .parse::<Authority>()
        .ok()
        .filter(|authority| !authority.as_str().contains('@'))
        .ok_or_else(|| {
            ApiError::Malformed(format!("the Host header '{host}' is not a host[:port]"))
        })?;
    let scheme = match request
        .headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(str::trim)
    {
        Some(proto) if proto.eq_ignore_ascii_case("https") => "https",
        _ => "http",
    };
    let base = format!("{scheme}://{authority}");
    Ok(Json(Configuration::at(&base)).into_response())
}

/// Counts a request's answers by result, and its time.
fn record(state: &AppState, endpoint: &'static str, answers: &[Answer], started: Instant) {
    let permits = answers.iter().filter(|answer| answer.permitted).count() as u64;
    let denies = answers.len() as u64 - permits;
    state
        .app
        .metrics()
        .decisions(endpoint, permits, denies, started.elapsed());
}

/// Decisions hold for one revision and one subject: no cache in between keeps them.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
