//! The inbound-key check, in front of every search surface and `/status`: a layer each surface's
//! router puts on itself ([`Gate::layer`]), parameterised by the surface's own [`Refusals`] — how
//! it answers a refused caller, and whether its key may ride in a POST body. This module knows no
//! surface: a new one implements [`Refusals`] and layers its routes, and is covered.
//! `/healthz`, `/readyz` and the metrics path stay outside it.
//!
//! A key is taken from `Authorization: Bearer KEY`, then `X-API-Key: KEY`, then an `api_key`
//! query parameter, then (a POST to a surface whose [`Refusals::KEY_IN_BODY`] says so, when keys
//! are required) `api_key` in a form or JSON body. The key is checked by
//! [`Clients::authenticate`] (SHA-256, constant-time comparison) and never logged; the surfaces'
//! parsers ignore `api_key`, so it never reaches SearXNG or a cache key. Then the caller's token
//! bucket is asked ([`Clients::admit`]).
//!
//! 401 carries `WWW-Authenticate: Bearer`, 429 `Retry-After` in whole seconds (each surface's
//! renderer keeps these). The admitted caller goes to the handlers as an [`Admitted`] request
//! extension, with whether its premium budget allows premium calls; a spent budget is said on the
//! response as `X-Gateway-Premium: budget_spent`.
//!
//! The layer is a hand-made `tower` service ([`Admit`]), not `axum::middleware::from_fn`, so the
//! common case (a key in the head, or none needed) adds no allocation per request; only a request
//! whose key may be in its body is handled by a boxed future, which reads the body first.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::response::Response;
use futures::future::BoxFuture;
use serde_json::Value;
use tower_layer::Layer;
use tower_service::Service;

use crate::clients::budget::Exhausted;
use crate::clients::end_users::EndUser;
use crate::clients::rate_limit::RateLimited;
use crate::clients::{Caller, Clients, Unauthorized};
use crate::gateway::Gateway;
use crate::oauth::Authorization;
use crate::server::kit::body::{self, BodyError};
use crate::server::kit::recent_searches::RecentSearches;
use crate::server::transport::request_id::RequestId;
use crate::settings::limits::ServerLimits;
use gateway_engine::search::Premium;

/// The query and form parameter that may carry a key.
pub(crate) const KEY_PARAMETER: &str = "api_key";

/// The caller a request was admitted as, and the clients it is accounted to.
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    pub(crate) caller: Caller,
    pub(crate) clients: Clients,
    /// Whether the caller's premium budget allows premium calls, decided at admission.
    pub(crate) premium: Premium,
    /// Why not, when it does not.
    pub(crate) refusal: Option<PremiumRefusal>,
    /// The request's ID ([`crate::server::transport::request_id`]).
    pub(crate) request_id: RequestId,
    /// Where its searches are listed for the operator's page; `None` without the page.
    pub(crate) recent: Option<RecentSearches>,
}

impl Admitted {
    /// A caller on a local transport (MCP on stdio), with no request ID.
    pub(crate) fn local(clients: &Clients, gateway: &Gateway) -> Self {
        let caller = clients.local();
        let refusal = premium_refusal(clients.premium_here(&caller), gateway);
        Self {
            premium: premium_of(refusal),
            refusal,
            caller,
            clients: clients.clone(),
            request_id: RequestId::none(),
            // A local transport is not watched from the page.
            recent: None,
        }
    }
}

/// Why a caller may not call premium APIs: its own budget (calls or dollars), or the gateway's
/// daily spend cap (`PREMIUM_USD_PER_DAY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PremiumRefusal {
    /// `PREMIUM_CALLS_PER_DAY` (or its line's) is spent.
    Calls,
    /// Its line's `USD_PER_DAY` is spent.
    Usd,
    /// `PREMIUM_USD_PER_DAY` is spent, for everyone.
    Global,
}

