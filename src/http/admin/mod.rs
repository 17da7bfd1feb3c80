//! The admin API (`/admin/...`): entity CRUD, tool toggles, group members, preview with
//! explanation, the whole catalog, the audit log. Every route requires the admin rule.

mod audit;
mod catalog;
pub(crate) use catalog::stamped;
mod crud;
mod entity;
mod preview;
mod tools;

use axum::Router;
use axum::http::{HeaderMap, HeaderName};
use axum::routing::{get, post};

use super::AppState;
use super::extract::Agent;
use crate::domain::model::{AccessPolicy, Label, Source, Tool, ToolGroup};
use crate::service::Actor;

/// The catalog revision a response reflects (writes: the revision they produced).
pub const REVISION_HEADER: HeaderName = HeaderName::from_static("x-catalog-revision");

pub fn routes() -> Router<AppState> {
    Router::new()
        .nest("/admin/sources", crud::routes::<Source>())
        .nest("/admin/tools", crud::routes::<Tool>())
        .nest("/admin/labels", crud::routes::<Label>())
        .nest("/admin/groups", crud::routes::<ToolGroup>())
        .nest("/admin/policies", crud::routes::<AccessPolicy>())
        .route("/admin/tools/{id}/enable", post(tools::enable))
        .route("/admin/tools/{id}/disable", post(tools::disable))
        .route("/admin/groups/{id}/tools", get(catalog::group_members))
        .route("/admin/preview", post(preview::preview))
        .route("/admin/catalog", get(catalog::read).put(catalog::replace))
        .route("/admin/audit", get(audit::list))
}

/// The audit identity of a request: the token's `sub` and the request id.
fn actor(agent: &Agent, headers: &HeaderMap) -> Actor {
    Actor {
        subject: agent.subject(),
        request_id: headers
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
    }
}
