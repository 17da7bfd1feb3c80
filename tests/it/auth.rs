//! Black-box tests of `toolgate::auth` with real signed tokens.
//!
//! Every key is generated here (RSA, P-256, P-384, Ed25519), every JWKS is built from the
//! generated public keys, and JWKS documents are served from a file or from a small HTTP
//! server on 127.0.0.1. Nothing is mocked.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::RsaPublicKey;
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::{EncodePublicKey, LineEnding};
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;
use toolgate::auth::{AuthError, AuthSettings, AuthSetupError, Verifier, bearer_token, mint_hs256};
use toolgate::clock::ManualClock;

use crate::support;

use support::jwks_server::JwksServer;
use support::keys::{RSA_KEY, TestKey, jwks};

const SECRET: &str = "an-hmac-secret-that-is-long-enough-for-hs512";

// ---------------------------------------------------------------------------------------------
// Keys, tokens and JWKS documents
// ---------------------------------------------------------------------------------------------

/// Claims of a token valid for five more minutes.
fn fresh_claims() -> Value {
    json!({
        "sub": "agent-7",
        "exp": support::unix_now() + 300,
        "roles": ["reader"],
        "realm_access": {"roles": ["admin"], "nested": {"deep": true}},
    })
}

fn hs_token(alg: Algorithm, secret: &[u8], claims: &Value) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, &EncodingKey::from_secret(secret))
        .expect("HMAC signing")
}

fn as_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("expected a JSON object, got {other}"),
    }
}

/// The claims a token of another issuer is verified as: its own, and the depth toolgate
/// computes (`toolgate.depth`: 0, toolgate minted none of its `act` levels).
fn as_verified(value: Value) -> Map<String, Value> {
    let mut claims = as_map(value);
    claims.insert("toolgate".to_owned(), json!({"depth": 0}));
    claims
}

// ---------------------------------------------------------------------------------------------
// Verifiers
// ---------------------------------------------------------------------------------------------

fn settings() -> AuthSettings {
    AuthSettings::default()
}

async fn verifier_with(settings: AuthSettings) -> Verifier {
    Verifier::new(settings).await.expect("valid auth settings")
}

/// [`verifier_with`] on a clock the test moves (what JWKS refetches are spaced by; the claims'
/// times too).
async fn verifier_on(settings: AuthSettings) -> (Verifier, std::sync::Arc<ManualClock>) {
    let clock = std::sync::Arc::new(ManualClock::at(chrono::Utc::now()));
    let verifier = Verifier::with_own_and_clock(settings, None, clock.clone())
        .await
        .expect("valid auth settings");
    (verifier, clock)
}

async fn hs_verifier() -> Verifier {
    verifier_with(AuthSettings {
        hmac_secret: Some(SECRET.into()),
        ..settings()
    })
    .await
}

/// Writes `document` to a file unique to `name` and returns its path.
fn jwks_file(name: &str, document: &Value) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("auth-jwks-{name}.json"));
    std::fs::write(&path, document.to_string()).expect("write JWKS file");
    path
}

fn jwks_location(path: &std::path::Path) -> Option<String> {
    Some(path.to_str().expect("UTF-8 temp path").to_owned())
}

// ---------------------------------------------------------------------------------------------
// A JWKS server on 127.0.0.1
// ---------------------------------------------------------------------------------------------

/// Verifies `token` from `callers` concurrent tasks and returns every outcome.
async fn verify_concurrently(
    verifier: &Verifier,
    token: &str,
    callers: usize,
) -> Vec<Result<(), AuthError>> {
    let mut tasks = JoinSet::new();
    for _ in 0..callers {
        let (verifier, token) = (verifier.clone(), token.to_owned());
        tasks.spawn(async move { verifier.verify(&token).await.map(drop) });
    }
    tasks.join_all().await
}

async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn refuses_to_start_without_key_material() {
    let error = Verifier::new(settings())
        .await
        .expect_err("no key material");
    assert!(matches!(error, AuthSetupError::NoKeyMaterial));
    let message = error.to_string();
    assert!(message.contains("TOOLGATE_JWT_SECRET") && message.contains("TOOLGATE_JWKS_URL"));
}

#[tokio::test]
async fn refuses_an_empty_secret() {
    let error = Verifier::new(AuthSettings {
        hmac_secret: Some(String::new()),
        ..settings()
    })
    .await
    .expect_err("empty secret");
    assert!(matches!(error, AuthSetupError::EmptySecret));
}

