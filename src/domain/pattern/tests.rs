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
        // `""` is a glob that matches only the empty value (docs/semantics.md section 5).
        ("", "", true),
        ("", "billing", false),
        // No globstar: `**` is two runs, and the slashes around it are literal.
        ("/**/items", "/items", false),
        ("/**/items", "//items", true),
        ("/**/items", "/a/b/items", true),
        ("**", "", true),
        ("a**b", "ab", true),
        // `?` is one character, however many bytes it takes.
        ("?tape_item", "\u{e9}tape_item", true),
        ("?elvin_*", "\u{212a}elvin_x", true),
        ("??", "\u{e9}", false),
        ("[!a]x", "\u{e9}x", true),
        ("[a-z]", "Q", true),
        ("[!a-z]", "Q", false),
        // ASCII case folding only: the Kelvin sign is not a `k`.
        ("k*", "\u{212a}elvin", false),
        ("\u{e9}t\u{e9}*", "\u{e9}t\u{e9}_x", true),
        ("\u{e9}*", "\u{c9}", false),
        ("a\\*", "a*", true),
        ("a\\*", "ab", false),
        ("[*]", "*", true),
        ("a,b", "a,b", true),
        ("x]", "x]", true),
    ];
    for &(pattern, value, expected) in cases {
        assert_eq!(
            selector_matches(pattern, value),
            expected,
            "pattern {pattern:?} on {value:?}"
        );
    }
}

/// The spec's glob read as naively as possible, independently of [`super::super::glob`]:
/// alternatives expanded into plain globs first, then a backtracking matcher over characters.
/// `None` when the glob is invalid.
mod naive {
    use super::Case;

    /// One lexical element; classes keep their text.
    #[derive(Clone, Debug)]
    enum Atom {
        Char(char),
        Star,
        One,
        Class {
            negated: bool,
            members: Vec<(char, char)>,
        },
        Open,
        Comma,
        Close,
    }

