//! One OpenAPI operation → one tool's definition.
//!
//! - `input_schema`: an object with one property per path, query and header parameter and
//!   `body` for the request body; path parameters and required ones are `required`.
//!   Credentials are not agent input: cookie parameters, parameters that the document's
//!   `securitySchemes` define (an `apiKey` in a header, query or cookie),
//!   `Authorization`-like headers, and a `token` or `access_token` query parameter of an
//!   operation that requires security (OAuth's RFC 6750 section 2.3 form, which Slack's Web
//!   API uses for its OAuth scheme) are left out (the source's configured headers carry them).
//!   Two parameters of one name in different places (a path `id` and a query `id`) are both
//!   kept: the first in path, query, header order keeps the name, the others become
//!   `{in}_{name}`.
//! - The body is taken from JSON content first, then `application/x-www-form-urlencoded`,
//!   `multipart/form-data`, then any other media type with a schema (`*/*`, `text/plain`); a
//!   non-JSON body says how to encode it with `contentMediaType` on the `body` property.
//! - `output_schema`: the schema of the first 2xx response with JSON content. One that cannot
//!   be expanded is left out and reported as a cut; an input that cannot be expanded skips the
//!   operation (a tool whose input is unknown cannot be called correctly).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::schema::{Expansion, Resolver, SchemaError};
use super::{Importer, upper};

/// The parameter locations, in the order in which they claim property names.
const LOCATIONS: [&str; 3] = ["path", "query", "header"];

/// Header names (lowercase) that carry credentials whatever the document says.
const CREDENTIAL_HEADERS: [&str; 9] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "token",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "x-access-token",
];

/// Query parameter names that carry a bearer token (RFC 6750 section 2.3, and Slack's) when the
/// operation requires security.
const CREDENTIAL_QUERY: [&str; 2] = ["access_token", "token"];

/// What makes a parameter a credential in one document.
pub(super) struct Credentials {
    /// The `(in, name)` of every `apiKey` security scheme (header names lowercase: HTTP header
    /// names are case-insensitive).
    api_keys: HashSet<(String, String)>,
    /// The document's top-level `security` requires something: operations without their own
    /// `security` inherit it.
    secured_by_default: bool,
}

/// The credentials of the document whose root is `root`.
pub(super) fn credentials(root: &Map<String, Value>) -> Credentials {
    let schemes = root
        .get("components")
        .and_then(|c| c.get("securitySchemes"))
        .and_then(Value::as_object);
    let mut api_keys = HashSet::new();
    for scheme in schemes.into_iter().flat_map(Map::values) {
        if scheme.get("type").and_then(Value::as_str) != Some("apiKey") {
            continue;
        }
        if let (Some(location), Some(name)) = (
            scheme.get("in").and_then(Value::as_str),
            scheme.get("name").and_then(Value::as_str),
        ) {
            api_keys.insert((location.to_owned(), normalized(location, name)));
        }
    }
    Credentials {
        api_keys,
        secured_by_default: requires_security(root.get("security")),
    }
}

impl Credentials {
    fn cover(&self, op: &Operation<'_>, location: &str, name: &str) -> bool {
        let secured = match op.operation.get("security") {
            Some(own) => requires_security(Some(own)),
            None => self.secured_by_default,
        };
        (location == "header" && CREDENTIAL_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
            || (location == "query"
                && secured
                && CREDENTIAL_QUERY.contains(&name.to_ascii_lowercase().as_str()))
            || self
                .api_keys
                .contains(&(location.to_owned(), normalized(location, name)))
    }
}

/// A `security` list that requires something: at least one requirement, and none of them the
/// empty one (`{}` makes security optional).
fn requires_security(security: Option<&Value>) -> bool {
    security.and_then(Value::as_array).is_some_and(|list| {
        !list.is_empty()
            && list
                .iter()
                .all(|requirement| requirement.as_object().is_some_and(|r| !r.is_empty()))
    })
}

fn normalized(location: &str, name: &str) -> String {
    if location == "header" {
        name.to_ascii_lowercase()
    } else {
        name.to_owned()
    }
}

/// An operation's parts that the tool is made of.
pub(super) struct Operation<'d> {
    pub path: &'d str,
    pub method: &'static str,
    pub operation: &'d Map<String, Value>,
    pub path_parameters: Option<&'d Vec<Value>>,
}

