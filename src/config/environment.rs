//! A snapshot of the environment variables toolgate reads, so that loading settings is a pure
//! function of (flags, environment, file) and tests never mutate the process environment.

use std::collections::BTreeMap;

use super::ConfigError;

/// The prefix of every toolgate variable.
pub(super) const PREFIX: &str = "TOOLGATE_";

/// The `TOOLGATE_*` variables (and `RUST_LOG` and the `OTEL_*` ones toolgate reads) at one
/// moment.
///
/// An empty value counts as *not set*: `TOOLGATE_REDIS_URL=` in a compose file then means
/// "no Redis" rather than "a Redis at the empty URL".
#[derive(Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// Reads the process environment. Fails if a `TOOLGATE_*` variable is not UTF-8 (such a
    /// value would otherwise be silently ignored).
    pub fn from_process() -> Result<Self, ConfigError> {
        let mut vars = BTreeMap::new();
        for (name, value) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            if !is_ours(name) {
                continue;
            }
            let value = value.into_string().map_err(|_| ConfigError::NotUnicode {
                name: name.to_owned(),
            })?;
            vars.insert(name.to_owned(), value);
        }
        Ok(Self { vars })
    }

    /// An environment made of the given pairs (for tests and embedding).
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The variable's value; `None` when it is unset or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Every `TOOLGATE_*` name present, for spotting misspelt variables.
    pub(crate) fn toolgate_names(&self) -> impl Iterator<Item = &str> {
        self.vars
            .keys()
            .map(String::as_str)
            .filter(|name| name.starts_with(PREFIX))
    }
}

impl std::fmt::Debug for Environment {
    /// Names only: the values include secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

fn is_ours(name: &str) -> bool {
    name.starts_with(PREFIX) || name == "RUST_LOG" || super::env::OTEL_VARIABLES.contains(&name)
}
