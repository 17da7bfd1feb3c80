//! Schema properties that ask for a credential: an upstream has no business asking the model
//! for one (the gateway holds a source's credentials).

/// Credentials, as [`ends_in`] compares them.
const CREDENTIALS: [&str; 17] = [
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
    "apitoken",
    "sessiontoken",
    "oauthtoken",
    "githubtoken",
    "gitlabtoken",
];

/// Whether a property named `name` asks for a credential: its name, without case, `-` and
/// `_`, is one or ends in one of these.
pub(super) fn asks_for(name: &str) -> bool {
    ends_in(name, &CREDENTIALS)
}

/// Whether a property named `name` asks the model for its own context (its instructions, the
/// conversation, its reasoning): what a tool has no use for but an exfiltrating one.
pub(super) fn asks_for_context(name: &str) -> bool {
    const CONTEXT: [&str; 7] = [
        "systemprompt",
        "systemmessage",
        "conversationhistory",
        "chathistory",
        "chainofthought",
        "previousmessages",
        "priorinstructions",
    ];
    ends_in(name, &CONTEXT)
}

/// `name` without case, `-` and `_`, is one of `words` or ends in one.
fn ends_in(name: &str, words: &[&str]) -> bool {
    let folded: String = name
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    words.iter().any(|c| folded == *c || folded.ends_with(c))
}
