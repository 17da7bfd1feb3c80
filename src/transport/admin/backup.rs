//! `POST /admin/backup`: a consistent copy of the embedded store, written beside it: 201 with a
//! new file, or 200 with the one this gateway last wrote, at the current revision.

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::actor;
use crate::app::AdminDesk;
use crate::transport::errors::ApiError;

/// The body of a backup's 201: where it is and what it holds.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct BackupReply {
    /// Its file name in the data dir's `backups` folder:
    /// `toolgate-r<revision>-<YYYYMMDDTHHMMSSZ>.redb`.
    pub file: String,
    /// Its absolute path on the gateway's host.
    pub path: String,
    /// The catalog revision it holds.
    pub revision: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

pub(crate) async fn backup(desk: AdminDesk, headers: HeaderMap) -> Result<Response, ApiError> {
    let actor = actor(&desk, &headers);
    let Some(backup) = desk.write()?.backup(&actor).await? else {
        return Err(ApiError::Conflict(
            "the catalog is in MongoDB: back it up with mongodump (on a replica set, a dump \
             of the whole deployment with --oplog is one point in time; see docs/backup.md)"
                .to_owned(),
            Vec::new(),
        ));
    };
    let path = std::path::absolute(&backup.path).unwrap_or(backup.path);
    let status = if backup.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(BackupReply {
            file: backup.file,
            path: path.display().to_string(),
            revision: backup.revision,
            bytes: backup.bytes,
        }),
    )
        .into_response())
}
