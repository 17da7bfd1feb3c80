//! Runs (docs/runs.md): what the gateway decides for an agent over a whole execution, beside
//! what it decides per request. Pure: the values a run is made of (its claim, budget, pinned
//! set, state rule) and the rules over a tree of runs ([`forest`]), which the embedded run
//! store applies as they are and the Redis store's scripts mirror.
//!
//! Every rule here narrows: a run sees at most what its token sees ([`Pinned`] is intersected
//! with the evaluation, never united), a refused call costs nothing and moves nothing, and a
//! child's budget is carved out of its parent's remaining one.

pub mod budget;
pub mod forest;
mod pinned;

use serde_json::Value;

use super::claims::Claims;

pub use budget::{Budget, BudgetError, CounterKey, Counters};
pub use pinned::Pinned;

/// The claim a run token carries (`{"id", "root", "depth"}`), set only by the verifier on
/// tokens toolgate signed.
pub const RUN_CLAIM: &str = "toolgate_run";

/// The claim toolgate computes for every caller (`{"depth": n}`, read by policies as
/// `toolgate.depth`): the number of `act` levels toolgate minted. A token of another issuer
/// that carries it is forged.
pub const GATEWAY_CLAIM: &str = "toolgate";

/// The state a run starts in when none is asked for.
pub const DEFAULT_STATE: &str = "undefined";

/// The longest state name accepted (bytes).
pub const MAX_STATE_BYTES: usize = 128;

/// The run a caller acts in, as its claims carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunClaim {
    pub id: String,
    pub root: String,
    pub depth: usize,
}

impl RunClaim {
    /// The run `claims` act in: `None` without [`RUN_CLAIM`], `Some(Err)` when it is there
    /// but cannot be read (which acts in no run and sees nothing: fail closed).
    pub fn of(claims: &Claims) -> Option<Result<RunClaim, ()>> {
        let claim = claims.get(RUN_CLAIM).filter(|claim| !claim.is_null())?;
        Some(RunClaim::read(claim).ok_or(()))
    }

    fn read(claim: &Value) -> Option<RunClaim> {
        let id = claim.get("id")?.as_str()?;
        let root = claim.get("root")?.as_str()?;
        let depth = usize::try_from(claim.get("depth")?.as_u64()?).ok()?;
        (is_run_id(id) && is_run_id(root)).then(|| RunClaim {
            id: id.to_owned(),
            root: root.to_owned(),
            depth,
        })
    }

    pub fn to_claim(&self) -> Value {
        serde_json::json!({"id": self.id, "root": self.root, "depth": self.depth})
    }
}

/// Whether `text` has the shape of a run id toolgate makes: `run_` and 22 to 64 URL-safe
/// characters (the random part is 128 bits or more).
pub fn is_run_id(text: &str) -> bool {
    text.strip_prefix("run_").is_some_and(|rest| {
        (22..=64).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// The value of [`GATEWAY_CLAIM`] at `depth`.
pub fn gateway_claim(depth: usize) -> Value {
    serde_json::json!({ "depth": depth })
}

/// Whether a tool whose `available_in_states` is `states` may be called in `state`: no list
/// means every state, `*` any state, an empty list none.
pub fn available_in(states: Option<&[String]>, state: &str) -> bool {
    states.is_none_or(|states| states.iter().any(|s| s == state || s == "*"))
}

/// What is wrong with a state name, if anything: it must be 1 to [`MAX_STATE_BYTES`] bytes
/// without control characters, and not `*` (which tools use to mean "any state").
pub fn state_problem(state: &str) -> Option<String> {
    if state.is_empty() || state.len() > MAX_STATE_BYTES {
        return Some(format!("must be 1 to {MAX_STATE_BYTES} bytes long"));
    }
    if state == "*" {
        return Some("'*' is not a state: tools use it to mean any state".to_owned());
    }
    if state.chars().any(char::is_control) {
        return Some("must not contain control characters".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::claims::claims_of;

    #[test]
    fn availability_reads_the_list_as_the_seeds_do() {
        let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(available_in(None, "a"));
        assert!(available_in(Some(&list(&["a", "b"])), "b"));
        assert!(!available_in(Some(&list(&["a"])), "b"));
        assert!(available_in(Some(&list(&["*"])), "anything"));
        assert!(!available_in(Some(&[]), "a"), "an empty list: never");
    }

    #[test]
    fn run_claims_are_read_strictly() {
        let id = "run_AAAAAAAAAAAAAAAAAAAAAA";
        let good = claims_of(json!({RUN_CLAIM: {"id": id, "root": id, "depth": 0}}));
        assert_eq!(
            RunClaim::of(&good),
            Some(Ok(RunClaim {
                id: id.to_owned(),
                root: id.to_owned(),
                depth: 0
            }))
        );
        for bad in [
            json!({"id": id, "root": id}),
            json!({"id": "run_short", "root": id, "depth": 0}),
            json!({"id": id, "root": id, "depth": -1}),
            json!("run"),
        ] {
            assert_eq!(
                RunClaim::of(&claims_of(json!({RUN_CLAIM: bad.clone()}))),
                Some(Err(())),
                "{bad}"
            );
        }
        assert_eq!(RunClaim::of(&claims_of(json!({"sub": "a"}))), None);
    }

    #[test]
    fn state_names_are_bounded() {
        assert_eq!(state_problem("review"), None);
        assert!(state_problem("").is_some());
        assert!(state_problem("*").is_some());
        assert!(state_problem("a\nb").is_some());
        assert!(state_problem(&"x".repeat(MAX_STATE_BYTES + 1)).is_some());
    }
}
