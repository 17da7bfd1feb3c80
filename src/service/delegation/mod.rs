//! `POST /oauth/token`: an agent hands a sub-agent a token that can only see less (docs/api.md,
//! "Delegation"; RFC 8693 token exchange). The rules, all here:
//! - the subject token is one toolgate accepts (verified by the transport into a [`Caller`]);
//! - the scope lists `tool:<id>` and `group:<id>` items; those naming nothing the subject may
//!   see now are dropped, and a scope left empty is `invalid_scope`;
//! - the new token's depth (nested `act` levels) is at most the configured maximum
//!   (`invalid_request` beyond);
//! - it expires no later than the subject token, nor than the maximum lifetime;
//! - it is signed with toolgate's current key and carries the claims the chain was made from,
//!   its `act` (nesting the subject's) and every scope along the chain, so that the verifier
//!   rebuilds exactly the claims the domain narrows ([`crate::domain::delegation`]).
//!
//! Nothing is written: a delegated token is not audited; it is logged (never the token).

pub mod keys;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::Caller;
use crate::domain::claims::{ACT_CLAIM, ClaimPath, Claims, DELEGATION_CLAIM, project};
use crate::domain::delegation::{
    Chain, ScopeItem, covers, depth, is_own_path, level_claims, per_token,
};
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;

pub use keys::KeyRing;

/// RFC 8693 §3: the token type toolgate accepts and issues.
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// RFC 8693 §2.1.
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Scope items accepted in one request.
pub const MAX_SCOPE_ITEMS: usize = 64;

/// How deep and how long delegation goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelegationSettings {
    /// Nested `act` levels a delegated token may have (`TOOLGATE_DELEGATION_MAX_DEPTH`).
    pub max_depth: usize,
    /// The longest a delegated token lives (`TOOLGATE_DELEGATION_MAX_LIFETIME_SECS`).
    pub max_lifetime: Duration,
    /// How long a signing key signs before a new one is made
    /// (`TOOLGATE_DELEGATION_KEY_ROTATION_SECS`).
    pub key_rotation: Duration,
}

