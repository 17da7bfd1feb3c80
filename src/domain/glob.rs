//! The glob syntax of selector patterns and `tools=` filters (docs/semantics.md sections 5 and 6),
//! parsed here and translated to a regular expression that means exactly what the spec says.
//!
//! Why not globset: it is a *path* glob library, and two of its readings widen a selector
//! beyond the spec, which for an access gateway means granting (or denying) tools nobody
//! named: `**` between separators is a globstar (`/**/items` matches `/items`), and its
//! regexes are byte regexes, so `?` matches one byte of a multi-byte character rather than the
//! character (`?tape` misses `étape`). Here:
//! - `*` is any run of characters (including `/` and the empty run); `**` is two of them, no
//!   more;
//! - `?` is exactly one character (a Unicode scalar value);
//! - `[abc]`, `[a-z]`, `[!abc]` (also `[^abc]`) are one character in / not in the class; a `]`
//!   right after the opening `[` (or `[!`) is a member, a `-` first or last is a member;
//! - `{a,b}` is one of the alternatives (an alternative may be empty; groups do not nest);
//! - `\x` is the character `x` itself, inside or outside a class;
//! - case-insensitive means ASCII case folding only (`K` and the Kelvin sign stay distinct).
//!
//! What could be read two ways is refused when the pattern is written: an unclosed `[` or `{`,
//! a `}` without its `{`, nested `{…}`, a class range running backwards, a trailing `\`.

/// Whether letter case matters when matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Sensitive,
    /// ASCII case folding.
    Insensitive,
}

/// One element of a parsed glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `*`
    AnyRun,
    /// `?`
    AnyOne,
    Class {
        negated: bool,
        /// Inclusive ranges; a single character is `(c, c)`.
        ranges: Vec<(char, char)>,
    },
    /// `{a,b}`: each alternative is a sequence of tokens without further alternatives.
    Alternatives(Vec<Vec<Token>>),
}

/// Translates `glob` into an anchored regular expression for a byte-oriented engine that
/// allows invalid UTF-8 in patterns (`regex_automata` with `utf8(false)`): runs (`*`) are
/// written as byte runs, which is exact on UTF-8 input because every other element can only
/// start matching at a character boundary; `?` and classes are written as Unicode classes so
/// What is wrong with a glob's syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("nested '{{' alternatives are not allowed")]
    NestedAlternatives,
    #[error("'}}' without an opening '{{'")]
    UnopenedAlternatives,
    #[error("unclosed '{{' alternatives")]
    UnclosedAlternatives,
    #[error("dangling '\\' at the end of the pattern")]
    DanglingEscape,
    #[error("unclosed '[' character class")]
    UnclosedClass,
    #[error("the class range '{low}-{high}' runs backwards")]
    BackwardsRange { low: char, high: char },
}

/// that they consume one whole character.
pub(super) fn to_regex(glob: &str, case: Case) -> Result<String, GlobError> {
    let tokens = parse(glob)?;
    let mut out = String::with_capacity(glob.len() * 2 + 8);
    out.push_str("^(?:");
    write_tokens(&mut out, &tokens, case);
    out.push_str(")$");
    Ok(out)
}

fn parse(glob: &str) -> Result<Vec<Token>, GlobError> {
    let mut chars = glob.chars().peekable();
    let mut tokens = Vec::new();
    // Inside `{…}`: the alternatives so far and the one being read.
    let mut group: Option<(Vec<Vec<Token>>, Vec<Token>)> = None;
    while let Some(c) = chars.next() {
        let token = match c {
            '*' => Token::AnyRun,
            '?' => Token::AnyOne,
            '\\' => Token::Literal(chars.next().ok_or(GlobError::DanglingEscape)?),
            '[' => parse_class(&mut chars)?,
            '{' => {
                if group.is_some() {
                    return Err(GlobError::NestedAlternatives);
                }
                group = Some((Vec::new(), Vec::new()));
                continue;
            }
            '}' => {
                let Some((mut alternatives, current)) = group.take() else {
                    return Err(GlobError::UnopenedAlternatives);
                };
                alternatives.push(current);
                Token::Alternatives(alternatives)
            }
            ',' => match &mut group {
                Some((alternatives, current)) => {
                    alternatives.push(std::mem::take(current));
                    continue;
                }
                None => Token::Literal(','),
            },
            other => Token::Literal(other),
        };
        match &mut group {
            Some((_, current)) => current.push(token),
            None => tokens.push(token),
        }
    }
    if group.is_some() {
        return Err(GlobError::UnclosedAlternatives);
    }
    Ok(tokens)
}

