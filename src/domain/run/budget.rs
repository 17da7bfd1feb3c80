//! A run's budget (docs/runs.md, "Budgets that only narrow"): `{"calls": N?, "per_tool":
//! {"<tool id or glob>": N}?, "per_label": {"<label id>": N}?}`, each key one counter of calls
//! toolgate forwards. Which counters a call spends is decided here; where each is kept (the
//! run's own, or an ancestor's) by [`super::forest`].

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::domain::pattern::{Case, Pattern};

/// Counters one budget may hold, all keys together.
pub const MAX_COUNTERS: usize = 64;

/// The longest key of `per_tool` or `per_label` (bytes).
pub const MAX_KEY_BYTES: usize = 256;

/// One counter of a budget.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CounterKey {
    /// `calls`: every forwarded call.
    Calls,
    /// `per_tool.<id or glob>`: calls of the tools the glob matches (case-sensitive, as tool
    /// ids are), one counter for all of them.
    Tool(String),
    /// `per_label.<id>`: calls of the tools carrying that label.
    Label(String),
}

impl CounterKey {
    /// Its name where one string names it (stores, errors): `calls`, `per_tool.<glob>`,
    /// `per_label.<id>`.
    pub fn name(&self) -> String {
        match self {
            CounterKey::Calls => "calls".to_owned(),
            CounterKey::Tool(glob) => format!("per_tool.{glob}"),
            CounterKey::Label(id) => format!("per_label.{id}"),
        }
    }

    /// The key [`CounterKey::name`] wrote.
    pub fn parse(name: &str) -> Option<CounterKey> {
        if name == "calls" {
            return Some(CounterKey::Calls);
        }
        if let Some(glob) = name.strip_prefix("per_tool.") {
            return Some(CounterKey::Tool(glob.to_owned()));
        }
        name.strip_prefix("per_label.")
            .map(|id| CounterKey::Label(id.to_owned()))
    }

    /// Whether a call of the tool `tool_id` carrying `labels` spends this counter.
    pub fn applies_to(&self, tool_id: &str, labels: &[String]) -> bool {
        match self {
            CounterKey::Calls => true,
            CounterKey::Tool(glob) => Pattern::glob(glob, Case::Sensitive)
                .unwrap_or_else(|_| Pattern::literal(glob, Case::Sensitive))
                .is_match(tool_id),
            CounterKey::Label(id) => labels.iter().any(|label| label == id),
        }
    }
}

/// The counters along a run's chain, each ready to say whether a call spends it: globs are
/// compiled once, when the run is read, not on every call.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    counters: Vec<(String, CounterKey, Option<Pattern>)>,
}

impl Counters {
    /// The counters named `names` ([`CounterKey::name`]; other names are skipped).
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Counters {
        let counters = names
            .into_iter()
            .filter_map(|name| {
                let key = CounterKey::parse(name)?;
                let glob = match &key {
                    CounterKey::Tool(glob) => Some(
                        Pattern::glob(glob, Case::Sensitive)
                            .unwrap_or_else(|_| Pattern::literal(glob, Case::Sensitive)),
                    ),
                    CounterKey::Calls | CounterKey::Label(_) => None,
                };
                Some((name.to_owned(), key, glob))
            })
            .collect();
        Counters { counters }
    }

    /// The names of the counters a call of `tool_id` carrying `labels` spends.
    pub fn spent_by(&self, tool_id: &str, labels: &[String]) -> Vec<String> {
        self.counters
            .iter()
            .filter(|(_, key, glob)| match (key, glob) {
                (CounterKey::Tool(_), Some(glob)) => glob.is_match(tool_id),
                (key, _) => key.applies_to(tool_id, labels),
            })
            .map(|(name, _, _)| name.clone())
            .collect()
    }

    /// Every counter's name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.counters.iter().map(|(name, _, _)| name.as_str())
    }
}

/// A budget as asked for: each counter's amount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budget {
    pub counters: BTreeMap<CounterKey, u64>,
}

/// What is wrong with a budget, at which field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BudgetError {
    pub field: String,
    pub message: String,
}

fn problem(field: impl Into<String>, message: impl Into<String>) -> BudgetError {
    BudgetError {
        field: field.into(),
        message: message.into(),
    }
}

impl Budget {
    /// Reads `value` (the `budget` member of a request, at `field`); every key is checked.
    pub fn parse(value: &Value, field: &str) -> Result<Budget, BudgetError> {
        let object = value
            .as_object()
            .ok_or_else(|| problem(field, "must be an object"))?;
        let mut counters = BTreeMap::new();
        for (name, member) in object {
            let at = format!("{field}.{}", clip(name));
            match name.as_str() {
                "calls" => {
                    counters.insert(CounterKey::Calls, amount(member, &at)?);
                }
                "per_tool" => read_map(member, &at, &mut counters, CounterKey::Tool)?,
                "per_label" => read_map(member, &at, &mut counters, CounterKey::Label)?,
                _ => {
                    return Err(problem(
                        at,
                        "unknown member: a budget has calls, per_tool and per_label",
                    ));
                }
            }
        }
        if counters.len() > MAX_COUNTERS {
            return Err(problem(
                field,
                format!("holds more than {MAX_COUNTERS} counters"),
            ));
        }
        Ok(Budget { counters })
    }

