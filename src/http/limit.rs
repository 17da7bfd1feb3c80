//! Rate limits per subject: one token bucket per (`sub` claim, route class), so that one agent
//! looping on its manifest, one client reconnecting its streams in a storm or one runaway admin
//! script slows down itself and nobody else.
//!
//! Why per subject and not per address: agents behind one orchestrator host or one NAT share
//! an address, not an identity, and the guardrail is about identities. A limit therefore applies
//! once the token is verified (the subject is only known then): an unauthenticated request
//! costs one signature check and gets 401, never a bucket. Tokens without a `sub` share the
//! bucket of the empty subject.
//!
//! The buckets are GCRA cells (`governor`): `per_second` is the sustained rate, `burst` how
//! many requests a rested subject may send at once. The hot path is one keyed hash of the
//! subject, one read of a sharded map and one compare-and-swap: nothing is allocated, because
//! the key is the subject's 64-bit hash under a per-process random key (two subjects sharing a
//! bucket would take a 64-bit collision under a key nobody outside knows).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::num::NonZeroU32;
use std::sync::Weak;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

use super::errors::ApiError;

/// How often buckets of subjects that went quiet are dropped, so that the map holds only the
/// subjects seen within about one refill period.
pub const FORGET_INTERVAL: Duration = Duration::from_secs(60);

/// The routes that share a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteClass {
    /// `GET /agents/tools` and its alias.
    AgentReads,
    /// Opening `GET /agents/tools/stream` (and its aliases); an open stream costs nothing more.
    Streams,
    /// Every admin request other than `GET`/`HEAD`, `POST /admin/preview` included.
    AdminWrites,
    /// The AuthZEN decision requests (`POST /access/v1/…`): a batch counts once, plus once
    /// more for each distinct evaluation it needs beyond the first.
    Decisions,
    /// MCP `tools/call`: each call goes to an upstream on the caller's behalf.
    ToolCalls,
}

impl RouteClass {
    /// The class as named in settings, metrics and messages.
    pub const fn name(self) -> &'static str {
        match self {
            RouteClass::AgentReads => "agent_reads",
            RouteClass::Streams => "streams",
            RouteClass::AdminWrites => "admin_writes",
            RouteClass::Decisions => "decisions",
            RouteClass::ToolCalls => "tool_calls",
        }
    }

    /// Every class, in the order the settings list them.
    pub const ALL: [RouteClass; 5] = [
        RouteClass::AgentReads,
        RouteClass::Streams,
        RouteClass::AdminWrites,
        RouteClass::Decisions,
        RouteClass::ToolCalls,
    ];
}

/// One class's budget per subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Sustained requests per second.
    pub per_second: NonZeroU32,
    /// Requests a subject that has been quiet may send at once.
    pub burst: NonZeroU32,
}

impl Budget {
    /// `per_second` sustained with bursts of `burst`; `None` if either is zero.
    pub const fn new(per_second: u32, burst: u32) -> Option<Budget> {
        match (NonZeroU32::new(per_second), NonZeroU32::new(burst)) {
            (Some(per_second), Some(burst)) => Some(Budget { per_second, burst }),
            _ => None,
        }
    }
}

/// The budget of each class; `None` means that class is not limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub agent_reads: Option<Budget>,
    pub streams: Option<Budget>,
    pub admin_writes: Option<Budget>,
    pub decisions: Option<Budget>,
    pub tool_calls: Option<Budget>,
}

/// 100 manifest reads per second per subject, bursts of 200: far above what an agent needs
/// (its manifest changes only with the catalog, and streams push the changes), low enough that
/// a subject stuck in a loop cannot take the gateway's CPU from everyone else.
pub const DEFAULT_AGENT_READS: Budget = budget(100, 200);
/// 5 stream opens per second per subject, bursts of 50: a client reconnecting all its streams
/// (at most 16 by default) after a restart passes; a reconnect loop does not.
pub const DEFAULT_STREAMS: Budget = budget(5, 50);
/// 20 admin writes per second per subject, bursts of 100: scripts that make many changes in a
/// row pass; bulk imports belong in `PUT /admin/catalog` (one request).
pub const DEFAULT_ADMIN_WRITES: Budget = budget(20, 100);
/// 1,000 decision requests per second per subject, bursts of 2,000: an executor usually asks
/// with one identity of its own for every tool call of many agents (or forwards each agent's
/// token, which then spends that agent's budget); the limit is there for a runaway loop.
pub const DEFAULT_DECISIONS: Budget = budget(1000, 2000);
/// 20 tool calls per second per subject, bursts of 100: an agent's calls wait on a model and an
/// upstream, so this is far above one agent's pace; it stops a loop from hammering upstreams
/// through the gateway.
pub const DEFAULT_TOOL_CALLS: Budget = budget(20, 100);

