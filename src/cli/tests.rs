//! The command line end to end, minus the process: arguments and environment in, a resolved
//! [`Command`] (or the text a run writes) out.

use std::process::ExitCode;

use serde_json::json;

use super::*;
use crate::auth::Verifier;
use crate::config::Secret;

const SECRET: &str = "a-long-enough-secret-for-hs256-tokens!";

fn env(pairs: &[(&str, &str)]) -> Environment {
    // The example file holds only defaults; naming it keeps a developer's own
    // config/toolgate.toml out of these tests.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config/toolgate.example.toml");
    Environment::from_pairs(
        std::iter::once(("TOOLGATE_CONFIG", example)).chain(pairs.iter().copied()),
    )
}

fn keyed() -> Environment {
    env(&[("TOOLGATE_JWT_SECRET", SECRET)])
}

fn parse(args: &[&str], env: &Environment) -> anyhow::Result<Command> {
    parse_from(std::iter::once("toolgate").chain(args.iter().copied()), env)
}

fn serve_settings(args: &[&str], env: &Environment) -> Settings {
    match parse(args, env).expect("parses") {
        Command::Serve(settings) => settings,
        other => panic!("expected serve, got {other:?}"),
    }
}

fn token_request(args: &[&str], env: &Environment) -> TokenRequest {
    match parse(&[&["token"], args].concat(), env).expect("parses") {
        Command::Token(request) => request,
        other => panic!("expected token, got {other:?}"),
    }
}

#[test]
fn serve_is_the_default_and_takes_the_same_flags() {
    let flags = [
        "--listen",
        "127.0.0.1:9001",
        "--data-dir",
        "/tmp/tg",
        "--seed",
        "s.yaml",
    ];
    let bare = serve_settings(&flags, &keyed());
    let explicit = serve_settings(&[&["serve"], &flags[..]].concat(), &keyed());
    for settings in [bare, explicit] {
        assert_eq!(settings.listen.to_string(), "127.0.0.1:9001");
        assert_eq!(settings.data_dir.to_str(), Some("/tmp/tg"));
        assert_eq!(
            settings.seed.as_ref().and_then(|p| p.to_str()),
            Some("s.yaml")
        );
    }
}

#[test]
fn flags_override_the_environment() {
    let env = env(&[
        ("TOOLGATE_JWT_SECRET", SECRET),
        ("TOOLGATE_LISTEN", "127.0.0.1:7000"),
        ("TOOLGATE_DATA_DIR", "/env"),
    ]);
    let settings = serve_settings(&["--listen", "127.0.0.1:7001"], &env);
    assert_eq!(settings.listen.port(), 7001);
    assert_eq!(settings.data_dir.to_str(), Some("/env"));
}

#[test]
fn serve_without_keys_is_refused_and_dev_is_allowed() {
    let error = parse(&["serve"], &env(&[])).expect_err("no key material");
    assert!(error.to_string().contains("TOOLGATE_JWT_SECRET"), "{error}");
    let settings = serve_settings(&["--dev"], &env(&[]));
    assert!(settings.dev_mode && settings.jwt_secret_generated);
}

#[test]
fn usage_errors_are_clap_errors() {
    for args in [
        &["--listen", "nowhere"][..],
        &["--listen", "127.0.0.1:1", "token"],
        &["frobnicate"],
        &["token", "--ttl-secs", "0"],
        &["token", "--claim", "no-equals-sign"],
        &["token", "--claims", "[1]"],
        &["--help"],
    ] {
        let error = parse(args, &keyed()).expect_err("usage error");
        assert!(
            error.downcast_ref::<clap::Error>().is_some(),
            "{args:?}: {error}"
        );
    }
    let error = parse(&["--listen", "nowhere"], &keyed()).expect_err("bad address");
    assert!(error.to_string().contains("--listen"), "{error}");
}

#[test]
fn check_takes_a_path_and_migrate_needs_no_keys() {
    assert!(
        matches!(parse(&["check", "c.yaml"], &env(&[])), Ok(Command::Check(p)) if p.to_str() == Some("c.yaml"))
    );
    assert!(matches!(
        parse(&["migrate"], &env(&[])),
        Ok(Command::Migrate(_))
    ));
}

