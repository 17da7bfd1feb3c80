//! Black-box tests of the `toolgate` binary: `token`, `check` and `migrate` as a user runs
//! them, with a controlled environment (no inherited `TOOLGATE_*` variables).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use support::mongo::{MongoServer, database_name};
use toolgate::auth::{AuthSettings, Verifier};

const SECRET: &str = "integration-secret-long-enough-for-hs256";

/// The binary with a clean environment and a working folder without a config/toolgate.toml.
fn toolgate(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

const VALID_YAML: &str = "\
sources:
  - id: billing
    name: Billing API
    type: openapi
tools:
  - source_id: billing
    operation_id: refund
    name: refund_payment
groups:
  - id: payments
    name: Payments
    explicit_tool_ids: ['billing:refund']
policies:
  - id: support
    name: Support agents
    claim_matchers:
      - {json_path: roles, operator: contains, value: support}
    allowed_group_ids: [payments]
";

#[tokio::test]
async fn token_prints_only_a_token_that_verifies() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let output = toolgate(
        dir.path(),
        &[
            "token",
            "--sub",
            "bob",
            "--role",
            "support",
            "--claim",
            "tenant=acme",
            "--ttl-secs",
            "600",
        ],
        &[("TOOLGATE_JWT_SECRET", SECRET)],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let token = stdout.trim_end();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert_eq!(token.split('.').count(), 3);

    let verifier = Verifier::new(AuthSettings {
        hmac_secret: Some(SECRET.to_owned()),
        ..AuthSettings::default()
    })
    .await
    .expect("verifier");
    let verified = verifier.verify(token).await.expect("the token verifies");
    assert_eq!(verified.claims["sub"], json!("bob"));
    assert_eq!(verified.claims["roles"], json!(["support"]));
    assert_eq!(verified.claims["tenant"], json!("acme"));
    let iat = verified.claims["iat"].as_i64().expect("iat");
    assert_eq!(verified.expires_at, Some(iat + 600));
}

#[test]
fn token_without_a_secret_says_what_to_set() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let output = toolgate(dir.path(), &["token"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert!(
        text(&output.stderr).contains("TOOLGATE_JWT_SECRET"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn check_accepts_a_valid_yaml_catalog() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = write(dir.path(), "catalog.yaml", VALID_YAML);
    let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains("1 source, 1 tool, 0 labels, 1 group, 1 policy"),
        "{stdout}"
    );
}

#[test]
fn check_reports_every_validation_error_as_field_and_message() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let invalid = VALID_YAML
        .replace("operator: contains", "operator: eq")
        .replace("allowed_group_ids: [payments]", "allowed_group_ids: [nope]");
    let path = write(dir.path(), "catalog.yml", &invalid);
    let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("policies[0].claim_matchers[0].operator: unknown operator 'eq'"),
        "{stdout}"
    );
    assert!(
        stdout.contains("policies[0].allowed_group_ids[0]: "),
        "{stdout}"
    );
}

/// `GET /admin/catalog` shows secrets as `"***"`: such an export given back as a file is
/// refused by `check` and by `serve --seed`, naming the field, rather than `***` stored and sent
/// upstream as the credential.
#[tokio::test]
async fn an_exported_catalog_with_masked_secrets_is_refused_by_check_and_seed() {
    let gateway = support::gateway::Gateway::start().await;
    let catalog = json!({
        "sources": [{"id": "api", "name": "api", "type": "manual",
                     "config": {"headers": {"X-Api-Key": "k-Cr3dCanary"}}}],
        "tools": [{"source_id": "api", "operation_id": "op", "name": "op"}]
    });
    let reply = gateway
        .admin_send(reqwest::Method::PUT, "/admin/catalog", Some(catalog))
        .await;
    assert_eq!(reply.status, reqwest::StatusCode::OK, "{}", reply.json());
    let export = gateway
        .get("/admin/catalog", &support::gateway::Gateway::admin())
        .await;
    let exported = String::from_utf8_lossy(&export.body).into_owned();
    assert!(
        exported.contains("\"***\"") && !exported.contains("Cr3dCanary"),
        "{exported}"
    );
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = write(dir.path(), "export.json", &exported);
    let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("sources[0].config.headers.X-Api-Key: is \"***\""),
        "{stdout}"
    );
    let mut serve = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--seed")
        .arg(&path)
        .env_clear()
        .env("TOOLGATE_JWT_SECRET", SECRET)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = serve.try_wait().expect("try_wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = serve.kill();
            panic!("serve --seed started with a masked secret");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(serve.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("stderr");
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("X-Api-Key"), "{stderr}");
}

#[test]
fn check_reports_json_syntax_errors_with_their_place() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = write(
        dir.path(),
        "catalog.json",
        "{\"sources\": [{\"id\": \"a\", \"name\": 1}]}",
    );
    let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("catalog.json:1:") && stdout.contains("sources[0].name: "),
        "{stdout}"
    );
}

