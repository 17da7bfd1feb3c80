//! toolgate: a tool-access gateway for AI agents.
//!
//! Data flows one way: token → claims → decision → bytes.
#![forbid(unsafe_code)]

/// JWT verification (HMAC secret and JWKS keys), the admin rule, dev-token minting.
pub mod auth;
/// The change bus: committed writes announced to every instance.
pub mod bus;
/// In-process cache of rendered manifests.
pub mod cache;
/// Reading catalog documents from JSON or YAML files, with line, column and field path on error.
pub mod catalog_file;
/// The command line: `serve` (default), `token`, `check`, `migrate`.
pub mod cli;
/// Settings from flags, environment, TOML file and defaults, checked once at start.
pub mod config;
/// The pure decision core: entities, validation, compiled snapshots, manifests.
pub mod domain;
/// The HTTP adapter: routes, extractors, problem-JSON errors.
pub mod http;
/// Catalog ingestion: OpenAPI documents and MCP servers → tools, and the refresh diff.
pub mod ingest;
/// The connection to Redis shared by the cache and the change bus, and whether Redis is up.
pub mod redis_link;
/// Assembles and runs the gateway (`toolgate serve`).
pub mod server;
/// Catalog writes and the current compiled snapshot (the application layer).
pub mod service;
/// The catalog store port and its adapters (embedded on-disk store, MongoDB).
pub mod store;
/// Live manifest streams: subscriptions grouped by manifest, change fan-out, SSE framing.
pub mod stream;
/// Logs, traces exported over OTLP, and metrics (Prometheus text and OTLP).
pub mod telemetry;
/// Executing an authorized tool call against its upstream (MCP server, OpenAPI operation).
pub mod upstream;
