//! toolgate's own signing keys (the keys of the delegated tokens `POST /oauth/token` mints), as
//! every store keeps them: beside the catalog, so that every instance on one store signs and
//! verifies with the same keys, and out of the catalog document, so that no admin read or
//! export ever carries them.

use serde::{Deserialize, Serialize};

/// One stored signing key. The private key is a secret: never in `Debug`, a log or an answer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningKeyRecord {
    /// Its `kid` (unique; also what orders keys made in the same second).
    pub kid: String,
    /// When it was made, unix seconds: what decides when it signs and when it retires.
    pub created_at: i64,
    /// The PKCS#8 DER of the private key, standard base64.
    pub private_key: String,
}

impl std::fmt::Debug for SigningKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKeyRecord")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}
