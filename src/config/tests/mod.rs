//! Loading, precedence, checks and dev mode, with explicit environments and temporary files:
//! the process environment is never read or changed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::service::limits::{Budget, RateLimits};
use crate::telemetry::{OtlpProtocol, OtlpSettings};

/// A default-file path that never exists, so tests ignore the developer's own config.
const NO_DEFAULT: &str = "/nonexistent/toolgate-test/toolgate.toml";

/// One environment variable: name and value.
type Pair<'a> = (&'a str, &'a str);

mod limits;

fn env(pairs: &[Pair]) -> Environment {
    Environment::from_pairs(pairs.iter().copied())
}

fn load(flags: &Overrides, env: &Environment) -> Result<Settings, ConfigError> {
    Settings::load_with_default_file(flags, env, Path::new(NO_DEFAULT))
}

fn load_for_serve(flags: &Overrides, env: &Environment) -> Result<Settings, ConfigError> {
    load(flags, env)?.require_key_material()
}

/// A TOML file in a fresh temporary folder (kept alive by the returned guard).
fn toml_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("toolgate.toml");
    std::fs::write(&path, text).expect("write the config file");
    (dir, path)
}

fn with_config(path: &Path) -> Overrides {
    Overrides {
        config: Some(path.to_owned()),
        ..Overrides::default()
    }
}

