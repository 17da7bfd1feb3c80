//! Opening a stream of a caller's manifest, once for every transport: the SSE stream
//! (`GET /agents/tools/stream`), the MCP `GET /mcp` stream and `subscriptions/listen` all come
//! through [`open`], which charges the caller's stream budget, applies the read rules, joins
//! the hub, renders the first manifest and builds the closure that renders it again when the
//! stream has to resynchronise. The transports only frame what comes out.

use std::sync::Arc;

use super::connection::Render;
use super::hub::{StreamClass, StreamHub, SubscribeError, Subscription};
use crate::cache::RenderedManifest;
use crate::service::limits::{Limited, Limiters, RouteClass};
use crate::service::{Caller, ReadRequest, Refusal};

/// An open stream, before a transport frames it.
pub struct Opened {
    /// The stream's place in the hub (dropping it leaves the hub).
    pub subscription: Subscription,
    /// The caller's manifest at the snapshot the subscription joined at: every later change
    /// reaches the stream as an event.
    pub rendered: Arc<RenderedManifest>,
    /// Renders the caller's manifest at the then current snapshot (after lagging).
    pub render: Render,
    /// When the caller's token expires, by the clock `open` was given the time of.
    pub expiry: Option<super::Expiry>,
}

/// Why a stream was not opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The caller opened streams faster than its budget allows.
    #[error(transparent)]
    Limited(Limited),
    /// The caller may not read what it asked for.
    #[error(transparent)]
    Refused(Refusal),
    /// A stream carries manifests only; explanations are a one-off read.
    #[error("explain is not available on the stream; use GET /agents/tools?explain=true")]
    Explain,
    /// Too many open streams, or shutting down.
    #[error(transparent)]
    Subscribe(SubscribeError),
}

/// Opens a stream of class `class` of `caller`'s manifest for `read`, at unix time `now` (the
/// App's clock: what the caller's token expiry is counted from).
pub async fn open(
    hub: &Arc<StreamHub>,
    limits: &Limiters,
    (caller, now): (&Caller, i64),
    read: &ReadRequest,
    class: StreamClass,
) -> Result<Opened, OpenError> {
    limits
        .charge(RouteClass::Streams, caller)
        .map_err(OpenError::Limited)?;
    read.authorize(caller).map_err(OpenError::Refused)?;
    if read.explain {
        return Err(OpenError::Explain);
    }
    let (subscription, snapshot, key) = hub
        .subscribe(
            class,
            caller.sub(),
            caller.shared_claims(),
            read.options.clone(),
        )
        .map_err(OpenError::Subscribe)?;
    let manifests = hub.manifests();
    let rendered = manifests.resolve(&snapshot, caller.claims(), key).await;
    drop(snapshot); // an idle stream must not pin an old snapshot
    // A resynchronising stream renders its own manifest at the then current snapshot, through
    // the manifest service.
    let claims = Arc::clone(&subscription.claims);
    let catalog = Arc::clone(hub.catalog());
    let manifests = Arc::clone(manifests);
    let options = read.options.clone();
    // A run's state moves a stream to other options (`StreamHub::run_moved`): read them then.
    let (member, hub_of_render) = (subscription.id(), Arc::downgrade(hub));
    let render: Render = Box::new(move || {
        let options = hub_of_render
            .upgrade()
            .and_then(|hub| hub.options_of(member))
            .unwrap_or_else(|| options.clone());
        manifests.resolve_local(&catalog.snapshot(), &claims, options)
    });
    Ok(Opened {
        subscription,
        rendered,
        render,
        expiry: super::Expiry::of(caller.expires_at(), now),
    })
}