/// A parameter that becomes an input property.
pub(super) struct Input<'d> {
    pub property: String,
    /// Where the parameter goes (`path`, `query`, `header`) and its name there.
    pub location: &'static str,
    pub name: &'d str,
    pub parameter: &'d Map<String, Value>,
    schema: Value,
    description: Option<&'d Value>,
    required: bool,
}

/// The request body that becomes the `body` property.
pub(super) struct Body<'d> {
    schema: &'d Value,
    /// Set for a body that is not JSON: the media type the schema names (`contentMediaType`).
    media: Option<String>,
    /// The media type the body is sent as (the content key chosen, without parameters).
    pub content_type: String,
    description: Option<&'d Value>,
    pub required: bool,
}

/// What the operation became: the two schemas (`output` may have been cut, with a reason).
pub(super) struct Schemas {
    pub input: (Value, usize),
    pub output: Option<(Value, usize)>,
    pub cut: Option<String>,
}

impl<'d> Importer<'d> {
    /// The schemas of one operation; the reason when it cannot be imported.
    pub(super) fn operation_schemas(&self, op: &Operation<'d>) -> Result<Schemas, String> {
        let at = format!("{} {}", upper(op.method), op.path);
        let resolver = &self.resolver;
        let inputs = inputs(resolver, &self.credentials, op, &at)?;
        let body = match op.operation.get("requestBody") {
            Some(body) => body_of(resolver.follow(body, &format!("{at} requestBody"))?),
            None => None,
        };
        let input = super::schema::expand_with(resolver, &self.budget, |expansion| {
            input_schema(expansion, &inputs, body.as_ref())
        })
        .map_err(|error| error.reason("input"))?;
        let (output, cut) = match success_schema(resolver, op.operation, &at)? {
            None => (None, None),
            Some(schema) => {
                match super::schema::expand_with(resolver, &self.budget, |e| e.schema(schema)) {
                    Ok(output) => (Some(output), None),
                    Err(error @ SchemaError::ImportBudget(_)) => return Err(error.reason("")),
                    Err(error) => (
                        None,
                        Some(format!(
                            "output schema left out: {}",
                            error.reason("output")
                        )),
                    ),
                }
            }
        };
        Ok(Schemas { input, output, cut })
    }
}

/// The parameters that are agent input, with their property names: the one naming rule that
/// the importer and the request builder (`super::binding`) both follow.
pub(super) fn inputs<'d>(
    resolver: &Resolver<'d>,
    credentials: &Credentials,
    op: &Operation<'d>,
    at: &str,
) -> Result<Vec<Input<'d>>, String> {
    // Operation parameters override path-level ones with the same name and location.
    let mut parameters: Vec<&'d Map<String, Value>> = Vec::new();
    let lists = [
        op.path_parameters,
        op.operation.get("parameters").and_then(Value::as_array),
    ];
    for parameter in lists.into_iter().flatten().flatten() {
        let parameter = resolver.follow(parameter, &format!("{at} parameters"))?;
        let key = |p: &Map<String, Value>| (p.get("name").cloned(), p.get("in").cloned());
        parameters.retain(|p| key(p) != key(parameter));
        parameters.push(parameter);
    }
    let has_body = op.operation.contains_key("requestBody");
    let mut taken: HashSet<String> = has_body.then(|| "body".to_owned()).into_iter().collect();
    let mut inputs = Vec::new();
    for location in LOCATIONS {
        for parameter in &parameters {
            if parameter.get("in").and_then(Value::as_str) != Some(location) {
                continue;
            }
            let Some(name) = parameter.get("name").and_then(Value::as_str) else {
                return Err(format!("a {location} parameter has no name"));
            };
            if credentials.cover(op, location, name) {
                continue;
            }
            let mut property = name.to_owned();
            if taken.contains(&property) {
                property = format!("{location}_{name}");
            }
            let mut n = 2;
            while taken.contains(&property) {
                property = format!("{location}_{name}_{n}");
                n += 1;
            }
            taken.insert(property.clone());
            let schema = match parameter.get("schema") {
                Some(schema) => schema.clone(),
                None => parameter
                    .get("content")
                    .and_then(Value::as_object)
                    .and_then(|content| content.values().next())
                    .and_then(|media| media.get("schema"))
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            };
            inputs.push(Input {
                property,
                location,
                name,
                parameter,
                schema,
                description: parameter.get("description"),
                required: location == "path"
                    || parameter.get("required") == Some(&Value::Bool(true)),
            });
        }
    }
    Ok(inputs)
}

