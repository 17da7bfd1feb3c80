//! Claim paths: dot paths and JSON Pointers resolve to the value they name or to nothing,
//! and a malformed path is a typed error that says what to write instead.

use serde_json::{Value, json};

use super::claims;
use crate::domain::claims::{ClaimPath, ClaimPathError};

#[test]
fn paths_resolve_dots_indices_and_pointers() {
    let claims = claims();
    let cases: &[(&str, Option<Value>)] = &[
        ("tenant", Some(json!("acme"))),
        ("realm_access.roles", Some(json!(["crm-admin"]))),
        ("resource_access.my-client.roles", Some(json!(["reader"]))),
        ("groups.0", Some(json!("/eng"))),
        ("groups.1", Some(json!("/ops"))),
        ("groups.2", None),
        ("groups.01", None),
        ("groups.-1", None),
        ("tenant.x", None),
        ("missing", None),
        ("nothing", None),
        ("/https:~1~1example.com~1roles", Some(json!(["ns-admin"]))),
        ("/https:~1~1example.com~1roles/0", Some(json!("ns-admin"))),
        ("/a~0b", Some(json!("tilde"))),
        ("/realm_access/roles", Some(json!(["crm-admin"]))),
        ("/missing", None),
    ];
    for (path, expected) in cases {
        let parsed = ClaimPath::parse(path).expect("valid path");
        assert_eq!(parsed.resolve(&claims), expected.as_ref(), "path {path}");
    }
}

#[test]
fn invalid_paths_are_rejected() {
    for path in ["", "a..b", ".a", "a.", "/a~2b", "/a~"] {
        assert!(
            ClaimPath::parse(path).is_err(),
            "{path:?} should be invalid"
        );
    }
}

#[test]
fn bad_paths_are_typed_errors_that_say_what_to_write() {
    let cases = [
        ("", ClaimPathError::Empty, "must not be empty"),
        (
            "realm_access..roles",
            ClaimPathError::EmptySegment {
                path: "realm_access..roles".to_owned(),
            },
            "a dot path looks like 'realm_access.roles'",
        ),
        (
            "/a~2b",
            ClaimPathError::PointerEscape {
                token: "a~2b".to_owned(),
            },
            "'~' must be followed by 0 or 1",
        ),
        (
            "/a~",
            ClaimPathError::PointerEscape {
                token: "a~".to_owned(),
            },
            "invalid JSON Pointer escape in 'a~'",
        ),
    ];
    for (text, expected, says) in cases {
        let error = ClaimPath::parse(text).expect_err(text);
        assert_eq!(error, expected, "{text}");
        assert!(error.to_string().contains(says), "{text}: {error}");
    }
    assert!(ClaimPath::parse("/a~1b~0c").is_ok());
}
