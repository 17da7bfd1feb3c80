//! Catalog ingestion: reads tool definitions from where they are defined (an OpenAPI document,
//! an MCP server) and keeps the catalog in step with them.
//!
//! [`fetch`] does the I/O and returns [`ImportedTool`]s; [`refresh::apply`] is pure and turns
//! them into one catalog mutation (create, update, deprecate, restore) that the caller commits
//! through [`CatalogService::write`](crate::service::CatalogService::write), so that one
//! refresh is one revision with one audit record. `tool-service` sources are not fetched:
//! their tools are written by admins and checked by [`crate::domain::validate`].

pub mod decide;
pub mod mcp_server;
pub mod names;
pub mod openapi;
pub mod refresh;
pub mod renames;
mod revisions;

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

pub use crate::domain::imported::ImportedTool;
use crate::domain::model::Source;
use crate::domain::source_config::{self, ImportConfig, SpecLocation};

/// How long one upstream request may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest upstream body read (a spec, one MCP response).
pub const MAX_FETCH_BYTES: usize = 16 * 1024 * 1024;

/// What one import read from the upstream: its tools, and the operations it skipped or cut.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Import {
    pub tools: Vec<ImportedTool>,
    pub issues: Vec<ImportIssue>,
}

/// An operation that was not imported, or imported with less than the upstream defines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ImportIssue {
    /// `METHOD /path` (or the path, when the whole path item is unreadable).
    pub operation: String,
    /// The upstream's `operationId`, when it gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    pub outcome: IssueOutcome,
    /// What is wrong, in the document's terms.
    pub reason: String,
}

/// What became of an operation with an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IssueOutcome {
    /// No tool was made for it.
    Skipped,
    /// A tool was made, without a part (its output schema).
    Cut,
}

impl ImportIssue {
    /// An operation that was not imported.
    pub fn skipped(operation: String, operation_id: Option<&str>, reason: String) -> Self {
        ImportIssue {
            operation,
            operation_id: operation_id.map(str::to_owned),
            outcome: IssueOutcome::Skipped,
            reason,
        }
    }
}

/// Why an import did not happen. Nothing is changed in the catalog in any of these cases.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The source cannot be imported as configured (manual type, empty or invalid config): 422.
    #[error("{0}")]
    NotImportable(String),
    /// The upstream could not be reached or answered with an error: 502.
    #[error("{0}")]
    Upstream(String),
    /// The upstream answered, but with something that is not a usable definition (a document
    /// fetched by URL that is not OpenAPI 3 is [`IngestError::NotImportable`]): 502.
    #[error("{0}")]
    Definition(String),
}

/// Fetches the current tool definitions of an `openapi` or `mcp` source, with names every
/// LLM accepts ([`names::assign`]).
pub async fn fetch(source: &Source) -> Result<Import, IngestError> {
    let mut import = fetch_definitions(source).await?;
    names::assign(&mut import.tools);
    Ok(import)
}

