//! `POST /runs`: a run started for the caller, and its token (docs/runs.md section 1).

use std::collections::{BTreeMap, VecDeque};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::Runs;
use crate::domain::claims::Claims;
use crate::domain::delegation::{Chain, ScopeItem};
use crate::domain::manifest::ManifestOptions;
use crate::domain::run::forest::{CLAIMS_BYTES, Counter, RunRecord, StartRefusal};
use crate::domain::run::{
    Budget, CounterKey, DEFAULT_STATE, GATEWAY_CLAIM, Pinned, RUN_CLAIM, RunClaim, state_problem,
};
use crate::domain::snapshot::Snapshot;
use crate::service::Caller;
use crate::service::delegation::{self, DelegationSettings, KeyRing, MAX_SCOPE_ITEMS};

/// `POST /runs`'s body, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartRequest {
    pub state: Option<String>,
    pub scope: Option<Vec<ScopeItem>>,
    pub budget: Option<Budget>,
    pub expires_in: Option<u64>,
}

/// Why no run was started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// The request is wrong at `field` (422).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// `TOOLGATE_RUNS_MAX` runs are live (429).
    #[error("{0}")]
    TooMany(String),
    /// No signing key yet, or the run store did not answer (503).
    #[error("{0}")]
    Unavailable(String),
}

fn invalid(field: &str, message: impl Into<String>) -> StartError {
    StartError::Invalid {
        field: field.to_owned(),
        message: message.into(),
    }
}

impl StartRequest {
    /// Reads the body (an object; every member optional).
    pub fn parse(body: &Value) -> Result<StartRequest, StartError> {
        let object = body
            .as_object()
            .ok_or_else(|| invalid("body", "must be a JSON object"))?;
        let mut request = StartRequest::default();
        for (name, value) in object {
            match name.as_str() {
                "state" => {
                    let state = value
                        .as_str()
                        .ok_or_else(|| invalid("state", "must be a string"))?;
                    if let Some(problem) = state_problem(state) {
                        return Err(invalid("state", problem));
                    }
                    request.state = Some(state.to_owned());
                }
                "scope" => request.scope = Some(scope(value)?),
                "budget" => {
                    let budget =
                        Budget::parse(value, "budget").map_err(|error| StartError::Invalid {
                            field: error.field,
                            message: error.message,
                        })?;
                    request.budget = Some(budget);
                }
                "expires_in" => {
                    let seconds = value.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                        invalid(
                            "expires_in",
                            "must be a whole number of seconds, at least 1",
                        )
                    })?;
                    request.expires_in = Some(seconds);
                }
                other => {
                    let name: String = other.chars().take(80).collect();
                    return Err(invalid(
                        &name,
                        "unknown member: a run takes state, scope, budget and expires_in",
                    ));
                }
            }
        }
        Ok(request)
    }
}

fn scope(value: &Value) -> Result<Vec<ScopeItem>, StartError> {
    let items = value.as_array().ok_or_else(|| {
        invalid(
            "scope",
            "must be an array of tool:<id> and group:<id> items",
        )
    })?;
    if items.len() > MAX_SCOPE_ITEMS {
        return Err(invalid(
            "scope",
            format!("lists more than {MAX_SCOPE_ITEMS} items"),
        ));
    }
    let mut kept = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let item = item
            .as_str()
            .and_then(ScopeItem::parse)
            .ok_or_else(|| invalid(&format!("scope[{at}]"), "is not tool:<id> or group:<id>"))?;
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    if kept.is_empty() {
        return Err(invalid(
            "scope",
            "lists nothing: give at least one item, or leave scope out for everything",
        ));
    }
    Ok(kept)
}

/// A started run (no `Debug`: it holds the token).
pub struct Started {
    pub run_id: String,
    pub access_token: String,
    pub expires_in: u64,
    pub state: String,
    pub budget: Value,
    pub parent_run_id: Option<String>,
    pub depth: usize,
}

impl Started {
    /// The `201` body.
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "run_id": self.run_id,
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "state": self.state,
            "budget": self.budget,
            "depth": self.depth,
        });
        if let Some(parent) = &self.parent_run_id {
            out["parent_run_id"] = json!(parent);
        }
        out
    }
}

