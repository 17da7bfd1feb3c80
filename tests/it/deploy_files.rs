//! The deployment files (deploy/, Dockerfile, docker-compose.yml) against the binary they
//! deploy: the Helm chart linted and rendered by a real `helm` (scripts/helm.sh), its probes
//! on the binary's health routes and its settings all variables the binary reads; the Grafana
//! dashboard and the alert rules querying only metric families a real `/metrics` exposes; the
//! Dockerfile building with the script CI runs, as a non-root user.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn helm(args: &[&str]) -> String {
    let binary = root().join(".tools/helm/helm");
    assert!(
        binary.exists(),
        "{} is missing: run scripts/test.sh once (scripts/helm.sh installs it)",
        binary.display()
    );
    let output = Command::new(&binary)
        .args(args)
        .current_dir(root())
        .output()
        .expect("helm runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "helm {args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Every document of a rendered chart, as JSON.
fn documents(rendered: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(rendered)
        .filter_map(|document| {
            let value: Value = serde::Deserialize::deserialize(document).expect("YAML");
            (!value.is_null()).then_some(value)
        })
        .collect()
}

fn of_kind<'a>(documents: &'a [Value], kind: &str) -> Vec<&'a Value> {
    documents.iter().filter(|d| d["kind"] == kind).collect()
}