    fn lex(glob: &str) -> Option<Vec<Atom>> {
        let chars: Vec<char> = glob.chars().collect();
        let mut atoms = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let atom = match chars[i] {
                '*' => Atom::Star,
                '?' => Atom::One,
                '{' => Atom::Open,
                ',' => Atom::Comma,
                '}' => Atom::Close,
                '\\' => {
                    i += 1;
                    Atom::Char(*chars.get(i)?)
                }
                '[' => {
                    i += 1;
                    let negated = matches!(chars.get(i), Some('!' | '^'));
                    if negated {
                        i += 1;
                    }
                    // (char, may start or end a range)
                    let mut raw: Vec<(char, bool)> = Vec::new();
                    loop {
                        let c = *chars.get(i)?;
                        if c == ']' && !raw.is_empty() {
                            break;
                        }
                        if c == '\\' {
                            i += 1;
                            raw.push((*chars.get(i)?, false));
                        } else {
                            raw.push((c, c == '-'));
                        }
                        i += 1;
                    }
                    let mut members = Vec::new();
                    let mut j = 0;
                    while j < raw.len() {
                        if j + 2 < raw.len() && raw[j + 1].1 {
                            if raw[j].0 > raw[j + 2].0 {
                                return None;
                            }
                            members.push((raw[j].0, raw[j + 2].0));
                            j += 3;
                        } else {
                            members.push((raw[j].0, raw[j].0));
                            j += 1;
                        }
                    }
                    Atom::Class { negated, members }
                }
                c => Atom::Char(c),
            };
            atoms.push(atom);
            i += 1;
        }
        Some(atoms)
    }

    /// Plain globs (no alternatives): `{a,b}c` is `ac` and `bc`.
    fn expand(atoms: &[Atom]) -> Option<Vec<Vec<Atom>>> {
        let Some(open) = atoms.iter().position(|a| matches!(a, Atom::Open)) else {
            if atoms.iter().any(|a| matches!(a, Atom::Close)) {
                return None;
            }
            let plain = atoms
                .iter()
                .map(|a| match a {
                    Atom::Comma => Atom::Char(','),
                    other => other.clone(),
                })
                .collect();
            return Some(vec![plain]);
        };
        let close = open
            + atoms[open..]
                .iter()
                .position(|a| matches!(a, Atom::Close))?;
        let inside = &atoms[open + 1..close];
        if inside.iter().any(|a| matches!(a, Atom::Open)) {
            return None;
        }
        let before = &atoms[..open];
        if before.iter().any(|a| matches!(a, Atom::Close)) {
            return None;
        }
        let mut out = Vec::new();
        for alternative in inside.split(|a| matches!(a, Atom::Comma)) {
            for rest in expand(&atoms[close + 1..])? {
                let mut glob: Vec<Atom> = before
                    .iter()
                    .map(|a| match a {
                        Atom::Comma => Atom::Char(','),
                        other => other.clone(),
                    })
                    .collect();
                glob.extend(alternative.iter().cloned());
                glob.extend(rest);
                out.push(glob);
            }
        }
        Some(out)
    }

    fn same(a: char, b: char, case: Case) -> bool {
        a == b || (case == Case::Insensitive && a.is_ascii() && a.eq_ignore_ascii_case(&b))
    }

    fn matches(glob: &[Atom], value: &[char], case: Case) -> bool {
        let Some((first, rest)) = glob.split_first() else {
            return value.is_empty();
        };
        match first {
            Atom::Star => (0..=value.len()).any(|skip| matches(rest, &value[skip..], case)),
            Atom::One => !value.is_empty() && matches(rest, &value[1..], case),
            Atom::Char(c) => {
                !value.is_empty() && same(*c, value[0], case) && matches(rest, &value[1..], case)
            }
            Atom::Class { negated, members } => {
                let Some(&v) = value.first() else {
                    return false;
                };
                let folded = [v, v.to_ascii_lowercase(), v.to_ascii_uppercase()];
                let candidates = if case == Case::Insensitive {
                    &folded[..]
                } else {
                    &folded[..1]
                };
                let inside = candidates
                    .iter()
                    .any(|c| members.iter().any(|&(low, high)| low <= *c && *c <= high));
                inside != *negated && matches(rest, &value[1..], case)
            }
            Atom::Open | Atom::Comma | Atom::Close => unreachable!("expanded"),
        }
    }

    pub(super) fn glob(glob: &str, case: Case, value: &str) -> Option<bool> {
        let globs = expand(&lex(glob)?)?;
        let value: Vec<char> = value.chars().collect();
        Some(globs.iter().any(|g| matches(g, &value, case)))
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
    /// Any glob over an alphabet rich in glob syntax and in characters that are several bytes
    /// long or fold oddly: the compiled pattern (fast path or regular expression) accepts
    /// exactly the globs the naive reading accepts and matches exactly what it matches.
    #[test]
    fn globs_agree_with_the_naive_reading(
        pattern in "[ab*{},?\\[\\]!^A\\-\\\\/\u{e9}\u{212a}k]{0,10}",
        values in proptest::collection::vec("[abAB,/\u{e9}\u{c9}\u{212a}kK*\\-]{0,6}", 1..8),
    ) {
        for case in [Case::Sensitive, Case::Insensitive] {
            let compiled = Pattern::glob(&pattern, case);
            for value in &values {
                let expected = naive::glob(&pattern, case, value);
                match (&compiled, expected) {
                    (Ok(compiled), Some(expected)) => proptest::prop_assert_eq!(
                        compiled.is_match(value), expected,
                        "{:?} {:?} on {:?}", pattern, case, value
                    ),
                    (Err(_), None) => {}
                    (compiled, expected) => proptest::prop_assert!(
                        false, "{:?}: compiled {:?}, naive {:?}", pattern, compiled.is_ok(), expected
                    ),
                }
            }
        }
    }

    /// The byte-comparing fast path agrees with the translated regular expression.
    #[test]
    fn simple_fast_paths_agree_with_the_full_glob(
        pattern in "[ab*{},A\u{e9}]{0,10}",
        values in proptest::collection::vec("[abAB,\u{e9}\u{c9}]{0,6}", 1..8),
    ) {
        for case in [Case::Sensitive, Case::Insensitive] {
            if let (Ok(fast @ Pattern::Simple(_)), Ok(full)) =
                (Pattern::glob(&pattern, case), glob_regex(&pattern, case))
            {
                for value in &values {
                    proptest::prop_assert_eq!(
                        fast.is_match(value), full.is_match(value.as_bytes()),
                        "{:?} {:?} on {:?}", pattern, case, value
                    );
                }
            }
        }
    }
}

