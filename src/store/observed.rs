//! A [`CatalogStore`] that reports on the store it wraps: a span per call (a child of the
//! request or write that made it) and a count of failures by operation and kind.
//!
//! A decorator rather than code in each backend: every backend, present and future, is observed
//! the same way, and backends stay about storage.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use tracing::field::Empty;

use super::{
    AuditQuery, AuditRecord, Backup, CatalogStore, Commit, SigningKeyRecord, StoreError,
    StoredCatalog,
};
use crate::telemetry::Metrics;

/// `inner`, with its calls traced and its failures counted.
pub struct ObservedStore {
    inner: Arc<dyn CatalogStore>,
    metrics: Arc<Metrics>,
}

impl ObservedStore {
    pub fn new(inner: Arc<dyn CatalogStore>, metrics: Arc<Metrics>) -> ObservedStore {
        ObservedStore { inner, metrics }
    }

    async fn observe<T>(
        &self,
        name: &'static str,
        operation: &'static str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let span = tracing::debug_span!(
            "store",
            otel.name = name,
            otel.kind = "client",
            db.operation.name = operation,
            error = Empty,
            otel.status_code = Empty,
        );
        let result = crate::telemetry::in_span(&span, call).await;
        if let Err(error) = &result {
            let kind = kind(error);
            span.record("error", kind);
            // A lost compare-and-set is the protocol working (the write is retried), not a
            // failure of the store.
            if !matches!(error, StoreError::RevisionConflict { .. }) {
                span.record("otel.status_code", "error");
            }
            self.metrics.store_error(operation, kind);
        }
        result
    }
}

/// The error's kind, as a metric label.
fn kind(error: &StoreError) -> &'static str {
    match error {
        StoreError::RevisionConflict { .. } => "conflict",
        StoreError::Unavailable(_) => "unavailable",
        StoreError::Corrupt(_) => "corrupt",
    }
}

#[async_trait]
impl CatalogStore for ObservedStore {
    async fn load(&self) -> Result<StoredCatalog, StoreError> {
        self.observe("store load", "load", self.inner.load()).await
    }

    async fn revision(&self) -> Result<u64, StoreError> {
        self.observe("store revision", "revision", self.inner.revision())
            .await
    }

    async fn commit(&self, commit: Commit) -> Result<u64, StoreError> {
        self.observe("store commit", "commit", self.inner.commit(commit))
            .await
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.observe("store audit", "audit", self.inner.audit(query))
            .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.observe("store ping", "ping", self.inner.ping()).await
    }

    async fn backup(&self) -> Result<Option<Backup>, StoreError> {
        self.observe("store backup", "backup", self.inner.backup())
            .await
    }

    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        let call = self.inner.signing_keys();
        self.observe("store signing_keys", "signing_keys", call)
            .await
    }

    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError> {
        let call = self.inner.add_signing_key(key);
        self.observe("store add_signing_key", "add_signing_key", call)
            .await
    }

    async fn remove_signing_key(&self, kid: &str) -> Result<(), StoreError> {
        let call = self.inner.remove_signing_key(kid);
        self.observe("store remove_signing_key", "remove_signing_key", call)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store whose backend is gone.
    struct Unreachable;

    #[async_trait]
    impl CatalogStore for Unreachable {
        async fn load(&self) -> Result<StoredCatalog, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        async fn revision(&self) -> Result<u64, StoreError> {
            Err(StoreError::Corrupt("bad revision".into()))
        }
        async fn commit(&self, commit: Commit) -> Result<u64, StoreError> {
            Err(StoreError::RevisionConflict {
                expected: commit.expected_revision,
                current: commit.expected_revision + 1,
            })
        }
        async fn audit(&self, _query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        async fn ping(&self) -> Result<(), StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        async fn backup(&self) -> Result<Option<Backup>, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        async fn add_signing_key(&self, _key: SigningKeyRecord) -> Result<(), StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        async fn remove_signing_key(&self, _kid: &str) -> Result<(), StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
    }

    #[tokio::test]
    async fn failures_are_counted_by_operation_and_kind_and_passed_on() {
        let metrics = Arc::new(Metrics::new(None).expect("metrics"));
        let store = ObservedStore::new(Arc::new(Unreachable), Arc::clone(&metrics));
        assert!(matches!(
            store.ping().await,
            Err(StoreError::Unavailable(_))
        ));
        assert!(store.ping().await.is_err() && store.load().await.is_err());
        assert!(matches!(
            store.revision().await,
            Err(StoreError::Corrupt(_))
        ));
        let commit = Commit {
            expected_revision: 4,
            changes: Vec::new(),
            audit: Vec::new(),
        };
        assert!(matches!(
            store.commit(commit).await,
            Err(StoreError::RevisionConflict { expected: 4, .. })
        ));
        let text = metrics.render_prometheus().expect("render");
        for line in [
            "toolgate_store_errors_total{kind=\"unavailable\",operation=\"ping\"} 2",
            "toolgate_store_errors_total{kind=\"unavailable\",operation=\"load\"} 1",
            "toolgate_store_errors_total{kind=\"corrupt\",operation=\"revision\"} 1",
            "toolgate_store_errors_total{kind=\"conflict\",operation=\"commit\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
    }
}