fn known_variables() -> BTreeSet<String> {
    toolgate::config::setting_variables()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_helm_chart_lints_and_renders_what_the_binary_reads() {
    helm(&["lint", "--strict", "deploy/helm/toolgate"]);
    let rendered = documents(&helm(&["template", "t", "deploy/helm/toolgate"]));
    let deployment = of_kind(&rendered, "Deployment");
    assert_eq!(deployment.len(), 1, "{rendered:?}");
    let pod = &deployment[0]["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 10001);
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for route in ["/healthz", "/readyz"] {
        assert!(
            toolgate::transport::routes::of(route).is_some(),
            "{route} is a route of the binary"
        );
    }
    let mounts: Vec<&Value> = container["volumeMounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .collect();
    assert!(
        mounts.iter().any(|m| m["mountPath"] == "/var/lib/toolgate"),
        "the data dir is writable under a read-only root: {mounts:?}"
    );

    let known = known_variables();
    let config = of_kind(&rendered, "ConfigMap");
    let secret = of_kind(&rendered, "Secret");
    assert_eq!((config.len(), secret.len()), (1, 1));
    let names: Vec<&String> = config[0]["data"]
        .as_object()
        .expect("data")
        .keys()
        .chain(
            secret[0]["stringData"]
                .as_object()
                .expect("stringData")
                .keys(),
        )
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let unknown: Vec<&&String> = names.iter().filter(|n| !known.contains(**n)).collect();
    assert!(
        unknown.is_empty(),
        "settings the binary does not read: {unknown:?}"
    );
    for secret_name in [
        "TOOLGATE_JWT_SECRET",
        "TOOLGATE_MONGODB_URI",
        "TOOLGATE_REDIS_URL",
    ] {
        assert!(
            secret[0]["stringData"].get(secret_name).is_some()
                && config[0]["data"].get(secret_name).is_none(),
            "{secret_name} is a secret, never in the ConfigMap"
        );
    }
    assert_eq!(of_kind(&rendered, "HorizontalPodAutoscaler").len(), 1);

    // With an existing Secret the chart renders none, and the pods read the one named.
    let existing = documents(&helm(&[
        "template",
        "t",
        "deploy/helm/toolgate",
        "--set",
        "secret.existingSecret=gateway-secrets",
        "--set",
        "prometheusRule.enabled=true",
    ]));
    assert!(of_kind(&existing, "Secret").is_empty());
    let text = serde_json::to_string(&existing).expect("json");
    assert!(text.contains("gateway-secrets"), "{text}");
    let rules = of_kind(&existing, "PrometheusRule");
    assert_eq!(rules.len(), 1);
    let alerts: Value =
        serde_norway::from_str(&read("deploy/helm/toolgate/files/alerts.yaml")).expect("rules");
    assert_eq!(
        rules[0]["spec"]["groups"], alerts["groups"],
        "the chart ships the rule file"
    );
}

/// The metric names an expression reads, without the series suffixes of histograms.
fn metric_names(expression: &str) -> BTreeSet<String> {
    let name = Regex::new(r"\b((?:toolgate|agent|http_server)_[a-z_]+)\b").expect("regex");
    name.captures_iter(expression)
        .map(|c| {
            let found = &c[1];
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| found.strip_suffix(suffix))
                .unwrap_or(found)
                .to_owned()
        })
        .collect()
}

/// Every `expr` of the alert rules and every `expr` of the dashboard's targets.
fn expressions() -> Vec<String> {
    let alerts: Value =
        serde_norway::from_str(&read("deploy/helm/toolgate/files/alerts.yaml")).expect("rules");
    let dashboard: Value =
        serde_json::from_str(&read("deploy/grafana/toolgate-dashboard.json")).expect("dashboard");
    let mut found = Vec::new();
    fn walk(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr", Value::String(expr)) => found.push(expr.clone()),
                        _ => walk(value, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
            _ => {}
        }
    }
    walk(&alerts, &mut found);
    let from_rules = found.len();
    walk(&dashboard, &mut found);
    assert!(
        from_rules >= 8 && found.len() >= from_rules + 15,
        "{found:?}"
    );
    found
}

/// The dashboard and the rules read only families the binary exposes: those a gateway shows
/// after a workload, and those docs/operations.md lists (which tests/it/docs_complete.rs ties
/// to the instruments in the sources) for what this workload cannot make appear (Redis
/// outages, failed refreshes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_alerts_read_only_metrics_the_binary_exposes() {
    let mut families = crate::docs_complete::exposed_families().await;
    let documented = Regex::new(r"`((?:toolgate|agent|http_server)_[a-z_]+)`").expect("regex");
    let operations = read("docs/operations.md");
    families.extend(
        documented
            .captures_iter(&operations)
            .map(|c| c[1].to_owned()),
    );
    let mut unknown = BTreeSet::new();
    for expression in expressions() {
        for name in metric_names(&expression) {
            if !families.contains(&name) {
                unknown.insert((name, expression.clone()));
            }
        }
    }
    assert!(unknown.is_empty(), "not exposed by the binary: {unknown:?}");
}

/// The image's build stage runs the script CI runs, and its runtime stage runs as a fixed
/// non-root user; compose puts two gateways on one MongoDB and one Redis behind the balancer.
#[test]
fn the_dockerfile_and_compose_file_say_what_ci_checks() {
    let dockerfile = read("Dockerfile");
    let build = Regex::new(r"(?m)^RUN .*scripts/docker-build\.sh /out$").expect("regex");
    assert!(
        build.is_match(&dockerfile),
        "the build stage runs scripts/docker-build.sh"
    );
    assert!(dockerfile.contains("COPY --from=build /out/toolgate /usr/local/bin/toolgate"));
    let runtime = dockerfile
        .rsplit("\nFROM ")
        .next()
        .expect("a runtime stage");
    assert!(runtime.contains("\nUSER 10001:10001\n"), "{runtime}");
    assert!(Path::new(&root().join("scripts/docker-build.sh")).exists());
    let ignore = read(".dockerignore");
    assert!(
        ignore
            .lines()
            .any(|line| line.trim_matches('/') == "target")
    );

    // The gateways share one block through a YAML merge key (`<<: *toolgate`), applied here
    // as Compose applies it.
    let mut compose: serde_norway::Value =
        serde_norway::from_str(&read("docker-compose.yml")).expect("compose");
    compose.apply_merge().expect("merge keys");
    let compose = serde_json::to_value(&compose).expect("JSON");
    let services = compose["services"].as_object().expect("services");
    let gateways: Vec<&Value> = services
        .values()
        .filter(|service| service["build"].is_object())
        .collect();
    assert_eq!(gateways.len(), 2, "two gateways");
    let setting = |gateway: &Value, name: &str| gateway["environment"][name].clone();
    for name in [
        "TOOLGATE_MONGODB_URI",
        "TOOLGATE_REDIS_URL",
        "TOOLGATE_JWT_SECRET",
    ] {
        assert!(setting(gateways[0], name).is_string(), "{name}");
        assert_eq!(
            setting(gateways[0], name),
            setting(gateways[1], name),
            "{name}"
        );
    }
    let known = known_variables();
    for gateway in &gateways {
        for name in gateway["environment"]
            .as_object()
            .expect("environment")
            .keys()
        {
            assert!(
                known.contains(name),
                "compose sets {name}, which the binary does not read"
            );
        }
    }
}
