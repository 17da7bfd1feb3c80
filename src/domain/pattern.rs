//! Selector patterns (docs/semantics.md section 5) and the case-sensitive name globs of the `tools=`
//! request filter (section 6).
//!
//! A selector pattern is `*`, `regex:<expr>` or a glob. Every form matches the **whole** value.
//! Globs ([`super::glob`]): `*` is any run of characters including `/` (`**` is two of them,
//! not a globstar), `?` one character, `[abc]` / `[!abc]` classes, `{a,b}` alternatives.
//! Selector patterns ignore ASCII case; tool-name globs do not. `""` is a glob that matches only
//! the empty value.

pub use super::glob::Case;
use super::glob::GlobError;
use regex::{Regex, RegexBuilder};
use regex_automata::meta;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;

/// The prefix that turns a selector pattern into a regular expression.
pub const REGEX_PREFIX: &str = "regex:";

/// Compiled regular expressions are capped so that an admin cannot make the gateway build a
/// gigantic automaton; the cap is far above any realistic selector.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled pattern. Compiling is the only fallible step; matching never fails.
///
/// Most real globs are a literal, `prefix*`, `*suffix` or `*infix*`, often with `{a,b}`
/// alternatives (`svc-{03,17}-*`, `{get,list}_*`); those are matched by comparing bytes
/// ([`Pattern::Simple`]) rather than by a regular expression, which makes compiling a catalog
/// with a thousand distinct patterns several times cheaper. Every other glob runs as the
/// regular expression [`super::glob::to_regex`] translates it to.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// `*`: matches every value, including the empty one.
    Any,
    Simple(Simple),
    /// A glob as [`super::glob::to_regex`] translates it, built by [`lean_regex`].
    Glob(meta::Regex),
    /// A `regex:` selector pattern, anchored, built by [`lean_regex`].
    Regex(meta::Regex),
}

/// Where a [`Simple`] pattern's text must occur in the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Whole,
    Prefix,
    Suffix,
    Anywhere,
}

/// A glob made of literal text and `{a,b}` groups of literal alternatives, with at most a
/// leading and a trailing `*`: it matches when one of the texts it expands to is at its
/// anchor.
///
/// Case-insensitive means ASCII case folding, as for every glob: the fast path and the
/// translated regular expression agree on every value.
#[derive(Debug, Clone)]
pub struct Simple {
    /// The expansion of the alternatives: one text for a glob without `{…}`, never empty.
    texts: Vec<String>,
    anchor: Anchor,
    case: Case,
}

/// Expanding alternatives multiplies texts (`{a,b}{c,d}` is four); past this many, the glob
/// is cheaper as one regular expression than as a list of texts.
const MAX_EXPANSION: usize = 64;

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
        let texts = expand_alternatives(body)?;
        let anchor = match (leading, trailing) {
            (false, false) => Anchor::Whole,
            (false, true) => Anchor::Prefix,
            (true, false) => Anchor::Suffix,
            (true, true) => Anchor::Anywhere,
        };
        Some(Simple {
            texts,
            anchor,
            case,
        })
    }

    fn is_match(&self, value: &str) -> bool {
        self.texts
            .iter()
            .any(|text| self.is_match_text(value.as_bytes(), text.as_bytes()))
    }

    fn is_match_text(&self, value: &[u8], text: &[u8]) -> bool {
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

/// The literal texts a glob body of literal runs and `{a,b,…}` groups of literal alternatives
/// stands for, in order; `None` when the body has any other glob syntax (`*`, `?`, classes,
/// escapes, nested or unbalanced braces) or expands past [`MAX_EXPANSION`] texts.
fn expand_alternatives(body: &str) -> Option<Vec<String>> {
    let mut texts = vec![String::new()];
    let mut rest = body;
    while !rest.is_empty() {
        let (literal, group) = match rest.find('{') {
            Some(open) => {
                let close = open + rest[open..].find('}')?;
                (&rest[..open], Some(&rest[open + 1..close]))
            }
            None => (rest, None),
        };
        if has_glob_syntax(literal) {
            return None;
        }
        for text in &mut texts {
            text.push_str(literal);
        }
        let Some(group) = group else { break };
        if has_glob_syntax(group) {
            return None;
        }
        let alternatives: Vec<&str> = group.split(',').collect();
        if texts.len() * alternatives.len() > MAX_EXPANSION {
            return None;
        }
        texts = texts
            .iter()
            .flat_map(|text| alternatives.iter().map(move |alt| format!("{text}{alt}")))
            .collect();
        rest = &rest[literal.len() + group.len() + 2..];
    }
    Some(texts)
}

/// Why a pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// A `regex:` pattern; `reason` is the regex crate's, worded by [`build_reason`].
    #[error("invalid regular expression '{expr}': {reason}")]
    Regex { expr: String, reason: String },
    #[error("invalid glob pattern '{text}': {reason}")]
    Glob { text: String, reason: GlobReason },
}

