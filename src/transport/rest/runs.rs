//! `POST /runs`, `GET`/`DELETE /runs/{id}`, `POST /runs/{id}/calls` and `GET /admin/runs`
//! (docs/runs.md): the wire of the run use cases in [`crate::app`].

use axum::Json;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::{AdminDesk, RunDenied};
use crate::domain::field_error::{ErrorKind, FieldError};
use crate::service::Caller;
use crate::service::runs::{RunFilter, StartError};
use crate::transport::AppState;
use crate::transport::errors::ApiError;
use crate::transport::extract::OptionalJsonBody;

pub(crate) fn routes() -> axum::Router<AppState> {
    crate::transport::routes::router([
        ("/runs", post(start)),
        ("/runs/{id}", get(status).delete(end)),
        ("/runs/{id}/calls", post(report)),
        ("/admin/runs", get(list)),
    ])
}

impl From<RunDenied> for ApiError {
    fn from(denied: RunDenied) -> ApiError {
        let invalid = |field: String, message: String| {
            ApiError::Invalid(vec![FieldError {
                field,
                message,
                kind: ErrorKind::Invalid,
            }])
        };
        match denied {
            RunDenied::Limited(limited) => ApiError::from(limited),
            RunDenied::Start(StartError::Invalid { field, message })
            | RunDenied::Invalid { field, message } => invalid(field, message),
            RunDenied::Start(StartError::TooMany(detail)) => ApiError::TooManyRequests {
                detail,
                retry_after_secs: 60,
            },
            RunDenied::Start(StartError::Unavailable(detail)) | RunDenied::Unavailable(detail) => {
                ApiError::Unavailable(detail)
            }
            denied @ RunDenied::NotFound(_) => ApiError::NotFound(denied.to_string()),
            RunDenied::Forbidden(detail) => ApiError::Forbidden(detail),
        }
    }
}

/// `POST /runs`: `201` with the run and its token (never cached).
async fn start(
    axum::extract::State(state): axum::extract::State<AppState>,
    caller: Caller,
    OptionalJsonBody(body): OptionalJsonBody<Value>,
) -> Result<Response, ApiError> {
    let body = body.unwrap_or_else(|| json!({}));
    let started = state.app.start_run(&caller, &body).await?;
    let mut response = (StatusCode::CREATED, Json(started.to_json())).into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

async fn status(
    axum::extract::State(state): axum::extract::State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.app.run_status(&caller, &id).await?))
}

async fn end(
    axum::extract::State(state): axum::extract::State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let ended = state.app.end_run(&caller, &id).await?;
    Ok(Json(json!({"run_id": id, "ended": ended})))
}

async fn report(
    axum::extract::State(state): axum::extract::State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let body = body.unwrap_or(Value::Null);
    Ok(Json(state.app.report_call(&caller, &id, &body).await?))
}

/// `GET /admin/runs?sub=&active=true`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    sub: Option<String>,
    #[serde(default)]
    active: Option<String>,
}

async fn list(
    desk: AdminDesk,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|error| ApiError::Malformed(error.body_text()))?;
    let active = match query.active.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::Malformed(
                "active must be true or false".to_owned(),
            ));
        }
    };
    let filter = RunFilter {
        sub: query.sub,
        active,
    };
    let runs = desk.runs(&filter).await?;
    Ok(Json(json!({"runs": runs})))
}
