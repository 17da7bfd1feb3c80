//! A call of an `openapi` source's tool: the HTTP request its operation describes.
//!
//! The operation is found in the source's document by the tool's method and path, which is how
//! the importer made the tool. The document is the inline `config.spec` or the one at
//! `config.url` (fetched with the source's headers), parsed once and kept per source
//! ([`Documents`]): remade when the source changes, after [`DOCUMENT_MAX_AGE`], and once at
//! once when a fetched document lacks the operation of a tool written after the document was
//! read (a refresh imported it from a newer document). Any other miss is the tool's error with
//! no fetch: a tool its document lacks must not make every call read the whole document.
//!
//! Calls go to `config.base_url` when the source sets it, else to the operation's server
//! (operation, path item, then document `servers`, variables at their defaults), a relative
//! one resolved against `config.url`. The request carries the source's configured headers,
//! which win over header parameters, and nothing of the agent's.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, COOKIE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde_json::{Map, Value};

use super::pool::Pool;
use super::request::{self, PlanError, PlannedBody, PlannedRequest};
use super::response::{self, origin};
use super::{CallLimits, CallOutcome, CallResult};
use crate::domain::model::{Source, Tool};
use crate::domain::source_config::{CallSettings, ImportConfig, SpecLocation};
use crate::ingest::openapi::{RequestShape, request_shape};
use crate::ingest::{self, IngestError};

/// Sources whose documents are kept at once.
pub(super) const MAX_DOCUMENTS: usize = 64;
/// How long a kept document is used before it is read again.
pub(super) const DOCUMENT_MAX_AGE: Duration = Duration::from_secs(300);

/// The parsed documents of `openapi` sources, one per source.
pub(super) struct Documents {
    pool: Pool<Document>,
}

/// A parsed document and when it was read.
struct Document {
    value: Value,
    read_at: chrono::DateTime<chrono::Utc>,
}

impl Default for Documents {
    fn default() -> Self {
        Documents {
            pool: Pool::new(MAX_DOCUMENTS, Some(DOCUMENT_MAX_AGE), drop),
        }
    }
}

/// Where the approved definition says a call of `tool` goes and how its inputs are sent; `None`
/// for a tool without one (written by hand, or imported before definitions were pinned).
fn approved_request(tool: &Tool) -> Option<Value> {
    /// The one member a call compares; the rest of the text is scanned, not built.
    #[derive(serde::Deserialize)]
    struct Approved {
        #[serde(default)]
        request: Value,
    }
    let text = tool.imported.as_ref()?.definition.as_ref()?.text();
    let approved: Approved = serde_json::from_str(text).ok()?;
    Some(approved.request).filter(|request| !request.is_null())
}

/// A call made ready: the request, the server URL it must stay on, the source's headers.
struct Prepared {
    planned: PlannedRequest,
    base: String,
    configured: Vec<(String, String)>,
}

/// What one call needs of the adapter.
pub(super) struct Call<'u> {
    pub client: &'u reqwest::Client,
    pub limits: CallLimits,
    pub documents: &'u Documents,
    /// The token `config.auth` asked for (`Bearer …`), sent as `Authorization`.
    pub authorization: Option<&'u str>,
    /// When a document is read (the clock tools' `updated_at` is stamped by).
    pub clock: &'u dyn crate::clock::Clock,
}

