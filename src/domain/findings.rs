//! Deterministic findings on a tool definition (docs/api.md, "Approved tool definitions"): what an
//! upstream could hide in a definition to steer the model or widen what a call does. No model
//! in the loop: the same definition always gets the same findings, each with a rule id, a
//! severity, the JSON path it is at and an excerpt, so an admin can see why.
//!
//! The rules read every string of the definition (descriptions, titles, schema texts, `_meta`),
//! schema property names, and the annotations against the tool's name and method.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How much a finding matters: a `high` one quarantines a new tool and must be acknowledged by
/// the admin who approves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Medium,
    High,
}

/// The rules, each with its id (stable: admins acknowledge findings by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rule {
    /// Unicode tag characters, zero-width characters, bidirectional controls: text the admin
    /// does not see but the model reads.
    #[serde(rename = "hidden-unicode")]
    HiddenUnicode,
    /// Text addressed to the model rather than to the user.
    #[serde(rename = "model-directed")]
    ModelDirected,
    /// Another tool of the catalog named in the text.
    #[serde(rename = "cross-tool-reference")]
    CrossToolReference,
    /// A secret-looking path or file.
    #[serde(rename = "secret-path")]
    SecretPath,
    /// A URL whose host is not the source's.
    #[serde(rename = "foreign-url")]
    ForeignUrl,
    /// A schema property that asks for a credential.
    #[serde(rename = "credential-parameter")]
    CredentialParameter,
    /// `readOnlyHint: true` or `destructiveHint: false` on a tool whose name or method says it
    /// writes or deletes.
    #[serde(rename = "annotation-contradiction")]
    AnnotationContradiction,
}

impl Rule {
    pub const ALL: [Rule; 7] = [
        Rule::HiddenUnicode,
        Rule::ModelDirected,
        Rule::CrossToolReference,
        Rule::SecretPath,
        Rule::ForeignUrl,
        Rule::CredentialParameter,
        Rule::AnnotationContradiction,
    ];

    pub const fn id(self) -> &'static str {
        match self {
            Rule::HiddenUnicode => "hidden-unicode",
            Rule::ModelDirected => "model-directed",
            Rule::CrossToolReference => "cross-tool-reference",
            Rule::SecretPath => "secret-path",
            Rule::ForeignUrl => "foreign-url",
            Rule::CredentialParameter => "credential-parameter",
            Rule::AnnotationContradiction => "annotation-contradiction",
        }
    }

    pub const fn severity(self) -> Severity {
        match self {
            Rule::HiddenUnicode
            | Rule::ModelDirected
            | Rule::SecretPath
            | Rule::CredentialParameter => Severity::High,
            Rule::CrossToolReference | Rule::ForeignUrl | Rule::AnnotationContradiction => {
                Severity::Medium
            }
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    /// JSON Pointer (RFC 6901) into the definition.
    pub path: String,
    /// The text around what the rule found (hidden characters shown as `U+XXXX`).
    pub excerpt: String,
}

/// What a definition is checked against.
#[derive(Debug, Clone)]
pub struct Context<'c> {
    /// The tool's own name (not a cross-tool reference).
    pub name: &'c str,
    /// The HTTP method of an `openapi` tool.
    pub method: Option<&'c str>,
    /// The names of the tools of the catalog's other sources (the tool's own is skipped).
    pub other_tools: &'c ToolNames,
    /// The hosts the source itself lives at (its URL, its servers); others are foreign.
    pub source_hosts: &'c [String],
}

/// Tool names, looked up by the words of a text: a check costs the text's length, not the
/// text's length times the catalog's size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNames {
    names: std::collections::HashSet<String>,
}

impl ToolNames {
    /// Only names that read as identifiers count (`send_email`, `sendEmail`, `get-file2`): a
    /// tool named with an ordinary word (`list`, `search`, `echo`) is not referred to each time
    /// a text uses the word. Shorter than 4 characters, none counts.
    pub fn new<'n>(names: impl IntoIterator<Item = &'n str>) -> ToolNames {
        ToolNames {
            names: names
                .into_iter()
                .filter(|name| name.len() >= 4 && is_identifier(name))
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The first name of the set, other than `own`, that `text` holds as a whole word (word
    /// characters: letters, digits, `_`, `-`).
    fn first_in<'t>(&self, text: &'t str, own: &str) -> Option<&'t str> {
        if self.names.is_empty() {
            return None;
        }
        text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .find(|word| *word != own && self.names.contains(*word))
    }
}

/// Whether `name` reads as an identifier rather than a word: it has a `_`, a `-` or a digit, or
/// an upper-case letter after its first character.
fn is_identifier(name: &str) -> bool {
    name.chars()
        .enumerate()
        .any(|(i, c)| c == '_' || c == '-' || c.is_ascii_digit() || (i > 0 && c.is_uppercase()))
}

/// Excerpts are cut to this many characters.
const EXCERPT_CHARS: usize = 80;

/// Findings kept per rule on one definition. What an admin acknowledges is the rule; a
/// definition of 80,000 credential properties says no more with 80,000 findings than with
/// this many, and its revision stays small. Every rule keeps its own share, so a flood of one
/// rule never hides another.
pub const MAX_FINDINGS_PER_RULE: usize = 32;

