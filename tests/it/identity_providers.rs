//! The recipes of docs/identity-providers.md as an operator uses them: `toolgate serve --config
//! config/idp/<provider>.toml` (only the JWKS URL pointed at a JWKS this test serves), the demo
//! catalog with its policies replaced by `config/idp/<provider>-policies.yaml`, and RS256 tokens
//! shaped as each provider issues them (tests/fixtures/idp/tokens.json): the admin passes the
//! admin rule, agents and orchestrators get exactly their tools, a sub-agent loses the
//! coordination tools, and a token with no role gets nothing.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use jsonwebtoken::Algorithm;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::jwks_server::JwksServer;
use crate::support::keys::{TestKey, jwks};
use crate::support::process::Process;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The demo catalog with its policies replaced by the recipe's, as the docs say to.
fn catalog_with_policies(provider: &str, into: &Path) -> PathBuf {
    let demo: Value = serde_norway::from_str(
        &std::fs::read_to_string(root().join("config/demo-catalog.yaml")).expect("demo"),
    )
    .expect("the demo catalog");
    let policies: Value = serde_norway::from_str(
        &std::fs::read_to_string(root().join(format!("config/idp/{provider}-policies.yaml")))
            .expect("the recipe's policies"),
    )
    .expect("a YAML list");
    let mut catalog = demo;
    catalog["policies"] = policies;
    let path = into.join(format!("{provider}-catalog.json"));
    std::fs::write(&path, catalog.to_string()).expect("write");
    path
}

/// `[auth]` of the recipe: the issuer and audience its tokens must carry.
fn recipe_auth(provider: &str) -> (String, String) {
    let text = std::fs::read_to_string(root().join(format!("config/idp/{provider}.toml")))
        .expect("the recipe");
    let recipe: toml::Table = toml::from_str(&text).expect("TOML");
    let auth = &recipe["auth"];
    let get = |key: &str| auth[key].as_str().expect(key).to_owned();
    (get("jwt_issuer"), get("jwt_audience"))
}

/// `payload` signed by `key` with fresh times, so that it verifies now.
fn sign(key: &TestKey, payload: &Value) -> String {
    let mut claims = payload.clone();
    let now = crate::support::unix_now();
    let object = claims.as_object_mut().expect("claims");
    for (name, value) in [
        ("iat", now),
        ("nbf", now),
        ("auth_time", now - 10),
        ("exp", now + 600),
    ] {
        if object.contains_key(name) || name == "exp" {
            object.insert(name.to_owned(), json!(value));
        }
    }
    key.sign(Algorithm::RS256, &claims)
}

struct Served {
    process: Process,
    client: reqwest::Client,
}

