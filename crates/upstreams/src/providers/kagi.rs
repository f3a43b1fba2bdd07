//! Kagi Search API: `GET https://kagi.com/api/v0/search?q=…&limit=10` (v0; a v1 is in preview).
//!
//! Auth: `Authorization: Bot TOKEN` — its own scheme, not Bearer. The API takes only `q` and
//! `limit`: there is no page, language, time or safe-search parameter (a search is Kagi's, as the
//! account's settings make it).
//!
//! Quirks:
//! - `data[]` mixes kinds: `t` = 0 is a search result, `t` = 1 a list of related searches (skipped);
//! - errors are `{"meta": …, "data": null, "error": [{"code": N, "msg": "…"}]}`: code **100** (no
//!   billing information) and **101** (insufficient credit) are quota, code 2 is a bad token, 1 a
//!   malformed request and 0 an internal error. The
//!   HTTP status of each is [unverified], so the body's code decides, also on a 200;
//! - `meta.api_balance` reports the account's remaining dollars (not read: the price per search is
//!   fixed, `PREMIUM_PRICE_KAGI`).

use reqwest::header::HeaderMap;

use super::api::{class_for_status, ApiRequest, Auth, PremiumApi, Refusal, Wire};
use super::{ProviderAnswer, ProviderKind};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::ErrorClass;

/// The Kagi adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Kagi;

const PATH: &str = "/api/v0/search";
const LIMIT: u32 = 10;

impl Wire for Kagi {
    type Success = wire::Response;
    type Failure = wire::Response;

    fn refusal(&self, status: u16, body: Option<wire::Response>, _: &HeaderMap) -> Refusal {
        body.and_then(|b| b.error_class())
            .unwrap_or_else(|| class_for_status(status))
            .into()
    }
}

impl PremiumApi for Kagi {
    const KIND: ProviderKind = ProviderKind::Kagi;
    const AUTH: Auth = Auth::Scheme("Bot");

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        ApiRequest::json_get(
            PATH,
            vec![
                ("q", req.query_with_site().into_owned()),
                ("limit", LIMIT.to_string()),
            ],
        )
    }

    fn answer(&self, body: wire::Response, _: &HeaderMap) -> Result<ProviderAnswer, ErrorClass> {
        if let Some(class) = body.error_class() {
            return Err(class);
        }
        // `data: null` with an unknown error code, or no `data` at all: not a search answer.
        let Some(data) = body.data else {
            return Err(ErrorClass::Malformed);
        };
        Ok(ProviderAnswer {
            hits: data.into_iter().filter_map(wire::Item::into_hit).collect(),
            ..ProviderAnswer::default()
        })
    }
}

/// Kagi's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::PremiumHit;
    use gateway_core::upstream::ErrorClass;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        /// `null` on an error.
        pub(super) data: Option<Vec<Item>>,
        #[serde(default)]
        error: Vec<Error>,
    }

    #[derive(Deserialize)]
    pub(super) struct Item {
        t: u8,
        url: Option<String>,
        title: Option<String>,
        snippet: Option<String>,
        published: Option<String>,
    }

    #[derive(Deserialize)]
    struct Error {
        code: i64,
    }

    impl Response {
        /// The class of the first error the body names, when its code is one we know (any other
        /// leaves the status to decide).
        pub(super) fn error_class(&self) -> Option<ErrorClass> {
            let code = self.error.first()?.code;
            match code {
                100 | 101 => Some(ErrorClass::Quota),
                2 => Some(ErrorClass::Auth),
                1 => Some(ErrorClass::BadRequest),
                0 => Some(ErrorClass::Server),
                _ => None,
            }
        }
    }

    impl Item {
        /// A hit for a search result (`t` = 0) with a URL; `None` for related searches.
        pub(super) fn into_hit(self) -> Option<PremiumHit> {
            if self.t != 0 {
                return None;
            }
            PremiumHit::from_fields(self.url, self.title, self.snippet, self.published)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::interpret;
    use crate::providers::api::Method;
    use crate::providers::PremiumHit;

    const SUCCESS: &str = r#"{"meta":{"id":"120145a0","node":"us-east","ms":412,"api_balance":4.988},"data":[{"t":0,"rank":1,"url":"https://example.org/async","title":"Async Rust primer","snippet":"A short primer.","published":"2026-11-27T00:00:00Z"},{"t":1,"list":["rust futures","tokio tutorial"]}]}"#;
    const INSUFFICIENT: &str = r#"{"meta":{"id":"x","node":"us-east","ms":3},"data":null,"error":[{"code":101,"msg":"Insufficient credit to perform this request.","ref":null}]}"#;
    const NO_BILLING: &str = r#"{"meta":{"id":"x"},"data":null,"error":[{"code":100,"msg":"No billing information on file.","ref":null}]}"#;
    const BAD_TOKEN: &str = r#"{"meta":{"id":"x"},"data":null,"error":[{"code":2,"msg":"Unauthorized: invalid token","ref":null}]}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Kagi, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits_without_related_searches() {
        let answer = interpret(&Kagi, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: Some("2026-11-27T00:00:00Z".into()),
            }]
        );
        let empty = interpret(&Kagi, 200, &HeaderMap::new(), br#"{"meta":{},"data":[]}"#).unwrap();
        assert!(empty.hits.is_empty());
        assert_eq!(class(200, r#"{"meta":{}}"#), ErrorClass::Malformed);
    }

    #[test]
    fn the_body_code_decides_whatever_the_status() {
        for status in [200, 400, 402, 403] {
            assert_eq!(class(status, INSUFFICIENT), ErrorClass::Quota, "{status}");
            assert_eq!(class(status, NO_BILLING), ErrorClass::Quota, "{status}");
        }
        assert_eq!(class(401, BAD_TOKEN), ErrorClass::Auth);
        assert_eq!(class(200, BAD_TOKEN), ErrorClass::Auth);
        assert_eq!(class(401, "not json"), ErrorClass::Auth);
        assert_eq!(class(429, "{}"), ErrorClass::RateLimited);
        assert_eq!(
            class(
                400,
                r#"{"data":null,"error":[{"code":1,"msg":"Malformed"}]}"#
            ),
            ErrorClass::BadRequest
        );
        let unknown = r#"{"data":null,"error":[{"code":429,"msg":"Too many requests"}]}"#;
        assert_eq!(class(429, unknown), ErrorClass::RateLimited);
        assert_eq!(class(200, unknown), ErrorClass::Malformed);
        assert_eq!(class(500, INSUFFICIENT), ErrorClass::Server);
    }

    #[test]
    fn the_request_is_a_get_with_q_and_limit_and_bot_auth() {
        let api = PremiumApi::request(&Kagi, &SearchRequest::simple("rust async"));
        assert_eq!((api.method, api.path), (Method::Get, "/api/v0/search"));
        assert_eq!(Kagi::AUTH, Auth::Scheme("Bot"));
        assert_eq!(
            api.query,
            [("q", "rust async".to_owned()), ("limit", "10".to_owned())]
        );
    }
}
