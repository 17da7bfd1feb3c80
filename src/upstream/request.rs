//! A tool call's arguments → the HTTP request its OpenAPI operation describes. Pure: nothing
//! is sent here ([`super::openapi`] sends it).
//!
//! Each input property goes where [`RequestShape`] says the importer took it from (the naming
//! is the importer's own, read through the same function): path parameters into the template,
//! percent-encoded; query parameters as `name=value` pairs (arrays and objects spread as the
//! parameter's `style` and `explode` say, `form` with `explode` by default); header and cookie
//! parameters as text; `body` in the operation's media type — JSON (`application/json`,
//! `+json`), `application/x-www-form-urlencoded`, `multipart/form-data`, or `text/*` when the
//! body is text. Any other media type cannot be sent ([`PlanError::NotExecutable`]).
//!
//! What the agent cannot do through its arguments: reach another host or path (path values are
//! encoded as one segment each, a path with a `.` or `..` segment is refused, since URL
//! parsers resolve them, a template that does not begin with `/` is refused, since a value
//! would then extend the base URL's host or port, and [`target`] checks the final URL against
//! the base before anything is sent: same scheme, userinfo, host and port, under its path), or set the request's framing and identity (`Host`, `Content-Type`,
//! `Content-Length`, `Accept`, `Authorization` and the like are never taken from a header
//! parameter; OpenAPI itself says `Accept`, `Content-Type` and `Authorization` parameters are
//! ignored). The source's configured headers are added after the parameters and win over them.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::ingest::openapi::{ParameterBinding, ParameterLocation, RequestShape};

/// Everything but RFC 3986's unreserved characters is encoded in a path segment or cookie.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Header parameters never sent: framing, identity and what toolgate sets itself.
const RESERVED_HEADERS: [&str; 10] = [
    "accept",
    "authorization",
    "connection",
    "content-length",
    "content-type",
    "cookie",
    "host",
    "proxy-authorization",
    "te",
    "transfer-encoding",
];

/// The request a call becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRequest {
    /// Uppercase.
    pub method: String,
    /// Absolute, with the path parameters in place (the query is separate).
    pub url: String,
    /// Query pairs, not yet encoded.
    pub query: Vec<(String, String)>,
    /// Header parameters, in order.
    pub headers: Vec<(String, String)>,
    /// `name=value` pairs for the `Cookie` header (values already encoded).
    pub cookies: Vec<String>,
    pub body: Option<PlannedBody>,
}

/// A request body, by how it is encoded.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedBody {
    /// Sent as is, with this content type (JSON, text).
    Bytes {
        content_type: String,
        bytes: Vec<u8>,
    },
    /// `application/x-www-form-urlencoded` pairs, not yet encoded.
    Form(Vec<(String, String)>),
    /// `multipart/form-data` parts.
    Multipart(Vec<Part>),
}

/// One part of a multipart body.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub value: String,
    /// `application/json` for an object or array value (what OpenAPI says to assume), else
    /// none (text).
    pub content_type: Option<&'static str>,
}

/// Why no request can be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The arguments cannot be placed (a path parameter missing, a value a header cannot
    /// hold): the caller's to fix.
    #[error("{0}")]
    Arguments(String),
    /// The operation needs something toolgate does not send (a media type, a style).
    #[error("{0}")]
    NotExecutable(String),
}

/// The request `arguments` make for the operation `shape` describes, on `base_url` (absolute,
/// without a trailing slash needed).
pub fn plan(
    shape: &RequestShape,
    base_url: &str,
    arguments: &Map<String, Value>,
) -> Result<PlannedRequest, PlanError> {
    if !shape.path.starts_with('/') {
        return Err(PlanError::NotExecutable(
            "the operation's path does not begin with '/', so its parameters would extend the \
             server's host or port: refresh the source (such operations are not imported)"
                .to_owned(),
        ));
    }
    let argument = |binding: &ParameterBinding| -> Result<Option<Value>, PlanError> {
        let value = match arguments.get(&binding.property) {
            None | Some(Value::Null) => return Ok(None),
            Some(value) => value,
        };
        Ok(Some(match &binding.content {
            None => value.clone(),
            Some(media) if is_json(media) => Value::String(value.to_string()),
            Some(media) => {
                return Err(PlanError::NotExecutable(format!(
                    "parameter '{}' is sent as {media}, which toolgate cannot encode",
                    binding.name
                )));
            }
        }))
    };
    let path = fill_path(shape, &argument)?;
    let mut query = Vec::new();
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    for binding in &shape.parameters {
        let Some(value) = argument(binding)? else {
            continue;
        };
        match binding.location {
            ParameterLocation::Path => {}
            ParameterLocation::Query => query.extend(query_pairs(binding, &value)?),
            ParameterLocation::Header => {
                if RESERVED_HEADERS.contains(&binding.name.to_ascii_lowercase().as_str()) {
                    continue;
                }
                let text = simple(&value, binding.explode, &|s| s.to_owned());
                if text.chars().any(|c| !(' '..='~').contains(&c)) {
                    return Err(PlanError::Arguments(format!(
                        "'{}': a header can only hold printable ASCII text",
                        binding.property
                    )));
                }
                headers.push((binding.name.clone(), text));
            }
            ParameterLocation::Cookie => cookies.extend(cookie_pairs(binding, &value)),
        }
    }
    let body = match (&shape.body, arguments.get("body")) {
        (Some(body), Some(value)) if !value.is_null() => {
            Some(plan_body(&body.content_type, value)?)
        }
        (Some(body), _) if body.required => {
            return Err(PlanError::Arguments("'body' is required".to_owned()));
        }
        _ => None,
    };
    Ok(PlannedRequest {
        method: shape.method.clone(),
        url: format!("{}{path}", base_url.trim_end_matches('/')),
        query,
        headers,
        cookies,
        body,
    })
}

