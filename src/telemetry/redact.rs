//! URLs in free text made fit for a log: an upstream URL's query and userinfo are where
//! credentials ride (`?api_key=…`, `https://user:pass@host`), and an error message from an
//! HTTP client quotes the whole URL (an upstream's error page may quote the path and query it
//! was asked for). [`redact_urls`] keeps the scheme, host, port and path (what an operator
//! needs to tell which upstream failed) and replaces the rest with `***`.

/// `text` with every `scheme://…` URL's userinfo and query replaced by `***` and its fragment
/// dropped, and the query of every path (`/x?k=v`) replaced too. A URL ends at whitespace or
/// at a character that closes a quotation (`)`, `"`, `'`, `>`, `]`, `,`).
pub fn redact_urls(text: &str) -> String {
    redact_path_queries(&redact_absolute(text))
}

/// Every word that starts with `/` and has a query: the query masked.
fn redact_path_queries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word_start = true;
    let mut masking = false;
    let mut in_path = false;
    for c in text.chars() {
        let ends_word = c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | ']' | ',');
        if ends_word {
            masking = false;
            in_path = false;
            word_start = true;
            out.push(c);
            continue;
        }
        if word_start {
            in_path = c == '/';
            word_start = false;
        }
        if masking {
            continue;
        }
        out.push(c);
        if in_path && c == '?' {
            masking = true;
            out.push_str("***");
        }
    }
    out
}

/// Every `scheme://…` URL's userinfo and query masked, its fragment dropped.
fn redact_absolute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let after = &rest[at + 3..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | ']' | ','))
            .unwrap_or(after.len());
        out.push_str(&rest[..at + 3]);
        if scheme_start == at {
            // No scheme before "://": not a URL, nothing to redact.
            rest = after;
            continue;
        }
        out.push_str(&redacted_tail(&after[..end]));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A URL after its `scheme://`: `authority/path?query#fragment` with userinfo and query
/// masked and the fragment dropped.
fn redacted_tail(tail: &str) -> String {
    let authority_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    let (authority, path_and_more) = tail.split_at(authority_end);
    let mut out = String::with_capacity(tail.len());
    match authority.rfind('@') {
        Some(at) => {
            out.push_str("***@");
            out.push_str(&authority[at + 1..]);
        }
        None => out.push_str(authority),
    }
    let path_end = path_and_more
        .find(['?', '#'])
        .unwrap_or(path_and_more.len());
    out.push_str(&path_and_more[..path_end]);
    if path_and_more[path_end..].starts_with('?') {
        out.push_str("?***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact_urls;

    #[test]
    fn userinfo_and_queries_are_masked_and_the_rest_kept() {
        let cases = [
            ("plain text", "plain text"),
            (
                "error sending request for url (http://127.0.0.1:4631/mcp?api_key=s3cret)",
                "error sending request for url (http://127.0.0.1:4631/mcp?***)",
            ),
            (
                "https://user:pa55@api.example/v1/x?token=t#frag and more",
                "https://***@api.example/v1/x?*** and more",
            ),
            ("see 'http://h/p?q=1', then", "see 'http://h/p?***', then"),
            ("http://h?x=1", "http://h?***"),
            ("a :// b", "a :// b"),
            (
                "two: http://a/?k=1 http://b:1@c/",
                "two: http://a/?*** http://***@c/",
            ),
            (
                "failed at /mcp?api_key=k1 (500)",
                "failed at /mcp?*** (500)",
            ),
            ("a ? b /p and /q?x", "a ? b /p and /q?***"),
        ];
        for (text, expected) in cases {
            assert_eq!(redact_urls(text), expected, "{text}");
        }
    }
}
