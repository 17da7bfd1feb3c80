//! Delegation that only narrows (docs/semantics.md section 6, step 4; docs/api.md "Delegation").
//!
//! A delegated token (minted by toolgate's `/oauth/token` from a token it accepts) is evaluated
//! as a claim set `C_n`: the claims the chain was made from (`C_0`) with the token's own
//! [`PER_TOKEN`] claims (its `jti`, `iat`, `exp`, `nbf`: a deny on a `jti` revokes that very
//! token), its `act` claim (nested once per delegation, RFC 8693 §4.1) and [`CLAIM`], the scope
//! of every delegation along the chain, oldest first, and the per-token claims of every level:
//! `{"scopes": [["tool:a", "group:g"], …], "tokens": [{"jti": …}, …]}`. Only the verifier puts
//! [`CLAIM`] into a caller's claims (it refuses tokens of other issuers that carry it); an
//! admin may write it into claims evaluated for a preview, to see a chain.
//!
//! The tools of `C_n` are those its own policies grant, intersected with, for every level `k`
//! below it, the tools granted to `C_k` (the same claims with `act` peeled back to that level)
//! and the scope made at level `k + 1` (`tool:<id>` keeps that tool, `group:<id>` the members
//! of that group when it is granted to `C_k`). So a child never holds a tool its parent does
//! not: a policy that grants on `act` cannot widen a child, one that denies on it narrows it,
//! and a policy change that takes a tool from the parent takes it from every descendant, at
//! once, since every level is evaluated now. Fail closed: a [`CLAIM`] that cannot be read
//! restricts to nothing.

use fixedbitset::FixedBitSet;
use serde_json::Value;

use super::claims::Claims;
use super::snapshot::{Snapshot, tool_index};

/// The claim that carries a delegation chain's scopes in the claims evaluated for it.
pub use super::claims::DELEGATION_CLAIM as CLAIM;

/// The claim that nests actors (RFC 8693 §4.1): its depth is the delegation depth.
pub use super::claims::ACT_CLAIM as ACT;

/// The claims that differ from one token of an identity to the next: each level of a chain
/// keeps its own, so that a policy on them (a deny on a leaked token's `jti`) reaches exactly
/// that token and every token delegated from it.
pub const PER_TOKEN: [&str; 4] = ["jti", "iat", "exp", "nbf"];

/// The [`PER_TOKEN`] claims of `claims`.
pub fn per_token(claims: &Claims) -> Value {
    let mut own = serde_json::Map::new();
    for name in PER_TOKEN {
        if let Some(value) = claims.get(name) {
            own.insert(name.to_owned(), value.clone());
        }
    }
    Value::Object(own)
}

/// The longest chain read: far beyond any `TOOLGATE_DELEGATION_MAX_DEPTH` in use.
pub const MAX_LEVELS: usize = 32;

/// One item of a delegation scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ScopeItem {
    /// `tool:<id>`: that tool.
    Tool(String),
    /// `group:<id>`: the members of that group, if it is granted to the delegating claims.
    Group(String),
    /// `*`: everything granted to the delegating claims. Made by the gateway for a child run
    /// started without a scope (docs/runs.md); never accepted in a token exchange's scope.
    All,
}

impl ScopeItem {
    /// `tool:<id>` or `group:<id>`; `None` for anything else (or an empty id).
    pub fn parse(text: &str) -> Option<ScopeItem> {
        match text.split_once(':') {
            Some(("tool", id)) if !id.is_empty() => Some(ScopeItem::Tool(id.to_owned())),
            Some(("group", id)) if !id.is_empty() => Some(ScopeItem::Group(id.to_owned())),
            _ => None,
        }
    }

    /// [`ScopeItem::parse`], and `*` ([`ScopeItem::All`]), as a chain the gateway made carries
    /// them.
    pub fn parse_in_chain(text: &str) -> Option<ScopeItem> {
        if text == "*" {
            return Some(ScopeItem::All);
        }
        ScopeItem::parse(text)
    }

    pub fn to_text(&self) -> String {
        match self {
            ScopeItem::Tool(id) => format!("tool:{id}"),
            ScopeItem::Group(id) => format!("group:{id}"),
            ScopeItem::All => "*".to_owned(),
        }
    }
}

/// The member of [`CLAIM`] listing the claim paths (as segments) whose values the chain
/// carries from the claims it started from: only what the policies read when it was made, and
/// `sub` and `aud`, so that a sub-agent does not read its parent's e-mail address or groups out
/// of its own token. Absent in chains made before it was recorded (they carry every claim).
pub const CARRIED: &str = "carried";

