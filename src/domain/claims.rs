//! Claim paths and claim operators (docs/semantics.md sections 2 and 3).
//!
//! Everything that can be wrong with a matcher (a bad path, an unknown operator, a value of the
//! wrong shape, an invalid regular expression) is found when the matcher is compiled, i.e. when
//! the policy is written. Evaluation never fails: it answers true or false, and it fails closed
//! (an absent claim satisfies only `not_exists`).

use std::cmp::Ordering;
use std::collections::HashSet;

use regex::Regex;
use serde_json::{Map, Value};

use super::model::ClaimMatcher;
pub use super::operator::Operator;
use super::pattern::{Case, whole_regex};

/// The verified JWT payload, every claim of it.
pub type Claims = Map<String, Value>;

/// The claim that carries a delegation chain's scopes (see `delegation.rs`); read by every
/// snapshot, whatever its policies read.
pub const DELEGATION_CLAIM: &str = "toolgate_delegation";

/// The claim that nests actors (RFC 8693 §4.1); read by every snapshot, as it decides the
/// levels of a delegation chain.
pub const ACT_CLAIM: &str = "act";

/// Claims written as a JSON object in a test (`claims_of(json!({"sub": "a"}))`).
#[cfg(test)]
pub fn claims_of(value: Value) -> Claims {
    match value {
        Value::Object(map) => map,
        other => panic!("claims are an object, not {other}"),
    }
}

/// Where a matcher looks in the claims: a dot path (`realm_access.roles`, `groups.0`) or, when
/// it starts with `/`, an RFC 6901 JSON Pointer (`/https:~1~1example.com~1roles`).
///
/// Paths order by their segments, so a dot path and the JSON Pointer naming the same place are
/// one path.
/// What is wrong with a `json_path`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimPathError {
    #[error("must not be empty")]
    Empty,
    #[error(
        "'{path}' has an empty segment; a dot path looks like 'realm_access.roles' (use a JSON \
         Pointer such as '/a~1b' for keys with dots or slashes)"
    )]
    EmptySegment { path: String },
    #[error("invalid JSON Pointer escape in '{token}': '~' must be followed by 0 or 1")]
    PointerEscape { token: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimPath {
    segments: Vec<String>,
}

impl ClaimPath {
    pub fn parse(text: &str) -> Result<ClaimPath, ClaimPathError> {
        if text.is_empty() {
            return Err(ClaimPathError::Empty);
        }
        let segments = match text.strip_prefix('/') {
            Some(pointer) => pointer
                .split('/')
                .map(unescape_pointer_token)
                .collect::<Result<Vec<_>, _>>()?,
            None => {
                let segments: Vec<String> = text.split('.').map(str::to_owned).collect();
                if segments.iter().any(String::is_empty) {
                    return Err(ClaimPathError::EmptySegment {
                        path: text.to_owned(),
                    });
                }
                segments
            }
        };
        Ok(ClaimPath { segments })
    }

    /// The keys and indices this path steps through, in order.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The value at this path, or `None` when the path does not resolve or the value is `null`
    /// (both count as *absent*).
    pub fn resolve<'c>(&self, claims: &'c Claims) -> Option<&'c Value> {
        let (first, rest) = self.segments.split_first()?;
        let mut current = claims.get(first)?;
        for segment in rest {
            current = match current {
                Value::Object(object) => object.get(segment)?,
                Value::Array(items) => items.get(array_index(segment)?)?,
                _ => return None,
            };
        }
        (!current.is_null()).then_some(current)
    }
}

/// RFC 6901: `~1` is `/`, `~0` is `~`, and any other `~` is an error.
fn unescape_pointer_token(token: &str) -> Result<String, ClaimPathError> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => {
                    return Err(ClaimPathError::PointerEscape {
                        token: token.to_owned(),
                    });
                }
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// An array index segment: decimal digits without a sign or leading zeros (as RFC 6901 says;
/// the dot-path form follows the same rule so that both forms agree).
fn array_index(segment: &str) -> Option<usize> {
    let digits_only = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    if !digits_only || (segment.len() > 1 && segment.starts_with('0')) {
        return None;
    }
    segment.parse().ok()
}

