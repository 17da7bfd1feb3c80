//! The byte budgets of the in-process caches as one source gives them: `[cache]` in the file,
//! `TOOLGATE_CACHE_*` in the environment.

use serde::Deserialize;

use super::number;
use super::{ConfigError, Environment};
use crate::cache::CacheBudgets;

/// The environment variables read here.
pub(super) const VARIABLES: [&str; 6] = [
    "TOOLGATE_CACHE_MANIFEST_BYTES",
    "TOOLGATE_CACHE_MCP_PAGE_BYTES",
    "TOOLGATE_CACHE_ACCESS_BYTES",
    "TOOLGATE_CACHE_EVALUATION_BYTES",
    "TOOLGATE_CACHE_STREAM_QUEUE_BYTES",
    "TOOLGATE_CACHE_STREAM_TOTAL_BYTES",
];

/// `[cache]` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CacheSection {
    manifest_bytes: Option<u64>,
    mcp_page_bytes: Option<u64>,
    access_bytes: Option<u64>,
    evaluation_bytes: Option<u64>,
    stream_queue_bytes: Option<u64>,
    stream_total_bytes: Option<u64>,
}

/// The budgets one source gives; `None`: it does not say. 0 is allowed for the caches (nothing
/// is kept), not for a stream's queue.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct CacheLayer {
    manifest_bytes: Option<u64>,
    mcp_page_bytes: Option<u64>,
    access_bytes: Option<u64>,
    evaluation_bytes: Option<u64>,
    stream_queue_bytes: Option<u64>,
    stream_total_bytes: Option<u64>,
}

impl CacheLayer {
    pub(super) fn from_file(section: CacheSection, place: &str) -> Result<CacheLayer, ConfigError> {
        Ok(CacheLayer {
            manifest_bytes: section.manifest_bytes,
            mcp_page_bytes: section.mcp_page_bytes,
            access_bytes: section.access_bytes,
            evaluation_bytes: section.evaluation_bytes,
            stream_queue_bytes: section
                .stream_queue_bytes
                .map(|v| number::at_least_one(&format!("cache.stream_queue_bytes{place}"), v))
                .transpose()?,
            stream_total_bytes: section
                .stream_total_bytes
                .map(|v| number::at_least_one(&format!("cache.stream_total_bytes{place}"), v))
                .transpose()?,
        })
    }

    pub(super) fn from_env(env: &Environment) -> Result<CacheLayer, ConfigError> {
        let number = |name: &str| env.get(name).map(|t| number::integer(name, t)).transpose();
        Ok(CacheLayer {
            manifest_bytes: number("TOOLGATE_CACHE_MANIFEST_BYTES")?,
            mcp_page_bytes: number("TOOLGATE_CACHE_MCP_PAGE_BYTES")?,
            access_bytes: number("TOOLGATE_CACHE_ACCESS_BYTES")?,
            evaluation_bytes: number("TOOLGATE_CACHE_EVALUATION_BYTES")?,
            stream_queue_bytes: number("TOOLGATE_CACHE_STREAM_QUEUE_BYTES")?
                .map(|v| number::at_least_one("TOOLGATE_CACHE_STREAM_QUEUE_BYTES", v))
                .transpose()?,
            stream_total_bytes: number("TOOLGATE_CACHE_STREAM_TOTAL_BYTES")?
                .map(|v| number::at_least_one("TOOLGATE_CACHE_STREAM_TOTAL_BYTES", v))
                .transpose()?,
        })
    }

    /// `higher` on top of `self`.
    pub(super) fn overlaid_by(self, higher: CacheLayer) -> CacheLayer {
        CacheLayer {
            manifest_bytes: higher.manifest_bytes.or(self.manifest_bytes),
            mcp_page_bytes: higher.mcp_page_bytes.or(self.mcp_page_bytes),
            access_bytes: higher.access_bytes.or(self.access_bytes),
            evaluation_bytes: higher.evaluation_bytes.or(self.evaluation_bytes),
            stream_queue_bytes: higher.stream_queue_bytes.or(self.stream_queue_bytes),
            stream_total_bytes: higher.stream_total_bytes.or(self.stream_total_bytes),
        }
    }

    /// The budgets, defaults where no source said.
    pub(super) fn budgets(self) -> CacheBudgets {
        let defaults = CacheBudgets::default();
        let bytes = |value: Option<u64>, default: usize| {
            value.map_or(default, |v| usize::try_from(v).unwrap_or(usize::MAX))
        };
        CacheBudgets {
            manifest_bytes: bytes(self.manifest_bytes, defaults.manifest_bytes),
            mcp_page_bytes: bytes(self.mcp_page_bytes, defaults.mcp_page_bytes),
            access_bytes: bytes(self.access_bytes, defaults.access_bytes),
            evaluation_bytes: bytes(self.evaluation_bytes, defaults.evaluation_bytes),
            stream_queue_bytes: bytes(self.stream_queue_bytes, defaults.stream_queue_bytes),
            stream_total_bytes: bytes(self.stream_total_bytes, defaults.stream_total_bytes),
        }
    }
}