#[tokio::test]
async fn refuses_a_missing_or_invalid_jwks_file_and_an_unknown_scheme() {
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("auth-no-such-jwks.json");
    let invalid = jwks_file("invalid", &json!({"not": "a jwks"}));
    for path in [missing, invalid] {
        let result = Verifier::new(AuthSettings {
            jwks: jwks_location(&path),
            ..settings()
        })
        .await;
        assert!(
            matches!(result, Err(AuthSetupError::JwksFile { .. })),
            "{path:?}: {result:?}"
        );
    }
    let result = Verifier::new(AuthSettings {
        jwks: Some("ftp://127.0.0.1/jwks".into()),
        ..settings()
    })
    .await;
    assert!(
        matches!(result, Err(AuthSetupError::InvalidJwksSource { .. })),
        "{result:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// HMAC tokens
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn hs256_hs384_and_hs512_tokens_with_the_secret_are_accepted_with_all_claims() {
    let verifier = hs_verifier().await;
    let claims = fresh_claims();
    for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
        let verified = verifier
            .verify(&hs_token(alg, SECRET.as_bytes(), &claims))
            .await
            .unwrap_or_else(|error| panic!("{alg:?}: {error:?}"));
        assert_eq!(*verified.claims, as_verified(claims.clone()), "{alg:?}");
        assert_eq!(verified.expires_at, claims["exp"].as_i64());
    }
}

#[tokio::test]
async fn minted_dev_tokens_verify() {
    let verifier = hs_verifier().await;
    let token = mint_hs256(SECRET, &as_map(fresh_claims())).expect("minting");
    let verified = verifier
        .verify(&token)
        .await
        .expect("minted token verifies");
    assert_eq!(verified.claims["realm_access"]["nested"]["deep"], true);
}

#[tokio::test]
async fn a_token_without_exp_is_refused_unless_expiry_is_made_optional() {
    let token = hs_token(
        Algorithm::HS256,
        SECRET.as_bytes(),
        &json!({"sub": "forever"}),
    );
    assert_eq!(
        hs_verifier().await.verify(&token).await,
        Err(AuthError::MissingExpiry),
        "a token that never expires is refused by default"
    );
    let lenient = verifier_with(AuthSettings {
        hmac_secret: Some(SECRET.into()),
        require_exp: false,
        ..settings()
    })
    .await;
    let verified = lenient.verify(&token).await.expect("exp made optional");
    assert_eq!(verified.expires_at, None);
}

// ---------------------------------------------------------------------------------------------
// Rejections
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_missing_header_or_empty_token_is_missing() {
    assert_eq!(bearer_token(None), Err(AuthError::Missing));
    assert_eq!(bearer_token(Some("Bearer ")), Err(AuthError::Missing));
    assert_eq!(
        hs_verifier().await.verify("").await,
        Err(AuthError::Missing)
    );
}

#[tokio::test]
async fn the_bearer_header_feeds_the_verifier() {
    let token = hs_token(Algorithm::HS256, SECRET.as_bytes(), &fresh_claims());
    let header = format!("bearer {token}");
    let extracted = bearer_token(Some(&header)).expect("bearer header");
    assert!(hs_verifier().await.verify(extracted).await.is_ok());
}

#[tokio::test]
async fn garbage_is_malformed() {
    let verifier = hs_verifier().await;
    let garbage = [
        "garbage",
        "a.b.c",
        "a.b.c.d.e",
        "e30.e30.!!!",
        "%%%.e30.c2ln",
    ];
    for token in garbage {
        assert_eq!(
            verifier.verify(token).await,
            Err(AuthError::Malformed),
            "{token}"
        );
    }

    // Correctly signed, but the payload is not a JSON object.
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#);
    for payload in [
        "!!!".to_owned(),
        URL_SAFE_NO_PAD.encode("not json"),
        URL_SAFE_NO_PAD.encode("[1]"),
    ] {
        let input = format!("{header}.{payload}");
        let key = EncodingKey::from_secret(SECRET.as_bytes());
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &key, Algorithm::HS256).expect("signing");
        let token = format!("{input}.{signature}");
        assert_eq!(
            verifier.verify(&token).await,
            Err(AuthError::Malformed),
            "{token}"
        );
    }
}

