//! Schema migrations: the files of `migrations/`, applied in order, each recorded once.
//!
//! A step is a JSON file (embedded in the binary, so that `toolgate migrate` needs nothing
//! beside it) with a `description`, optional `collections` (created with their validator, or
//! given it with `collMod` when they exist) and optional `indexes` (created by their keys).
//! Every step is idempotent on its own: collections are created only when missing, and
//! `createIndexes` with keys that already have an index is a no-op. Indexes are never named
//! or dropped by name (some compatible servers do not keep names). A step applied is recorded
//! in the `migrations` collection under its file name and skipped afterwards; two instances
//! migrating at once both apply it harmlessly and one records it.

use chrono::Utc;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};
use serde::Deserialize;

use super::MongoStore;
use super::error::{During, is_duplicate_key};
use crate::store::StoreError;

/// The collection recording applied steps.
pub const MIGRATIONS_COLLECTION: &str = "migrations";

/// Every step, in order: its name (the file name without `.json`) and its text.
pub const STEPS: &[(&str, &str)] = &[
    (
        "0001_collections",
        include_str!("../../../migrations/0001_collections.json"),
    ),
    (
        "0002_indexes",
        include_str!("../../../migrations/0002_indexes.json"),
    ),
];

/// What [`MongoStore::migrate`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Steps applied now, in order.
    pub applied: Vec<String>,
    /// Steps found already recorded.
    pub already_applied: Vec<String>,
}

/// One migration file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub description: String,
    #[serde(default)]
    pub collections: Vec<CollectionSpec>,
    #[serde(default)]
    pub indexes: Vec<IndexSpec>,
}

/// A collection and its validator.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionSpec {
    pub name: String,
    pub validator: serde_json::Map<String, serde_json::Value>,
}

/// An index, by its keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSpec {
    pub collection: String,
    pub keys: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub unique: bool,
}

/// Parses a step's text.
pub fn parse(name: &str, text: &str) -> Result<Step, StoreError> {
    serde_json::from_str(text).map_err(|error| {
        StoreError::Corrupt(format!("migration {name} is not a valid step: {error}"))
    })
}

impl MongoStore {
    /// Applies the steps not yet recorded, in order, and records each.
    pub async fn migrate(&self) -> Result<MigrationReport, StoreError> {
        let db = &self.db;
        let recorded = db.collection::<Document>(MIGRATIONS_COLLECTION);
        let mut report = MigrationReport::default();
        for (name, text) in STEPS {
            let found = recorded
                .find_one(doc! {"_id": *name})
                .await
                .during("reading the applied migrations")?;
            if found.is_some() {
                report.already_applied.push((*name).to_owned());
                continue;
            }
            let step = parse(name, text)?;
            apply(db, name, &step).await?;
            let record = doc! {
                "_id": *name,
                "description": &step.description,
                "applied_at": Utc::now().to_rfc3339(),
            };
            match recorded.insert_one(record).await {
                Err(error) if is_duplicate_key(&error) => {}
                result => {
                    result.during(&format!("recording migration {name}"))?;
                }
            }
            tracing::info!(migration = name, "applied a migration");
            report.applied.push((*name).to_owned());
        }
        Ok(report)
    }
}

async fn apply(db: &Database, name: &str, step: &Step) -> Result<(), StoreError> {
    let doing = |what: &str| format!("applying migration {name}: {what}");
    for collection in &step.collections {
        let validator = to_document(&collection.validator, name)?;
        let existing = db
            .list_collection_names()
            .await
            .during(&doing("listing collections"))?;
        let created = if existing.contains(&collection.name) {
            false
        } else {
            match db
                .create_collection(&collection.name)
                .validator(validator.clone())
                .await
            {
                Ok(()) => true,
                // Created by another instance since we listed: give it the validator below.
                Err(error) if already_exists(&error) => false,
                Err(error) => {
                    return Err(super::error::unavailable(
                        &doing(&format!("creating `{}`", collection.name)),
                        &error,
                    ));
                }
            }
        };
        if !created {
            db.run_command(doc! {"collMod": &collection.name, "validator": validator})
                .await
                .during(&doing(&format!(
                    "setting the validator of `{}`",
                    collection.name
                )))?;
        }
    }
    for index in &step.indexes {
        let keys = to_document(&index.keys, name)?;
        let options = IndexOptions::builder()
            .unique(index.unique.then_some(true))
            .build();
        let model = IndexModel::builder().keys(keys).options(options).build();
        db.collection::<Document>(&index.collection)
            .create_index(model)
            .await
            .during(&doing(&format!("indexing `{}`", index.collection)))?;
    }
    Ok(())
}

/// MongoDB's `NamespaceExists`.
fn already_exists(error: &mongodb::error::Error) -> bool {
    matches!(error.kind.as_ref(), mongodb::error::ErrorKind::Command(c) if c.code == 48)
}

fn to_document(
    value: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Result<Document, StoreError> {
    match mongodb::bson::serialize_to_bson(value) {
        Ok(Bson::Document(doc)) => Ok(doc),
        Ok(other) => Err(StoreError::Corrupt(format!(
            "migration {name} has {other} where a document belongs"
        ))),
        Err(error) => Err(StoreError::Corrupt(format!(
            "migration {name} cannot be turned into BSON: {error}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_migrations_is_embedded_in_order_and_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("the migrations folder")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|file| file.ends_with(".json"))
            .collect();
        files.sort();
        let embedded: Vec<String> = STEPS
            .iter()
            .map(|(name, _)| format!("{name}.json"))
            .collect();
        assert_eq!(
            embedded, files,
            "STEPS lists every file of migrations/, in order"
        );
        for (name, text) in STEPS {
            let on_disk = std::fs::read_to_string(dir.join(format!("{name}.json"))).expect("read");
            assert_eq!(*text, on_disk);
            let step = parse(name, text).expect("a valid step");
            assert!(!step.description.is_empty());
            for index in &step.indexes {
                to_document(&index.keys, name).expect("keys");
                assert!(!index.keys.contains_key("_id"), "{name}: _id in an index");
            }
        }
    }
}