fn input_schema(
    expansion: &mut Expansion<'_, '_>,
    inputs: &[Input<'_>],
    body: Option<&Body<'_>>,
) -> Result<Value, SchemaError> {
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    for input in inputs {
        let mut schema = expansion.schema(&input.schema)?;
        describe(&mut schema, input.description);
        properties.insert(input.property.clone(), schema);
        if input.required {
            required.push(input.property.clone());
        }
    }
    if let Some(body) = body {
        let mut schema = expansion.schema(body.schema)?;
        describe(&mut schema, body.description);
        if let (Value::Object(schema), Some(media)) = (&mut schema, &body.media) {
            schema.insert("contentMediaType".to_owned(), json!(media));
        }
        properties.insert("body".to_owned(), schema);
        if body.required {
            required.push("body".to_owned());
        }
    }
    let mut input = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        input["required"] = json!(required);
    }
    Ok(input)
}

/// Gives `schema` the parameter's or body's description unless it has its own.
fn describe(schema: &mut Value, description: Option<&Value>) {
    if let (Value::Object(schema), Some(description)) = (schema, description) {
        schema
            .entry("description")
            .or_insert_with(|| description.clone());
    }
}

/// The media type part of a content key, lowercase, without parameters.
fn essence(media: &str) -> String {
    media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn is_json(media: &str) -> bool {
    let media = essence(media);
    media.ends_with("/json") || media.ends_with("+json")
}

/// The request body's schema: JSON first, then forms, then any media type with a schema.
pub(super) fn body_of(body: &Map<String, Value>) -> Option<Body<'_>> {
    let content = body.get("content")?.as_object()?;
    let with_schema = |media: &str| content.get(media).and_then(|m| m.get("schema"));
    let (content_type, schema) = if let Some(schema) = with_schema("application/json") {
        ("application/json".to_owned(), schema)
    } else if let Some((media, schema)) = content
        .iter()
        .find_map(|(media, m)| Some((media, m.get("schema")?)).filter(|(k, _)| is_json(k)))
    {
        (essence(media), schema)
    } else {
        let preferred = ["application/x-www-form-urlencoded", "multipart/form-data"];
        let (media, schema) = preferred
            .iter()
            .find_map(|wanted| {
                content
                    .iter()
                    .find(|(media, _)| essence(media) == *wanted)
                    .and_then(|(media, m)| Some((media, m.get("schema")?)))
            })
            .or_else(|| {
                content
                    .iter()
                    .find_map(|(media, m)| Some((media, m.get("schema")?)))
            })?;
        return Some(Body {
            schema,
            media: Some(essence(media)),
            content_type: essence(media),
            description: body.get("description"),
            required: body.get("required") == Some(&Value::Bool(true)),
        });
    };
    Some(Body {
        schema,
        media: None,
        content_type,
        description: body.get("description"),
        required: body.get("required") == Some(&Value::Bool(true)),
    })
}

/// The JSON schema of the first 2xx response (in status order) that has JSON content.
fn success_schema<'d>(
    resolver: &Resolver<'d>,
    operation: &'d Map<String, Value>,
    at: &str,
) -> Result<Option<&'d Value>, String> {
    let Some(Value::Object(responses)) = operation.get("responses") else {
        return Ok(None);
    };
    let mut statuses: Vec<&String> = responses
        .keys()
        .filter(|status| status.starts_with('2'))
        .collect();
    statuses.sort();
    for status in statuses {
        let response = resolver.follow(&responses[status], &format!("{at} responses.{status}"))?;
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            continue;
        };
        let schema = content
            .get("application/json")
            .and_then(|m| m.get("schema"))
            .or_else(|| {
                content
                    .iter()
                    .filter(|(media, _)| is_json(media))
                    .find_map(|(_, m)| m.get("schema"))
            });
        if schema.is_some() {
            return Ok(schema);
        }
    }
    Ok(None)
}
