//! toolgate: a tool-access gateway for AI agents.
//!
//! Data flows one way: token → claims → decision → bytes.
#![forbid(unsafe_code)]

/// JWT verification (HMAC secret and JWKS keys) and dev-token minting.
pub mod auth;
/// The pure decision core: entities, validation, compiled snapshots, manifests.
pub mod domain;
/// The catalog store port and its adapters (embedded on-disk store, MongoDB).
pub mod store;