/// A new run id: `run_` and 128 random bits, base64url.
fn new_id() -> Result<String, StartError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| StartError::Unavailable(format!("no randomness for a run id: {error}")))?;
    Ok(format!("run_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// The claims the new run's token is evaluated as, and its `toolgate.depth`.
fn run_claims(
    keys: &KeyRing,
    snapshot: &Snapshot,
    caller: &Caller,
    scope: &[ScopeItem],
    (now, exp): (i64, i64),
) -> Result<(Claims, usize), StartError> {
    let mut claims = caller.claims().clone();
    claims.remove(GATEWAY_CLAIM);
    claims.remove(RUN_CLAIM);
    if caller.run().is_none() {
        let depth = match Chain::of(&claims) {
            Some(Ok(chain)) => chain.scopes.len(),
            _ => 0,
        };
        return Ok((claims, depth));
    }
    // A child run: one more delegation level over the parent run's claims.
    let payload = delegation::payload(
        keys.issuer().issuer(),
        &claims,
        snapshot.read_paths(),
        scope,
        (now, exp),
    );
    let child = crate::auth::delegated_claims(&payload)
        .map_err(|error| StartError::Unavailable(format!("the child's claims: {error}")))?;
    let depth = match Chain::of(&child) {
        Some(Ok(chain)) => chain.scopes.len(),
        _ => return Err(StartError::Unavailable("the child's chain".to_owned())),
    };
    Ok((child, depth))
}

impl Runs {
    /// Starts a run for `caller` at `snapshot` (a child run when the caller acts in one).
    pub async fn start(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        request: StartRequest,
        (keys, delegation): (&KeyRing, DelegationSettings),
    ) -> Result<Started, StartError> {
        let parent = caller.run().cloned();
        let chain_depth = match Chain::of(caller.claims()) {
            Some(Ok(chain)) => chain.scopes.len(),
            _ => 0,
        };
        if parent.is_some() && chain_depth + 1 > delegation.max_depth {
            return Err(invalid(
                "depth",
                format!(
                    "the parent run is at depth {chain_depth} and a child would be at depth {}, \
                     beyond the maximum of {} (TOOLGATE_DELEGATION_MAX_DEPTH)",
                    chain_depth + 1,
                    delegation.max_depth
                ),
            ));
        }
        let now = self.now();
        let exp = self.expiry(caller, request.expires_in, now)?;
        let chain_scope = request
            .scope
            .clone()
            .unwrap_or_else(|| vec![ScopeItem::All]);
        let (claims, depth) = run_claims(keys, snapshot, caller, &chain_scope, (now, exp))?;
        // Evaluated as the verifier will: with the depth toolgate computes.
        let mut evaluated = claims.clone();
        evaluated.insert(
            GATEWAY_CLAIM.to_owned(),
            crate::domain::run::gateway_claim(depth),
        );
        let pinned = pinned(
            snapshot,
            &evaluated,
            parent.as_deref(),
            request.scope.as_deref(),
        )?;
        let id = new_id()?;
        let root = parent
            .as_ref()
            .map_or_else(|| id.clone(), |p| p.root.clone());
        let run_claim = RunClaim {
            id: id.clone(),
            root: root.clone(),
            depth,
        };
        let token = self.sign(keys, &claims, &run_claim, (now, exp))?;
        let state = request.state.unwrap_or_else(|| DEFAULT_STATE.to_owned());
        let budget = self.budget(request.budget, parent.is_none());
        let record = RunRecord {
            ancestors: parent.as_ref().map_or_else(Vec::new, |p| {
                std::iter::once(p.id.clone())
                    .chain(p.ancestors.iter().cloned())
                    .collect()
            }),
            parent: parent.as_ref().map(|p| p.id.clone()),
            sub: caller.sub().to_owned(),
            pinned: pinned.digest(),
            pinned_revision: snapshot.revision(),
            claims: kept_claims(&claims, snapshot),
            ..new_record(&run_claim, &state, (now, exp), &budget)
        };
        let started = self
            .store
            .start(record, pinned, now, self.settings.max_live)
            .await
            .map_err(|error| StartError::Unavailable(error.to_string()))?;
        started.map_err(refused)?;
        Ok(Started {
            run_id: id,
            access_token: token,
            expires_in: u64::try_from(exp - now).unwrap_or(0),
            state,
            budget: Budget::to_json(&budget),
            parent_run_id: parent.map(|p| p.id.clone()),
            depth,
        })
    }

    /// The counters a new run holds: what it asks for, a root's `calls` capped by
    /// `TOOLGATE_RUN_MAX_CALLS`.
    fn budget(&self, asked: Option<Budget>, root: bool) -> BTreeMap<CounterKey, u64> {
        let mut counters = asked.unwrap_or_default().counters;
        if root && let Some(max) = self.settings.max_calls {
            let calls = counters.entry(CounterKey::Calls).or_insert(max);
            *calls = (*calls).min(max);
        }
        counters
    }

    /// When the run ends: `expires_in` (at most the maximum lifetime), never after the
    /// presenting token.
    fn expiry(
        &self,
        caller: &Caller,
        expires_in: Option<u64>,
        now: i64,
    ) -> Result<i64, StartError> {
        let max = self.settings.max_lifetime.as_secs();
        let asked = i64::try_from(expires_in.unwrap_or(max).min(max)).unwrap_or(i64::MAX);
        let mut exp = now.saturating_add(asked);
        if let Some(token_exp) = caller.expires_at() {
            exp = exp.min(token_exp);
        }
        if let Some(parent) = caller.run() {
            exp = exp.min(parent.expires_at);
        }
        if exp <= now {
            return Err(invalid("expires_in", "the presenting token expires now"));
        }
        Ok(exp)
    }

    fn sign(
        &self,
        keys: &KeyRing,
        claims: &Claims,
        run: &RunClaim,
        (now, exp): (i64, i64),
    ) -> Result<String, StartError> {
        let key = keys.signing_key(now).ok_or_else(|| {
            StartError::Unavailable(
                "no signing key is available yet; try again in a few seconds".to_owned(),
            )
        })?;
        let mut named = run.to_claim();
        named["claims"] = Value::Object(claims.clone());
        let mut payload = Map::new();
        payload.insert("iss".to_owned(), json!(keys.issuer().issuer()));
        for registered in ["sub", "aud"] {
            if let Some(value) = claims.get(registered) {
                payload.insert(registered.to_owned(), value.clone());
            }
        }
        payload.insert("iat".to_owned(), json!(now));
        payload.insert("exp".to_owned(), json!(exp));
        payload.insert("jti".to_owned(), json!(uuid::Uuid::new_v4().to_string()));
        payload.insert(RUN_CLAIM.to_owned(), named);
        key.sign(&payload).map_err(|error| {
            StartError::Unavailable(format!("the run token could not be signed: {error}"))
        })
    }
}

/// A record of the run `run` names, without its parent, subject and pinned set.
fn new_record(
    run: &RunClaim,
    state: &str,
    (now, exp): (i64, i64),
    budget: &BTreeMap<CounterKey, u64>,
) -> RunRecord {
    RunRecord {
        id: run.id.clone(),
        root: run.root.clone(),
        parent: None,
        ancestors: Vec::new(),
        depth: run.depth,
        sub: String::new(),
        state: state.to_owned(),
        created_at: now,
        expires_at: exp,
        ended_at: None,
        budget: budget
            .iter()
            .map(|(key, n)| {
                let counter = Counter {
                    limit: *n,
                    left: *n,
                    from: None,
                };
                (key.name(), counter)
            })
            .collect(),
        pinned: String::new(),
        pinned_revision: 0,
        children: Vec::new(),
        calls: VecDeque::new(),
        claims: Claims::new(),
    }
}

/// The claims a record keeps for View as: those the policies read, `sub` and the claims of a
/// delegation's own making (so that the chain is evaluated as the token's is), when they fit
/// [`CLAIMS_BYTES`]; none otherwise.
fn kept_claims(claims: &Claims, snapshot: &Snapshot) -> Claims {
    use crate::domain::claims::{ACT_CLAIM, ClaimPath, DELEGATION_CLAIM, project};
    let mut paths: Vec<ClaimPath> = snapshot.read_paths().to_vec();
    paths.extend(
        ["sub", ACT_CLAIM, DELEGATION_CLAIM]
            .into_iter()
            .filter_map(|name| ClaimPath::parse(name).ok()),
    );
    let kept = project(claims, &paths);
    let bytes = serde_json::to_vec(&kept).map_or(usize::MAX, |json| json.len());
    if bytes <= CLAIMS_BYTES {
        kept
    } else {
        Claims::new()
    }
}

/// A store's refusal to start a run, as the caller is told it.
fn refused(refusal: StartRefusal) -> StartError {
    match refusal {
        StartRefusal::TooMany { max } => StartError::TooMany(format!(
            "{max} runs are live, the most this gateway keeps (TOOLGATE_RUNS_MAX); end runs \
             that are done (DELETE /runs/{{id}}) or wait for them to expire"
        )),
        StartRefusal::Overdrawn {
            counter,
            asked,
            left,
        } => invalid(
            &format!("budget.{counter}"),
            format!("asks for {asked} but the parent run has {left} left"),
        ),
        refusal @ (StartRefusal::ParentEnded | StartRefusal::TooManyChildren) => {
            invalid("parent", refusal.to_string())
        }
    }
}

/// The tools the run pins: what its claims see now (within the parent run's pinned set), kept
/// by `scope` when one is given.
fn pinned(
    snapshot: &Snapshot,
    claims: &Claims,
    parent: Option<&super::RunView>,
    scope: Option<&[ScopeItem]>,
) -> Result<Pinned, StartError> {
    let options = ManifestOptions {
        pinned: parent.map(|p| p.pinned.clone()),
        ..ManifestOptions::default()
    };
    let manifest = snapshot.manifest(claims, &options);
    let kept: Vec<&str> = manifest
        .tool_ids()
        .filter(|tool| {
            scope.is_none_or(|items| {
                items
                    .iter()
                    .any(|item| delegation::names(&manifest, item, tool))
            })
        })
        .collect();
    if scope.is_some() && kept.is_empty() {
        return Err(invalid("scope", "names nothing the caller may see"));
    }
    Ok(Pinned::new(kept))
}
