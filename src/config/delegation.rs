//! Delegation settings as one source gives them: `[delegation]` in the file and
//! `TOOLGATE_DELEGATION_*` in the environment.

use std::time::Duration;

use serde::Deserialize;

use super::number;
use super::{ConfigError, Environment};
use crate::service::delegation::DelegationSettings;

/// The environment variables read here.
pub(super) const VARIABLES: [&str; 3] = [
    "TOOLGATE_DELEGATION_MAX_DEPTH",
    "TOOLGATE_DELEGATION_MAX_LIFETIME_SECS",
    "TOOLGATE_DELEGATION_KEY_ROTATION_SECS",
];

/// A key rotation shorter than this would retire keys faster than instances read them.
const MIN_ROTATION_SECS: u64 = 60;

/// The longest lifetime a delegated token may be given (a day), and the longest rotation (a
/// year): bounds that keep key retirement arithmetic meaningful.
const MAX_LIFETIME_SECS: u64 = 24 * 3600;
const MAX_ROTATION_SECS: u64 = 366 * 24 * 3600;

/// `[delegation]` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DelegationSection {
    max_depth: Option<u64>,
    max_lifetime_secs: Option<u64>,
    key_rotation_secs: Option<u64>,
}

/// The delegation settings one source gives; `None`: it does not say.
#[derive(Debug, Default)]
pub(super) struct DelegationLayer {
    max_depth: Option<u64>,
    max_lifetime_secs: Option<u64>,
    key_rotation_secs: Option<u64>,
}

impl DelegationLayer {
    /// From the file's `[delegation]`; `place` names the file in messages.
    pub(super) fn from_file(
        section: DelegationSection,
        place: &str,
    ) -> Result<DelegationLayer, ConfigError> {
        let named = |key: &str| format!("delegation.{key}{place}");
        DelegationLayer {
            max_depth: section.max_depth,
            max_lifetime_secs: section.max_lifetime_secs,
            key_rotation_secs: section.key_rotation_secs,
        }
        .checked(&[
            named("max_depth"),
            named("max_lifetime_secs"),
            named("key_rotation_secs"),
        ])
    }

    /// From the environment.
    pub(super) fn from_env(env: &Environment) -> Result<DelegationLayer, ConfigError> {
        let number = |name: &str| env.get(name).map(|t| number::integer(name, t)).transpose();
        let [depth, lifetime, rotation] = VARIABLES;
        DelegationLayer {
            max_depth: number(depth)?,
            max_lifetime_secs: number(lifetime)?,
            key_rotation_secs: number(rotation)?,
        }
        .checked(&[depth.to_owned(), lifetime.to_owned(), rotation.to_owned()])
    }

    /// A depth the evaluator reads, a lifetime and a rotation within their bounds (`names`: the
    /// three settings as named in messages).
    fn checked(self, names: &[String; 3]) -> Result<DelegationLayer, ConfigError> {
        let most = crate::domain::delegation::MAX_LEVELS as u64;
        if let Some(depth) = self.max_depth
            && depth > most
        {
            return Err(ConfigError::invalid(
                &names[0],
                format!("must be at most {most}, found {depth}"),
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
        if let Some(rotation) = self.key_rotation_secs
            && !(MIN_ROTATION_SECS..=MAX_ROTATION_SECS).contains(&rotation)
        {
            return Err(ConfigError::invalid(
                &names[2],
                format!(
                    "must be {MIN_ROTATION_SECS} to {MAX_ROTATION_SECS} seconds, found {rotation}"
                ),
            ));
        }
        Ok(self)
    }

    /// `higher` on top of `self`.
    pub(super) fn overlaid_by(self, higher: DelegationLayer) -> DelegationLayer {
        DelegationLayer {
            max_depth: higher.max_depth.or(self.max_depth),
            max_lifetime_secs: higher.max_lifetime_secs.or(self.max_lifetime_secs),
            key_rotation_secs: higher.key_rotation_secs.or(self.key_rotation_secs),
        }
    }

    /// The settings, defaults where no source said.
    pub(super) fn settings(self) -> DelegationSettings {
        let defaults = DelegationSettings::default();
        DelegationSettings {
            max_depth: self.max_depth.map_or(defaults.max_depth, |d| {
                usize::try_from(d).unwrap_or(usize::MAX)
            }),
            max_lifetime: self
                .max_lifetime_secs
                .map_or(defaults.max_lifetime, Duration::from_secs),
            key_rotation: self
                .key_rotation_secs
                .map_or(defaults.key_rotation, Duration::from_secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked_and_layers_overlay() {
        let names = ["d".to_owned(), "a".to_owned(), "b".to_owned()];
        let layer = |lifetime, rotation| DelegationLayer {
            max_depth: Some(0),
            max_lifetime_secs: lifetime,
            key_rotation_secs: rotation,
        };
        assert!(layer(Some(0), None).checked(&names).is_err());
        assert!(layer(None, Some(59)).checked(&names).is_err());
        assert!(layer(Some(86_401), None).checked(&names).is_err());
        assert!(layer(None, Some(u64::MAX)).checked(&names).is_err());
        let deep = DelegationLayer {
            max_depth: Some(33),
            ..DelegationLayer::default()
        };
        assert!(deep.checked(&names).is_err());
        let settings = layer(Some(60), Some(60))
            .overlaid_by(DelegationLayer {
                max_depth: Some(3),
                ..DelegationLayer::default()
            })
            .settings();
        assert_eq!(settings.max_depth, 3);
        assert_eq!(settings.max_lifetime, Duration::from_secs(60));
        assert_eq!(
            DelegationLayer::default().settings(),
            DelegationSettings::default()
        );
    }
}
