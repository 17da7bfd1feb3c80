//! Requests an attacker (or a broken client) sends, answered as the contract says: bodies that
//! cannot be read or carry trailing data, methods and paths the router does not know, query
//! strings that are not UTF-8, request ids of any shape, and ambiguous credentials. Every 4xx
//! is problem JSON. Bodies reqwest will not send (bad chunking, cut short) go over raw TCP.

use crate::support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::gateway::Gateway;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response read off a raw connection.
struct RawReply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawReply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts problem JSON with this status and returns its body.
    fn problem(&self, status: u16) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        assert_eq!(self.status, status, "body: {text}");
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "body: {text}"
        );
        let body: Value = serde_json::from_slice(&self.body).expect("a JSON body");
        assert_eq!(body["status"], json!(status));
        body
    }
}

/// Writes `head` then `body` on a fresh connection to the gateway, then closes the writing
/// side when `close_after` (the server sees the end of the stream), and reads one response.
async fn raw_exchange(gateway: &Gateway, head: &str, body: &[u8], close_after: bool) -> RawReply {
    let addr = gateway.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(body).await.expect("write body");
    if close_after {
        stream.shutdown().await.expect("half-close");
    }
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0u8; 4096];
        loop {
            let n = stream.read(&mut buffer).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buffer[..n]);
            if let Some(reply) = parse_reply(&received) {
                return Some(reply);
            }
        }
        parse_reply(&received)
    })
    .await;
    match read {
        Ok(Some(reply)) => reply,
        Ok(None) => panic!(
            "no complete response; got {:?}",
            String::from_utf8_lossy(&received)
        ),
        Err(_) => panic!(
            "no response within 10 s; got {:?}",
            String::from_utf8_lossy(&received)
        ),
    }
}

/// One HTTP/1.1 response with a `content-length`, once it has fully arrived.
fn parse_reply(bytes: &[u8]) -> Option<RawReply> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..end]).expect("an ASCII head");
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body = &bytes[end + 4..];
    (body.len() >= length).then(|| RawReply {
        status,
        headers,
        body: body[..length].to_vec(),
    })
}

fn post_head(path: &str, framing: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\n{framing}\r\n",
        Gateway::admin()
    )
}

/// Sends `body` as-is (reqwest would not re-encode it) and returns the reply.
async fn post_raw_json(gateway: &Gateway, path: &str, body: &str) -> support::gateway::Reply {
    let response = gateway
        .client
        .post(format!("{}{path}", gateway.base))
        .bearer_auth(Gateway::admin())
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("request");
    support::gateway::Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.bytes().await.expect("body").to_vec(),
    }
}

