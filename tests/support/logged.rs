//! The `toolgate` binary as a child process with an environment of the test's choosing and its
//! stderr (the log) written to a file the test reads afterwards. For what only a real process
//! shows: the global log subscriber, OTLP export set up from the environment, the flush at exit.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::gateway::SECRET;

pub struct LoggedProcess {
    child: Child,
    pub base: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoggedProcess {
    /// `toolgate serve` on a random port and a fresh data dir, with `TOOLGATE_JWT_SECRET` and
    /// `env`, nothing else from the test's environment.
    pub fn serve(env: &[(&str, &str)]) -> LoggedProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("stderr.log");
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .env_clear()
            .env("TOOLGATE_JWT_SECRET", SECRET)
            .envs(env.iter().copied())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let base = line
            .trim()
            .strip_prefix("toolgate listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        LoggedProcess {
            child,
            base,
            log,
            _dir: dir,
        }
    }

    /// SIGTERM, then waits for a clean exit (which flushes what telemetry holds).
    pub fn terminate(&mut self) {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                assert!(status.success(), "toolgate exited with {status}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "toolgate did not exit after SIGTERM; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything written to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).expect("read the log")
    }
}

impl Drop for LoggedProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