impl Default for DelegationSettings {
    fn default() -> Self {
        DelegationSettings {
            max_depth: 2,
            max_lifetime: Duration::from_secs(3600),
            key_rotation: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// The form fields of an exchange, as sent (the subject token already verified).
#[derive(Debug, Default, Clone)]
pub struct ExchangeRequest {
    pub grant_type: Option<String>,
    pub subject_token_type: Option<String>,
    pub requested_token_type: Option<String>,
    pub scope: Option<String>,
    pub expires_in: Option<String>,
}

/// A refused exchange: an RFC 6749 §5.2 error code and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    #[error("{0}")]
    UnsupportedGrantType(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    InvalidGrant(String),
    #[error("{0}")]
    InvalidScope(String),
    /// No signing key could be read: nothing is wrong with the request.
    #[error("{0}")]
    Unavailable(String),
}

impl ExchangeError {
    /// The `error` code of the answer.
    pub const fn code(&self) -> &'static str {
        match self {
            ExchangeError::UnsupportedGrantType(_) => "unsupported_grant_type",
            ExchangeError::InvalidRequest(_) => "invalid_request",
            ExchangeError::InvalidGrant(_) => "invalid_grant",
            ExchangeError::InvalidScope(_) => "invalid_scope",
            ExchangeError::Unavailable(_) => "temporarily_unavailable",
        }
    }
}

/// An issued delegated token (no `Debug`: it holds the token).
pub struct Issued {
    pub access_token: String,
    pub expires_in: u64,
    /// The scope kept, space-separated.
    pub scope: String,
    /// Nested `act` levels of the new token.
    pub depth: usize,
}

/// Mints delegated tokens.
pub struct Delegations {
    keys: Arc<KeyRing>,
    settings: DelegationSettings,
    /// What issued tokens' `iat`, `nbf` and `exp` are read from: the App's clock, the one the
    /// verifier checks them against.
    clock: Arc<dyn crate::clock::Clock>,
}

impl Delegations {
    pub fn new(keys: Arc<KeyRing>, settings: DelegationSettings) -> Delegations {
        Delegations {
            keys,
            settings,
            clock: Arc::new(crate::clock::SystemClock),
        }
    }

    /// The same, on `clock` (the App's: tests move it).
    pub fn with_clock(mut self, clock: Arc<dyn crate::clock::Clock>) -> Delegations {
        self.clock = clock;
        self
    }

    pub fn keys(&self) -> &Arc<KeyRing> {
        &self.keys
    }

    pub fn settings(&self) -> DelegationSettings {
        self.settings
    }

    /// A token for a sub-agent of `subject`, which can see at most what `subject` sees in
    /// `snapshot` within `request.scope`.
    pub fn exchange(
        &self,
        snapshot: &Snapshot,
        subject: &Caller,
        request: &ExchangeRequest,
    ) -> Result<Issued, ExchangeError> {
        check_types(request)?;
        let claims = subject.claims();
        let new_depth = depth(claims) + 1;
        if new_depth > self.settings.max_depth {
            return Err(ExchangeError::InvalidRequest(format!(
                "the subject token is at delegation depth {} and delegating it again would \
                 make depth {new_depth}, beyond the maximum of {} \
                 (TOOLGATE_DELEGATION_MAX_DEPTH)",
                new_depth - 1,
                self.settings.max_depth
            )));
        }
        let kept = kept_scope(snapshot, claims, request.scope.as_deref())?;
        let now = self.clock.unix_now();
        let exp = self.expiry(subject, request.expires_in.as_deref(), now)?;
        let key = self.keys.signing_key(now).ok_or_else(|| {
            ExchangeError::Unavailable(
                "no signing key is available yet; try again in a few seconds".to_owned(),
            )
        })?;
        let payload = payload(
            self.keys.issuer().issuer(),
            claims,
            snapshot.read_paths(),
            &kept,
            (now, exp),
        );
        let access_token = key.sign(&payload).map_err(|error| {
            ExchangeError::Unavailable(format!("the token could not be signed: {error}"))
        })?;
        let scope: Vec<String> = kept.iter().map(ScopeItem::to_text).collect();
        Ok(Issued {
            access_token,
            expires_in: u64::try_from(exp - now).unwrap_or(0),
            scope: scope.join(" "),
            depth: new_depth,
        })
    }

    /// When the new token expires: `expires_in` (at most the maximum lifetime), and never
    /// after the subject token.
    fn expiry(
        &self,
        subject: &Caller,
        expires_in: Option<&str>,
        now: i64,
    ) -> Result<i64, ExchangeError> {
        let max = i64::try_from(self.settings.max_lifetime.as_secs()).unwrap_or(i64::MAX);
        let asked = match expires_in {
            None => max,
            Some(text) => match text.trim().parse::<i64>() {
                Ok(seconds) if seconds >= 1 => seconds.min(max),
                _ => {
                    return Err(ExchangeError::InvalidRequest(format!(
                        "expires_in must be a whole number of seconds, at least 1, found \
                         '{}'",
                        text.chars().take(32).collect::<String>()
                    )));
                }
            },
        };
        let mut exp = now.saturating_add(asked);
        if let Some(parent) = subject.expires_at() {
            exp = exp.min(parent);
        }
        if exp <= now {
            return Err(ExchangeError::InvalidGrant(
                "the subject token expires now".to_owned(),
            ));
        }
        Ok(exp)
    }
}

/// `grant_type`, `subject_token_type` and `requested_token_type` as RFC 8693 has them
/// (checked again by [`Delegations::exchange`]; a transport checks them first, before the
/// subject token, so that another grant is `unsupported_grant_type` whatever else is sent).
pub fn check_types(request: &ExchangeRequest) -> Result<(), ExchangeError> {
    match request.grant_type.as_deref() {
        Some(TOKEN_EXCHANGE_GRANT) => {}
        Some(other) => {
            return Err(ExchangeError::UnsupportedGrantType(format!(
                "grant_type must be {TOKEN_EXCHANGE_GRANT}, found '{}'",
                other.chars().take(80).collect::<String>()
            )));
        }
        None => {
            return Err(ExchangeError::InvalidRequest(format!(
                "grant_type is required: {TOKEN_EXCHANGE_GRANT}"
            )));
        }
    }
    match request.subject_token_type.as_deref() {
        Some(ACCESS_TOKEN_TYPE) => {}
        _ => {
            return Err(ExchangeError::InvalidRequest(format!(
                "subject_token_type must be {ACCESS_TOKEN_TYPE}"
            )));
        }
    }
    match request.requested_token_type.as_deref() {
        None | Some(ACCESS_TOKEN_TYPE) => Ok(()),
        Some(_) => Err(ExchangeError::InvalidRequest(format!(
            "requested_token_type can only be {ACCESS_TOKEN_TYPE}"
        ))),
    }
}

/// The items of `scope` that name something `claims` may see now, in the order given, once.
fn kept_scope(
    snapshot: &Snapshot,
    claims: &Claims,
    scope: Option<&str>,
) -> Result<Vec<ScopeItem>, ExchangeError> {
    let scope = scope.ok_or_else(|| {
        ExchangeError::InvalidRequest(
            "scope is required: tool:<tool_id> and group:<group_id> items, space-separated"
                .to_owned(),
        )
    })?;
    let mut items = Vec::new();
    for text in scope.split_ascii_whitespace() {
        let item = ScopeItem::parse(text).ok_or_else(|| {
            ExchangeError::InvalidScope(format!(
                "'{}' is not a scope item: use tool:<tool_id> or group:<group_id>",
                text.chars().take(80).collect::<String>()
            ))
        })?;
        if !items.contains(&item) {
            items.push(item);
        }
        if items.len() > MAX_SCOPE_ITEMS {
            return Err(ExchangeError::InvalidScope(format!(
                "the scope lists more than {MAX_SCOPE_ITEMS} items"
            )));
        }
    }
    if items.is_empty() {
        return Err(ExchangeError::InvalidScope(
            "the scope lists nothing: give at least one tool:<tool_id> or group:<group_id>"
                .to_owned(),
        ));
    }
    let manifest = snapshot.manifest(claims, &ManifestOptions::default());
    items.retain(|item| names_some(&manifest, item));
    if items.is_empty() {
        return Err(ExchangeError::InvalidScope(
            "the scope names nothing the subject token may see".to_owned(),
        ));
    }
    Ok(items)
}

/// Whether `item` names a tool of `manifest` (`tool:` that tool, `group:` one it lists under
/// that group, `*` any).
pub fn names_some(manifest: &crate::domain::manifest::Manifest<'_>, item: &ScopeItem) -> bool {
    match item {
        ScopeItem::Tool(id) => manifest.groups_of(id).is_some(),
        ScopeItem::Group(_) => manifest.tool_ids().any(|tool| names(manifest, item, tool)),
        ScopeItem::All => manifest.tool_ids().next().is_some(),
    }
}

/// Whether `item` keeps `tool` of `manifest`.
pub fn names(
    manifest: &crate::domain::manifest::Manifest<'_>,
    item: &ScopeItem,
    tool: &str,
) -> bool {
    match item {
        ScopeItem::Tool(id) => id == tool,
        ScopeItem::Group(id) => manifest
            .groups_of(tool)
            .is_some_and(|groups| groups.contains(&id.as_str())),
        ScopeItem::All => true,
    }
}

/// The claim paths a new level of a chain carries: `sub`, `aud`, and what the policies `read`
/// now (but the paths of a delegation's own making), within what the chain carried `before`.
fn carried_paths(read: &[ClaimPath], before: Option<&[Vec<String>]>) -> Vec<ClaimPath> {
    let registered = ["sub", "aud"]
        .into_iter()
        .filter_map(|name| ClaimPath::parse(name).ok());
    let mut paths: Vec<ClaimPath> = read
        .iter()
        .filter(|path| !is_own_path(path.segments()))
        .cloned()
        .chain(registered)
        .filter(|path| before.is_none_or(|before| covers(before, path.segments())))
        .collect();
    paths.sort_by(|a, b| a.segments().cmp(b.segments()));
    paths.dedup_by(|a, b| a.segments() == b.segments());
    paths
}

/// The delegated token's claims (see the module docs). `read`: the claim paths the policies
/// read now; of the claims the chain started from, only those (and `sub` and `aud`) are
/// carried, and the paths carried are listed with them ([`CARRIED`]).
pub(crate) fn payload(
    issuer: &str,
    claims: &Claims,
    read: &[ClaimPath],
    kept: &[ScopeItem],
    (now, exp): (i64, i64),
) -> Map<String, Value> {
    // The claims the chain started from, every scope so far, and every level's per-token
    // claims so far (the subject's last).
    let (origin, mut scopes, tokens, before) = match Chain::of(claims) {
        Some(Ok(chain)) => {
            let n = chain.scopes.len();
            let tokens = claims
                .get(DELEGATION_CLAIM)
                .and_then(|chain| chain.get("tokens"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            (
                level_claims(claims, n, 0),
                chain.scopes,
                tokens,
                chain.carried,
            )
        }
        // A caller's claims carry a readable chain or none (the verifier makes them).
        Some(Err(())) | None => {
            let mut origin = claims.clone();
            origin.remove(DELEGATION_CLAIM);
            let tokens = vec![per_token(&origin)];
            (origin, Vec::new(), tokens, None)
        }
    };
    let paths = carried_paths(read, before.as_deref());
    let origin = project(&origin, &paths);
    scopes.push(kept.to_vec());
    let carried_segments: Vec<Vec<String>> =
        paths.iter().map(|path| path.segments().to_vec()).collect();
    let mut carried = Chain {
        scopes,
        carried: Some(carried_segments),
    }
    .to_claim();
    carried["tokens"] = Value::Array(tokens);
    carried["claims"] = Value::Object(origin.clone());
    let mut act = Map::new();
    if let Some(sub) = claims.get("sub") {
        act.insert("sub".to_owned(), sub.clone());
    }
    if let Some(inner) = claims.get(ACT_CLAIM) {
        act.insert(ACT_CLAIM.to_owned(), inner.clone());
    }
    let scope: Vec<String> = kept.iter().map(ScopeItem::to_text).collect();
    let mut payload = Map::new();
    payload.insert("iss".to_owned(), json!(issuer));
    for registered in ["sub", "aud"] {
        if let Some(value) = origin.get(registered) {
            payload.insert(registered.to_owned(), value.clone());
        }
    }
    payload.insert("iat".to_owned(), json!(now));
    payload.insert("exp".to_owned(), json!(exp));
    payload.insert("jti".to_owned(), json!(uuid::Uuid::new_v4().to_string()));
    payload.insert(ACT_CLAIM.to_owned(), Value::Object(act));
    payload.insert("scope".to_owned(), json!(scope.join(" ")));
    payload.insert(DELEGATION_CLAIM.to_owned(), carried);
    payload
}