impl PremiumRefusal {
    /// `explain`'s `premium.reason`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::Calls => "budget_spent",
            Self::Usd => "usd_budget_spent",
            Self::Global => "global_budget_spent",
        }
    }

    /// The `X-Gateway-Premium` value.
    fn header(self) -> &'static str {
        match self {
            Self::Calls | Self::Usd => "budget_spent",
            Self::Global => "global_budget_spent",
        }
    }
}

/// Why the caller may not call premium APIs now, from its own budget's state and the gateway's.
fn premium_refusal(budget: Result<(), Exhausted>, gateway: &Gateway) -> Option<PremiumRefusal> {
    match budget {
        Err(Exhausted::Calls) => Some(PremiumRefusal::Calls),
        Err(Exhausted::Usd) => Some(PremiumRefusal::Usd),
        Ok(()) if gateway.premium_capped() => Some(PremiumRefusal::Global),
        Ok(()) => None,
    }
}

fn premium_of(refusal: Option<PremiumRefusal>) -> Premium {
    match refusal {
        None => Premium::Allowed,
        Some(_) => Premium::BudgetSpent,
    }
}

/// The response header that tells a client its premium budget (or the gateway's) is spent.
pub(crate) const PREMIUM_HEADER: &str = "x-gateway-premium";

/// Why a request is turned away before any search.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refused {
    Unauthorized(Unauthorized),
    RateLimited(RateLimited),
}

impl Refused {
    fn code(self) -> &'static str {
        match self {
            Self::Unauthorized(_) => "unauthorized",
            Self::RateLimited(_) => "rate_limited",
        }
    }
}

/// How one surface answers the gate: its own error shape for a refused caller and for a body the
/// gate could not read, and whether a POST to it may carry its key in the body.
pub(crate) trait Refusals: Clone + Send + Sync + 'static {
    /// A POST may carry `api_key` in a form or JSON body (read only when keys are required and
    /// the head has none).
    const KEY_IN_BODY: bool;

    /// The surface is MCP's protected resource: with `MCP_OAUTH`, its bearer may be an OAuth
    /// access token as well as a key, and one is required even on a gateway without keys.
    const OAUTH: bool = false;

    /// A refused caller, in the surface's shape (401 with `WWW-Authenticate: Bearer`, 429 with
    /// `Retry-After`).
    fn refused(&self, refused: Refused) -> Response;

    /// A body the gate could not read while looking for a key (too large, too slow, unreadable).
    fn unreadable(&self, err: BodyError) -> Response;

    /// The end user a request names, when this surface trusts it to (Open WebUI's user headers
    /// with `OPENWEBUI_USER_HEADER_TRUST`): the request is admitted and charged as that user, a
    /// sub-client of the key's client. None by default.
    fn end_user(&self, _headers: &HeaderMap) -> Option<EndUser> {
        None
    }
}

/// What callers are checked against. Each surface turns it into its own layer with
/// [`Gate::layer`].
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    pub(crate) clients: Clients,
    pub(crate) limits: ServerLimits,
    /// Asked whether the day's premium spend cap is reached.
    pub(crate) gateway: Gateway,
    /// The operator's page's list of searches, handed to every admitted request; `None` without
    /// the page.
    pub(crate) recent: Option<RecentSearches>,
    /// MCP's authorization (`MCP_OAUTH`), asked for the caller of an OAuth access token.
    pub(crate) oauth: Option<Authorization>,
}

impl Gate {
    /// The gate in front of a surface whose refusals `refusals` renders.
    pub(crate) fn layer<R: Refusals>(&self, refusals: R) -> GateLayer<R> {
        GateLayer {
            gate: self.clone(),
            refusals,
        }
    }
}

/// The layer in front of one surface.
#[derive(Debug, Clone)]
pub(crate) struct GateLayer<R> {
    gate: Gate,
    refusals: R,
}

impl<S, R: Refusals> Layer<S> for GateLayer<R> {
    type Service = Admit<S, R>;

