//! Reading AuthZEN request bodies (Authorization API 1.0, sections 5–8) into what the decision
//! service asks, with every problem named by its field path (`resource.id`,
//! `evaluations[3].resource.type`) and answered 400, as the specification says of a missing
//! required attribute. Unknown keys are ignored, as it also says.
//!
//! toolgate's own reading of the entities:
//! - `subject` may be left out: the subject is then the caller (its verified claims). When
//!   given, it has a `type` and an `id` (strings); `properties.claims` (an object) are the
//!   claims to evaluate. Without claims, `id` must be the caller's `sub`: toolgate evaluates
//!   claims, and has none for anyone else.
//! - `resource` is `{"type": "tool", "id": "<tool id>"}`; `action` is `{"name": "call"}`;
//!   other values are valid requests, answered with a deny (the decision service).
//! - `context.state` (a string) and `context.group` (a string of comma-separated items, or a
//!   list) narrow like the query options of `GET /agents/tools`; other context keys are ignored.

use serde_json::{Map, Value};

use super::MAX_BATCH_ITEMS;
use super::fields::{Problems, at, body_object, field, kind_of, object, text};
use crate::app::DecisionDesk;
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::service::decisions::{Scope, Semantic};
use crate::service::read::{Refusal, Subject};
use crate::transport::errors::ApiError;

/// A subject as given.
#[derive(Debug)]
pub struct SubjectSpec {
    pub id: String,
    /// `properties.claims`, when given.
    pub claims: Option<Claims>,
}

/// A resource as given; `id` is `None` in a search.
#[derive(Debug)]
pub struct ResourceSpec {
    pub kind: String,
    pub id: Option<String>,
}

/// The parts of one evaluation, or the defaults of a batch, each possibly absent.
#[derive(Debug, Default)]
pub struct Parts {
    pub subject: Option<SubjectSpec>,
    pub action: Option<String>,
    pub resource: Option<ResourceSpec>,
    pub context: Option<Scope>,
}

/// A batch: its defaults, its evaluations (each a set of parts and its field path), its
/// semantic.
#[derive(Debug)]
pub struct Batch {
    pub defaults: Parts,
    pub items: Vec<(Parts, String)>,
    pub semantic: Semantic,
}

/// A resource search: whose, which action and resource type, in which scope, which page.
#[derive(Debug)]
pub struct SearchRequest {
    pub subject: Option<SubjectSpec>,
    pub action: String,
    pub resource_type: String,
    pub scope: Scope,
    /// `page.token`, when not empty.
    pub token: Option<String>,
    /// `page.limit`.
    pub limit: Option<u64>,
}

/// One evaluation with every required part, each from the item or from the batch defaults;
/// `subject_at` is the path of the subject it uses (for errors about it).
#[derive(Debug, Clone, Copy)]
pub struct Complete<'p> {
    pub subject: Option<&'p SubjectSpec>,
    pub subject_at: &'p str,
    pub action: &'p str,
    pub resource_type: &'p str,
    pub tool_id: &'p str,
    pub scope: &'p Scope,
}

/// The scope of an evaluation without context.
pub static NO_SCOPE: Scope = Scope {
    state: None,
    groups: None,
    pinned: None,
};

/// The parts of `map` (an evaluation, a batch's top level or a search) at `path`. A resource
/// needs an `id` unless `search` (where it is ignored).
fn parts(map: &Map<String, Value>, path: &str, search: bool, problems: &mut Problems) -> Parts {
    Parts {
        subject: field(map, "subject").and_then(|v| subject(v, &at(path, "subject"), problems)),
        action: field(map, "action").and_then(|v| action(v, &at(path, "action"), problems)),
        resource: field(map, "resource")
            .and_then(|v| resource(v, &at(path, "resource"), search, problems)),
        context: field(map, "context").and_then(|v| context(v, &at(path, "context"), problems)),
    }
}

fn subject(value: &Value, path: &str, problems: &mut Problems) -> Option<SubjectSpec> {
    let map = object(value, path, problems)?;
    let kind = text(
        map,
        "type",
        path,
        "the subject's type, e.g. \"agent\"",
        problems,
    );
    let id = text(map, "id", path, "the subject's id (its sub)", problems);
    let claims = match field(map, "properties") {
        None => None,
        Some(properties) => {
            let properties_at = at(path, "properties");
            object(properties, &properties_at, problems).and_then(|properties| {
                match field(properties, "claims") {
                    None => None,
                    Some(Value::Object(claims)) => Some(claims.clone()),
                    Some(other) => {
                        problems.add(
                            at(&properties_at, "claims"),
                            format!(
                                "must be an object (the claims of a token), found {}",
                                kind_of(other)
                            ),
                        );
                        None
                    }
                }
            })
        }
    };
    kind?;
    Some(SubjectSpec { id: id?, claims })
}

