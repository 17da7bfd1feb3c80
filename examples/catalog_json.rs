//! Prints a generated benchmark catalog as a catalog document (`--seed` or `PUT
//! /admin/catalog`), so that the HTTP benchmarks run on the same catalogs as the benches.
//!
//!     cargo run --release --example catalog_json [large|typical] > catalog.json

#[path = "../benches/support/catalog_gen.rs"]
mod catalog_gen;

use std::io::Write as _;

fn main() -> std::process::ExitCode {
    let spec = match std::env::args().nth(1).as_deref() {
        None | Some("large") => catalog_gen::Spec::LARGE,
        Some("typical") => catalog_gen::Spec::TYPICAL,
        Some(other) => {
            eprintln!("unknown catalog '{other}'; expected large or typical");
            return std::process::ExitCode::FAILURE;
        }
    };
    let catalog = catalog_gen::generate(&spec);
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, &catalog)
        .map_err(std::io::Error::from)
        .and_then(|()| out.flush());
    match written {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cannot write the catalog: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
