//! The command line: `toolgate [serve] [flags]`, `token`, `check FILE`, `migrate`, `impact`,
//! `demo-upstream`.
//!
//! [`parse`] turns the arguments and the environment into a [`Command`] whose settings are
//! already loaded and checked; `main` then dispatches it. `Serve` goes to
//! [`crate::server::run`]; the others run here ([`run_token`], [`run_check`], [`run_migrate`],
//! [`run_impact`]).

mod args;
mod check;
mod demo_upstream;
mod impact;
mod migrate;
#[cfg(test)]
mod tests;
mod token;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser as _;

use crate::config::{Environment, Overrides, Settings};

pub use check::run_check;
pub use demo_upstream::{router as demo_upstream_router, run_demo_upstream};
pub use impact::{ImpactCommand, run_impact};
pub use migrate::run_migrate;
pub use token::{TokenRequest, run_token};

/// What the command line asks for, with everything it needs resolved.
#[derive(Debug)]
pub enum Command {
    /// Run the gateway with these settings (key material guaranteed, or dev mode).
    Serve(Settings),
    /// Print a signed development token.
    Token(TokenRequest),
    /// Check the catalog file at this path.
    Check(PathBuf),
    /// Prepare the store configured in these settings.
    Migrate(Settings),
    /// Preview a catalog's impact on a running gateway.
    Impact(ImpactCommand),
    /// Serve the demo upstream on this address.
    DemoUpstream(std::net::SocketAddr),
}

/// Parses the process's arguments and environment. `--help`, `--version` and usage errors
/// print and exit here, as command-line programs do.
pub fn parse() -> anyhow::Result<Command> {
    let env = Environment::from_process()?;
    match parse_from(std::env::args_os(), &env) {
        Err(error) => match error.downcast::<clap::Error>() {
            Ok(usage) => usage.exit(),
            Err(other) => Err(other),
        },
        command => command,
    }
}

/// Parses `args` (the program name first) against `env`; a usage error (including `--help`)
/// is returned as a `clap::Error` inside the `anyhow::Error`.
pub fn parse_from<I, T>(args: I, env: &Environment) -> anyhow::Result<Command>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = args::Cli::try_parse_from(args)?;
    Ok(match cli.command {
        None => Command::Serve(Settings::load_for_serve(&serve_overrides(cli.serve), env)?),
        Some(args::Command::Serve(serve)) => {
            Command::Serve(Settings::load_for_serve(&serve_overrides(serve), env)?)
        }
        Some(args::Command::Token(token)) => Command::Token(TokenRequest::from_args(
            token,
            env,
            crate::clock::unix_now(),
        )?),
        Some(args::Command::Check(check)) => Command::Check(check.file),
        Some(args::Command::DemoUpstream(demo)) => Command::DemoUpstream(demo.listen),
        Some(args::Command::Impact(impact)) => {
            Command::Impact(ImpactCommand::from_args(impact, env)?)
        }
        Some(args::Command::Migrate(migrate)) => Command::Migrate(Settings::load(
            &Overrides {
                config: migrate.config,
                data_dir: migrate.data_dir,
                ..Overrides::default()
            },
            env,
        )?),
    })
}

fn serve_overrides(args: args::ServeArgs) -> Overrides {
    Overrides {
        config: args.config,
        listen: args.listen,
        data_dir: args.data_dir,
        seed: args.seed,
        dev: args.dev,
    }
}
