//! HTML answers that need no session: the response wrapper, the document head, the error page.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

/// An HTML answer.
pub(super) fn html_response(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        markup.into_string(),
    )
        .into_response()
}

pub(super) fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · toolgate console" }
            link rel="stylesheet" href="/console/assets/console.css";
            script src="/console/assets/console.js" defer {}
        }
    }
}

/// A page with only a message (no session needed).
pub(super) fn error_page(title: &str, message: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                main {
                    h1 { (title) }
                    p.error role="alert" { (message) }
                    p { a href="/console/" { "Back to the console" } }
                }
            }
        }
    }
}

pub(super) async fn not_found() -> Response {
    html_response(
        StatusCode::NOT_FOUND,
        error_page("Not found", "There is no such console page."),
    )
}