async fn fetch_definitions(source: &Source) -> Result<Import, IngestError> {
    let config = source_config::import_config(source).map_err(|errors| {
        IngestError::NotImportable(
            errors
                .iter()
                .map(|e| {
                    if e.field.is_empty() {
                        e.message.clone()
                    } else {
                        format!("config.{}: {}", e.field, e.message)
                    }
                })
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    match config {
        ImportConfig::OpenApi { spec, headers } => {
            match spec {
                // An inline document is the admin's own input: its faults are 422, not 502.
                SpecLocation::Inline(document) => {
                    let document = match document {
                        Value::String(text) => Document::Text(text),
                        document => Document::Parsed(document),
                    };
                    import_document(document).await.map_err(|error| {
                        IngestError::NotImportable(format!("config.spec: {error}"))
                    })
                }
                SpecLocation::Url(url) => {
                    let body = get_text(&url, &headers).await?;
                    // Fetched, but not a document that can be imported: the admin's to fix
                    // (422), as the same document inline would be; not an upstream failure.
                    import_document(Document::Text(body))
                        .await
                        .map_err(|error| match error {
                            IngestError::Definition(reason) => IngestError::NotImportable(format!(
                                "config.url: the document at {url}: {reason}"
                            )),
                            other => other,
                        })
                }
            }
        }
        ImportConfig::Mcp { url, headers } => {
            mcp_server::list_tools(&source.name, &url, &headers).await
        }
    }
}

/// The OpenAPI document of a source, parsed (on a blocking thread, as an import does): the
/// inline `config.spec`, or the one at `config.url` fetched with the source's headers. Not
/// checked further: the caller looks up what it needs ([`openapi::request_shape`]).
pub async fn openapi_document(
    spec: &SpecLocation,
    headers: &[(String, String)],
) -> Result<Value, IngestError> {
    let text = match spec {
        SpecLocation::Inline(Value::String(text)) => text.clone(),
        SpecLocation::Inline(document) => return Ok(document.clone()),
        SpecLocation::Url(url) => get_text(url, headers).await?,
    };
    tokio::task::spawn_blocking(move || openapi::parse_document(&text))
        .await
        .map_err(|error| IngestError::Definition(format!("parsing failed: {error}")))?
}

/// An OpenAPI document as configured: text to parse, or already JSON.
enum Document {
    Text(String),
    Parsed(Value),
}

/// Parses and imports a document on a blocking thread: a large document takes seconds of CPU,
/// which must not stall the requests that share the async workers. The document and every
/// intermediate value are dropped there too, before the answer.
async fn import_document(document: Document) -> Result<Import, IngestError> {
    tokio::task::spawn_blocking(move || {
        let document = match document {
            Document::Text(text) => openapi::parse_document(&text)?,
            Document::Parsed(document) => document,
        };
        openapi::tools_from_document(&document)
    })
    .await
    .map_err(|error| IngestError::Definition(format!("the import failed: {error}")))?
}

/// The HTTP client of all importers: rustls, bounded time, no redirects to other schemes.
/// An upstream's human-readable name as a title: one line (control characters and runs of
/// white space become one space), trimmed; `None` when nothing is left.
pub(crate) fn title(text: Option<&str>) -> Option<String> {
    let words: Vec<&str> = text?
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

pub(crate) fn client() -> Result<reqwest::Client, IngestError> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|error| IngestError::Upstream(format!("cannot build an HTTP client: {error}")))
}

/// Why a request failed, in words that tell a timeout from a refused connection (reqwest's
/// own text reads "error sending request" for both).
/// `timeout` is the limit the request had, for the words.
pub(crate) fn why(error: &reqwest::Error, timeout: Duration) -> String {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    let detail = causes.join(": ");
    if error.is_timeout() {
        format!("no answer within {} s (timed out)", timeout.as_secs_f64())
    } else if error.is_connect() {
        format!("could not connect ({detail})")
    } else if detail.is_empty() {
        error.to_string()
    } else {
        format!("{error}: {detail}")
    }
}

/// Reads a response body up to [`MAX_FETCH_BYTES`].
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    url: &str,
) -> Result<Vec<u8>, IngestError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| IngestError::Upstream(format!("reading {url} failed: {error}")))?
    {
        if body.len() + chunk.len() > MAX_FETCH_BYTES {
            return Err(IngestError::Definition(format!(
                "{url} answered with more than {MAX_FETCH_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn get_text(url: &str, headers: &[(String, String)]) -> Result<String, IngestError> {
    let mut request = client()?.get(url);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.map_err(|error| {
        IngestError::Upstream(format!(
            "fetching {url} failed: {}",
            why(&error, FETCH_TIMEOUT)
        ))
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(IngestError::Upstream(format!(
            "fetching {url} failed: the server answered {status}"
        )));
    }
    let body = read_body(response, url).await?;
    String::from_utf8(body)
        .map_err(|_| IngestError::Definition(format!("the document at {url} is not UTF-8 text")))
}