#[test]
fn defaults_apply_when_nothing_is_set() {
    let settings = load(&Overrides::default(), &env(&[])).expect("defaults load");
    assert_eq!(settings.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(settings.config_file, None);
    assert_eq!(settings.data_dir, PathBuf::from("./data"));
    assert_eq!(settings.seed, None);
    assert!(!settings.dev_mode);
    assert!(settings.jwt_secret.is_none() && settings.jwks_url.is_none());
    assert_eq!(settings.jwt_leeway, Duration::from_secs(30));
    assert_eq!(settings.admin_rule, default_admin_rule());
    assert_eq!(settings.mongodb_database, "toolgate");
    assert!(settings.mongodb_uri.is_none() && settings.redis_url.is_none());
    assert_eq!(settings.request_timeout, Duration::from_secs(30));
    assert_eq!(settings.body_limit_bytes, 1024 * 1024);
    assert_eq!(settings.sse_ping, Duration::from_secs(15));
    assert_eq!(settings.max_streams_per_subject, 16);
    assert_eq!(settings.log_format, LogFormat::Text);
    assert_eq!(settings.log_level, "info");
    assert_eq!(settings.otlp(), None, "no endpoint: nothing exported");
    assert_eq!(settings.otel_service_name, "toolgate");
    assert_eq!(settings.rate_limits, RateLimits::default());
    assert!(settings.warnings.is_empty());
}

#[test]
fn otlp_export_is_set_by_the_standard_variables() {
    let settings = load(
        &Overrides::default(),
        &env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_SERVICE_NAME", "toolgate-eu"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ]),
    )
    .expect("loads");
    assert_eq!(
        settings.otlp(),
        Some(OtlpSettings {
            endpoint: "http://collector:4318".into(),
            protocol: OtlpProtocol::HttpProtobuf,
            service_name: "toolgate-eu".into(),
        })
    );
    assert!(
        settings.warnings.is_empty(),
        "OTEL_* are not misspelt TOOLGATE_*"
    );

    let (_dir, path) = toml_file("[telemetry]\notlp_endpoint = \"https://otel.example:4318\"\n");
    let from_file = load(&with_config(&path), &env(&[])).expect("loads");
    assert_eq!(
        from_file.otlp().map(|otlp| otlp.endpoint),
        Some("https://otel.example:4318".to_owned())
    );

    for (pairs, setting) in [
        (
            [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
        (
            [("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
    ] {
        let text = load(&Overrides::default(), &env(&pairs))
            .expect_err(setting)
            .to_string();
        assert!(text.starts_with(setting), "{text}");
    }
}

#[test]
fn flags_beat_environment_beat_file_beat_defaults() {
    let (_dir, path) = toml_file(
        r#"
        [server]
        listen = "127.0.0.3:3000"
        data_dir = "/from/file"
        seed = "/from/file/seed.yaml"
        [auth]
        jwt_secret = "file-secret"
        jwt_leeway_secs = 5
        [http]
        sse_ping_secs = 7
        [log]
        format = "json"
        "#,
    );
    let env = env(&[
        ("TOOLGATE_LISTEN", "127.0.0.2:2000"),
        ("TOOLGATE_DATA_DIR", "/from/env"),
        ("TOOLGATE_JWT_SECRET", "env-secret"),
        ("TOOLGATE_SSE_PING_SECS", "9"),
        ("TOOLGATE_REVISION_POLL_SECS", "2"),
    ]);
    let flags = Overrides {
        listen: Some("127.0.0.1:1000".parse().expect("address")),
        ..with_config(&path)
    };
    let settings = load(&flags, &env).expect("loads");
    assert_eq!(settings.config_file.as_deref(), Some(path.as_path()));
    // flag > env > file
    assert_eq!(settings.listen.to_string(), "127.0.0.1:1000");
    // env > file
    assert_eq!(settings.data_dir, PathBuf::from("/from/env"));
    assert_eq!(
        settings.jwt_secret.as_ref().map(Secret::expose),
        Some("env-secret")
    );
    assert_eq!(settings.sse_ping, Duration::from_secs(9));
    assert_eq!(settings.revision_poll, Duration::from_secs(2));
    // file > default
    assert_eq!(settings.seed, Some(PathBuf::from("/from/file/seed.yaml")));
    assert_eq!(settings.jwt_leeway, Duration::from_secs(5));
    assert_eq!(settings.log_format, LogFormat::Json);
    // default
    assert_eq!(settings.body_limit_bytes, 1024 * 1024);
}

#[test]
fn config_file_comes_from_flag_then_environment_then_default() {
    let (_a, from_flag) = toml_file("[server]\nlisten = \"127.0.0.1:1\"\n");
    let (_b, from_env) = toml_file("[server]\nlisten = \"127.0.0.1:2\"\n");
    let (_c, default) = toml_file("[server]\nlisten = \"127.0.0.1:3\"\n");
    let named_env = env(&[("TOOLGATE_CONFIG", from_env.to_str().expect("utf-8 path"))]);
    let listen = |flags: &Overrides, env: &Environment| {
        Settings::load_with_default_file(flags, env, &default)
            .expect("loads")
            .listen
            .port()
    };
    assert_eq!(listen(&with_config(&from_flag), &named_env), 1);
    assert_eq!(listen(&Overrides::default(), &named_env), 2);
    assert_eq!(listen(&Overrides::default(), &env(&[])), 3);
}

#[test]
fn an_explicitly_named_missing_file_is_an_error() {
    let missing = Path::new("/nonexistent/toolgate.toml");
    let error = load(&with_config(missing), &env(&[])).expect_err("must fail");
    let text = error.to_string();
    assert!(
        text.contains("/nonexistent/toolgate.toml") && text.contains("--config"),
        "{text}"
    );

    let error = load(
        &Overrides::default(),
        &env(&[("TOOLGATE_CONFIG", "/nonexistent/toolgate.toml")]),
    )
    .expect_err("must fail");
    assert!(error.to_string().contains("TOOLGATE_CONFIG"), "{error}");
}

#[test]
fn toml_syntax_errors_name_the_file_and_line() {
    let (_dir, path) = toml_file("[server]\nlisten = \"127.0.0.1:8080\n");
    let error = load(&with_config(&path), &env(&[])).expect_err("must fail");
    let text = error.to_string();
    assert!(matches!(error, ConfigError::FileParse { .. }), "{error:?}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("line 2"), "{text}");
}

#[test]
fn unknown_keys_and_wrong_types_are_named() {
    let (_dir, path) = toml_file("[http]\nbody_limit = 10\n");
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("unknown key")
        .to_string();
    assert!(
        text.contains("body_limit") && text.contains(&path.display().to_string()),
        "{text}"
    );

    let (_dir, path) = toml_file("[http]\nsse_ping_secs = \"often\"\n");
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("wrong type")
        .to_string();
    assert!(text.contains("sse_ping_secs"), "{text}");
}

#[test]
fn bad_values_name_where_they_came_from() {
    let cases: &[(&str, &[Pair], &str)] = &[
        (
            "listen from env",
            &[("TOOLGATE_LISTEN", "localhost")],
            "TOOLGATE_LISTEN",
        ),
        (
            "zero timeout",
            &[("TOOLGATE_REQUEST_TIMEOUT_SECS", "0")],
            "TOOLGATE_REQUEST_TIMEOUT_SECS",
        ),
        (
            "not a number",
            &[("TOOLGATE_BODY_LIMIT_BYTES", "1MB")],
            "TOOLGATE_BODY_LIMIT_BYTES",
        ),
        (
            "log format",
            &[("TOOLGATE_LOG_FORMAT", "xml")],
            "TOOLGATE_LOG_FORMAT",
        ),
        (
            "log level",
            &[("TOOLGATE_LOG_LEVEL", "toolgate=loud")],
            "TOOLGATE_LOG_LEVEL",
        ),
        ("rust log", &[("RUST_LOG", "=[")], "RUST_LOG"),
    ];
    for (name, pairs, setting) in cases {
        let text = load(&Overrides::default(), &env(pairs))
            .expect_err(name)
            .to_string();
        assert!(text.starts_with(setting), "{name}: {text}");
    }
    let (_dir, path) = toml_file("[server]\nlisten = \"everywhere\"\n[http]\n");
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("bad listen")
        .to_string();
    assert!(
        text.starts_with(&format!("server.listen in {}", path.display()))
            && text.contains("HOST:PORT"),
        "{text}"
    );
}

#[test]
fn admin_rule_errors_name_the_toml_key() {
    let (_dir, path) = toml_file(
        r#"
        [[auth.admin_rule]]
        json_path = "roles"
        operator = "contains"
        value = "admin"
        [[auth.admin_rule]]
        json_path = "groups"
        operator = "eq"
        value = "ops"
        "#,
    );
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("bad operator")
        .to_string();
    assert!(
        text.starts_with(&format!(
            "auth.admin_rule[1].operator in {}",
            path.display()
        )),
        "{text}"
    );
    assert!(text.contains("unknown operator 'eq'"), "{text}");

    let (_dir, path) =
        toml_file("[[auth.admin_rule]]\njson_path = \"a..b\"\noperator = \"exists\"\n");
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("bad path")
        .to_string();
    assert!(
        text.starts_with("auth.admin_rule[0].json_path in "),
        "{text}"
    );

    let (_dir, path) = toml_file("[auth]\nadmin_rule = []\n");
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("empty rule")
        .to_string();
    assert!(
        text.starts_with("auth.admin_rule in ") && text.contains("at least one"),
        "{text}"
    );
}

#[test]
fn admin_rule_from_the_environment_is_json_and_checked() {
    let rule = r#"[{"json_path": "groups", "operator": "contains", "value": "ops"}]"#;
    let settings = load(
        &Overrides::default(),
        &env(&[("TOOLGATE_ADMIN_RULE", rule)]),
    )
    .expect("valid rule");
    assert_eq!(settings.admin_rule.len(), 1);
    assert_eq!(settings.admin_rule[0].json_path, "groups");
    assert_eq!(settings.admin_rule[0].value, json!("ops"));

    let bad = r#"[{"json_path": "level", "operator": "gt", "value": "high"}]"#;
    let text = load(&Overrides::default(), &env(&[("TOOLGATE_ADMIN_RULE", bad)]))
        .expect_err("bad value")
        .to_string();
    assert!(text.starts_with("TOOLGATE_ADMIN_RULE[0].value: "), "{text}");

    let text = load(
        &Overrides::default(),
        &env(&[("TOOLGATE_ADMIN_RULE", "roles")]),
    )
    .expect_err("not JSON")
    .to_string();
    assert!(
        text.starts_with("TOOLGATE_ADMIN_RULE: ") && text.contains("json_path"),
        "{text}"
    );
}

#[test]
fn serving_without_key_material_is_refused_with_what_to_set() {
    let error = load_for_serve(&Overrides::default(), &env(&[])).expect_err("no keys");
    assert!(matches!(error, ConfigError::NoKeyMaterial));
    let text = error.to_string();
    for needed in ["TOOLGATE_JWT_SECRET", "TOOLGATE_JWKS_URL", "--dev"] {
        assert!(text.contains(needed), "{text}");
    }
    // Either kind of key material is enough.
    load_for_serve(&Overrides::default(), &env(&[("TOOLGATE_JWT_SECRET", "s")]))
        .expect("a secret is enough");
    load_for_serve(
        &Overrides::default(),
        &env(&[("TOOLGATE_JWKS_URL", "/etc/jwks.json")]),
    )
    .expect("a JWKS is enough");
    // Other commands do not need key material.
    load(&Overrides::default(), &env(&[])).expect("load alone does not insist");
}

#[test]
fn dev_mode_generates_a_fresh_random_secret() {
    let dev = Overrides {
        dev: true,
        ..Overrides::default()
    };
    let first = load_for_serve(&dev, &env(&[])).expect("dev starts without keys");
    let second = load_for_serve(&dev, &env(&[])).expect("dev starts without keys");
    assert!(first.dev_mode && first.jwt_secret_generated);
    let secret = first.jwt_secret.as_ref().expect("generated").expose();
    assert_eq!(secret.len(), 43, "32 bytes in unpadded base64url");
    assert_ne!(first.jwt_secret, second.jwt_secret);
}

#[test]
fn dev_mode_keeps_a_configured_secret() {
    let dev = Overrides {
        dev: true,
        ..Overrides::default()
    };
    let settings = load_for_serve(&dev, &env(&[("TOOLGATE_JWT_SECRET", "mine")])).expect("loads");
    assert!(settings.dev_mode && !settings.jwt_secret_generated);
    assert_eq!(
        settings.jwt_secret.as_ref().map(Secret::expose),
        Some("mine")
    );
}

#[test]
fn empty_variables_count_as_unset() {
    let (_dir, path) = toml_file("[redis]\nurl = \"redis://file\"\n");
    let settings = load(
        &with_config(&path),
        &env(&[("TOOLGATE_REDIS_URL", ""), ("TOOLGATE_LISTEN", "")]),
    )
    .expect("loads");
    assert_eq!(
        settings.redis_url.as_ref().map(Secret::expose),
        Some("redis://file")
    );
    assert_eq!(settings.listen.to_string(), DEFAULT_LISTEN);
}

#[test]
fn log_level_prefers_toolgate_log_level_over_rust_log() {
    let both = env(&[("TOOLGATE_LOG_LEVEL", "debug"), ("RUST_LOG", "warn")]);
    assert_eq!(
        load(&Overrides::default(), &both).expect("loads").log_level,
        "debug"
    );
    let rust_log = env(&[("RUST_LOG", "toolgate=trace,warn")]);
    assert_eq!(
        load(&Overrides::default(), &rust_log)
            .expect("loads")
            .log_level,
        "toolgate=trace,warn"
    );
}

#[test]
fn misspelt_variables_are_reported_as_warnings() {
    let settings = load(
        &Overrides::default(),
        &env(&[
            ("TOOLGATE_JWT_SECERT", "x"),
            ("TOOLGATE_LISTEN", "127.0.0.1:1"),
        ]),
    )
    .expect("loads");
    assert_eq!(settings.warnings.len(), 1);
    assert!(settings.warnings[0].contains("TOOLGATE_JWT_SECERT"));
}

#[test]
fn debug_output_never_shows_secrets() {
    let settings = load(
        &Overrides::default(),
        &env(&[
            ("TOOLGATE_JWT_SECRET", "hmac-s3cret"),
            ("TOOLGATE_MONGODB_URI", "mongodb://user:mongo-pw@db"),
            ("TOOLGATE_REDIS_URL", "redis://:redis-pw@cache"),
        ]),
    )
    .expect("loads");
    let printed = format!("{settings:?} {:?}", settings.auth());
    for secret in ["hmac-s3cret", "mongo-pw", "redis-pw"] {
        assert!(!printed.contains(secret), "{printed}");
    }
}

#[test]
fn auth_settings_carry_the_verification_settings() {
    let settings = load(
        &Overrides::default(),
        &env(&[
            ("TOOLGATE_JWT_SECRET", "secret"),
            ("TOOLGATE_JWKS_URL", "https://idp/jwks"),
            ("TOOLGATE_JWT_ISSUER", "https://idp"),
            ("TOOLGATE_JWT_AUDIENCE", "toolgate"),
            ("TOOLGATE_JWT_LEEWAY_SECS", "0"),
        ]),
    )
    .expect("loads");
    let auth = settings.auth();
    assert_eq!(auth.hmac_secret.as_deref(), Some("secret"));
    assert_eq!(auth.jwks.as_deref(), Some("https://idp/jwks"));
    assert_eq!(auth.issuer.as_deref(), Some("https://idp"));
    assert_eq!(auth.audience.as_deref(), Some("toolgate"));
    assert_eq!(auth.leeway, Duration::ZERO);
}

/// The example file documents the defaults: loading it changes nothing.
#[test]
fn the_example_file_holds_the_defaults() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/toolgate.example.toml");
    let from_example = load(&with_config(&example), &env(&[])).expect("example loads");
    let defaults = load(&Overrides::default(), &env(&[])).expect("defaults load");
    assert_eq!(
        format!("{from_example:?}").replace(&format!("{:?}", Some(&example)), "None"),
        format!("{defaults:?}")
    );
}

/// Every optional key in the example (`#key = value`) is a real key with a valid value.
#[test]
fn the_example_file_with_every_key_uncommented_loads() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/toolgate.example.toml");
    let text = std::fs::read_to_string(&example).expect("example exists");
    let uncommented: String = text
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
            _ => line,
        })
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        uncommented.contains("\njwt_secret = "),
        "the convention is used"
    );
    let (_dir, path) = toml_file(&uncommented);
    let settings = load(&with_config(&path), &env(&[])).expect("every key is valid");
    assert!(settings.jwt_secret.is_some() && settings.jwks_url.is_some());
    assert!(settings.seed.is_some() && settings.mongodb_uri.is_some());
    assert!(settings.redis_url.is_some() && settings.jwt_issuer.is_some());
    assert!(settings.jwt_audience.is_some());
    assert!(settings.otlp().is_some());
}

#[test]
fn the_default_admin_rule_compiles() {
    let rule = default_admin_rule();
    assert_eq!(rule.len(), 2);
    layer::admin_rule("default", "", rule).expect("the default rule is valid");
}

#[tokio::test]
async fn dev_sample_tokens_verify_and_the_banner_is_loud() {
    let dev = Overrides {
        dev: true,
        ..Overrides::default()
    };
    let settings =
        load_for_serve(&dev, &env(&[("TOOLGATE_JWT_ISSUER", "https://dev")])).expect("dev loads");
    let tokens = sample_tokens(&settings).expect("mint");
    let verifier = crate::auth::Verifier::new(settings.auth())
        .await
        .expect("verifier");
    let admin = verifier
        .verify(&tokens.admin)
        .await
        .expect("admin token verifies");
    assert_eq!(admin.claims["roles"], json!(["admin"]));
    assert_eq!(admin.claims["iss"], json!("https://dev"));
    let agent = verifier
        .verify(&tokens.agent)
        .await
        .expect("agent token verifies");
    assert_eq!(agent.claims["sub"], json!("dev-agent"));

    let banner = dev_banner(&settings, &tokens.admin, &tokens.agent);
    let secret = settings.jwt_secret.as_ref().expect("generated").expose();
    assert!(banner.contains("DEVELOPMENT MODE") && banner.contains("NOT FOR PRODUCTION"));
    assert!(banner.contains(secret) && banner.contains(&tokens.admin));
    assert!(banner.contains(&tokens.agent) && banner.lines().count() > 10);

    let configured =
        load_for_serve(&dev, &env(&[("TOOLGATE_JWT_SECRET", "configured-s3cret")])).expect("loads");
    let banner = dev_banner(&configured, "a", "b");
    assert!(!banner.contains("configured-s3cret"), "{banner}");
}

#[test]
fn a_listen_address_is_an_ip_and_port_or_a_host_name_resolved_once() {
    use super::parse_listen;
    assert_eq!(
        parse_listen("127.0.0.1:8080").unwrap().to_string(),
        "127.0.0.1:8080"
    );
    assert_eq!(parse_listen(" [::1]:9 ").unwrap().to_string(), "[::1]:9");
    // localhost resolves (from /etc/hosts) to its IPv4 address first.
    assert_eq!(
        parse_listen("localhost:8080").unwrap().to_string(),
        "127.0.0.1:8080"
    );
    for (text, says) in [
        ("localhost", "has no port"),
        ("localhost:http", "is not a port"),
        ("127.0.0.1:70000", "is not a port"),
        (":8080", "has no host"),
        ("no-such-host.invalid:8080", "cannot be resolved"),
    ] {
        let error = parse_listen(text).expect_err(text);
        assert!(
            error.contains(says) && error.contains(text),
            "{text}: {error}"
        );
        assert!(
            says == "cannot be resolved" || error.contains("localhost:8080"),
            "the example: {error}"
        );
    }
}
