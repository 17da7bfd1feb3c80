//! What each source type keeps in [`Source::config`](super::model::Source::config), read into
//! typed settings. Validation ([`super::validate`]) and the importers (`crate::ingest`) read
//! the config through the same functions, so a source that validates is one the importer
//! understands.
//!
//! | type | keys |
//! |---|---|
//! | `openapi` | `spec` (object, or JSON/YAML text) **or** `url` (http/https); `headers` (object of text, sent with the fetch and with every call); `base_url` (http/https, where calls go, instead of the document's `servers`); `refresh_interval_secs`; `pinning` (`hold`, `hide`, `warn`) |
//! | `mcp` | `url` (http/https, the Streamable HTTP endpoint); `headers` (object of text, e.g. `Authorization`); `refresh_interval_secs`; `pinning` |
//! | `openapi`, `mcp` | `auth`: how calls authenticate upstream ([`auth`]: `static`, `client_credentials`, `token_exchange`) |
//! | `tool-service` | `request-queue`, `response-queue` (text, required); `config-params` (`[{"name", "required"}]`); `id` (text, informative) |
//! | `manual` | free-form, never interpreted |
//!
//! An **empty** config is valid for every type: the source is then only a catalogue entry whose
//! tools are written by hand, and refreshing it is refused (422). Unknown keys are errors.

use serde_json::{Map, Value};

use super::model::{Source, SourceType, Tool};

mod auth;

pub use auth::{TokenClient, UpstreamAuth, upstream_auth};

/// The shortest periodic refresh interval accepted, seconds.
pub const MIN_REFRESH_INTERVAL_SECS: u64 = 10;

/// One problem in a source's config: the key path below `config` and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Relative to `config`: `url`, `config-params[1].name`, …
    pub field: String,
    pub message: String,
}

fn error(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        message: message.into(),
    }
}

/// Where an `openapi` source's document comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecLocation {
    /// `config.spec`: the document itself (a JSON object, or JSON/YAML text).
    Inline(Value),
    /// `config.url`: fetched on every refresh.
    Url(String),
}

/// The settings of an importable source (`openapi` or `mcp`).
#[derive(Debug, Clone, PartialEq)]
pub enum ImportConfig {
    OpenApi {
        spec: SpecLocation,
        headers: Vec<(String, String)>,
    },
    Mcp {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One config parameter a tool service declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigParam {
    pub name: String,
    pub required: bool,
}

/// A `tool-service` source's descriptor (seed 001, tier 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceDescriptor {
    pub request_queue: String,
    pub response_queue: String,
    pub config_params: Vec<ConfigParam>,
}

/// What calling a source's tools needs from its config, read once per snapshot
/// ([`crate::domain::snapshot::Snapshot::call_settings`]) rather than on every call: the
/// import settings (a clone of an inline document included) and the digest that tells kept
/// state (a parsed document, a pooled MCP session) made from an older config.
#[derive(Debug)]
pub struct CallSettings {
    /// The import settings, or what is wrong with them (the source's tools cannot be called).
    pub import: Result<ImportConfig, Vec<ConfigError>>,
    /// `config.base_url` of an `openapi` source.
    pub base_url: Option<String>,
    /// `config.auth`: how calls authenticate upstream (static when the config is unusable:
    /// such a source's calls fail on `import` before any credential is asked for).
    pub auth: UpstreamAuth,
    /// A digest of `config.auth` as written: what tokens issued for this source are kept
    /// under, so that an edited `auth` never reuses them (made once per snapshot, not per call).
    pub auth_digest: [u8; 32],
    /// What state derived from the config was made from: an `openapi` source's config and
    /// last change (its document); an `mcp` source's URL and headers (its sessions).
    pub version: [u8; 32],
}

impl CallSettings {
    /// The settings `source`'s config gives its calls.
    pub fn of(source: &Source) -> CallSettings {
        let import = import_config(source);
        let auth = match &import {
            Ok(_) => upstream_auth(&source.config).unwrap_or_default(),
            Err(_) => UpstreamAuth::Static,
        };
        let digest = |value: &Value| -> [u8; 32] {
            let bytes = serde_json::to_vec(value).unwrap_or_default();
            *blake3::hash(&bytes).as_bytes()
        };
        let version = match &import {
            Ok(ImportConfig::Mcp { url, headers }) => digest(&serde_json::json!([
                url,
                headers,
                source.config.get("auth")
            ])),
            _ => digest(&serde_json::json!([source.config, source.updated_at])),
        };
        CallSettings {
            import,
            base_url: base_url(source).map(str::to_owned),
            auth,
            auth_digest: digest(source.config.get("auth").unwrap_or(&Value::Null)),
            version,
        }
    }
}

/// Every problem with `source.config` for its type; empty when it is fine.
pub fn check(source: &Source) -> Vec<ConfigError> {
    let config = &source.config;
    if config.is_empty() {
        return Vec::new();
    }
    match source.kind() {
        Some(SourceType::OpenApi | SourceType::Mcp) => {
            import_config(source).err().unwrap_or_default()
        }
        Some(SourceType::ToolService) => service_descriptor(config).err().unwrap_or_default(),
        Some(SourceType::Manual) | None => Vec::new(),
    }
}

/// What a refresh does with a definition an admin has not approved (docs/api.md, "Approved tool
/// definitions"): config key `pinning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pinning {
    /// Agents keep the approved definition until an admin approves the upstream's.
    #[default]
    Hold,
    /// As `hold`, and a tool whose upstream changed leaves every manifest until approved.
    Hide,
    /// The upstream's definition is served at once; the revision is recorded as approved.
    Warn,
}

