//! Schema properties that ask for a credential: an upstream has no business asking the model
//! for one (the gateway holds a source's credentials).

use super::normal::normalized;

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

/// Credentials too, but only as a property's whole name: as the end of one they are ordinary
/// (`page_token`, `max_tokens`, `spin`, `chat_session`).
const WHOLE_CREDENTIALS: [&str; 5] = ["token", "otp", "pin", "cookie", "session"];

/// Whether a property named `name` asks for a credential: its name, without case, `-` and
/// `_`, is one or ends in one of [`CREDENTIALS`], or is one of [`WHOLE_CREDENTIALS`].
pub(super) fn asks_for(name: &str) -> bool {
    let folded = folded(name);
    WHOLE_CREDENTIALS.contains(&folded.as_str()) || ends_in_folded(&folded, &CREDENTIALS)
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
    ends_in_folded(&folded(name), words)
}

fn ends_in_folded(folded: &str, words: &[&str]) -> bool {
    words.iter().any(|c| folded.ends_with(c))
}

/// `name` as the rules compare it: [`normalized`] (a Cyrillic `а` in `pаssword` is an `a`),
/// without `-`, `_` and spaces.
fn folded(name: &str) -> String {
    normalized(name)
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .collect()
}
