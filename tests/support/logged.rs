//! The `toolgate` binary as a child process with an environment of the test's choosing and its
//! stderr (the log) written to a file the test reads afterwards. For what only a real process
//! shows: the global log subscriber, OTLP export set up from the environment, the flush at exit.

use std::path::PathBuf;
use std::time::Duration;

use super::process::Process;

pub struct LoggedProcess {
    process: Process,
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
        let mut command = Process::serve_command(&dir.path().join("data"), &[]);
        command.envs(env.iter().copied()).stderr(stderr);
        let process = Process::spawn(command);
        LoggedProcess {
            base: process.base.clone(),
            process,
            log,
            _dir: dir,
        }
    }

    /// SIGTERM, then waits for a clean exit (which flushes what telemetry holds).
    pub fn terminate(&mut self) {
        self.process.signal("TERM");
        match self.process.wait(Duration::from_secs(15)) {
            Some(true) => {}
            Some(false) => panic!("toolgate exited with a failure; its log:\n{}", self.log()),
            None => panic!(
                "toolgate did not exit after SIGTERM; its log:\n{}",
                self.log()
            ),
        }
    }

    /// Everything written to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).expect("read the log")
    }
}
