//! What protects the gateway and SearXNG from their clients: load shedding of cache misses
//! (`MAX_CONCURRENT_MISSES`, `MAX_MISS_WAIT_MS`) and the server limits (`MAX_CONNECTIONS`,
//! `REQUEST_READ_TIMEOUT_SECONDS`, `KEEPALIVE_IDLE_SECONDS`, `MAX_URL_BYTES`, `MAX_HEADER_BYTES`,
//! `MAX_BODY_BYTES`), and `Connection: close` on an answer that left its request's body unread. Each
//! is proven from outside: the status and JSON body a client gets, the
//! connection closing, `http_rejections_total` / `requests_shed_total`, and what SearXNG saw.

use serde_json::Value;
use simulator::searxng::SearxngMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::gateway::{metric_value, TestGateway};
use crate::support::keys::keys_file;
use crate::support::stack::SimStack;
use crate::support::wait;

async fn stack(vars: &[(&str, &str)]) -> SimStack {
    SimStack::start(&[], vars).await
}

/// What a raw connection got back before the gateway closed it.
struct RawReply {
    status: u16,
    head: String,
    body: String,
    json: Value,
}

/// Sends `request` as is on a fresh connection and reads until the gateway closes it.
async fn raw_exchange(url: &str, request: &[u8]) -> RawReply {
    let mut stream = TcpStream::connect(url.trim_start_matches("http://"))
        .await
        .expect("connect to the gateway");
    stream.write_all(request).await.expect("send the request");
    read_until_closed(&mut stream).await
}

