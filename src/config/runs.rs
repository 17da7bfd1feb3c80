//! Run settings as one source gives them: `[runs]` in the file and `TOOLGATE_RUNS_MAX`,
//! `TOOLGATE_RUN_*` and `TOOLGATE_EXECUTOR_RULE` in the environment (docs/runs.md).

use std::time::Duration;

use serde::Deserialize;

use super::number;
use super::{ConfigError, Environment};
use crate::domain::model::ClaimMatcher;
use crate::service::runs::RunSettings;

/// The environment variables read here.
pub(super) const VARIABLES: [&str; 4] = [
    "TOOLGATE_RUNS_MAX",
    "TOOLGATE_RUN_MAX_LIFETIME_SECS",
    "TOOLGATE_RUN_MAX_CALLS",
    "TOOLGATE_EXECUTOR_RULE",
];

/// The most live runs one gateway may be told to keep, and the longest a run may live (a day).
const MOST_RUNS: u64 = 10_000_000;
const MAX_LIFETIME_SECS: u64 = 24 * 3600;

/// `[runs]` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunsSection {
    max: Option<u64>,
    max_lifetime_secs: Option<u64>,
    max_calls: Option<u64>,
    executor_rule: Option<Vec<ClaimMatcher>>,
}

/// The run settings one source gives; `None`: it does not say.
#[derive(Debug, Default)]
pub(super) struct RunsLayer {
    max: Option<u64>,
    max_lifetime_secs: Option<u64>,
    max_calls: Option<u64>,
    pub(super) executor_rule: Option<Vec<ClaimMatcher>>,
}

impl RunsLayer {
    /// From the file's `[runs]`; `place` names the file in messages.
    pub(super) fn from_file(section: RunsSection, place: &str) -> Result<RunsLayer, ConfigError> {
        let named = |key: &str| format!("runs.{key}{place}");
        let executor_rule = section
            .executor_rule
            .map(|rule| super::rule::admin_rule("runs.executor_rule", place, rule))
            .transpose()?;
        RunsLayer {
            max: section.max,
            max_lifetime_secs: section.max_lifetime_secs,
            max_calls: section.max_calls,
            executor_rule,
        }
        .checked(&[named("max"), named("max_lifetime_secs"), named("max_calls")])
    }

    /// From the environment.
    pub(super) fn from_env(env: &Environment) -> Result<RunsLayer, ConfigError> {
        let number = |name: &str| env.get(name).map(|t| number::integer(name, t)).transpose();
        let [max, lifetime, calls, rule] = VARIABLES;
        let executor_rule = env
            .get(rule)
            .map(|text| {
                let matchers: Vec<ClaimMatcher> = serde_json::from_str(text).map_err(|error| {
                    ConfigError::invalid(
                        rule,
                        format!(
                            "not a JSON list of claim matchers ({error}); expected e.g. \
                             [{{\"json_path\": \"roles\", \"operator\": \"contains\", \
                             \"value\": \"executor\"}}]"
                        ),
                    )
                })?;
                super::rule::admin_rule(rule, "", matchers)
            })
            .transpose()?;
        RunsLayer {
            max: number(max)?,
            max_lifetime_secs: number(lifetime)?,
            max_calls: number(calls)?,
            executor_rule,
        }
        .checked(&[max.to_owned(), lifetime.to_owned(), calls.to_owned()])
    }

    /// A live-run bound, a lifetime and a call cap within their bounds (`names`: the three
    /// settings as named in messages).
    fn checked(self, names: &[String; 3]) -> Result<RunsLayer, ConfigError> {
        if let Some(max) = self.max
            && !(1..=MOST_RUNS).contains(&max)
        {
            return Err(ConfigError::invalid(
                &names[0],
                format!("must be 1 to {MOST_RUNS}, found {max}"),
            ));
        }
        if let Some(lifetime) = self.max_lifetime_secs
            && !(1..=MAX_LIFETIME_SECS).contains(&lifetime)
        {
            return Err(ConfigError::invalid(
                &names[1],
                format!("must be 1 to {MAX_LIFETIME_SECS} seconds, found {lifetime}"),
            ));
        }
        if self.max_calls == Some(0) {
            return Err(ConfigError::invalid(
                &names[2],
                "must be at least 1 (a root run that may forward nothing is no run); leave \
                 it unset for no cap",
            ));
        }
        Ok(self)
    }

    /// `higher` on top of `self`.
    pub(super) fn overlaid_by(self, higher: RunsLayer) -> RunsLayer {
        RunsLayer {
            max: higher.max.or(self.max),
            max_lifetime_secs: higher.max_lifetime_secs.or(self.max_lifetime_secs),
            max_calls: higher.max_calls.or(self.max_calls),
            executor_rule: higher.executor_rule.or(self.executor_rule),
        }
    }

    /// The settings, defaults where no source said.
    pub(super) fn settings(&self) -> RunSettings {
        let defaults = RunSettings::default();
        RunSettings {
            max_live: self.max.map_or(defaults.max_live, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            }),
            max_lifetime: self
                .max_lifetime_secs
                .map_or(defaults.max_lifetime, Duration::from_secs),
            max_calls: self.max_calls.or(defaults.max_calls),
            keep_ended: defaults.keep_ended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked_and_layers_overlay() {
        let names = ["m".to_owned(), "l".to_owned(), "c".to_owned()];
        let layer = |max, lifetime| RunsLayer {
            max,
            max_lifetime_secs: lifetime,
            ..RunsLayer::default()
        };
        assert!(layer(Some(0), None).checked(&names).is_err());
        assert!(layer(None, Some(0)).checked(&names).is_err());
        assert!(
            layer(None, Some(MAX_LIFETIME_SECS + 1))
                .checked(&names)
                .is_err()
        );
        let no_calls = RunsLayer {
            max_calls: Some(0),
            ..RunsLayer::default()
        };
        assert!(no_calls.checked(&names).is_err());
        let settings = layer(Some(5), None)
            .overlaid_by(layer(None, Some(60)))
            .settings();
        assert_eq!(settings.max_live, 5);
        assert_eq!(settings.max_lifetime, Duration::from_secs(60));
        assert_eq!(RunsLayer::default().settings(), RunSettings::default());
    }
}
