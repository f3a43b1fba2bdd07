//! The passages of a read page that answer a query (#41), through `POST /tavily/extract` with
//! Tavily's `query` and `chunks_per_source`: the best chunks of at most 500 characters, in page
//! order, joined by ` [...] `; chosen from the page as read or cached (one fetch for several
//! queries); Tavily's 400 naming `chunks_per_source` when it is out of range or comes without a
//! query, before anything is read.

use serde_json::json;
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
