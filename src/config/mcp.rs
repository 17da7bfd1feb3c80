//! The MCP endpoint's settings as one source gives them: `[mcp]` in the file,
//! `TOOLGATE_PUBLIC_URL` and `TOOLGATE_MCP_*` in the environment. Kept together so that the
//! endpoint's settings travel as one value ([`McpSettings`]) from here to the server.

use std::time::Duration;

use serde::Deserialize;

use super::number;
use super::{ConfigError, Environment};
use crate::service::mcp::{McpSettings, SessionLimits};
use crate::upstream::CallLimits;

/// The environment variables read here.
pub(super) const VARIABLES: [&str; 8] = [
    "TOOLGATE_PUBLIC_URL",
    "TOOLGATE_MCP_PAGE_SIZE",
    "TOOLGATE_MCP_SESSIONS_PER_SUBJECT",
    "TOOLGATE_MCP_SESSION_IDLE_SECS",
    "TOOLGATE_MCP_LIST_TTL_MS",
    "TOOLGATE_MCP_ALLOWED_ORIGINS",
    "TOOLGATE_MCP_CALL_TIMEOUT_SECS",
    "TOOLGATE_MCP_CALL_MAX_BYTES",
];

/// `[mcp]` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpSection {
    public_url: Option<String>,
    page_size: Option<u64>,
    sessions_per_subject: Option<u64>,
    session_idle_secs: Option<u64>,
    list_ttl_ms: Option<u64>,
    allowed_origins: Option<Vec<String>>,
    call_timeout_secs: Option<u64>,
    call_max_bytes: Option<u64>,
}

/// The MCP settings one source gives; `None`: it does not say.
#[derive(Debug, Default)]
pub(super) struct McpLayer {
    public_url: Option<String>,
    page_size: Option<u64>,
    sessions_per_subject: Option<u64>,
    session_idle_secs: Option<u64>,
    list_ttl_ms: Option<u64>,
    allowed_origins: Option<Vec<String>>,
    call_timeout_secs: Option<u64>,
    call_max_bytes: Option<u64>,
}

impl McpLayer {
    /// From the file's `[mcp]`; `place` names the file in messages.
    pub(super) fn from_file(section: McpSection, place: &str) -> Result<McpLayer, ConfigError> {
        let named = |key: &str| format!("mcp.{key}{place}");
        let positive = |key: &str, value: Option<u64>| {
            value
                .map(|v| number::at_least_one(&named(key), v))
                .transpose()
        };
        Ok(McpLayer {
            public_url: section
                .public_url
                .filter(|url| !url.is_empty())
                .map(|url| public_url(&named("public_url"), &url))
                .transpose()?,
            page_size: positive("page_size", section.page_size)?,
            sessions_per_subject: positive("sessions_per_subject", section.sessions_per_subject)?,
            session_idle_secs: positive("session_idle_secs", section.session_idle_secs)?,
            list_ttl_ms: section.list_ttl_ms,
            allowed_origins: section
                .allowed_origins
                .map(|origins| origins_list(&named("allowed_origins"), origins))
                .transpose()?,
            call_timeout_secs: positive("call_timeout_secs", section.call_timeout_secs)?,
            call_max_bytes: positive("call_max_bytes", section.call_max_bytes)?,
        })
    }

    /// From the environment.
    pub(super) fn from_env(env: &Environment) -> Result<McpLayer, ConfigError> {
        let number = |name: &str| env.get(name).map(|t| number::integer(name, t)).transpose();
        let positive = |name: &str| -> Result<Option<u64>, ConfigError> {
            number(name)?
                .map(|n| number::at_least_one(name, n))
                .transpose()
        };
        Ok(McpLayer {
            public_url: env
                .get("TOOLGATE_PUBLIC_URL")
                .filter(|url| !url.is_empty())
                .map(|url| public_url("TOOLGATE_PUBLIC_URL", url))
                .transpose()?,
            page_size: positive("TOOLGATE_MCP_PAGE_SIZE")?,
            sessions_per_subject: positive("TOOLGATE_MCP_SESSIONS_PER_SUBJECT")?,
            session_idle_secs: positive("TOOLGATE_MCP_SESSION_IDLE_SECS")?,
            list_ttl_ms: number("TOOLGATE_MCP_LIST_TTL_MS")?,
            allowed_origins: env
                .get("TOOLGATE_MCP_ALLOWED_ORIGINS")
                .map(|text| {
                    origins_list(
                        "TOOLGATE_MCP_ALLOWED_ORIGINS",
                        text.split(',')
                            .map(str::trim)
                            .filter(|origin| !origin.is_empty())
                            .map(str::to_owned)
                            .collect(),
                    )
                })
                .transpose()?,
            call_timeout_secs: positive("TOOLGATE_MCP_CALL_TIMEOUT_SECS")?,
            call_max_bytes: positive("TOOLGATE_MCP_CALL_MAX_BYTES")?,
        })
    }