/// The findings on one definition as they are found: at most one per (rule, path), at most
/// [`MAX_FINDINGS_PER_RULE`] per rule, so that adding one costs the same whatever came before.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    list: Vec<Finding>,
    per_rule: [usize; Rule::ALL.len()],
}

impl Findings {
    fn push(&mut self, rule: Rule, path: &str, excerpt: &str) {
        let index = Rule::ALL.iter().position(|r| *r == rule).unwrap_or(0);
        if self.per_rule[index] >= MAX_FINDINGS_PER_RULE
            || self.list.iter().any(|f| f.rule == rule && f.path == path)
        {
            return;
        }
        self.per_rule[index] += 1;
        self.list.push(Finding {
            rule,
            severity: rule.severity(),
            path: path.to_owned(),
            excerpt: excerpt_of(excerpt),
        });
    }
}

/// Every finding on `definition`, in path order, at most one per (rule, path) and
/// [`MAX_FINDINGS_PER_RULE`] per rule. Linear in the definition's size.
pub fn check(definition: &Value, context: &Context<'_>) -> Vec<Finding> {
    check_parts(definition, &[], context)
}

/// [`check`] of a definition some of whose members are kept apart (`parts`: an OpenAPI tool's
/// schemas): the findings of the whole, without putting it together.
pub fn check_parts(
    definition: &Value,
    parts: &[(&str, &Value)],
    context: &Context<'_>,
) -> Vec<Finding> {
    let mut findings = Findings::default();
    walk(definition, &mut String::new(), context, &mut findings);
    for (key, value) in parts {
        let mut path = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        walk(value, &mut path, context, &mut findings);
    }
    annotations(definition, context, &mut findings);
    let mut findings = findings.list;
    findings.sort_by(|a, b| a.path.cmp(&b.path));
    findings
}

fn walk(value: &Value, path: &mut String, context: &Context<'_>, out: &mut Findings) {
    match value {
        Value::String(text) => texts::check(text, path, context, out),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(item, path, context, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                texts::hidden(key, path, out);
                if path_is_property(path) {
                    property_name(key, path, out);
                }
                walk(item, path, context, out);
                path.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The rules on a schema property's name: a credential asked for, the model's own context
/// asked for, a secret file named.
fn property_name(key: &str, path: &str, out: &mut Findings) {
    if credentials::asks_for(key) {
        out.push(Rule::CredentialParameter, path, key);
    }
    if credentials::asks_for_context(key) {
        out.push(Rule::ModelDirected, path, key);
    }
    if texts::names_a_secret(key) {
        out.push(Rule::SecretPath, path, key);
    }
}

/// Whether `path` names a schema property (`…/properties/<name>`).
fn path_is_property(path: &str) -> bool {
    path.rsplit_once('/')
        .is_some_and(|(parent, _)| parent.ends_with("/properties"))
}

/// `text` with every character a reader would not see ([`normal::is_hidden_after`]: tags,
/// zero-width, variation selectors, bidirectional and other format controls, control
/// characters) shown as `U+XXXX`: how a definition, and every catalog or caller string the
/// console prints, is shown to the admin, so that it cannot hide from, or reorder itself
/// before, the reviewer.
pub fn visible(text: &str) -> String {
    shown(text, usize::MAX)
}

/// [`visible`] of at most `max_chars` characters of `text`, `…` after a cut.
fn shown(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut previous = None;
    for (i, c) in text.chars().enumerate() {
        if i == max_chars {
            out.push('…');
            break;
        }
        if normal::is_hidden_after(previous, c) {
            out.push_str(&format!("U+{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

fn excerpt_of(text: &str) -> String {
    shown(text, EXCERPT_CHARS)
}

/// `readOnlyHint: true` / `destructiveHint: false` against a name or method that writes.
fn annotations(definition: &Value, context: &Context<'_>, out: &mut Findings) {
    let (annotations, at) = match definition.pointer("/tool/annotations") {
        Some(annotations) => (annotations, "/tool/annotations"),
        None => match definition.get("annotations") {
            Some(annotations) => (annotations, "/annotations"),
            None => return,
        },
    };
    let name = context.name.to_lowercase();
    let deletes = [
        "delete", "remove", "drop", "destroy", "purge", "erase", "wipe",
    ]
    .iter()
    .any(|verb| name.contains(verb))
        || context
            .method
            .is_some_and(|m| m.eq_ignore_ascii_case("DELETE"));
    let writes = deletes
        || [
            "create", "update", "write", "set_", "insert", "send", "post", "put_", "patch",
            "upload",
        ]
        .iter()
        .any(|verb| name.contains(verb))
        || context.method.is_some_and(|m| {
            ["POST", "PUT", "PATCH"]
                .iter()
                .any(|w| m.eq_ignore_ascii_case(w))
        });
    if writes && annotations.get("readOnlyHint") == Some(&Value::Bool(true)) {
        out.push(
            Rule::AnnotationContradiction,
            &format!("{at}/readOnlyHint"),
            context.name,
        );
    }
    if deletes && annotations.get("destructiveHint") == Some(&Value::Bool(false)) {
        out.push(
            Rule::AnnotationContradiction,
            &format!("{at}/destructiveHint"),
            context.name,
        );
    }
}

mod credentials;
pub mod normal;
mod texts;

#[cfg(test)]
mod tests;
