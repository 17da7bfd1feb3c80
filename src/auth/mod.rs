//! Bearer-token authentication: turns an `Authorization` header into verified JWT claims.
//!
//! The flow is [`bearer_token`] (parse the header) → [`Verifier::verify`] (signature, then
//! `exp`/`nbf`/`iss`/`aud`) → [`VerifiedToken`] (the full claim set, handed to the domain).
//!
//! [`bearer_token`]: crate::auth::bearer_token
//! [`Verifier::verify`]: crate::auth::Verifier::verify
//! [`VerifiedToken`]: crate::auth::VerifiedToken
//!
//! Key material is strictly partitioned to rule out algorithm confusion: HS256/384/512 tokens
//! are checked only against the configured secret, asymmetric tokens only against keys from the
//! configured JWKS, and `alg: none` is never accepted.

mod admin;
mod bearer;
mod claims;
mod error;
mod hmac;
mod jwks;
mod jwks_source;
mod key_set;
mod mint;
mod own;
mod settings;
mod token;
mod verified;
mod verify;

pub use admin::AdminRule;
pub use bearer::bearer_token;
pub use error::{AuthError, AuthSetupError, JwksError, MintError};
pub use mint::mint_hs256;
pub use own::{OwnIssuer, OwnKey, OwnKeyError, OwnKeySource, delegated_claims};
pub use settings::AuthSettings;
pub use verified::{TokenText, VerifiedToken};
pub use verify::Verifier;
