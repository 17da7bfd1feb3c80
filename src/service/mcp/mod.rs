//! What the MCP endpoint reads (docs/api.md, "MCP endpoint"): a caller's `tools/list` pages and the
//! call-time decision of `tools/call`, both from the evaluation the decision endpoints use
//! ([`Decisions::listing`]), so that the MCP list, the REST manifest and every decision agree
//! at each revision.
//!
//! A page is the concatenation of the revision's pre-serialised MCP tool objects
//! ([`McpCatalog::page`]) over the tools the evaluation lists: no per-request serialisation of
//! tools. Pages are kept per (access decision, options, cursor) within a revision, bounded in
//! bytes like rendered manifests, so a repeated `tools/list` costs what a repeated
//! `GET /agents/tools` does: a claims key, two lookups and a clone of shared bytes. What a page
//! holds does not depend on the protocol revision (only the fields around it do), so the 2025
//! and 2026 revisions share pages. The cursor is opaque to clients: it names the last tool of
//! the previous page (by id), so it survives catalog changes between pages the way a keyset
//! cursor does.

mod settings;

pub use settings::{McpSettings, SessionLimits};

use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;

use super::Caller;
use super::decisions::Decisions;
use super::manifests::Manifests;
use crate::cache::{CacheStats, RevisionCache};
use crate::domain::access::Decided;
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::domain::mcp::{McpCatalog, Named};
use crate::domain::snapshot::Snapshot;
use crate::domain::source_config::UpstreamAuth;
use crate::upstream::{ArgumentError, CallResult, OnBehalf, Upstream};

/// What prefixes a cursor's tool id, so that a cursor of another kind is refused.
const CURSOR_PREFIX: &str = "after:";

/// A cursor that is not one this server gave out.
#[derive(Debug, thiserror::Error)]
#[error("the cursor is not one this server gave out; list again without one")]
pub struct BadCursor;

/// One page of `tools/list`, as served and as kept.
#[derive(Debug, Clone)]
pub struct ToolsPage {
    /// A JSON array of MCP `Tool` objects (shared with the page cache: not copied).
    pub tools: Bytes,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<Box<str>>,
    /// The revision the page was read at.
    pub revision: u64,
}

/// What identifies a page within a revision: whose decision, which options, after which tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PageKey {
    decided: Decided,
    after: Option<Box<str>>,
}

/// Why a `tools/call` was not forwarded.
#[derive(Debug)]
pub enum Refused {
    /// Not in the caller's manifest now, or no such tool: the two are not told apart.
    UnknownTool,
    /// The arguments do not fit the tool's input schema.
    InvalidArguments(ArgumentError),
    /// A run rule refused it (docs/runs.md): told to the agent as a tool error.
    Run(crate::service::runs::RunRefusal),
    /// The run store did not answer: nothing was sent.
    RunUnavailable,
}

/// Lists, decides and calls for MCP callers.
pub struct McpTools {
    decisions: Arc<Decisions>,
    manifests: Arc<Manifests>,
    upstream: Arc<Upstream>,
    page_size: usize,
    /// The names and objects of the latest revision served.
    catalog: Mutex<Option<Arc<McpCatalog>>>,
    /// Pages served at the latest revision.
    pages: RevisionCache<PageKey, Arc<ToolsPage>>,
}

impl McpTools {
    /// Pages hold at most `page_size` tools (at least 1) and those kept at most `page_bytes`
    /// bytes together; calls go through `upstream`.
    pub fn new(
        decisions: Arc<Decisions>,
        manifests: Arc<Manifests>,
        upstream: Arc<Upstream>,
        page_size: usize,
        page_bytes: usize,
    ) -> McpTools {
        McpTools {
            decisions,
            manifests,
            upstream,
            page_size: page_size.max(1),
            catalog: Mutex::new(None),
            pages: RevisionCache::new(page_bytes, |key, page| {
                size_of::<PageKey>()
                    + key.decided.heap_bytes()
                    + key.after.as_ref().map_or(0, |after| after.len())
                    + size_of::<ToolsPage>()
                    + page.tools.len()
                    + page.next_cursor.as_ref().map_or(0, |next| next.len())
            }),
        }
    }

    /// Counters of the pages kept (for metrics and tests).
    pub fn page_stats(&self) -> CacheStats {
        self.pages.stats()
    }

    /// The MCP names and objects of `snapshot`, built once per revision (names for 10,000
    /// tools take milliseconds; objects are serialised as pages need them).
    fn catalog(&self, snapshot: &Snapshot) -> Arc<McpCatalog> {
        let lock = || self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(catalog) = lock().as_ref()
            && catalog.revision() == snapshot.revision()
        {
            return Arc::clone(catalog);
        }
        let built = Arc::new(McpCatalog::of(snapshot));
        let mut current = lock();
        // Keep the newer of what is there and what was built (another request may have moved on).
        if current
            .as_ref()
            .is_none_or(|kept| kept.revision() < built.revision())
        {
            *current = Some(Arc::clone(&built));
        }
        built
    }