    /// The budget's JSON shape with `amounts` in place of each counter's (what is left, as
    /// `GET /runs/{id}` shows it).
    pub fn to_json(amounts: &BTreeMap<CounterKey, u64>) -> Value {
        let mut out = Map::new();
        let mut per_tool = Map::new();
        let mut per_label = Map::new();
        for (key, amount) in amounts {
            match key {
                CounterKey::Calls => {
                    out.insert("calls".to_owned(), json!(amount));
                }
                CounterKey::Tool(glob) => {
                    per_tool.insert(glob.clone(), json!(amount));
                }
                CounterKey::Label(id) => {
                    per_label.insert(id.clone(), json!(amount));
                }
            }
        }
        if !per_tool.is_empty() {
            out.insert("per_tool".to_owned(), Value::Object(per_tool));
        }
        if !per_label.is_empty() {
            out.insert("per_label".to_owned(), Value::Object(per_label));
        }
        Value::Object(out)
    }
}

/// A name as a field path quotes it: at most 80 characters of it.
fn clip(name: &str) -> String {
    let mut clipped: String = name.chars().take(80).collect();
    if clipped.len() < name.len() {
        clipped.push('…');
    }
    clipped
}

fn amount(value: &Value, field: &str) -> Result<u64, BudgetError> {
    value
        .as_u64()
        .filter(|n| *n <= i64::MAX as u64)
        .ok_or_else(|| problem(field, "must be a whole number, 0 or more"))
}

fn read_map(
    value: &Value,
    field: &str,
    counters: &mut BTreeMap<CounterKey, u64>,
    key: fn(String) -> CounterKey,
) -> Result<(), BudgetError> {
    let object = value
        .as_object()
        .ok_or_else(|| problem(field, "must be an object of counters"))?;
    if object.len() > MAX_COUNTERS {
        return Err(problem(
            field,
            format!("holds more than {MAX_COUNTERS} counters"),
        ));
    }
    for (name, member) in object {
        let at = format!("{field}.{}", clip(name));
        if name.is_empty() || name.len() > MAX_KEY_BYTES || name.chars().any(char::is_control) {
            return Err(problem(
                at,
                format!("a key is 1 to {MAX_KEY_BYTES} bytes without control characters"),
            ));
        }
        counters.insert(key(name.clone()), amount(member, &at)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_field_paths() {
        let budget = Budget::parse(
            &json!({"calls": 5, "per_tool": {"db:*": 2}, "per_label": {"pii": 1}}),
            "budget",
        )
        .expect("valid");
        assert_eq!(budget.counters.len(), 3);
        assert_eq!(budget.counters[&CounterKey::Tool("db:*".into())], 2);
        assert_eq!(
            Budget::to_json(&budget.counters),
            json!({"calls": 5, "per_tool": {"db:*": 2}, "per_label": {"pii": 1}})
        );
        for (bad, field) in [
            (json!({"calls": -1}), "budget.calls"),
            (json!({"calls": 1.5}), "budget.calls"),
            (json!({"per_tool": {"a": "x"}}), "budget.per_tool.a"),
            (json!({"per_tool": []}), "budget.per_tool"),
            (json!({"tokens": 3}), "budget.tokens"),
            (json!([]), "budget"),
        ] {
            assert_eq!(
                Budget::parse(&bad, "budget").expect_err("refused").field,
                field,
                "{bad}"
            );
        }
    }

    #[test]
    fn counters_apply_by_glob_and_label() {
        let labels = vec!["pii".to_owned()];
        assert!(CounterKey::Calls.applies_to("a:b", &[]));
        assert!(CounterKey::Tool("db:*".into()).applies_to("db:read", &[]));
        assert!(!CounterKey::Tool("db:*".into()).applies_to("DB:read", &[]));
        assert!(CounterKey::Tool("exact:id".into()).applies_to("exact:id", &[]));
        assert!(CounterKey::Label("pii".into()).applies_to("x", &labels));
        assert!(!CounterKey::Label("pii".into()).applies_to("x", &[]));
        for key in [
            CounterKey::Calls,
            CounterKey::Tool("a.b".into()),
            CounterKey::Label("l".into()),
        ] {
            assert_eq!(CounterKey::parse(&key.name()), Some(key));
        }
        let counters = Counters::of(["calls", "per_tool.db:*", "per_label.pii", "nonsense"]);
        assert_eq!(counters.names().count(), 3);
        assert_eq!(
            counters.spent_by("db:read", &[]),
            ["calls", "per_tool.db:*"]
        );
        assert_eq!(counters.spent_by("x", &labels), ["calls", "per_label.pii"]);
    }
}
