//! Where each argument goes, one table row per rule.

use serde_json::{Map, Value, json};

use super::*;
use crate::ingest::openapi::{BodyBinding, request_shape};

fn binding(
    property: &str,
    name: &str,
    location: ParameterLocation,
    style: &str,
    explode: bool,
) -> ParameterBinding {
    ParameterBinding {
        property: property.to_owned(),
        name: name.to_owned(),
        location,
        style: style.to_owned(),
        explode,
        content: None,
    }
}

fn shape(path: &str, parameters: Vec<ParameterBinding>, body: Option<&str>) -> RequestShape {
    RequestShape {
        method: "POST".to_owned(),
        path: path.to_owned(),
        parameters,
        body: body.map(|content_type| BodyBinding {
            content_type: content_type.to_owned(),
            required: false,
        }),
        server: None,
    }
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().expect("an object").clone()
}

use ParameterLocation::{Cookie, Header, Path, Query};

#[test]
fn path_parameters_are_encoded_by_style() {
    let cases: [(&str, bool, Value, &str); 12] = [
        ("simple", false, json!("a b/c?d"), "/x/a%20b%2Fc%3Fd"),
        ("simple", false, json!(5), "/x/5"),
        ("simple", false, json!(true), "/x/true"),
        ("simple", false, json!(["a", "b,c"]), "/x/a,b%2Cc"),
        ("simple", false, json!({"k": "v", "n": 1}), "/x/k,v,n,1"),
        ("simple", true, json!({"k": "v", "n": 1}), "/x/k=v,n=1"),
        ("label", false, json!("é"), "/x/.%C3%A9"),
        ("label", false, json!(["a", "b"]), "/x/.a,b"),
        ("label", true, json!(["a", "b"]), "/x/.a.b"),
        ("matrix", false, json!("v"), "/x/;id=v"),
        ("matrix", true, json!(["a", "b"]), "/x/;id=a;id=b"),
        ("matrix", true, json!({"k": "v"}), "/x/;k=v"),
    ];
    for (style, explode, value, expected) in cases {
        let shape = shape(
            "/x/{id}",
            vec![binding("id", "id", Path, style, explode)],
            None,
        );
        let planned = plan(&shape, "http://h", &arguments(json!({"id": value}))).expect("planned");
        assert_eq!(
            planned.url,
            format!("http://h{expected}"),
            "{style} {explode} {value}"
        );
    }
}

