//! Every error response, in one place: RFC 9457 problem JSON
//! (`application/problem+json`) with a stable `type`, a human `detail`, and for validation
//! problems the list of `errors`, each with the field path.
//!
//! Handlers return [`ApiError`]; nothing else writes an error body. Internal failures are logged
//! with the request id and answered with a generic message: no stack trace, panic text or
//! internal detail ever reaches a client.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::auth::AuthError;
use crate::domain::validate::FieldError;
use crate::service::WriteError;
use crate::store::StoreError;

/// An error that becomes a problem-JSON response.
#[derive(Debug)]
pub enum ApiError {
    /// The body is not JSON at all (syntax), or a query parameter is malformed: 400.
    Malformed(String),
    /// A body of the wrong shape where the protocol says 400, not 422 (AuthZEN: "a required
    /// attribute omitted is a Bad Request"): 400 with field errors.
    BadRequest(Vec<FieldError>),
    /// Well-formed but invalid content: 422 with field errors.
    Invalid(Vec<FieldError>),
    /// An id or name clash: 409, with field errors when there are some.
    Conflict(String, Vec<FieldError>),
    NotFound(String),
    /// The path is known but not with this method: 405 (the router adds `Allow`).
    MethodNotAllowed(String),
    /// The client does not accept any representation the endpoint gives (MCP's GET stream
    /// without `text/event-stream` in `Accept`): 406.
    NotAcceptable(String),
    /// A body in a media type the endpoint does not read: 415.
    UnsupportedMediaType(String),
    /// The limit, and what to do instead where there is a better way (a source's document).
    PayloadTooLarge(usize, Option<&'static str>),
    Unauthorized(AuthError),
    Forbidden(String),
    /// An upstream the gateway fetched from (an OpenAPI URL, an MCP server) failed or answered
    /// with something unusable: 502, with the cause.
    BadGateway(String),
    /// A limit on concurrent use was reached: 429 with `Retry-After` (seconds).
    TooManyRequests {
        detail: String,
        retry_after_secs: u64,
    },
    /// A conditional write (`If-Match`) whose revision the catalog is no longer at: 412.
    PreconditionFailed(String),
    /// A backing store cannot be reached: 503.
    Unavailable(String),
    /// A bug; the message is logged, never sent.
    Internal(String),
}

/// What an internal error was about: carried by its response to [`log_internal`], so that it
/// is logged once, by a middleware inside the request's span (with its request id), whatever
/// produced the response.
#[derive(Debug, Clone)]
pub struct InternalCause(pub String);

/// Logs the cause of an internal-error response.
pub fn log_internal<B>(response: axum::http::Response<B>) -> axum::http::Response<B> {
    if let Some(InternalCause(message)) = response.extensions().get::<InternalCause>() {
        tracing::error!(%message, "internal error");
    }
    response
}

/// The body of every error response (RFC 9457), as sent; also its OpenAPI schema.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Problem<'a> {
    /// `urn:toolgate:problem:<kind>`, stable per kind of error.
    #[serde(rename = "type")]
    #[schema(example = "urn:toolgate:problem:validation")]
    kind: &'a str,
    #[schema(example = "Invalid request")]
    title: &'a str,
    /// The HTTP status code.
    #[schema(example = 422)]
    status: u16,
    /// What went wrong, for a human.
    detail: String,
    /// For validation problems (422) and some conflicts (409): each problem with its field path.
    #[serde(skip_serializing_if = "Option::is_none")]
    errors: Option<Vec<ProblemField<'a>>>,
}

/// One problem with one field of a request body.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ProblemField<'a> {
    /// The path of the field, such as `claim_matchers[0].operator`; empty for the whole body.
    #[schema(example = "claim_matchers[0].operator")]
    field: &'a str,
    #[schema(example = "unknown operator 'eq'")]
    message: &'a str,
}

