//! Selector patterns (SEMANTICS.md section 5) and the case-sensitive name globs of the `tools=`
//! request filter (section 6).
//!
//! A selector pattern is `*`, `regex:<expr>` or a glob. Every form matches the **whole** value.
//! Globs: `*` is any run of characters including `/`, `?` one character, `[abc]` / `[!abc]`
//! classes, `{a,b}` alternatives. Selector patterns ignore case; tool-name globs do not.

use globset::{Glob, GlobBuilder};
use regex::{Regex, RegexBuilder};

/// The prefix that turns a selector pattern into a regular expression.
pub const REGEX_PREFIX: &str = "regex:";

/// Compiled regular expressions are capped so that an admin cannot make the gateway build a
/// gigantic automaton; the cap is far above any realistic selector.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled pattern. Compiling is the only fallible step; matching never fails.
///
/// Most real globs are a literal, `prefix*`, `*suffix` or `*infix*`; those are matched by
/// comparing bytes ([`Pattern::Simple`]) rather than by a regular expression, which makes
/// compiling a catalog with a thousand distinct patterns several times cheaper. Every other
/// glob runs as the regular expression globset translates it to.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// `*`: matches every value, including the empty one.
    Any,
    Simple(Simple),
    Glob(regex::bytes::Regex),
    Regex(Regex),
}

/// Where a [`Simple`] pattern's text must occur in the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Whole,
    Prefix,
    Suffix,
    Anywhere,
}

/// A glob made of literal text with at most a leading and a trailing `*`.
///
/// Case-insensitive means ASCII case folding, exactly as globset's globs do (they compile to
/// byte regexes without Unicode case folding): the two agree on every value.
#[derive(Debug, Clone)]
pub struct Simple {
    text: String,
    anchor: Anchor,
    case: Case,
}

impl Simple {
    fn parse(text: &str, case: Case) -> Option<Simple> {
        let (body, leading) = match text.strip_prefix('*') {
            Some(rest) => (rest, true),
            None => (text, false),
        };
        let (body, trailing) = match body.strip_suffix('*') {
            Some(rest) => (rest, true),
            None => (body, false),
        };
        if has_glob_syntax(body) {
            return None;
        }
        let anchor = match (leading, trailing) {
            (false, false) => Anchor::Whole,
            (false, true) => Anchor::Prefix,
            (true, false) => Anchor::Suffix,
            (true, true) => Anchor::Anywhere,
        };
        Some(Simple {
            text: body.to_owned(),
            anchor,
            case,
        })
    }

    fn is_match(&self, value: &str) -> bool {
        let (value, text) = (value.as_bytes(), self.text.as_bytes());
        let same = |a: &[u8]| match self.case {
            Case::Sensitive => a == text,
            Case::Insensitive => a.eq_ignore_ascii_case(text),
        };
        let n = text.len();
        match self.anchor {
            Anchor::Whole => same(value),
            Anchor::Prefix => value.len() >= n && same(&value[..n]),
            Anchor::Suffix => value.len() >= n && same(&value[value.len() - n..]),
            Anchor::Anywhere => n == 0 || value.windows(n).any(same),
        }
    }
}

/// Whether letter case matters when matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Sensitive,
    Insensitive,
}

impl Pattern {
    /// Compiles a selector pattern: `*`, `regex:<expr>` or a glob, all case-insensitive.
    pub fn selector(text: &str) -> Result<Pattern, String> {
        match text.strip_prefix(REGEX_PREFIX) {
            Some(expr) => whole_regex(expr, Case::Insensitive).map(Pattern::Regex),
            None => Pattern::glob(text, Case::Insensitive),
        }
    }

    /// Compiles a glob (no `regex:` form), e.g. one item of the `tools=` filter.
    pub fn glob(text: &str, case: Case) -> Result<Pattern, String> {
        if text == "*" {
            return Ok(Pattern::Any);
        }
        if let Some(simple) = Simple::parse(text, case) {
            return Ok(Pattern::Simple(simple));
        }
        glob_regex(text, case).map(Pattern::Glob)
    }

    pub fn is_match(&self, value: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Simple(simple) => simple.is_match(value),
            Pattern::Glob(regex) => regex.is_match(value.as_bytes()),
            Pattern::Regex(regex) => regex.is_match(value),
        }
    }
}

/// Translates a glob with globset (which owns the glob syntax) and compiles the result as a
/// bytes regex, so that matching a `&str` needs no path candidate.
fn glob_regex(text: &str, case: Case) -> Result<regex::bytes::Regex, String> {
    let glob: Glob = GlobBuilder::new(text)
        .case_insensitive(case == Case::Insensitive)
        .literal_separator(false)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map_err(|error| format!("invalid glob pattern '{text}': {}", glob_reason(&error)))?;
    regex::bytes::RegexBuilder::new(glob.regex())
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|error| format!("invalid glob pattern '{text}': {}", regex_reason(&error)))
}

