//! The `toolgate` binary as a child process: started with a clean environment on a random
//! port; its bound address is read from the one line it prints on stdout.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::gateway::SECRET;

pub struct Process {
    pub child: Child,
    pub base: String,
}

impl Process {
    /// `toolgate serve --listen 127.0.0.1:0 --data-dir DIR [extra…]` with `TOOLGATE_JWT_SECRET`.
    pub fn serve(data_dir: &Path, extra: &[&str]) -> Process {
        Process::serve_with_env(data_dir, extra, &[])
    }

    /// [`Process::serve`] with more environment variables; its log goes to the test's stderr.
    pub fn serve_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Process {
        let mut command = Process::serve_command(data_dir, extra);
        command
            .env("TOOLGATE_LOG_LEVEL", "warn")
            .envs(env.iter().copied())
            .stderr(Stdio::inherit());
        Process::spawn(command)
    }

    /// `toolgate serve --listen 127.0.0.1:0 --data-dir DIR [extra…]` with nothing from the
    /// test's environment but `TOOLGATE_JWT_SECRET`; the caller adds variables and says where
    /// stderr goes.
    pub fn serve_command(data_dir: &Path, extra: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .env_clear()
            .env("TOOLGATE_JWT_SECRET", SECRET)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped());
        command
    }

    /// Starts `command` and waits for the one line it prints on stdout, the bound address.
    pub fn spawn(mut command: Command) -> Process {
        let mut child = command.spawn().expect("the binary starts");
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
        Process { child, base }
    }

    /// Sends a signal by name (`TERM`, `KILL`) with the system's `kill`.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Waits for the process to exit and returns whether it exited successfully.
    pub fn wait(&mut self, timeout: Duration) -> Option<bool> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status.success());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
