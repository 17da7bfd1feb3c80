//! The `toolgate` binary: parse the command line, then hand over to the library.

use std::process::ExitCode;

use toolgate::cli::{self, Command};
use toolgate::{server, telemetry};

/// mimalloc gives freed memory back to the system (after a short delay), where glibc's malloc
/// kept the peak of a large import or a flood of distinct manifests resident after it was freed.
/// Built without transparent huge pages (Cargo.toml says why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("toolgate: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match cli::parse()? {
        Command::Serve(settings) => {
            // Outside the runtime, and dropped after it: the last spans are flushed at exit.
            let _telemetry = telemetry::init(
                settings.log_format,
                &settings.log_level,
                settings.otlp().as_ref(),
            )?;
            for warning in &settings.warnings {
                tracing::warn!("{warning}");
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(server::run(settings))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Token(request) => {
            cli::run_token(&request, &mut stdout)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(path) => cli::run_check(&path, &mut stdout),
        Command::Impact(command) => cli::run_impact(&command, &mut stdout),
        Command::DemoUpstream(listen) => {
            drop(stdout);
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(cli::run_demo_upstream(listen))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate(settings) => {
            cli::run_migrate(&settings, &mut stdout, &mut std::io::stderr().lock())
        }
    }
}
