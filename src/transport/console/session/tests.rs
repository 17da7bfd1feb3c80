use axum::http::{HeaderMap, HeaderValue, header};

use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            axum::http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
            HeaderValue::from_str(value).expect("a header value"),
        );
    }
    map
}

#[test]
fn a_session_ends_at_the_tokens_exp_or_the_longest_lifetime() {
    let sessions = ConsoleSessions::new(false);
    let id = sessions.open("t", Some(1_000), 900);
    assert!(sessions.get(&id, 999).is_some());
    assert!(sessions.get(&id, 1_000).is_none(), "ends at exp");
    assert!(sessions.get(&id, 999).is_none(), "and is gone for good");
    let forever = sessions.open("t", None, 0);
    assert!(sessions.get(&forever, MAX_LIFETIME_SECS - 1).is_some());
    assert!(sessions.get(&forever, MAX_LIFETIME_SECS).is_none());
}

#[test]
fn ids_and_csrf_tokens_are_long_random_and_distinct() {
    let sessions = ConsoleSessions::new(false);
    let a = sessions.open("t", None, 0);
    let b = sessions.open("t", None, 0);
    assert_ne!(a, b);
    assert_eq!(a.len(), 43, "256 bits in base64url");
    let (sa, sb) = (sessions.get(&a, 1).unwrap(), sessions.get(&b, 1).unwrap());
    assert_ne!(sa.csrf, sb.csrf);
    assert_ne!(*sa.csrf, *a, "the anti-CSRF token is not the session id");
    assert!(sessions.end(&a));
    assert!(!sessions.end(&a));
    assert!(sessions.get(&a, 1).is_none());
}

#[test]
fn sessions_are_bounded() {
    let sessions = ConsoleSessions::new(false);
    let first = sessions.open("t", Some(10), 0);
    for _ in 0..MAX_SESSIONS {
        sessions.open("t", Some(100), 0);
    }
    assert_eq!(sessions.len(), MAX_SESSIONS);
    assert!(
        sessions.get(&first, 1).is_none(),
        "the one ending soonest made room"
    );
}

#[test]
fn the_cookie_is_http_only_strict_and_scoped_to_the_console() {
    let cookie = ConsoleSessions::new(false).cookie("abc", 60);
    assert_eq!(
        cookie.to_str().unwrap(),
        "toolgate_console=abc; Path=/console; HttpOnly; SameSite=Strict; Max-Age=60"
    );
    let secure = ConsoleSessions::new(true).cookie("abc", 60);
    assert!(secure.to_str().unwrap().ends_with("; Secure"));
    let cleared = ConsoleSessions::new(false).clearing_cookie();
    assert!(cleared.to_str().unwrap().contains("Max-Age=0"));
}

#[test]
fn the_cookie_is_read_only_when_there_is_exactly_one() {
    assert_eq!(
        cookie_id(&headers(&[("cookie", "a=1; toolgate_console=xyz")])),
        Some("xyz")
    );
    assert_eq!(
        cookie_id(&headers(&[("cookie", "toolgate_console=")])),
        None
    );
    assert_eq!(
        cookie_id(&headers(&[
            ("cookie", "toolgate_console=one"),
            ("cookie", "toolgate_console=two")
        ])),
        None,
        "two session cookies: neither"
    );
    assert_eq!(cookie_id(&headers(&[("cookie", "other=1")])), None);
}

#[test]
fn writes_must_come_from_the_consoles_own_origin() {
    let cases: &[(&[(&str, &str)], bool)] = &[
        (&[("host", "gw:8080"), ("origin", "http://gw:8080")], true),
        (&[("host", "gw:8080"), ("origin", "https://GW:8080")], true),
        (
            &[("host", "gw:8080"), ("origin", "http://evil.example")],
            false,
        ),
        (&[("host", "gw:8080"), ("origin", "http://gw:8081")], false),
        (&[("host", "gw:8080"), ("origin", "null")], false),
        (
            &[
                ("host", "gw:8080"),
                ("origin", "null"),
                ("sec-fetch-site", "same-origin"),
            ],
            true,
        ),
        (
            &[
                ("host", "gw:8080"),
                ("origin", "null"),
                ("sec-fetch-site", "same-site"),
            ],
            false,
        ),
        (
            &[
                ("host", "gw:8080"),
                ("origin", "http://evil.example"),
                ("sec-fetch-site", "same-origin"),
            ],
            false,
        ),
        (&[("host", "gw:8080")], false),
        (
            &[("host", "gw:8080"), ("sec-fetch-site", "same-origin")],
            true,
        ),
        (
            &[("host", "gw:8080"), ("sec-fetch-site", "cross-site")],
            false,
        ),
        (&[("origin", "http://gw:8080")], false),
    ];
    for (pairs, expected) in cases {
        assert_eq!(same_origin(&headers(pairs), None), *expected, "{pairs:?}");
    }
    assert!(same_origin(
        &headers(&[("origin", "http://gw:8080")]),
        Some("gw:8080")
    ));
    let _ = header::HOST;
}

#[test]
fn the_csrf_token_must_match_exactly() {
    let sessions = ConsoleSessions::new(false);
    let id = sessions.open("t", None, 0);
    let session = sessions.get(&id, 1).unwrap();
    let csrf = session.csrf.to_string();
    assert!(csrf_matches(&session, &csrf));
    assert!(!csrf_matches(&session, ""));
    assert!(!csrf_matches(&session, &csrf[..csrf.len() - 1]));
    let mut other = csrf.clone().into_bytes();
    other[0] = if other[0] == b'A' { b'B' } else { b'A' };
    assert!(!csrf_matches(
        &session,
        std::str::from_utf8(&other).unwrap()
    ));
}