#[test]
fn the_naive_reading_is_not_vacuous() {
    // The differential test above means something only if the model itself reads globs right.
    assert_eq!(naive::glob("{a,b}*", Case::Sensitive, "bx"), Some(true));
    assert_eq!(
        naive::glob("[!a]?", Case::Insensitive, "A\u{e9}"),
        Some(false)
    );
    assert_eq!(naive::glob("/**/x", Case::Sensitive, "/x"), Some(false));
    assert_eq!(naive::glob("{a,{b}}", Case::Sensitive, "a"), None);
    assert_eq!(naive::glob("a}", Case::Sensitive, "a}"), None);
}

#[test]
fn fast_paths_are_taken_where_they_can_be() {
    assert!(matches!(
        Pattern::glob("get_*", Case::Insensitive),
        Ok(Pattern::Simple(_))
    ));
    assert!(matches!(
        Pattern::glob("g?t_*", Case::Insensitive),
        Ok(Pattern::Glob(_))
    ));
    assert!(matches!(
        Pattern::glob("svc-{03,17}-*", Case::Insensitive),
        Ok(Pattern::Simple(_))
    ));
    // 81 texts: past the expansion cap, so one regular expression instead.
    assert!(matches!(
        Pattern::glob("{a,b,c}{d,e,f}{g,h,i}{j,k,l}", Case::Insensitive),
        Ok(Pattern::Glob(_))
    ));
}

#[test]
fn tool_name_globs_are_case_sensitive() {
    let glob = Pattern::glob("entities_*", Case::Sensitive).expect("valid");
    assert!(glob.is_match("entities_get"));
    assert!(!glob.is_match("Entities_get"));
    let one = Pattern::glob("?tape_item", Case::Sensitive).expect("valid");
    assert!(one.is_match("\u{e9}tape_item"));
    let literal = Pattern::literal("a[b", Case::Sensitive);
    assert!(literal.is_match("a[b"));
    assert!(!literal.is_match("A[b"));
}

#[test]
fn invalid_patterns_are_rejected_with_a_reason() {
    let error = Pattern::selector("regex:(unclosed").expect_err("invalid");
    assert!(matches!(&error, PatternError::Regex { expr, .. } if expr == "(unclosed"));
    let text = error.to_string();
    assert!(
        text.starts_with("invalid regular expression '(unclosed'"),
        "{text}"
    );
    assert!(!text.contains('\n'));
    let error = Pattern::selector("regex:\\w{5000}").expect_err("too large");
    assert!(
        error.to_string().ends_with("expression is too large"),
        "{error}"
    );
    let error = Pattern::selector("[abc").expect_err("invalid");
    assert_eq!(
        error,
        PatternError::Glob {
            text: "[abc".to_owned(),
            reason: GlobReason::Syntax(GlobError::UnclosedClass)
        }
    );
    assert_eq!(
        error.to_string(),
        "invalid glob pattern '[abc': unclosed '[' character class"
    );
}

#[test]
fn glob_syntax_detection() {
    assert!(has_glob_syntax("entities_*"));
    assert!(has_glob_syntax("get_?"));
    assert!(!has_glob_syntax("search_hybrid"));
}
