//! The MCP surface through `rmcp`'s own client: over Streamable HTTP against the gateway on port 0, and
//! over stdio against `searxng-gateway mcp` launched as a child process — what the tool lists, what a
//! call gives, what SearXNG was asked, and how every kind of bad input is refused.

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use simulator::premium::{ProviderBehaviour, SimError};
use simulator::searxng::SearxngMode;
use simulator::Provider::Brave;
use tokio::io::AsyncReadExt;

use crate::support::process;
use crate::support::reading::ReadStack;
use crate::support::stack::SimStack;
use crate::support::wait;
use gateway_engine::read::passages::TokenCounter;
use gateway_engine::settings::TokenizerEncoding;
use simulator::site::Page;

type Client = RunningService<RoleClient, ()>;

async fn http_client(s: &SimStack) -> Client {
    client_of(&s.gateway.url).await
}

async fn client_of(gateway_url: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(format!("{gateway_url}/mcp"));
    wait::guarded("the MCP client to connect", ().serve(transport))
        .await
        .expect("the MCP client connects over Streamable HTTP")
}

fn arguments(value: Value) -> JsonObject {
    value.as_object().cloned().expect("arguments are an object")
}

async fn web_search(client: &Client, args: Value) -> CallToolResult {
    call(client, "web_search", args).await
}

async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
    wait::guarded(
        "the tool to answer",
        client.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments(args))),
    )
    .await
    .expect("tools/call answers")
}

