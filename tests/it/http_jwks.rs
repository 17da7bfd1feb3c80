//! The gateway with asymmetric tokens: keys generated here, published as a JWKS by a local
//! HTTP server, rotated while the gateway runs.

use crate::support;

use jsonwebtoken::Algorithm;
use reqwest::{Method, StatusCode};
use serde_json::json;
use support::gateway::{Gateway, config};
use support::jwks_server::JwksServer;
use support::keys::{TestKey, jwks};
use toolgate::auth::AuthSettings;

fn claims(sub: &str, roles: &[&str]) -> serde_json::Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    json!({"sub": sub, "roles": roles, "iat": now, "exp": now + 600})
}

#[tokio::test]
async fn rs256_and_es256_tokens_from_a_rotating_jwks() {
    let rsa = TestKey::rsa("rsa-1");
    let ec = TestKey::p256("ec-1");
    let server = JwksServer::start(jwks(&[&rsa, &ec])).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = AuthSettings {
        jwks: Some(server.url()),
        jwks_min_refetch_interval: std::time::Duration::from_millis(0),
        ..AuthSettings::default()
    };
    let gateway = Gateway::start_with(config(dir.path(), settings)).await;

    let admin = rsa.sign(Algorithm::RS256, &claims("admin-1", &["admin"]));
    let catalog = json!({
        "sources": [{"id": "s", "name": "s", "type": "manual"}],
        "tools": [{"source_id": "s", "operation_id": "t", "name": "t"}],
        "groups": [{"id": "g", "name": "g", "selectors": [{}]}],
        "policies": [{"id": "p", "name": "p", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "agent"}], "allowed_group_ids": ["g"]}]
    });
    let reply = gateway
        .request(Method::PUT, "/admin/catalog", Some(&admin), Some(catalog))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "RS256 admin token accepted");

    let agent = ec.sign(Algorithm::ES256, &claims("agent-1", &["agent"]));
    let reply = gateway.get("/agents/tools", &agent).await;
    assert_eq!(reply.status, StatusCode::OK, "ES256 agent token accepted");
    assert_eq!(reply.json()["count"], json!(1));

    // An HS256 token signed with the RSA public key is algorithm confusion: rejected.
    let hs = toolgate::auth::mint_hs256(
        "not-configured-secret-0123456789ab",
        claims("x", &["agent"]).as_object().expect("object"),
    )
    .expect("mint");
    gateway.get("/agents/tools", &hs).await.problem(401);

    // Rotation: a new key appears in the JWKS; a token signed with it is accepted once the
    // gateway refetches on the unknown kid.
    let rotated = TestKey::p256("ec-2");
    let early = rotated.sign(Algorithm::ES256, &claims("agent-2", &["agent"]));
    server.serve(jwks(&[&rsa, &rotated]));
    let reply = gateway.get("/agents/tools", &early).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "the rotated key is fetched on its unknown kid"
    );
    // The retired key no longer verifies once the set has been refetched.
    let retired = ec.sign(Algorithm::ES256, &claims("agent-3", &["agent"]));
    gateway.get("/agents/tools", &retired).await.problem(401);
    // Nor does a token it verified before the rotation: the gateway's memory of verified
    // tokens does not outlive the keys that verified them.
    gateway.get("/agents/tools", &agent).await.problem(401);
}