fn parse_class(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<Token, GlobError> {
    let negated = matches!(chars.peek(), Some('!' | '^'));
    if negated {
        chars.next();
    }
    let mut members: Vec<char> = Vec::new();
    // Whether each member was written as a `-` that can make a range (not escaped).
    let mut dashes: Vec<bool> = Vec::new();
    let mut first = true;
    loop {
        let c = chars.next().ok_or(GlobError::UnclosedClass)?;
        match c {
            ']' if !first => break,
            '\\' => {
                members.push(chars.next().ok_or(GlobError::UnclosedClass)?);
                dashes.push(false);
            }
            other => {
                members.push(other);
                dashes.push(other == '-');
            }
        }
        first = false;
    }
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < members.len() {
        if i + 2 < members.len() && dashes[i + 1] {
            let (low, high) = (members[i], members[i + 2]);
            if low > high {
                return Err(GlobError::BackwardsRange { low, high });
            }
            ranges.push((low, high));
            i += 3;
        } else {
            ranges.push((members[i], members[i]));
            i += 1;
        }
    }
    Ok(Token::Class { negated, ranges })
}

fn write_tokens(out: &mut String, tokens: &[Token], case: Case) {
    for token in tokens {
        match token {
            Token::Literal(c) => write_literal(out, *c, case),
            Token::AnyRun => out.push_str("(?s-u:.)*"),
            Token::AnyOne => out.push_str("(?su:.)"),
            Token::Class { negated, ranges } => write_class(out, *negated, ranges, case),
            Token::Alternatives(alternatives) => {
                out.push_str("(?:");
                for (i, alternative) in alternatives.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    write_tokens(out, alternative, case);
                }
                out.push(')');
            }
        }
    }
}

fn write_literal(out: &mut String, c: char, case: Case) {
    if case == Case::Insensitive && c.is_ascii_alphabetic() {
        out.push('[');
        out.push(c.to_ascii_lowercase());
        out.push(c.to_ascii_uppercase());
        out.push(']');
    } else {
        write_char(out, c);
    }
}

/// Every character as `\x{…}`: no character can be mistaken for regex syntax.
fn write_char(out: &mut String, c: char) {
    use std::fmt::Write as _;
    write!(out, "\\x{{{:x}}}", c as u32).expect("writing to a String cannot fail");
}

fn write_class(out: &mut String, negated: bool, ranges: &[(char, char)], case: Case) {
    let mut all: Vec<(char, char)> = ranges.to_vec();
    if case == Case::Insensitive {
        for &(low, high) in ranges {
            for (from, to, shift) in [('a', 'z', -32i32), ('A', 'Z', 32)] {
                let (l, h) = (low.max(from), high.min(to));
                if l <= h {
                    let moved = |c: char| char::from_u32((c as i32 + shift) as u32);
                    if let (Some(l), Some(h)) = (moved(l), moved(h)) {
                        all.push((l, h));
                    }
                }
            }
        }
    }
    out.push_str(if negated { "(?u:[^" } else { "(?u:[" });
    for (low, high) in all {
        write_char(out, low);
        if high != low {
            out.push('-');
            write_char(out, high);
        }
    }
    out.push_str("])");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_say_what_is_wrong() {
        for (glob, expected, reason) in [
            ("a[bc", GlobError::UnclosedClass, "unclosed '['"),
            ("[]", GlobError::UnclosedClass, "unclosed '['"),
            ("{a,b", GlobError::UnclosedAlternatives, "unclosed '{'"),
            ("a}b", GlobError::UnopenedAlternatives, "'}' without"),
            ("{a,{b}}", GlobError::NestedAlternatives, "nested"),
            (
                "[z-a]",
                GlobError::BackwardsRange {
                    low: 'z',
                    high: 'a',
                },
                "'z-a' runs backwards",
            ),
            ("ab\\", GlobError::DanglingEscape, "dangling"),
        ] {
            let error = to_regex(glob, Case::Sensitive).expect_err(glob);
            assert_eq!(error, expected, "{glob}");
            assert!(error.to_string().contains(reason), "{glob}: {error}");
        }
    }

    #[test]
    fn class_members_and_ranges() {
        assert_eq!(
            parse("[]a-c-]").expect("valid"),
            [Token::Class {
                negated: false,
                ranges: vec![(']', ']'), ('a', 'c'), ('-', '-')],
            }]
        );
        assert_eq!(
            parse("[!\\]x]").expect("valid"),
            [Token::Class {
                negated: true,
                ranges: vec![(']', ']'), ('x', 'x')],
            }]
        );
        assert_eq!(
            parse("[a\\-z]").expect("valid"),
            [Token::Class {
                negated: false,
                ranges: vec![('a', 'a'), ('-', '-'), ('z', 'z')],
            }]
        );
    }
}
