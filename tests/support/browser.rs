//! A console browser run: one of `tests/console/*.py` (Playwright for Python in
//! `.venv-console`, driving Debian's Chromium) with its environment; the test fails with the
//! script's output if the script does.

use std::path::PathBuf;
use std::process::Command;

/// Runs `tests/console/<script>` with `env` (and `TOOLGATE_SCREENSHOTS` passed on as
/// `SCREENSHOTS`) off the async workers; its standard output.
pub async fn run(script: &str, env: Vec<(&'static str, String)>) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv-console/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh once (it installs Chromium and Playwright)",
        python.display()
    );
    let mut command = Command::new(python);
    command
        .arg(root.join("tests/console").join(script))
        .envs(env);
    if let Ok(dir) = std::env::var("TOOLGATE_SCREENSHOTS") {
        command.env("SCREENSHOTS", dir);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the driver thread")
        .expect("the driver starts");
    assert!(
        output.status.success(),
        "the browser run of {script} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