fn action(value: &Value, path: &str, problems: &mut Problems) -> Option<String> {
    let map = object(value, path, problems)?;
    text(
        map,
        "name",
        path,
        "the action's name, \"call\" for calling a tool",
        problems,
    )
}

fn resource(
    value: &Value,
    path: &str,
    search: bool,
    problems: &mut Problems,
) -> Option<ResourceSpec> {
    let map = object(value, path, problems)?;
    let kind = text(
        map,
        "type",
        path,
        "the resource's type, \"tool\" for a tool",
        problems,
    );
    let id = if search {
        None
    } else {
        Some(text(map, "id", path, "the tool's id", problems)?)
    };
    Some(ResourceSpec { kind: kind?, id })
}

fn context(value: &Value, path: &str, problems: &mut Problems) -> Option<Scope> {
    let map = object(value, path, problems)?;
    let state = match field(map, "state") {
        None => None,
        Some(Value::String(state)) => Some(state.clone()),
        Some(other) => {
            problems.add(
                at(path, "state"),
                format!("must be a string, found {}", kind_of(other)),
            );
            None
        }
    };
    let groups = match field(map, "group") {
        None => None,
        Some(Value::String(list)) => Some(ManifestOptions::list(list)),
        Some(Value::Array(items)) => {
            let mut groups = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(list) => groups.extend(ManifestOptions::list(list)),
                    other => problems.add(
                        format!("{}[{i}]", at(path, "group")),
                        format!(
                            "must be a string (a group id or name), found {}",
                            kind_of(other)
                        ),
                    ),
                }
            }
            Some(groups)
        }
        Some(other) => {
            problems.add(
                at(path, "group"),
                format!(
                    "must be a string or a list of strings (group ids or names), found {}",
                    kind_of(other)
                ),
            );
            None
        }
    };
    Some(Scope {
        state,
        groups,
        pinned: None,
    })
}

/// The body of `POST /access/v1/evaluation`, read; whether it has every required part is
/// checked by [`complete_single`].
pub fn single(body: &Value) -> Result<Parts, ApiError> {
    let map = body_object(body)?;
    let mut problems = Problems::default();
    let parts = parts(map, "", false, &mut problems);
    problems.into_result(parts)
}

/// The body of `POST /access/v1/evaluations`: top-level defaults, `evaluations` (each item's
/// parts override the defaults key by key; at most [`MAX_BATCH_ITEMS`], counted before any is
/// read), `options.evaluations_semantic`. Whether every item
/// ends up with each required part is checked by [`complete`].
pub fn batch(body: &Value) -> Result<Batch, ApiError> {
    let map = body_object(body)?;
    let mut problems = Problems::default();
    let defaults = parts(map, "", false, &mut problems);
    let mut items = Vec::new();
    match field(map, "evaluations") {
        None => {}
        Some(Value::Array(list)) if list.len() > MAX_BATCH_ITEMS => problems.add(
            "evaluations".to_owned(),
            format!(
                "at most {MAX_BATCH_ITEMS} evaluations per request, found {}; split the batch",
                list.len()
            ),
        ),
        Some(Value::Array(list)) => {
            for (i, item) in list.iter().enumerate() {
                let path = format!("evaluations[{i}]");
                if let Some(item) = object(item, &path, &mut problems) {
                    items.push((parts(item, &path, false, &mut problems), path));
                }
            }
        }
        Some(other) => problems.add(
            "evaluations".to_owned(),
            format!("must be an array of evaluations, found {}", kind_of(other)),
        ),
    }
    let semantic = match field(map, "options") {
        None => Semantic::default(),
        Some(options) => object(options, "options", &mut problems)
            .and_then(|options| match field(options, "evaluations_semantic") {
                None => Some(Semantic::default()),
                Some(Value::String(name)) => Semantic::parse(name).or_else(|| {
                    problems.add(
                        "options.evaluations_semantic".to_owned(),
                        format!(
                            "unknown semantic '{name}'; expected one of {}",
                            Semantic::NAMES.join(", ")
                        ),
                    );
                    None
                }),
                Some(other) => {
                    problems.add(
                        "options.evaluations_semantic".to_owned(),
                        format!("must be a string, found {}", kind_of(other)),
                    );
                    None
                }
            })
            .unwrap_or_default(),
    };
    problems.into_result(Batch {
        defaults,
        items,
        semantic,
    })
}

/// Each item of `batch` with its missing parts taken from the defaults; a part neither gives
/// is a problem at the item's path (`evaluations[3].resource`).
pub fn complete(batch: &Batch) -> Result<Vec<Complete<'_>>, ApiError> {
    let mut problems = Problems::default();
    let complete = batch
        .items
        .iter()
        .filter_map(|(item, path)| fill(item, &batch.defaults, path, &mut problems))
        .collect();
    problems.into_result(complete)
}