/// The scopes of a delegation chain, oldest first, as [`CLAIM`] carries them; `Err` when the
/// claim is there but cannot be read (which restricts to nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub scopes: Vec<Vec<ScopeItem>>,
    /// The claim paths the chain carries ([`CARRIED`]); `None`: every claim.
    pub carried: Option<Vec<Vec<String>>>,
}

/// Whether a claim path is of a delegation's own making, not of the claims it started from:
/// `act`, [`CLAIM`], the [`PER_TOKEN`] claims, which every token carries for itself, and the
/// claims the gateway computes for every token (`toolgate`, `toolgate_run`).
pub fn is_own_path(segments: &[String]) -> bool {
    use super::run::{GATEWAY_CLAIM, RUN_CLAIM};
    segments.first().is_some_and(|first| {
        first == ACT
            || first == CLAIM
            || first == GATEWAY_CLAIM
            || first == RUN_CLAIM
            || PER_TOKEN.contains(&first.as_str())
    })
}

/// Whether `carried` holds the value at `path`: one of them is `path` or a prefix of it.
pub fn covers(carried: &[Vec<String>], path: &[String]) -> bool {
    carried.iter().any(|c| path.starts_with(c))
}

impl Chain {
    /// The chain `claims` carry: `None` when they carry none (not delegated).
    pub fn of(claims: &Claims) -> Option<Result<Chain, ()>> {
        // `null` is absent, as for every claim (the claims key reads it so).
        let claim = claims.get(CLAIM).filter(|claim| !claim.is_null())?;
        Some(Chain::read(claim).ok_or(()))
    }

