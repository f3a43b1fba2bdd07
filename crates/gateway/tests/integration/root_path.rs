//! SearXNG's root path as clients configured with the bare origin use it: `/` with a `q` redirects to
//! `/search` as SearXNG does (308, query string kept, a POST's body re-sent); without one it is an index of
//! the gateway's surfaces, every link of which answers. Plus the SearXNG surface's own error shape for
//! bodies it cannot take.

use serde_json::Value;

use crate::support::gateway::TestGateway;
use crate::support::stack::SimStack;

/// A client that follows redirects, as LangChain's `requests` and `aiohttp` do.
fn following() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(crate::support::wait::HANG_GUARD)
        .build()
        .expect("client")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_root_path_with_a_query_redirects_to_search_keeping_the_query_string() {
    let s = SimStack::start(&[], &[]).await;
    let redirect = s.gateway.get("/?q=Root+Path&format=json&pageno=1").await;
    assert_eq!(redirect.status, 308);
    let location = s
        .gateway
        .http
        .get(format!(
            "{}/?q=Root+Path&format=json&pageno=1",
            s.gateway.url
        ))
        .send()
        .await
        .expect("answer")
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(
        location.as_deref(),
        Some("/search?q=Root+Path&format=json&pageno=1")
    );
    let followed = TestGateway::reply(
        following()
            .get(format!("{}/?q=Root+Path&format=json", s.gateway.url))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(followed.status, 200, "{}", followed.text);
    let direct = s
        .gateway
        .search(&[("q", "Root Path"), ("format", "json")])
        .await;
    assert_eq!(direct.cache, "hit");
    assert_eq!(followed.json["results"], direct.json["results"]);
    assert_eq!(s.searxng_hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_posted_to_the_root_path_is_re_posted_to_search() {
    let s = SimStack::start(&[], &[]).await;
    let response = following()
        .post(format!("{}/", s.gateway.url))
        .form(&[("q", "Posted Root"), ("format", "json")])
        .send()
        .await
        .expect("answer");
    assert_eq!(response.url().path(), "/search");
    let reply = TestGateway::reply(response).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let sent = s.searxng.last_request().expect("SearXNG was asked");
    assert!(
        sent.contains(&("q".to_owned(), "Posted Root".to_owned())),
        "{sent:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_root_path_without_a_query_is_an_index_whose_links_all_answer() {
    let s = SimStack::start(&[], &[]).await;
    for path in ["/", "/?q=", "/?format=json"] {
        let index = s.gateway.get(path).await;
        assert_eq!(index.status, 200, "{path}");
        assert_eq!(index.json["name"], "searxng-gateway");
        assert_eq!(index.json["version"], env!("CARGO_PKG_VERSION"));
    }
    let index = s.gateway.get("/").await;
    let links = index.json["links"].as_object().expect("links");
    for key in [
        "search",
        "mcp",
        "tavily",
        "tavily_extract",
        "firecrawl_search",
        "firecrawl_scrape",
        "perplexity",
        "openwebui_search",
        "openwebui_loader",
        "status",
        "metrics",
        "healthz",
        "readyz",
    ] {
        let path = links
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no link {key}: {}", index.text));
        let reply = s.gateway.get(path).await;
        assert_ne!(reply.status, 404, "{key} -> {path}");
        if key == "metrics" {
            assert!(reply
                .text
                .contains("searxng_gateway_surface_requests_total"));
        } else {
            assert!(reply.json.is_object(), "{key} -> {path}: {}", reply.text);
        }
    }
    assert_eq!(s.searxng_hits(), 0, "the index searches nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_the_searxng_surface_cannot_take_get_its_json_error_shape() {
    let s = SimStack::start(&[], &[]).await;
    let big = format!("q={}", "x".repeat(100 * 1024));
    for path in ["/search", "/"] {
        let cases = [
            (
                big.clone(),
                "application/x-www-form-urlencoded",
                413,
                "body_too_large",
            ),
            (
                r#"{"q": "json"}"#.to_owned(),
                "application/json",
                400,
                "bad_request",
            ),
        ];
        for (body, content_type, status, code) in cases {
            let reply = TestGateway::reply(
                s.gateway
                    .http
                    .post(format!("{}{path}", s.gateway.url))
                    .header("content-type", content_type)
                    .body(body)
                    .send()
                    .await
                    .expect("answer"),
            )
            .await;
            assert_eq!(reply.status, status, "{path} {content_type}");
            assert_eq!(reply.json["error"], code, "{path}: {}", reply.text);
            assert!(reply.json["message"].is_string());
        }
    }
    assert_eq!(s.searxng_hits(), 0);
}

/// `GET /search` is answered before the router (`server::front`); every other request for the path
/// goes through it. Both answer the same search the same way, and the edges stay the router's.
#[tokio::test(flavor = "multi_thread")]
async fn search_answers_the_same_through_the_front_door_and_the_router() {
    let s = SimStack::start(&[], &[]).await;
    let url = format!("{}/search?q=front+door&format=json", s.gateway.url);
    let get = s.gateway.http.get(&url).send().await.expect("answer");
    assert_eq!(get.status(), 200);
    let length = get.headers().get("content-length").cloned();
    assert!(get.headers().contains_key("x-request-id"));
    assert_eq!(get.headers()["x-cache"], "miss");
    let head = s.gateway.http.head(&url).send().await.expect("answer");
    assert_eq!(head.status(), 200, "HEAD is the router's GET route");
    assert_eq!(head.headers()["x-cache"], "hit");
    assert!(head.headers().contains_key("x-request-id"));
    assert_eq!(head.headers().get("content-length"), length.as_ref());
    let post = s
        .gateway
        .http
        .post(format!("{}/search", s.gateway.url))
        .form(&[("q", "front door"), ("format", "json")])
        .send()
        .await
        .expect("answer");
    assert_eq!(post.status(), 200);
    assert_eq!(post.headers()["x-cache"], "hit");
    let put = s.gateway.http.put(&url).send().await.expect("answer");
    assert_eq!(put.status(), 405);
    let slash = s
        .gateway
        .http
        .get(format!("{}/search/?q=front+door", s.gateway.url))
        .send()
        .await
        .expect("answer");
    assert_eq!(slash.status(), 404);
    assert_eq!(s.searxng_hits(), 1);
}