/// A number as claims carry it: exact for integers, `f64` otherwise, so that large integer ids
/// compare exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn of_json(number: &serde_json::Number) -> Option<Number> {
        if let Some(int) = number.as_i64() {
            Some(Number::Int(int.into()))
        } else if let Some(int) = number.as_u64() {
            Some(Number::Int(int.into()))
        } else {
            number.as_f64().filter(|f| f.is_finite()).map(Number::Float)
        }
    }

    /// A string that is a JSON number with nothing around it (docs/semantics.md section 3): not
    /// `"+2"`, `"02"`, `".5"`, `"2."`, `" 2"`, `"inf"`, which Rust's parsers would accept.
    fn parse(text: &str) -> Option<Number> {
        if !is_json_number(text) {
            return None;
        }
        if let Ok(int) = text.parse::<i128>() {
            return Some(Number::Int(int));
        }
        // Rust also parses "inf" and "NaN"; those are not numbers a claim means.
        text.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Number::Float)
    }

    fn of_claim(value: &Value) -> Option<Number> {
        match value {
            Value::Number(number) => Number::of_json(number),
            Value::String(text) => Number::parse(text),
            _ => None,
        }
    }

    fn compare(self, other: Number) -> Option<Ordering> {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::Int(int) => int as f64,
            Number::Float(float) => float,
        }
    }
}

/// RFC 8259 section 6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn is_json_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == bytes.len()
}

/// A matcher's value, prepared once for every form of claim it may be compared with.
#[derive(Debug, Clone)]
struct Expected {
    /// Equal to a string claim with exactly this text.
    text: Option<String>,
    /// Equal to a number claim with this value.
    number: Option<Number>,
    /// Equal to a boolean claim with this value.
    boolean: Option<bool>,
}

impl Expected {
    fn of(value: &Value) -> Option<Expected> {
        match value {
            Value::String(text) => Some(Expected::of_text(text)),
            Value::Number(number) => Some(Expected {
                text: None,
                number: Number::of_json(number),
                boolean: None,
            }),
            Value::Bool(boolean) => Some(Expected {
                text: None,
                number: None,
                boolean: Some(*boolean),
            }),
            _ => None,
        }
    }

    fn of_text(text: &str) -> Expected {
        Expected {
            text: Some(text.to_owned()),
            number: Number::parse(text),
            boolean: match text {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
        }
    }

    /// Scalar equality as section 3 defines it. Objects and arrays never equal a scalar.
    fn equals(&self, claim: &Value) -> bool {
        match claim {
            Value::String(text) => self.text.as_deref() == Some(text.as_str()),
            Value::Number(number) => match (Number::of_json(number), self.number) {
                (Some(a), Some(b)) => a.compare(b) == Some(Ordering::Equal),
                _ => false,
            },
            Value::Bool(boolean) => self.boolean == Some(*boolean),
            _ => false,
        }
    }
}

/// What an operator compares the claim with.
#[derive(Debug, Clone)]
enum Operand {
    None,
    One(Expected),
    AnyOf(Vec<Expected>),
    Regex(Regex),
    Number(Number),
}

/// A claim matcher whose value has been checked and prepared for its operator.
#[derive(Debug, Clone)]
pub struct CompiledMatcher {
    operator: Operator,
    operand: Operand,
}

/// Why a matcher could not be compiled, with the field it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatcherError {
    /// `json_path`, `operator` or `value`.
    pub field: &'static str,
    pub message: String,
}