/// Tokens as the gateway's default tokenizer (o200k) counts them.
fn tokens(text: &str) -> usize {
    TokenCounter::new(TokenizerEncoding::O200kBase).count(text)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn urls(results: &Value) -> Vec<String> {
    results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["url"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_lists_web_search_and_web_fetch_with_input_and_output_schemas() {
    let s = SimStack::start(&[], &[]).await;
    let client = http_client(&s).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("searxng-gateway")
    );
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "web_search",
            "web_fetch",
            "web_research",
            "web_map",
            "web_crawl"
        ]
    );
    let fetch = Value::Object((*tools[1].input_schema).clone());
    assert_eq!(fetch["required"], json!(["url"]));
    for name in ["format", "max_length", "start_index", "query", "max_tokens"] {
        assert!(fetch["properties"].get(name).is_some(), "{name}");
    }
    let research = Value::Object((*tools[2].input_schema).clone());
    assert_eq!(research["required"], json!(["query"]));
    for name in ["max_results", "max_tokens"] {
        assert!(research["properties"].get(name).is_some(), "{name}");
    }
    let tool = &tools[0];
    let input = Value::Object((*tool.input_schema).clone());
    assert_eq!(input["required"], json!(["query"]));
    for name in [
        "max_results",
        "categories",
        "language",
        "time_range",
        "safesearch",
        "pageno",
    ] {
        assert!(input["properties"].get(name).is_some(), "{name}");
    }
    let output = Value::Object((*tool.output_schema.clone().expect("an output schema")).clone());
    assert!(output.to_string().contains("publishedDate"));
    client.cancel().await.expect("the client disconnects");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_search_answers_from_the_same_pipeline_and_cache_as_search() {
    let s = SimStack::start(&[], &[]).await;
    let direct = s
        .gateway
        .search(&[("q", "shared cache"), ("format", "json")])
        .await;
    assert_eq!(direct.status, 200, "{}", direct.text);
    let client = http_client(&s).await;
    let result = web_search(&client, json!({"query": "shared cache", "max_results": 50})).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let structured = result
        .structured_content
        .clone()
        .expect("structured results");
    assert_eq!(
        urls(&structured["results"]),
        urls(&direct.json["results"]),
        "the same merged results, in the same order"
    );
    let first = &structured["results"][0];
    for field in ["title", "url", "content", "engines"] {
        assert!(first.get(field).is_some(), "{field}: {first}");
    }
    assert_eq!(s.searxng_hits(), 1, "the tool call was a cache hit");
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_requests_total",
                &[("outcome", "cache_hit")]
            )
            .await,
        1.0
    );
    let rendered = text(&result);
    assert!(
        rendered.contains("results for \"shared cache\""),
        "{rendered}"
    );
    assert!(rendered.contains(&urls(&direct.json["results"])[0]));
    client.cancel().await.expect("the client disconnects");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_search_sends_its_parameters_to_searxng_and_returns_at_most_max_results() {
    let s = SimStack::start(&[], &[]).await;
    let client = http_client(&s).await;
    let result = web_search(
        &client,
        json!({"query": "Rust Async", "max_results": 2, "categories": ["general"], "language": "de",
               "time_range": "month", "safesearch": 2, "pageno": 2}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let structured = result
        .structured_content
        .clone()
        .expect("structured results");
    assert_eq!(structured["results"].as_array().map(Vec::len), Some(2));
    assert_eq!(structured["query"], "Rust Async");
    let sent = s.searxng.last_request().expect("SearXNG was asked");
    let param = |name: &str| {
        sent.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(param("q"), "Rust Async");
    assert_eq!(param("categories"), "general");
    assert_eq!(param("language"), "de");
    assert_eq!(param("time_range"), "month");
    assert_eq!(param("safesearch"), "2");
    assert_eq!(param("pageno"), "2");
    client.cancel().await.expect("the client disconnects");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_upstream_failing_is_a_tool_error_naming_the_upstreams_and_their_error_classes() {
    let s = SimStack::start(&[Brave], &[]).await;
    s.searxng.set_mode(SearxngMode::Status(500));
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
            retry_after_secs: 1,
        }));
    let client = http_client(&s).await;
    let result = web_search(&client, json!({"query": "outage"})).await;
    assert_eq!(result.is_error, Some(true));
    let message = text(&result);
    assert!(message.contains("searxng: server_error"), "{message}");
    assert!(message.contains("brave: rate_limited"), "{message}");
    assert!(
        !message.contains("search error"),
        "no upstream body: {message}"
    );
    client.cancel().await.expect("the client disconnects");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_are_tool_errors_naming_what_to_fix_and_never_reach_searxng() {
    let s = SimStack::start(&[], &[("MAX_QUERY_BYTES", "32")]).await;
    let client = http_client(&s).await;
    for (args, mentions) in [
        (json!({}), "query is required"),
        (json!({"query": "   "}), "query is required"),
        (json!({"query": "x".repeat(33)}), "longer than 32 bytes"),
        (json!({"query": 42}), "query"),
        (json!({"query": "q", "max_results": "ten"}), "max_results"),
        (json!({"query": "q", "max_results": 500}), "max_results"),
        (json!({"query": "q", "categories": "news"}), "categories"),
        (json!({"query": "q", "time_range": "decade"}), "time_range"),
        (json!({"query": "q", "safesearch": 7}), "safesearch"),
        (json!({"query": "q", "pageno": 0}), "pageno"),
        (json!({"query": "q", "language": "en; drop"}), "language"),
    ] {
        let result = web_search(&client, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}");
        let message = text(&result);
        assert!(message.contains(mentions), "{args}: {message}");
    }
    let unknown = client
        .call_tool(CallToolRequestParams::new("web_scrape"))
        .await;
    assert!(
        unknown.is_err(),
        "an unknown tool is a protocol error: {unknown:?}"
    );
    assert_eq!(s.searxng_hits(), 0, "nothing invalid reached SearXNG");
    client.cancel().await.expect("the client disconnects");
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_the_transport_cannot_read_get_json_rpc_errors() {
    let s = SimStack::start(&[], &[]).await;
    let url = format!("{}/mcp", s.gateway.url);
    let post = |body: Vec<u8>| {
        s.gateway
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
    };
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(100 * 1024)
    );
    let cases = [
        (post(b"{not json".to_vec()), 400, -32700),
        (post(b"[1, 2".to_vec()), 400, -32700),
        (post(br#"{"hello": "world"}"#.to_vec()), 400, -32600),
        (post(huge.into_bytes()), 413, -32600),
        (s.gateway.http.get(&url), 405, -32600),
    ];
    for (request, status, code) in cases {
        let response = request.send().await.expect("the gateway answers");
        assert_eq!(response.status().as_u16(), status);
        let body: Value = response.json().await.expect("a JSON body");
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert_eq!(s.searxng_hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn searxng_gateway_mcp_serves_the_tool_on_stdio_with_logs_on_stderr_only() {
    let s = SimStack::start(&[], &[]).await;
    let searxng = s.searxng.base_url();
    let mut command = tokio::process::Command::from(process::command(&[
        ("SEARXNG_BACKEND_URL", &searxng),
        ("LOG_LEVEL", "debug"),
    ]));
    command.arg("mcp");
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("searxng-gateway mcp starts");
    let client = wait::guarded("the stdio handshake", ().serve(transport))
        .await
        .expect("the MCP client connects over stdio");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools[0].name, "web_search");
    let result = web_search(&client, json!({"query": "over stdio"})).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let structured = result
        .structured_content
        .clone()
        .expect("structured results");
    assert!(!urls(&structured["results"]).is_empty());
    let hits = s.searxng.hits();
    assert!(
        hits >= 1,
        "the in-process pipeline asked the simulated SearXNG"
    );
    wait::guarded("the client to close stdin", client.cancel())
        .await
        .expect("the client disconnects");
    let mut logs = String::new();
    wait::guarded(
        "the server to end its stderr",
        stderr.expect("stderr is piped").read_to_string(&mut logs),
    )
    .await
    .expect("read stderr");
    assert!(logs.contains("MCP server on stdio"), "{logs}");
    assert!(logs.contains("surface=\"mcp\""), "{logs}");
    assert!(logs.contains("stopped"), "exits when stdin closes: {logs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_line_searxng_gateway_mcp_writes_on_stdout_is_a_json_rpc_message() {
    let s = SimStack::start(&[], &[]).await;
    let searxng = s.searxng.base_url();
    let mut command = tokio::process::Command::from(process::command(&[
        ("SEARXNG_BACKEND_URL", &searxng),
        ("LOG_LEVEL", "trace"),
    ]));
    let mut child = command
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("searxng-gateway mcp starts");
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "web_search", "arguments": {"query": "stdout"}}}),
    ];
    let mut stdin = child.stdin.take().expect("stdin is piped");
    for message in &messages {
        tokio::io::AsyncWriteExt::write_all(&mut stdin, format!("{message}\n").as_bytes())
            .await
            .expect("write a message");
    }
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = tokio::io::BufReader::new(&mut stdout);
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let mut line = String::new();
        let read = wait::guarded(
            "an answer on stdout",
            tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut line),
        )
        .await
        .expect("read stdout");
        assert!(read > 0, "stdout ended early");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("not JSON on stdout ({err}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        answered.push(message);
    }
    assert_eq!(answered[1]["id"], 2);
    assert_eq!(answered[1]["result"]["isError"], false, "{}", answered[1]);
    drop(stdin);
    let mut rest = String::new();
    wait::guarded("stdout to end", lines.read_to_string(&mut rest))
        .await
        .expect("read the rest of stdout");
    assert!(rest.trim().is_empty(), "nothing else on stdout: {rest:?}");
    let status = wait::guarded("the process to exit", child.wait())
        .await
        .expect("wait");
    assert!(status.success(), "{status}");
    let mut logs = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut logs)
        .await
        .expect("read stderr");
    assert!(
        logs.lines().count() > 3,
        "trace logging went to stderr: {logs}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_http_transport_answers_whatever_host_name_the_gateway_is_reached_by() {
    let s = SimStack::start(&[], &[]).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "compose", "version": "1"}}});
    let response = s
        .gateway
        .http
        .post(format!("{}/mcp", s.gateway.url))
        .header("host", "searxng-gateway:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.expect("a JSON-RPC answer");
    assert_eq!(body["result"]["serverInfo"]["name"], "searxng-gateway");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_fetch_with_a_query_returns_the_passages_that_answer_it_within_max_tokens() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set("/guide", Page::html(crate::passages::guide()));
    let url = s.site.url("/guide");
    let client = client_of(&s.gateway.url).await;

    let whole = call(&client, "web_fetch", json!({ "url": url })).await;
    let page = whole.structured_content.expect("a page")["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mirror_at = page
        .find("74 centimetres")
        .expect("the fact is on the page");
    assert!(
        page[..mirror_at].chars().count() > 1500,
        "past a 1,500-character cut"
    );

    let asked = call(
        &client,
        "web_fetch",
        json!({"url": url, "query": "How wide is the telescope's mirror?", "max_tokens": 150}),
    )
    .await;
    assert_ne!(asked.is_error, Some(true), "{}", text(&asked));
    let shown = text(&asked);
    assert!(shown.contains("74 centimetres"), "{shown}");
    assert!(tokens(&shown) <= 150, "{} tokens: {shown}", tokens(&shown));
    let structured = asked.structured_content.expect("structured content");
    assert_eq!(structured["tokens"], tokens(&shown));
    let passages = structured["passages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        passages.iter().any(|p| p["heading_path"]
            .as_array()
            .is_some_and(|h| h.iter().any(|h| h == "The observatory"))),
        "each passage under its heading path: {passages:?}"
    );

    let cut = call(&client, "web_fetch", json!({"url": url, "max_tokens": 120})).await;
    let shown = text(&cut);
    assert!(tokens(&shown) <= 120, "{} tokens: {shown}", tokens(&shown));
    let content = cut.structured_content.expect("structured content")["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let first = content.lines().next().unwrap_or_default();
    assert!(
        !first.is_empty() && page.starts_with(first),
        "the page's first passages: {content}"
    );
    let last = content.lines().last().unwrap_or_default();
    assert!(
        page.contains(last) && last.ends_with('.'),
        "cut at a passage boundary, not mid-sentence: {last:?}"
    );
    assert!(!content.contains("74 centimetres"));

    let refused = call(&client, "web_fetch", json!({"url": url, "max_tokens": 10})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("max_tokens"), "{}", text(&refused));
    assert_eq!(
        s.site.hits("/guide"),
        1,
        "every passage from the page read once"
    );
    client.cancel().await.expect("the client disconnects");
}

/// A page about a second town's observatory, its telescope's fact in its third section.
fn second_page() -> String {
    let mut body = String::from(
        "<html><head><title>Kelso observatory</title></head><body><article><h1>Kelso observatory</h1>",
    );
    for (section, fact) in [
        (
            "Visiting",
            "The gardens around it are open to walkers in summer.",
        ),
        (
            "History",
            "The building was paid for by a subscription of the townsfolk.",
        ),
        (
            "The telescope",
            "Its refracting telescope has a lens 38 centimetres across.",
        ),
    ] {
        body.push_str(&format!(
            "<h2>{section}</h2><p>{fact} Visitors come from the valley and further afield, \
             and the volunteers who keep the place tell them its story at length.</p>"
        ));
    }
    body.push_str("</article></body></html>");
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn web_research_returns_the_best_passages_of_the_pages_read_with_their_urls_within_its_budget(
) {
    let s = ReadStack::start(&[], &[]).await;
    let client = client_of(&s.gateway.url).await;
    let query = "telescope mirror lens centimetres";
    let searched = web_search(&client, json!({"query": query, "max_results": 3})).await;
    let found = urls(&searched.structured_content.expect("results")["results"]);
    assert_eq!(found.len(), 3, "{found:?}");
    let path = |url: &str| url.trim_start_matches(&s.site.origin()).to_owned();
    s.site
        .set(&path(&found[0]), Page::html(crate::passages::guide()));
    s.site.set(&path(&found[1]), Page::html(second_page()));
    s.site.set(&path(&found[2]), Page::status(500, "broken"));

    let research = call(
        &client,
        "web_research",
        json!({"query": query, "max_results": 3, "max_tokens": 400}),
    )
    .await;
    assert_ne!(research.is_error, Some(true), "{}", text(&research));
    let shown = text(&research);
    assert!(tokens(&shown) <= 400, "{} tokens: {shown}", tokens(&shown));
    assert!(
        shown.contains("74 centimetres") && shown.contains("38 centimetres"),
        "{shown}"
    );
    let structured = research.structured_content.expect("structured content");
    let passages = structured["passages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let from = |url: &str, fact: &str| {
        passages
            .iter()
            .any(|p| p["url"] == url && p["text"].as_str().is_some_and(|t| t.contains(fact)))
    };
    assert!(from(&found[0], "74 centimetres"), "{passages:?}");
    assert!(from(&found[1], "38 centimetres"), "{passages:?}");
    assert!(passages
        .iter()
        .all(|p| p["title"].as_str().is_some_and(|t| !t.is_empty())));
    assert_eq!(structured["failed"][0]["url"], found[2].as_str());
    assert!(
        shown.contains(&found[2]),
        "the page not read is listed: {shown}"
    );

    let unknown = call(&client, "web_research", json!({"query": query, "urls": []})).await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text(&unknown).contains("urls"), "{}", text(&unknown));
    client.cancel().await.expect("the client disconnects");
}

/// A small site: `/` links to `/guide/a`, `/guide/b` (which links to `/guide/c`) and
/// `/private/x` (robots.txt disallows it); the sitemap lists `/guide/d`.
fn small_site(s: &ReadStack) {
    let origin = s.site.origin();
    let page = |title: &str, body: &str, links: &[&str]| {
        let anchors: String = links
            .iter()
            .map(|href| format!(" <a href=\"{href}\">{href}</a>"))
            .collect();
        let filler = "The observatory's guide, written for visitors who come at night. ".repeat(6);
        Page::html(format!(
            "<html><head><title>{title}</title></head><body><article><h1>{title}</h1>\
             <p>{filler}</p><p>{body}{anchors}</p><p>{filler}</p></article></body></html>"
        ))
    };
    s.site.set(
        "/",
        page(
            "Home",
            "Start here.",
            &["/guide/a", "/guide/b", "/private/x"],
        ),
    );
    s.site.set(
        "/guide/a",
        page(
            "Opening hours",
            "The dome opens at nine in the evening.",
            &[],
        ),
    );
    s.site.set(
        "/guide/b",
        page(
            "The telescope",
            "Its mirror is 74 centimetres wide.",
            &["/guide/c"],
        ),
    );
    s.site.set(
        "/guide/c",
        page("Parking", "Park by the gate; the road is steep.", &[]),
    );
    s.site
        .set("/guide/d", page("Tickets", "Tickets at the door.", &[]));
    s.site
        .set("/private/x", page("Private", "Staff only.", &[]));
    s.site.set(
        "/robots.txt",
        Page::ok(
            "text/plain",
            format!("User-agent: *\nDisallow: /private\nSitemap: {origin}/sitemap.xml\n"),
        ),
    );
    s.site.set(
        "/sitemap.xml",
        Page::ok(
            "application/xml",
            format!("<urlset><url><loc>{origin}/guide/d</loc></url></urlset>"),
        ),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn web_map_lists_a_sites_urls_and_web_crawl_reads_it_whole_or_for_a_query() {
    let s = ReadStack::start(&[], &[]).await;
    small_site(&s);
    let origin = s.site.origin();
    let client = client_of(&s.gateway.url).await;

    let mapped = call(&client, "web_map", json!({"url": format!("{origin}/")})).await;
    assert_ne!(mapped.is_error, Some(true), "{}", text(&mapped));
    let links = urls(&mapped.structured_content.expect("links")["links"]);
    for path in ["/guide/a", "/guide/b", "/guide/d"] {
        assert!(
            links.contains(&format!("{origin}{path}")),
            "{path}: {links:?}"
        );
    }
    assert!(
        !links.contains(&format!("{origin}/private/x")),
        "robots.txt disallows it: {links:?}"
    );
    assert_eq!(
        s.site.hits("/guide/a"),
        0,
        "a map reads no page but the start"
    );

    // Whole pages, in the order read, within the budget.
    let crawled = call(
        &client,
        "web_crawl",
        json!({"url": format!("{origin}/"), "limit": 10, "max_tokens": 5000}),
    )
    .await;
    assert_ne!(crawled.is_error, Some(true), "{}", text(&crawled));
    let shown = text(&crawled);
    assert!(tokens(&shown) <= 5000);
    let pages = crawled.structured_content.expect("pages")["pages"].clone();
    let mut read = urls(&pages);
    read.sort();
    assert_eq!(
        read,
        ["/", "/guide/a", "/guide/b", "/guide/c", "/guide/d"]
            .iter()
            .map(|p| format!("{origin}{p}"))
            .collect::<Vec<_>>()
    );
    assert!(shown.contains("The dome opens at nine") && shown.contains("the road is steep"));
    assert_eq!(s.site.hits("/private/x"), 0, "robots.txt honoured");

    // With a query: the passages that answer it, within a small budget.
    let answered = call(
        &client,
        "web_crawl",
        json!({"url": format!("{origin}/"), "query": "How wide is the telescope mirror?",
               "max_tokens": 250, "include_paths": ["^/$", "^/guide/"]}),
    )
    .await;
    let shown = text(&answered);
    assert_ne!(answered.is_error, Some(true), "{shown}");
    assert!(tokens(&shown) <= 250, "{} tokens: {shown}", tokens(&shown));
    assert!(shown.contains("74 centimetres"), "{shown}");
    let passages = answered.structured_content.expect("passages")["passages"].clone();
    assert_eq!(
        passages[0]["url"],
        format!("{origin}/guide/b"),
        "{passages}"
    );

    let refused = call(
        &client,
        "web_crawl",
        json!({"url": format!("{origin}/"), "webhook": "http://example.test/"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("webhook"), "{}", text(&refused));
    client.cancel().await.expect("the client disconnects");
}

/// With `RERANK_URL`, `web_fetch`'s passages for a query come in the reranker's order: with room
/// for about one passage, the one it favours (the bakery's) rather than BM25's (the mirror's);
/// the reranker failing gives BM25's again.
#[tokio::test(flavor = "multi_thread")]
async fn web_fetch_takes_the_rerankers_order_and_bm25s_when_it_fails() {
    use simulator::reranker::{RerankerBehaviour, SimulatedReranker};

    let reranker = SimulatedReranker::start().await.expect("reranker starts");
    reranker.set_behaviour(RerankerBehaviour::Favour(vec!["saffron".to_owned()]));
    let rerank_url = reranker.url();
    let s = ReadStack::start(&[], &[("RERANK_URL", rerank_url.as_str())]).await;
    s.site.set("/guide", Page::html(crate::passages::guide()));
    let url = s.site.url("/guide");
    let client = client_of(&s.gateway.url).await;
    let ask =
        json!({"url": url, "query": "How wide is the telescope's mirror?", "max_tokens": 110});

    let shown = text(&call(&client, "web_fetch", ask.clone()).await);
    assert!(
        shown.contains("saffron buns"),
        "the reranker's best: {shown}"
    );
    assert!(!shown.contains("74 centimetres"), "{shown}");
    assert!(tokens(&shown) <= 110);
    assert_eq!(
        reranker.calls(),
        1,
        "ranked once, however often the budget is tried"
    );

    reranker.set_behaviour(RerankerBehaviour::ServerError);
    let shown = text(&call(&client, "web_fetch", ask).await);
    assert!(shown.contains("74 centimetres"), "BM25's best: {shown}");
}