    /// `higher` on top of `self`.
    pub(super) fn overlaid_by(self, higher: McpLayer) -> McpLayer {
        McpLayer {
            public_url: higher.public_url.or(self.public_url),
            page_size: higher.page_size.or(self.page_size),
            sessions_per_subject: higher.sessions_per_subject.or(self.sessions_per_subject),
            session_idle_secs: higher.session_idle_secs.or(self.session_idle_secs),
            list_ttl_ms: higher.list_ttl_ms.or(self.list_ttl_ms),
            allowed_origins: higher.allowed_origins.or(self.allowed_origins),
            call_timeout_secs: higher.call_timeout_secs.or(self.call_timeout_secs),
            call_max_bytes: higher.call_max_bytes.or(self.call_max_bytes),
        }
    }

    /// The settings, defaults where no source said.
    pub(super) fn settings(self) -> McpSettings {
        let defaults = McpSettings::default();
        let size = |value: Option<u64>, default: usize| {
            value.map_or(default, |v| usize::try_from(v).unwrap_or(usize::MAX))
        };
        McpSettings {
            public_url: self.public_url,
            page_size: size(self.page_size, defaults.page_size),
            sessions: SessionLimits {
                per_subject: size(self.sessions_per_subject, defaults.sessions.per_subject),
                idle: self
                    .session_idle_secs
                    .map_or(defaults.sessions.idle, Duration::from_secs),
            },
            list_ttl: self
                .list_ttl_ms
                .map_or(defaults.list_ttl, Duration::from_millis),
            allowed_origins: self.allowed_origins.unwrap_or_default(),
            calls: CallLimits {
                timeout: self
                    .call_timeout_secs
                    .map_or(defaults.calls.timeout, Duration::from_secs),
                max_response_bytes: size(self.call_max_bytes, defaults.calls.max_response_bytes),
            },
        }
    }
}

/// `http(s)://host[:port][/prefix]`, without a trailing slash, query or fragment.
fn public_url(setting: &str, text: &str) -> Result<String, ConfigError> {
    let url = text.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(rest)
            if !rest.is_empty()
                && !rest.starts_with('/')
                && !rest.contains(['?', '#', ' ', '"']) =>
        {
            Ok(url.to_owned())
        }
        _ => Err(ConfigError::invalid(
            setting,
            format!(
                "'{text}' is not a public base URL; expected http(s)://host[:port][/prefix], \
                 e.g. https://gateway.example.com"
            ),
        )),
    }
}

/// Origins as browsers send them: `scheme://host[:port]`.
fn origins_list(setting: &str, origins: Vec<String>) -> Result<Vec<String>, ConfigError> {
    for origin in &origins {
        let valid = origin.split_once("://").is_some_and(|(scheme, host)| {
            !scheme.is_empty() && !host.is_empty() && !host.contains('/')
        });
        if !valid {
            return Err(ConfigError::invalid(
                setting,
                format!("'{origin}' is not an origin; expected scheme://host[:port]"),
            ));
        }
    }
    Ok(origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_and_origins_are_checked() {
        assert_eq!(
            public_url("x", "https://gw.example.com/").expect("valid"),
            "https://gw.example.com"
        );
        assert_eq!(
            public_url("x", "http://10.0.0.1:8080/toolgate").expect("valid"),
            "http://10.0.0.1:8080/toolgate"
        );
        for bad in [
            "gw.example.com",
            "ftp://gw",
            "https://",
            "https://a?b=1",
            "https:///x",
        ] {
            assert!(public_url("x", bad).is_err(), "{bad}");
        }
        assert!(origins_list("x", vec!["https://app.example.com".into()]).is_ok());
        assert!(origins_list("x", vec!["app.example.com".into()]).is_err());
        assert!(origins_list("x", vec!["https://a/b".into()]).is_err());
    }

    #[test]
    fn layers_overlay_and_default() {
        let low = McpLayer {
            page_size: Some(10),
            list_ttl_ms: Some(0),
            ..McpLayer::default()
        };
        let high = McpLayer {
            page_size: Some(20),
            ..McpLayer::default()
        };
        let settings = low.overlaid_by(high).settings();
        assert_eq!(settings.page_size, 20);
        assert_eq!(
            settings.list_ttl,
            Duration::ZERO,
            "0 turns list caching off"
        );
        assert_eq!(settings.sessions, McpSettings::default().sessions);
    }
}