    fn read(claim: &Value) -> Option<Chain> {
        let scopes = claim.get("scopes")?.as_array()?;
        // Each level costs a claim evaluation: a chain longer than any the gateway mints (an
        // admin's preview claims) is unreadable, which keeps nothing.
        if scopes.is_empty() || scopes.len() > MAX_LEVELS {
            return None;
        }
        let scopes = scopes
            .iter()
            .map(|scope| {
                scope
                    .as_array()?
                    .iter()
                    .map(|item| ScopeItem::parse_in_chain(item.as_str()?))
                    .collect::<Option<Vec<_>>>()
            })
            .collect::<Option<Vec<_>>>()?;
        let carried = match claim.get(CARRIED) {
            None => None,
            Some(paths) => Some(
                paths
                    .as_array()?
                    .iter()
                    .map(|path| {
                        path.as_array()?
                            .iter()
                            .map(|segment| segment.as_str().map(str::to_owned))
                            .collect::<Option<Vec<String>>>()
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
        };
        Some(Chain { scopes, carried })
    }

    /// The claim value for these scopes.
    pub fn to_claim(&self) -> Value {
        let scopes: Vec<Vec<String>> = self
            .scopes
            .iter()
            .map(|scope| scope.iter().map(ScopeItem::to_text).collect())
            .collect();
        let mut claim = serde_json::json!({ "scopes": scopes });
        if let Some(carried) = &self.carried {
            claim[CARRIED] = serde_json::json!(carried);
        }
        claim
    }
}

/// How many `act` levels `claims` nest: the delegation depth (0 for a token nobody delegated).
pub fn depth(claims: &Claims) -> usize {
    let mut depth = 0;
    let mut act = claims.get(ACT);
    while let Some(Value::Object(level)) = act {
        depth += 1;
        act = level.get(ACT);
    }
    depth
}

/// The claims of level `k` of a chain of `n` delegations evaluated as `claims` (`C_n`): the
/// same claims without [`CLAIM`] (nor the run they act in), with level `k`'s [`PER_TOKEN`]
/// claims when the chain records them, their `act` peeled `n - k` times (absent when nothing
/// is left), and, when they carry the gateway's computed claim, its depth at that level.
pub fn level_claims(claims: &Claims, n: usize, k: usize) -> Claims {
    use super::run::{GATEWAY_CLAIM, RUN_CLAIM, gateway_claim};
    let mut level = claims.clone();
    level.remove(RUN_CLAIM);
    if level.contains_key(GATEWAY_CLAIM) {
        level.insert(GATEWAY_CLAIM.to_owned(), gateway_claim(k));
    }
    let chain = level.remove(CLAIM);
    if let Some(Value::Object(own)) = chain.as_ref().and_then(|chain| chain.get("tokens")?.get(k)) {
        for name in PER_TOKEN {
            level.remove(name);
        }
        level.extend(
            own.iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
    }
    let mut act = level.remove(ACT);
    for _ in k..n {
        act = match act {
            Some(Value::Object(mut object)) => object.remove(ACT),
            _ => None,
        };
    }
    if let Some(act) = act {
        level.insert(ACT.to_owned(), act);
    }
    level
}

impl Snapshot {
    /// The tools a delegated claim set may hold at most (see the module docs): every
    /// ancestor's granted tools and every scope, intersected. `None` when `claims` are not
    /// delegated; an empty set when their chain cannot be read.
    pub(super) fn restriction(&self, claims: &Claims) -> Option<FixedBitSet> {
        let chain = match Chain::of(claims)? {
            Ok(chain) => chain,
            Err(()) => return Some(FixedBitSet::with_capacity(self.tools.len())),
        };
        // A policy reading a claim the chain does not carry (written after the token was made)
        // cannot be decided for it: such a token holds nothing rather than what a claim it
        // lacks might have taken away.
        if let Some(carried) = &chain.carried
            && self
                .read_paths()
                .iter()
                .any(|path| !is_own_path(path.segments()) && !covers(carried, path.segments()))
        {
            return Some(FixedBitSet::with_capacity(self.tools.len()));
        }
        let n = chain.scopes.len();
        let mut allowed = FixedBitSet::with_capacity(self.tools.len());
        allowed.insert_range(..);
        for (k, scope) in chain.scopes.iter().enumerate() {
            let ancestor = level_claims(claims, n, k);
            let decision = self.decide_matched(self.matching_policies(&ancestor));
            allowed.intersect_with(&decision.granted);
            allowed.intersect_with(&self.scope_tools(
                scope,
                &decision.granted,
                &decision.granted_group_set,
            ));
        }
        Some(allowed)
    }

    /// The tools `scope` keeps, given the tools and groups granted to the claims that
    /// delegated it.
    fn scope_tools(
        &self,
        scope: &[ScopeItem],
        granted: &FixedBitSet,
        granted_groups: &FixedBitSet,
    ) -> FixedBitSet {
        let mut kept = FixedBitSet::with_capacity(self.tools.len());
        for item in scope {
            match item {
                ScopeItem::All => kept.union_with(granted),
                ScopeItem::Tool(id) => {
                    if let Some(t) = tool_index(self, id) {
                        kept.insert(t as usize);
                    }
                }
                ScopeItem::Group(id) => {
                    if let Some(&g) = self.group_index.get(id)
                        && granted_groups.contains(g as usize)
                    {
                        kept.union_with(&self.groups[g as usize].members);
                    }
                }
            }
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::claims::claims_of;

    #[test]
    fn levels_peel_act_and_drop_the_chain() {
        let claims = claims_of(json!({
            "sub": "u", "act": {"sub": "b", "act": {"sub": "a", "act": {"sub": "idp"}}},
            CLAIM: {"scopes": [["tool:x"], ["tool:x"]]}
        }));
        assert_eq!(depth(&claims), 3);
        assert_eq!(
            Value::Object(level_claims(&claims, 2, 0)),
            json!({"sub": "u", "act": {"sub": "idp"}})
        );
        assert_eq!(
            Value::Object(level_claims(&claims, 2, 1)),
            json!({"sub": "u", "act": {"sub": "a", "act": {"sub": "idp"}}})
        );
        let plain = claims_of(json!({"sub": "u", "act": {"sub": "b"}, CLAIM: {"scopes": [[]]}}));
        assert_eq!(
            Value::Object(level_claims(&plain, 1, 0)),
            json!({"sub": "u"})
        );
    }

    #[test]
    fn chains_are_read_strictly() {
        let chain = |value: Value| Chain::of(&claims_of(json!({ CLAIM: value })));
        assert_eq!(
            chain(json!({"scopes": [["tool:a", "group:g"]]})),
            Some(Ok(Chain {
                scopes: vec![vec![
                    ScopeItem::Tool("a".to_owned()),
                    ScopeItem::Group("g".to_owned())
                ]],
                carried: None,
            }))
        );
        for bad in [
            json!({"scopes": []}),
            json!({"scopes": [["tool:"]]}),
            json!({"scopes": [["admin:x"]]}),
            json!({"scopes": "tool:a"}),
        ] {
            assert_eq!(chain(bad.clone()), Some(Err(())), "{bad}");
        }
        assert_eq!(chain(json!(null)), None, "null is absent");
        let long = vec![vec!["tool:a"]; MAX_LEVELS + 1];
        assert_eq!(
            chain(json!({"scopes": long})),
            Some(Err(())),
            "too long: keeps nothing"
        );
        assert_eq!(Chain::of(&claims_of(json!({"sub": "a"}))), None);
    }
}
