//! Upstreams for the ingestion and call tests: a tiny HTTP server that serves one OpenAPI
//! document (which a test can swap or break), an HTTP server that echoes what it receives, and
//! a real MCP server (the official Python SDK) on a free port.

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Map, Value, json};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn read_fixture(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).expect("fixture")
}

/// Starts an HTTP server that answers every request with what it received (`method`, `path`,
/// `query`, `headers`, `body` as text, in JSON), except a few misbehaving routes:
/// `/api/missing` (404 "no such thing"), `/api/slow` (5 s), `/api/large` (100,000 bytes with a
/// length), `/api/large-stream` (100,000 bytes without). Returns its URL with `/api`.
pub async fn echo_server() -> String {
    async fn echo(request: Request) -> axum::Json<Value> {
        let (parts, body) = request.into_parts();
        let body = axum::body::to_bytes(body, 1 << 20).await.expect("a body");
        let mut headers = Map::new();
        for (name, value) in &parts.headers {
            headers.insert(
                name.as_str().to_owned(),
                json!(value.to_str().unwrap_or("(not text)")),
            );
        }
        axum::Json(json!({
            "method": parts.method.as_str(),
            "path": parts.uri.path(),
            "query": parts.uri.query(),
            "headers": headers,
            "body": String::from_utf8_lossy(&body),
        }))
    }
    let app = Router::new()
        .route(
            "/api/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such thing") }),
        )
        .route(
            "/api/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route("/api/large", get(|| async { "x".repeat(100_000) }))
        .route(
            "/api/large-stream",
            get(|| async {
                let chunks = (0..100).map(|_| Ok::<_, std::io::Error>(vec![b'y'; 1000]));
                Body::from_stream(futures_util::stream::iter(chunks))
            }),
        )
        .fallback(echo);
    format!("{}/api", serve(app).await)
}

/// Serves `app` on a random loopback port in the background; returns `http://127.0.0.1:PORT`.
pub async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// Serves `GET /spec` with the current document, or 500 when it is `None`.
pub struct SpecServer {
    pub url: String,
    document: Arc<Mutex<Option<String>>>,
}

impl SpecServer {
    pub async fn start(document: &str) -> SpecServer {
        let shared = Arc::new(Mutex::new(Some(document.to_owned())));
        let app = Router::new()
            .route(
                "/spec",
                get(|State(doc): State<Arc<Mutex<Option<String>>>>| async move {
                    match doc.lock().expect("lock").clone() {
                        Some(text) => (StatusCode::OK, text),
                        None => (StatusCode::INTERNAL_SERVER_ERROR, "down".to_owned()),
                    }
                }),
            )
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        SpecServer {
            url: format!("http://{addr}/spec"),
            document: shared,
        }
    }

    pub fn set(&self, document: Option<&str>) {
        *self.document.lock().expect("lock") = document.map(str::to_owned);
    }
}

/// A FastMCP server (`tests/fixtures/mcp_server.py`) run with the venv `scripts/test.sh` makes.
pub struct McpServer {
    pub url: String,
    tools_file: tempfile::NamedTempFile,
    child: Child,
    port: u16,
    env: Vec<(String, String)>,
}

/// The Python of the venv `scripts/test.sh` creates (`MCP_PYTHON` overrides it).
pub fn mcp_python() -> PathBuf {
    std::env::var_os("MCP_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-mcp/bin/python"),
        PathBuf::from,
    )
}

impl McpServer {
    /// Starts the server offering `tools`; `env` adds settings (`MCP_JSON_RESPONSE`, `MCP_TOKEN`).
    ///
    /// The port is found free and then given to the server, so another test can take it in
    /// between: the server is started again on another port until it is the one answering.
    pub fn start(tools: &[&str], env: &[(&str, &str)]) -> McpServer {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        for _ in 0..5 {
            let tools_file = tempfile::NamedTempFile::new().expect("temp file");
            std::fs::write(tools_file.path(), serde_json::to_vec(tools).expect("json"))
                .expect("write the tools file");
            let port = StdListener::bind("127.0.0.1:0")
                .expect("bind")
                .local_addr()
                .expect("addr")
                .port();
            let mut server = McpServer {
                url: format!("http://127.0.0.1:{port}/mcp"),
                child: spawn_mcp_server(port, tools_file.path(), &env),
                tools_file,
                port,
                env: env.clone(),
            };
            if server.wait_until_ours() {
                return server;
            }
            let _ = server.child.kill();
        }
        panic!("the MCP server did not start on a port of its own in 5 attempts");
    }

    /// Waits until this server answers on its port: `false` when another server does, or this
    /// one exited (its port was taken).
    fn wait_until_ours(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return false;
            }
            if let Some(body) = http_get(self.port, "/fixture-ready") {
                return body.contains("mcp-fixture");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the MCP server did not start");
    }

    /// Stops the server and starts a new one on the same port: every session is forgotten.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn_mcp_server(self.port, self.tools_file.path(), &self.env);
        self.wait_until_listening();
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the MCP server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Changes what the server says of its tools, and its instructions: the whole tools file
    /// (see `tests/fixtures/mcp_server.py`).
    pub fn offer_value(&self, file: &serde_json::Value) {
        std::fs::write(
            self.tools_file.path(),
            serde_json::to_vec(file).expect("json"),
        )
        .expect("write the tools file");
    }

    /// Changes the tools the server offers (re-read on every tools/list).
    pub fn offer(&self, tools: &[&str]) {
        std::fs::write(
            self.tools_file.path(),
            serde_json::to_vec(tools).expect("json"),
        )
        .expect("write the tools file");
    }
}

/// The answer of `GET path` on the loopback `port`, if something answers.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

fn spawn_mcp_server(port: u16, tools_file: &Path, env: &[(String, String)]) -> Child {
    let python = mcp_python();
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh once (it creates .venv-mcp with the MCP SDK)",
        python.display()
    );
    let mut command = Command::new(python);
    command
        .arg(fixture("mcp_server.py"))
        .arg(port.to_string())
        .arg(tools_file)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("start the MCP server")
}

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
