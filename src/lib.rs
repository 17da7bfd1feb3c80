//! toolgate: a tool-access gateway for AI agents.
//!
//! Data flows one way: token → claims → decision → bytes.
#![forbid(unsafe_code)]

/// The pure decision core: entities, validation, compiled snapshots, manifests.
pub mod domain;

/// JWT verification (HMAC secret and JWKS keys) and dev-token minting.
pub mod auth;
