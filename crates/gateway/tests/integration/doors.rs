//! The doors other tools knock on, over HTTP, as their clients call them: Firecrawl's search and
//! scrape (v1, v2, and v2 at the root), Perplexity's search, Serper's search, Open WebUI's external
//! search and loader with its end users; and the domain filters of every door, applied to the merged results
//! and mapped onto each upstream that takes them; and how each door that reads pages says a page
//! could not be read.

use serde_json::{json, Value};
use simulator::readers::Reader;
use simulator::searxng::SearxngMode;
use simulator::site::Page;
use simulator::Provider;

use crate::support::gateway::{metric_value, Reply, TestGateway};
use crate::support::keys::keys_file;
use crate::support::reading::{corpus, ReadStack};
use crate::support::stack::SimStack;

const ADMIN: &str = "admin-token-0123456789";
const ALICE_KEY: &str = "alice-key-0123456789";

async fn post(g: &TestGateway, path: &str, key: Option<&str>, body: Value) -> Reply {
    post_with(g, path, key, body, &[]).await
}

async fn post_with(
    g: &TestGateway,
    path: &str,
    key: Option<&str>,
    body: Value,
    headers: &[(&str, &str)],
) -> Reply {
    let mut request = g.http.post(format!("{}{path}", g.url)).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    TestGateway::reply(request.send().await.expect("the gateway answers")).await
}

fn urls(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["url"].as_str().or(r["link"].as_str()).map(str::to_owned))
        .collect()
}

fn host(url: &str) -> String {
    url::Url::parse(url)
        .expect("a URL")
        .host_str()
        .expect("a host")
        .to_owned()
}

