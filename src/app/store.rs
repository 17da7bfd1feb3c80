//! Where the catalog is stored: the embedded store (a redb file in the data dir) unless a
//! MongoDB URI is configured; then the catalog lives in MongoDB, shared with every other
//! instance on the same database, and the migrations are applied before it is loaded.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::config::{Secret, Settings};
use crate::store::CatalogStore;
use crate::store::embedded::EmbeddedStore;
use crate::store::mongo::{CommitPathChoice, MongoStore};

/// Where the catalog is stored.
#[derive(Debug, Clone)]
pub enum StoreConfig {
    /// A redb file in this folder: one instance at a time.
    Embedded {
        data_dir: PathBuf,
        backup_keep: usize,
    },
    /// A MongoDB database, shared by any number of instances. `Debug` redacts the URI.
    Mongo { uri: Secret, database: String },
}

impl StoreConfig {
    /// MongoDB when a URI is configured, else the embedded store in the data dir.
    pub fn from_settings(settings: &Settings) -> StoreConfig {
        match &settings.mongodb_uri {
            Some(uri) => StoreConfig::Mongo {
                uri: uri.clone(),
                database: settings.mongodb_database.clone(),
            },
            None => StoreConfig::Embedded {
                data_dir: settings.data_dir.clone(),
                backup_keep: settings.backup_keep,
            },
        }
    }

    /// Whether other instances may share this store (and so write to it).
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreConfig::Mongo { .. })
    }

    /// Opens the store; for MongoDB, also applies the migrations not yet applied.
    pub async fn open(&self) -> anyhow::Result<Arc<dyn CatalogStore>> {
        match self {
            StoreConfig::Embedded {
                data_dir,
                backup_keep,
            } => {
                let data_dir = data_dir.clone();
                let store = tokio::task::spawn_blocking(move || EmbeddedStore::open(&data_dir))
                    .await
                    .context("opening the embedded store")??;
                Ok(Arc::new(store.keeping_backups(*backup_keep)))
            }
            StoreConfig::Mongo { uri, database } => {
                let store = MongoStore::open(uri.expose(), database, CommitPathChoice::Detect)
                    .await
                    .with_context(|| format!("opening the MongoDB database `{database}`"))?;
                let report = store
                    .migrate()
                    .await
                    .with_context(|| format!("migrating the MongoDB database `{database}`"))?;
                tracing::info!(
                    database,
                    commit_path = ?store.commit_path(),
                    applied = ?report.applied,
                    "the catalog is stored in MongoDB"
                );
                Ok(Arc::new(store))
            }
        }
    }
}
