//! Every route the gateway serves, in one table that the router and the OpenAPI document both
//! read. The router registers a route only through [`route`], which refuses (at start, before
//! anything is served) a path the table does not list; the document describes exactly the
//! table's paths and methods (`tests/it/openapi.rs` checks both, and that a method the table
//! does not list for a path is answered 405). So a route cannot be served undocumented, nor
//! documented unserved.
//!
//! The `bench-routes` feature's routes are the one exception: they exist only in benchmark
//! builds and are deliberately left out of the table and the document.

use axum::Router;
use axum::routing::MethodRouter;

use super::AppState;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token (health, metrics, discovery documents).
    Open,
    /// A bearer token; admin routes also check the admin rule.
    Token,
}

/// One path and the methods it answers (lowercase, as in an OpenAPI path item).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub path: &'static str,
    pub methods: &'static [&'static str],
    pub access: Access,
}

const fn token(path: &'static str, methods: &'static [&'static str]) -> Route {
    Route {
        path,
        methods,
        access: Access::Token,
    }
}

const fn open(path: &'static str, methods: &'static [&'static str]) -> Route {
    Route {
        path,
        methods,
        access: Access::Open,
    }
}

const COLLECTION: &[&str] = &["get", "post"];
const ENTITY: &[&str] = &["get", "put", "patch", "delete"];

/// The table.
pub const ROUTES: &[Route] = &[
    token("/agents/tools", &["get"]),
    token("/api/agents/tools", &["get"]),
    token("/agents/tools/stream", &["get"]),
    token("/agents/stream", &["get"]),
    token("/api/agents/stream", &["get"]),
    token("/mcp", &["get", "post", "delete"]),
    open("/.well-known/oauth-protected-resource", &["get"]),
    open("/.well-known/oauth-protected-resource/mcp", &["get"]),
    token("/access/v1/evaluation", &["post"]),
    token("/access/v1/evaluations", &["post"]),
    token("/access/v1/search/resource", &["post"]),
    open("/.well-known/authzen-configuration", &["get"]),
    // The credential is the subject token in the form, not a bearer header.
    open("/oauth/token", &["post"]),
    open("/.well-known/jwks.json", &["get"]),
    token("/runs", &["post"]),
    token("/runs/{id}", &["get", "delete"]),
    token("/runs/{id}/calls", &["post"]),
    token("/admin/runs", &["get"]),
    token("/admin/sources", COLLECTION),
    token("/admin/sources/{id}", ENTITY),
    token("/admin/tools", COLLECTION),
    token("/admin/tools/{id}", ENTITY),
    token("/admin/labels", COLLECTION),
    token("/admin/labels/{id}", ENTITY),
    token("/admin/groups", COLLECTION),
    token("/admin/groups/{id}", ENTITY),
    token("/admin/policies", COLLECTION),
    token("/admin/policies/{id}", ENTITY),
    token("/admin/sources/{id}/refresh", &["post"]),
    token("/admin/tools/{id}/enable", &["post"]),
    token("/admin/tools/{id}/disable", &["post"]),
    token("/admin/groups/{id}/tools", &["get"]),
    token("/admin/tools/{id}/groups", &["get"]),
    token("/admin/claim-sets", &["get"]),
    token("/admin/live", &["get"]),
    token("/admin/preview", &["post"]),
    token("/admin/impact", &["post"]),
    token("/admin/catalog", &["get", "put"]),
    token("/admin/audit", &["get"]),
    token("/admin/backup", &["post"]),
    token("/admin/revisions", &["get"]),
    token("/admin/revisions/{id}", &["get"]),
    token("/admin/revisions/{id}/approve", &["post"]),
    token("/admin/revisions/{id}/reject", &["post"]),
    open("/healthz", &["get"]),
    open("/readyz", &["get"]),
    open("/metrics", &["get"]),
    open("/openapi.json", &["get"]),
];

/// The table's entry for `path`.
pub fn of(path: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|route| route.path == path)
}

/// A router serving each `(path, handlers)`, each through [`route`].
pub(super) fn router<P: AsRef<str>>(
    routes: impl IntoIterator<Item = (P, MethodRouter<AppState>)>,
) -> Router<AppState> {
    routes
        .into_iter()
        .fold(Router::new(), |router, (path, handlers)| {
            route(router, path.as_ref(), handlers)
        })
}

/// `router` serving `path` with `handlers`. Panics when the table does not list `path`: a
/// programming error that stops the gateway at start (every test starts one), never a
/// request.
pub(super) fn route(
    router: Router<AppState>,
    path: &str,
    handlers: MethodRouter<AppState>,
) -> Router<AppState> {
    assert!(
        of(path).is_some(),
        "the route {path} is not in transport::routes::ROUTES: add it there (and so to the \
         OpenAPI document) before serving it"
    );
    router.route(path, handlers)
}