#[tokio::test]
async fn a_wrong_secret_or_tampered_payload_is_a_bad_signature() {
    let verifier = hs_verifier().await;
    let forged = hs_token(Algorithm::HS256, b"another-secret", &fresh_claims());
    assert_eq!(verifier.verify(&forged).await, Err(AuthError::BadSignature));

    let genuine = hs_token(Algorithm::HS256, SECRET.as_bytes(), &fresh_claims());
    let mut parts: Vec<&str> = genuine.split('.').collect();
    let mut elevated = fresh_claims();
    elevated["roles"] = json!(["admin"]);
    let payload = URL_SAFE_NO_PAD.encode(elevated.to_string());
    parts[1] = &payload;
    assert_eq!(
        verifier.verify(&parts.join(".")).await,
        Err(AuthError::BadSignature)
    );
}

#[tokio::test]
async fn exp_beyond_the_leeway_is_expired_and_within_it_accepted() {
    let verifier = hs_verifier().await; // default leeway: 30 s
    let sign = |exp: i64| hs_token(Algorithm::HS256, SECRET.as_bytes(), &json!({"exp": exp}));
    assert_eq!(
        verifier.verify(&sign(support::unix_now() - 120)).await,
        Err(AuthError::Expired)
    );
    let within = verifier
        .verify(&sign(support::unix_now() - 10))
        .await
        .expect("within leeway");
    assert!(within.expires_at.is_some());

    let strict = verifier_with(AuthSettings {
        hmac_secret: Some(SECRET.into()),
        leeway: Duration::ZERO,
        ..settings()
    })
    .await;
    assert_eq!(
        strict.verify(&sign(support::unix_now() - 10)).await,
        Err(AuthError::Expired)
    );
}

#[tokio::test]
async fn nbf_in_the_future_is_not_yet_valid() {
    let verifier = hs_verifier().await;
    let sign = |nbf: i64| {
        hs_token(
            Algorithm::HS256,
            SECRET.as_bytes(),
            &json!({"nbf": nbf, "exp": support::unix_now() + 3600}),
        )
    };
    assert_eq!(
        verifier.verify(&sign(support::unix_now() + 600)).await,
        Err(AuthError::NotYetValid)
    );
    assert!(
        verifier
            .verify(&sign(support::unix_now() + 10))
            .await
            .is_ok(),
        "within leeway"
    );
}

#[tokio::test]
async fn issuer_and_audience_are_checked_when_configured() {
    let verifier = verifier_with(AuthSettings {
        hmac_secret: Some(SECRET.into()),
        issuer: Some("https://idp.example".into()),
        audience: Some("toolgate".into()),
        ..settings()
    })
    .await;
    let sign = |mut claims: Value| {
        claims["exp"] = json!(support::unix_now() + 600);
        hs_token(Algorithm::HS256, SECRET.as_bytes(), &claims)
    };
    let iss = "https://idp.example";
    let cases = [
        ("both match", json!({"iss": iss, "aud": "toolgate"}), Ok(())),
        (
            "aud array containing ours",
            json!({"iss": iss, "aud": ["a", "toolgate"]}),
            Ok(()),
        ),
        (
            "aud array without ours",
            json!({"iss": iss, "aud": ["a", "b"]}),
            Err(AuthError::WrongAudience),
        ),
        (
            "other aud",
            json!({"iss": iss, "aud": "billing"}),
            Err(AuthError::WrongAudience),
        ),
        ("no aud", json!({"iss": iss}), Err(AuthError::WrongAudience)),
        (
            "other iss",
            json!({"iss": "https://evil.example", "aud": "toolgate"}),
            Err(AuthError::WrongIssuer),
        ),
        (
            "no iss",
            json!({"aud": "toolgate"}),
            Err(AuthError::WrongIssuer),
        ),
    ];
    for (name, claims, expected) in cases {
        assert_eq!(
            verifier.verify(&sign(claims)).await.map(drop),
            expected,
            "case: {name}"
        );
    }

    let lax = hs_verifier().await;
    let other = sign(json!({"iss": "https://anyone.example", "aud": ["whatever"]}));
    assert!(
        lax.verify(&other).await.is_ok(),
        "iss/aud not checked when not configured"
    );
}