/// The path template with every `{name}` replaced by its path parameter's value.
fn fill_path(
    shape: &RequestShape,
    argument: &dyn Fn(&ParameterBinding) -> Result<Option<Value>, PlanError>,
) -> Result<String, PlanError> {
    let mut path = String::new();
    let mut rest = shape.path.as_str();
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|at| open + at) else {
            break;
        };
        path.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        let binding = shape
            .parameters
            .iter()
            .find(|p| p.location == ParameterLocation::Path && p.name == name)
            .ok_or_else(|| {
                PlanError::NotExecutable(format!(
                    "the path {} names '{{{name}}}', which no path parameter defines",
                    shape.path
                ))
            })?;
        let value = argument(binding)?.ok_or_else(|| {
            PlanError::Arguments(format!(
                "'{}' is required: it is part of the path",
                binding.property
            ))
        })?;
        path.push_str(&path_value(binding, &value)?);
        rest = &rest[close + 1..];
    }
    path.push_str(rest);
    if path
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(PlanError::Arguments(
            "a path parameter makes a '.' or '..' segment of the request's path".to_owned(),
        ));
    }
    Ok(path)
}

/// The URL `planned` goes to, with its query, checked against `base_url` (the source's
/// configured or documented server): whatever the document's template and the arguments, the
/// request keeps the base's scheme, userinfo, host and port, and stays under its path. A URL
/// that does not is refused here, so no argument can send the source's credentials elsewhere.
pub fn target(planned: &PlannedRequest, base_url: &str) -> Result<reqwest::Url, PlanError> {
    let escapes = || {
        PlanError::NotExecutable(
            "the request's URL would leave the source's server, so it is not sent".to_owned(),
        )
    };
    let base = reqwest::Url::parse(base_url).map_err(|_| {
        PlanError::NotExecutable("the source's server URL is not an absolute URL".to_owned())
    })?;
    if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
        return Err(PlanError::NotExecutable(
            "the source's server URL is not an http(s) URL: set config.base_url".to_owned(),
        ));
    }
    let mut url = reqwest::Url::parse(&planned.url).map_err(|_| escapes())?;
    let same_authority = url.scheme() == base.scheme()
        && url.username() == base.username()
        && url.password() == base.password()
        && url.host() == base.host()
        && url.port_or_known_default() == base.port_or_known_default();
    let under = url.path().starts_with(base.path().trim_end_matches('/'));
    if !same_authority || !under {
        return Err(escapes());
    }
    if !planned.query.is_empty() {
        url.query_pairs_mut().extend_pairs(&planned.query);
    }
    Ok(url)
}

fn encode(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// A value as text: strings as they are, other scalars as JSON writes them, `null` as nothing,
/// and arrays or objects (inside arrays or objects) as JSON text.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The items of an array, or the entries of an object, as text.
fn items(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().map(scalar).collect(),
        other => vec![scalar(other)],
    }
}

fn entries(value: &Map<String, Value>) -> Vec<(String, String)> {
    value.iter().map(|(k, v)| (k.clone(), scalar(v))).collect()
}

