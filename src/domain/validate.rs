//! Whole-catalog validation: every problem, each with the field path where it is
//! (`policies[2].claim_matchers[0].operator`) and a message that says what was expected.
//!
//! Validation looks at the catalog as a whole because most rules are about references between
//! entities. A catalog that passes compiles into a snapshot without error.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use super::claims::{ClaimPath, CompiledMatcher};
pub use super::field_error::{ErrorKind, FieldError};
use super::mcp;
use super::model::{
    ARGUMENT_TYPES, AccessPolicy, Catalog, SOURCE_TYPES, Selector, SourceType, Tool, ToolGroup,
};
use super::pattern::{Pattern, PatternError};
use super::secrets;
use super::source_config::{self, ServiceDescriptor};

/// Names (and ids) longer than this are rejected.
pub const MAX_NAME_CHARS: usize = 255;
/// Descriptions longer than this are rejected.
pub const MAX_DESCRIPTION_CHARS: usize = 4096;

/// What is wrong with a name or an id, if anything: empty (blank), too long, or with control
/// characters.
fn name_problem(value: &str) -> Option<String> {
    if value.trim().is_empty() {
        return Some("must not be empty".to_owned());
    }
    let count = value.chars().count();
    if count > MAX_NAME_CHARS {
        return Some(format!(
            "must be at most {MAX_NAME_CHARS} characters, found {count}"
        ));
    }
    value
        .chars()
        .find(|c| c.is_control())
        .map(|c| format!("must not contain control characters, found {c:?}"))
}

/// Returns every problem in the catalog, in document order; empty means valid.
///
/// Expects a normalised catalog ([`Catalog::normalize`]), so tool ids are filled in.
pub fn validate(catalog: &Catalog) -> Vec<FieldError> {
    let mut v = Validator::default();
    let source_ids = v.unique_ids("sources", catalog.sources.iter().map(|s| s.id.as_str()));
    let tool_ids = v.unique_ids("tools", catalog.tools.iter().map(|t| t.id.as_str()));
    let label_ids = v.unique_ids("labels", catalog.labels.iter().map(|l| l.id.as_str()));
    let group_ids = v.unique_ids("groups", catalog.groups.iter().map(|g| g.id.as_str()));
    v.unique_ids("policies", catalog.policies.iter().map(|p| p.id.as_str()));
    let known = Known {
        sources: source_ids,
        tools: tool_ids,
        labels: label_ids,
        groups: group_ids,
    };

    for (i, source) in catalog.sources.iter().enumerate() {
        let at = format!("sources[{i}]");
        v.name(&at, "name", &source.name);
        v.description(&at, &source.description);
        if source.kind().is_none() {
            v.invalid(
                format!("{at}.type"),
                format!(
                    "unknown source type '{}'; expected one of {}",
                    source.source_type,
                    SOURCE_TYPES.join(", ")
                ),
            );
        }
        for error in secrets::unresolved_masks(source) {
            v.invalid(format!("{at}.{}", error.field), error.message);
        }
        for error in source_config::check(source) {
            let field = if error.field.is_empty() {
                format!("{at}.config")
            } else {
                format!("{at}.config.{}", error.field)
            };
            v.invalid(field, error.message);
        }
    }
    let services: HashMap<&str, Option<ServiceDescriptor>> = catalog
        .sources
        .iter()
        .filter(|s| s.kind() == Some(SourceType::ToolService))
        .map(|s| {
            (
                s.id.as_str(),
                source_config::service_descriptor(&s.config).ok(),
            )
        })
        .collect();
    for (i, tool) in catalog.tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        v.tool(&at, tool, &known);
        match services.get(tool.source_id.as_str()) {
            Some(descriptor) => v.tool_service_tool(&at, tool, descriptor.as_ref()),
            None => v.not_a_tool_service_tool(&at, tool),
        }
    }
    v.unique_mcp_names(catalog);
    for (i, label) in catalog.labels.iter().enumerate() {
        let at = format!("labels[{i}]");
        v.name(&at, "name", &label.name);
        v.description(&at, &label.description);
    }
    let mut group_names: HashMap<&str, usize> = HashMap::new();
    for (i, group) in catalog.groups.iter().enumerate() {
        let at = format!("groups[{i}]");
        v.group(&at, group, &known);
        if let Some(first) = group_names.insert(group.name.as_str(), i) {
            v.conflict(
                format!("{at}.name"),
                format!(
                    "group name '{}' is already used by groups[{first}]",
                    group.name
                ),
            );
        }
    }
    for (i, policy) in catalog.policies.iter().enumerate() {
        v.policy(&format!("policies[{i}]"), policy, &known);
    }
    v.errors
}

