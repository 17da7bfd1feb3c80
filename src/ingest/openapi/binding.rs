//! The way back from a tool to its operation's request: which input property goes where.
//!
//! The importer names input properties ([`super::operation::inputs`]: path, query and header
//! parameters by name, a second parameter of one name as `{in}_{name}`, the request body as
//! `body`, credentials left out); the request builder (`crate::upstream`) must undo exactly
//! that naming, so both read the same function. Pure, like the importer: the document is
//! already fetched.

use serde_json::{Map, Value};

use super::operation::{self, Operation};
use super::schema::Resolver;
use super::{METHODS, upper};

/// Where a parameter is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParameterLocation {
    Path,
    Query,
    Header,
    Cookie,
}

impl ParameterLocation {
    fn parse(location: &str) -> Option<ParameterLocation> {
        match location {
            "path" => Some(ParameterLocation::Path),
            "query" => Some(ParameterLocation::Query),
            "header" => Some(ParameterLocation::Header),
            "cookie" => Some(ParameterLocation::Cookie),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            ParameterLocation::Path => "path",
            ParameterLocation::Query => "query",
            ParameterLocation::Header => "header",
            ParameterLocation::Cookie => "cookie",
        }
    }

    /// The `style` OpenAPI assumes when a parameter names none.
    pub fn default_style(self) -> &'static str {
        match self {
            ParameterLocation::Path | ParameterLocation::Header => "simple",
            ParameterLocation::Query | ParameterLocation::Cookie => "form",
        }
    }
}

/// One input property that is a parameter of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterBinding {
    /// The tool's input property.
    pub property: String,
    /// The parameter's name in the request.
    pub name: String,
    pub location: ParameterLocation,
    /// `simple`, `label`, `matrix`, `form`, `spaceDelimited`, `pipeDelimited`, `deepObject`
    /// (the location's default when the document names none).
    pub style: String,
    /// Whether arrays and objects are spread into several values (`true` for `form` unless
    /// the document says otherwise, `false` for the other styles).
    pub explode: bool,
    /// Set when the parameter is described by `content` rather than `schema`: its value is
    /// sent serialized in that media type (JSON is the one supported).
    pub content: Option<String>,
}

/// The request body, sent from the `body` property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyBinding {
    /// The media type the body is sent as (lowercase, without parameters).
    pub content_type: String,
    pub required: bool,
}

/// How a tool's input becomes the request of the operation it was imported from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestShape {
    /// Uppercase.
    pub method: String,
    /// The path template as the document writes it (`/pets/{petId}`).
    pub path: String,
    pub parameters: Vec<ParameterBinding>,
    pub body: Option<BodyBinding>,
    /// The first server URL of the most specific `servers` list (operation, path item,
    /// document), variables replaced by their defaults; may be relative. `None` when the
    /// document lists no server (OpenAPI then means `/`).
    pub server: Option<String>,
}

impl RequestShape {
    /// The shape as it appears in a definition: where every input goes, and the server.
    pub fn to_json(&self) -> Value {
        let parameters: Vec<Value> = self
            .parameters
            .iter()
            .map(|p| {
                serde_json::json!({
                    "property": p.property, "name": p.name, "in": p.location.as_str(),
                    "style": p.style, "explode": p.explode, "content": p.content,
                })
            })
            .collect();
        serde_json::json!({
            "method": self.method,
            "path": self.path,
            "server": self.server,
            "parameters": parameters,
            "body": self.body.as_ref().map(|body| serde_json::json!({
                "content_type": body.content_type, "required": body.required,
            })),
        })
    }
}

/// The request shape of the operation `method` `path` of `document`; the reason when the
/// document has no such operation or it cannot be read.
pub fn request_shape(document: &Value, method: &str, path: &str) -> Result<RequestShape, String> {
    let at = format!("{} {path}", upper(method));
    let root = document
        .as_object()
        .ok_or("the OpenAPI document is not an object")?;
    let resolver = Resolver { root: document };
    let lower = method.to_ascii_lowercase();
    let method = METHODS
        .into_iter()
        .find(|m| *m == lower)
        .ok_or_else(|| format!("'{method}' is not an HTTP method an OpenAPI operation has"))?;
    let item = root
        .get("paths")
        .and_then(|paths| paths.get(path))
        .ok_or_else(|| format!("the document has no path '{path}'"))?;
    let item = resolver.follow(item, &format!("paths.{path}"))?;
    let operation = match item.get(method) {
        Some(Value::Object(operation)) => operation,
        _ => return Err(format!("the document has no operation {at}")),
    };
    let op = Operation {
        path,
        method,
        operation,
        path_parameters: item.get("parameters").and_then(Value::as_array),
    };
    let credentials = operation::credentials(root);
    let parameters = operation::inputs(&resolver, &credentials, &op, &at)?
        .into_iter()
        .map(parameter_binding)
        .collect();
    let body =
        match operation.get("requestBody") {
            Some(body) => operation::body_of(resolver.follow(body, &format!("{at} requestBody"))?)
                .map(|body| BodyBinding {
                    content_type: body.content_type,
                    required: body.required,
                }),
            None => None,
        };
    let server = first_server([
        operation.get("servers"),
        item.get("servers"),
        root.get("servers"),
    ]);
    Ok(RequestShape {
        method: upper(method),
        path: path.to_owned(),
        parameters,
        body,
        server,
    })
}