const fn budget(per_second: u32, burst: u32) -> Budget {
    match Budget::new(per_second, burst) {
        Some(budget) => budget,
        None => panic!("a default budget is not zero"),
    }
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            agent_reads: Some(DEFAULT_AGENT_READS),
            streams: Some(DEFAULT_STREAMS),
            admin_writes: Some(DEFAULT_ADMIN_WRITES),
            decisions: Some(DEFAULT_DECISIONS),
            tool_calls: Some(DEFAULT_TOOL_CALLS),
        }
    }
}

impl RateLimits {
    /// No class limited.
    pub const UNLIMITED: RateLimits = RateLimits {
        agent_reads: None,
        streams: None,
        admin_writes: None,
        decisions: None,
        tool_calls: None,
    };

    /// The budget of `class`.
    pub fn of(&self, class: RouteClass) -> Option<Budget> {
        match class {
            RouteClass::AgentReads => self.agent_reads,
            RouteClass::Streams => self.streams,
            RouteClass::AdminWrites => self.admin_writes,
            RouteClass::Decisions => self.decisions,
            RouteClass::ToolCalls => self.tool_calls,
        }
    }
}

type Buckets = RateLimiter<u64, DashMapStateStore<u64>, DefaultClock>;

/// A request over its class's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub class: RouteClass,
    pub budget: Budget,
    /// Whole seconds until the subject's next request of this class would pass (at least 1).
    pub retry_after_secs: u64,
}

impl From<Limited> for ApiError {
    fn from(limited: Limited) -> Self {
        ApiError::TooManyRequests {
            detail: format!(
                "this subject sent more {} requests than allowed ({} per second, bursts of {}); \
                 retry after {} s",
                limited.class.name().replace('_', " "),
                limited.budget.per_second,
                limited.budget.burst,
                limited.retry_after_secs
            ),
            retry_after_secs: limited.retry_after_secs,
        }
    }
}

/// The buckets of every limited class.
pub struct Limiters {
    limits: RateLimits,
    /// Keys subjects; random per process, so bucket sharing cannot be arranged from outside.
    hasher: RandomState,
    clock: DefaultClock,
    agent_reads: Option<Buckets>,
    streams: Option<Buckets>,
    admin_writes: Option<Buckets>,
    decisions: Option<Buckets>,
    tool_calls: Option<Buckets>,
}

impl Limiters {
    pub fn new(limits: RateLimits) -> Limiters {
        let clock = DefaultClock::default();
        let buckets = |budget: Option<Budget>| {
            budget.map(|budget| {
                let quota = Quota::per_second(budget.per_second).allow_burst(budget.burst);
                RateLimiter::dashmap_with_clock(quota, clock.clone())
            })
        };
        Limiters {
            limits,
            hasher: RandomState::new(),
            agent_reads: buckets(limits.agent_reads),
            streams: buckets(limits.streams),
            admin_writes: buckets(limits.admin_writes),
            decisions: buckets(limits.decisions),
            tool_calls: buckets(limits.tool_calls),
            clock,
        }
    }

    fn buckets(&self, class: RouteClass) -> Option<&Buckets> {
        match class {
            RouteClass::AgentReads => self.agent_reads.as_ref(),
            RouteClass::Streams => self.streams.as_ref(),
            RouteClass::AdminWrites => self.admin_writes.as_ref(),
            RouteClass::Decisions => self.decisions.as_ref(),
            RouteClass::ToolCalls => self.tool_calls.as_ref(),
        }
    }

    /// Takes one request of `class` from `subject`'s bucket, or says how long to wait.
    pub fn check(&self, class: RouteClass, subject: &str) -> Result<(), Limited> {
        let Some(buckets) = self.buckets(class) else {
            return Ok(());
        };
        let key = self.hasher.hash_one(subject);
        buckets.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            Limited {
                class,
                budget: self
                    .limits
                    .of(class)
                    .expect("a class has buckets only when it has a budget"),
                retry_after_secs: whole_seconds(wait),
            }
        })
    }

    /// Takes `n` more requests of `class` from `subject`'s bucket (a request that costs more
    /// than one: a batch with many distinct evaluations), or says how long to wait. More than
    /// a burst is taken as a whole burst, so that such a request still passes from a rested
    /// bucket instead of never.
    pub fn check_n(&self, class: RouteClass, subject: &str, n: u32) -> Result<(), Limited> {
        let (Some(buckets), Some(budget)) = (self.buckets(class), self.limits.of(class)) else {
            return Ok(());
        };
        let Some(n) = NonZeroU32::new(n.min(budget.burst.get())) else {
            return Ok(());
        };
        let key = self.hasher.hash_one(subject);
        match buckets.check_key_n(&key, n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(Limited {
                class,
                budget,
                retry_after_secs: whole_seconds(not_until.wait_time_from(self.clock.now())),
            }),
            // Not reachable (n is at most the burst); refused as a full bucket's wait if so.
            Err(_) => Err(Limited {
                class,
                budget,
                retry_after_secs: whole_seconds(Duration::from_secs_f64(
                    f64::from(budget.burst.get()) / f64::from(budget.per_second.get()),
                )),
            }),
        }
    }

    /// Drops the buckets of subjects that are back to a full bucket (nothing to remember).
    pub fn forget_idle(&self) {
        for buckets in RouteClass::ALL
            .into_iter()
            .filter_map(|class| self.buckets(class))
        {
            buckets.retain_recent();
            buckets.shrink_to_fit();
        }
    }

    /// Subjects with a bucket in `class` (for tests and diagnostics).
    pub fn tracked(&self, class: RouteClass) -> usize {
        self.buckets(class).map_or(0, Buckets::len)
    }

    /// Forgets idle buckets every [`FORGET_INTERVAL`] for as long as the limiters exist.
    pub fn spawn_forgetting(limiters: Weak<Limiters>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(FORGET_INTERVAL);
            ticks.tick().await; // the first tick is immediate
            loop {
                ticks.tick().await;
                let Some(limiters) = limiters.upgrade() else {
                    break;
                };
                limiters.forget_idle();
            }
        })
    }
}

