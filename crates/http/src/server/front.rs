//! The front of every request: `GET /search` — the request a cache hit answers, the one the
//! gateway serves most — goes straight to its own stack ([`searxng::SearchStack`]: the request
//! ID, the gate, the `search` span and the handler, the same layers the router puts on that
//! route), everything else through axum's router.
//!
//! Why a door before the router: on a hit, the router's route lookup, its boxed route's clone and
//! future, and the extractors (the admitted caller cloned out of the request, the query string
//! copied, the index put on every request of the SearXNG routes) were ≈ 8 % of the gateway's CPU
//! (BENCHMARKS.md, "Where a cache hit's CPU goes"). The stack takes the caller out of the request
//! and reads the query where it is. A `GET /search` never reaches the router, so the two cannot
//! disagree; the router keeps the route for `POST /search`.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Method, Request};
use axum::response::Response;
use axum::routing::future::RouteFuture;
use axum::Router;
use futures::future::Either;
use tower_service::Service;

use crate::server::surfaces::searxng::{self, SearchStack};
use crate::server::transport::unread_body::WatchedBody;

/// The router, with `GET /search` taken before it.
#[derive(Clone)]
pub(crate) struct Front {
    router: Router,
    search: SearchStack,
}

impl Front {
    pub(crate) fn new(router: Router, search: SearchStack) -> Self {
        Self { router, search }
    }
}

impl Service<Request<WatchedBody>> for Front {
    type Response = Response;
    type Error = Infallible;
    type Future =
        Either<<SearchStack as Service<axum::extract::Request>>::Future, RouteFuture<Infallible>>;

    /// Always ready: the router is, and so is every layer of the search stack (none holds back a
    /// request; admission and shedding answer, they do not wait here).
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<WatchedBody>) -> Self::Future {
        if request.method() == Method::GET && request.uri().path() == searxng::SEARCH_PATH {
            Either::Left(self.search.call(request.map(Body::new)))
        } else {
            Either::Right(self.router.call(request))
        }
    }
}
