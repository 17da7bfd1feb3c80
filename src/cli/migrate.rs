//! `toolgate migrate`: prepare the configured store. The embedded store creates its tables on
//! open, so only a MongoDB read model would have anything to do.

use std::io::Write;
use std::process::ExitCode;

use crate::config::Settings;

/// Exit code when the build cannot serve the configured store.
const UNSUPPORTED: u8 = 2;

/// Without a MongoDB URI: says there is nothing to migrate, exit 0. With one: says MongoDB is
/// not available in this build (on `err`), exit 2.
pub fn run_migrate(
    settings: &Settings,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    if settings.mongodb_uri.is_none() {
        writeln!(
            out,
            "nothing to migrate: no MongoDB URI is configured (TOOLGATE_MONGODB_URI), and the \
             embedded store in {} sets itself up when the server opens it",
            settings.data_dir.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        err,
        "toolgate: MongoDB support is not available in this build yet \
         (TOOLGATE_MONGODB_URI is set; unset it to use the embedded store)"
    )?;
    Ok(ExitCode::from(UNSUPPORTED))
}
