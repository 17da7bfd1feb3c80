//! The admin console (docs/console.md): HTML pages at `/console/`, served by the binary with every
//! asset embedded, over the same services the admin API uses. Whatever a page shows, an admin
//! API route shows too; whatever it writes, it writes as that API does (validation, audit with
//! the admin's `sub`, `If-Match` on the revision the page was rendered at).
//!
//! Pages are written in Rust with `maud` (escaped by construction) and work without script;
//! `assets/console/console.js` only refreshes regions that update by themselves.
//!
//! - [`session`]: sign-in with an admin token into a server-side session (an `HttpOnly`,
//!   `SameSite=Strict` cookie), re-checked on every request as the bearer token would be;
//!   origin and anti-CSRF checks on every write.
//! - [`html`]: HTML answers that need no session (the head, the error page); [`page`]: the
//!   shell of a signed-in page (navigation, sign-out) and errors shown in it.
//! - [`sign_in`], [`tools`], [`entities`] (groups, policies, sources, labels), [`impact`],
//!   [`view_as`], [`audit`], [`live`], [`revisions`]: the pages.
//!
//! Console routes are not in [`super::routes::ROUTES`]: that table is the JSON API the OpenAPI
//! document describes; these are HTML for people, and each one a console test drives.

mod assets;
mod audit;
mod entities;
mod form;
mod html;
mod impact;
mod live;
mod page;
mod revisions;
mod runs;
pub mod session;
mod sign_in;
pub mod sso;
mod tools;
mod view_as;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::Response;
use axum::routing::{get, post};

use super::AppState;

/// The console's own state: its sessions, and its single sign-on when an OIDC client is
/// configured.
pub struct Console {
    pub sessions: session::ConsoleSessions,
    pub sso: Option<sso::Sso>,
}

/// The policy of every console answer: nothing from another origin, no inline or evaluated
/// script, no framing, forms posting only here.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

/// Every console route, under `/console`, with the security headers on every answer (errors and
/// redirects included).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(sign_in::to_console))
        .route("/console/", get(sign_in::page))
        .route("/console/sign-in", post(sign_in::sign_in))
        .route("/console/sign-out", post(sign_in::sign_out))
        .route("/console/sso", get(sso::start))
        .route("/console/sso/callback", get(sso::callback))
        .route("/console/assets/{name}", get(assets::serve))
        .route("/console/tools", get(tools::list))
        .route("/console/tools/{id}", get(tools::show))
        .route(
            "/console/tools/{id}/disable",
            get(tools::confirm_disable).post(tools::disable),
        )
        .route(
            "/console/tools/{id}/enable",
            get(tools::confirm_enable).post(tools::enable),
        )
        .route("/console/view-as", get(view_as::page))
        .route("/console/audit", get(audit::page))
        .route("/console/live", get(live::page))
        .route("/console/live/fragment", get(live::fragment))
        .route("/console/runs", get(runs::list))
        .route("/console/runs/{id}", get(runs::show))
        .route("/console/runs/{id}/end", post(runs::end))
        .route("/console/revisions", get(revisions::list))
        .route(
            "/console/revisions/{id}",
            get(revisions::show).post(revisions::decide),
        )
        .route(
            "/console/sources/{id}/refresh",
            axum::routing::post(entities::refresh),
        )
        .route("/console/{collection}", get(entities::list))
        .route(
            "/console/{collection}/{id}",
            get(entities::show).post(entities::apply),
        )
        .route(
            "/console/{collection}/{id}/preview",
            post(entities::preview),
        )
        .layer(axum::middleware::map_response(security_headers))
}

/// The console's 404 (any path under `/console/` that no route serves), with its headers.
pub async fn not_found() -> Response {
    security_headers(html::not_found().await).await
}

/// `response` (an answer the router made for a console path) with the console's headers.
pub async fn with_security_headers(response: Response) -> Response {
    security_headers(response).await
}

async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // Pages show catalog state and identities: never kept by a shared or private cache.
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}
