//! The rules on text: hidden characters, text addressed to the model, secret-looking paths,
//! foreign URLs, other tools named.

use super::normal::{self, normalized, original_offset};
use super::{Context, Findings, Rule};

/// Phrases that speak to the model behind the user's back (lower case).
const MODEL_DIRECTED: [&str; 33] = [
    "ignore previous",
    "ignore all previous",
    "ignore the previous",
    "disregard previous",
    "disregard all previous",
    "do not tell the user",
    "don't tell the user",
    "do not mention",
    "without telling the user",
    "without informing the user",
    "the user must not know",
    "<important>",
    "<system>",
    "before using this tool, read",
    "never inform the user",
    "never tell the user",
    "not tell the user",
    "without informing",
    "without telling",
    "do not notify the user",
    "note to the ai",
    "note to the assistant",
    "as an ai assistant",
    "the assistant must",
    "for all future",
    "whenever you execute",
    "whenever you run",
    "before any other tool",
    "instead of any other",
    "over other tools",
    "over any other tool",
    "[system]",
    "</system>",
];

/// Secret-looking paths and files (lower case).
/// (`.ssh` and `.env` are matched as path segments: [`segment_at`].)
const SECRET_PATHS: [&str; 14] = [
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "/etc/passwd",
    "/etc/shadow",
    ".aws/credentials",
    ".netrc",
    ".npmrc",
    ".git-credentials",
    "mcp.json",
    ".kube/config",
    ".docker/config.json",
    ".gnupg",
    "/proc/self/environ",
];

/// Whether `text` names a secret-looking path or file.
pub(super) fn names_a_secret(text: &str) -> bool {
    secret_at(&normalized(text)).is_some()
}

/// Where the first secret-looking path or file is in `plain` (a [`normalized`] text).
fn secret_at(plain: &str) -> Option<usize> {
    SECRET_PATHS
        .iter()
        .filter_map(|p| plain.find(p))
        .chain([".ssh", ".env"].iter().filter_map(|s| segment_at(plain, s)))
        .min()
}

/// Where `name` (`.ssh`, `.env`) stands as a file or folder of a path, not as part of a word
/// (`.environment`, `app.env_name`): nothing word-like right before or after it.
fn segment_at(plain: &str, name: &str) -> Option<usize> {
    plain.match_indices(name).map(|(at, _)| at).find(|&at| {
        let after = plain[at + name.len()..].chars().next();
        let before = plain[..at].chars().next_back();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !before.is_some_and(char::is_alphanumeric)
    })
}

pub(super) fn hidden(text: &str, path: &str, out: &mut Findings) {
    if normal::hidden_chars(text).next().is_some() {
        out.push(Rule::HiddenUnicode, path, text);
    }
}

pub(super) fn check(text: &str, path: &str, context: &Context<'_>, out: &mut Findings) {
    hidden(text, path, out);
    let plain = normalized(text);
    if let Some(at) = MODEL_DIRECTED.iter().filter_map(|p| plain.find(p)).min() {
        out.push(Rule::ModelDirected, path, from(text, &plain, at));
    }
    if let Some(at) = secret_at(&plain) {
        out.push(Rule::SecretPath, path, from(text, &plain, at));
    }
    // A schema's own identifiers (`$schema`, `$id`, `$ref`) name documents, not places.
    let identifier = ["/$schema", "/$id", "/$ref"]
        .iter()
        .any(|key| path.ends_with(key));
    if !identifier && let Some(url) = foreign_url(text, context.source_hosts) {
        out.push(Rule::ForeignUrl, path, url);
    }
    if let Some(name) = context.other_tools.first_in(text, context.name) {
        out.push(Rule::CrossToolReference, path, name);
    }
}

/// `text` from where byte `at` of its normalized form `plain` came from (an excerpt's start).
fn from<'t>(text: &'t str, plain: &str, at: usize) -> &'t str {
    // ASCII text the normalizing removed nothing from (it only lowers ASCII, and removes white
    // space runs and hidden characters): the offsets are the same.
    if text.is_ascii() && plain.len() == text.len() {
        return &text[at..];
    }
    &text[original_offset(text, at)..]
}

/// How far before a URL its sentence is read for a verb that sends there: enough for any
/// sentence that directs, and a bound on the work per URL whatever the text.
const LOOK_BACK_BYTES: usize = 512;

