//! `POST /admin/backup` on a running gateway while admins write: each copy holds one committed
//! state (catalog, secrets, audit log at one revision), is private to the gateway's user, and
//! a gateway started on it serves that state. On MongoDB the answer says to use mongodump.

use std::path::Path;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use toolgate::store::embedded::{EmbeddedStore, FILE_NAME};
use toolgate::store::{AuditQuery, CatalogStore};

use crate::support::gateway::Gateway;

/// A source whose header is a secret, inline (nothing to fetch).
fn secret_source() -> Value {
    json!({"id": "vault", "name": "vault", "type": "openapi", "config": {
        "headers": {"Authorization": "Bearer backup-secret-7"},
        "spec": {"openapi": "3.1.0", "info": {"title": "v", "version": "1"},
                 "servers": [{"url": "https://vault.example.com"}],
                 "paths": {"/items": {"get": {"operationId": "list_items",
                     "responses": {"200": {"description": "ok"}}}}}}}})
}

/// Opens a backup file as a store (in a folder of its own, under the store's file name).
async fn open_backup(file: &Path) -> (EmbeddedStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(file, dir.path().join(FILE_NAME)).expect("copy the backup");
    let store = EmbeddedStore::open(dir.path()).expect("a backup opens as a store");
    (store, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_taken_while_admins_write_each_hold_one_revision_and_restore() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings =
        crate::support::gateway::config(dir.path(), crate::support::gateway::hs_settings());
    // Every backup of the run is checked below: none is pruned.
    settings.backup_keep = 10_000;
    let gateway = Gateway::start_with(settings).await;
    gateway
        .admin_send(Method::POST, "/admin/sources", Some(secret_source()))
        .await
        .expect(StatusCode::CREATED);
    let writer = {
        let (base, admin) = (gateway.base.clone(), Gateway::admin());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            for round in 0..40 {
                let verb = if round % 2 == 0 { "disable" } else { "enable" };
                let answer = client
                    .post(format!("{base}/admin/tools/vault:list_items/{verb}"))
                    .bearer_auth(&admin)
                    .header("content-type", "application/json")
                    .body(json!({"reason": format!("round {round}")}).to_string())
                    .send()
                    .await
                    .expect("the gateway answers");
                assert!(answer.status().is_success(), "{}", answer.status());
            }
        })
    };
    let mut backups: Vec<Value> = Vec::new();
    while !writer.is_finished() || backups.is_empty() {
        let reply = gateway
            .admin_send(Method::POST, "/admin/backup", None)
            .await;
        let status = reply.status;
        let reply = reply.json();
        // One backup per revision: a second request before the next write answers the first.
        match backups.iter().find(|b| b["revision"] == reply["revision"]) {
            Some(earlier) => {
                assert_eq!(status, StatusCode::OK, "{reply}");
                assert_eq!(earlier["file"], reply["file"]);
            }
            None => {
                assert_eq!(status, StatusCode::CREATED, "{reply}");
                backups.push(reply);
            }
        }
    }
    writer.await.expect("the writer");
    // With no write in between, asking twice answers the same file.
    let first = gateway
        .admin_send(Method::POST, "/admin/backup", None)
        .await;
    let again = gateway
        .admin_send(Method::POST, "/admin/backup", None)
        .await
        .expect(StatusCode::OK)
        .json();
    let first_status = first.status;
    let first = first.json();
    assert_eq!(again["file"], first["file"]);
    if first_status == StatusCode::CREATED {
        backups.push(first);
    }
    assert!(backups.len() >= 2, "{backups:?}");

    let data_dir = dir.path().to_path_buf();
    for reply in &backups {
        let file = Path::new(reply["path"].as_str().expect("a path"));
        assert_eq!(file.parent(), Some(data_dir.join("backups").as_path()));
        let name = reply["file"].as_str().expect("a name");
        let revision = reply["revision"].as_u64().expect("a revision");
        assert!(name.starts_with(&format!("toolgate-r{revision}-")) && name.ends_with("Z.redb"));
        let metadata = std::fs::metadata(file).expect("the file is there");
        assert_eq!(metadata.len(), reply["bytes"].as_u64().expect("bytes"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(metadata.permissions().mode() & 0o777, 0o600, "{name}");
        }
        // One committed state: the catalog's revision, the last audit record's revision and
        // the tool's state all agree.
        let (store, _dir) = open_backup(file).await;
        let stored = store.load().await.expect("loads");
        assert_eq!(stored.revision, revision, "{name}");
        let audit = store
            .audit(AuditQuery {
                limit: 1000,
                ..AuditQuery::default()
            })
            .await
            .expect("audit");
        let last = audit.last().expect("records");
        assert_eq!(last.revision, revision, "{name}");
        let tool = stored
            .catalog
            .tools
            .iter()
            .find(|tool| tool.id == "vault:list_items")
            .expect("the tool");
        let disabled_last = last.action.as_str() == "disable";
        assert_eq!(tool.enabled, !disabled_last, "{name}: {:?}", last.action);
        let source = &stored.catalog.sources[0];
        assert_eq!(
            source.config["headers"]["Authorization"], "Bearer backup-secret-7",
            "{name}: the secret is kept in clear"
        );
    }
    // One file per revision, and no unfinished copy left behind.
    let files = std::fs::read_dir(data_dir.join("backups"))
        .expect("the folder")
        .count();
    assert_eq!(files, backups.len());
    let leftovers: Vec<_> = std::fs::read_dir(data_dir.join("backups"))
        .expect("the folder")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A gateway started on a backup serves its revision, with the secret still usable.
    let chosen = &backups[0];
    let restored_dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        chosen["path"].as_str().expect("path"),
        restored_dir.path().join(FILE_NAME),
    )
    .expect("restore");
    let restored = Gateway::start_with(crate::support::gateway::config(
        restored_dir.path(),
        crate::support::gateway::hs_settings(),
    ))
    .await;
    let reply = restored
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        reply.header("etag"),
        Some(format!("\"r{}\"", chosen["revision"]).as_str())
    );
    assert_eq!(
        reply.json()["sources"][0]["config"]["headers"]["Authorization"],
        "***"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_needs_an_admin_and_is_refused_on_mongodb() {
    let gateway = Gateway::start().await;
    let reader = Gateway::reader("agent-1");
    let answer = gateway
        .request(Method::POST, "/admin/backup", Some(&reader), None)
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(
        !gateway
            .data_dir()
            .expect("embedded")
            .join("backups")
            .exists(),
        "nothing written for a non-admin"
    );

    let server = crate::support::mongo::MongoServer::start().await;
    let mut config = crate::support::gateway::config(
        Path::new("unused-without-the-embedded-store"),
        crate::support::gateway::hs_settings(),
    );
    config.mongodb_uri = Some(toolgate::config::Secret::new(server.uri()));
    config.mongodb_database = crate::support::mongo::database_name("backup");
    let on_mongo = Gateway::start_with(config).await;
    let problem = on_mongo
        .admin_send(Method::POST, "/admin/backup", None)
        .await
        .problem(409);
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("mongodump")),
        "{problem}"
    );
}