/// Whether a `tools=` item is a plain name rather than a glob (plain names that match nothing
/// are reported as warnings).
pub fn has_glob_syntax(text: &str) -> bool {
    text.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Compiles `expr` so that it must match the whole value.
pub fn whole_regex(expr: &str, case: Case) -> Result<Regex, String> {
    RegexBuilder::new(&format!("^(?:{expr})$"))
        .case_insensitive(case == Case::Insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|error| {
            format!(
                "invalid regular expression '{expr}': {}",
                regex_reason(&error)
            )
        })
}

fn glob_reason(error: &globset::Error) -> String {
    error.kind().to_string()
}

/// The regex crate's messages span several lines with an ASCII-art caret; keep the last line,
/// which says what is wrong, so the message fits a problem-JSON field.
fn regex_reason(error: &regex::Error) -> String {
    match error {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("syntax error")
            .trim()
            .trim_start_matches("error: ")
            .to_owned(),
        regex::Error::CompiledTooBig(_) => "expression is too large".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector_matches(pattern: &str, value: &str) -> bool {
        Pattern::selector(pattern)
            .expect("valid pattern")
            .is_match(value)
    }

    #[test]
    fn selector_pattern_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "anything/at all", true),
            ("billing-*", "billing-api", true),
            ("billing-*", "BILLING-API", true),
            ("billing-*", "crm-api", false),
            ("billing", "billing-api", false),
            ("*api", "billing-api", true),
            ("/customers/*", "/customers/{id}/orders", true),
            ("get_?", "get_a", true),
            ("get_?", "get_ab", false),
            ("[abc]*", "crm", true),
            ("[!abc]*", "crm", false),
            ("[!abc]*", "delete", true),
            ("{get,list}_*", "list_invoices", true),
            ("{get,list}_*", "create_invoice", false),
            ("regex:get_.*", "GET_customer", true),
            ("regex:get", "get_customer", false),
            ("regex:(get|list)_[a-z]+", "list_invoices", true),
            ("regex:a|b", "ab", false),
            ("GET", "get", true),
        ];
        for &(pattern, value, expected) in cases {
            assert_eq!(
                selector_matches(pattern, value),
                expected,
                "pattern {pattern:?} on {value:?}"
            );
        }
    }

    #[test]
    fn simple_fast_paths_agree_with_the_full_glob() {
        let patterns = [
            "get_user",
            "get_*",
            "*_user",
            "*et_u*",
            "**",
            "*",
            "",
            "GET",
            "g\u{e9}t*",
            "*\u{e9}T_*",
        ];
        let values = [
            "get_user",
            "GET_USER",
            "get_users",
            "xget_user",
            "",
            "get",
            "gEt_\u{212a}",
            "\u{212a}et_user",
            "g\u{e9}t_user",
            "ſet_user",
        ];
        for pattern in patterns {
            for case in [Case::Sensitive, Case::Insensitive] {
                let fast = Pattern::glob(pattern, case).expect("valid");
                let full = glob_regex(pattern, case).expect("valid");
                for value in values {
                    assert_eq!(
                        fast.is_match(value),
                        full.is_match(value.as_bytes()),
                        "{pattern:?} {case:?} on {value:?}"
                    );
                }
            }
        }
        assert!(matches!(
            Pattern::glob("get_*", Case::Insensitive),
            Ok(Pattern::Simple(_))
        ));
        assert!(matches!(
            Pattern::glob("g?t_*", Case::Insensitive),
            Ok(Pattern::Glob(_))
        ));
        // Glob case folding is ASCII (as globset's): the Kelvin sign is not a k.
        assert!(
            !Pattern::selector("k*")
                .expect("valid")
                .is_match("\u{212a}elvin")
        );
        assert!(
            Pattern::selector("\u{e9}t\u{e9}*")
                .expect("valid")
                .is_match("\u{e9}t\u{e9}_x")
        );
    }

    #[test]
    fn tool_name_globs_are_case_sensitive() {
        let glob = Pattern::glob("entities_*", Case::Sensitive).expect("valid");
        assert!(glob.is_match("entities_get"));
        assert!(!glob.is_match("Entities_get"));
    }

    #[test]
    fn invalid_patterns_are_rejected_with_a_reason() {
        let error = Pattern::selector("regex:(unclosed").expect_err("invalid");
        assert!(
            error.starts_with("invalid regular expression '(unclosed'"),
            "{error}"
        );
        assert!(!error.contains('\n'));
        let error = Pattern::selector("[abc").expect_err("invalid");
        assert!(error.starts_with("invalid glob pattern '[abc'"), "{error}");
    }

    #[test]
    fn glob_syntax_detection() {
        assert!(has_glob_syntax("entities_*"));
        assert!(has_glob_syntax("get_?"));
        assert!(!has_glob_syntax("search_hybrid"));
    }
}