/// How far into a URL its host is looked for: no host is longer.
const HOST_BYTES: usize = 512;

/// The first URL in `text` on another site (registrable domain) than `hosts` that its sentence
/// sends something, or the model, to (`posted to https://…`, `curl https://…`): where an
/// instruction would have data go. A URL that only documents or illustrates (`see https://…`,
/// `e.g. https://my-org.example.io`, a Markdown link) is not one: real documents are full of
/// them. (A URL the tool itself calls, such as a default value, is the upstream's own business:
/// it has the arguments anyway.)
fn foreign_url<'t>(text: &'t str, hosts: &[String]) -> Option<&'t str> {
    let sites: Vec<&str> = hosts.iter().map(|host| site(host)).collect();
    text.match_indices("http")
        .filter_map(|(at, _)| {
            let rest = &text[at..];
            let after = rest
                .strip_prefix("https://")
                .or_else(|| rest.strip_prefix("http://"))?;
            let window = &after[..floor_boundary(after, HOST_BYTES)];
            let end = window
                .find(|c: char| {
                    matches!(c, '/' | '?' | '#' | ')' | '"' | '\'' | '`' | '>' | ']')
                        || c.is_whitespace()
                })
                .unwrap_or(window.len());
            let authority = &after[..end];
            let host = authority.rsplit('@').next().unwrap_or(authority);
            let host = host.split(':').next().unwrap_or(host).to_lowercase();
            let url_end = rest.len() - after.len() + end;
            let foreign = !host.is_empty() && !sites.contains(&site(&host));
            // A Markdown link's label is not the sentence's verb.
            let preceding = &text[ceil_boundary(text, at.saturating_sub(LOOK_BACK_BYTES))..at];
            let before = match preceding.strip_suffix("](") {
                Some(before) => before.rfind('[').map_or(before, |label| &before[..label]),
                None => preceding,
            };
            (foreign && directs_there(before)).then(|| &rest[..url_end])
        })
        .next()
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary of `text` at or above `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The site of `host`: its last two labels, or three under a two-letter country code with a
/// generic second level (`example.co.uk`). `docs.twilio.com` and `api.twilio.com` are one site.
fn site(host: &str) -> &str {
    let labels: Vec<&str> = host.rsplitn(4, '.').collect();
    let keep = match labels.as_slice() {
        [tld, second, ..]
            if tld.len() == 2
                && matches!(*second, "co" | "com" | "net" | "org" | "gov" | "ac" | "edu") =>
        {
            3
        }
        _ => 2,
    };
    // An IPv4 address is its own site (an IPv6 one has no dots to cut at).
    let address = host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if labels.len() <= keep || address {
        return host;
    }
    let cut: usize = labels[..keep].iter().map(|l| l.len() + 1).sum::<usize>() - 1;
    &host[host.len() - cut..]
}

/// Whether the sentence before a URL sends data, or the model, to it: `curl` or `wget`, or a
/// verb of sending or fetching with `to`, `from`, `at` or `into` among the four words after
/// it (`posted to`, `send all emails to`).
fn directs_there(before: &str) -> bool {
    const DIRECTING: [&str; 34] = [
        "send",
        "sends",
        "sent",
        "sending",
        "post",
        "posts",
        "posted",
        "posting",
        "upload",
        "uploads",
        "uploaded",
        "uploading",
        "forward",
        "forwards",
        "forwarded",
        "forwarding",
        "submit",
        "submits",
        "submitted",
        "submitting",
        "exfiltrate",
        "exfiltrates",
        "exfiltrated",
        "download",
        "downloads",
        "downloaded",
        "downloading",
        "fetch",
        "fetches",
        "fetched",
        "navigate",
        "redirect",
        "redirects",
        "redirected",
    ];
    let sentence = before
        .rsplit(['.', '\n', '!', '?'])
        .next()
        .unwrap_or(before);
    let words: Vec<&str> = sentence
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, word)| {
        let is = |w: &str| word.eq_ignore_ascii_case(w);
        is("curl")
            || is("wget")
            || (DIRECTING.iter().any(|verb| is(verb))
                && words.iter().skip(i + 1).take(4).any(|next| {
                    ["to", "from", "at", "into"]
                        .iter()
                        .any(|p| next.eq_ignore_ascii_case(p))
                }))
    })
}