    fn layer(&self, inner: S) -> Admit<S, R> {
        Admit {
            layer: self.clone(),
            inner,
        }
    }
}

/// [`GateLayer`]'s service.
#[derive(Debug, Clone)]
pub(crate) struct Admit<S, R> {
    layer: GateLayer<R>,
    inner: S,
}

impl<S, R> Service<Request> for Admit<S, R>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: Refusals,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Admission<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let gate = &self.layer.gate;
        let key = match key_in_head::<R>(gate, &request) {
            InHead::Found(key) => key,
            InHead::InBody => {
                // The service that was made ready goes with the future; a clone stays here.
                let ready = self.inner.clone();
                let inner = std::mem::replace(&mut self.inner, ready);
                return Admission::Body {
                    future: Box::pin(admit_after_body(self.layer.clone(), request, inner)),
                };
            }
        };
        if R::OAUTH && gate.oauth.is_some() {
            // A key or an access token (which may be in Redis): asked off the fast path.
            let ready = self.inner.clone();
            let inner = std::mem::replace(&mut self.inner, ready);
            return Admission::Body {
                future: Box::pin(admit_bearer(self.layer.clone(), key, request, inner)),
            };
        }
        if gate.clients.is_fleet_wide() {
            // Limits counted in Redis: admitting takes a round trip.
            let ready = self.inner.clone();
            let inner = std::mem::replace(&mut self.inner, ready);
            return Admission::Body {
                future: Box::pin(admit_then_call(self.layer.clone(), key, request, inner)),
            };
        }
        match gate.admit_here(key.as_deref(), &mut request, &self.layer.refusals) {
            Ok(refusal) => Admission::Admitted {
                future: self.inner.call(request),
                refusal,
            },
            Err(refused) => Admission::Refused {
                response: Some(self.layer.refusals.refused(refused)),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The response to a request at the gate.
    #[project = AdmissionProj]
    pub(crate) enum Admission<F> {
        /// Admitted: the surface's answer, marked when the premium budget is spent.
        Admitted { #[pin] future: F, refusal: Option<PremiumRefusal> },
        /// Turned away (taken once, when polled).
        Refused { response: Option<Response> },
        /// The key may be in the body: read it, then admit or refuse.
        Body { future: BoxFuture<'static, Response> },
    }
}

impl<F> Future for Admission<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = match self.project() {
            AdmissionProj::Admitted { future, refusal } => {
                let response = ready!(future.poll(cx))?;
                mark_budget(response, *refusal)
            }
            // A future is not polled again after it is ready: the response is always there.
            AdmissionProj::Refused { response } => response.take().unwrap_or_default(),
            AdmissionProj::Body { future } => ready!(future.as_mut().poll(cx)),
        };
        Poll::Ready(Ok(response))
    }
}

/// A request whose key may be in its body: the body is read (and put back), then the caller
/// admitted or refused.
async fn admit_after_body<S, R>(layer: GateLayer<R>, request: Request, inner: S) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
    R: Refusals,
{
    let (parts, body) = request.into_parts();
    let bytes = match body::read(&layer.gate.limits, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err(err) => return layer.refusals.unreadable(err),
    };
    let key = from_body(&parts.headers, &bytes);
    let request = Request::from_parts(parts, Body::from(bytes));
    admit_then_call(layer, key, request, inner).await
}

/// Admits the caller `key` names — fleet-wide when the limits are counted in Redis — and then
/// asks the surface, or answers the refusal.
async fn admit_then_call<S, R>(
    layer: GateLayer<R>,
    key: Option<String>,
    mut request: Request,
    mut inner: S,
) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
    R: Refusals,
{
    match layer
        .gate
        .admit(key.as_deref(), &mut request, &layer.refusals)
        .await
    {
        Ok(refusal) => match inner.call(request).await {
            Ok(response) => mark_budget(response, refusal),
            Err(never) => match never {},
        },
        Err(refused) => layer.refusals.refused(refused),
    }
}

/// Admits the caller of `bearer` — a key, or an OAuth access token — at MCP's protected
/// resource, then asks the surface, or answers the refusal.
async fn admit_bearer<S, R>(
    layer: GateLayer<R>,
    bearer: Option<String>,
    mut request: Request,
    mut inner: S,
) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
    R: Refusals,
{
    let gate = &layer.gate;
    let Some(oauth) = &gate.oauth else {
        return admit_then_call(layer, bearer, request, inner).await;
    };
    let caller = match oauth.caller(bearer.as_deref()).await {
        Ok(caller) => caller,
        Err(why) => {
            gate.clients.count_unauthorized();
            return layer
                .refusals
                .refused(refused(Refused::Unauthorized(why), None));
        }
    };
    let admitted = gate
        .clients
        .admit(&caller)
        .await
        .map_err(|limited| refused(Refused::RateLimited(limited), Some(&caller)));
    match admitted {
        Ok(budget) => {
            let refusal = gate.admitted(caller, budget, &mut request);
            match inner.call(request).await {
                Ok(response) => mark_budget(response, refusal),
                Err(never) => match never {},
            }
        }
        Err(refused) => layer.refusals.refused(refused),
    }
}

impl Gate {
    /// Authenticates `key` (as the end user the surface names, if any) and asks the caller's
    /// token bucket and budget here, in this process (no Redis tier); an admitted caller goes on
    /// the request as [`Admitted`], a refusal is logged.
    fn admit_here<R: Refusals>(
        &self,
        key: Option<&str>,
        request: &mut Request,
        refusals: &R,
    ) -> Result<Option<PremiumRefusal>, Refused> {
        let caller = self.authenticate(key, request, refusals)?;
        let budget = self
            .clients
            .admit_here(&caller)
            .map_err(|limited| refused(Refused::RateLimited(limited), Some(&caller)))?;
        Ok(self.admitted(caller, budget, request))
    }

    /// [`Gate::admit_here`], with the limits counted fleet-wide when the Redis tier is there.
    async fn admit<R: Refusals>(
        &self,
        key: Option<&str>,
        request: &mut Request,
        refusals: &R,
    ) -> Result<Option<PremiumRefusal>, Refused> {
        let caller = self.authenticate(key, request, refusals)?;
        let budget = self
            .clients
            .admit(&caller)
            .await
            .map_err(|limited| refused(Refused::RateLimited(limited), Some(&caller)))?;
        Ok(self.admitted(caller, budget, request))
    }

    /// Who `key` is, as the end user the surface names, if any.
    fn authenticate<R: Refusals>(
        &self,
        key: Option<&str>,
        request: &Request,
        refusals: &R,
    ) -> Result<Caller, Refused> {
        let mut caller = match self.clients.authenticate(key) {
            Ok(caller) => caller,
            Err(why) => {
                self.clients.count_unauthorized();
                return Err(refused(Refused::Unauthorized(why), None));
            }
        };
        if let Some(user) = refusals.end_user(request.headers()) {
            caller = self.clients.end_user(caller, &user);
        }
        Ok(caller)
    }

    /// Puts the admitted caller on the request; returns why it may not call premium APIs, if so.
    fn admitted(
        &self,
        caller: Caller,
        budget: Result<(), Exhausted>,
        request: &mut Request,
    ) -> Option<PremiumRefusal> {
        let refusal = premium_refusal(budget, &self.gateway);
        let request_id = request
            .extensions()
            .get::<RequestId>()
            .cloned()
            .unwrap_or_else(RequestId::none);
        request.extensions_mut().insert(Admitted {
            caller,
            clients: self.clients.clone(),
            premium: premium_of(refusal),
            refusal,
            request_id,
            recent: self.recent.clone(),
        });
        refusal
    }
}

/// Says on the response when the caller's premium budget (or the gateway's) is spent.
fn mark_budget(mut response: Response, refusal: Option<PremiumRefusal>) -> Response {
    if let Some(refusal) = refusal {
        response
            .headers_mut()
            .insert(PREMIUM_HEADER, HeaderValue::from_static(refusal.header()));
    }
    response
}

/// Logs a refusal (the caller's name, when it is known).
fn refused(refused: Refused, caller: Option<&Caller>) -> Refused {
    let client = caller.map_or("-", |c| c.name.as_str());
    tracing::info!(client, error = refused.code(), "request refused");
    refused
}

/// Where the request's key is, as far as its head tells.
enum InHead {
    /// In the head, or nowhere (no key, or keys not required).
    Found(Option<String>),
    /// Not in the head of a POST to a surface that takes keys in its body, while keys are
    /// required: the body is read (and put back) to look for it.
    InBody,
}

fn key_in_head<R: Refusals>(gate: &Gate, request: &Request) -> InHead {
    let in_head = from_headers(request.headers()).or_else(|| from_query(request.uri().query()));
    let key_in_body = R::KEY_IN_BODY && request.method() == Method::POST;
    if in_head.is_some() || !key_in_body || !gate.clients.requires_keys() {
        InHead::Found(in_head)
    } else {
        InHead::InBody
    }
}

fn from_headers(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, key) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
        })
        .filter(|k| !k.is_empty());
    let header_key = || {
        headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|k| !k.is_empty())
    };
    bearer.or_else(header_key).map(str::to_owned)
}

