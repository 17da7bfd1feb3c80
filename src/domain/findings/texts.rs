//! The rules on text: hidden characters, text addressed to the model, secret-looking paths,
//! foreign URLs, other tools named.

use super::{Context, Finding, Rule, push};

/// Characters a reader does not see: Unicode tags, zero-width characters, bidirectional
/// controls.
pub(super) fn is_hidden(c: char) -> bool {
    matches!(u32::from(c),
        0x00..=0x08 | 0x0B | 0x0C | 0x0E..=0x1F | 0x7F..=0x9F  // controls (ANSI escapes), not tab or line breaks
        | 0xE0000..=0xE007F      // tags
        | 0x200B..=0x200F      // zero-width space, (non-)joiner, LRM, RLM
        | 0x202A..=0x202E      // bidirectional embeddings and overrides
        | 0x2060..=0x2064      // word joiner, invisible operators
        | 0x2066..=0x2069      // bidirectional isolates
        | 0xFEFF               // zero-width no-break space
    )
}

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
const SECRET_PATHS: [&str; 16] = [
    "~/.ssh",
    "/.ssh/",
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
    let lower = text.to_lowercase();
    SECRET_PATHS.iter().any(|p| lower.contains(p)) || mentions_dotenv(&lower)
}

pub(super) fn hidden(text: &str, path: &str, out: &mut Vec<Finding>) {
    if text.chars().any(is_hidden) {
        push(out, Rule::HiddenUnicode, path, text);
    }
}

pub(super) fn check(text: &str, path: &str, context: &Context<'_>, out: &mut Vec<Finding>) {
    hidden(text, path, out);
    let lower = text.to_lowercase();
    if MODEL_DIRECTED.iter().any(|phrase| lower.contains(phrase)) {
        push(
            out,
            Rule::ModelDirected,
            path,
            around(text, &lower, &MODEL_DIRECTED),
        );
    }
    if SECRET_PATHS.iter().any(|p| lower.contains(p)) || mentions_dotenv(&lower) {
        push(
            out,
            Rule::SecretPath,
            path,
            around(text, &lower, &SECRET_PATHS),
        );
    }
    // A schema's own identifiers (`$schema`, `$id`, `$ref`) name documents, not places.
    let identifier = ["/$schema", "/$id", "/$ref"]
        .iter()
        .any(|key| path.ends_with(key));
    if !identifier && let Some(url) = foreign_url(text, context.source_hosts) {
        push(out, Rule::ForeignUrl, path, url);
    }
    if let Some(name) = context.other_tools.first_in(text, context.name) {
        push(out, Rule::CrossToolReference, path, name);
    }
}

/// `.env` as a file, not as part of a word such as `.environment`.
fn mentions_dotenv(lower: &str) -> bool {
    lower.match_indices(".env").any(|(at, _)| {
        let after = lower[at + 4..].chars().next();
        let before = lower[..at].chars().next_back();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !before.is_some_and(|c| c.is_alphanumeric())
    })
}

/// The part of `text` around the first of `needles` in `lower`, or the start of `text`.
fn around<'t>(text: &'t str, lower: &str, needles: &[&str]) -> &'t str {
    let at = needles
        .iter()
        .filter_map(|n| lower.find(n))
        .min()
        .unwrap_or(0);
    // `lower` may differ in length from `text` for some characters: stay on a boundary.
    let start = (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    &text[start..]
}

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
            let end = after
                .find(|c: char| {
                    matches!(c, '/' | '?' | '#' | ')' | '"' | '\'' | '`' | '>' | ']')
                        || c.is_whitespace()
                })
                .unwrap_or(after.len());
            let authority = &after[..end];
            let host = authority.rsplit('@').next().unwrap_or(authority);
            let host = host.split(':').next().unwrap_or(host).to_lowercase();
            let url_end = rest.len() - after.len() + end;
            let foreign = !host.is_empty() && !sites.contains(&site(&host));
            // A Markdown link's label is not the sentence's verb.
            let before = match text[..at].strip_suffix("](") {
                Some(before) => before.rfind('[').map_or(before, |label| &before[..label]),
                None => &text[..at],
            };
            (foreign && directs_there(before)).then(|| &rest[..url_end])
        })
        .next()
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
