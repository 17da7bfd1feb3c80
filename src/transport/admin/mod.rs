//! The admin API (`/admin/...`): entity CRUD, tool toggles, group members, preview with
//! explanation, the whole catalog, the audit log. Every route requires the admin rule.

pub(crate) mod audit;
pub(crate) mod backup;
mod catalog;
mod conditional;
pub(crate) mod crud;
pub(crate) mod impact;
pub(crate) mod preview;
pub(crate) mod refresh;
pub(crate) mod revisions;
pub(crate) mod tools;

use std::borrow::Cow;

use axum::Router;
use axum::http::{HeaderMap, HeaderName};
use axum::routing::{get, post};

use self::crud::AdminEntity;
use super::AppState;
use crate::app::AdminDesk;
use crate::domain::model::{AccessPolicy, Label, Source, Tool, ToolGroup};
use crate::service::{Actor, ListFilter};
use crate::store::EntityKind;

/// The catalog revision a response reflects (writes: the revision they produced).
pub const REVISION_HEADER: HeaderName = HeaderName::from_static("x-catalog-revision");

/// One entity collection, `/admin/<kind>` and `/admin/<kind>/{id}`: what the router mounts and
/// what the OpenAPI document describes, from the same table ([`COLLECTIONS`]).
#[derive(Clone, Copy)]
pub struct Collection {
    pub kind: EntityKind,
    /// Singular, for operation ids and messages: `source`, `policy`, …
    pub noun: &'static str,
    pub filters: &'static [ListFilter],
    /// The name of the entity's schema among the document's components.
    pub schema_name: fn() -> Cow<'static, str>,
    routes: fn(&str) -> Router<AppState>,
}

impl Collection {
    const fn of<E: AdminEntity>() -> Collection {
        Collection {
            kind: E::KIND,
            noun: E::KIND.noun(),
            filters: E::FILTERS,
            schema_name: <E::Schema as utoipa::ToSchema>::name,
            routes: crud::routes::<E>,
        }
    }

    /// `/admin/sources`, …
    pub fn path(&self) -> String {
        format!("/admin/{}", self.kind.as_str())
    }
}

/// The five collections, in the order the API documents them.
pub const COLLECTIONS: [Collection; 5] = [
    Collection::of::<Source>(),
    Collection::of::<Tool>(),
    Collection::of::<Label>(),
    Collection::of::<ToolGroup>(),
    Collection::of::<AccessPolicy>(),
];

/// Every admin route. `state` is the one the routes will be served with: answers that do not
/// carry a revision of their own get the current one as their `ETag`.
pub fn routes(state: &AppState) -> Router<AppState> {
    let mut router = crate::transport::routes::router([
        ("/admin/sources/{id}/refresh", post(refresh::refresh)),
        ("/admin/tools/{id}/enable", post(tools::enable)),
        ("/admin/tools/{id}/disable", post(tools::disable)),
        ("/admin/groups/{id}/tools", get(catalog::group_members)),
        ("/admin/tools/{id}/groups", get(catalog::tool_groups)),
        ("/admin/claim-sets", get(catalog::claim_sets)),
        ("/admin/live", get(catalog::live)),
        ("/admin/preview", post(preview::preview)),
        ("/admin/impact", post(impact::impact)),
        ("/admin/catalog", get(catalog::read).put(catalog::replace)),
        ("/admin/audit", get(audit::list)),
        ("/admin/backup", post(backup::backup)),
        ("/admin/revisions", get(revisions::list)),
        ("/admin/revisions/{id}", get(revisions::read)),
        ("/admin/revisions/{id}/approve", post(revisions::approve)),
        ("/admin/revisions/{id}/reject", post(revisions::reject)),
    ]);
    for collection in COLLECTIONS {
        router = router.merge((collection.routes)(&collection.path()));
    }
    router.layer(axum::middleware::map_response_with_state(
        state.clone(),
        conditional::with_current_etag,
    ))
}

/// The audit identity of a request: the admin's `sub` and the request id.
pub(crate) fn actor(desk: &AdminDesk, headers: &HeaderMap) -> Actor {
    desk.actor(
        headers
            .get("x-request-id")
            .and_then(|value| value.to_str().ok()),
    )
}