/// How the importer's input property is sent: the parameter's `style` and `explode` as the
/// document gives them or as OpenAPI defaults them, and the media type when the parameter is
/// described by `content` rather than `schema`.
fn parameter_binding(input: operation::Input) -> ParameterBinding {
    let location = ParameterLocation::parse(input.location)
        .expect("the importer takes parameters from known locations only");
    let style = input
        .parameter
        .get("style")
        .and_then(Value::as_str)
        .unwrap_or(location.default_style())
        .to_owned();
    let explode = input
        .parameter
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == "form");
    let content = if input.parameter.contains_key("schema") {
        None
    } else {
        input
            .parameter
            .get("content")
            .and_then(Value::as_object)
            .and_then(|content| content.keys().next().cloned())
    };
    ParameterBinding {
        property: input.property,
        name: input.name.to_owned(),
        location,
        style,
        explode,
        content,
    }
}

/// The first server URL of the first non-empty `servers` list, most specific first
/// (operation, path item, document).
fn first_server(lists: [Option<&Value>; 3]) -> Option<String> {
    lists
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .find(|servers| !servers.is_empty())
        .and_then(|servers| servers.first())
        .and_then(Value::as_object)
        .and_then(server_url)
}

/// A server object's URL with `{variables}` replaced by their defaults.
fn server_url(server: &Map<String, Value>) -> Option<String> {
    let mut url = server.get("url")?.as_str()?.to_owned();
    if let Some(variables) = server.get("variables").and_then(Value::as_object) {
        for (name, variable) in variables {
            if let Some(default) = variable.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    Some(url)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ingest::openapi::tools_from_document;

    fn document() -> Value {
        json!({
            "openapi": "3.1.0",
            "servers": [{"url": "https://{region}.example.com/v{major}",
                         "variables": {"region": {"default": "eu"}, "major": {"default": "2"}}}],
            "components": {
                "securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}},
                "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}
            },
            "paths": {
                "/items/{id}": {
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "put": {
                        "operationId": "putItem",
                        "servers": [{"url": "/local"}],
                        "parameters": [
                            {"name": "id", "in": "query", "schema": {"type": "string"}},
                            {"name": "id", "in": "header", "schema": {"type": "string"}},
                            {"$ref": "#/components/parameters/Limit"},
                            {"name": "tags", "in": "query", "explode": false, "schema": {"type": "array"}},
                            {"name": "filter", "in": "query", "content": {"application/json": {"schema": {"type": "object"}}}},
                            {"name": "api_key", "in": "query", "schema": {"type": "string"}},
                            {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                            {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                            {"name": "body", "in": "query", "schema": {"type": "string"}}
                        ],
                        "requestBody": {"required": true, "content": {
                            "application/vnd.item+json; charset=utf-8": {"schema": {"type": "object"}}}}
                    }
                },
                "/forms": {"post": {"operationId": "form", "requestBody": {"content": {
                    "multipart/form-data": {"schema": {"type": "object"}},
                    "application/x-www-form-urlencoded": {"schema": {"type": "object"}}}}}}
            }
        })
    }

    #[test]
    fn properties_map_back_to_the_parameters_the_importer_named() {
        let shape = request_shape(&document(), "PUT", "/items/{id}").expect("a shape");
        let placed: Vec<(&str, &str, ParameterLocation)> = shape
            .parameters
            .iter()
            .map(|p| (p.property.as_str(), p.name.as_str(), p.location))
            .collect();
        use ParameterLocation::{Header, Path, Query};
        assert_eq!(
            placed,
            [
                ("id", "id", Path),
                ("query_id", "id", Query),
                ("limit", "limit", Query),
                ("tags", "tags", Query),
                ("filter", "filter", Query),
                ("query_body", "body", Query),
                ("header_id", "id", Header),
            ],
            "credentials (api_key, Authorization, cookies) are not input"
        );
        let imported = tools_from_document(&document()).expect("imports");
        let tool = imported
            .tools
            .iter()
            .find(|t| t.operation_id == "putItem")
            .expect("imported");
        let mut properties: Vec<&String> = tool.input_schema["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .collect();
        properties.sort();
        let mut expected: Vec<String> = shape
            .parameters
            .iter()
            .map(|p| p.property.clone())
            .collect();
        expected.push("body".to_owned());
        expected.sort();
        assert_eq!(
            properties.into_iter().cloned().collect::<Vec<_>>(),
            expected,
            "the importer's properties are exactly the bound ones"
        );
        let tags = &shape.parameters[3];
        assert_eq!((tags.style.as_str(), tags.explode), ("form", false));
        assert_eq!(shape.parameters[0].style, "simple");
        assert!(!shape.parameters[0].explode);
        assert_eq!(
            shape.parameters[4].content.as_deref(),
            Some("application/json")
        );
        assert_eq!(
            shape.body,
            Some(BodyBinding {
                content_type: "application/vnd.item+json".to_owned(),
                required: true
            })
        );
        assert_eq!(
            shape.server.as_deref(),
            Some("/local"),
            "the operation's servers win"
        );
    }

    #[test]
    fn forms_come_before_multipart_and_servers_take_their_defaults() {
        let shape = request_shape(&document(), "post", "/forms").expect("a shape");
        assert_eq!(
            shape.body.map(|b| b.content_type).as_deref(),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(shape.server.as_deref(), Some("https://eu.example.com/v2"));
    }

    #[test]
    fn a_missing_operation_is_named() {
        let error = request_shape(&document(), "GET", "/forms").expect_err("no GET");
        assert_eq!(error, "the document has no operation GET /forms");
        let error = request_shape(&document(), "GET", "/nope").expect_err("no path");
        assert_eq!(error, "the document has no path '/nope'");
        let error = request_shape(&document(), "MCP", "/forms").expect_err("not a method");
        assert!(error.contains("'MCP'"), "{error}");
    }
}
