//! Every integration test in one binary, one module per subject (the file names say which):
//! the shared helpers and the gateway's dependencies are compiled and linked once instead of
//! once per file, which was most of the suite's build time.
//!
//! `tests/sse_memory.rs` stays a binary of its own: it measures its process's resident memory,
//! which tests running beside it in one process would disturb.

#[path = "../store_contract/mod.rs"]
mod store_contract;
#[path = "../support/mod.rs"]
mod support;

mod auth;
mod backup;
mod carry_model;
mod cli;
mod code_shape;
mod conditional_instances;
mod conformance_core;
mod console;
mod console_browser;
mod console_revisions;
mod console_sso;
mod decision_bounds;
mod decision_model;
mod decisions;
mod delegation;
mod delegation_model;
mod deploy_files;
mod docs_complete;
mod domain_purity;
mod findings_corpus;
mod hostile_upstreams;
mod http_api;
mod http_attribution;
mod http_audit;
mod http_connections;
mod http_fail_closed;
mod http_hygiene;
mod http_if_match;
mod http_impact;
mod http_jwks;
mod http_metrics;
mod http_mongo;
mod http_rate_limit;
mod http_secrets;
mod http_stream;
mod identity_providers;
mod ingest;
mod ingest_real;
mod layering;
mod log_hygiene;
mod mcp_clients;
mod mcp_http;
mod metrics_redis;
mod multi_instance;
mod openapi;
mod otlp_export;
mod pinning_model;
mod quick_start;
mod redis_shared;
mod redis_topologies;
mod restore;
mod revisions;
mod runs;
mod runs_clients;
mod runs_model;
mod runs_shared;
mod serve_binary;
mod store_embedded;
mod store_mongo;
mod stream_expiry;
mod upstream_calls;
mod upstream_credentials;