impl ApiError {
    pub(crate) fn status_and_type(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::Malformed(_) | ApiError::BadRequest(_) => {
                (StatusCode::BAD_REQUEST, "malformed", "Malformed request")
            }
            ApiError::Invalid(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation",
                "Invalid request",
            ),
            ApiError::Conflict(..) => (StatusCode::CONFLICT, "conflict", "Conflict"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not-found", "Not found"),
            ApiError::MethodNotAllowed(_) => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
            ),
            ApiError::NotAcceptable(_) => (
                StatusCode::NOT_ACCEPTABLE,
                "not-acceptable",
                "Not acceptable",
            ),
            ApiError::UnsupportedMediaType(_) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Unsupported media type",
            ),
            ApiError::PayloadTooLarge(..) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload-too-large",
                "Payload too large",
            ),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", "Forbidden"),
            ApiError::BadGateway(_) => (StatusCode::BAD_GATEWAY, "bad-gateway", "Upstream failed"),
            ApiError::TooManyRequests { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-requests",
                "Too many requests",
            ),
            ApiError::PreconditionFailed(_) => (
                StatusCode::PRECONDITION_FAILED,
                "precondition-failed",
                "Precondition failed",
            ),
            ApiError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Service unavailable",
            ),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
            ),
        }
    }

    pub(crate) fn detail(&self) -> String {
        match self {
            ApiError::Malformed(detail)
            | ApiError::NotFound(detail)
            | ApiError::MethodNotAllowed(detail)
            | ApiError::NotAcceptable(detail)
            | ApiError::UnsupportedMediaType(detail)
            | ApiError::Forbidden(detail)
            | ApiError::BadGateway(detail)
            | ApiError::PreconditionFailed(detail)
            | ApiError::Unavailable(detail)
            | ApiError::TooManyRequests { detail, .. } => detail.clone(),
            ApiError::Invalid(errors)
            | ApiError::BadRequest(errors)
            | ApiError::Conflict(_, errors)
                if !errors.is_empty() =>
            {
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            }
            ApiError::Invalid(_) | ApiError::BadRequest(_) => "the request is invalid".to_owned(),
            ApiError::Conflict(detail, _) => detail.clone(),
            ApiError::PayloadTooLarge(limit, hint) => {
                let detail = format!("the request body is larger than the limit of {limit} bytes");
                match hint {
                    Some(hint) => format!("{detail}; {hint}"),
                    None => detail,
                }
            }
            ApiError::Unauthorized(error) => error.description().to_owned(),
            ApiError::Internal(_) => {
                "the server failed to handle the request; it has been logged".to_owned()
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, title) = self.status_and_type();
        let errors = match &self {
            ApiError::Invalid(errors)
            | ApiError::BadRequest(errors)
            | ApiError::Conflict(_, errors)
                if !errors.is_empty() =>
            {
                Some(
                    errors
                        .iter()
                        .map(|e| ProblemField {
                            field: &e.field,
                            message: &e.message,
                        })
                        .collect(),
                )
            }
            _ => None,
        };
        let type_uri = format!("urn:toolgate:problem:{kind}");
        let problem = Problem {
            kind: &type_uri,
            title,
            status: status.as_u16(),
            detail: self.detail(),
            errors,
        };
        let mut response = (status, Json(problem)).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let ApiError::Internal(message) = self {
            // Logged by [`log_internal`] in the request's span; never sent.
            response.extensions_mut().insert(InternalCause(message));
            return response;
        }
        if let ApiError::TooManyRequests {
            retry_after_secs, ..
        } = &self
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
        }
        if let ApiError::Unauthorized(error) = &self {
            let challenge = match error {
                AuthError::Missing => "Bearer".to_owned(),
                other => format!(
                    "Bearer error=\"invalid_token\", error_description=\"{}\"",
                    other.description()
                ),
            };
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
            }
        }
        response
    }
}