#[tokio::test]
async fn a_body_with_bad_chunked_encoding_is_400_not_413() {
    let gateway = Gateway::start().await;
    let head = post_head("/admin/labels", "transfer-encoding: chunked\r\n");
    let reply = raw_exchange(&gateway, &head, b"zz\r\n{}\r\n0\r\n\r\n", false).await;
    let problem = reply.problem(400);
    let detail = problem["detail"].as_str().expect("detail");
    assert!(
        detail.starts_with("could not read the request body"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_400_not_413() {
    let gateway = Gateway::start().await;
    let head = post_head("/admin/labels", "content-length: 100\r\n");
    let reply = raw_exchange(&gateway, &head, br#"{"name":"x"}"#, true).await;
    let problem = reply.problem(400);
    let detail = problem["detail"].as_str().expect("detail");
    assert!(
        detail.starts_with("could not read the request body"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_even_when_chunked() {
    let gateway = Gateway::start().await;
    let head = post_head("/admin/labels", "transfer-encoding: chunked\r\n");
    let chunk = "x".repeat(64 * 1024);
    let mut body = Vec::new();
    for _ in 0..17 {
        body.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
    }
    body.extend_from_slice(b"0\r\n\r\n");
    raw_exchange(&gateway, &head, &body, false)
        .await
        .problem(413);
}

#[tokio::test]
async fn trailing_data_after_the_json_value_is_400() {
    let gateway = Gateway::start().await;
    for body in [r#"{"id":"t1","name":"t1"}{"id":"x"}"#, "{} x", "{}}"] {
        let reply = post_raw_json(&gateway, "/admin/labels", body).await;
        let problem = reply.problem(400);
        let detail = problem["detail"].as_str().expect("detail");
        assert!(
            detail.contains("trailing data after the JSON value at line 1 column"),
            "{body}: {detail}"
        );
    }
    // Nothing was created by the first one.
    gateway
        .admin_send(Method::GET, "/admin/labels/t1", None)
        .await
        .problem(404);
    // Whitespace after the value is not data.
    post_raw_json(
        &gateway,
        "/admin/labels",
        "{\"id\":\"t2\",\"name\":\"t2\"} \r\n\t\n",
    )
    .await
    .expect(reqwest::StatusCode::CREATED);
}

#[tokio::test]
async fn a_known_path_with_another_method_is_405_problem_json_with_allow() {
    let gateway = Gateway::start().await;
    for (method, path, allowed) in [
        (Method::DELETE, "/agents/tools", "GET"),
        (Method::POST, "/healthz", "GET"),
        (Method::PATCH, "/admin/catalog", "PUT"),
        (Method::PUT, "/admin/labels", "POST"),
    ] {
        let reply = gateway.admin_send(method.clone(), path, None).await;
        let problem = reply.problem(405);
        let allow = reply.header("allow").unwrap_or_default();
        assert!(allow.contains(allowed), "{method} {path}: allow {allow:?}");
        let detail = problem["detail"].as_str().expect("detail");
        assert!(detail.contains(method.as_str()), "{detail}");
    }
}

#[tokio::test]
async fn an_unknown_path_is_404_problem_json() {
    let gateway = Gateway::start().await;
    for path in ["/nope", "/admin/labels/a/b/c", "/agents"] {
        gateway
            .admin_send(Method::GET, path, None)
            .await
            .problem(404);
    }
}

#[tokio::test]
async fn a_query_that_is_not_utf8_after_decoding_is_400_naming_the_parameter() {
    let gateway = Gateway::start().await;
    let admin = Gateway::admin();
    for (query, parameter) in [
        ("?group=%FF", "group"),
        ("?state=enabled&tools=a%C3", "tools"),
        ("?%FFx=1", "query"),
    ] {
        let reply = gateway.get(&format!("/agents/tools{query}"), &admin).await;
        let problem = reply.problem(400);
        let detail = problem["detail"].as_str().expect("detail");
        assert!(detail.contains(parameter), "{query}: {detail}");
        assert!(detail.contains("UTF-8"), "{query}: {detail}");
    }
    // Valid percent-encoded UTF-8 is fine.
    gateway
        .get("/agents/tools?group=%C3%A9tape", &admin)
        .await
        .expect(reqwest::StatusCode::OK);
}

async fn echoed_request_id(gateway: &Gateway, sent: reqwest::header::HeaderValue) -> String {
    let response = gateway
        .client
        .get(format!("{}/healthz", gateway.base))
        .header("x-request-id", sent)
        .send()
        .await
        .expect("request");
    response
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .expect("an x-request-id in the response")
        .to_owned()
}

#[tokio::test]
async fn a_request_id_is_kept_only_when_short_and_plain() {
    use reqwest::header::HeaderValue;
    let gateway = Gateway::start().await;
    let plain = "req-42.a_b:c";
    assert_eq!(
        echoed_request_id(&gateway, HeaderValue::from_static(plain)).await,
        plain
    );
    let longest = "a".repeat(128);
    assert_eq!(
        echoed_request_id(&gateway, HeaderValue::from_str(&longest).expect("header")).await,
        longest
    );
    for bad in [
        HeaderValue::from_str(&"a".repeat(129)).expect("header"),
        HeaderValue::from_str(&"x".repeat(8000)).expect("header"),
        HeaderValue::from_static("two words"),
        HeaderValue::from_static("<script>alert(1)</script>"),
        HeaderValue::from_static("a\"b"),
        HeaderValue::from_bytes(b"caf\xc3\xa9").expect("header"),
        HeaderValue::from_static(""),
    ] {
        let echoed = echoed_request_id(&gateway, bad.clone()).await;
        assert_ne!(echoed.as_bytes(), bad.as_bytes());
        assert!(
            !echoed.is_empty()
                && echoed.len() <= 128
                && echoed
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b)),
            "{bad:?} became {echoed:?}"
        );
    }
}

#[tokio::test]
async fn two_authorization_headers_are_400() {
    let gateway = Gateway::start().await;
    let admin = format!("Bearer {}", Gateway::admin());
    for second in [admin.as_str(), "Bearer not-a-token", "Basic YTpi"] {
        let response = gateway
            .client
            .get(format!("{}/admin/catalog", gateway.base))
            .header("authorization", admin.as_str())
            .header("authorization", second)
            .send()
            .await
            .expect("request");
        let reply = support::gateway::Reply {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.bytes().await.expect("body").to_vec(),
        };
        let problem = reply.problem(400);
        let detail = problem["detail"].as_str().expect("detail");
        assert!(detail.contains("Authorization"), "{detail}");
    }
}
