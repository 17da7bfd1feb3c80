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
use std::sync::{Arc, Weak};
use std::time::Duration;

use governor::clock::Clock as _;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

use super::Caller;
use crate::telemetry::Metrics;

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

type Buckets = RateLimiter<u64, DashMapStateStore<u64>, BucketClock, NoOpMiddleware<Nanos>>;

/// The App's clock as the buckets read it: its monotonic reading, so that a step of the wall
/// clock neither refills nor drains a bucket, and a test that moves a
/// [`ManualClock`](crate::clock::ManualClock) refills them without waiting.
#[derive(Debug, Clone)]
pub struct BucketClock(Arc<dyn crate::clock::Clock>);

impl governor::clock::Clock for BucketClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.0.monotonic())
    }
}

/// A request over its class's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub class: RouteClass,
    pub budget: Budget,
    /// Whole seconds until the subject's next request of this class would pass (at least 1).
    pub retry_after_secs: u64,
}

impl std::fmt::Display for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this subject sent more {} requests than allowed ({} per second, bursts of {}); \
             retry after {} s",
            self.class.name().replace('_', " "),
            self.budget.per_second,
            self.budget.burst,
            self.retry_after_secs
        )
    }
}

impl std::error::Error for Limited {}

/// The buckets of every limited class.
pub struct Limiters {
    limits: RateLimits,
    /// Keys subjects; random per process, so bucket sharing cannot be arranged from outside.
    hasher: RandomState,
    clock: BucketClock,
    agent_reads: Option<Buckets>,
    streams: Option<Buckets>,
    admin_writes: Option<Buckets>,
    decisions: Option<Buckets>,
    tool_calls: Option<Buckets>,
    /// Where refusals are counted, when observed.
    metrics: Option<Arc<Metrics>>,
}

impl Limiters {
    pub fn new(limits: RateLimits) -> Limiters {
        Limiters::with_clock(limits, Arc::new(crate::clock::SystemClock))
    }

    /// Limiters whose buckets refill by `clock` (the App's).
    pub fn with_clock(limits: RateLimits, clock: Arc<dyn crate::clock::Clock>) -> Limiters {
        let clock = BucketClock(clock);
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
            metrics: None,
        }
    }

    /// The same limiters, counting every refusal in `metrics` (by class).
    pub fn observed(mut self, metrics: Arc<Metrics>) -> Limiters {
        self.metrics = Some(metrics);
        self
    }

    /// Takes one request of `class` from `caller`'s budget (its `sub`), or says how long to
    /// wait. The refusal is counted.
    pub fn charge(&self, class: RouteClass, caller: &Caller) -> Result<(), Limited> {
        self.check(class, caller.sub())
            .inspect_err(|_| self.count(class))
    }

    /// Takes `n` more requests of `class` from `caller`'s budget, for a request that costs
    /// more than the one [`Limiters::charge`] took (at most a burst; see
    /// [`Limiters::check_n`]).
    pub fn charge_more(&self, class: RouteClass, caller: &Caller, n: usize) -> Result<(), Limited> {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.check_n(class, caller.sub(), n)
            .inspect_err(|_| self.count(class))
    }

    fn count(&self, class: RouteClass) {
        if let Some(metrics) = &self.metrics {
            metrics.rate_limited(class.name());
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
}