impl From<AuthError> for ApiError {
    fn from(error: AuthError) -> Self {
        match error {
            AuthError::RunUnavailable => ApiError::Unavailable(error.description().to_owned()),
            error => ApiError::Unauthorized(error),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(message) => ApiError::Unavailable(format!(
                "the catalog store is unavailable; nothing was changed ({message})"
            )),
            StoreError::RevisionConflict { .. } => {
                ApiError::Conflict(error.to_string(), Vec::new())
            }
            StoreError::Corrupt(message) => ApiError::Internal(message),
        }
    }
}

impl From<WriteError> for ApiError {
    fn from(error: WriteError) -> Self {
        match error {
            WriteError::NotFound { .. } => ApiError::NotFound(error.to_string()),
            WriteError::Invalid(errors) if WriteError::is_conflict(&errors) => {
                ApiError::Conflict("the change conflicts with the catalog".to_owned(), errors)
            }
            WriteError::Invalid(errors) => ApiError::Invalid(errors),
            WriteError::Conflict { reason, in_the_way } => ApiError::Conflict(reason, in_the_way),
            WriteError::Contended => ApiError::Conflict(error.to_string(), Vec::new()),
            WriteError::PreconditionFailed { .. } => {
                ApiError::PreconditionFailed(error.to_string())
            }
            WriteError::Store(error) => error.into(),
            error @ WriteError::Uncompilable(_) => ApiError::Unavailable(error.to_string()),
            WriteError::Internal(message) => ApiError::Internal(message),
        }
    }
}

impl From<crate::ingest::IngestError> for ApiError {
    fn from(error: crate::ingest::IngestError) -> Self {
        use crate::ingest::IngestError;
        match error {
            IngestError::NotImportable(message) => ApiError::Invalid(config_errors(&message)),
            IngestError::Upstream(message) | IngestError::Definition(message) => {
                ApiError::BadGateway(format!("the import failed; nothing was changed: {message}"))
            }
        }
    }
}

/// The field errors of a config the importer refused: its message names the config keys
/// (`config.spec: …; config.url: …`), each becomes an error at its key, said once.
fn config_errors(message: &str) -> Vec<FieldError> {
    message
        .split("; ")
        .fold(Vec::<String>::new(), |mut parts, part| {
            match parts.last_mut() {
                // A `; ` inside one key's message, not between two keys.
                Some(last) if !part.starts_with("config.") => {
                    last.push_str("; ");
                    last.push_str(part);
                }
                _ => parts.push(part.to_owned()),
            }
            parts
        })
        .into_iter()
        .map(|part| {
            let (field, message) = match part.split_once(": ") {
                Some((field, rest)) if field.starts_with("config.") && !field.contains(' ') => {
                    (field.to_owned(), rest.to_owned())
                }
                _ => ("config".to_owned(), part),
            };
            FieldError {
                field,
                message,
                kind: crate::domain::validate::ErrorKind::Invalid,
            }
        })
        .collect()
}

impl From<crate::service::CommandError> for ApiError {
    fn from(error: crate::service::CommandError) -> Self {
        use crate::service::CommandError;
        match error {
            CommandError::Ingest(error) => error.into(),
            CommandError::Write(error) => error.into(),
        }
    }
}

impl From<crate::service::impact::ImpactError> for ApiError {
    fn from(error: crate::service::impact::ImpactError) -> Self {
        use crate::service::impact::ImpactError;
        match error {
            ImpactError::Command(error) => error.into(),
            busy @ ImpactError::Busy {
                retry_after_secs, ..
            } => ApiError::TooManyRequests {
                detail: busy.to_string(),
                retry_after_secs,
            },
        }
    }
}

/// A read the caller may not make: 403, except a subject named without claims, which is a
/// malformed request (400). Transports that answer with field paths map it themselves.
impl From<crate::app::Denied> for ApiError {
    fn from(denied: crate::app::Denied) -> Self {
        match denied {
            crate::app::Denied::Limited(limited) => limited.into(),
            crate::app::Denied::Refused(refusal) => refusal.into(),
        }
    }
}

impl From<crate::app::BackupError> for ApiError {
    fn from(error: crate::app::BackupError) -> Self {
        match error {
            crate::app::BackupError::Limited(limited) => limited.into(),
            crate::app::BackupError::Store(error) => error.into(),
        }
    }
}