impl Call<'_> {
    /// Calls `tool` of `source` (whose config gives `settings`) with `arguments`.
    pub(super) async fn run(
        &self,
        (source, settings): (&Source, &CallSettings),
        tool: &Tool,
        arguments: &Map<String, Value>,
    ) -> CallResult {
        match self.prepare(source, settings, tool, arguments).await {
            Ok(planned) => self.send(planned, tool).await,
            Err(result) => result,
        }
    }

    /// The request the call becomes, or the result that says why there is none.
    async fn prepare(
        &self,
        source: &Source,
        settings: &CallSettings,
        tool: &Tool,
        arguments: &Map<String, Value>,
    ) -> Result<Prepared, CallResult> {
        let (spec, headers) = match &settings.import {
            Ok(ImportConfig::OpenApi { spec, headers }) => (spec, headers),
            Ok(ImportConfig::Mcp { .. }) | Err(_) => {
                return Err(not_executable(format!(
                    "the OpenAPI source '{}' has no usable config (config.spec or config.url): \
                     its tools cannot be called",
                    source.id
                )));
            }
        };
        let version = blake3::Hash::from(settings.version);
        let shape = self.shape(source, tool, (spec, headers), version).await?;
        let base = base_url(settings.base_url.as_deref(), &shape, spec).map_err(not_executable)?;
        let planned = request::plan(&shape, &base, arguments).map_err(plan_failure)?;
        let mut configured = headers.clone();
        if let Some(authorization) = self.authorization {
            // Last, so that it replaces a header parameter of the same name.
            configured.push(("Authorization".to_owned(), authorization.to_owned()));
        }
        Ok(Prepared {
            planned,
            base,
            configured,
        })
    }

    /// The operation's request shape, from the kept document or a freshly read one.
    async fn shape(
        &self,
        source: &Source,
        tool: &Tool,
        (spec, headers): (&SpecLocation, &[(String, String)]),
        version: blake3::Hash,
    ) -> Result<RequestShape, CallResult> {
        let (Some(method), Some(path)) = (&tool.method, &tool.path) else {
            return Err(not_executable(format!(
                "the tool '{}' has no method and path, so it names no operation of the \
                 source's document",
                tool.id
            )));
        };
        let read = || async {
            let read_at = self.clock.now();
            let value = ingest::openapi_document(spec, headers).await?;
            Ok::<_, IngestError>(Document { value, read_at })
        };
        loop {
            let (document, fresh) = self
                .documents
                .pool
                .get(&source.id, version, read)
                .await
                .map_err(document_failure)?;
            match request_shape(&document.value, method, path) {
                Ok(shape) => match approved_request(tool) {
                    Some(approved) if approved != shape.to_json() => {
                        if !fresh && written_after(tool, &document) {
                            self.documents.pool.forget(&source.id, &document).await;
                            continue;
                        }
                        return Err(super::awaiting_approval());
                    }
                    _ => return Ok(shape),
                },
                Err(_) if !fresh && written_after(tool, &document) => {
                    self.documents.pool.forget(&source.id, &document).await;
                }
                Err(reason) => {
                    return Err(not_executable(format!(
                        "the source's document does not describe the operation of tool '{}' \
                         ({reason}); refresh the source",
                        tool.id
                    )));
                }
            }
        }
    }

    async fn send(
        &self,
        Prepared {
            planned,
            base,
            configured,
        }: Prepared,
        tool: &Tool,
    ) -> CallResult {
        let url = match request::target(&planned, &base) {
            Ok(url) => url,
            Err(error) => return plan_failure(error),
        };
        let at = origin(&url);
        let method = match Method::from_bytes(planned.method.as_bytes()) {
            Ok(method) => method,
            Err(_) => return not_executable(format!("'{}' is not an HTTP method", planned.method)),
        };
        let headers = match request_headers(&planned, &configured) {
            Ok(headers) => headers,
            Err(message) => return not_executable(message),
        };
        let mut request = self
            .client
            .request(method, url)
            .headers(headers)
            .timeout(self.limits.timeout);
        request = match planned.body {
            None => request,
            Some(PlannedBody::Bytes {
                content_type,
                bytes,
            }) => request.header(CONTENT_TYPE, content_type).body(bytes),
            Some(PlannedBody::Form(pairs)) => request.form(&pairs),
            Some(PlannedBody::Multipart(parts)) => {
                let mut form = reqwest::multipart::Form::new();
                for part in parts {
                    let mut field = reqwest::multipart::Part::text(part.value);
                    if let Some(content_type) = part.content_type {
                        field = field
                            .mime_str(content_type)
                            .expect("a constant media type parses");
                    }
                    form = form.part(part.name, field);
                }
                request.multipart(form)
            }
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return response::send_failure(&error, &at, self.limits.timeout),
        };
        let status = response.status();
        let content_type = response::content_type(&response);
        let body = match response::read_capped(
            response,
            self.limits.max_response_bytes,
            &at,
            self.limits.timeout,
        )
        .await
        {
            Ok(body) => body,
            Err(result) => return result,
        };
        response::http_result(
            status,
            content_type.as_deref(),
            &body,
            tool.output_schema.as_deref(),
        )
    }
}

/// Whether `tool` was written after `document` was read: only then may a fresher document
/// describe it (a document given inline is never read again).
fn written_after(tool: &Tool, document: &Document) -> bool {
    tool.updated_at
        .is_some_and(|written| written > document.read_at)
}

