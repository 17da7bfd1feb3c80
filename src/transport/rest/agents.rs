//! `GET /agents/tools` (and its alias `/api/agents/tools`): the hot path.
//!
//! Token → claims → claims key → cached bytes: the `Caller` extractor verifies the token (from
//! memory, for a token seen before), the handler parses the options and asks
//! [`App::manifest`](crate::app::App::manifest), which charges the agent-read budget, applies
//! the read rules and computes and renders a manifest only on a miss.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::app::Coding;
use crate::service::Caller;
use crate::transport::AppState;
use crate::transport::chunks::Chunks;
use crate::transport::errors::ApiError;
use crate::transport::extract::{AcceptEncoding, IfNoneMatch, QueryPairs};
use crate::transport::read::read_request;

pub async fn list_tools(
    State(state): State<AppState>,
    agent: Caller,
    QueryPairs(pairs): QueryPairs,
    IfNoneMatch(if_none_match): IfNoneMatch,
    accept_encoding: AcceptEncoding,
) -> Result<Response, ApiError> {
    let read = read_request(&pairs)?;
    let served = state
        .app
        .manifest(&agent, read, accept_encoding.codings())
        .await?;
    Ok(manifest_response(
        served.parts(),
        served.etag(),
        served.coding(),
        &if_none_match,
    ))
}

/// The entity tag of the `coding` form of the representation whose tag is `etag`: a content
/// coding changes the bytes, so a strong tag must change with it (RFC 9110 section 8.8.3).
fn coded_etag(etag: &str, coding: Coding) -> String {
    match etag.strip_suffix('"') {
        Some(open) => format!("{open}-{}\"", coding.as_str()),
        None => etag.to_owned(),
    }
}

/// 200 with the body `parts` (in content coding `coding`, when given), or 304 when
/// `If-None-Match` already names this representation in any coding (they are the same content).
fn manifest_response(
    parts: [Bytes; 2],
    etag: &str,
    coding: Option<Coding>,
    if_none_match: &[HeaderValue],
) -> Response {
    let sent_etag = match coding {
        Some(coding) => coded_etag(etag, coding),
        None => etag.to_owned(),
    };
    let etag_value = HeaderValue::from_str(&sent_etag).unwrap_or(HeaderValue::from_static("\"\""));
    let cache_control = HeaderValue::from_static("private, no-cache");
    let vary = HeaderValue::from_static("accept-encoding");
    if if_none_match_hits(if_none_match, etag) {
        return (
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag_value),
                (header::CACHE_CONTROL, cache_control),
                (header::VARY, vary),
            ],
        )
            .into_response();
    }
    let mut response = (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::ETAG, etag_value),
            (header::CACHE_CONTROL, cache_control),
            (header::VARY, vary),
        ],
        Body::new(Chunks::new(parts)),
    )
        .into_response();
    if let Some(coding) = coding {
        response.headers_mut().insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(coding.as_str()),
        );
    }
    response
}

/// RFC 9110 `If-None-Match`: `*` or a list of entity tags compared weakly; the tag of a
/// compressed form names the same content as the plain one. Compared in place: this runs on
/// every manifest request.
fn if_none_match_hits(values: &[HeaderValue], etag: &str) -> bool {
    values
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|candidate| {
            let tag = candidate.trim_start_matches("W/");
            candidate == "*" || tag == etag || is_coded_tag(tag, etag)
        })
}

/// Whether `tag` is [`coded_etag`] of `etag` for one of the codings served.
fn is_coded_tag(tag: &str, etag: &str) -> bool {
    let (Some(tag), Some(open)) = (tag.strip_suffix('"'), etag.strip_suffix('"')) else {
        return false;
    };
    tag.strip_prefix(open)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|coding| Coding::ALL.iter().any(|c| c.as_str() == coding))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coded_tags_are_recognised_without_allocating() {
        let etag = "\"9f2c\"";
        for coding in Coding::ALL {
            assert!(is_coded_tag(&coded_etag(etag, coding), etag), "{coding:?}");
        }
        for other in [
            "\"9f2c-br\"",
            "\"9f2cd-gzip\"",
            "\"9f2-gzip\"",
            "\"9f2c-\"",
            "9f2c-gzip",
        ] {
            assert!(!is_coded_tag(other, etag), "{other}");
        }
        let values = [HeaderValue::from_static("\"x\", W/\"9f2c-zstd\"")];
        assert!(if_none_match_hits(&values, etag));
        assert!(!if_none_match_hits(
            &[HeaderValue::from_static("\"x\"")],
            etag
        ));
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
