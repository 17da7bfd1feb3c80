//! The catalog service's own cases.

use super::*;

#[tokio::test]
async fn a_panicking_write_task_is_an_internal_error_not_an_unavailable_store() {
    let joined = tokio::task::spawn_blocking(|| -> u8 {
        panic!("index out of bounds in validate.rs");
    })
    .await;
    let error = joined.expect_err("the task panicked");
    match task_failed("validating and compiling the catalog", &error) {
        WriteError::Internal(message) => {
            assert!(message.contains("validating and compiling"), "{message}");
            assert!(message.contains("index out of bounds"), "{message}");
        }
        other => panic!("expected Internal, got {other:?}"),
    }
}