#[test]
fn query_parameters_spread_by_style_and_explode() {
    /// Style, explode, value, the pairs sent.
    type Case = (&'static str, bool, Value, Vec<(&'static str, &'static str)>);
    let cases: [Case; 9] = [
        ("form", true, json!("a b"), vec![("q", "a b")]),
        (
            "form",
            true,
            json!(["a", "b"]),
            vec![("q", "a"), ("q", "b")],
        ),
        ("form", false, json!(["a", "b"]), vec![("q", "a,b")]),
        (
            "form",
            true,
            json!({"x": 1, "y": "z"}),
            vec![("x", "1"), ("y", "z")],
        ),
        ("form", false, json!({"x": 1}), vec![("q", "x,1")]),
        (
            "spaceDelimited",
            false,
            json!(["a", "b"]),
            vec![("q", "a b")],
        ),
        (
            "pipeDelimited",
            false,
            json!(["a", "b"]),
            vec![("q", "a|b")],
        ),
        (
            "deepObject",
            true,
            json!({"x": 1, "y": [1]}),
            vec![("q[x]", "1"), ("q[y]", "[1]")],
        ),
        ("form", true, json!([{"a": 1}]), vec![("q", "{\"a\":1}")]),
    ];
    for (style, explode, value, expected) in cases {
        let shape = shape("/", vec![binding("q", "q", Query, style, explode)], None);
        let planned = plan(&shape, "http://h", &arguments(json!({"q": value}))).expect("planned");
        let pairs: Vec<(&str, &str)> = planned
            .query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(pairs, expected, "{style} {explode} {value}");
    }
}

#[test]
fn every_location_takes_its_own_property_under_the_parameter_name() {
    // The importer's naming: a path `id` keeps the name, the query and header `id` become
    // `query_id` and `header_id`, a query parameter called `body` becomes `query_body`.
    let shape = shape(
        "/items/{id}",
        vec![
            binding("id", "id", Path, "simple", false),
            binding("query_id", "id", Query, "form", true),
            binding("query_body", "body", Query, "form", true),
            binding("header_id", "id", Header, "simple", false),
            binding("X-Trace", "X-Trace", Header, "simple", false),
            binding("theme", "theme", Cookie, "form", true),
        ],
        Some("application/json"),
    );
    let planned = plan(
        &shape,
        "https://api.example/v1/",
        &arguments(json!({
            "id": "p/1", "query_id": "q", "query_body": "b", "header_id": "h",
            "X-Trace": ["a", "b"], "theme": "dark mode", "body": {"n": 1}, "unknown": "ignored"
        })),
    )
    .expect("planned");
    assert_eq!(planned.method, "POST");
    assert_eq!(planned.url, "https://api.example/v1/items/p%2F1");
    assert_eq!(
        planned.query,
        [
            ("id".to_owned(), "q".to_owned()),
            ("body".to_owned(), "b".to_owned())
        ]
    );
    assert_eq!(
        planned.headers,
        [
            ("id".to_owned(), "h".to_owned()),
            ("X-Trace".to_owned(), "a,b".to_owned())
        ]
    );
    assert_eq!(planned.cookies, ["theme=dark%20mode"]);
    assert_eq!(
        planned.body,
        Some(PlannedBody::Bytes {
            content_type: "application/json".to_owned(),
            bytes: br#"{"n":1}"#.to_vec()
        })
    );
}

#[test]
fn absent_and_null_arguments_send_nothing() {
    let shape = shape(
        "/",
        vec![
            binding("q", "q", Query, "form", true),
            binding("h", "h", Header, "simple", false),
        ],
        Some("application/json"),
    );
    let planned = plan(&shape, "http://h", &arguments(json!({"q": null}))).expect("planned");
    assert!(planned.query.is_empty() && planned.headers.is_empty() && planned.body.is_none());
}

#[test]
fn bodies_are_encoded_by_media_type() {
    let body = json!({"name": "a b", "n": 2, "tags": ["x", "y"], "meta": {"k": 1}, "none": null});
    let form = plan(
        &shape("/", vec![], Some("application/x-www-form-urlencoded")),
        "http://h",
        &arguments(json!({"body": body})),
    )
    .expect("planned");
    assert_eq!(
        form.body,
        Some(PlannedBody::Form(
            [
                ("meta", "{\"k\":1}"),
                ("n", "2"),
                ("name", "a b"),
                ("tags", "x"),
                ("tags", "y")
            ]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
        ))
    );
    let multipart = plan(
        &shape("/", vec![], Some("multipart/form-data")),
        "http://h",
        &arguments(json!({"body": body})),
    )
    .expect("planned");
    let Some(PlannedBody::Multipart(parts)) = multipart.body else {
        panic!("multipart: {multipart:?}");
    };
    let described: Vec<(&str, &str, Option<&str>)> = parts
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str(), p.content_type))
        .collect();
    assert_eq!(
        described,
        [
            ("meta", "{\"k\":1}", Some("application/json")),
            ("n", "2", None),
            ("name", "a b", None),
            ("tags", "x", None),
            ("tags", "y", None),
        ]
    );
    let vendor = plan(
        &shape("/", vec![], Some("application/vnd.api+json")),
        "http://h",
        &arguments(json!({"body": [1]})),
    )
    .expect("planned");
    assert_eq!(
        vendor.body,
        Some(PlannedBody::Bytes {
            content_type: "application/vnd.api+json".to_owned(),
            bytes: b"[1]".to_vec()
        })
    );
    let text = plan(
        &shape("/", vec![], Some("text/plain")),
        "http://h",
        &arguments(json!({"body": "hi"})),
    )
    .expect("planned");
    assert_eq!(
        text.body,
        Some(PlannedBody::Bytes {
            content_type: "text/plain".to_owned(),
            bytes: b"hi".to_vec()
        })
    );
}