struct Known<'c> {
    sources: HashSet<&'c str>,
    tools: HashSet<&'c str>,
    labels: HashSet<&'c str>,
    groups: HashSet<&'c str>,
}

#[derive(Default)]
struct Validator {
    errors: Vec<FieldError>,
    /// Each distinct selector pattern's problem, if any: groups share patterns, and building
    /// one is the costly part of checking it.
    patterns: HashMap<String, Option<PatternError>>,
}

impl Validator {
    fn invalid(&mut self, field: String, message: String) {
        self.errors.push(FieldError {
            field,
            message,
            kind: ErrorKind::Invalid,
        });
    }

    fn conflict(&mut self, field: String, message: String) {
        self.errors.push(FieldError {
            field,
            message,
            kind: ErrorKind::Conflict,
        });
    }

    /// Checks ids (non-empty, well-formed, unique) and returns the set of them.
    fn unique_ids<'c>(
        &mut self,
        collection: &str,
        ids: impl Iterator<Item = &'c str>,
    ) -> HashSet<&'c str> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, id) in ids.enumerate() {
            let field = || format!("{collection}[{i}].id");
            if let Some(message) = name_problem(id) {
                self.invalid(field(), message);
                if id.is_empty() {
                    continue;
                }
            }
            if let Some(first) = seen.insert(id, i) {
                self.conflict(
                    field(),
                    format!("id '{id}' is already used by {collection}[{first}]"),
                );
            }
        }
        seen.into_keys().collect()
    }

    /// Two tools whose ids make one MCP name ([`mcp::name_of`]) are a conflict: a name must
    /// stay its tool's, so the second tool is refused rather than either renamed.
    fn unique_mcp_names(&mut self, catalog: &Catalog) {
        let mut named: HashMap<String, usize> = HashMap::with_capacity(catalog.tools.len());
        for (i, tool) in catalog.tools.iter().enumerate() {
            match named.entry(mcp::name_of(&tool.id)) {
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
                Entry::Occupied(first) if catalog.tools[*first.get()].id != tool.id => {
                    let first_id = &catalog.tools[*first.get()].id;
                    self.conflict(
                        format!("tools[{i}].id"),
                        format!(
                            "tool id '{}' has the MCP name '{}', which tools[{}] ('{first_id}') \
                             already has: MCP clients could not tell them apart, so choose \
                             another id",
                            tool.id,
                            first.key(),
                            first.get()
                        ),
                    );
                }
                Entry::Occupied(_) => {} // the same id twice: unique_ids reports it
            }
        }
    }

    /// Field paths are formatted only for an error: a valid catalog of 10,000 tools would
    /// otherwise format tens of thousands of them.
    fn name(&mut self, at: &str, field: &str, value: &str) {
        if let Some(message) = name_problem(value) {
            self.invalid(format!("{at}.{field}"), message);
        }
    }

    fn description(&mut self, at: &str, value: &str) {
        let count = value.chars().count();
        if count > MAX_DESCRIPTION_CHARS {
            self.invalid(
                format!("{at}.description"),
                format!("must be at most {MAX_DESCRIPTION_CHARS} characters, found {count}"),
            );
        }
    }

    fn reference(
        &mut self,
        field: impl FnOnce() -> String,
        kind: &str,
        id: &str,
        known: &HashSet<&str>,
    ) {
        if !known.contains(id) {
            self.invalid(field(), format!("unknown {kind} '{id}'"));
        }
    }

    fn tool(&mut self, at: &str, tool: &Tool, known: &Known) {
        self.name(at, "name", &tool.name);
        self.name(at, "operation_id", &tool.operation_id);
        if let Some(title) = &tool.title {
            self.name(at, "title", title);
        }
        self.description(at, &tool.description);
        self.reference(
            || format!("{at}.source_id"),
            "source",
            &tool.source_id,
            &known.sources,
        );
        for (j, label) in tool.label_ids.iter().enumerate() {
            self.reference(
                || format!("{at}.label_ids[{j}]"),
                "label",
                label,
                &known.labels,
            );
        }
        if !tool.input_schema.is_object() {
            self.invalid(
                format!("{at}.input_schema"),
                "must be a JSON Schema object".to_owned(),
            );
        }
        if tool
            .output_schema
            .as_ref()
            .is_some_and(|schema| !schema.is_object())
        {
            self.invalid(
                format!("{at}.output_schema"),
                "must be a JSON Schema object".to_owned(),
            );
        }
        if let Some(method) = &tool.method
            && method.chars().any(char::is_control)
        {
            self.invalid(
                format!("{at}.method"),
                "must not contain control characters".to_owned(),
            );
        }
    }

    /// A tool of a `tool-service` source: its config values satisfy the service's declared
    /// parameters (seed 001), its arguments are complete. `descriptor` is `None` when the
    /// source's own config is invalid (reported there).
    fn tool_service_tool(&mut self, at: &str, tool: &Tool, descriptor: Option<&ServiceDescriptor>) {
        if let Some(descriptor) = descriptor {
            let declared: Vec<&str> = descriptor
                .config_params
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            for (key, value) in &tool.service_config {
                if !declared.contains(&key.as_str()) {
                    self.invalid(
                        format!("{at}.service_config.{key}"),
                        format!(
                            "unknown config parameter '{key}' of service '{}'; expected {}",
                            tool.source_id,
                            if declared.is_empty() {
                                "none: the service declares no config parameters".to_owned()
                            } else {
                                format!("one of {}", declared.join(", "))
                            }
                        ),
                    );
                } else if value.is_null() {
                    self.invalid(
                        format!("{at}.service_config.{key}"),
                        "must have a value, found null".to_owned(),
                    );
                }
            }
            let missing: Vec<&str> = descriptor
                .config_params
                .iter()
                .filter(|p| {
                    // An empty text is no more a value than an absent one.
                    p.required
                        && tool.service_config.get(&p.name).is_none_or(|value| {
                            value.is_null() || value.as_str().is_some_and(|s| s.trim().is_empty())
                        })
                })
                .map(|p| p.name.as_str())
                .collect();
            if !missing.is_empty() {
                self.invalid(
                    format!("{at}.service_config"),
                    format!(
                        "tool '{}' lacks required config parameters of service '{}' (absent or empty): {}",
                        tool.id,
                        tool.source_id,
                        missing.join(", ")
                    ),
                );
            }
        }
        let mut seen = HashSet::new();
        for (j, argument) in tool.arguments.iter().enumerate() {
            let arg = format!("{at}.arguments[{j}]");
            self.name(&arg, "name", &argument.name);
            if !seen.insert(argument.name.as_str()) {
                self.invalid(
                    format!("{arg}.name"),
                    format!("argument '{}' is declared twice", argument.name),
                );
            }
            if !ARGUMENT_TYPES.contains(&argument.arg_type.as_str()) {
                self.invalid(
                    format!("{arg}.type"),
                    format!(
                        "unknown type '{}'; expected one of {}",
                        argument.arg_type,
                        ARGUMENT_TYPES.join(", ")
                    ),
                );
            }
            if argument.description.trim().is_empty() {
                self.invalid(
                    format!("{arg}.description"),
                    "must not be empty: it is what the LLM reads".to_owned(),
                );
            }
            self.description(&arg, &argument.description);
        }
    }

    /// Config values and argument lists belong to tool-service tools only.
    fn not_a_tool_service_tool(&mut self, at: &str, tool: &Tool) {
        if !tool.service_config.is_empty() {
            self.invalid(
                format!("{at}.service_config"),
                "only tools of a tool-service source take config values".to_owned(),
            );
        }
        if !tool.arguments.is_empty() {
            self.invalid(
                format!("{at}.arguments"),
                "only tools of a tool-service source take an argument list; give input_schema"
                    .to_owned(),
            );
        }
    }

    fn group(&mut self, at: &str, group: &ToolGroup, known: &Known) {
        self.name(at, "name", &group.name);
        self.description(at, &group.description);
        for (j, selector) in group.selectors.iter().enumerate() {
            self.selector(&format!("{at}.selectors[{j}]"), selector, known);
        }
        for (j, id) in group.explicit_tool_ids.iter().enumerate() {
            self.reference(
                || format!("{at}.explicit_tool_ids[{j}]"),
                "tool",
                id,
                &known.tools,
            );
        }
        for (j, id) in group.excluded_tool_ids.iter().enumerate() {
            self.reference(
                || format!("{at}.excluded_tool_ids[{j}]"),
                "tool",
                id,
                &known.tools,
            );
        }
    }

    fn selector(&mut self, at: &str, selector: &Selector, known: &Known) {
        let patterns = [
            ("source_pattern", Some(&selector.source_pattern)),
            ("name_pattern", Some(&selector.name_pattern)),
            ("path_pattern", selector.path_pattern.as_ref()),
            ("method_pattern", selector.method_pattern.as_ref()),
        ];
        for (field, pattern) in patterns {
            let Some(pattern) = pattern else { continue };
            let problem = match self.patterns.get(pattern.as_str()) {
                Some(problem) => problem.clone(),
                None => {
                    let problem = Pattern::selector(pattern).err();
                    self.patterns.insert(pattern.clone(), problem.clone());
                    problem
                }
            };
            if let Some(error) = problem {
                self.invalid(format!("{at}.{field}"), error.to_string());
            }
        }
        for (j, label) in selector.required_label_ids.iter().enumerate() {
            self.reference(
                || format!("{at}.required_label_ids[{j}]"),
                "label",
                label,
                &known.labels,
            );
        }
    }

    fn policy(&mut self, at: &str, policy: &AccessPolicy, known: &Known) {
        self.name(at, "name", &policy.name);
        self.description(at, &policy.description);
        if policy.claim_matchers.is_empty() {
            self.invalid(
                format!("{at}.claim_matchers"),
                "a policy needs at least one claim matcher".to_owned(),
            );
        }
        for (j, matcher) in policy.claim_matchers.iter().enumerate() {
            let m = format!("{at}.claim_matchers[{j}]");
            if let Err(error) = ClaimPath::parse(&matcher.json_path) {
                self.invalid(format!("{m}.json_path"), error.to_string());
            }
            if let Err(error) = CompiledMatcher::compile(matcher) {
                self.invalid(format!("{m}.{}", error.field), error.message);
            }
        }
        if policy.allowed_group_ids.is_empty() && policy.denied_group_ids.is_empty() {
            self.invalid(
                format!("{at}.allowed_group_ids"),
                "a policy needs at least one group in allowed_group_ids or denied_group_ids"
                    .to_owned(),
            );
        }
        for (list, ids) in [
            ("allowed_group_ids", &policy.allowed_group_ids),
            ("denied_group_ids", &policy.denied_group_ids),
        ] {
            for (j, id) in ids.iter().enumerate() {
                self.reference(|| format!("{at}.{list}[{j}]"), "group", id, &known.groups);
            }
        }
    }
}

#[cfg(test)]
mod tests;
