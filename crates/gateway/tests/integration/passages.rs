//! The passages of a read page that answer a query (#41), through `POST /tavily/extract` with
//! Tavily's `query` and `chunks_per_source`: the best chunks of at most 500 characters, in page
//! order, joined by ` [...] `; chosen from the page as read or cached (one fetch for several
//! queries); Tavily's 400 naming `chunks_per_source` when it is out of range or comes without a
//! query, before anything is read; with a reranker (`RERANK_URL`), the chunks in its order, the
//! lexical order when it fails, and `/v1/rerank` forwarded to it.

use serde_json::{json, Value};
use simulator::reranker::{RerankerBehaviour, SimulatedReranker};
use simulator::site::Page;

use crate::support::reading::ReadStack;

/// A guide to a town: an `<h2>` section per place, two paragraphs each. Three facts stand out,
/// each once on the page: the bakery's saffron buns, the observatory's mirror (far past the
/// page's first 1,500 characters) and the lighthouse's foghorn.
pub(crate) fn guide() -> String {
    let places = [
        "harbour",
        "railway station",
        "bakery",
        "library",
        "orchard",
        "bridge",
        "market",
        "theatre",
        "observatory",
        "lighthouse",
    ];
    let mut body = String::from(
        "<html><head><title>A guide to Wellsford</title></head><body><article>\
         <h1>A guide to Wellsford</h1>",
    );
    for place in places {
        let fact = match place {
            "bakery" => "Its saffron buns sell out before nine every Saturday morning.",
            "observatory" => {
                "Its great telescope, installed in 1911, has a mirror 74 centimetres across."
            }
            "lighthouse" => "Its foghorn was silenced in 1987 after the keepers left.",
            _ => "Its doors open every day except on public holidays.",
        };
        body.push_str(&format!(
            "<h2>The {place}</h2>\
             <p>The {place} of Wellsford has a long history. Visitors often ask about the \
             {place}, and the guides tell them stories of its builders, its repairs and the \
             people who worked there over the years.</p>\
             <p>{fact} Most of the town's families have some memory of the {place}, and many \
             of them still speak of it with a kind of quiet pride that newcomers notice.</p>"
        ));
    }
    body.push_str("</article></body></html>");
    body
}

fn raw_content(reply: &crate::support::gateway::Reply) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json["results"][0]["raw_content"]
        .as_str()
        .unwrap_or_else(|| panic!("a raw_content: {}", reply.json))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn extract_with_a_query_answers_the_best_chunks_in_page_order_from_one_read() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set("/guide", Page::html(guide()));
    let url = s.site.url("/guide");

    let whole = raw_content(&s.extract(json!({ "urls": url }), "").await);
    let mirror_at = whole
        .find("74 centimetres")
        .expect("the fact is on the page");
    assert!(
        whole[..mirror_at].chars().count() > 1500,
        "the fact lies past what a cut at 1,500 characters keeps"
    );

    let one = raw_content(
        &s.extract(
            json!({"urls": url, "query": "How wide is the telescope's mirror?", "chunks_per_source": 1}),
            "",
        )
        .await,
    );
    assert!(one.contains("74 centimetres"), "{one}");
    assert!(!one.contains(" [...] "), "one chunk: {one}");
    assert!(
        one.chars().count() <= 500,
        "{} characters",
        one.chars().count()
    );

    let two = raw_content(
        &s.extract(
            json!({"urls": [url], "query": "foghorn saffron", "chunks_per_source": 2}),
            "",
        )
        .await,
    );
    let chunks: Vec<&str> = two.split(" [...] ").collect();
    assert_eq!(
        chunks.len(),
        2,
        "two chunks joined as Tavily joins them: {two}"
    );
    assert!(
        chunks[0].contains("saffron") && chunks[1].contains("foghorn"),
        "in page order, not score order: {chunks:?}"
    );
    assert!(chunks.iter().all(|c| c.chars().count() <= 500));

    let three = raw_content(
        &s.extract(json!({"urls": url, "query": "telescope mirror"}), "")
            .await,
    );
    assert!(three.contains("74 centimetres"));
    assert!(
        three.chars().count() <= 3 * 500 + 2 * " [...] ".len(),
        "three chunks by default, not the page: {} characters",
        three.chars().count()
    );
    assert_eq!(
        s.site.hits("/guide"),
        1,
        "the passages come from the page read once, never a second fetch"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chunks_per_source_out_of_range_or_without_a_query_is_tavilys_400_naming_it() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set("/guide", Page::html(guide()));
    let url = s.site.url("/guide");
    for body in [
        json!({"urls": url, "query": "mirror", "chunks_per_source": 0}),
        json!({"urls": url, "query": "mirror", "chunks_per_source": 6}),
        json!({"urls": url, "chunks_per_source": 2}),
    ] {
        let reply = s.extract(body.clone(), "").await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        let error = reply.json["detail"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("chunks_per_source"), "{body}: {error}");
    }
    assert_eq!(s.site.hits("/guide"), 0, "refused before anything is read");
}

