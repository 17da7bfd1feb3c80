//! Settings of the MCP endpoint: what `config` reads and the endpoint and its sessions obey.
//! Their defaults are in `config` with every other default.

use std::time::Duration;

use crate::upstream::CallLimits;

/// Settings of the MCP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// The gateway's public base URL (`https://gw.example.com`), for the protected-resource
    /// document and the 401 challenge; `None`: taken from each request's `Host`.
    pub public_url: Option<String>,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Sessions per subject, and their idle timeout. The same number bounds a subject's open
    /// notification streams.
    pub sessions: SessionLimits,
    /// How long a 2026-07-28 client may reuse a `tools/list` answer without asking again
    /// (`ttlMs`). Calls are decided at call time whatever a client caches.
    pub list_ttl: Duration,
    /// Origins (`scheme://host[:port]`) allowed besides the gateway's own, for browser-based
    /// clients; a request from any other origin is refused (DNS-rebinding protection).
    pub allowed_origins: Vec<String>,
    /// How long a `tools/call` may wait for its upstream, and the largest answer it reads.
    pub calls: CallLimits,
}

/// Limits of the session table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions per subject; the least recently used goes when a new one would exceed it.
    pub per_subject: usize,
    /// A session unused this long is forgotten.
    pub idle: Duration,
}