impl Pinning {
    pub const fn as_str(self) -> &'static str {
        match self {
            Pinning::Hold => "hold",
            Pinning::Hide => "hide",
            Pinning::Warn => "warn",
        }
    }

    /// The pinning of `source`; `hold` when it sets none (or one that validation refuses, which
    /// a stored source cannot have: the safest reading).
    pub fn of(source: &Source) -> Pinning {
        Pinning::from_config(&source.config).unwrap_or_default()
    }

    fn from_config(config: &Map<String, Value>) -> Result<Pinning, String> {
        match config.get("pinning") {
            None => Ok(Pinning::Hold),
            Some(Value::String(mode)) if mode == "hold" => Ok(Pinning::Hold),
            Some(Value::String(mode)) if mode == "hide" => Ok(Pinning::Hide),
            Some(Value::String(mode)) if mode == "warn" => Ok(Pinning::Warn),
            Some(other) => Err(format!(
                "must be \"hold\", \"hide\" or \"warn\", found {other}"
            )),
        }
    }
}

/// Whether `tool` is kept out of every manifest while a revision of it is pending: its
/// upstream drifted from the approved definition and `source` pins with `hide`.
pub fn withheld(tool: &Tool, source: &Source) -> bool {
    tool.imported
        .as_ref()
        .and_then(|imported| imported.drift.as_ref())
        .is_some_and(|drift| !drift.rejected)
        && Pinning::of(source) == Pinning::Hide
}

/// The periodic refresh interval of an importable source, if it asks for one.
pub fn refresh_interval_secs(source: &Source) -> Option<u64> {
    match source.kind() {
        Some(SourceType::OpenApi | SourceType::Mcp) => source
            .config
            .get("refresh_interval_secs")
            .and_then(Value::as_u64),
        _ => None,
    }
}

/// The import settings of an `openapi` or `mcp` source; an error for a source that is not
/// imported (another type, or an empty config) or whose config is invalid.
pub fn import_config(source: &Source) -> Result<ImportConfig, Vec<ConfigError>> {
    let config = &source.config;
    let openapi = source.kind() == Some(SourceType::OpenApi);
    let allowed = import_keys(source).map_err(|error| vec![error])?;
    if config.is_empty() {
        return Err(vec![error(
            "",
            format!(
                "this {} source has no config; set {}",
                source.source_type,
                if openapi { "'spec' or 'url'" } else { "'url'" }
            ),
        )]);
    }
    let mut errors = Vec::new();
    unknown_keys(config, allowed, &mut errors);
    let headers = headers(config, &mut errors);
    if let Err(auth_errors) = upstream_auth(config) {
        errors.extend(auth_errors);
    }
    check_refresh_interval(config, &mut errors);
    if let Err(message) = Pinning::from_config(config) {
        errors.push(error("pinning", message));
    }
    http_url(config, "base_url", &mut errors);
    let url = http_url(config, "url", &mut errors);
    let result = if openapi {
        let spec = spec_location(config, url, &mut errors);
        spec.map(|spec| ImportConfig::OpenApi { spec, headers })
    } else {
        match url {
            Some(url) => Some(ImportConfig::Mcp { url, headers }),
            None => {
                if !config.contains_key("url") {
                    errors.push(error("url", "an mcp source needs the server's 'url'"));
                }
                None
            }
        }
    };
    match result {
        Some(result) if errors.is_empty() => Ok(result),
        _ => Err(errors),
    }
}

