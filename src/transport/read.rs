//! What the agent endpoints read from a request: the query options of a manifest read (`GET
//! /agents/tools`, its stream, the URL of `/mcp`).

use crate::domain::entry::Fields;
use crate::domain::manifest::ManifestOptions;
use crate::service::ReadRequest;

use super::errors::ApiError;

/// The query options of the agent endpoints (`GET /agents/tools`, its stream, the URL of
/// `/mcp`), parsed strictly: an unknown parameter or a bad boolean is a 400 that names it, so
/// a typo (`groups=`) never silently widens a manifest. Who may use which option is
/// [`ReadRequest::authorize`]'s to say, not the parser's.
pub fn read_request(pairs: &[(String, String)]) -> Result<ReadRequest, ApiError> {
    let mut query = ReadRequest::default();
    let mut fields: Vec<String> = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            "group" => extend(&mut query.options.groups, value),
            "tools" => extend(&mut query.options.tools, value),
            "state" => query.options.state = Some(value.clone()),
            "include_disabled" => query.options.include_disabled = boolean(key, value)?,
            "fields" => fields.extend(ManifestOptions::list(value)),
            "explain" => query.explain = boolean(key, value)?,
            other => {
                return Err(ApiError::Malformed(format!(
                    "unknown query parameter '{other}'; expected group, state, tools, \
                     fields, include_disabled or explain"
                )));
            }
        }
    }
    if pairs.iter().any(|(key, _)| key == "fields") {
        query.options.fields =
            Fields::parse(fields.iter().map(String::as_str)).map_err(|unknown| {
                ApiError::Malformed(format!("query parameter 'fields': {unknown}"))
            })?;
    }
    Ok(query)
}

/// Repeated list parameters (`group=a&group=b`) add up.
fn extend(list: &mut Option<Vec<String>>, value: &str) {
    list.get_or_insert_with(Vec::new)
        .extend(ManifestOptions::list(value));
}

fn boolean(key: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(ApiError::Malformed(format!(
            "query parameter '{key}' must be true or false, found '{other}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn query_options_parse_and_add_up() {
        let query = read_request(&pairs(&[
            ("group", "a, b"),
            ("group", "c"),
            ("state", "research"),
            ("tools", ""),
            ("include_disabled", "true"),
        ]))
        .expect("valid");
        assert_eq!(
            query.options.groups,
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            query.options.tools,
            Some(vec![]),
            "an empty list keeps none"
        );
        assert_eq!(query.options.state.as_deref(), Some("research"));
        assert!(query.options.include_disabled);
    }

    #[test]
    fn unknown_parameters_and_bad_booleans_are_rejected() {
        for bad in [&[("groups", "a")][..], &[("include_disabled", "yes")][..]] {
            assert!(matches!(
                read_request(&pairs(bad)),
                Err(ApiError::Malformed(_))
            ));
        }
    }
}