fn from_query(query: Option<&str>) -> Option<String> {
    let query = query?;
    // Every request passes here: the query is decoded only when a parameter's name could decode
    // to `api_key` (it is `api_key`, or it has an escape).
    let may_carry_key = query.split('&').any(|pair| {
        let name = pair.split_once('=').map_or(pair, |(name, _)| name);
        name == KEY_PARAMETER || name.contains('%')
    });
    if may_carry_key {
        from_form(query.as_bytes())
    } else {
        None
    }
}

fn from_form(encoded: &[u8]) -> Option<String> {
    url::form_urlencoded::parse(encoded)
        .find(|(name, _)| name == KEY_PARAMETER)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|k| !k.is_empty())
}

fn from_body(headers: &HeaderMap, bytes: &[u8]) -> Option<String> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.starts_with("application/x-www-form-urlencoded") {
        return from_form(bytes);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(fields)) => fields
            .get(KEY_PARAMETER)
            .and_then(Value::as_str)
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_key_comes_from_bearer_then_x_api_key_then_the_query() {
        let mut headers = HeaderMap::new();
        assert_eq!(from_headers(&headers), None);
        headers.insert("x-api-key", HeaderValue::from_static(" k2 "));
        assert_eq!(from_headers(&headers).as_deref(), Some("k2"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer k1"));
        assert_eq!(from_headers(&headers).as_deref(), Some("k1"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(from_headers(&headers).as_deref(), Some("k2"));
        assert_eq!(
            from_query(Some("q=x&api_key=k%203")).as_deref(),
            Some("k 3")
        );
        assert_eq!(from_query(Some("q=x&api_key=")), None);
        assert_eq!(from_query(Some("api%5Fkey=k4&q=x")).as_deref(), Some("k4"));
        assert_eq!(from_query(Some("q=caf%C3%A9&format=json")), None);
        assert_eq!(from_query(Some("q=api_key&format=json")), None);
    }

    #[test]
    fn a_body_key_is_read_from_a_form_or_a_json_object() {
        let mut form = HeaderMap::new();
        form.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert_eq!(from_body(&form, b"q=a&api_key=kf").as_deref(), Some("kf"));
        let json = HeaderMap::new();
        assert_eq!(
            from_body(&json, br#"{"query":"a","api_key":"kj"}"#).as_deref(),
            Some("kj")
        );
        assert_eq!(from_body(&json, br#"{"api_key":7}"#), None);
        assert_eq!(from_body(&json, b"not json"), None);
    }
}