/// Tavily's advanced search with `chunks_per_source` (#41): each result is read and its `content`
/// is the page's chunks for the search's query — facts far down the page — joined as Tavily
/// joins them; `raw_content` stays null unless asked; a basic search with `chunks_per_source` is
/// Tavily's 400 naming it.
#[tokio::test(flavor = "multi_thread")]
async fn an_advanced_search_answers_each_result_with_its_chunks_for_the_query() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set_default(Page::html(guide()));
    let search = |body: serde_json::Value| {
        let request = s
            .gateway
            .http
            .post(format!("{}/tavily/search", s.gateway.url))
            .bearer_auth("any-key")
            .json(&body);
        async move {
            crate::support::gateway::TestGateway::reply(
                request.send().await.expect("search answers"),
            )
            .await
        }
    };
    let reply = search(json!({"query": "saffron buns foghorn", "max_results": 2,
        "search_depth": "advanced", "chunks_per_source": 2}))
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let results = reply.json["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for result in results {
        let content = result["content"].as_str().expect("content");
        let chunks: Vec<&str> = content.split(" [...] ").collect();
        assert_eq!(chunks.len(), 2, "{content}");
        assert!(
            chunks[0].contains("saffron") && chunks[1].contains("foghorn"),
            "in page order: {content}"
        );
        assert!(chunks.iter().all(|c| c.chars().count() <= 500));
        assert!(result["raw_content"].is_null(), "not asked for");
    }

    let basic = search(json!({"query": "telescope", "chunks_per_source": 2})).await;
    assert_eq!(basic.status, 400, "{}", basic.text);
    let error = basic.json["detail"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("chunks_per_source"), "{error}");
}

/// The chunk `raw_content` of a reply and its `explain` record of which ranking chose it.
fn chunk_and_ranking(reply: &crate::support::gateway::Reply) -> (String, Value) {
    (
        raw_content(reply),
        reply.json["results"][0]["gateway"]["passages"].clone(),
    )
}

/// With `RERANK_URL`, Tavily's extract takes its chunks in the reranker's order (the fake favours
/// the passage about saffron buns, which a query about the telescope's mirror does not choose
/// lexically), and `explain` says so; the reranker failing leaves the lexical order — the mirror's
/// chunk — and trips its own breaker (`/status`, namespace `reranker`), after which nothing is
/// sent to it; every outcome counted; the reranker's key in no reply.
#[tokio::test(flavor = "multi_thread")]
async fn a_reranker_orders_the_chunks_and_when_it_fails_the_lexical_order_is_used() {
    const RERANK_KEY: &str = "rk-integration-secret";
    let reranker = SimulatedReranker::start().await.expect("reranker starts");
    reranker.expect_key(Some(RERANK_KEY));
    reranker.set_behaviour(RerankerBehaviour::Favour(vec!["saffron".to_owned()]));
    let url_var = reranker.url();
    let s = ReadStack::start(
        &[],
        &[
            ("RERANK_URL", url_var.as_str()),
            ("RERANK_API_KEY", RERANK_KEY),
            ("BREAKER_FAILURE_THRESHOLD", "2"),
        ],
    )
    .await;
    s.site.set("/guide", Page::html(guide()));
    let url = s.site.url("/guide");
    let ask = json!({"urls": url, "query": "How wide is the telescope's mirror?",
                     "chunks_per_source": 1});

    let reply = s.extract(ask.clone(), "?explain=1").await;
    let (chunk, ranking) = chunk_and_ranking(&reply);
    assert!(
        chunk.contains("saffron buns"),
        "the reranker's best: {chunk}"
    );
    assert!(!chunk.contains("74 centimetres"), "{chunk}");
    assert_eq!(ranking, json!({"ranked_by": "reranker", "fallback": null}));
    let sent = reranker.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].auth.as_deref(),
        Some(format!("Bearer {RERANK_KEY}").as_str())
    );
    let documents = sent[0].documents();
    assert!(
        documents[0].contains("74 centimetres"),
        "the lexical ranking's best goes first: {documents:?}"
    );
    assert!(
        documents.len() <= 24,
        "candidates only: {}",
        documents.len()
    );
    assert!(!reply.text.contains(RERANK_KEY));
    let capabilities = s.gateway.get("/v1/capabilities").await;
    assert_eq!(capabilities.json["read"]["reranker"], json!(true));

    reranker.set_behaviour(RerankerBehaviour::ServerError);
    for _ in 0..2 {
        let (chunk, ranking) = chunk_and_ranking(&s.extract(ask.clone(), "?explain=1").await);
        assert!(
            chunk.contains("74 centimetres"),
            "the lexical best: {chunk}"
        );
        assert_eq!(
            ranking,
            json!({"ranked_by": "lexical_fallback", "fallback": "server_error"})
        );
    }
    let breaker = s.gateway.breaker("reranker", "reranker").await;
    assert_eq!(breaker["state"], json!("open"), "{breaker}");
    let (chunk, ranking) = chunk_and_ranking(&s.extract(ask, "?explain=1").await);
    assert!(chunk.contains("74 centimetres"), "{chunk}");
    assert_eq!(
        ranking,
        json!({"ranked_by": "lexical_fallback", "fallback": "breaker_open"})
    );
    assert_eq!(
        reranker.calls(),
        3,
        "nothing sent while its breaker is open"
    );
    let counted = |outcome: &'static str| {
        let g = &s.gateway;
        async move {
            g.metric(
                "searxng_gateway_passage_reranks_total",
                &[("outcome", outcome)],
            )
            .await
        }
    };
    assert_eq!(counted("reranked").await, 1.0);
    assert_eq!(counted("server_error").await, 2.0);
    assert_eq!(counted("breaker_open").await, 1.0);
    assert!(!s.gateway.metrics_text().await.contains(RERANK_KEY));
    assert_eq!(s.site.hits("/guide"), 1, "one read for every query");
}

