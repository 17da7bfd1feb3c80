//! The decision core. Pure: no I/O, no clocks, no async runtime. It answers one question —
//! which tools may an agent with these claims see — exactly as `spec/SEMANTICS.md` defines it.

pub mod claims;
pub mod model;
pub mod pattern;
pub mod validate;