impl From<crate::app::ImpactDenied> for ApiError {
    fn from(error: crate::app::ImpactDenied) -> Self {
        match error {
            crate::app::ImpactDenied::Limited(limited) => limited.into(),
            crate::app::ImpactDenied::Impact(error) => error.into(),
        }
    }
}

impl From<crate::service::Refusal> for ApiError {
    fn from(refusal: crate::service::Refusal) -> Self {
        use crate::service::Refusal;
        match refusal {
            Refusal::ClaimsRequired { .. } => ApiError::Malformed(refusal.to_string()),
            Refusal::AdminOption(_) | Refusal::ForeignClaims | Refusal::AdminRoute => {
                ApiError::Forbidden(refusal.to_string())
            }
        }
    }
}

/// A stream that was not opened.
impl From<crate::stream::OpenError> for ApiError {
    fn from(error: crate::stream::OpenError) -> Self {
        use crate::stream::{OpenError, SubscribeError};
        match error {
            OpenError::Limited(limited) => limited.into(),
            OpenError::Refused(refusal) => refusal.into(),
            OpenError::Explain => ApiError::Malformed(error.to_string()),
            OpenError::Subscribe(error @ SubscribeError::TooManyStreams { .. }) => {
                ApiError::TooManyRequests {
                    detail: error.to_string(),
                    retry_after_secs: STREAM_RETRY_AFTER_SECS,
                }
            }
            OpenError::Subscribe(error @ SubscribeError::ShuttingDown) => {
                ApiError::Unavailable(error.to_string())
            }
        }
    }
}

/// How long a client refused for too many streams should wait before retrying, seconds.
const STREAM_RETRY_AFTER_SECS: u64 = 5;

impl From<crate::service::limits::Limited> for ApiError {
    fn from(limited: crate::service::limits::Limited) -> Self {
        ApiError::TooManyRequests {
            detail: limited.to_string(),
            retry_after_secs: limited.retry_after_secs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024)
            .await
            .expect("body");
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    /// A panic while preparing or committing a write is a bug: 500 with nothing from the panic
    /// in the body, whatever layer reported it.
    #[tokio::test]
    async fn internal_failures_are_500_with_a_generic_body() {
        let secret = "panicked at src/domain/validate.rs:42: index out of bounds";
        let cases = [
            (
                "write task",
                ApiError::from(WriteError::Internal(secret.to_owned())),
            ),
            (
                "corrupt store",
                ApiError::from(WriteError::Store(StoreError::Corrupt(secret.to_owned()))),
            ),
            ("internal", ApiError::Internal(secret.to_owned())),
        ];
        for (name, error) in cases {
            let response = error.into_response();
            assert_eq!(
                response.status(),
                StatusCode::INTERNAL_SERVER_ERROR,
                "case: {name}"
            );
            assert_eq!(
                response.headers().get(header::CONTENT_TYPE),
                Some(&HeaderValue::from_static("application/problem+json")),
                "case: {name}"
            );
            let body = body_of(response).await;
            let problem: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(
                problem["type"], "urn:toolgate:problem:internal",
                "case: {name}"
            );
            for leak in ["panicked", "validate.rs", "index out of bounds"] {
                assert!(!body.contains(leak), "case: {name}: {body}");
            }
        }
    }

    #[test]
    fn the_limited_problem_names_the_class_and_the_budget() {
        use crate::config::DEFAULT_ADMIN_WRITES;
        use crate::service::limits::{Limited, RouteClass};
        let limited = Limited {
            class: RouteClass::AdminWrites,
            budget: DEFAULT_ADMIN_WRITES,
            retry_after_secs: 2,
        };
        let ApiError::TooManyRequests {
            detail,
            retry_after_secs,
        } = ApiError::from(limited)
        else {
            panic!("a 429");
        };
        assert_eq!(retry_after_secs, 2);
        assert!(detail.contains("admin writes") && detail.contains("20 per second"));
    }
}