/// The config keys a source of this type may have; the error for a type that is not imported.
fn import_keys(source: &Source) -> Result<&'static [&'static str], ConfigError> {
    match source.kind() {
        Some(SourceType::OpenApi) => Ok(&[
            "spec",
            "url",
            "headers",
            "base_url",
            "refresh_interval_secs",
            "pinning",
            "auth",
        ]),
        Some(SourceType::Mcp) => {
            Ok(&["url", "headers", "refresh_interval_secs", "pinning", "auth"])
        }
        _ => Err(error(
            "",
            format!(
                "a '{}' source has nothing to import: its tools are written by hand \
                 (openapi and mcp sources are imported)",
                source.source_type
            ),
        )),
    }
}

/// `refresh_interval_secs`, when given, is whole seconds and at least
/// [`MIN_REFRESH_INTERVAL_SECS`]: [`refresh_interval_secs`] reads it without checking again.
fn check_refresh_interval(config: &Map<String, Value>, errors: &mut Vec<ConfigError>) {
    if let Some(value) = config.get("refresh_interval_secs") {
        match value.as_u64() {
            Some(secs) if secs >= MIN_REFRESH_INTERVAL_SECS => {}
            _ => errors.push(error(
                "refresh_interval_secs",
                format!(
                    "must be a whole number of seconds, at least {MIN_REFRESH_INTERVAL_SECS}, found {value}"
                ),
            )),
        }
    }
}

/// The http(s) URL at `key`, if there is one; anything else there is an error. `url` (fetched)
/// and `base_url` (called) are held to the same rule.
fn http_url(
    config: &Map<String, Value>,
    key: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    match config.get(key) {
        None => None,
        Some(Value::String(url)) if is_http_url(url) => Some(url.clone()),
        Some(other) => {
            errors.push(error(
                key,
                format!("must be an http:// or https:// URL, found {other}"),
            ));
            None
        }
    }
}

/// Where an `openapi` source's document comes from: `spec` or the valid `url`, exactly one.
/// An invalid `url` has its own error already, so its absence is not reported again.
fn spec_location(
    config: &Map<String, Value>,
    url: Option<String>,
    errors: &mut Vec<ConfigError>,
) -> Option<SpecLocation> {
    match (config.get("spec"), url) {
        (Some(_), Some(_)) => {
            errors.push(error("spec", "give either 'spec' or 'url', not both"));
            None
        }
        (Some(spec @ (Value::Object(_) | Value::String(_))), None) => {
            Some(SpecLocation::Inline(spec.clone()))
        }
        (Some(other), None) => {
            errors.push(error(
                "spec",
                format!(
                    "must be the OpenAPI document (an object, or JSON/YAML text), found {}",
                    kind_of(other)
                ),
            ));
            None
        }
        (None, Some(url)) => Some(SpecLocation::Url(url)),
        (None, None) if config.contains_key("url") => None,
        (None, None) => {
            errors.push(error("spec", "an openapi source needs 'spec' or 'url'"));
            None
        }
    }
}

/// Where the calls of an `openapi` source go, when its config says (`base_url`); otherwise the
/// document's `servers` decide. Read as [`import_config`] checked it.
pub fn base_url(source: &Source) -> Option<&str> {
    match source.kind() {
        Some(SourceType::OpenApi) => source.config.get("base_url").and_then(Value::as_str),
        _ => None,
    }
}

/// The descriptor of a `tool-service` source. An empty config is a service without config
/// parameters whose queues are not recorded.
pub fn service_descriptor(
    config: &Map<String, Value>,
) -> Result<ServiceDescriptor, Vec<ConfigError>> {
    let mut errors = Vec::new();
    if config.is_empty() {
        return Ok(ServiceDescriptor {
            request_queue: String::new(),
            response_queue: String::new(),
            config_params: Vec::new(),
        });
    }
    unknown_keys(
        config,
        &["id", "request-queue", "response-queue", "config-params"],
        &mut errors,
    );
    if let Some(id) = config.get("id")
        && !id.is_string()
    {
        errors.push(error("id", format!("must be text, found {}", kind_of(id))));
    }
    let request_queue = queue(config, "request-queue", &mut errors);
    let response_queue = queue(config, "response-queue", &mut errors);
    let config_params = config_params(config, &mut errors);
    if errors.is_empty() {
        Ok(ServiceDescriptor {
            request_queue,
            response_queue,
            config_params,
        })
    } else {
        Err(errors)
    }
}

