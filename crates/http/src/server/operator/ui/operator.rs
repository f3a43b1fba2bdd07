//! The admin token on the page's JSON: a request that carries `ADMIN_TOKEN` as `Authorization:
//! Bearer` (checked in constant time by [`admin::presents_token`], the admin routes' own check) is
//! the operator's — it goes past the gate (it is no client: no key, no rate limit) marked
//! [`AsOperator`], and [`super::api`] shows it every client's data. Every other request goes
//! through the gate as before.
//!
//! A layer around each JSON route (inside the router's routing, so the route's path parameters are
//! read once), holding the route twice: behind the gate, and bare.

use std::convert::Infallible;
use std::task::{ready, Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures::future::Either;
use tower_layer::Layer;
use tower_service::Service;

use crate::server::kit::gate::{Admit, GateLayer, Refusals};
use crate::server::operator::admin;
use crate::settings::access::AdminToken;

/// The mark on a request the admin token reads the JSON with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AsOperator;

/// The gate, with the admin token let past it.
#[derive(Debug, Clone)]
pub(crate) struct OperatorOrGate<R> {
    token: AdminToken,
    gate: GateLayer<R>,
}

impl<R> OperatorOrGate<R> {
    /// `gate` for everyone but the holder of `token`.
    pub(crate) fn new(token: AdminToken, gate: GateLayer<R>) -> Self {
        Self { token, gate }
    }
}

impl<S: Clone, R: Refusals> Layer<S> for OperatorOrGate<R> {
    type Service = OperatorOrGateService<S, R>;

    fn layer(&self, route: S) -> Self::Service {
        OperatorOrGateService {
            token: self.token.clone(),
            gated: self.gate.layer(route.clone()),
            bare: route,
        }
    }
}

/// [`OperatorOrGate`]'s service: one route, behind the gate and bare.
#[derive(Debug, Clone)]
pub(crate) struct OperatorOrGateService<S, R> {
    token: AdminToken,
    gated: Admit<S, R>,
    bare: S,
}

impl<S, R> Service<Request> for OperatorOrGateService<S, R>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: Refusals,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, <Admit<S, R> as Service<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        ready!(self.bare.poll_ready(cx))?;
        self.gated.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if admin::presents_token(request.headers(), &self.token) {
            request.extensions_mut().insert(AsOperator);
            Either::Left(self.bare.call(request))
        } else {
            Either::Right(self.gated.call(request))
        }
    }
}