    /// The page of the manifest of (`claims`, `options`) at `snapshot` that `cursor` points to
    /// (the first page without one). Whether the caller may use `options` (admin-only
    /// `include_disabled`) is checked before. The claims are remembered for impact previews as
    /// a manifest request's are.
    pub fn list(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        options: ManifestOptions,
        cursor: Option<&str>,
    ) -> Result<ToolsPage, BadCursor> {
        let after = cursor.map(decode_cursor).transpose()?;
        let key = self.manifests.key(snapshot, claims, options);
        self.manifests.seen().record(
            &key.fingerprint,
            claims,
            snapshot.read_paths(),
            self.manifests.now(),
        );
        let matched = self
            .manifests
            .access()
            .matched(snapshot, &key.fingerprint, claims);
        let key = PageKey {
            decided: Decided {
                matched,
                options: key.options,
            },
            after: after.map(String::into_boxed_str),
        };
        let revision = snapshot.revision();
        let page = match self.pages.get(&key, revision) {
            Some(page) => page,
            None => {
                let page = Arc::new(self.page(snapshot, &key, claims));
                // A decision of another revision (never, as both come from `snapshot`) keys
                // nothing.
                if key.decided.matched.revision() == revision {
                    self.pages.insert_at(key, revision, Arc::clone(&page));
                }
                page
            }
        };
        Ok(ToolsPage::clone(&page))
    }

    /// The page `key` names, made now.
    fn page(&self, snapshot: &Snapshot, key: &PageKey, claims: &Claims) -> ToolsPage {
        let evaluation = self.decisions.listing_of(snapshot, &key.decided, claims);
        let catalog = self.catalog(snapshot);
        let page = catalog.page(snapshot, &evaluation, key.after.as_deref(), self.page_size);
        ToolsPage {
            next_cursor: page
                .next_after
                .map(|after| encode_cursor(after).into_boxed_str()),
            tools: Bytes::from(page.tools),
            revision: snapshot.revision(),
        }
    }

    /// The tool named `name` if the caller may call it now: it is in the caller's manifest
    /// for `options` at `snapshot` (hidden tools never, even for an admin's preview). `None`
    /// says nothing about whether such a tool exists.
    pub fn callable<'s>(
        &self,
        snapshot: &'s Snapshot,
        claims: &Claims,
        options: &ManifestOptions,
        name: &str,
    ) -> Option<Named<'s>> {
        let named = self.catalog(snapshot).tool(snapshot, name)?;
        let options = ManifestOptions {
            include_disabled: false,
            ..options.clone()
        };
        let evaluation = self.decisions.listing(snapshot, claims, options);
        snapshot.lists(&evaluation, named.tool_id).then_some(named)
    }
}

/// A call decided and checked, ready to forward.
pub struct Prepared<'s> {
    pub named: Named<'s>,
    source: &'s crate::domain::model::Source,
    settings: Arc<crate::domain::source_config::CallSettings>,
}

impl McpTools {
    /// The tool named `name` if the caller may call it now ([`McpTools::callable`]), with
    /// `arguments` that fit its input schema and a source to send it to.
    pub fn prepare<'s>(
        &self,
        snapshot: &'s Snapshot,
        caller: &Caller,
        options: &ManifestOptions,
        name: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Prepared<'s>, Refused> {
        let named = self
            .callable(snapshot, caller.claims(), options, name)
            .ok_or(Refused::UnknownTool)?;
        self.upstream
            .check_arguments(named.tool, arguments)
            .map_err(Refused::InvalidArguments)?;
        // A listed tool's source exists and is enabled (visibility); without one, fail closed.
        let (source, settings) = snapshot
            .call_settings(&named.tool.source_id)
            .ok_or(Refused::UnknownTool)?;
        Ok(Prepared {
            named,
            source,
            settings,
        })
    }

    /// Sends a prepared call to its upstream. Upstream failures are in the result
    /// (`isError`), not refusals.
    pub async fn forward(
        &self,
        prepared: &Prepared<'_>,
        caller: &Caller,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> CallResult {
        let settings = &prepared.settings;
        // Only a token exchange needs to know who the caller is (its cache key, its upstream
        // session): a call of any other source pays nothing for it.
        let identity =
            matches!(settings.auth, UpstreamAuth::TokenExchange(_)).then(|| caller.identity());
        let on_behalf = OnBehalf {
            identity: identity.as_deref().unwrap_or_default(),
            token: caller.token_text(),
            expires_at: caller.expires_at(),
        };
        self.upstream
            .call_for(
                (prepared.source, settings),
                prepared.named.tool,
                arguments,
                Some(on_behalf),
            )
            .await
    }

    /// `tools/call`: [`McpTools::prepare`], then [`McpTools::forward`].
    pub async fn call(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        options: &ManifestOptions,
        name: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallResult, Refused> {
        let prepared = self.prepare(snapshot, caller, options, name, arguments)?;
        Ok(self.forward(&prepared, caller, arguments).await)
    }
}

fn encode_cursor(after: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{after}"))
}

fn decode_cursor(cursor: &str) -> Result<String, BadCursor> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| BadCursor)?;
    let text = String::from_utf8(bytes).map_err(|_| BadCursor)?;
    text.strip_prefix(CURSOR_PREFIX)
        .map(str::to_owned)
        .ok_or(BadCursor)
}

/// Pages and the MCP catalog are kept for the latest revision and never carried: nothing to do
/// when a snapshot continues the last, and everything to drop when the revisions went back.
impl super::catalog::CarryOver for McpTools {
    fn carry(&self, _continuity: &crate::domain::continuity::Continuity) {}

    fn restart(&self) {
        self.pages.reset();
        *self.catalog.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        for id in ["billing:list", "", "ünï/☃"] {
            assert_eq!(
                decode_cursor(&encode_cursor(id)).expect("ours").as_str(),
                id
            );
        }
        for bad in ["", "!!", "YWJj", &URL_SAFE_NO_PAD.encode([0xff, 0xfe])] {
            assert!(decode_cursor(bad).is_err(), "{bad:?}");
        }
    }
}
