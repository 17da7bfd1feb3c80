//! Middleware that records every answered request in `http.server.request.duration`, labelled
//! by method, matched route template (never the raw path) and status.
//!
//! Hand-written rather than `axum::middleware::from_fn` so that the request path gains no boxed
//! future: one clock read before, one after, one histogram record.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::MatchedPath;
use axum::http::{Method, Request, Response};
use tower::{Layer, Service};

use crate::telemetry::Metrics;

/// Wraps the router's services in [`RecordRequests`].
#[derive(Clone)]
pub(super) struct RecordRequestsLayer {
    metrics: Arc<Metrics>,
}

impl RecordRequestsLayer {
    pub(super) fn new(metrics: Arc<Metrics>) -> Self {
        RecordRequestsLayer { metrics }
    }
}

impl<S> Layer<S> for RecordRequestsLayer {
    type Service = RecordRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RecordRequests {
            inner,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub(super) struct RecordRequests<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, R> Service<Request<B>> for RecordRequests<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Recorded<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // Routing ran before this layer (it wraps each route), so the template is known here.
        let route = request.extensions().get::<MatchedPath>().cloned();
        let method = request.method().clone();
        Recorded {
            inner: self.inner.call(request),
            started: Instant::now(),
            metrics: Arc::clone(&self.metrics),
            method,
            route,
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner response future; records the request when it yields a response.
    pub struct Recorded<F> {
        #[pin]
        inner: F,
        started: Instant,
        metrics: Arc<Metrics>,
        method: Method,
        route: Option<MatchedPath>,
    }
}

impl<F, R, E> Future for Recorded<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let output = std::task::ready!(this.inner.poll(cx));
        if let Ok(response) = &output {
            this.metrics.http_request(
                this.method,
                this.route.as_ref().map(MatchedPath::as_str),
                response.status(),
                this.started.elapsed(),
            );
        }
        Poll::Ready(output)
    }
}
