//! A real MongoDB-protocol server for the tests: nx-27017 (a MongoDB wire-protocol server on
//! SQLite, installed in `.venv-mongo` by `scripts/test.sh`), started as a child process on a
//! free port with its own log and pid files, and killed by its PID when dropped. With
//! `TOOLGATE_TEST_MONGODB_URI` set, [`MongoServer::start`] uses that server instead (for
//! example a `mongo` container), and each test still gets its own database.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mongodb::bson::doc;
use mongodb::options::ClientOptions;

/// The environment variable naming an external server for the store tests.
pub const EXTERNAL_URI: &str = "TOOLGATE_TEST_MONGODB_URI";

/// A MongoDB-protocol server the test can reach (and, if it started it, stop and restart).
pub struct MongoServer {
    uri: String,
    local: Option<Local>,
}

/// An nx-27017 process this test owns.
struct Local {
    port: u16,
    /// `memory`, or a folder that outlives restarts.
    data: String,
    /// The log and pid files.
    files: tempfile::TempDir,
    child: Option<Child>,
}

impl MongoServer {
    /// The server for tests that only talk to MongoDB: the external one if
    /// `TOOLGATE_TEST_MONGODB_URI` is set, else a fresh in-memory nx-27017.
    pub async fn start() -> MongoServer {
        match std::env::var(EXTERNAL_URI) {
            Ok(uri) if !uri.is_empty() => MongoServer { uri, local: None },
            _ => MongoServer::start_local(None).await,
        }
    }

    /// A local nx-27017, for tests that stop and restart the server; it keeps its data in
    /// `data_dir` (so that a restart finds it), or in memory.
    pub async fn start_local(data_dir: Option<&Path>) -> MongoServer {
        let port = free_port();
        let data = data_dir.map_or_else(|| "memory".to_owned(), |d| d.display().to_string());
        let files = tempfile::tempdir().expect("a temp dir for nx-27017's files");
        let mut server = MongoServer {
            uri: format!("mongodb://127.0.0.1:{port}/"),
            local: Some(Local {
                port,
                data,
                files,
                child: None,
            }),
        };
        server.restart().await;
        server
    }

    /// The connection string.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Whether this is a server the test started (nx-27017) rather than an external one.
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// Kills the server by its PID and waits for it to be gone. Only for local servers.
    pub fn stop(&mut self) {
        let local = self
            .local
            .as_mut()
            .expect("only a local server can be stopped");
        if let Some(mut child) = local.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the (stopped) local server again on the same port and data, and waits until it
    /// answers a ping.
    pub async fn restart(&mut self) {
        let local = self
            .local
            .as_mut()
            .expect("only a local server can be restarted");
        assert!(local.child.is_none(), "the server is still running");
        let program = venv_program();
        let log = local.files.path().join("nx.log");
        let child = Command::new(&program)
            .args(["--host", "127.0.0.1", "-p", &local.port.to_string()])
            .args(["--data-dir", &local.data])
            .arg("--log-file")
            .arg(&log)
            .arg("--pid-file")
            .arg(local.files.path().join("nx.pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        local.child = Some(child);
        let uri = self.uri.clone();
        wait_for_ping(&uri, self, &log).await;
    }

    fn exited(&mut self) -> bool {
        match self.local.as_mut().and_then(|l| l.child.as_mut()) {
            Some(child) => child.try_wait().ok().flatten().is_some(),
            None => true,
        }
    }
}

impl Drop for MongoServer {
    fn drop(&mut self) {
        if let Some(local) = self.local.as_mut()
            && let Some(mut child) = local.child.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A database name no other test uses: the test's name, this process and a counter.
pub fn database_name(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let short: String = test
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(30)
        .collect();
    format!("tg_{short}_{}_{n}", std::process::id())
}

/// `.venv-mongo/bin/nx-27017`, or a failure that says how to get it.
fn venv_program() -> PathBuf {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-mongo/bin/nx-27017");
    assert!(
        program.is_file(),
        "{} is missing: run scripts/test.sh, which installs the MongoDB-protocol server the \
         tests use (nx-27017) into .venv-mongo (or set {EXTERNAL_URI} to use another server)",
        program.display()
    );
    program
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

async fn wait_for_ping(uri: &str, server: &mut MongoServer, log: &Path) {
    let mut options = ClientOptions::parse(uri).await.expect("a valid URI");
    options.server_selection_timeout = Some(Duration::from_millis(200));
    options.connect_timeout = Some(Duration::from_millis(200));
    let client = mongodb::Client::with_options(options).expect("a client");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if client
            .database("admin")
            .run_command(doc! {"ping": 1})
            .await
            .is_ok()
        {
            return;
        }
        assert!(
            !server.exited(),
            "nx-27017 exited at start; its log:\n{}",
            read_log(log)
        );
        assert!(
            Instant::now() < deadline,
            "nx-27017 did not answer a ping within 20 s; its log:\n{}",
            read_log(log)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server log so far, for failure messages.
fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
