//! An official MCP SDK client as a child process (`tests/mcp_clients/`: the Python SDK, the
//! TypeScript SDK v1 and v2), spoken to over its line protocol: one JSON command per line on
//! stdin, one JSON answer per line on stdout (tests/mcp_clients/README.md).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// Which client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `mcp` 2.x from PyPI (`.venv-mcp-client`).
    Python,
    /// `mcp` 1.x from PyPI (`.venv-mcp`, the ingestion fixture's venv).
    Python1,
    /// `@modelcontextprotocol/sdk` 1.x from npm.
    TypeScript,
    /// `@modelcontextprotocol/client` 2.x from npm.
    TypeScript2,
}

/// How long a driver may take to connect or answer one command.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// A connected client.
pub struct Driver {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// The `ready` line.
    pub ready: Value,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn require(path: &Path) -> &Path {
    assert!(
        path.exists(),
        "{} is missing: run scripts/test.sh once (scripts/mcp_clients.sh installs the MCP SDK \
         clients)",
        path.display()
    );
    path
}

impl Driver {
    /// Starts `sdk`'s driver against `url` with `token` and `env` (`MCP_PROTOCOL_VERSION`,
    /// `MCP_NEGOTIATION`), and waits for its `ready` line (whatever it says).
    pub fn start(sdk: Sdk, url: &str, token: &str, env: &[(&str, &str)]) -> Driver {
        let root = root();
        let mut command = match sdk {
            Sdk::Python | Sdk::Python1 => {
                let venv = if sdk == Sdk::Python {
                    ".venv-mcp-client"
                } else {
                    ".venv-mcp"
                };
                let mut command = Command::new(require(&root.join(venv).join("bin/python")));
                command.arg(root.join("tests/mcp_clients/python/driver.py"));
                command
            }
            Sdk::TypeScript | Sdk::TypeScript2 => {
                let dir = if sdk == Sdk::TypeScript { "ts" } else { "ts2" };
                require(
                    &root
                        .join("tests/mcp_clients")
                        .join(dir)
                        .join("node_modules"),
                );
                let mut command = Command::new("node");
                command.arg(root.join("tests/mcp_clients").join(dir).join("driver.mjs"));
                command
            }
        };
        command
            .env("MCP_URL", url)
            .env("MCP_TOKEN", token)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("the driver starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut driver = Driver {
            child,
            stdin,
            lines,
            ready: Value::Null,
        };
        driver.ready = driver.answer();
        driver
    }

    fn answer(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_WITHIN)
            .unwrap_or_else(|error| panic!("the driver did not answer: {error}"));
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
    }

    /// Sends one command and returns its answer. Blocking: call from `block_in_place`.
    pub fn send(&mut self, command: Value) -> Value {
        let mut line = serde_json::to_vec(&command).expect("json");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("the driver reads");
        self.stdin.flush().expect("flush");
        self.answer()
    }

    /// Every tool listed, all pages.
    pub fn list(&mut self) -> Vec<Value> {
        let answer = self.send(json!({"op": "list"}));
        answer["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {answer}"))
            .clone()
    }

    /// `list_changed` notifications received within `timeout` (at least one, or none).
    pub fn wait_changed(&mut self, timeout: Duration) -> u64 {
        let answer =
            self.send(json!({"op": "wait_changed", "timeout_ms": timeout.as_millis() as u64}));
        answer["list_changed"]
            .as_u64()
            .unwrap_or_else(|| panic!("no count in {answer}"))
    }

    /// Notifications received since the last count.
    pub fn changes(&mut self) -> u64 {
        self.send(json!({"op": "changes"}))["list_changed"]
            .as_u64()
            .expect("a count")
    }

    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.send(json!({"op": "call", "name": name, "arguments": arguments}))
    }

    /// Closes the session and waits for the driver to exit.
    pub fn close(mut self) {
        let answer = self.send(json!({"op": "close"}));
        assert_eq!(answer["closed"], true, "{answer}");
        let _ = self.child.wait();
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