/// The queue named at `key`, which a tool service needs; empty (with an error) when missing.
fn queue(config: &Map<String, Value>, key: &str, errors: &mut Vec<ConfigError>) -> String {
    match config.get(key) {
        Some(Value::String(queue)) if !queue.trim().is_empty() => queue.clone(),
        Some(other) => {
            errors.push(error(
                key,
                format!("must be a non-empty queue name, found {}", kind_of(other)),
            ));
            String::new()
        }
        None => {
            errors.push(error(
                key,
                "is required: the queue the service listens on".to_owned(),
            ));
            String::new()
        }
    }
}

/// The config parameters a tool service declares, in order; those without a usable name are
/// left out (with their errors).
fn config_params(config: &Map<String, Value>, errors: &mut Vec<ConfigError>) -> Vec<ConfigParam> {
    let mut config_params: Vec<ConfigParam> = Vec::new();
    match config.get("config-params") {
        None => {}
        Some(Value::Array(params)) => {
            for (i, param) in params.iter().enumerate() {
                let at = format!("config-params[{i}]");
                if let Some(param) = config_param(&at, param, &config_params, errors) {
                    config_params.push(param);
                }
            }
        }
        Some(other) => errors.push(error(
            "config-params",
            format!("must be an array, found {}", kind_of(other)),
        )),
    }
    config_params
}

/// One declared config parameter, at `at`, after those `declared` before it. Its name must not
/// be one of the tool's own fields, which the parameters sit beside.
fn config_param(
    at: &str,
    param: &Value,
    declared: &[ConfigParam],
    errors: &mut Vec<ConfigError>,
) -> Option<ConfigParam> {
    let Value::Object(param) = param else {
        errors.push(error(
            at,
            format!(
                "must be an object {{\"name\", \"required\"}}, found {}",
                kind_of(param)
            ),
        ));
        return None;
    };
    for key in param.keys() {
        if key != "name" && key != "required" {
            errors.push(error(
                format!("{at}.{key}"),
                "unknown key; expected name, required",
            ));
        }
    }
    let name = match param.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
        _ => {
            errors.push(error(format!("{at}.name"), "must be non-empty text"));
            return None;
        }
    };
    if ["type", "name", "description", "service", "arguments"].contains(&name.as_str()) {
        errors.push(error(
            format!("{at}.name"),
            format!("'{name}' is a field of the tool itself and cannot be a config parameter"),
        ));
    }
    let required = match param.get("required") {
        None => false,
        Some(Value::Bool(required)) => *required,
        Some(other) => {
            errors.push(error(
                format!("{at}.required"),
                format!("must be true or false, found {other}"),
            ));
            false
        }
    };
    if declared.iter().any(|p| p.name == name) {
        errors.push(error(
            format!("{at}.name"),
            format!("config parameter '{name}' is declared twice"),
        ));
    }
    Some(ConfigParam { name, required })
}

fn unknown_keys(config: &Map<String, Value>, allowed: &[&str], errors: &mut Vec<ConfigError>) {
    for key in config.keys() {
        if !allowed.contains(&key.as_str()) {
            errors.push(error(
                key.clone(),
                format!("unknown config key; expected {}", allowed.join(", ")),
            ));
        }
    }
}

fn headers(config: &Map<String, Value>, errors: &mut Vec<ConfigError>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    match config.get("headers") {
        None => {}
        Some(Value::Object(headers)) => {
            for (name, value) in headers {
                let valid_name = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                match value {
                    Value::String(text) if valid_name && !text.chars().any(char::is_control) => {
                        out.push((name.clone(), text.clone()));
                    }
                    _ => errors.push(error(
                        format!("headers.{name}"),
                        "must be a header name with a text value without control characters",
                    )),
                }
            }
        }
        Some(other) => errors.push(error(
            "headers",
            format!(
                "must be an object of header names to text, found {}",
                kind_of(other)
            ),
        )),
    }
    out
}

fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !url.chars().any(|c| c.is_control() || c == ' '))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