#[tokio::test]
async fn alg_none_is_always_disallowed() {
    let path = jwks_file("alg-none", &jwks(&[&TestKey::rsa("rsa")]));
    let configurations = [
        AuthSettings {
            hmac_secret: Some(SECRET.into()),
            ..settings()
        },
        AuthSettings {
            jwks: jwks_location(&path),
            ..settings()
        },
        AuthSettings {
            hmac_secret: Some(SECRET.into()),
            jwks: jwks_location(&path),
            ..settings()
        },
    ];
    let payload = URL_SAFE_NO_PAD.encode(fresh_claims().to_string());
    let tokens = [
        format!(
            "{}.{payload}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#)
        ),
        format!(
            "{}.{payload}.c2ln",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#)
        ),
        format!(
            "{}.{payload}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"NONE","kid":"rsa"}"#)
        ),
    ];
    for settings in configurations {
        let verifier = verifier_with(settings).await;
        for token in &tokens {
            assert_eq!(
                verifier.verify(token).await,
                Err(AuthError::DisallowedAlgorithm),
                "{verifier:?}"
            );
        }
    }
}

/// The classic confusion attack: an HS256 token whose "secret" is the RSA public key.
fn hs256_tokens_keyed_with_the_public_key() -> Vec<String> {
    let public: RsaPublicKey = RSA_KEY.to_public_key();
    let spki_pem = public.to_public_key_pem(LineEnding::LF).expect("SPKI PEM");
    let pkcs1_pem = public.to_pkcs1_pem(LineEnding::LF).expect("PKCS#1 PEM");
    let spki_der = public.to_public_key_der().expect("SPKI DER");
    let claims = fresh_claims();
    let with_kid = |secret: &[u8]| {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("rsa".into());
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret)).expect("signing")
    };
    vec![
        hs_token(Algorithm::HS256, spki_pem.as_bytes(), &claims),
        hs_token(Algorithm::HS256, pkcs1_pem.as_bytes(), &claims),
        hs_token(Algorithm::HS256, spki_der.as_bytes(), &claims),
        with_kid(spki_pem.as_bytes()),
    ]
}

#[tokio::test]
async fn an_hmac_token_keyed_with_the_public_key_is_refused_with_only_a_jwks() {
    let path = jwks_file("confusion-jwks-only", &jwks(&[&TestKey::rsa("rsa")]));
    let verifier = verifier_with(AuthSettings {
        jwks: jwks_location(&path),
        ..settings()
    })
    .await;
    for token in hs256_tokens_keyed_with_the_public_key() {
        assert_eq!(
            verifier.verify(&token).await,
            Err(AuthError::DisallowedAlgorithm)
        );
    }
}

#[tokio::test]
async fn an_hmac_token_keyed_with_the_public_key_is_checked_only_against_the_secret() {
    let path = jwks_file("confusion-both", &jwks(&[&TestKey::rsa("rsa")]));
    let verifier = verifier_with(AuthSettings {
        hmac_secret: Some(SECRET.into()),
        jwks: jwks_location(&path),
        ..settings()
    })
    .await;
    for token in hs256_tokens_keyed_with_the_public_key() {
        assert_eq!(verifier.verify(&token).await, Err(AuthError::BadSignature));
    }
}

#[tokio::test]
async fn symmetric_keys_in_a_jwks_are_never_used() {
    let oct = json!({"kty": "oct", "kid": "oct", "k": URL_SAFE_NO_PAD.encode("jwks-secret")});
    let path = jwks_file("oct", &json!({"keys": [oct]}));
    let verifier = verifier_with(AuthSettings {
        jwks: jwks_location(&path),
        ..settings()
    })
    .await;
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("oct".into());
    let token = jsonwebtoken::encode(
        &header,
        &fresh_claims(),
        &EncodingKey::from_secret(b"jwks-secret"),
    )
    .expect("signing");
    assert_eq!(
        verifier.verify(&token).await,
        Err(AuthError::DisallowedAlgorithm)
    );
}

#[tokio::test]
async fn an_asymmetric_token_is_refused_without_a_jwks() {
    let token = TestKey::p256("ec").sign(Algorithm::ES256, &fresh_claims());
    assert_eq!(
        hs_verifier().await.verify(&token).await,
        Err(AuthError::DisallowedAlgorithm)
    );
}