#[test]
fn what_cannot_be_sent_is_refused_with_the_reason() {
    let refused = |shape: RequestShape, args: Value| {
        plan(&shape, "http://h", &arguments(args)).expect_err("refused")
    };
    let error = refused(
        shape("/", vec![], Some("application/octet-stream")),
        json!({"body": "x"}),
    );
    assert!(
        matches!(&error, PlanError::NotExecutable(m) if m.contains("application/octet-stream")),
        "{error}"
    );
    let error = refused(
        shape("/", vec![], Some("application/x-www-form-urlencoded")),
        json!({"body": [1]}),
    );
    assert!(
        matches!(&error, PlanError::Arguments(m) if m.contains("object")),
        "{error}"
    );
    let error = refused(
        shape(
            "/x/{id}",
            vec![binding("id", "id", Path, "simple", false)],
            None,
        ),
        json!({}),
    );
    assert_eq!(
        error,
        PlanError::Arguments("'id' is required: it is part of the path".to_owned())
    );
    let error = refused(shape("/x/{id}", vec![], None), json!({}));
    assert!(matches!(error, PlanError::NotExecutable(_)));
    let error = refused(
        shape(
            "/x/{id}",
            vec![binding("id", "id", Path, "weird", false)],
            None,
        ),
        json!({"id": 1}),
    );
    assert!(matches!(error, PlanError::NotExecutable(_)));
    let error = refused(
        shape("/", vec![binding("h", "h", Header, "simple", false)], None),
        json!({"h": "a\nb"}),
    );
    assert!(matches!(error, PlanError::Arguments(_)));
}

#[test]
fn dot_segments_cannot_climb_out_of_the_path() {
    let shape = shape(
        "/files/{name}/raw",
        vec![binding("name", "name", Path, "simple", false)],
        None,
    );
    for name in ["..", "."] {
        let error =
            plan(&shape, "http://h", &arguments(json!({"name": name}))).expect_err("refused");
        assert!(matches!(error, PlanError::Arguments(_)), "{name}");
    }
    let planned = plan(
        &shape,
        "http://h",
        &arguments(json!({"name": "../../admin"})),
    )
    .expect("one segment");
    assert_eq!(planned.url, "http://h/files/..%2F..%2Fadmin/raw");
}

#[test]
fn reserved_headers_are_never_taken_from_arguments() {
    let parameters = [
        "Host",
        "Content-Length",
        "Accept",
        "content-type",
        "Transfer-Encoding",
    ]
    .iter()
    .map(|name| binding(name, name, Header, "simple", false))
    .collect();
    let shape = shape("/", parameters, None);
    let planned = plan(
        &shape,
        "http://h",
        &arguments(json!({"Host": "evil", "Content-Length": "1", "Accept": "x", "content-type": "y", "Transfer-Encoding": "chunked"})),
    )
    .expect("planned");
    assert!(planned.headers.is_empty(), "{:?}", planned.headers);
}

#[test]
fn json_content_parameters_are_sent_as_json_text() {
    let mut filter = binding("filter", "filter", Query, "form", true);
    filter.content = Some("application/json".to_owned());
    let planned = plan(
        &shape("/", vec![filter], None),
        "http://h",
        &arguments(json!({"filter": {"a": [1]}})),
    )
    .expect("planned");
    assert_eq!(
        planned.query,
        [("filter".to_owned(), "{\"a\":[1]}".to_owned())]
    );
}

#[test]
fn a_shape_read_from_a_document_plans_the_request_the_document_describes() {
    let document = json!({
        "openapi": "3.0.3",
        "paths": {"/pets/{id}": {"get": {
            "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}},
                {"name": "id", "in": "query", "schema": {"type": "string"}},
                {"name": "fields", "in": "query", "style": "form", "explode": false, "schema": {"type": "array"}}
            ]
        }}}
    });
    let shape = request_shape(&document, "GET", "/pets/{id}").expect("a shape");
    let planned = plan(
        &shape,
        "http://h/api",
        &arguments(json!({"id": 7, "query_id": "x", "fields": ["a", "b"]})),
    )
    .expect("planned");
    assert_eq!(planned.method, "GET");
    assert_eq!(planned.url, "http://h/api/pets/7");
    assert_eq!(
        planned.query,
        [
            ("id".to_owned(), "x".to_owned()),
            ("fields".to_owned(), "a,b".to_owned())
        ]
    );
}

#[test]
fn a_template_without_a_leading_slash_is_refused_before_any_value_is_placed() {
    let shape = shape(
        "{port}",
        vec![binding("port", "port", Path, "simple", false)],
        None,
    );
    let refused = plan(
        &shape,
        "http://127.0.0.1:4631",
        &arguments(json!({"port": "9"})),
    );
    assert!(
        matches!(&refused, Err(PlanError::NotExecutable(why)) if why.contains("begin with '/'")),
        "{refused:?}"
    );
}