/// A single evaluation with every required part (`action` and `resource`).
pub fn complete_single(parts: &Parts) -> Result<Complete<'_>, ApiError> {
    let mut problems = Problems::default();
    let complete = fill(parts, &NO_PARTS, "", &mut problems);
    match complete {
        Some(complete) => Ok(complete),
        None => Err(ApiError::BadRequest(problems.0)),
    }
}

/// No defaults.
static NO_PARTS: Parts = Parts {
    subject: None,
    action: None,
    resource: None,
    context: None,
};

/// `item` at `path` with what it lacks taken from `defaults`; `None` (and a problem for each
/// required part neither gives) when incomplete.
fn fill<'p>(
    item: &'p Parts,
    defaults: &'p Parts,
    path: &'p str,
    problems: &mut Problems,
) -> Option<Complete<'p>> {
    let elsewhere = if path.is_empty() {
        ""
    } else {
        ", here or at the top level"
    };
    let action = item.action.as_ref().or(defaults.action.as_ref());
    let resource = item.resource.as_ref().or(defaults.resource.as_ref());
    if action.is_none() {
        problems.add(
            at(path, "action"),
            format!("is required{elsewhere}: {{\"name\": \"call\"}}"),
        );
    }
    if resource.is_none() {
        problems.add(
            at(path, "resource"),
            format!("is required{elsewhere}: {{\"type\": \"tool\", \"id\": \"<tool id>\"}}"),
        );
    }
    let (subject, subject_at) = match &item.subject {
        Some(subject) => (Some(subject), path),
        None => (defaults.subject.as_ref(), ""),
    };
    let resource = resource?;
    Some(Complete {
        subject,
        subject_at,
        action: action?,
        resource_type: &resource.kind,
        tool_id: resource.id.as_deref().unwrap_or_default(),
        scope: item
            .context
            .as_ref()
            .or(defaults.context.as_ref())
            .unwrap_or(&NO_SCOPE),
    })
}

/// The body of `POST /access/v1/search/resource`: `action` and `resource.type` required,
/// `resource.id` ignored, `page.token` and `page.limit` optional.
pub fn search(body: &Value) -> Result<SearchRequest, ApiError> {
    let map = body_object(body)?;
    let mut problems = Problems::default();
    let Parts {
        subject,
        action,
        resource,
        context,
    } = parts(map, "", true, &mut problems);
    for (key, what) in [
        ("action", "{\"name\": \"call\"}"),
        ("resource", "{\"type\": \"tool\"}"),
    ] {
        if field(map, key).is_none() {
            problems.add(key.to_owned(), format!("is required: {what}"));
        }
    }
    let (mut token, mut limit) = (None, None);
    if let Some(page) = field(map, "page").and_then(|page| object(page, "page", &mut problems)) {
        match field(page, "token") {
            None => {}
            Some(Value::String(text)) if text.is_empty() => {}
            Some(Value::String(text)) => token = Some(text.clone()),
            Some(other) => problems.add(
                "page.token".to_owned(),
                format!(
                    "must be a string (a next_token of an earlier answer), found {}",
                    kind_of(other)
                ),
            ),
        }
        match field(page, "limit") {
            None => {}
            // A page of none would carry the same `next_token` forever: refused, not clamped.
            Some(value) => match value.as_u64() {
                Some(0) => problems.add(
                    "page.limit".to_owned(),
                    "must be at least 1 (results per page), found 0".to_owned(),
                ),
                Some(n) => limit = Some(n),
                None => problems.add(
                    "page.limit".to_owned(),
                    format!("must be a positive integer (results per page), found {value}"),
                ),
            },
        }
    }
    match (action, resource) {
        (Some(action), Some(resource)) if problems.0.is_empty() => Ok(SearchRequest {
            subject,
            action,
            resource_type: resource.kind,
            scope: context.unwrap_or_default(),
            token,
            limit,
        }),
        _ => Err(ApiError::BadRequest(problems.0)),
    }
}

/// The claims a subject stands for ([`DecisionDesk::claims_for`] says whose a caller may have
/// evaluated), with the refusal at the subject's field path `path`: 403 for someone else's
/// claims without the admin rule, 400 for a subject named without claims.
pub fn claims_for<'a>(
    desk: &DecisionDesk<'a>,
    subject: Option<&'a SubjectSpec>,
    path: &str,
) -> Result<&'a Claims, ApiError> {
    let subject = subject.map(|subject| Subject {
        id: &subject.id,
        claims: subject.claims.as_ref(),
    });
    desk.claims_for(subject).map_err(|refusal| {
        let field = at(&at(&at(path, "subject"), "properties"), "claims");
        match refusal {
            Refusal::ClaimsRequired { .. } => ApiError::BadRequest(vec![FieldError {
                field,
                message: refusal.to_string(),
                kind: ErrorKind::Invalid,
            }]),
            other => ApiError::Forbidden(format!("{field}: {other}")),
        }
    })
}

#[cfg(test)]
mod tests;