/// Header parameters, the `Cookie` header of cookie parameters, then the source's configured
/// headers (which replace a parameter of the same name; a configured `Cookie` is joined with
/// the cookie parameters).
fn request_headers(
    planned: &PlannedRequest,
    configured: &[(String, String)],
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/plain;q=0.9, */*;q=0.8"),
    );
    let header = |name: &str, value: &str| -> Result<(HeaderName, HeaderValue), String> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("'{name}' is not an HTTP header name"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header '{name}' is not a header value"))?;
        Ok((name, value))
    };
    for (name, value) in &planned.headers {
        let (name, value) = header(name, value)?;
        headers.append(name, value);
    }
    let mut cookies = planned.cookies.clone();
    for (name, value) in configured {
        if name.eq_ignore_ascii_case("cookie") {
            cookies.insert(0, value.clone());
            continue;
        }
        let (name, value) = header(name, value)?;
        headers.insert(name, value);
    }
    if !cookies.is_empty() {
        let (name, value) = header(COOKIE.as_str(), &cookies.join("; "))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Where the calls of `source` go (see the module documentation).
fn base_url(
    configured: Option<&str>,
    shape: &RequestShape,
    spec: &SpecLocation,
) -> Result<String, String> {
    if let Some(base) = configured {
        return Ok(base.to_owned());
    }
    let server = shape.server.as_deref().unwrap_or("/");
    match Url::parse(server) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(server.to_owned()),
        Ok(_) => Err(format!(
            "the document's server URL '{server}' is not http(s): set config.base_url"
        )),
        Err(_) => match spec {
            SpecLocation::Url(document) => Url::parse(document)
                .and_then(|document| document.join(server))
                .map(String::from)
                .map_err(|error| {
                    format!("the document's server URL '{server}' cannot be resolved: {error}")
                }),
            SpecLocation::Inline(_) => Err(format!(
                "the document's server URL '{server}' is relative and the document is inline, \
                 so there is nothing to resolve it against: set config.base_url"
            )),
        },
    }
}

/// A call the source's config or document cannot make; the message may name them, so the
/// agent reads only the kind.
fn not_executable(message: String) -> CallResult {
    CallResult::hidden(CallOutcome::NotExecutable, message, None)
}

/// The result for arguments or a document that make no request: the agent's own mistake is
/// told to it, the rest is hidden.
fn plan_failure(error: PlanError) -> CallResult {
    match error {
        PlanError::Arguments(message) => CallResult::failure(
            CallOutcome::ToolError,
            format!("the arguments cannot make the request: {message}"),
            None,
        ),
        PlanError::NotExecutable(message) => not_executable(message),
    }
}

/// The result for a document that could not be read.
fn document_failure(error: IngestError) -> CallResult {
    match error {
        IngestError::Upstream(message) => CallResult::hidden(
            CallOutcome::Unreachable,
            format!("the source's OpenAPI document cannot be fetched: {message}"),
            None,
        ),
        IngestError::Definition(message) | IngestError::NotImportable(message) => {
            CallResult::hidden(
                CallOutcome::BadUpstream,
                format!("the source's OpenAPI document cannot be read: {message}"),
                None,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn source(config: Value) -> Source {
        serde_json::from_value(json!({"id": "s", "name": "s", "type": "openapi", "config": config}))
            .expect("a source")
    }

    fn shape(server: Option<&str>) -> RequestShape {
        RequestShape {
            method: "GET".to_owned(),
            path: "/x".to_owned(),
            parameters: Vec::new(),
            body: None,
            server: server.map(str::to_owned),
        }
    }

    #[test]
    fn the_base_url_is_the_configured_one_else_the_documents_resolved() {
        let inline = SpecLocation::Inline(json!({}));
        let fetched = SpecLocation::Url("https://docs.example/specs/api.json".to_owned());
        let configured = source(json!({"spec": {}, "base_url": "http://10.0.0.1:8080/api"}));
        let configured = CallSettings::of(&configured).base_url;
        assert_eq!(
            base_url(
                configured.as_deref(),
                &shape(Some("https://ignored.example")),
                &inline
            )
            .as_deref(),
            Ok("http://10.0.0.1:8080/api")
        );
        let plain = CallSettings::of(&source(json!({"spec": {}}))).base_url;
        let plain = plain.as_deref();
        assert_eq!(
            base_url(plain, &shape(Some("https://api.example/v1")), &inline).as_deref(),
            Ok("https://api.example/v1")
        );
        assert_eq!(
            base_url(plain, &shape(Some("/v3")), &fetched).as_deref(),
            Ok("https://docs.example/v3")
        );
        assert_eq!(
            base_url(plain, &shape(None), &fetched).as_deref(),
            Ok("https://docs.example/")
        );
        let error =
            base_url(plain, &shape(Some("/v3")), &inline).expect_err("nothing to resolve against");
        assert!(error.contains("config.base_url"), "{error}");
        let error =
            base_url(plain, &shape(Some("ftp://x.example")), &inline).expect_err("not http");
        assert!(error.contains("not http"), "{error}");
    }

    #[test]
    fn configured_headers_win_and_cookies_are_joined() {
        let planned = PlannedRequest {
            method: "GET".to_owned(),
            url: "http://h/".to_owned(),
            query: Vec::new(),
            headers: vec![
                ("X-Key".to_owned(), "from-agent".to_owned()),
                ("X-Trace".to_owned(), "t".to_owned()),
            ],
            cookies: vec!["theme=dark".to_owned()],
            body: None,
        };
        let configured = vec![
            ("x-key".to_owned(), "from-config".to_owned()),
            ("Cookie".to_owned(), "sid=1".to_owned()),
        ];
        let headers = request_headers(&planned, &configured).expect("headers");
        let all = |name: &str| -> Vec<&str> {
            headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().expect("text"))
                .collect()
        };
        assert_eq!(all("x-key"), ["from-config"]);
        assert_eq!(all("x-trace"), ["t"]);
        assert_eq!(all("cookie"), ["sid=1; theme=dark"]);
        assert!(headers.get("authorization").is_none());
    }
}
