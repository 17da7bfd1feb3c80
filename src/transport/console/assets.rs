//! The console's assets, compiled into the binary: the page needs nothing from anywhere else.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: [Asset; 2] = [
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../../assets/console/console.css"),
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../assets/console/console.js"),
    },
];

/// `GET /console/assets/{name}`: the file, revalidated by its content tag.
pub(super) async fn serve(Path(name): Path<String>, headers: HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|asset| asset.name == name) else {
        return super::html::not_found().await;
    };
    let tag = format!("\"{}\"", &blake3::hash(asset.body).to_hex()[..16]);
    let tag = HeaderValue::from_str(&tag).expect("hex digits are a valid header value");
    let cache = HeaderValue::from_static("no-cache");
    if headers.get(header::IF_NONE_MATCH) == Some(&tag) {
        return (
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, tag), (header::CACHE_CONTROL, cache)],
        )
            .into_response();
    }
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (header::ETAG, tag),
            (header::CACHE_CONTROL, cache),
        ],
        asset.body,
    )
        .into_response()
}
