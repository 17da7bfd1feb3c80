//! A real gateway in the test process, on a random port, with its own data dir, and an HTTP
//! client that speaks to it with real HS256 tokens.

use std::path::{Path, PathBuf};

use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use toolgate::auth::{AuthSettings, mint_hs256};
use toolgate::clock::{Clock, SystemClock};
use toolgate::config::{Secret, Settings};
use toolgate::server::{Running, start_with_clock};

pub const SECRET: &str = "integration-test-secret-of-32-bytes!";

pub struct Gateway {
    pub base: String,
    pub client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    running: Option<Running>,
    _dir: Option<tempfile::TempDir>,
}

/// A response, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status, showing the body when it is another; returns the reply.
    pub fn expect(self, status: StatusCode) -> Reply {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        self
    }

    /// Asserts a problem-JSON error with this status and returns the body.
    pub fn problem(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let body = self.json();
        assert_eq!(body["status"], json!(status));
        assert!(
            body["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("urn:toolgate:problem:"))
        );
        assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
        body
    }
}

/// The settings of a gateway on `data_dir` (embedded store) verifying tokens as `auth` says,
/// listening on a random port; every other setting at its default.
pub fn config(data_dir: &Path, auth: AuthSettings) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().expect("address"),
        data_dir: data_dir.to_path_buf(),
        jwt_secret: auth.hmac_secret.map(Secret::new),
        jwks_url: auth.jwks,
        jwt_issuer: auth.issuer,
        jwt_audience: auth.audience,
        jwt_leeway: auth.leeway,
        jwt_require_exp: auth.require_exp,
        jwks_refresh_interval: auth.jwks_refresh_interval,
        jwks_min_refetch_interval: auth.jwks_min_refetch_interval,
        ..Settings::default()
    }
}

pub fn hs_settings() -> AuthSettings {
    AuthSettings {
        hmac_secret: Some(SECRET.to_owned()),
        ..AuthSettings::default()
    }
}

impl Gateway {
    /// A gateway on a fresh data dir, accepting HS256 tokens signed with [`SECRET`].
    pub async fn start() -> Gateway {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut gateway = Gateway::start_with(config(dir.path(), hs_settings())).await;
        gateway._dir = Some(dir);
        gateway
    }

    pub async fn start_with(config: Settings) -> Gateway {
        Gateway::start_clocked(config, std::sync::Arc::new(SystemClock)).await
    }

    /// [`Gateway::start_with`] on `clock`, which the test moves by hand (expiries without
    /// sleeping).
    pub async fn start_clocked(config: Settings, clock: std::sync::Arc<dyn Clock>) -> Gateway {
        let (shutdown, signal) = oneshot::channel::<()>();
        let running = start_with_clock(config, clock, async move {
            let _ = signal.await;
        })
        .await
        .expect("the gateway starts");
        Gateway {
            base: format!("http://{}", running.addr),
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            shutdown: Some(shutdown),
            running: Some(running),
            _dir: None,
        }
    }

    /// The running server's state (the stream hub, the catalog service).
    pub fn state(&self) -> &toolgate::transport::AppState {
        &self.running.as_ref().expect("the gateway is running").state
    }

    pub fn data_dir(&self) -> Option<PathBuf> {
        self._dir.as_ref().map(|d| d.path().to_path_buf())
    }

    /// Stops serving and releases the store (so the data dir can be reopened).
    pub async fn stop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(running) = self.running.take() {
            let Running { task, state, .. } = running;
            drop(state);
            let _ = task.await;
        }
    }

    /// A token of an agent `sub` with the role `reader` (the test catalogs grant it tools).
    pub fn reader(sub: &str) -> String {
        Gateway::token(json!({"sub": sub, "roles": ["reader"]}))
    }

    pub fn token(claims: Value) -> String {
        let mut claims: Map<String, Value> = claims.as_object().expect("claims object").clone();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        claims.entry("exp").or_insert(json!(now + 600));
        claims.entry("iat").or_insert(json!(now));
        mint_hs256(SECRET, &claims).expect("mint")
    }

    pub fn admin() -> String {
        Gateway::token(json!({"sub": "admin-1", "roles": ["admin"]}))
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).expect("json"));
        }
        let response = request.send().await.expect("request reaches the gateway");
        Reply {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.bytes().await.expect("body").to_vec(),
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Reply {
        self.request(Method::GET, path, Some(token), None).await
    }

    pub async fn admin_send(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.request(method, path, Some(&Gateway::admin()), body)
            .await
    }

    /// Replaces the catalog (a [`Catalog`] or its JSON) and asserts it was accepted; the new
    /// revision.
    pub async fn put_catalog(&self, catalog: impl serde::Serialize) -> u64 {
        let reply = self
            .admin_send(
                Method::PUT,
                "/admin/catalog",
                Some(serde_json::to_value(catalog).expect("json")),
            )
            .await
            .expect(StatusCode::OK);
        reply.json()["revision"].as_u64().expect("revision")
    }

    /// The tool ids an agent with these claims sees.
    pub async fn tool_ids(&self, claims: Value, query: &str) -> Vec<String> {
        let reply = self
            .get(&format!("/agents/tools{query}"), &Gateway::token(claims))
            .await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|e| e["tool_id"].as_str().expect("tool_id").to_owned())
            .collect()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}