impl Served {
    async fn tools(&self, token: &str) -> Vec<String> {
        let answer = self
            .client
            .get(format!("{}/agents/tools", self.process.base))
            .bearer_auth(token)
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(answer.status(), StatusCode::OK);
        let body: Value =
            serde_json::from_slice(&answer.bytes().await.expect("body")).expect("json");
        body["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|tool| tool["tool_id"].as_str().expect("id").to_owned())
            .collect()
    }

    async fn admin_status(&self, token: &str) -> StatusCode {
        self.client
            .get(format!("{}/admin/catalog", self.process.base))
            .bearer_auth(token)
            .send()
            .await
            .expect("the gateway answers")
            .status()
    }
}

/// The gateway started as the recipe says, with only `TOOLGATE_JWKS_URL` overridden.
fn serve(provider: &str, jwks_url: &str, dir: &Path, policies: bool) -> Served {
    let seed = if policies {
        catalog_with_policies(provider, dir)
    } else {
        root().join("config/demo-catalog.yaml")
    };
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--config"])
        .arg(root().join(format!("config/idp/{provider}.toml")))
        .arg("--data-dir")
        .arg(dir.join(format!("data-{provider}-{policies}")))
        .arg("--seed")
        .arg(seed)
        .env_clear()
        .env("TOOLGATE_JWKS_URL", jwks_url)
        .env("TOOLGATE_LOG_LEVEL", "warn")
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    Served {
        process: Process::spawn(command),
        client: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client"),
    }
}

const READERS: [&str; 3] = [
    "billing:list_invoices",
    "crm:get_customer",
    "crm:search_customers",
];

fn without_depth(payload: &Value) -> Value {
    let mut payload = payload.clone();
    let object = payload.as_object_mut().expect("claims");
    object.retain(|name, _| name != "depth" && !name.ends_with("/depth"));
    payload
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_recipe_serves_tokens_shaped_as_its_provider_issues_them() {
    let key = TestKey::rsa("idp-key-1");
    let jwks_server = JwksServer::start(jwks(&[&key])).await;
    let fixtures: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/idp/tokens.json")).expect("tokens"),
    )
    .expect("json");
    let dir = tempfile::tempdir().expect("temp dir");
    for provider in ["keycloak", "auth0", "entra", "okta"] {
        let tokens = &fixtures[provider];
        let (issuer, audience) = recipe_auth(provider);
        for (role, payload) in tokens.as_object().expect("tokens") {
            assert_eq!(payload["iss"], issuer.as_str(), "{provider} {role}");
            let audiences = match &payload["aud"] {
                Value::Array(list) => list.clone(),
                one => vec![one.clone()],
            };
            assert!(audiences.contains(&json!(audience)), "{provider} {role}");
        }
        let gateway = serve(provider, &jwks_server.url(), dir.path(), true);
        let token = |role: &str| sign(&key, &tokens[role]);
        let context = |role: &str| format!("{provider}: {role}");

        assert_eq!(
            gateway.admin_status(&token("admin")).await,
            StatusCode::OK,
            "{}",
            context("admin")
        );
        assert_eq!(
            gateway.tools(&token("agent")).await,
            READERS,
            "{}",
            context("agent")
        );
        assert_eq!(
            gateway.tools(&token("orchestrator_at_depth_1")).await,
            READERS,
            "{}: a sub-agent loses the coordination tools",
            context("orchestrator")
        );
        let top_level = key.sign(Algorithm::RS256, &{
            let mut claims = without_depth(&tokens["orchestrator_at_depth_1"]);
            claims["exp"] = json!(crate::support::unix_now() + 600);
            claims
        });
        let mut expected: Vec<&str> = READERS.to_vec();
        expected.insert(0, "agents:spawn_agents");
        assert_eq!(
            gateway.tools(&top_level).await,
            expected,
            "{}",
            context("orchestrator at depth 0")
        );
        for role in ["agent", "no_roles", "orchestrator_at_depth_1"] {
            assert_eq!(
                gateway.admin_status(&token(role)).await,
                StatusCode::FORBIDDEN,
                "{}",
                context(role)
            );
        }
        assert!(
            gateway.tools(&token("no_roles")).await.is_empty(),
            "{}",
            context("no roles")
        );
        // A token for another audience or from another issuer is refused.
        for (claim, value) in [
            ("aud", json!("someone-else")),
            ("iss", json!("https://evil.example")),
        ] {
            let mut forged = tokens["agent"].clone();
            forged[claim] = value;
            let answer = gateway
                .client
                .get(format!("{}/agents/tools", gateway.process.base))
                .bearer_auth(sign(&key, &forged))
                .send()
                .await
                .expect("answers");
            assert_eq!(
                answer.status(),
                StatusCode::UNAUTHORIZED,
                "{provider}: {claim}"
            );
        }
    }
}

/// Keycloak's client role `admin` of the client `toolgate` is the recipe's second admin matcher;
/// and the demo policies, which read `roles`, give a Keycloak token nothing, as the docs warn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keycloak_client_roles_and_the_demo_policies() {
    let key = TestKey::rsa("idp-key-2");
    let jwks_server = JwksServer::start(jwks(&[&key])).await;
    let fixtures: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/idp/tokens.json")).expect("tokens"),
    )
    .expect("json");
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = &fixtures["keycloak"];

    let gateway = serve("keycloak", &jwks_server.url(), dir.path(), true);
    let mut client_admin = tokens["no_roles"].clone();
    client_admin["resource_access"]["toolgate"] = json!({"roles": ["admin"]});
    assert_eq!(
        gateway.admin_status(&sign(&key, &client_admin)).await,
        StatusCode::OK
    );
    let mut other_client = tokens["no_roles"].clone();
    other_client["resource_access"]["account"]["roles"] = json!(["admin"]);
    assert_eq!(
        gateway.admin_status(&sign(&key, &other_client)).await,
        StatusCode::FORBIDDEN,
        "another client's `admin` role is not toolgate's"
    );

    let demo = serve("keycloak", &jwks_server.url(), dir.path(), false);
    assert!(demo.tools(&sign(&key, &tokens["agent"])).await.is_empty());
}
