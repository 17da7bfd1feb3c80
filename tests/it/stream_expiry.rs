//! A stream ends at its token's `exp` on the tokio clock: with the clock paused, an hour-long
//! token expires at once, for the SSE connection and the MCP watch alike, and never before
//! its time (the HTTP tests check the same with a token of two seconds, on the real clock).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use support::gateway::{config, hs_settings};
use toolgate::app::App;
use toolgate::auth::VerifiedToken;
use toolgate::service::{Caller, ReadRequest};
use toolgate::stream::{Connection, Notice, Opening, StreamClass, Watch};

const HOUR: i64 = 3_600;

/// An app on a fresh data dir, and a caller whose token expires in an hour.
async fn app_and_caller() -> (App, Caller, i64, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let app = App::build(&config(dir.path(), hs_settings()))
        .await
        .expect("the app builds");
    let exp = support::unix_now() + HOUR;
    let claims = json!({"sub": "hourly", "exp": exp});
    let token = VerifiedToken {
        claims: claims.as_object().cloned().expect("object").into(),
        expires_at: Some(exp),
        ..Default::default()
    };
    (app, Caller::new(Arc::new(token), false), exp, dir)
}

#[tokio::test(start_paused = true)]
async fn an_sse_stream_sends_token_expired_at_exp_and_ends() {
    let (app, caller, exp, _dir) = app_and_caller().await;
    let read = ReadRequest::default();
    let opened = app
        .open_stream(
            &caller,
            &read,
            StreamClass::Sse,
            toolgate::app::RunSurface::CurrentState,
        )
        .await
        .expect("opened");
    let started = tokio::time::Instant::now();
    let connection = Connection::new(
        opened.subscription,
        opened.render,
        Opening {
            resumed: false,
            rendered: opened.rendered,
        },
        Duration::from_secs(15),
        opened.expiry,
    );
    let events: Vec<String> = connection
        .into_stream()
        .map(|bytes| String::from_utf8(bytes.expect("bytes").to_vec()).expect("UTF-8"))
        .collect()
        .await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(HOUR as u64 - 1),
        "not before exp: {waited:?}"
    );
    assert!(events[0].contains("event: tools\n"), "{}", events[0]);
    let last = events.last().expect("events");
    assert!(
        last.starts_with("event: token_expired\n") && last.contains(&format!("{{\"exp\":{exp}}}")),
        "{last}"
    );
    let pings = events
        .iter()
        .filter(|event| event.starts_with(": ping"))
        .count();
    assert!(pings >= 200, "kept alive while waiting: {pings} pings");
    assert_eq!(
        app.internals().hub.subscriber_count(),
        0,
        "the ended stream left the hub"
    );
}

#[tokio::test(start_paused = true)]
async fn an_mcp_watch_tells_of_expiry_at_exp_and_ends() {
    let (app, caller, _exp, _dir) = app_and_caller().await;
    let read = ReadRequest::default();
    let opened = app
        .open_stream(
            &caller,
            &read,
            StreamClass::Mcp,
            toolgate::app::RunSurface::CurrentState,
        )
        .await
        .expect("opened");
    let started = tokio::time::Instant::now();
    let mut watch = Watch::new(
        opened.subscription,
        opened.render,
        &opened.rendered.etag,
        None,
        Duration::from_secs(15),
        opened.expiry,
        None,
    );
    let mut last = None;
    while let Some(notice) = watch.next().await {
        last = Some(notice);
    }
    assert!(matches!(last, Some(Notice::Expired)), "{last:?}");
    assert!(started.elapsed() >= Duration::from_secs(HOUR as u64 - 1));
}