/// A planned request with this URL, to check [`target`] alone.
fn planned_at(url: &str) -> PlannedRequest {
    PlannedRequest {
        method: "GET".to_owned(),
        url: url.to_owned(),
        query: vec![("q".to_owned(), "a&b=c".to_owned())],
        headers: Vec::new(),
        cookies: Vec::new(),
        body: None,
    }
}

#[test]
fn the_target_keeps_the_base_authority_and_path_or_is_refused() {
    let base = "https://user:pw@api.example:8443/v1";
    let kept = target(&planned_at("https://user:pw@api.example:8443/v1/x"), base).expect("kept");
    assert_eq!(
        kept.as_str(),
        "https://user:pw@api.example:8443/v1/x?q=a%26b%3Dc"
    );
    for escaped in [
        "https://user:pw@api.example:84439/v1/x",
        "https://user:pw@api.example.evil:8443/v1/x",
        "https://api.example:8443/v1/x",
        "https://other:pw@api.example:8443/v1/x",
        "http://user:pw@api.example:8443/v1/x",
        "https://user:pw@api.example:8443/v2/x",
        "https://user:pw@api.example:8443/",
        "https://user:pw@api.example:8443/v1/../admin",
        "not a url",
    ] {
        let refused = target(&planned_at(escaped), base);
        assert!(
            matches!(&refused, Err(PlanError::NotExecutable(_))),
            "{escaped}: {refused:?}"
        );
    }
    let refused = target(&planned_at("ftp://h/x"), "ftp://h");
    assert!(matches!(refused, Err(PlanError::NotExecutable(_))));
}

/// Hostile values, and characters hostile templates are made of.
const HOSTILE: [&str; 24] = [
    "@",
    ":",
    "//",
    "/",
    "%2F",
    "%2f",
    "..",
    ".",
    "\\",
    "?",
    "#",
    "[::1]",
    "[",
    "]",
    "\u{3002}",
    "\u{ff0e}",
    "\u{2024}",
    "%2e%2e",
    "evil.example",
    "9",
    ":80",
    "user@",
    "%40",
    "\t",
];

fn hostile_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(HOSTILE.to_vec()).prop_map(str::to_owned),
            "[a-z0-9]{0,3}",
        ],
        0..5,
    )
    .prop_map(|parts| parts.concat())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(10_000))]

    /// Whatever the document's template and the agent's values, a request that is planned
    /// and passes [`target`] goes to the base's scheme, userinfo, host and port, under its
    /// path; and a template that begins with `/` with hostile values never leaves the base.
    #[test]
    fn no_template_or_value_moves_the_request_off_the_base(
        base in proptest::sample::select(vec![
            "http://127.0.0.1:4631", "https://api.example/v1/", "http://u:p@[::1]:8080/a",
            "https://api.example:443",
        ]),
        literal in hostile_text(),
        slash in proptest::bool::ANY,
        values in proptest::collection::vec(hostile_text(), 2),
        style in proptest::sample::select(vec!["simple", "label", "matrix"]),
    ) {
        let template = format!("{}{literal}{{a}}/{{b}}", if slash { "/" } else { "" });
        let shape = shape(
            &template,
            vec![
                binding("a", "a", Path, style, false),
                binding("b", "b", Path, "simple", false),
            ],
            None,
        );
        let given = arguments(json!({"a": values[0], "b": values[1]}));
        let base_url = reqwest::Url::parse(base).expect("a base");
        match plan(&shape, base, &given) {
            Ok(planned) => {
                proptest::prop_assert!(
                    template.starts_with('/'),
                    "a template without '/' was planned: {template}"
                );
                if let Ok(url) = target(&planned, base) {
                    proptest::prop_assert_eq!(url.origin(), base_url.origin());
                    proptest::prop_assert_eq!(url.username(), base_url.username());
                    proptest::prop_assert_eq!(url.password(), base_url.password());
                    proptest::prop_assert!(
                        url.path().starts_with(base_url.path().trim_end_matches('/'))
                    );
                } else {
                    // Only the document's own literal can make a URL that leaves the base:
                    // the values are encoded as one segment each.
                    proptest::prop_assert!(!literal.is_empty(), "{template} {given:?}");
                }
            }
            Err(PlanError::NotExecutable(_)) => proptest::prop_assert!(!template.starts_with('/')),
            Err(PlanError::Arguments(_)) => {}
        }
    }
}