/// `/v1/rerank` with a reranker configured forwards the client's documents to it and answers
/// its order and scores (`X-Gateway-Ranked-By: reranker`); garbage from it is BM25's answer
/// instead (`lexical_fallback`).
#[tokio::test(flavor = "multi_thread")]
async fn the_rerank_door_forwards_to_a_configured_reranker_and_falls_back_to_bm25() {
    let reranker = SimulatedReranker::start().await.expect("reranker starts");
    reranker.set_behaviour(RerankerBehaviour::Favour(vec!["bakery".to_owned()]));
    let url_var = reranker.url();
    let s = ReadStack::start(&[], &[("RERANK_URL", url_var.as_str())]).await;
    let ask = json!({"query": "how wide is the telescope mirror", "documents": [
        "The observatory opens at night for visitors.",
        "Its telescope mirror is 74 centimetres across, installed in 1911.",
        "The bakery sells saffron buns on Saturdays.",
    ]});
    let rerank = || async {
        let response = s
            .gateway
            .http
            .post(format!("{}/v1/rerank", s.gateway.url))
            .json(&ask)
            .send()
            .await
            .expect("rerank answers");
        let by = response
            .headers()
            .get("x-gateway-ranked-by")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (
            by,
            crate::support::gateway::TestGateway::reply(response).await,
        )
    };
    let (by, reply) = rerank().await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(by, "reranker");
    assert_eq!(
        reply.json["results"][0]["index"],
        json!(2),
        "{}",
        reply.text
    );
    assert_eq!(
        reranker.requests()[0].documents().len(),
        3,
        "every document"
    );

    reranker.set_behaviour(RerankerBehaviour::DuplicateIndex);
    let (by, reply) = rerank().await;
    assert_eq!(by, "lexical_fallback");
    assert_eq!(
        reply.json["results"][0]["index"],
        json!(1),
        "BM25's best: {}",
        reply.text
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_passage_reranks_total",
                &[("outcome", "malformed")]
            )
            .await,
        1.0
    );
}

/// Tavily's advanced search takes each page's chunks in the reranker's order too, the pages'
/// reranks at once, and its `explain` lists which ranking chose each page's chunks.
#[tokio::test(flavor = "multi_thread")]
async fn an_advanced_search_takes_its_chunks_in_the_rerankers_order_and_explain_says_so() {
    let reranker = SimulatedReranker::start().await.expect("reranker starts");
    reranker.set_behaviour(RerankerBehaviour::Favour(vec!["saffron".to_owned()]));
    let url_var = reranker.url();
    let s = ReadStack::start(&[], &[("RERANK_URL", url_var.as_str())]).await;
    s.site.set_default(Page::html(guide()));
    let reply = crate::support::gateway::TestGateway::reply(
        s.gateway
            .http
            .post(format!("{}/tavily/search?explain=1", s.gateway.url))
            .bearer_auth("any-key")
            .json(&json!({"query": "telescope mirror", "max_results": 2,
                "search_depth": "advanced", "chunks_per_source": 1}))
            .send()
            .await
            .expect("search answers"),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let results = reply.json["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for result in results {
        let content = result["content"].as_str().expect("content");
        assert!(
            content.contains("saffron"),
            "the reranker's best: {content}"
        );
    }
    let rankings = reply.json["gateway"]["passages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rankings.len(), 2, "{}", reply.json["gateway"]);
    assert!(rankings
        .iter()
        .all(|r| r["ranked_by"] == "reranker" && r["url"].is_string()));
    assert_eq!(reranker.calls(), 2, "one rerank per page");
}