/// A file that parses but is not a catalog: every wrong entry is listed in one run, the first
/// with its line, and nothing twice.
#[test]
fn check_reports_the_shape_error_of_every_entry_not_only_the_first() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let yaml = "sources:\n  - {id: a, name: [1], type: manual}\n  - {id: b, name: {b: 1}, type: manual}\n\
                tools:\n  - {source_id: a, operation_id: x, name: x, method: GET, path: /x, \
                input_schema: {}, tags: oops}\ngroups:\n  - {id: g, name: g, colour: red}\n\
                extra: 1\n";
    for (name, contents) in [
        ("catalog.yaml", yaml.to_owned()),
        (
            "catalog.json",
            serde_json::to_string(
                &serde_norway::from_str::<serde_json::Value>(yaml).expect("yaml"),
            )
            .expect("json"),
        ),
    ] {
        let path = write(dir.path(), name, &contents);
        let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
        assert_eq!(output.status.code(), Some(1));
        let stdout = text(&output.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(lines[0].contains(&format!("{name}:")), "{stdout}");
        for field in [
            "sources[1].name",
            "tools[0].tags",
            "groups[0].colour",
            "unknown field `extra`",
        ] {
            assert_eq!(
                lines.iter().filter(|line| line.contains(field)).count(),
                1,
                "{name}: {field} once in\n{stdout}"
            );
        }
        let first = lines
            .iter()
            .filter(|line| line.contains("sources[0].name"))
            .count();
        assert_eq!(first, 1, "{name}: the first error once\n{stdout}");
        assert_eq!(lines.len(), 5, "{name}:\n{stdout}");
    }
}

#[test]
fn check_accepts_a_valid_json_catalog() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = write(
        dir.path(),
        "catalog.json",
        r#"{"sources": [{"id": "billing", "name": "Billing", "type": "manual"}], "tools": []}"#,
    );
    let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
    assert!(output.status.success(), "{}", text(&output.stdout));
}

#[test]
fn check_says_when_a_valid_catalog_defines_nothing() {
    let dir = tempfile::tempdir().expect("temporary folder");
    for (name, contents) in [("empty.yaml", ""), ("empty.json", "{}")] {
        let path = write(dir.path(), name, contents);
        let output = toolgate(dir.path(), &["check", path.to_str().expect("utf-8")], &[]);
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("valid, but empty"), "{name}: {stdout}");
    }
}

#[test]
fn check_of_a_missing_file_says_why_once() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let output = toolgate(dir.path(), &["check", "nowhere.yaml"], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("nowhere.yaml"), "{stderr}");
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "the cause once: {stderr}"
    );
}

#[test]
fn serve_without_key_material_is_refused() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let output = toolgate(dir.path(), &["serve", "--listen", "127.0.0.1:0"], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("TOOLGATE_JWT_SECRET") && stderr.contains("TOOLGATE_JWKS_URL"),
        "{stderr}"
    );
}

#[test]
fn migrate_without_mongodb_has_nothing_to_do() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let output = toolgate(dir.path(), &["migrate"], &[]);
    assert!(output.status.success());
    assert!(text(&output.stdout).contains("nothing to migrate"));
}

#[test]
fn migrate_fails_clearly_when_mongodb_cannot_be_reached() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let started = std::time::Instant::now();
    let output = toolgate(
        dir.path(),
        &["migrate"],
        &[
            (
                "TOOLGATE_MONGODB_URI",
                "mongodb://admin:pa55word@127.0.0.1:9/",
            ),
            ("TOOLGATE_MONGODB_DATABASE", "catalog"),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(
        err.contains("cannot migrate the MongoDB database `catalog`"),
        "{err}"
    );
    assert!(err.contains("127.0.0.1:9"), "names the server: {err}");
    assert!(!err.contains("pa55word"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "fails within the 2 s server-selection timeout"
    );
}

#[tokio::test]
async fn migrate_applies_the_steps_once_then_reports_them_applied() {
    let server = MongoServer::start().await;
    let dir = tempfile::tempdir().expect("temporary folder");
    let database = database_name("cli_migrate");
    let env = [
        ("TOOLGATE_MONGODB_URI", server.uri()),
        ("TOOLGATE_MONGODB_DATABASE", database.as_str()),
    ];
    let first = toolgate(dir.path(), &["migrate"], &env);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let out = text(&first.stdout);
    assert!(out.contains("applied          0001_collections"), "{out}");
    assert!(out.contains("applied          0002_indexes"), "{out}");
    assert!(out.contains("2 applied now, 0 already there"), "{out}");

    let again = toolgate(dir.path(), &["migrate"], &env);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let out = text(&again.stdout);
    assert!(out.contains("already applied  0001_collections"), "{out}");
    assert!(out.contains("0 applied now, 2 already there"), "{out}");
}

#[test]
fn help_and_version_exit_zero() {
    let dir = tempfile::tempdir().expect("temporary folder");
    for args in [&["--help"][..], &["--version"], &["token", "--help"]] {
        let output = toolgate(dir.path(), args, &[]);
        assert!(output.status.success(), "{args:?}");
        assert!(!output.stdout.is_empty(), "{args:?}");
    }
    let output = toolgate(dir.path(), &["--listen", "nowhere"], &[]);
    assert_eq!(output.status.code(), Some(2), "usage errors exit 2");
}