/// OpenAPI's `simple` style: `a,b` for arrays, `k,v,k2,v2` (or `k=v,k2=v2` exploded) for
/// objects; `encode` applied to each name and value.
fn simple(value: &Value, explode: bool, encode: &dyn Fn(&str) -> String) -> String {
    match value {
        Value::Array(_) => items(value)
            .iter()
            .map(|item| encode(item))
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(object) => entries(object)
            .iter()
            .map(|(k, v)| {
                if explode {
                    format!("{}={}", encode(k), encode(v))
                } else {
                    format!("{},{}", encode(k), encode(v))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        scalar_value => encode(&scalar(scalar_value)),
    }
}

fn path_value(binding: &ParameterBinding, value: &Value) -> Result<String, PlanError> {
    let name = encode(&binding.name);
    let explode = binding.explode;
    Ok(match binding.style.as_str() {
        "simple" => simple(value, explode, &encode),
        "label" => {
            let separator = if explode { "." } else { "," };
            match value {
                Value::Array(_) => format!(
                    ".{}",
                    items(value)
                        .iter()
                        .map(|i| encode(i))
                        .collect::<Vec<_>>()
                        .join(separator)
                ),
                Value::Object(object) if explode => format!(
                    ".{}",
                    entries(object)
                        .iter()
                        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
                        .collect::<Vec<_>>()
                        .join(".")
                ),
                other => format!(".{}", simple(other, false, &encode)),
            }
        }
        "matrix" => match value {
            Value::Array(_) if explode => items(value)
                .iter()
                .map(|i| format!(";{name}={}", encode(i)))
                .collect(),
            Value::Object(object) if explode => entries(object)
                .iter()
                .map(|(k, v)| format!(";{}={}", encode(k), encode(v)))
                .collect(),
            other => format!(";{name}={}", simple(other, false, &encode)),
        },
        style => {
            return Err(PlanError::NotExecutable(format!(
                "path parameter '{}' has style '{style}', which toolgate does not send \
                 (simple, label and matrix are sent)",
                binding.name
            )));
        }
    })
}

fn query_pairs(
    binding: &ParameterBinding,
    value: &Value,
) -> Result<Vec<(String, String)>, PlanError> {
    let name = &binding.name;
    let joined = |separator: &str| -> String {
        match value {
            Value::Object(object) => entries(object)
                .into_iter()
                .flat_map(|(k, v)| [k, v])
                .collect::<Vec<_>>()
                .join(separator),
            other => items(other).join(separator),
        }
    };
    let style = binding.style.as_str();
    if !["form", "spaceDelimited", "pipeDelimited", "deepObject"].contains(&style) {
        return Err(PlanError::NotExecutable(format!(
            "query parameter '{name}' has style '{style}', which toolgate does not send \
             (form, spaceDelimited, pipeDelimited and deepObject are sent)"
        )));
    }
    Ok(match value {
        Value::Object(object) if style == "deepObject" => entries(object)
            .into_iter()
            .map(|(k, v)| (format!("{name}[{k}]"), v))
            .collect(),
        Value::Object(object) if binding.explode => entries(object),
        Value::Array(_) if binding.explode => items(value)
            .into_iter()
            .map(|i| (name.clone(), i))
            .collect(),
        _ => {
            let separator = match style {
                "spaceDelimited" => " ",
                "pipeDelimited" => "|",
                _ => ",",
            };
            vec![(name.clone(), joined(separator))]
        }
    })
}

fn cookie_pairs(binding: &ParameterBinding, value: &Value) -> Vec<String> {
    let name = encode(&binding.name);
    match value {
        Value::Object(object) if binding.explode => entries(object)
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect(),
        other => vec![format!("{name}={}", simple(other, false, &encode))],
    }
}

/// The body in the operation's media type.
fn plan_body(content_type: &str, value: &Value) -> Result<PlannedBody, PlanError> {
    let object = |what: &str| -> Result<&Map<String, Value>, PlanError> {
        value.as_object().ok_or_else(|| {
            PlanError::Arguments(format!("'body' must be an object to be sent as {what}"))
        })
    };
    if is_json(content_type) {
        let bytes = serde_json::to_vec(value).expect("a JSON value always serialises");
        return Ok(PlannedBody::Bytes {
            content_type: content_type.to_owned(),
            bytes,
        });
    }
    match content_type {
        "application/x-www-form-urlencoded" => {
            let mut pairs = Vec::new();
            for (name, value) in object("a form")? {
                match value {
                    Value::Null => {}
                    Value::Array(_) => {
                        pairs.extend(items(value).into_iter().map(|i| (name.clone(), i)));
                    }
                    other => pairs.push((name.clone(), scalar(other))),
                }
            }
            Ok(PlannedBody::Form(pairs))
        }
        "multipart/form-data" => {
            let mut parts = Vec::new();
            let part = |name: &String, value: &Value| Part {
                name: name.clone(),
                value: scalar(value),
                content_type: (value.is_object() || value.is_array()).then_some("application/json"),
            };
            for (name, value) in object("multipart/form-data")? {
                match value {
                    Value::Null => {}
                    Value::Array(values) => parts.extend(values.iter().map(|v| part(name, v))),
                    other => parts.push(part(name, other)),
                }
            }
            Ok(PlannedBody::Multipart(parts))
        }
        text if text.starts_with("text/") => match value {
            Value::String(text_value) => Ok(PlannedBody::Bytes {
                content_type: text.to_owned(),
                bytes: text_value.clone().into_bytes(),
            }),
            _ => Err(PlanError::Arguments(format!(
                "'body' must be text to be sent as {text}"
            ))),
        },
        other => Err(PlanError::NotExecutable(format!(
            "the operation's body is {other}, which toolgate cannot send (it sends JSON, \
             application/x-www-form-urlencoded, multipart/form-data and text): call the \
             service directly"
        ))),
    }
}

fn is_json(media: &str) -> bool {
    let media = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    media.ends_with("/json") || media.ends_with("+json")
}

#[cfg(test)]
mod tests;
