//! toolgate: a tool-access gateway for AI agents.
//!
//! Data flows one way: token → claims → decision → bytes. The modules are layers, each using
//! only those listed before it (`tests/it/layering.rs` keeps it so):
//!
//! | layer | modules |
//! |---|---|
//! | pure core | [`domain`] |
//! | observing | [`telemetry`] |
//! | adapters | [`redis_link`], [`catalog_file`], [`auth`], [`store`], [`cache`], [`bus`], [`ingest`], [`upstream`] |
//! | application | [`service`] (every write, every read, every access rule), [`stream`] (live manifests) |
//! | assembly | [`config`] (settings and their defaults), [`app`] (the services built from settings) |
//! | transports | [`transport`] (one folder each: REST and SSE, admin, console, MCP, AuthZEN, OAuth, the OpenAPI document) |
//! | entry points | [`server`] (bind and serve), [`cli`] (the command line) |
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

/// The application built from settings: every service the transports use, and the background
/// work beside requests.
pub mod app;
/// JWT verification (HMAC secret and JWKS keys), the admin rule, dev-token minting.
pub mod auth;
/// The change bus: committed writes announced to every instance.
pub mod bus;
/// In-process cache of rendered manifests.
pub mod cache;
/// Reading catalog documents from JSON or YAML files, with line, column and field path on error.
pub mod catalog_file;
/// The command line: `serve` (default), `token`, `check`, `migrate`, `impact`.
pub mod cli;
/// Time through one seam: the system clock, a clock tests move, `unix_now` defined once.
pub mod clock;
/// Settings from flags, environment, TOML file and defaults, checked once at start.
pub mod config;
/// The pure decision core: entities, validation, compiled snapshots, manifests.
pub mod domain;
/// Catalog ingestion: OpenAPI documents and MCP servers → tools, and the refresh diff.
pub mod ingest;
/// The connection to Redis shared by the cache and the change bus, and whether Redis is up.
pub mod redis_link;
/// Binds and serves the gateway (`toolgate serve`).
pub mod server;
/// The application layer: catalog writes, the current snapshot, manifests, decisions, the
/// caller and every rule of who may ask what, rate limits.
pub mod service;
/// The catalog store port and its adapters (embedded on-disk store, MongoDB).
pub mod store;
/// Live manifest streams: subscriptions grouped by manifest, change fan-out, SSE framing.
pub mod stream;
/// Logs, traces exported over OTLP, and metrics (Prometheus text and OTLP).
pub mod telemetry;
/// The transports, one folder each (REST and SSE, admin, console, MCP, AuthZEN, OAuth, the
/// OpenAPI document) over shared plumbing (state, route table, extractors, problem JSON); they
/// only map their wire and enter through [`app`].
pub mod transport;
/// Executing an authorized tool call against its upstream (MCP server, OpenAPI operation).
pub mod upstream;