/// `Retry-After` is in whole seconds: round up, and never say 0 (that invites a busy retry).
fn whole_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_second: u32, burst: u32) -> RateLimits {
        let budget = Budget::new(per_second, burst);
        RateLimits {
            agent_reads: budget,
            streams: budget,
            admin_writes: budget,
            decisions: budget,
            tool_calls: budget,
        }
    }

    #[test]
    fn a_burst_passes_and_the_next_request_is_limited() {
        let limiters = Limiters::new(limits(1, 3));
        for _ in 0..3 {
            limiters
                .check(RouteClass::AgentReads, "alice")
                .expect("within the burst");
        }
        let limited = limiters
            .check(RouteClass::AgentReads, "alice")
            .expect_err("over the burst");
        assert_eq!(limited.class, RouteClass::AgentReads);
        assert_eq!(limited.retry_after_secs, 1);
    }

    #[test]
    fn subjects_and_classes_have_their_own_buckets() {
        let limiters = Limiters::new(limits(1, 1));
        limiters
            .check(RouteClass::AgentReads, "alice")
            .expect("first");
        assert!(limiters.check(RouteClass::AgentReads, "alice").is_err());
        limiters
            .check(RouteClass::AgentReads, "bob")
            .expect("another subject");
        limiters
            .check(RouteClass::Streams, "alice")
            .expect("another class");
        limiters
            .check(RouteClass::AdminWrites, "alice")
            .expect("another class");
        assert_eq!(limiters.tracked(RouteClass::AgentReads), 2);
    }

    #[test]
    fn an_unlimited_class_never_limits_and_keeps_no_state() {
        let limiters = Limiters::new(RateLimits::UNLIMITED);
        for _ in 0..1000 {
            limiters
                .check(RouteClass::AgentReads, "alice")
                .expect("no limit");
        }
        assert_eq!(limiters.tracked(RouteClass::AgentReads), 0);
    }

    #[test]
    fn a_request_costing_n_takes_n_and_at_most_a_burst() {
        let limiters = Limiters::new(limits(1, 5));
        limiters
            .check_n(RouteClass::Decisions, "alice", 4)
            .expect("4 of 5");
        limiters
            .check(RouteClass::Decisions, "alice")
            .expect("the fifth");
        assert!(limiters.check(RouteClass::Decisions, "alice").is_err());
        limiters
            .check_n(RouteClass::Decisions, "bob", 0)
            .expect("nothing to take");
        limiters
            .check_n(RouteClass::Decisions, "bob", 1000)
            .expect("more than a burst takes a rested bucket whole");
        let limited = limiters
            .check(RouteClass::Decisions, "bob")
            .expect_err("empty");
        assert_eq!(limited.retry_after_secs, 1);
    }

    #[test]
    fn buckets_back_to_full_are_forgotten() {
        let limiters = Limiters::new(limits(1000, 1));
        limiters.check(RouteClass::Streams, "alice").expect("first");
        assert_eq!(limiters.tracked(RouteClass::Streams), 1);
        limiters.forget_idle();
        assert_eq!(limiters.tracked(RouteClass::Streams), 1, "still refilling");
        std::thread::sleep(Duration::from_millis(5));
        limiters.forget_idle();
        assert_eq!(
            limiters.tracked(RouteClass::Streams),
            0,
            "full again: nothing to keep"
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_millis(10)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1000)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1001)), 2);
    }

    #[test]
    fn a_zero_budget_is_no_budget() {
        assert_eq!(Budget::new(0, 10), None);
        assert_eq!(Budget::new(10, 0), None);
        assert!(Budget::new(1, 1).is_some());
    }

    #[test]
    fn the_limited_problem_names_the_class_and_the_budget() {
        let limited = Limited {
            class: RouteClass::AdminWrites,
            budget: DEFAULT_ADMIN_WRITES,
            retry_after_secs: 2,
        };
        let ApiError::TooManyRequests {
            detail,
            retry_after_secs,
        } = ApiError::from(limited)
        else {
            panic!("a 429");
        };
        assert_eq!(retry_after_secs, 2);
        assert!(detail.contains("admin writes") && detail.contains("20 per second"));
    }
}