#[test]
fn token_claims_combine_flags_in_a_documented_order() {
    let request = token_request(
        &[
            "--sub",
            "agent-7",
            "--role",
            "reader",
            "--role",
            "reader",
            "--admin",
            "--claims",
            r#"{"tenant": "acme", "roles": ["writer"], "sub": "overridden"}"#,
            "--claim",
            "level=3",
            "--claim",
            "team=blue",
            "--claim",
            r#"groups=["a","b"]"#,
            "--claim",
            "org.region=eu",
            "--claim",
            "org.unit.id=7",
            "--ttl-secs",
            "60",
        ],
        &keyed(),
    );
    let claims = &request.claims;
    assert_eq!(claims["sub"], json!("agent-7"));
    assert_eq!(claims["roles"], json!(["writer", "reader", "admin"]));
    assert_eq!(claims["tenant"], json!("acme"));
    assert_eq!(claims["level"], json!(3));
    assert_eq!(claims["team"], json!("blue"));
    assert_eq!(claims["groups"], json!(["a", "b"]));
    assert_eq!(
        claims["org"],
        json!({"region": "eu", "unit": {"id": 7}}),
        "dots nest, as policies read them"
    );
    let iat = claims["iat"].as_i64().expect("iat");
    assert_eq!(claims["exp"].as_i64(), Some(iat + 60));
    assert_eq!(request.secret, Secret::new(SECRET));
}

#[test]
fn token_defaults_and_overrides() {
    let request = token_request(&[], &keyed());
    assert_eq!(request.claims["sub"], json!("dev"));
    assert!(!request.claims.contains_key("roles"));
    let iat = request.claims["iat"].as_i64().expect("iat");
    assert_eq!(request.claims["exp"].as_i64(), Some(iat + 3600));

    let request = token_request(
        &["--claim", "exp=1", "--claims", r#"{"sub": "from-json"}"#],
        &keyed(),
    );
    assert_eq!(
        request.claims["exp"],
        json!(1),
        "--claim may override exp (expired tokens)"
    );
    assert_eq!(request.claims["sub"], json!("from-json"));

    let with_iss = env(&[
        ("TOOLGATE_JWT_SECRET", SECRET),
        ("TOOLGATE_JWT_ISSUER", "https://idp"),
        ("TOOLGATE_JWT_AUDIENCE", "tg"),
    ]);
    let request = token_request(&[], &with_iss);
    assert_eq!(request.claims["iss"], json!("https://idp"));
    assert_eq!(request.claims["aud"], json!("tg"));
}

#[test]
fn token_secret_comes_from_the_flag_then_the_environment() {
    let request = token_request(&["--secret", "from-flag"], &keyed());
    assert_eq!(request.secret.expose(), "from-flag");
    let error = parse(&["token"], &env(&[])).expect_err("no secret");
    let text = error.to_string();
    assert!(
        text.contains("TOOLGATE_JWT_SECRET") && text.contains("--secret"),
        "{text}"
    );
}

#[tokio::test]
async fn a_minted_token_verifies_with_the_same_secret() {
    let request = token_request(
        &["--sub", "alice", "--admin", "--ttl-secs", "120"],
        &keyed(),
    );
    let mut out = Vec::new();
    run_token(&request, &mut out).expect("mints");
    let printed = String::from_utf8(out).expect("utf-8");
    let token = printed.strip_suffix('\n').expect("one line");
    assert!(!token.contains(char::is_whitespace));

    let settings = Settings::load(&Overrides::default(), &keyed()).expect("settings");
    let verifier = Verifier::new(settings.auth()).await.expect("verifier");
    let verified = verifier.verify(token).await.expect("verifies");
    assert_eq!(verified.claims["sub"], json!("alice"));
    assert_eq!(verified.claims["roles"], json!(["admin"]));
    let iat = verified.claims["iat"].as_i64().expect("iat");
    assert_eq!(verified.expires_at, Some(iat + 120));
}

#[test]
fn migrate_has_nothing_to_do_for_the_embedded_store_and_fails_clearly_without_mongodb() {
    let run = |env: &Environment| {
        let Ok(Command::Migrate(settings)) = parse(&["migrate"], env) else {
            panic!("expected migrate");
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_migrate(&settings, &mut out, &mut err).expect("runs");
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    };
    let (code, out, _) = run(&env(&[]));
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(out.contains("nothing to migrate"), "{out}");

    // Nothing listens on port 9: MongoDB cannot be reached, and the message says so without
    // the password.
    let (code, out, err) = run(&env(&[(
        "TOOLGATE_MONGODB_URI",
        "mongodb://admin:pa55word@127.0.0.1:9/?serverSelectionTimeoutMS=300",
    )]));
    assert_eq!(code, ExitCode::FAILURE);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("cannot migrate the MongoDB database `toolgate`"),
        "{err}"
    );
    assert!(!err.contains("pa55word"), "{err}");
}
