//! The rules on text: hidden characters, text addressed to the model, secret-looking paths,
//! foreign URLs, other tools named.

use super::{Context, Finding, Rule, push};

/// Characters a reader does not see: Unicode tags, zero-width characters, bidirectional
/// controls.
pub(super) fn is_hidden(c: char) -> bool {
    matches!(u32::from(c),
        0xE0000..=0xE007F      // tags
        | 0x200B..=0x200F      // zero-width space, (non-)joiner, LRM, RLM
        | 0x202A..=0x202E      // bidirectional embeddings and overrides
        | 0x2060..=0x2064      // word joiner, invisible operators
        | 0x2066..=0x2069      // bidirectional isolates
        | 0xFEFF               // zero-width no-break space
    )
}

/// Phrases that speak to the model behind the user's back (lower case).
const MODEL_DIRECTED: [&str; 14] = [
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
];

/// Secret-looking paths and files (lower case).
const SECRET_PATHS: [&str; 12] = [
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
];

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
    if let Some(url) = foreign_url(text, context.source_hosts) {
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

/// The first URL in `text` whose host is not one of `hosts`.
fn foreign_url<'t>(text: &'t str, hosts: &[String]) -> Option<&'t str> {
    text.match_indices("http")
        .filter_map(|(at, _)| {
            let rest = &text[at..];
            let after = rest
                .strip_prefix("https://")
                .or_else(|| rest.strip_prefix("http://"))?;
            let end = after
                .find(|c: char| {
                    c == '/'
                        || c == '?'
                        || c == '#'
                        || c.is_whitespace()
                        || c == ')'
                        || c == '"'
                        || c == '\''
                })
                .unwrap_or(after.len());
            let authority = &after[..end];
            let host = authority.rsplit('@').next().unwrap_or(authority);
            let host = host.split(':').next().unwrap_or(host).to_lowercase();
            let url_end = rest.len() - after.len() + end;
            (!host.is_empty() && !hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)))
                .then(|| &rest[..url_end])
        })
        .next()
}
