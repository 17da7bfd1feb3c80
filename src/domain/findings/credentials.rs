//! Schema properties that ask for a credential: an upstream has no business asking the model
//! for one (the gateway holds a source's credentials).

/// Whether a property named `name` asks for a credential: its name, without case, `-` and
/// `_`, is one or ends in one of these.
pub(super) fn asks_for(name: &str) -> bool {
    const CREDENTIALS: [&str; 12] = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "apikey",
        "accesstoken",
        "refreshtoken",
        "bearertoken",
        "authtoken",
        "privatekey",
        "sshkey",
        "credentials",
    ];
    let folded: String = name
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    CREDENTIALS
        .iter()
        .any(|c| folded == *c || folded.ends_with(c))
}