/// Why a glob does not compile: its syntax, or the expression it translates to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobReason {
    #[error(transparent)]
    Syntax(#[from] GlobError),
    #[error("{0}")]
    Build(String),
}

impl Pattern {
    /// Compiles a selector pattern: `*`, `regex:<expr>` or a glob, all case-insensitive.
    pub fn selector(text: &str) -> Result<Pattern, PatternError> {
        match text.strip_prefix(REGEX_PREFIX) {
            Some(expr) => lean_regex(
                &format!("^(?:{expr})$"),
                syntax::Config::new().case_insensitive(true),
            )
            .map(Pattern::Regex)
            .map_err(|reason| PatternError::Regex {
                expr: expr.to_owned(),
                reason,
            }),
            None => Pattern::glob(text, Case::Insensitive),
        }
    }

    /// Compiles a glob (no `regex:` form), e.g. one item of the `tools=` filter.
    pub fn glob(text: &str, case: Case) -> Result<Pattern, PatternError> {
        if text == "*" {
            return Ok(Pattern::Any);
        }
        if let Some(simple) = Simple::parse(text, case) {
            return Ok(Pattern::Simple(simple));
        }
        glob_regex(text, case).map(Pattern::Glob)
    }

    /// A pattern that matches exactly `text` (up to `case`), whatever glob syntax it holds.
    pub fn literal(text: &str, case: Case) -> Pattern {
        Pattern::Simple(Simple {
            texts: vec![text.to_owned()],
            anchor: Anchor::Whole,
            case,
        })
    }

    pub fn is_match(&self, value: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Simple(simple) => simple.is_match(value),
            Pattern::Glob(regex) | Pattern::Regex(regex) => regex.is_match(value.as_bytes()),
        }
    }
}

/// Translates a glob (docs/semantics.md section 5, see [`super::glob`]) and compiles it.
fn glob_regex(text: &str, case: Case) -> Result<meta::Regex, PatternError> {
    let invalid = |reason: GlobReason| PatternError::Glob {
        text: text.to_owned(),
        reason,
    };
    let translated =
        super::glob::to_regex(text, case).map_err(|error| invalid(GlobReason::Syntax(error)))?;
    // Runs are byte runs (see `glob::to_regex`), so the expression may match bytes that are
    // not UTF-8 on its own; on UTF-8 values it matches exactly the characters it should.
    lean_regex(&translated, syntax::Config::new().utf8(false))
        .map_err(|reason| invalid(GlobReason::Build(reason)))
}

/// Builds a regular expression for what patterns are used for: matching a few hundred short
/// values when a catalog compiles, or one manifest's names per request. Only the engines that
/// are cheap to build run (a Thompson NFA with the bounded backtracker and the PikeVM); the
/// lazy and one-pass DFAs and the literal prefilter, which pay off on long or many searches,
/// are left out. That halves the cost of compiling a catalog with hundreds of `regex:`
/// patterns; the syntax, and so what matches, is the `regex` crate's.
/// An error is the reason, as [`build_reason`] words it.
fn lean_regex(pattern: &str, syntax: syntax::Config) -> Result<meta::Regex, String> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                .which_captures(WhichCaptures::None)
                .auto_prefilter(false)
                .hybrid(false)
                .dfa(false)
                .onepass(false),
        )
        .syntax(syntax)
        .build(pattern)
        .map_err(|error| build_reason(&error))
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

fn regex_reason(error: &regex::Error) -> String {
    match error {
        regex::Error::Syntax(text) => syntax_reason(text),
        regex::Error::CompiledTooBig(_) => "expression is too large".to_owned(),
        other => other.to_string(),
    }
}

fn build_reason(error: &meta::BuildError) -> String {
    if let Some(syntax) = error.syntax_error() {
        syntax_reason(&syntax.to_string())
    } else if error.size_limit().is_some() {
        "expression is too large".to_owned()
    } else {
        error.to_string()
    }
}

/// Syntax errors span several lines with an ASCII-art caret; keep the last line, which says
/// what is wrong, so the message fits a problem-JSON field.
fn syntax_reason(text: &str) -> String {
    text.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("syntax error")
        .trim()
        .trim_start_matches("error: ")
        .to_owned()
}

#[cfg(test)]
mod tests;