impl CompiledMatcher {
    /// Checks the operator and the shape of the value. The path is compiled separately
    /// ([`ClaimPath::parse`]) so that a snapshot can resolve each distinct path once.
    pub fn compile(matcher: &ClaimMatcher) -> Result<CompiledMatcher, MatcherError> {
        let operator = Operator::parse(&matcher.operator).ok_or_else(|| MatcherError {
            field: "operator",
            message: format!(
                "unknown operator '{}'; expected one of {}",
                matcher.operator,
                Operator::ALL.map(|(name, _)| name).join(", ")
            ),
        })?;
        let value_error = |message: String| MatcherError {
            field: "value",
            message,
        };
        let value = &matcher.value;
        let operand = match operator {
            Operator::Exists | Operator::NotExists => Operand::None,
            Operator::Equals | Operator::NotEquals | Operator::Contains | Operator::NotContains => {
                Operand::One(Expected::of(value).ok_or_else(|| {
                    value_error(format!(
                        "'{}' needs a string, number or boolean value, found {}",
                        operator.name(),
                        describe(value)
                    ))
                })?)
            }
            Operator::In | Operator::NotIn => Operand::AnyOf(match value {
                Value::String(list) => list.split(',').map(|item| Expected::of_text(item.trim())).collect(),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| {
                        Expected::of(item).ok_or_else(|| {
                            value_error(format!(
                                "item {index} of the '{}' list must be a string, number or boolean, found {}",
                                operator.name(),
                                describe(item)
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
                other => {
                    return Err(value_error(format!(
                        "'{}' needs an array or a comma-separated string, found {}",
                        operator.name(),
                        describe(other)
                    )));
                }
            }),
            Operator::Matches => match value {
                Value::String(expr) => Operand::Regex(whole_regex(expr, Case::Sensitive).map_err(value_error)?),
                other => {
                    return Err(value_error(format!(
                        "'matches' needs a regular expression string, found {}",
                        describe(other)
                    )));
                }
            },
            Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => {
                Operand::Number(Number::of_claim(value).ok_or_else(|| {
                    value_error(format!(
                        "'{}' needs a number (or a string holding one), found {}",
                        operator.name(),
                        describe(value)
                    ))
                })?)
            }
        };
        Ok(CompiledMatcher { operator, operand })
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// Evaluates against the resolved claim (`None` = absent). Fails closed.
    pub fn matches(&self, claim: Option<&Value>) -> bool {
        let Some(claim) = claim else {
            return self.operator == Operator::NotExists;
        };
        match (self.operator, &self.operand) {
            (Operator::Exists, _) => true,
            (Operator::NotExists, _) => false,
            (Operator::Equals, Operand::One(expected)) => {
                any_element(claim, |v| expected.equals(v))
            }
            (Operator::NotEquals, Operand::One(expected)) => {
                !any_element(claim, |v| expected.equals(v))
            }
            (Operator::Contains, Operand::One(expected)) => contains(claim, expected),
            (Operator::NotContains, Operand::One(expected)) => !contains(claim, expected),
            (Operator::In, Operand::AnyOf(items)) => {
                any_element(claim, |v| items.iter().any(|item| item.equals(v)))
            }
            (Operator::NotIn, Operand::AnyOf(items)) => {
                !any_element(claim, |v| items.iter().any(|item| item.equals(v)))
            }
            (Operator::Matches, Operand::Regex(regex)) => any_element(claim, |v| {
                string_form(v).is_some_and(|text| regex.is_match(&text))
            }),
            (
                op @ (Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte),
                Operand::Number(bound),
            ) => {
                let Some(ordering) = Number::of_claim(claim).and_then(|n| n.compare(*bound)) else {
                    return false;
                };
                match op {
                    Operator::Gt => ordering == Ordering::Greater,
                    Operator::Gte => ordering != Ordering::Less,
                    Operator::Lt => ordering == Ordering::Less,
                    _ => ordering != Ordering::Greater,
                }
            }
            _ => unreachable!("compile pairs every operator with its operand kind"),
        }
    }
}

impl CompiledMatcher {
    /// [`CompiledMatcher::matches`] for an array claim whose elements are all strings, given as
    /// the set of those strings: the equality operators answer with lookups instead of a scan
    /// of the array (a token with hundreds of roles against hundreds of `contains` matchers).
    /// `None` for the operators that need the elements themselves.
    pub(super) fn matches_strings(&self, strings: &HashSet<&str>) -> Option<bool> {
        // A string claim equals an expected value exactly when it is its text.
        let has = |expected: &Expected| {
            expected
                .text
                .as_deref()
                .is_some_and(|text| strings.contains(text))
        };
        Some(match (self.operator, &self.operand) {
            (Operator::Equals | Operator::Contains, Operand::One(expected)) => has(expected),
            (Operator::NotEquals | Operator::NotContains, Operand::One(expected)) => !has(expected),
            (Operator::In, Operand::AnyOf(items)) => items.iter().any(has),
            (Operator::NotIn, Operand::AnyOf(items)) => !items.iter().any(has),
            _ => return None,
        })
    }
}

/// A scalar claim is tested itself; an array claim matches when any element does.
fn any_element(claim: &Value, test: impl Fn(&Value) -> bool) -> bool {
    match claim {
        Value::Array(items) => items.iter().any(test),
        scalar => test(scalar),
    }
}

fn contains(claim: &Value, expected: &Expected) -> bool {
    match claim {
        Value::Array(items) => items.iter().any(|item| expected.equals(item)),
        Value::String(text) => expected
            .text
            .as_deref()
            .is_some_and(|needle| text.contains(needle)),
        _ => false,
    }
}

/// The text a `matches` expression sees: strings as they are, numbers and booleans as JSON
/// writes them; objects and arrays have no string form.
fn string_form(value: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match value {
        Value::String(text) => Some(text.as_str().into()),
        Value::Number(number) => Some(number.to_string().into()),
        Value::Bool(boolean) => Some(boolean.to_string().into()),
        _ => None,
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

mod projection;
pub use projection::project;

#[cfg(test)]
mod tests;
