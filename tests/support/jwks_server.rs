//! A JWKS endpoint served from the test process: replaceable document, request counter, and
//! an "unavailable" switch.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;

/// Serves a replaceable JWKS at `/jwks.json`, counts requests, and can play unavailable.
#[derive(Clone)]
pub struct JwksServer {
    pub addr: SocketAddr,
    state: Arc<ServerState>,
}

struct ServerState {
    document: Mutex<Value>,
    available: AtomicBool,
    requests: AtomicUsize,
}

impl JwksServer {
    pub async fn start(document: Value) -> Self {
        let state = Arc::new(ServerState {
            document: Mutex::new(document),
            available: AtomicBool::new(true),
            requests: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/jwks.json", get(serve_jwks))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("bound address");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("JWKS server") });
        Self { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}/jwks.json", self.addr)
    }

    pub fn serve(&self, document: Value) {
        *self.state.document.lock().expect("document lock") = document;
    }

    pub fn set_available(&self, available: bool) {
        self.state.available.store(available, Ordering::SeqCst);
    }

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}

async fn serve_jwks(State(state): State<Arc<ServerState>>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    if !state.available.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let body = state.document.lock().expect("document lock").to_string();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
