//! A real `redis-server` for one test, on a free port, that the test can stop and start again
//! on the same port (to take Redis away from a running gateway and give it back).
//! `scripts/test.sh` installs `redis-server` from Debian's packages when it is missing.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::gateway::{Gateway, config, hs_settings};

pub struct RedisServer {
    pub port: u16,
    pub url: String,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server with nothing on disk and waits until it answers.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut server = RedisServer {
            port,
            url: format!("redis://127.0.0.1:{port}"),
            child: None,
        };
        server.resume();
        server
    }

    /// Kills the server (SIGKILL: as abrupt as a crash) and waits until its port is closed.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "redis-server did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts the server again on the same port (empty: it keeps nothing on disk).
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server starts (run scripts/test.sh once: it installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.command(&["PING"]).as_deref() != Some("PONG") {
            assert!(Instant::now() < deadline, "redis-server does not answer");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Runs one command with `redis-cli` and returns what it printed (empty for a nil reply);
    /// `None` when the server is not there.
    pub fn command(&self, args: &[&str]) -> Option<String> {
        redis_cli(self.port, args)
    }

    /// The value at `key`, parsed as JSON; `None` when absent.
    pub fn json(&self, key: &str) -> Option<serde_json::Value> {
        let text = self.command(&["GET", key])?;
        if text.is_empty() {
            return None;
        }
        Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{key} holds {text}: {e}")))
    }

    /// The keys matching a glob pattern, sorted.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let text = self
            .command(&["--scan", "--pattern", pattern])
            .unwrap_or_default();
        let mut keys: Vec<String> = text.lines().map(str::to_owned).collect();
        keys.sort();
        keys
    }
}

impl RedisServer {
    /// An in-process gateway using this Redis (revision poll 200 ms) with `catalog` loaded;
    /// the temp dir of its store lives as long as the returned guard.
    pub async fn gateway(&self, catalog: serde_json::Value) -> (Gateway, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = config(dir.path(), hs_settings());
        config.redis_url = Some(toolgate::config::Secret::new(self.url.clone()));
        config.revision_poll = Duration::from_millis(200);
        let gateway = Gateway::start_with(config).await;
        gateway.put_catalog(catalog).await;
        (gateway, dir)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One command with `redis-cli` against the server on `port`: what it printed (empty for a nil
/// reply), or `None` when no server is there.
pub fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    let output = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || text.starts_with("Could not connect") {
        return None;
    }
    Some(text)
}
