//! The agents' REST transport: `GET /agents/tools` (the hot path) and its stream, and the
//! operational routes (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`, the fallbacks).

pub mod agents;
#[cfg(feature = "bench-routes")]
pub(super) mod bench;
pub(super) mod ops;
pub(super) mod runs;
pub mod stream;
