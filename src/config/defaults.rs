//! Every default setting, in one place: what a gateway started with no configuration at all
//! does (`config/toolgate.example.toml` documents the same values). The settings types live
//! with what obeys them; their defaults live here, so that no default is written twice.

use std::time::Duration;

use crate::auth::AuthSettings;
use crate::cache::CacheBudgets;
use crate::service::limits::{Budget, RateLimits};
use crate::service::mcp::{McpSettings, SessionLimits};
use crate::upstream::CallLimits;

/// The configuration file read when none is named, if it exists.
pub const DEFAULT_CONFIG_FILE: &str = "config/toolgate.toml";
/// Default listen address (loopback: exposing the gateway is a deliberate choice).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default folder of the embedded store.
pub const DEFAULT_DATA_DIR: &str = "./data";
/// Backups of the embedded store kept in its `backups` folder.
pub const DEFAULT_BACKUP_KEEP: u64 = 10;
/// Default MongoDB database name.
pub const DEFAULT_MONGODB_DATABASE: &str = "toolgate";
/// Default clock-skew leeway for `exp`/`nbf`, in seconds.
pub const DEFAULT_JWT_LEEWAY_SECS: u64 = 30;
/// Default per-request timeout, in seconds (SSE streams are exempt by design of the server).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 30;
/// Default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT_BYTES: u64 = 1024 * 1024;
/// Default interval between SSE keep-alive pings, in seconds.
pub const DEFAULT_SSE_PING_SECS: u64 = 15;
/// How often an instance sharing its store compares revisions, whatever the bus says.
pub const DEFAULT_REVISION_POLL_SECS: u64 = 5;
/// Default cap on concurrent SSE streams per token subject.
pub const DEFAULT_MAX_STREAMS_PER_SUBJECT: u64 = 16;
/// Default time after which a connection (HTTP/1 or HTTP/2) with no exchange in flight is
/// closed, in seconds. Each idle connection holds a file descriptor; clients reconnect.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 30;
/// Default time a client has to send its request head (HTTP/1) or preface (HTTP/2), seconds.
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 30;
/// Default log filter.
pub const DEFAULT_LOG_LEVEL: &str = "info";
/// Default `service.name` of exported traces and metrics.
pub const DEFAULT_OTEL_SERVICE_NAME: &str = "toolgate";

// Rate limits per subject and route class.

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

// The MCP endpoint.

/// 1,000 tools per page: a typical manifest in one page, a 10,000-tool one in ten.
pub const DEFAULT_PAGE_SIZE: usize = 1_000;
/// 16 sessions per subject, as many as streams per subject by default.
pub const DEFAULT_SESSIONS_PER_SUBJECT: usize = 16;
/// A session unused for an hour is forgotten.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(3_600);
/// 5 s: long enough to spare a client's repeated list, short enough that a revoked tool does
/// not stay in its list for long.
pub const DEFAULT_LIST_TTL: Duration = Duration::from_secs(5);

/// 30 s for an upstream to answer a tool call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// 4 MiB of upstream answer per tool call: more than a model's context takes.
pub const DEFAULT_CALL_MAX_BYTES: usize = 4 * 1024 * 1024;

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            public_url: None,
            page_size: DEFAULT_PAGE_SIZE,
            sessions: SessionLimits {
                per_subject: DEFAULT_SESSIONS_PER_SUBJECT,
                idle: DEFAULT_SESSION_IDLE,
            },
            list_ttl: DEFAULT_LIST_TTL,
            allowed_origins: Vec::new(),
            calls: CallLimits::default(),
        }
    }
}

/// 30 s for an upstream to answer a tool call, and 4 MiB of answer: more than a model's
/// context takes.
impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            timeout: DEFAULT_CALL_TIMEOUT,
            max_response_bytes: DEFAULT_CALL_MAX_BYTES,
        }
    }
}

/// The in-process caches fit a gateway in a 512 MiB container with room to spare for the
/// snapshot, streams and connections.
impl Default for CacheBudgets {
    fn default() -> CacheBudgets {
        CacheBudgets {
            manifest_bytes: 128 << 20,
            mcp_page_bytes: 64 << 20,
            access_bytes: 16 << 20,
            evaluation_bytes: 32 << 20,
            stream_queue_bytes: 4 << 20,
            stream_total_bytes: 64 << 20,
        }
    }
}

/// Token verification: 30 s of clock skew, `exp` required, the JWKS refetched every 5 minutes
/// and at most every 10 s on an unknown `kid`.
impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            hmac_secret: None,
            jwks: None,
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(DEFAULT_JWT_LEEWAY_SECS),
            require_exp: true,
            jwks_refresh_interval: DEFAULT_JWKS_REFRESH_INTERVAL,
            jwks_min_refetch_interval: DEFAULT_JWKS_MIN_REFETCH_INTERVAL,
        }
    }
}

/// How often the JWKS is fetched again anyway.
pub const DEFAULT_JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// The least time between two fetches of the JWKS on unknown `kid`s.
pub const DEFAULT_JWKS_MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(10);
