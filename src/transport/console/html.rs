//! HTML answers that need no session: the response wrapper, the document head, the error page.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::domain::findings::normal::is_hidden_after;
use crate::domain::findings::visible;

/// An HTML answer. Every character a reader would not see (bidirectional controls, zero-width
/// and other format characters, variation selectors, tags) is shown as `U+XXXX` wherever it
/// is on the page: tool ids, names, titles, disabled reasons, source, group and policy names,
/// claim values all come from the catalog, an upstream or a caller, and `m:bidi\u{202E}txt.exe`
/// must not read as `m:bidiexe.txt` to the admin who decides about it. One pass over the whole
/// page, so that no string printed anywhere escapes it ([`visible`] never touches markup
/// characters). Text that is sent back (the JSON editors) is written with such characters as
/// JSON escapes ([`editable_json`]), which this pass leaves as they are.
pub(super) fn html_response(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        visible(&markup.into_string()),
    )
        .into_response()
}

/// JSON text for an editor whose content is sent back: each character a reader would not see
/// written as a `\uXXXX` escape (two, for one beyond U+FFFF), which reads back as the same
/// character. Meant for JSON (in a string, an escape is the character; outside one, such a
/// character is an error either way).
pub(super) fn editable_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous = None;
    for c in text.chars() {
        if is_hidden_after(previous, c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    out
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
