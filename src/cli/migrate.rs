//! `toolgate migrate`: prepare the configured store. The embedded store creates its tables on
//! open, so there is only something to do for MongoDB: apply the steps of `migrations/` that
//! the database has not recorded yet (the server does the same at start).

use std::io::Write;
use std::process::ExitCode;

use crate::config::Settings;
use crate::store::mongo::{CommitPathChoice, MongoStore};

/// Without a MongoDB URI: says there is nothing to migrate, exit 0. With one: applies the
/// migrations and lists each step as applied now or already applied, exit 0; if MongoDB
/// cannot be reached or a step fails, says why on `err`, exit 1. The URI is never printed.
pub fn run_migrate(
    settings: &Settings,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let Some(uri) = &settings.mongodb_uri else {
        writeln!(
            out,
            "nothing to migrate: no MongoDB URI is configured (TOOLGATE_MONGODB_URI), and the \
             embedded store in {} sets itself up when the server opens it",
            settings.data_dir.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    };
    let database = &settings.mongodb_database;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let migrated = runtime.block_on(async {
        let store = MongoStore::open(uri.expose(), database, CommitPathChoice::Detect).await?;
        store.migrate().await
    });
    match migrated {
        Ok(report) => {
            for step in &report.already_applied {
                writeln!(out, "already applied  {step}")?;
            }
            for step in &report.applied {
                writeln!(out, "applied          {step}")?;
            }
            writeln!(
                out,
                "MongoDB database `{database}` is up to date ({} applied now, {} already there)",
                report.applied.len(),
                report.already_applied.len()
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            writeln!(
                err,
                "toolgate: cannot migrate the MongoDB database `{database}`: {error}"
            )?;
            Ok(ExitCode::FAILURE)
        }
    }
}
