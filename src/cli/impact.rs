//! `toolgate impact --catalog NEW.yaml`: asks a running gateway (`POST /admin/impact`) what
//! replacing its catalog with the file would change for the claim sets given and those it
//! served recently, and prints who gains and loses which tools. Nothing is written.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Map, Value, json};

use super::args::ImpactArgs;
use crate::catalog_file::parse_catalog_file;
use crate::config::Environment;

const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// A resolved `impact` command.
#[derive(Debug)]
pub struct ImpactCommand {
    catalog: PathBuf,
    url: String,
    token: String,
    claims: Vec<Map<String, Value>>,
    if_match: Option<String>,
    json: bool,
}

impl ImpactCommand {
    pub(super) fn from_args(args: ImpactArgs, env: &Environment) -> anyhow::Result<Self> {
        let url = args
            .url
            .or_else(|| env.get("TOOLGATE_URL").map(str::to_owned))
            .unwrap_or_else(|| DEFAULT_URL.to_owned());
        let token = args
            .token
            .or_else(|| env.get("TOOLGATE_TOKEN").map(str::to_owned))
            .filter(|token| !token.is_empty())
            .context(
                "no token: set TOOLGATE_TOKEN to an admin token (`toolgate token --admin` mints \
                 one) or pass --token",
            )?;
        // `42` and `"r42"` both name revision 42.
        let if_match = args.if_match.map(|revision| {
            if revision.starts_with('"') {
                revision
            } else {
                format!("\"r{}\"", revision.trim_start_matches('r'))
            }
        });
        Ok(ImpactCommand {
            catalog: args.catalog,
            url: url.trim_end_matches('/').to_owned(),
            token,
            claims: args.claims,
            if_match,
            json: args.json,
        })
    }
}

/// Runs the preview and writes the summary (or the JSON answer). A refusal by the gateway
/// (invalid catalog, stale revision) is printed with its problem and exit code 1.
pub fn run_impact(command: &ImpactCommand, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let catalog = parse_catalog_file(&command.catalog)?;
    let body = json!({"catalog": catalog, "claims_sets": command.claims});
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (status, answer) = runtime.block_on(send(command, &body))?;
    if !status.is_success() {
        writeln!(out, "the gateway refused the preview ({status}):")?;
        write_problem(out, &answer)?;
        return Ok(ExitCode::FAILURE);
    }
    if command.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
    } else {
        write_summary(out, &answer)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn send(
    command: &ImpactCommand,
    body: &Value,
) -> anyhow::Result<(reqwest::StatusCode, Value)> {
    let url = format!("{}/admin/impact", command.url);
    let mut request = reqwest::Client::new()
        .post(&url)
        .bearer_auth(&command.token)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body)?);
    if let Some(if_match) = &command.if_match {
        request = request.header("if-match", if_match);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach the gateway at {url}"))?;
    let status = response.status();
    let bytes = response.bytes().await.context("reading the answer")?;
    let answer = serde_json::from_slice(&bytes)
        .with_context(|| format!("the answer of {url} ({status}) is not JSON"))?;
    Ok((status, answer))
}

fn write_problem(out: &mut impl Write, problem: &Value) -> std::io::Result<()> {
    if let Some(detail) = problem["detail"].as_str() {
        writeln!(out, "  {detail}")?;
    }
    for error in problem["errors"].as_array().into_iter().flatten() {
        let field = error["field"].as_str().unwrap_or_default();
        let message = error["message"].as_str().unwrap_or_default();
        writeln!(out, "  {field}: {message}")?;
    }
    Ok(())
}

/// Per claim set that changes: its claims and `+tool`/`-tool`; then the totals per tool.
fn write_summary(out: &mut impl Write, answer: &Value) -> std::io::Result<()> {
    let given = answer["claims_sets"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let seen = answer["seen"].as_array().map_or(&[][..], Vec::as_slice);
    let changed_given: Vec<&Value> = given.iter().filter(|set| changes(set)).collect();
    writeln!(
        out,
        "against revision {}: {} of {} given claim sets and {} recently served ones change",
        answer["revision"],
        changed_given.len(),
        given.len(),
        seen.len()
    )?;
    for set in changed_given.into_iter().chain(seen) {
        writeln!(out, "  {}", set["claims"])?;
        for (sign, key) in [("+", "gained"), ("-", "lost")] {
            for tool in set[key].as_array().into_iter().flatten() {
                writeln!(out, "    {sign}{}", tool.as_str().unwrap_or_default())?;
            }
        }
    }
    if let Some(totals) = answer["totals"].as_object().filter(|t| !t.is_empty()) {
        writeln!(out, "per tool (claim sets gaining / losing it):")?;
        for (tool, counts) in totals {
            writeln!(out, "  {tool}: +{} -{}", counts["gained"], counts["lost"])?;
        }
    }
    for warning in answer["warnings"].as_array().into_iter().flatten() {
        writeln!(out, "note: {}", warning.as_str().unwrap_or_default())?;
    }
    Ok(())
}

fn changes(set: &Value) -> bool {
    ["gained", "lost"]
        .iter()
        .any(|key| set[*key].as_array().is_some_and(|list| !list.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_who_gains_and_loses_what() {
        let answer = json!({
            "revision": 7,
            "claims_sets": [{"claims": {"roles": ["a"]}, "gained": [], "lost": []},
                            {"claims": {"roles": ["b"]}, "gained": ["s:x"], "lost": []}],
            "seen": [{"claims": {"depth": 2}, "last_seen": "2026-01-01T00:00:00Z",
                      "gained": [], "lost": ["s:y"]}],
            "totals": {"s:x": {"gained": 1, "lost": 0}, "s:y": {"gained": 0, "lost": 1}},
            "warnings": []
        });
        let mut out = Vec::new();
        write_summary(&mut out, &answer).expect("written");
        let text = String::from_utf8(out).expect("utf-8");
        assert_eq!(
            text,
            "against revision 7: 1 of 2 given claim sets and 1 recently served ones change\n\
             \x20 {\"roles\":[\"b\"]}\n    +s:x\n\
             \x20 {\"depth\":2}\n    -s:y\n\
             per tool (claim sets gaining / losing it):\n  s:x: +1 -0\n  s:y: +0 -1\n"
        );
    }
}