// ---------------------------------------------------------------------------------------------
// Asymmetric tokens, JWKS from a file
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn every_asymmetric_algorithm_verifies_against_a_jwks_file() {
    let (rsa, p256, p384, ed) = (
        TestKey::rsa("rsa"),
        TestKey::p256("p256"),
        TestKey::p384("p384"),
        TestKey::ed25519("ed"),
    );
    let path = jwks_file("all-algorithms", &jwks(&[&rsa, &p256, &p384, &ed]));
    let file_url = format!("file://{}", path.display());
    for location in [jwks_location(&path), Some(file_url)] {
        let verifier = verifier_with(AuthSettings {
            jwks: location.clone(),
            ..settings()
        })
        .await;
        let claims = fresh_claims();
        let cases = [
            (&rsa, Algorithm::RS256),
            (&rsa, Algorithm::RS384),
            (&rsa, Algorithm::RS512),
            (&rsa, Algorithm::PS256),
            (&rsa, Algorithm::PS384),
            (&rsa, Algorithm::PS512),
            (&p256, Algorithm::ES256),
            (&p384, Algorithm::ES384),
            (&ed, Algorithm::EdDSA),
        ];
        for (key, alg) in cases {
            let verified = verifier
                .verify(&key.sign(alg, &claims))
                .await
                .unwrap_or_else(|error| panic!("{alg:?} via {location:?}: {error:?}"));
            assert_eq!(*verified.claims, as_verified(claims.clone()));
        }
    }
}

#[tokio::test]
async fn asymmetric_rejections_name_the_reason() {
    let (rsa, p256, stranger) = (
        TestKey::rsa("rsa"),
        TestKey::p256("p256"),
        TestKey::p256("p256"),
    );
    let path = jwks_file("asymmetric-rejections", &jwks(&[&rsa, &p256]));
    let verifier = verifier_with(AuthSettings {
        jwks: jwks_location(&path),
        jwks_min_refetch_interval: Duration::ZERO,
        ..settings()
    })
    .await;
    let claims = fresh_claims();

    let no_kid = p256.sign_with_kid(Algorithm::ES256, None, &claims);
    assert!(
        verifier.verify(&no_kid).await.is_ok(),
        "no kid: every ES256 key is tried"
    );

    let forged = stranger.sign(Algorithm::ES256, &claims);
    assert_eq!(verifier.verify(&forged).await, Err(AuthError::BadSignature));

    let unknown = p256.sign_with_kid(Algorithm::ES256, Some("retired"), &claims);
    assert_eq!(verifier.verify(&unknown).await, Err(AuthError::UnknownKey));

    let wrong_family = p256.sign_with_kid(Algorithm::ES256, Some("rsa"), &claims);
    assert_eq!(
        verifier.verify(&wrong_family).await,
        Err(AuthError::DisallowedAlgorithm)
    );

    let expired = rsa.sign(
        Algorithm::RS256,
        &json!({"exp": support::unix_now() - 3600}),
    );
    assert_eq!(verifier.verify(&expired).await, Err(AuthError::Expired));
}

#[tokio::test]
async fn a_jwk_alg_member_restricts_the_key_to_that_algorithm() {
    let mut rsa = TestKey::rsa("rsa");
    rsa.jwk["alg"] = json!("PS256");
    let path = jwks_file("jwk-alg", &jwks(&[&rsa]));
    let verifier = verifier_with(AuthSettings {
        jwks: jwks_location(&path),
        ..settings()
    })
    .await;
    let claims = fresh_claims();
    assert!(
        verifier
            .verify(&rsa.sign(Algorithm::PS256, &claims))
            .await
            .is_ok()
    );
    assert_eq!(
        verifier.verify(&rsa.sign(Algorithm::RS256, &claims)).await,
        Err(AuthError::DisallowedAlgorithm)
    );
}

