//! Why the settings could not be loaded. Every message names the setting, where it came from
//! (flag, environment variable or file key) and what to set instead.

use std::path::PathBuf;

/// A configuration problem found at start-up; the process reports it and exits.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A configuration file was named explicitly (`--config`, `TOOLGATE_CONFIG`) but is absent.
    #[error(
        "the configuration file {path} (named by {named_by}) does not exist; \
         create it (see config/toolgate.example.toml) or stop naming it"
    )]
    FileMissing {
        /// The file that was named.
        path: PathBuf,
        /// `--config` or `TOOLGATE_CONFIG`.
        named_by: &'static str,
    },
    /// The configuration file exists but cannot be read.
    #[error("cannot read the configuration file {path}: {source}")]
    FileRead {
        /// The file that was read.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The configuration file is not valid TOML, or has an unknown key or a value of the wrong
    /// type; `message` carries the line, column and key from the TOML parser.
    #[error("cannot parse the configuration file {path}: {message}")]
    FileParse {
        /// The file that was parsed.
        path: PathBuf,
        /// The parser's explanation, with line and column.
        message: String,
    },
    /// One setting has an unusable value.
    #[error("{setting}: {message}")]
    Invalid {
        /// Where the value came from: `--listen`, `TOOLGATE_LISTEN` or
        /// `server.listen in config/toolgate.toml`.
        setting: String,
        /// What was expected and what was found.
        message: String,
    },
    /// A `TOOLGATE_*` variable holds bytes that are not UTF-8.
    #[error("the environment variable {name} is not valid UTF-8")]
    NotUnicode {
        /// The variable's name.
        name: String,
    },
    /// `serve` without any key material: no token could ever be accepted.
    #[error(
        "no token verification key is configured: set TOOLGATE_JWT_SECRET (an HMAC secret for \
         HS256/384/512 tokens) or TOOLGATE_JWKS_URL (a JWKS URL or file for asymmetric tokens), \
         or auth.jwt_secret / auth.jwks_url in the configuration file; \
         for local development only, start with --dev to generate a throw-away secret"
    )]
    NoKeyMaterial,
    /// The operating system's random source failed while generating the `--dev` secret.
    #[error("cannot generate a development secret: {0}")]
    Random(getrandom::Error),
}

impl ConfigError {
    /// Shorthand for [`ConfigError::Invalid`].
    pub(crate) fn invalid(setting: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            setting: setting.into(),
            message: message.into(),
        }
    }
}