/// After a restore, a revision number can come again with another catalog: a backup file of
/// that number written before the restart is not taken for the new state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_of_a_revision_number_from_before_a_restore_is_not_reused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings =
        || crate::support::gateway::config(dir.path(), crate::support::gateway::hs_settings());
    let backup = |gateway: &Gateway| {
        let gateway = gateway.base.clone();
        async move {
            let reply = reqwest::Client::new()
                .post(format!("{gateway}/admin/backup"))
                .bearer_auth(Gateway::admin())
                .send()
                .await
                .expect("answers");
            let status = reply.status();
            let body: Value =
                serde_json::from_slice(&reply.bytes().await.expect("body")).expect("json");
            (status, body)
        }
    };
    let mut gateway = Gateway::start_with(settings()).await;
    gateway
        .put_catalog(json!({"labels": [{"id": "first", "name": "first"}]}))
        .await;
    let (_, at_one) = backup(&gateway).await;
    gateway
        .put_catalog(json!({"labels": [{"id": "old", "name": "old"}]}))
        .await;
    let (status, old_two) = backup(&gateway).await;
    assert_eq!(
        (status, old_two["revision"].clone()),
        (StatusCode::CREATED, json!(2))
    );
    gateway.stop().await;

    // Restore the revision-1 backup, start again, write another revision 2.
    std::fs::copy(
        at_one["path"].as_str().expect("path"),
        dir.path().join(FILE_NAME),
    )
    .expect("restore");
    let gateway = Gateway::start_with(settings()).await;
    gateway
        .put_catalog(json!({"labels": [{"id": "new", "name": "new"}]}))
        .await;
    let (status, new_two) = backup(&gateway).await;
    assert_eq!(new_two["revision"], json!(2));
    assert_eq!(status, StatusCode::CREATED, "a new copy: {new_two}");
    assert_ne!(new_two["path"], old_two["path"]);
    let (store, _copy) = open_backup(Path::new(new_two["path"].as_str().expect("path"))).await;
    let labels = store.load().await.expect("loads").catalog.labels;
    assert_eq!(
        labels.iter().map(|l| l.id.as_str()).collect::<Vec<_>>(),
        ["new"]
    );
}

/// Backups are pruned: after each new one, only the newest `TOOLGATE_BACKUP_KEEP` are left (the
/// folder grew by one file per revision for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_newest_backups_are_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings =
        crate::support::gateway::config(dir.path(), crate::support::gateway::hs_settings());
    settings.backup_keep = 3;
    let gateway = Gateway::start_with(settings).await;
    gateway
        .admin_send(Method::POST, "/admin/sources", Some(secret_source()))
        .await
        .expect(StatusCode::CREATED);
    // Something that is not a backup stays whatever its age.
    let backups_dir = dir.path().join("backups");
    std::fs::create_dir_all(&backups_dir).expect("the folder");
    std::fs::write(backups_dir.join("notes.txt"), "kept").expect("a file");
    let mut files = Vec::new();
    for round in 0..6 {
        let verb = if round % 2 == 0 { "disable" } else { "enable" };
        gateway
            .admin_send(
                Method::POST,
                &format!("/admin/tools/vault:list_items/{verb}"),
                Some(json!({"reason": "round"})),
            )
            .await
            .expect(StatusCode::OK);
        let reply = gateway
            .admin_send(Method::POST, "/admin/backup", None)
            .await
            .expect(StatusCode::CREATED)
            .json();
        files.push(reply["file"].as_str().expect("a name").to_owned());
    }
    let mut left: Vec<String> = std::fs::read_dir(&backups_dir)
        .expect("the folder")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected: Vec<String> = files[3..].to_vec();
    expected.push("notes.txt".to_owned());
    expected.sort();
    assert_eq!(left, expected);
}