/// What SearXNG was last sent as `name`.
fn sent(requests: Option<Vec<(String, String)>>, name: &str) -> Option<String> {
    requests?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawl_search_answers_each_versions_shape_at_both_paths() {
    let s = SimStack::start(&[], &[]).await;
    s.searxng
        .set_engine_categories("alpha", &["general", "news"]);
    let g = &s.gateway;
    let direct = g
        .search(&[("q", "firecrawl shape"), ("format", "json")])
        .await;
    let expected = urls(&direct.json["results"]);
    // What firecrawl-py's synchronous v2 client sends, at the root it posts to.
    let v2 = post(
        g,
        "/v2/search",
        None,
        json!({"query": "firecrawl shape", "origin": "python-sdk@4.55.0"}),
    )
    .await;
    assert_eq!(v2.status, 200, "{}", v2.text);
    assert_eq!(v2.json["success"], true);
    let web = v2.json["data"]["web"].as_array().expect("data.web");
    assert_eq!(web.len(), 5, "Firecrawl's default limit");
    assert_eq!(urls(&v2.json["data"]["web"]), expected[..5]);
    for (i, item) in web.iter().enumerate() {
        assert_eq!(item["position"], i + 1);
        assert!(item["title"].is_string() && item["description"].is_string());
    }
    assert_eq!(
        v2.cache, "hit",
        "the same search as /search, from the cache"
    );
    let prefixed = post(
        g,
        "/firecrawl/v2/search",
        None,
        json!({"query": "firecrawl shape", "limit": 2}),
    )
    .await;
    assert_eq!(urls(&prefixed.json["data"]["web"]), expected[..2]);
    let v1 = post(
        g,
        "/firecrawl/v1/search",
        Some("None"),
        json!({"query": "firecrawl v1", "limit": 3, "lang": "en", "country": "us", "timeout": 30000}),
    )
    .await;
    assert_eq!(v1.status, 200, "{}", v1.text);
    assert_eq!(v1.json["data"].as_array().expect("a flat list").len(), 3);
    assert_eq!(
        sent(s.searxng.last_request(), "language").as_deref(),
        Some("en-US")
    );
    let news = post(
        g,
        "/v2/search",
        None,
        json!({"query": "firecrawl news", "sources": [{"type": "news"}], "tbs": "qdr:w"}),
    )
    .await;
    assert_eq!(news.status, 200, "{}", news.text);
    assert!(news.json["data"]["web"].is_null(), "only the sources asked");
    let items = news.json["data"]["news"].as_array().expect("data.news");
    assert!(!items.is_empty() && items[0]["snippet"].is_string());
    let asked = s.searxng.last_request();
    assert_eq!(sent(asked.clone(), "categories").as_deref(), Some("news"));
    assert_eq!(sent(asked, "time_range").as_deref(), Some("week"));
    let counted = g
        .metric(
            "searxng_gateway_surface_requests_total",
            &[("surface", "firecrawl")],
        )
        .await;
    assert_eq!(counted, 4.0, "each search under its own surface label");
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawl_errors_have_its_shape_and_the_statuses_its_clients_know() {
    let s = SimStack::start(&[], &[]).await;
    let g = &s.gateway;
    for (body, status, says) in [
        (
            json!({"query": "q", "categories": ["github"]}),
            400,
            "categories",
        ),
        (json!({"query": "q", "sources": ["images"]}), 400, "images"),
        (json!({"query": "q", "limit": 1000}), 400, "limit"),
        (json!({"query": "  "}), 400, "query"),
        (json!(["not", "an", "object"]), 400, "JSON object"),
    ] {
        let reply = post(g, "/v2/search", None, body.clone()).await;
        assert_eq!(reply.status, status, "{body}: {}", reply.text);
        assert_eq!(reply.json["success"], false);
        let error = reply.json["error"].as_str().expect("error is a sentence");
        assert!(error.contains(says), "{body}: {error}");
    }
    let wrong = g.get("/v2/search").await;
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.json["success"], false);
    s.searxng.set_mode(SearxngMode::Status(503));
    let failed = post(g, "/v2/search", None, json!({"query": "nothing answers"})).await;
    assert_eq!(failed.status, 500, "never 502, which its clients retry");
    assert!(failed.json["error"]
        .as_str()
        .expect("a sentence")
        .contains("searxng"));
}

/// An article whose markup carries handlers, script links and a script.
fn article_with_scripts() -> String {
    let paragraph = "The council met on Tuesday to discuss the new library, its opening hours and \
        the reading rooms on the second floor, which will stay open late on weekdays for students.";
    format!(
        r#"<!DOCTYPE html><html><head><title>The new library</title></head><body>
        <nav><a href="/">Home</a></nav><article><h1>The new library</h1>
        <p onclick="track('p1')">{paragraph} <a href="javascript:share()" onmouseover="steal()">Share this</a></p>
        <p>{paragraph} <a href="https://town.example/minutes">The minutes</a>.</p>
        <p>{paragraph} <img src="/hall.jpg" onerror="steal()" alt="the hall"></p>
        <script>steal()</script><p>{paragraph}</p></article></body></html>"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_page_would_run_never_reaches_its_html_or_markdown() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set("/library", Page::html(article_with_scripts()));
    let page = s.site.url("/library");
    let reply = post(
        &s.gateway,
        "/firecrawl/v1/scrape",
        None,
        json!({"url": page, "formats": ["markdown", "html"]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let data = &reply.json["data"];
    for format in ["markdown", "html"] {
        let text = data[format].as_str().expect("the format asked");
        assert!(
            text.contains("Share this") && text.contains("reading rooms"),
            "{format}: {text}"
        );
        assert!(
            text.contains("https://town.example/minutes"),
            "{format}: {text}"
        );
        for gone in [
            "javascript:",
            "onclick",
            "onmouseover",
            "onerror",
            "steal()",
        ] {
            assert!(!text.contains(gone), "{format} carries {gone}: {text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawl_scrape_gives_each_format_asked_and_firecrawls_metadata() {
    let s = ReadStack::start(&[], &[]).await;
    let (source, _) = corpus("ars-1");
    s.site.set("/ars", Page::html(source.clone()));
    s.site.set(
        "/gone",
        Page::status(404, "<html><body>Not here</body></html>"),
    );
    let ars = s.site.url("/ars");
    let g = &s.gateway;
    let reply = post(
        g,
        "/firecrawl/v1/scrape",
        None,
        json!({"url": ars, "formats": ["markdown", "html", "rawHtml", "links"], "onlyMainContent": true, "timeout": 30000}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let data = &reply.json["data"];
    let markdown = data["markdown"].as_str().expect("markdown");
    assert!(
        markdown.len() > 500 && !markdown.contains("<p>"),
        "{markdown:.200}"
    );
    let html = data["html"].as_str().expect("html");
    assert!(html.contains("<p"), "the main content's markup");
    assert!(html.len() < source.len() / 2, "without the page's chrome");
    assert_eq!(
        data["rawHtml"].as_str().expect("rawHtml"),
        source,
        "the page as it came"
    );
    let links = data["links"].as_array().expect("links");
    assert!(!links.is_empty());
    assert!(links
        .iter()
        .all(|l| l.as_str().is_some_and(|l| l.starts_with("http"))));
    let metadata = &data["metadata"];
    assert_eq!(metadata["sourceURL"], ars);
    assert_eq!(metadata["url"], ars);
    assert_eq!(metadata["statusCode"], 200);
    assert!(metadata["title"].is_string());
    // The byline and the site's name the page declares (#40 point 5).
    assert_eq!(metadata["author"], "Dan Goodin", "{metadata}");
    assert_eq!(metadata["ogSiteName"], "Ars Technica", "{metadata}");
    // MCP's web_fetch gives them too, in its structured content.
    let mcp = g.web_fetch(json!({"url": ars})).await;
    let structured = &mcp["result"]["structuredContent"];
    assert_eq!(structured["author"], "Dan Goodin", "{mcp}");
    assert_eq!(structured["site_name"], "Ars Technica", "{mcp}");
    // What firecrawl-py's v2 client sends by default: Markdown alone.
    let default = post(
        g,
        "/v2/scrape",
        None,
        json!({"url": ars, "origin": "python-sdk@4.55.0"}),
    )
    .await;
    assert_eq!(default.status, 200, "{}", default.text);
    assert!(default.json["data"]["markdown"].is_string());
    assert!(default.json["data"]["html"].is_null() && default.json["data"]["links"].is_null());
    // A page that answered 404 is, as on Firecrawl, a success that says so.
    let gone = post(
        g,
        "/firecrawl/v2/scrape",
        None,
        json!({"url": s.site.url("/gone")}),
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.text);
    assert_eq!(gone.json["data"]["metadata"]["statusCode"], 404);
    // A private address is not read: Firecrawl's 403.
    let private = post(
        g,
        "/v2/scrape",
        None,
        json!({"url": "http://10.1.2.3/admin"}),
    )
    .await;
    assert_eq!(private.status, 403, "{}", private.text);
    assert_eq!(private.json["success"], false);
    let bad = post(
        g,
        "/v2/scrape",
        None,
        json!({"url": ars, "formats": ["screenshot"]}),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert!(bad.json["error"]
        .as_str()
        .expect("a sentence")
        .contains("screenshot"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_larger_than_the_gateway_reads_is_said_in_a_sentence_with_its_code_at_every_door() {
    let s = ReadStack::start(&[], &[("FETCH_MAX_BYTES", "65536")]).await;
    s.site.set(
        "/huge",
        Page::Huge {
            len: 4 * 1024 * 1024,
        },
    );
    let huge = s.site.url("/huge");
    let said = "the answer is larger than the gateway reads (too_large)";
    let g = &s.gateway;

    let tavily = s.extract(json!({"urls": [huge]}), "").await;
    assert_eq!(tavily.status, 200, "{}", tavily.text);
    assert_eq!(
        tavily.json["failed_results"][0]["error"], said,
        "{}",
        tavily.text
    );

    // Not Firecrawl's 500 (the gateway did not fail) nor 502 (its clients retry it, and the page
    // stays as large): the 413 of Firecrawl's own error table.
    for path in ["/firecrawl/v1/scrape", "/v2/scrape"] {
        let firecrawl = post(g, path, None, json!({"url": huge})).await;
        assert_eq!(firecrawl.status, 413, "{path}: {}", firecrawl.text);
        assert_eq!(firecrawl.json["success"], false);
        assert_eq!(firecrawl.json["error"], said, "{path}");
    }

    let answer = g.web_fetch(json!({"url": huge})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        format!("web_fetch failed: {said}"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_firecrawl_scrape_that_needs_premium_past_the_budget_is_402() {
    let keys = keys_file(&[("alice", ALICE_KEY, "::1")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = ReadStack::start(&[Reader::Jina], &[("API_KEYS_FILE", &path)]).await;
    s.site.set("/walled", Page::cloudflare_challenge());
    s.site.set("/walled-too", Page::cloudflare_challenge());
    let g = &s.gateway;
    let first = post(
        g,
        "/v2/scrape",
        Some(ALICE_KEY),
        json!({"url": s.site.url("/walled")}),
    )
    .await;
    assert_eq!(
        first.status, 200,
        "the premium reader read it: {}",
        first.text
    );
    assert_eq!(s.reader(Reader::Jina).calls(), 1);
    let second = post(
        g,
        "/v2/scrape",
        Some(ALICE_KEY),
        json!({"url": s.site.url("/walled-too")}),
    )
    .await;
    assert_eq!(second.status, 402, "{}", second.text);
    assert_eq!(second.json["success"], false);
    assert_eq!(s.reader(Reader::Jina).calls(), 1, "no call past the budget");
    let wrong_key = post(
        g,
        "/v2/scrape",
        Some("nope"),
        json!({"url": s.site.url("/walled")}),
    )
    .await;
    assert_eq!(wrong_key.status, 401);
    assert_eq!(wrong_key.json["success"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_firecrawl_search_with_scrape_options_reads_each_result() {
    let s = ReadStack::start(&[], &[]).await;
    let (source, _) = corpus("mozilla-1");
    s.site.set_default(Page::html(source));
    let reply = post(
        &s.gateway,
        "/v2/search",
        None,
        json!({"query": "read them", "limit": 3,
               "scrapeOptions": {"formats": ["markdown"], "onlyMainContent": true}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let web = reply.json["data"]["web"].as_array().expect("data.web");
    assert_eq!(web.len(), 3);
    for item in web {
        assert!(
            item["markdown"].as_str().is_some_and(|m| m.len() > 200),
            "{item}"
        );
        assert_eq!(item["metadata"]["sourceURL"], item["url"]);
        assert_eq!(item["metadata"]["statusCode"], 200);
    }
    assert_eq!(s.reads("direct_ok").await, 3.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn perplexity_search_answers_its_shape_one_list_per_query_and_needs_a_key() {
    let s = SimStack::start(&[], &[]).await;
    let g = &s.gateway;
    let one = post(
        g,
        "/perplexity/search",
        Some("pplx-any"),
        json!({"query": "perplexity shape", "max_results": 4}),
    )
    .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert!(one.json["id"].as_str().is_some_and(|id| !id.is_empty()));
    let results = one.json["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    for result in results {
        for field in ["title", "url", "snippet", "date", "last_updated"] {
            assert!(result.get(field).is_some(), "{field}: {result}");
        }
    }
    let many = post(
        g,
        "/perplexity/search",
        Some("pplx-any"),
        json!({"query": ["first query", "second query"], "max_results": 2,
               "search_recency_filter": "hour"}),
    )
    .await;
    assert_eq!(many.status, 200, "{}", many.text);
    let lists = many.json["results"].as_array().expect("a list of lists");
    assert_eq!(lists.len(), 2);
    assert!(lists
        .iter()
        .all(|l| l.as_array().is_some_and(|l| l.len() == 2)));
    assert_ne!(urls(&lists[0]), urls(&lists[1]), "each query answered");
    assert_eq!(
        sent(s.searxng.last_request(), "time_range").as_deref(),
        Some("day")
    );
    let counted = g
        .metric(
            "searxng_gateway_surface_requests_total",
            &[("surface", "perplexity")],
        )
        .await;
    assert_eq!(counted, 3.0, "one search per query");
    let keyless = post(g, "/perplexity/search", None, json!({"query": "no key"})).await;
    assert_eq!(keyless.status, 401);
    assert_eq!(keyless.json["error"]["type"], "authentication_error");
    let bad = post(
        g,
        "/perplexity/search",
        Some("pplx-any"),
        json!({"query": "q", "max_results": 50}),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert!(bad.json["error"]["message"]
        .as_str()
        .expect("a sentence")
        .contains("max_results"));
}

#[tokio::test(flavor = "multi_thread")]
async fn serper_search_answers_its_shape_one_answer_per_query_of_a_batch() {
    let s = SimStack::start(&[], &[]).await;
    let g = &s.gateway;
    let serper = |body: Value| post_with(g, "/serper/search", None, body, &[("x-api-key", "any")]);
    let one =
        serper(json!({"q": "serper shape", "num": 4, "gl": "de", "hl": "de", "tbs": "qdr:m"}))
            .await;
    assert_eq!(one.status, 200, "{}", one.text);
    let organic = one.json["organic"].as_array().expect("organic");
    assert_eq!(organic.len(), 4);
    for (i, result) in organic.iter().enumerate() {
        assert_eq!(result["position"], i + 1, "{result}");
        assert!(
            result["link"]
                .as_str()
                .is_some_and(|l| l.starts_with("http")),
            "{result}"
        );
        assert!(
            result["title"].is_string() && result["snippet"].is_string(),
            "{result}"
        );
    }
    assert_eq!(one.json["searchParameters"]["q"], "serper shape");
    assert_eq!(one.json["searchParameters"]["gl"], "de");
    let asked = s.searxng.last_request();
    assert_eq!(sent(asked.clone(), "language").as_deref(), Some("de-DE"));
    assert_eq!(sent(asked, "time_range").as_deref(), Some("month"));
    let batch = serper(json!([{"q": "first serper"}, {"q": "second serper", "num": 2}])).await;
    assert_eq!(batch.status, 200, "{}", batch.text);
    let answers = batch.json.as_array().expect("one answer per query");
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1]["organic"].as_array().map(Vec::len), Some(2));
    assert_eq!(answers[0]["searchParameters"]["q"], "first serper");
    assert_ne!(urls(&answers[0]["organic"]), urls(&answers[1]["organic"]));
    let counted = g
        .metric(
            "searxng_gateway_surface_requests_total",
            &[("surface", "serper")],
        )
        .await;
    assert_eq!(counted, 3.0, "one search per query");
    let refused = serper(json!({"q": "q", "location": "Austin, Texas"})).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.json["statusCode"], 400);
    assert!(refused.json["message"]
        .as_str()
        .expect("a sentence")
        .contains("location"));
}

#[tokio::test(flavor = "multi_thread")]
async fn serper_takes_the_key_as_x_api_key() {
    let keys = keys_file(&[("alice", ALICE_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[
            ("API_KEYS_FILE", path.as_str()),
            ("TEST_CLIENT_KEY", ALICE_KEY),
        ],
    )
    .await;
    let g = &s.gateway;
    let body = json!({"q": "keyed serper"});
    let admitted = post_with(
        g,
        "/serper/search",
        None,
        body.clone(),
        &[("x-api-key", ALICE_KEY)],
    )
    .await;
    assert_eq!(admitted.status, 200, "{}", admitted.text);
    let wrong = post_with(g, "/serper/search", None, body, &[("x-api-key", "wrong")]).await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json["statusCode"], 401);
}

/// `max_tokens_per_page` (#41): each result's snippet is the page's passages that answer the
/// query — here a fact far down a long page — within that many tokens, not the page's start.
#[tokio::test(flavor = "multi_thread")]
async fn perplexity_max_tokens_per_page_gives_the_passages_that_answer_the_query() {
    let s = ReadStack::start(&[], &[]).await;
    let mut page = String::from("<html><head><title>Harbour notes</title></head><body><article>");
    for i in 0..30 {
        page.push_str(&format!(
            "<p>Note {i}: the harbour master logged the tides, the weather and the boats that \
             came in and went out on that day, as every day before it.</p>"
        ));
    }
    page.push_str("<p>The lighthouse foghorn was silenced in 1987 after the keepers left.</p>");
    for i in 30..40 {
        page.push_str(&format!("<p>Note {i}: the gardens were quiet.</p>"));
    }
    page.push_str("</article></body></html>");
    s.site.set_default(Page::html(page));
    let reply = post(
        &s.gateway,
        "/perplexity/search",
        Some("pplx-any"),
        json!({"query": "when was the lighthouse foghorn silenced", "max_results": 2,
            "max_tokens_per_page": 50}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let results = reply.json["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for result in results {
        let snippet = result["snippet"].as_str().expect("a snippet");
        assert!(
            snippet.starts_with("The lighthouse foghorn was silenced in 1987"),
            "the answer first, not the page's start: {snippet}"
        );
        // 50 tokens of English: well under 400 characters.
        assert!(snippet.len() <= 400, "{snippet}");
        assert!(
            !snippet.contains("Snippet of"),
            "the page's, not the search's"
        );
    }
    assert_eq!(s.reads("direct_ok").await, 2.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn open_webuis_external_search_and_loader_answer_its_arrays() {
    let s = ReadStack::start(&[], &[]).await;
    let (source, _) = corpus("mozilla-1");
    s.site.set("/moz", Page::html(source));
    let g = &s.gateway;
    let search = post(
        g,
        "/openwebui/search",
        Some("owui"),
        json!({"query": "open webui", "count": 3}),
    )
    .await;
    assert_eq!(search.status, 200, "{}", search.text);
    let list = search.json.as_array().expect("a top-level array");
    assert_eq!(list.len(), 3);
    for item in list {
        assert!(
            item["link"].is_string() && item["title"].is_string() && item["snippet"].is_string()
        );
    }
    let moz = s.site.url("/moz");
    let loaded = post(
        g,
        "/openwebui/loader",
        Some("owui"),
        json!({"urls": [moz, "not a url", s.site.url("/missing")]}),
    )
    .await;
    assert_eq!(loaded.status, 200, "{}", loaded.text);
    let docs = loaded.json.as_array().expect("a top-level array");
    assert_eq!(
        docs.len(),
        1,
        "pages not read are left out: {}",
        loaded.json
    );
    assert!(docs[0]["page_content"]
        .as_str()
        .is_some_and(|c| c.len() > 500));
    assert_eq!(docs[0]["metadata"]["source"], moz);
    assert!(docs[0]["metadata"]["title"].is_string());
    let empty = post(g, "/openwebui/loader", Some("owui"), json!({"urls": []})).await;
    assert_eq!(empty.status, 400);
    assert!(empty.json["detail"].is_string());
}

/// An Open WebUI search as user `id`, with the headers Open WebUI forwards.
async fn as_user(g: &TestGateway, id: &str, query: &str) -> Reply {
    post_with(
        g,
        "/openwebui/search",
        Some(ALICE_KEY),
        json!({"query": query}),
        &[
            ("x-openwebui-user-id", id),
            ("x-openwebui-user-email", "ada@example.org"),
            ("x-openwebui-user-name", "Ada%20L%C3%B6velace"),
            ("x-openwebui-user-role", "user"),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn trusted_open_webui_users_are_sub_clients_with_their_own_limits() {
    let keys = keys_file(&[("alice", ALICE_KEY, ":100")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let vars = [
        ("API_KEYS_FILE", path.as_str()),
        ("TEST_CLIENT_KEY", ALICE_KEY),
        ("ADMIN_TOKEN", ADMIN),
        ("OPENWEBUI_USER_RATE_LIMIT_PER_MINUTE", "1"),
    ];
    // Trusted: each user is a sub-client with a rate of its own.
    let mut trusted = vars.to_vec();
    trusted.push(("OPENWEBUI_USER_HEADER_TRUST", "true"));
    let s = SimStack::start(&[], &trusted).await;
    let g = &s.gateway;
    let alices = |text: &str| {
        metric_value(
            text,
            "searxng_gateway_client_requests_total",
            &[("client", "alice")],
        )
    };
    let before = alices(&g.metrics_text().await);
    assert_eq!(as_user(g, "u-1", "first").await.status, 200);
    let second = as_user(g, "u-1", "second").await;
    assert_eq!(second.status, 429, "the user's own rate: {}", second.text);
    assert!(second.json["detail"].is_string());
    assert_eq!(as_user(g, "u-2", "third").await.status, 200, "another user");
    let status = g
        .http
        .get(format!("{}/admin/status", g.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("admin status")
        .json::<Value>()
        .await
        .expect("JSON");
    let clients = status["clients"].as_array().expect("clients");
    let u1 = clients
        .iter()
        .find(|c| c["client"] == "alice/u-1")
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(u1["parent"], "alice");
    assert_eq!(u1["end_user"]["name"], "Ada Lövelace");
    assert_eq!(u1["requests_per_minute"], 1);
    let metrics = g.metrics_text().await;
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_client_requests_total",
            &[("client", "alice/u-1")]
        ),
        1.0
    );
    assert_eq!(
        alices(&metrics) - before,
        2.0,
        "the key counts every user's admitted request"
    );
    assert!(
        !metrics.contains("ada@example.org"),
        "never an email in a label"
    );
    // Untrusted (the default): the headers name nobody.
    let s = SimStack::start(&[], &vars).await;
    assert_eq!(as_user(&s.gateway, "u-1", "first").await.status, 200);
    assert_eq!(as_user(&s.gateway, "u-1", "second").await.status, 200);
    assert!(!s.gateway.metrics_text().await.contains("alice/u-1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn domain_filters_keep_what_each_door_asked_for_and_site_goes_to_searxng_for_one() {
    let s = SimStack::start(&[], &[]).await;
    let g = &s.gateway;
    // Tavily: one included domain — SearXNG is asked with `site:`, and only it comes back.
    let tavily = post(
        g,
        "/tavily/search",
        Some("tvly-any"),
        json!({"query": "filtered", "include_domains": ["https://www.shared.example.com/"], "max_results": 20}),
    )
    .await;
    assert_eq!(tavily.status, 200, "{}", tavily.text);
    let kept = urls(&tavily.json["results"]);
    assert!(!kept.is_empty());
    assert!(
        kept.iter().all(|u| host(u) == "www.shared.example.com"),
        "{kept:?}"
    );
    assert_eq!(
        sent(s.searxng.last_request(), "q").as_deref(),
        Some("filtered site:shared.example.com")
    );
    // Perplexity: a leading `-` excludes, and no `site:` is sent for an exclusion.
    let perplexity = post(
        g,
        "/perplexity/search",
        Some("pplx-any"),
        json!({"query": "unfiltered", "search_domain_filter": ["-shared.example.com"], "max_results": 20}),
    )
    .await;
    let left = urls(&perplexity.json["results"]);
    assert!(!left.is_empty());
    assert!(
        left.iter().all(|u| !u.contains("shared.example.com")),
        "{left:?}"
    );
    assert_eq!(
        sent(s.searxng.last_request(), "q").as_deref(),
        Some("unfiltered")
    );
    // Firecrawl: two included domains — no `site:`, both kept, nothing else.
    let firecrawl = post(
        g,
        "/v2/search",
        None,
        json!({"query": "two domains", "includeDomains": ["alpha.example.org", "beta.example.org"], "limit": 50}),
    )
    .await;
    let both = urls(&firecrawl.json["data"]["web"]);
    assert!(both.iter().any(|u| host(u) == "alpha.example.org"));
    assert!(both.iter().any(|u| host(u) == "beta.example.org"));
    assert!(
        both.iter().all(|u| host(u).ends_with("a.example.org")),
        "{both:?}"
    );
    assert_eq!(
        sent(s.searxng.last_request(), "q").as_deref(),
        Some("two domains")
    );
    // The filter is part of the search: the same query unfiltered is another answer.
    let plain = post(
        g,
        "/tavily/search",
        Some("tvly-any"),
        json!({"query": "filtered"}),
    )
    .await;
    assert_eq!(plain.cache, "miss");
}

#[tokio::test(flavor = "multi_thread")]
async fn premium_providers_get_the_domains_in_their_own_fields() {
    let s = SimStack::start(
        &[Provider::Brave, Provider::Exa, Provider::Tavily],
        &[
            ("T1_PREMIUM_COUNT", "3"),
            ("SUFFICIENT_MIN_RESULTS", "1000"),
        ],
    )
    .await;
    let reply = post(
        &s.gateway,
        "/tavily/search",
        Some("tvly-any"),
        json!({"query": "premium domains", "include_domains": ["docs.rs"], "exclude_domains": ["spam.example"]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let by_kind = |kind: Provider| {
        s.providers
            .iter()
            .find(|p| p.kind() == kind)
            .and_then(|p| p.last_request())
            .unwrap_or_else(|| panic!("{kind:?} was called"))
    };
    let brave = by_kind(Provider::Brave);
    assert_eq!(brave.query_param("q"), Some("premium domains site:docs.rs"));
    let exa = by_kind(Provider::Exa).json().expect("Exa's JSON body");
    assert_eq!(exa["includeDomains"], json!(["docs.rs"]));
    assert_eq!(exa["excludeDomains"], json!(["spam.example"]));
    let tavily = by_kind(Provider::Tavily)
        .json()
        .expect("Tavily's JSON body");
    assert_eq!(tavily["include_domains"], json!(["docs.rs"]));
    assert_eq!(tavily["exclude_domains"], json!(["spam.example"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_firecrawl_search_that_needs_premium_past_the_budget_is_402() {
    let keys = keys_file(&[("alice", ALICE_KEY, "::1")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[Provider::Brave],
        &[
            ("API_KEYS_FILE", &path),
            ("TEST_CLIENT_KEY", ALICE_KEY),
            ("SEARXNG_FAIL_THRESHOLD", "1000"),
        ],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Status(500));
    let g = &s.gateway;
    let first = post(
        g,
        "/v2/search",
        Some(ALICE_KEY),
        json!({"query": "paid once"}),
    )
    .await;
    assert_eq!(first.status, 200, "Brave answered: {}", first.text);
    let second = post(
        g,
        "/v2/search",
        Some(ALICE_KEY),
        json!({"query": "paid twice"}),
    )
    .await;
    assert_eq!(second.status, 402, "{}", second.text);
    assert_eq!(second.json["success"], false);
    assert_eq!(s.providers[0].calls(), 1, "no premium call past the budget");
}

#[tokio::test(flavor = "multi_thread")]
async fn capabilities_say_what_this_configuration_serves() {
    let s = SimStack::start(&[Provider::Brave], &[]).await;
    let g = &s.gateway;
    let before = g.get("/v1/capabilities").await;
    assert_eq!(before.status, 200, "{}", before.text);
    let doc = &before.json;
    assert_eq!(doc["search"]["premium_providers"], json!(["brave"]));
    assert_eq!(doc["search"]["searxng_instances"], 1);
    assert_eq!(
        doc["read"]["formats"],
        json!(["markdown", "text", "html", "raw_html"])
    );
    assert_eq!(doc["read"]["browser"], false);
    assert_eq!(doc["read"]["screenshot_formats"], json!([]));
    assert_eq!(
        doc["read"]["passages"], true,
        "Tavily's extract chooses passages"
    );
    assert_eq!(doc["read"]["premium_readers"], json!([]));
    assert_eq!(doc["endpoints"]["exa_search"], "/exa/search");
    assert_eq!(doc["endpoints"]["jina_read"], "/r/{url}");
    let refused: Vec<&str> = doc["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(refused.iter().any(|r| r.contains("summary")), "{refused:?}");
    assert!(
        !refused.iter().any(|r| r.contains("highlights")),
        "Exa's highlights are answered now: {refused:?}"
    );
    assert!(
        refused.iter().any(|r| r.contains("X-Engine: browser")),
        "{refused:?}"
    );
    assert!(
        !before.text.contains("127.0.0.1"),
        "no upstream URL: {}",
        before.text
    );

    assert_eq!(
        g.get("/search?q=capabilities&format=json").await.status,
        200
    );
    let after = g.get("/v1/capabilities").await;
    let engines = after.json["search"]["engines"].as_array().expect("engines");
    assert!(
        !engines.is_empty(),
        "the engines SearXNG answered with: {}",
        after.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn capabilities_are_behind_the_key() {
    let keys = keys_file(&[("alice", ALICE_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[
            ("API_KEYS_FILE", path.as_str()),
            ("TEST_CLIENT_KEY", ALICE_KEY),
        ],
    )
    .await;
    assert_eq!(s.gateway.get("/v1/capabilities").await.status, 401);
    let keyed = s
        .gateway
        .get(&format!("/v1/capabilities?api_key={ALICE_KEY}"))
        .await;
    assert_eq!(keyed.status, 200, "{}", keyed.text);
    assert_eq!(keyed.json["search"]["premium_providers"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_firecrawl_scrape_honours_max_age_zero_and_refuses_what_needs_a_browser() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set_default(Page::html(corpus("ars-1").0));
    let g = &s.gateway;
    let url = s.site.url("/scraped");
    for _ in 0..2 {
        let reply = post(g, "/v2/scrape", Some("fc-any"), json!({"url": url})).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(
        s.site.hits("/scraped"),
        1,
        "the second scrape came from the cache"
    );
    let fresh = post(
        g,
        "/v2/scrape",
        Some("fc-any"),
        json!({"url": url, "maxAge": 0}),
    )
    .await;
    assert_eq!(fresh.status, 200, "{}", fresh.text);
    assert_eq!(s.site.hits("/scraped"), 2, "maxAge 0 read the page again");
    let acted = post(
        g,
        "/v2/scrape",
        Some("fc-any"),
        json!({"url": url, "actions": [{"type": "click", "selector": "#more"}]}),
    )
    .await;
    assert_eq!(acted.status, 400, "{}", acted.text);
    assert!(
        acted.json["error"]
            .as_str()
            .is_some_and(|e| e.contains("actions")),
        "{}",
        acted.text
    );
    assert_eq!(s.site.hits("/scraped"), 2, "a refused scrape reads nothing");
}

/// The reranker door (#41): the client's documents best first against its query, in the
/// Jina/Cohere answer, indices and documents as sent; `top_n` and `return_documents` honoured;
/// Cohere's `max_tokens_per_doc` refused by name; behind the inbound key like every door.
#[tokio::test(flavor = "multi_thread")]
async fn the_rerank_door_ranks_a_clients_documents_behind_the_key() {
    let keys = keys_file(&[("alice", ALICE_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[
            ("API_KEYS_FILE", path.as_str()),
            ("TEST_CLIENT_KEY", ALICE_KEY),
        ],
    )
    .await;
    let g = &s.gateway;
    let documents = json!([
        "The observatory opens at night for visitors.",
        {"text": "Its telescope mirror is 74 centimetres across, installed in 1911."},
        "The bakery sells saffron buns on Saturdays.",
    ]);
    let body = json!({"model": "jina-reranker-v2-base-multilingual",
        "query": "how wide is the telescope mirror", "documents": documents});
    assert_eq!(post(g, "/v1/rerank", None, body.clone()).await.status, 401);
    let reply = post(g, "/v1/rerank", Some(ALICE_KEY), body).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let results = reply.json["results"].as_array().expect("results");
    let order: Vec<u64> = results.iter().filter_map(|r| r["index"].as_u64()).collect();
    assert_eq!(order[0], 1, "the mirror first: {}", reply.text);
    assert_eq!(order.len(), 3, "all by default");
    assert_eq!(
        results[0]["document"]["text"],
        json!("Its telescope mirror is 74 centimetres across, installed in 1911.")
    );
    let best = results[0]["relevance_score"].as_f64().expect("a score");
    assert!(best > 0.0 && best < 1.0, "{best}");
    assert_eq!(
        results[2]["relevance_score"],
        json!(0.0),
        "no word in common"
    );
    assert_eq!(
        reply.json["model"],
        json!("jina-reranker-v2-base-multilingual")
    );
    assert!(reply.json["usage"]["total_tokens"].as_u64().unwrap_or(0) > 20);

    let short = post(
        g,
        "/v1/rerank",
        Some(ALICE_KEY),
        json!({"query": "saffron buns", "documents": documents, "top_n": 1,
            "return_documents": false}),
    )
    .await;
    assert_eq!(short.status, 200, "{}", short.text);
    assert_eq!(
        short.json["results"],
        json!([{"index": 2,
        "relevance_score": short.json["results"][0]["relevance_score"]}])
    );
    assert!(short.json["results"][0].get("document").is_none());

    let refused = post(
        g,
        "/v1/rerank",
        Some(ALICE_KEY),
        json!({"query": "q", "documents": ["a"], "max_tokens_per_doc": 512}),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(
        refused.json["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_tokens_per_doc")),
        "{}",
        refused.text
    );
    let capabilities = g
        .get(&format!("/v1/capabilities?api_key={ALICE_KEY}"))
        .await;
    assert!(
        capabilities.text.contains("/v1/rerank"),
        "{}",
        capabilities.text
    );
}