// ---------------------------------------------------------------------------------------------
// JWKS over HTTP: rotation, rate limiting, outages, periodic refresh
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_rotated_key_is_fetched_on_first_sight_and_refetches_are_rate_limited() {
    const MIN_REFETCH: Duration = Duration::from_millis(1000);
    let (old, new, unknown) = (
        TestKey::p256("old"),
        TestKey::ed25519("new"),
        TestKey::p256("nope"),
    );
    let server = JwksServer::start(jwks(&[&old])).await;
    let (verifier, clock) = verifier_on(AuthSettings {
        jwks: Some(server.url()),
        jwks_min_refetch_interval: MIN_REFETCH,
        ..settings()
    })
    .await;
    assert_eq!(server.requests(), 1, "loaded once at start");
    let claims = fresh_claims();
    let old_token = old.sign(Algorithm::ES256, &claims);
    let new_token = new.sign(Algorithm::EdDSA, &claims);
    let unknown_token = unknown.sign(Algorithm::ES256, &claims);
    assert!(verifier.verify(&old_token).await.is_ok());
    assert_eq!(server.requests(), 1, "a known kid needs no fetch");

    // The IdP rotates; right after the start-up fetch, a refetch is not allowed yet.
    server.serve(jwks(&[&old, &new]));
    assert_eq!(
        verifier.verify(&new_token).await,
        Err(AuthError::UnknownKey)
    );
    assert_eq!(server.requests(), 1, "rate-limited");

    // Once the interval has passed, concurrent callers share one refetch.
    clock.advance(MIN_REFETCH + Duration::from_millis(100));
    let outcomes = verify_concurrently(&verifier, &new_token, 16).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(server.requests(), 2, "one shared refetch");

    // A flood of unknown kids right after that refetch fetches nothing.
    let outcomes = verify_concurrently(&verifier, &unknown_token, 16).await;
    assert!(
        outcomes
            .iter()
            .all(|outcome| *outcome == Err(AuthError::UnknownKey)),
        "{outcomes:?}"
    );
    assert_eq!(server.requests(), 2, "rate-limited");

    // Later, one refetch is allowed; the retired key then stops working.
    server.serve(jwks(&[&new]));
    clock.advance(MIN_REFETCH + Duration::from_millis(100));
    let outcomes = verify_concurrently(&verifier, &unknown_token, 16).await;
    assert!(
        outcomes
            .iter()
            .all(|outcome| *outcome == Err(AuthError::UnknownKey)),
        "{outcomes:?}"
    );
    assert_eq!(server.requests(), 3, "one refetch per interval");
    assert_eq!(
        verifier.verify(&old_token).await,
        Err(AuthError::UnknownKey)
    );
    assert!(verifier.verify(&new_token).await.is_ok());
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn an_unavailable_jwks_at_start_is_retried() {
    const MIN_REFETCH: Duration = Duration::from_millis(300);
    let key = TestKey::ed25519("ed");
    let server = JwksServer::start(jwks(&[&key])).await;
    server.set_available(false);
    let (verifier, clock) = verifier_on(AuthSettings {
        jwks: Some(server.url()),
        jwks_min_refetch_interval: MIN_REFETCH,
        ..settings()
    })
    .await;
    let token = key.sign(Algorithm::EdDSA, &fresh_claims());
    assert_eq!(verifier.verify(&token).await, Err(AuthError::UnknownKey));

    server.set_available(true);
    assert_eq!(
        verifier.verify(&token).await,
        Err(AuthError::UnknownKey),
        "not before the interval"
    );
    clock.advance(MIN_REFETCH + Duration::from_millis(100));
    assert!(verifier.verify(&token).await.is_ok());
}

#[tokio::test]
async fn an_unreachable_jwks_url_does_not_prevent_start() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = closed.local_addr().expect("bound address");
    drop(closed);
    let verifier = verifier_with(AuthSettings {
        hmac_secret: Some(SECRET.into()),
        jwks: Some(format!("http://{addr}/jwks.json")),
        ..settings()
    })
    .await;
    let asymmetric = TestKey::p256("ec").sign(Algorithm::ES256, &fresh_claims());
    assert_eq!(
        verifier.verify(&asymmetric).await,
        Err(AuthError::UnknownKey)
    );
    let hmac = hs_token(Algorithm::HS256, SECRET.as_bytes(), &fresh_claims());
    assert!(
        verifier.verify(&hmac).await.is_ok(),
        "HS tokens keep working"
    );
}

#[tokio::test]
async fn the_periodic_refresh_picks_up_new_keys_and_survives_outages() {
    let (old, new) = (TestKey::p256("old"), TestKey::p256("new"));
    let server = JwksServer::start(jwks(&[&old])).await;
    let verifier = verifier_with(AuthSettings {
        jwks: Some(server.url()),
        jwks_refresh_interval: Duration::from_secs(1),
        // Rules out refetches on unknown kids: only the periodic refresh can fetch.
        jwks_min_refetch_interval: Duration::from_secs(3600),
        ..settings()
    })
    .await;
    let refresh = verifier.spawn_refresh().expect("a JWKS is configured");
    let claims = fresh_claims();
    let new_token = new.sign(Algorithm::ES256, &claims);

    server.serve(jwks(&[&new]));
    assert_eq!(
        verifier.verify(&new_token).await,
        Err(AuthError::UnknownKey)
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while verifier.verify(&new_token).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no periodic refresh within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.requests(),
        2,
        "picked up by the periodic refresh alone"
    );

    server.set_available(false);
    wait_until("a failed refresh", || server.requests() >= 3).await;
    assert!(
        verifier.verify(&new_token).await.is_ok(),
        "previous keys stay in use"
    );

    refresh.abort();
    assert!(
        hs_verifier().await.spawn_refresh().is_none(),
        "nothing to refresh without a JWKS"
    );
}
