//! What an agent asks of the gateway, whatever the transport: its manifest (plain, compressed
//! or explained), a live stream of it, the MCP listing and calls, a delegated token. Each use
//! case charges the caller's budget of its class, then applies the read rules, then asks the
//! services: a transport maps its wire onto one call here and the answer back.

use std::sync::Arc;

use bytes::Bytes;

use super::App;
use super::runs::RunSurface;
use crate::cache::{Coding, RenderedManifest};
use crate::domain::explain::Explanation;
use crate::domain::manifest::{Manifest, ManifestOptions};
use crate::service::delegation::{ExchangeError, ExchangeRequest, Issued};
use crate::service::limits::{Limited, RouteClass};
use crate::service::mcp::{BadCursor, Refused, ToolsPage};
use crate::service::{Caller, ReadRequest, Refusal};
use crate::stream::{OpenError, Opened, StreamClass};
use crate::upstream::CallResult;

/// Why a use case refused before doing any work: the caller's budget of its class is spent, or
/// the read rules refuse what it asked.
#[derive(Debug, thiserror::Error)]
pub enum Denied {
    #[error(transparent)]
    Limited(#[from] Limited),
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// Bodies smaller than this are served as they are: compressing them saves next to nothing.
const COMPRESS_FROM: usize = 1024;

/// A manifest as served: its bytes (in one of the codings asked for, when large enough) and
/// entity tag.
pub enum Served {
    /// The cached rendering, and its `coding` form when one was chosen.
    Rendered {
        rendered: Arc<RenderedManifest>,
        coded: Option<(Coding, Bytes)>,
    },
    /// The manifest with its explanation (`explain=true`), made for this request only.
    Explained { body: Bytes, etag: String },
}

impl Served {
    /// The body, as up to two shared chunks.
    pub fn parts(&self) -> [Bytes; 2] {
        match self {
            Served::Rendered {
                coded: Some((_, coded)),
                ..
            } => [coded.clone(), Bytes::new()],
            Served::Rendered { rendered, .. } => rendered.parts(),
            Served::Explained { body, .. } => [body.clone(), Bytes::new()],
        }
    }

    /// The entity tag of the content (before any content coding).
    pub fn etag(&self) -> &str {
        match self {
            Served::Rendered { rendered, .. } => &rendered.etag,
            Served::Explained { etag, .. } => etag,
        }
    }

    /// The content coding of [`Served::parts`], if any.
    pub fn coding(&self) -> Option<Coding> {
        match self {
            Served::Rendered {
                coded: Some((coding, _)),
                ..
            } => Some(*coding),
            _ => None,
        }
    }
}

impl App {
    /// `caller`'s manifest for `read` (an agent read): from the caches on a hit, in the first of
    /// `codings` this gateway serves when it is large enough to be worth compressing.
    pub async fn manifest(
        &self,
        caller: &Caller,
        read: ReadRequest,
        codings: impl IntoIterator<Item = Coding>,
    ) -> Result<Served, Denied> {
        self.limits.charge(RouteClass::AgentReads, caller)?;
        read.authorize(caller)?;
        let mut read = read;
        read.options = App::run_options(caller, read.options, RunSurface::CurrentState);
        let snapshot = self.catalog.snapshot();
        if read.explain {
            let explained = snapshot.explain(caller.claims(), &read.options);
            return Ok(Served::Explained {
                body: with_explanation(&explained.manifest, &explained.explanation),
                etag: explained.manifest.etag().to_owned(),
            });
        }
        let claims = caller.claims();
        let key = self.manifests.key(&snapshot, claims, read.options);
        let rendered = self.manifests.resolve(&snapshot, claims, key).await;
        drop(snapshot);
        if rendered.len() >= COMPRESS_FROM {
            for coding in codings {
                if let Some(coded) = compressed(&rendered, coding).await {
                    return Ok(Served::Rendered {
                        rendered,
                        coded: Some((coding, coded)),
                    });
                }
            }
        }
        Ok(Served::Rendered {
            rendered,
            coded: None,
        })
    }

    /// A live stream of `caller`'s manifest for `read` (SSE or MCP notifications): the
    /// `streams` budget, the read rules and the per-subject stream cap, then the subscription.
    /// In a run, its tools as `surface` shows them (a transition moves the stream then).
    pub async fn open_stream(
        &self,
        caller: &Caller,
        read: &ReadRequest,
        class: StreamClass,
        surface: RunSurface,
    ) -> Result<Opened, OpenError> {
        let now = self.clock.unix_now();
        if caller.run().is_some() {
            let mut read = read.clone();
            read.options = App::run_options(caller, read.options, surface);
            return crate::stream::open(&self.hub, &self.limits, (caller, now), &read, class).await;
        }
        crate::stream::open(&self.hub, &self.limits, (caller, now), read, class).await
    }

    /// One page of MCP `tools/list` for `caller` (an agent read); in a run, its tools as
    /// `surface` shows them.
    pub fn mcp_list(
        &self,
        caller: &Caller,
        options: ManifestOptions,
        cursor: Option<&str>,
        surface: RunSurface,
    ) -> Result<Result<ToolsPage, BadCursor>, Denied> {
        self.limits.charge(RouteClass::AgentReads, caller)?;
        let mut read = ReadRequest::of(options);
        read.authorize(caller)?;
        read.options = App::run_options(caller, read.options, surface);
        let snapshot = self.catalog.snapshot();
        Ok(self
            .mcp_tools
            .list(&snapshot, caller.claims(), read.options, cursor))
    }

    /// MCP `tools/call` by `caller` (a tool call): decided by the same evaluation as its
    /// listing, checked against the approved schema, then forwarded.
    pub async fn mcp_call(
        &self,
        caller: &Caller,
        options: ManifestOptions,
        name: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Result<CallResult, Refused>, Denied> {
        self.limits.charge(RouteClass::ToolCalls, caller)?;
        let read = ReadRequest::of(options);
        read.authorize(caller)?;
        if caller.run().is_some() {
            let options = App::run_options(caller, read.options, RunSurface::EveryState);
            return Ok(self.run_call(caller, options, name, arguments).await);
        }
        let snapshot = self.catalog.snapshot();
        Ok(self
            .mcp_tools
            .call(&snapshot, caller, &read.options, name, arguments)
            .await)
    }

    /// A delegated token for `subject` (RFC 8693 token exchange, an agent read): narrower than
    /// the subject's own grants, never wider.
    pub fn exchange(
        &self,
        subject: &Caller,
        request: &ExchangeRequest,
    ) -> Result<Result<Issued, ExchangeError>, Limited> {
        self.limits.charge(RouteClass::AgentReads, subject)?;
        // A delegated token acts in no run: exchanging a run token would leave the run's
        // pinned set, state and budget behind. A sub-agent of a run is a child run.
        if let Some(run) = subject.run() {
            return Ok(Err(ExchangeError::InvalidRequest(format!(
                "the subject token acts in run {}; a run token is not exchanged: start a \
                 child run with POST /runs and this token instead",
                run.id
            ))));
        }
        let snapshot = self.catalog.snapshot();
        Ok(self.delegations.exchange(&snapshot, subject, request))
    }

    /// The public keys of toolgate's delegated tokens, as JWKs.
    pub fn delegation_keys(&self) -> Vec<serde_json::Value> {
        self.delegations
            .keys()
            .issuer()
            .keys()
            .iter()
            .map(|key| key.jwk.clone())
            .collect()
    }
}

/// The manifest's `coding` form: made once per rendered manifest, off the I/O threads
/// (compressing megabytes takes tens of milliseconds), then kept beside the plain bytes.
async fn compressed(rendered: &Arc<RenderedManifest>, coding: Coding) -> Option<Bytes> {
    if let Some(made) = rendered.compressed_if_made(coding) {
        return made;
    }
    let rendered = Arc::clone(rendered);
    tokio::task::spawn_blocking(move || rendered.compressed(coding))
        .await
        .ok()
        .flatten()
}

/// A manifest body followed by `"explanation": …` (`GET /agents/tools?explain=true`, `POST
/// /admin/preview`).
pub fn with_explanation(manifest: &Manifest<'_>, explanation: &Explanation) -> Bytes {
    let mut body = Vec::with_capacity(manifest.estimated_json_len() + 1024);
    body.push(b'{');
    manifest.write_members(&mut body);
    body.extend_from_slice(b",\"explanation\":");
    // An explanation is plain structs, strings and numbers: serialising it into memory
    // cannot fail; were it to, the member is null rather than a broken document.
    let at = body.len();
    if serde_json::to_writer(&mut body, explanation).is_err() {
        body.truncate(at);
        body.extend_from_slice(b"null");
    }
    body.push(b'}');
    body.into()
}
