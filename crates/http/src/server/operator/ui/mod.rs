//! The operator's page: `GET /ui`, the files it loads (`/ui/{file}`, embedded in the binary:
//! [`assets`]), and the JSON it reads every few seconds ([`api`]: `/ui/api/overview`,
//! `/ui/api/searches/{request_id}`), routed only when `UI_ENABLED` is not `false`.
//!
//! The page and its files hold no data and are served to anyone; the JSON is behind the gate like
//! `/status` (with `API_KEYS_FILE`, the key typed into the page goes as `Authorization: Bearer`),
//! and shows a client key that client's own searches and usage only ([`api`] says what is whose).
//! The `ADMIN_TOKEN`, as `Authorization: Bearer`, reads the JSON too, every client's, without the
//! gate (it is no client: no rate limit), checked with the admin routes' constant-time check
//! ([`operator`]). The page's actions go to the admin routes with the `ADMIN_TOKEN` typed into it.
//! Every response here carries a Content-Security-Policy that allows scripts and styles from this
//! origin only (no inline script, no `unsafe-inline`, no `eval`), fetches to this origin only, and
//! no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`); `nosniff` and no referrer.

mod api;
mod assets;
mod operator;

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::gateway::Gateway;
use crate::server::error::{ApiError, ApiPath, API_REFUSALS};
use crate::server::kit::gate::Gate;
use crate::server::kit::recent_searches::RecentSearches;
use assets::Asset;
use operator::OperatorOrGate;

/// The page.
pub(crate) const PATH: &str = "/ui";

/// What the page may load and do.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The page's routes over `gate`, its JSON listing the searches `recent` keeps.
pub(crate) fn routes(gate: &Gate, recent: RecentSearches) -> Router<Gateway> {
    let api = api::routes(gate.clients.clone(), recent);
    let api = match gate.gateway.server().admin_token.clone() {
        Some(token) => api.layer(OperatorOrGate::new(token, gate.layer(API_REFUSALS))),
        None => api.layer(gate.layer(API_REFUSALS)),
    };
    Router::new()
        .route(PATH, get(page))
        .route("/ui/", get(page))
        .route("/ui/{file}", get(file))
        .merge(api)
        .layer(header_layer(
            header::CONTENT_SECURITY_POLICY,
            CONTENT_SECURITY_POLICY,
        ))
        .layer(header_layer(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header_layer(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header_layer(header::REFERRER_POLICY, "no-referrer"))
}

fn header_layer(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
}

async fn page() -> Response {
    serve(assets::PAGE)
}

async fn file(ApiPath(name): ApiPath<String>) -> Response {
    match assets::find(&name) {
        Some(asset) => serve(asset),
        None => ApiError::not_found().into_response(),
    }
}

fn serve(asset: Asset) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, asset.content_type),
            // Embedded in this binary: asked again after an upgrade, cheap to revalidate.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        asset.bytes,
    )
        .into_response()
}
