//! Prints a generated benchmark catalog as a catalog document (`--seed` or `PUT
//! /admin/catalog`), so that the HTTP benchmarks run on the same catalogs as the benches; or,
//! with `--agent-claims N`, the claims of the benches' reference agent matching about N of its
//! policies (what `benches/decision.rs` measures with), for `toolgate token --claims`.
//!
//!     cargo run --release --example catalog_json [large|typical] > catalog.json
//!     cargo run --release --example catalog_json large --agent-claims 20 > claims.json

#[path = "../benches/support/catalog_gen.rs"]
mod catalog_gen;

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let spec = match args.first().map(String::as_str) {
        None | Some("large") => catalog_gen::Spec::LARGE,
        Some("typical") => catalog_gen::Spec::TYPICAL,
        Some(other) => {
            eprintln!("unknown catalog '{other}'; expected large or typical");
            return ExitCode::FAILURE;
        }
    };
    let generated = catalog_gen::generate_with_agent(&spec);
    let document = match args.get(1).map(String::as_str) {
        None => serde_json::to_value(&generated.catalog),
        Some("--agent-claims") => match args.get(2).and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => Ok(serde_json::Value::Object(
                generated.claims_matching_about(n),
            )),
            None => {
                eprintln!("--agent-claims takes a number of policies, e.g. 20");
                return ExitCode::FAILURE;
            }
        },
        Some(other) => {
            eprintln!("unknown option '{other}'; expected --agent-claims N");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let written = document
        .and_then(|document| serde_json::to_writer(&mut out, &document))
        .map_err(std::io::Error::from)
        .and_then(|()| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cannot write the document: {error}");
            ExitCode::FAILURE
        }
    }
}