/// Reads what the gateway sends until it closes the connection (bounded by the hang guard).
async fn read_until_closed(stream: &mut TcpStream) -> RawReply {
    let mut bytes = Vec::new();
    let _ = wait::guarded("the gateway to close the connection", async {
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    RawReply {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
        json: serde_json::from_str(body).unwrap_or(Value::Null),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_miss_that_finds_every_fan_out_slot_taken_is_shed_but_hits_and_followers_are_not() {
    let s = stack(&[
        ("MAX_CONCURRENT_MISSES", "1"),
        ("MAX_MISS_WAIT_MS", "50"),
        ("FALLBACK_TIMEOUT_SECONDS", "3"),
    ])
    .await;
    let g = &s.gateway;
    // A cached answer, from before the upstream stops answering.
    assert_eq!(g.search(&[("q", "cached")]).await.status, 200);

    // The one slot: a miss whose SearXNG never answers holds it until its budget ends.
    s.searxng.set_mode(SearxngMode::Hang);
    let leader = g.spawn_search(&[("q", "held")]);
    wait::until("the leader's fan-out to reach SearXNG", || async {
        s.searxng.in_flight() == 1
    })
    .await;
    // The same search joins the running fan-out: no slot of its own, never shed.
    let follower = g.spawn_search(&[("q", "held")]);
    wait::until(
        "the identical search to join the running fan-out",
        || async { g.metric("searxng_gateway_cache_coalesced_total", &[]).await >= 1.0 },
    )
    .await;

    // A cache hit needs no slot.
    let hit = g.search(&[("q", "cached")]).await;
    assert_eq!((hit.status, hit.cache.as_str()), (200, "hit"));

    // Another miss waits for the slot, then is shed: a fast 503 with Retry-After.
    let response = g
        .http
        .get(format!("{}/search", g.url))
        .query(&[("q", "another")])
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let shed: Value = response.json().await.expect("a JSON body");
    assert_eq!(shed["error"], "overloaded", "{shed}");
    assert_eq!(
        s.searxng.in_flight(),
        1,
        "the shed miss never reached SearXNG"
    );

    // The leader and its follower get the fan-out's own answer (SearXNG cut by the budget: 502).
    let (leader, follower) = (
        leader.await.expect("leader"),
        follower.await.expect("follower"),
    );
    assert_eq!((leader.status, follower.status), (502, 502));
    assert_eq!(follower.json["error"], "all_upstreams_failed");
    assert_eq!(
        g.metric("searxng_gateway_requests_shed_total", &[]).await,
        1.0
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_requests_total",
            &[("outcome", "fallback_fail")]
        )
        .await,
        2.0,
        "a shed request is not an answered search"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_url_large_headers_and_a_large_body_get_414_431_and_413_with_json() {
    let s = stack(&[
        ("MAX_URL_BYTES", "512"),
        ("MAX_HEADER_BYTES", "2048"),
        ("MAX_BODY_BYTES", "1024"),
    ])
    .await;
    let g = &s.gateway;
    let search = format!("{}/search", g.url);

    let long_url = g
        .http
        .get(format!("{search}?q={}", "x".repeat(600)))
        .send()
        .await
        .expect("answer");
    let large_headers = g
        .http
        .get(format!("{search}?q=x"))
        .header("x-padding", "p".repeat(3000))
        .send()
        .await
        .expect("answer");
    let large_body = g
        .http
        .post(&search)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("q={}", "y".repeat(2000)))
        .send()
        .await
        .expect("answer");
    for (response, status, code) in [
        (long_url, 414, "url_too_long"),
        (large_headers, 431, "headers_too_large"),
        (large_body, 413, "body_too_large"),
    ] {
        assert_eq!(response.status().as_u16(), status, "{code}");
        let body: Value = response.json().await.expect("a JSON body");
        assert_eq!(body["error"], code, "{body}");
    }
    // Within the limits, the same shapes are served.
    let fine = g
        .http
        .post(&search)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("q=within+limits")
        .send()
        .await
        .expect("answer");
    assert_eq!(fine.status().as_u16(), 200);
    for reason in ["url_too_long", "headers_too_large", "body_too_large"] {
        assert_eq!(
            g.metric(
                "searxng_gateway_http_rejections_total",
                &[("reason", reason)]
            )
            .await,
            1.0,
            "{reason}"
        );
    }
    assert_eq!(
        s.searxng_hits(),
        1,
        "only the request within limits reached SearXNG"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_head_gets_408_with_json_and_a_slow_body_too() {
    let s = stack(&[("REQUEST_READ_TIMEOUT_SECONDS", "0.3")]).await;
    let g = &s.gateway;
    // Slowloris: a head that starts and never ends.
    let head = raw_exchange(
        &g.url,
        b"GET /search?q=slow HTTP/1.1\r\nHost: gw\r\nX-Slow: ",
    )
    .await;
    assert_eq!(head.status, 408, "{}", head.head);
    assert_eq!(head.json["error"], "request_timeout");
    assert!(head.head.contains("connection: close"));
    // A body announced and never sent.
    let body = raw_exchange(
        &g.url,
        b"POST /search HTTP/1.1\r\nHost: gw\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 40\r\n\r\nq=",
    )
    .await;
    assert_eq!(body.status, 408, "{}", body.head);
    assert_eq!(body.json["error"], "request_timeout");
    for reason in ["head_timeout", "body_timeout"] {
        assert_eq!(
            g.metric(
                "searxng_gateway_http_rejections_total",
                &[("reason", reason)]
            )
            .await,
            1.0,
            "{reason}"
        );
    }
    assert_eq!(s.searxng_hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_connection_is_closed_without_an_answer_and_a_busy_one_is_not() {
    let s = stack(&[
        ("KEEPALIVE_IDLE_SECONDS", "0.3"),
        ("FALLBACK_TIMEOUT_SECONDS", "30"),
    ])
    .await;
    let g = &s.gateway;
    // A connection that never asks anything is closed, quietly.
    let mut quiet = TcpStream::connect(g.url.trim_start_matches("http://"))
        .await
        .expect("connect");
    let nothing = read_until_closed(&mut quiet).await;
    assert_eq!(nothing.status, 0, "no answer to a request never made");

    // A request slower than the idle limit (SearXNG takes longer) still gets its answer: the
    // idle clock only runs while the connection waits for a request.
    s.searxng
        .set_mode(SearxngMode::Delay(std::time::Duration::from_millis(800)));
    let mut busy = TcpStream::connect(g.url.trim_start_matches("http://"))
        .await
        .expect("connect");
    busy.write_all(b"GET /search?q=slow+upstream HTTP/1.1\r\nHost: gw\r\n\r\n")
        .await
        .expect("send");
    let answered = read_until_closed(&mut busy).await;
    assert_eq!(answered.status, 200, "{}", answered.head);
    assert_eq!(
        answered.json["query"], "slow upstream",
        "the answer arrived, then the idle keep-alive connection was closed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_over_max_connections_gets_503_overloaded_and_the_others_keep_working() {
    // No stack: nothing but this test's own connections reaches the gateway.
    let g = TestGateway::start(&[("MAX_CONNECTIONS", "2"), ("KEEPALIVE_IDLE_SECONDS", "60")]).await;
    let addr = g.url.trim_start_matches("http://").to_owned();
    let mut first = TcpStream::connect(&addr).await.expect("connect");
    let mut second = TcpStream::connect(&addr).await.expect("connect");
    for stream in [&mut first, &mut second] {
        assert!(health(stream).await.starts_with("HTTP/1.1 200"));
    }

    let refused = raw_exchange(&g.url, b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n").await;
    assert_eq!(refused.status, 503, "{}", refused.head);
    assert_eq!(refused.json["error"], "overloaded");
    assert!(refused.head.contains("retry-after: 1"));
    assert!(refused.head.contains("connection: close"));

    // The connections being served are unaffected.
    assert!(health(&mut first).await.starts_with("HTTP/1.1 200"));
    drop((first, second));
    // Raw requests: the HTTP client would treat a refusal (while the slots free up) as an error.
    wait::until(
        "the refusal to be counted, once a slot is free again",
        || async {
            let scrape = raw_exchange(
                &g.url,
                b"GET /metrics HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
            )
            .await;
            scrape.status == 200
                && metric_value(
                    &scrape.body,
                    "searxng_gateway_http_rejections_total",
                    &[("reason", "too_many_connections")],
                ) >= 1.0
        },
    )
    .await;
}

/// `GET /healthz` on a kept-alive raw connection; the start of the answer.
async fn health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")
        .await
        .expect("send");
    let mut buf = [0u8; 512];
    let n = wait::guarded("a health answer", stream.read(&mut buf))
        .await
        .expect("read");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A refusal from the head, before the body was read (here a `POST /mcp` without its key), says
/// `Connection: close` and the connection closes after it: hyper does not keep a connection whose
/// body it has not read, and a client that pooled it would send its next request into the close
/// (the MCP SDK's OAuth client did: "Server disconnected without sending a response"). An answer
/// to a request whose body was read keeps its connection for the next request.
#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_that_leaves_the_body_unread_says_connection_close_and_a_read_body_keeps_it() {
    const KEY: &str = "unread-body-key-0123456789";
    let keys = keys_file(&[("alice", KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = stack(&[("API_KEYS_FILE", &path), ("TEST_CLIENT_KEY", KEY)]).await;
    let addr = s.gateway.url.trim_start_matches("http://").to_owned();
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let head = |key: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{key}Content-Length: {}\r\n\r\n",
            call.len()
        )
    };

    // The head alone; the body is held back until the answer is in.
    let mut refused = TcpStream::connect(&addr).await.expect("connect");
    refused
        .write_all(head("").as_bytes())
        .await
        .expect("send the head");
    let (answer, _) = read_one_answer(&mut refused).await;
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    assert!(answer.contains("\r\nconnection: close"), "{answer}");
    // Whatever comes next on it is not served.
    let _ = refused.write_all(call).await;
    let rest = read_until_closed(&mut refused).await;
    assert_eq!(rest.status, 0, "nothing more was answered: {}", rest.head);

    // The same request with its key and its body: read, answered, and the connection stays open.
    let mut kept = TcpStream::connect(&addr).await.expect("connect");
    let authorized = head(&format!("Authorization: Bearer {KEY}\r\n"));
    kept.write_all(&[authorized.as_bytes(), call].concat())
        .await
        .expect("send the request");
    let (answer, body) = read_one_answer(&mut kept).await;
    assert!(answer.starts_with("http/1.1 200"), "{answer}\n{body}");
    assert!(!answer.contains("connection: close"), "{answer}");
    assert!(body.contains("web_search"), "{body}");
    assert!(health(&mut kept).await.starts_with("HTTP/1.1 200"));
}

/// One answer (a `Content-Length` or chunked body) on a kept-alive raw connection: its head (lower-cased)
/// and its body.
async fn read_one_answer(stream: &mut TcpStream) -> (String, String) {
    let mut bytes = Vec::new();
    wait::guarded("one whole answer", async {
        let mut chunk = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let head = head.to_ascii_lowercase();
                let whole = if head.contains("\r\ntransfer-encoding: chunked") {
                    body.ends_with("0\r\n\r\n")
                } else {
                    let length = head
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length: ")?.trim().parse().ok())
                        .unwrap_or(0usize);
                    body.len() >= length
                };
                if whole {
                    return;
                }
            }
            let n = stream.read(&mut chunk).await.expect("read the answer");
            assert!(n > 0, "the connection closed before the whole answer");
            bytes.extend_from_slice(&chunk[..n]);
        }
    })
    .await;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_ascii_lowercase(), body.to_owned())
}
