//! The catalog store port: where the read model, its revision and the audit log live.
//!
//! The store is deliberately dumb about meaning. The catalog service computes a change (and
//! validates the whole resulting catalog with the domain) and hands the store a [`Commit`]; the
//! store applies it atomically **only if** the catalog is still at `expected_revision`, bumping
//! the revision by one and appending the audit records in the same transaction. That
//! compare-and-set is what makes concurrent writers (threads, or several gateway instances on
//! one shared store) safe: a writer that lost the race gets [`StoreError::RevisionConflict`],
//! reloads and tries again, and nothing is half-written.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::model::{AccessPolicy, Catalog, Label, Source, Tool, ToolGroup};
use crate::domain::revision::Revision;

pub mod embedded;
pub mod mongo;
pub mod observed;
mod signing_keys;

pub use signing_keys::SigningKeyRecord;

/// The five collections, as named in URLs, audit records and store tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    Sources,
    Tools,
    Labels,
    Groups,
    Policies,
    /// Revisions of imported tools: not an admin collection (no CRUD), written by refreshes
    /// and decisions.
    Revisions,
}

impl EntityKind {
    pub const ALL: [EntityKind; 6] = [
        EntityKind::Sources,
        EntityKind::Tools,
        EntityKind::Labels,
        EntityKind::Groups,
        EntityKind::Policies,
        EntityKind::Revisions,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            EntityKind::Sources => "sources",
            EntityKind::Tools => "tools",
            EntityKind::Labels => "labels",
            EntityKind::Groups => "groups",
            EntityKind::Policies => "policies",
            EntityKind::Revisions => "revisions",
        }
    }

    /// One entity of the kind, in messages (`source 'x' does not exist`).
    pub const fn noun(self) -> &'static str {
        match self {
            EntityKind::Sources => "source",
            EntityKind::Tools => "tool",
            EntityKind::Labels => "label",
            EntityKind::Groups => "group",
            EntityKind::Policies => "policy",
            EntityKind::Revisions => "revision",
        }
    }
}

/// What an audit record or a change announcement is about: an entity of one collection, or
/// the whole catalog (`PUT /admin/catalog`, seeding), which is no collection. Written as the
/// collection's name, or `catalog`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Sources,
    Tools,
    Labels,
    Groups,
    Policies,
    Revisions,
    Catalog,
}

impl Subject {
    pub const fn as_str(self) -> &'static str {
        match self {
            Subject::Sources => "sources",
            Subject::Tools => "tools",
            Subject::Labels => "labels",
            Subject::Groups => "groups",
            Subject::Policies => "policies",
            Subject::Revisions => "revisions",
            Subject::Catalog => "catalog",
        }
    }

    /// The collection, when the record is about one entity.
    pub const fn kind(self) -> Option<EntityKind> {
        match self {
            Subject::Sources => Some(EntityKind::Sources),
            Subject::Tools => Some(EntityKind::Tools),
            Subject::Labels => Some(EntityKind::Labels),
            Subject::Groups => Some(EntityKind::Groups),
            Subject::Policies => Some(EntityKind::Policies),
            Subject::Revisions => Some(EntityKind::Revisions),
            Subject::Catalog => None,
        }
    }
}

impl From<EntityKind> for Subject {
    fn from(kind: EntityKind) -> Subject {
        match kind {
            EntityKind::Sources => Subject::Sources,
            EntityKind::Tools => Subject::Tools,
            EntityKind::Labels => Subject::Labels,
            EntityKind::Groups => Subject::Groups,
            EntityKind::Policies => Subject::Policies,
            EntityKind::Revisions => Subject::Revisions,
        }
    }
}

/// One entity of any kind, as stored.
// Unboxed on purpose: an entity is built once per admin write and moved into a commit, so the
// size difference costs nothing measurable, and boxing would change the port other code builds on.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Entity {
    Source(Source),
    Tool(Tool),
    Label(Label),
    Group(ToolGroup),
    Policy(AccessPolicy),
    Revision(Revision),
}

impl Entity {
    pub fn kind(&self) -> EntityKind {
        match self {
            Entity::Source(_) => EntityKind::Sources,
            Entity::Tool(_) => EntityKind::Tools,
            Entity::Label(_) => EntityKind::Labels,
            Entity::Group(_) => EntityKind::Groups,
            Entity::Policy(_) => EntityKind::Policies,
            Entity::Revision(_) => EntityKind::Revisions,
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Entity::Source(e) => &e.id,
            Entity::Tool(e) => &e.id,
            Entity::Label(e) => &e.id,
            Entity::Group(e) => &e.id,
            Entity::Policy(e) => &e.id,
            Entity::Revision(e) => &e.id,
        }
    }
}

/// One step of a commit.
// Unboxed on purpose, as `Entity`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Insert or replace the entity with this kind and id.
    Put(Entity),
    /// Remove the entity if it exists.
    Delete { kind: EntityKind, id: String },
    /// Replace every collection at once (`PUT /admin/catalog`, seeding).
    ReplaceAll(Catalog),
}

/// An atomic write: all changes and audit records, or nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// The revision the change was computed against; the commit fails with
    /// [`StoreError::RevisionConflict`] if the store has moved on.
    pub expected_revision: u64,
    pub changes: Vec<Change>,
    /// Records to append; the store sets their `revision` (and `seq`) to the new revision.
    pub audit: Vec<AuditRecord>,
}

/// One entry of the change log (`GET /admin/audit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditRecord {
    /// Position in the log, assigned by the store: strictly increasing, never reused.
    #[serde(default)]
    #[schema(required = true)]
    pub seq: u64,
    /// The catalog revision this change produced, assigned by the store.
    #[serde(default)]
    #[schema(required = true)]
    pub revision: u64,
    pub at: DateTime<Utc>,
    /// The admin token's `sub`.
    pub actor: String,
    /// `create`, `update`, `delete`, `enable`, `disable`, `replace`, `seed`, `refresh`, …
    pub action: String,
    pub entity: Subject,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// Which audit records to list. Every field narrows; `None` means no constraint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    pub entity: Option<Subject>,
    pub id: Option<String>,
    pub actor: Option<String>,
    /// Inclusive.
    pub since: Option<DateTime<Utc>>,
    /// Exclusive.
    pub until: Option<DateTime<Utc>>,
    /// Only records with `seq` greater than this (the cursor of the previous page, oldest
    /// first).
    pub after_seq: Option<u64>,
    /// Only records with `seq` less than this (the cursor of the previous page, newest first).
    pub before_seq: Option<u64>,
    /// Newest first (by `seq`, descending) rather than oldest first.
    pub newest_first: bool,
    /// At most this many records.
    pub limit: usize,
}

impl AuditQuery {
    /// The page size when `limit` is 0.
    pub const DEFAULT_LIMIT: usize = 100;
    /// The most records one query returns, whatever `limit` asks for: a page stays cheap to
    /// build and to send.
    pub const MAX_LIMIT: usize = 1000;

    /// How many records this query returns at most; every backend pages the same way.
    pub fn effective_limit(&self) -> usize {
        match self.limit {
            0 => Self::DEFAULT_LIMIT,
            limit => limit.min(Self::MAX_LIMIT),
        }
    }
}

/// The catalog as stored, with the revision it is at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredCatalog {
    pub catalog: Catalog,
    pub revision: u64,
}

/// A consistent copy of the whole store written beside it ([`CatalogStore::backup`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Backup {
    /// Its file name, `toolgate-r<revision>-<YYYYMMDDTHHMMSSZ>.redb`.
    pub file: String,
    /// Where it is.
    pub path: std::path::PathBuf,
    /// The catalog revision it holds.
    pub revision: u64,
    /// Its size.
    pub bytes: u64,
    /// Whether this call wrote it (`false`: the backup of this revision was already there).
    pub created: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store moved past `expected` before this commit; reload and retry.
    #[error("the catalog changed concurrently (expected revision {expected}, found {current})")]
    RevisionConflict { expected: u64, current: u64 },
    /// The backing store cannot be reached or failed; nothing was written.
    #[error("the catalog store is unavailable: {0}")]
    Unavailable(String),
    /// Stored data could not be decoded: a bug or a foreign writer, never user input.
    #[error("the catalog store holds data that cannot be read: {0}")]
    Corrupt(String),
}

/// Where the catalog lives. Implementations: `embedded::EmbeddedStore` (on-disk, the
/// default) and `mongo::MongoStore` (shared by several instances).
#[async_trait]
pub trait CatalogStore: Send + Sync + 'static {
    /// The whole catalog and its revision, read consistently (one snapshot of the store).
    async fn load(&self) -> Result<StoredCatalog, StoreError>;

    /// The current revision only; cheap, used to notice changes made by other instances.
    async fn revision(&self) -> Result<u64, StoreError>;

    /// Applies the commit atomically if the store is at `commit.expected_revision`; returns the
    /// new revision (`expected_revision + 1`).
    async fn commit(&self, commit: Commit) -> Result<u64, StoreError>;

    /// Lists audit records, oldest first.
    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError>;

    /// Whether the backing store answers (for `/readyz`).
    async fn ping(&self) -> Result<(), StoreError>;

    /// Writes a consistent copy of the whole store (the catalog with its secrets, the tool
    /// revisions and the audit log, at one revision) into the store's `backups` folder; `None`
    /// where the backend has its own tools for that (MongoDB: `mongodump`).
    async fn backup(&self) -> Result<Option<Backup>, StoreError>;

    /// toolgate's own signing keys, oldest first (by `created_at`, then `kid`).
    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError>;

    /// Adds a signing key; one with the same `kid` already there is left as it is.
    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError>;

    /// Removes the signing key `kid`; nothing when there is none.
    async fn remove_signing_key(&self, kid: &str) -> Result<(), StoreError>;
}
