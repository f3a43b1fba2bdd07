//! The demo end to end, in process, against its simulators on loopback (real sockets, real time, a 2 s
//! breaker period so a round takes a few seconds): a round shows every step it announces, the demo
//! serves searches and stops when told, a taken port is reported as such, and README.md lists the steps a
//! round prints.

#![allow(clippy::unwrap_used)]

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;

use crate::demo::{bind, run, DemoError};
use crate::options::DemoOptions;
use crate::scenario::Step;

/// Narration captured for assertions.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Fast options on a port-0 listener.
async fn demo_options(rounds: Option<u32>) -> (TcpListener, DemoOptions) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let options = DemoOptions {
        listen: listener.local_addr().unwrap(),
        rounds,
        pause: Duration::ZERO,
        breaker_open: Duration::from_secs(2),
    };
    (listener, options)
}

/// The narration of each step of the first round, by step.
fn sections(text: &str) -> Vec<(Step, String)> {
    let headings: Vec<usize> = Step::ALL
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let heading = format!("\n[{}] {}\n", index + 1, step.title());
            text.find(&heading)
                .unwrap_or_else(|| panic!("{heading:?} missing in:\n{text}"))
        })
        .collect();
    assert!(
        headings.windows(2).all(|pair| pair[0] < pair[1]),
        "steps out of order:\n{text}"
    );
    let end = text.find("\nAll rounds done.").unwrap_or(text.len());
    Step::ALL
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let until = headings.get(index + 1).copied().unwrap_or(end);
            (*step, text[headings[index]..until].to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_round_shows_every_step_it_announces() {
    let (listener, options) = demo_options(Some(1)).await;
    let narration = Captured::default();

    let finished = tokio::time::timeout(
        Duration::from_secs(60),
        run(listener, options, narration.clone(), std::future::pending()),
    )
    .await
    .expect("one round finishes");

    finished.unwrap();
    let text = narration.text();
    assert!(!text.contains("\n[9]"), "a ninth step:\n{text}");
    assert!(text.contains("All rounds done.\nDemo stopped."), "{text}");
    let expected: [(Step, &[&str]); 8] = [
        (
            Step::NormalSearch,
            &["200 searxng_ok · cache miss", "SearXNG answered with"],
        ),
        (
            Step::SameSearchAgain,
            &["cache hit", "answered from the cache"],
        ),
        (
            Step::Captcha,
            &[
                "SearXNG reported unresponsive: google (captcha)",
                "tripped the engine breaker of google (reason captcha), open for",
            ],
        ),
        (Step::WhileOpen, &["(google left out: breaker open)"]),
        (
            Step::Probe,
            &[
                "probed google itself, outside any client's search (engines=google): recovered",
                "the half-open probe of engine google succeeded: breaker closed",
            ],
        ),
        (
            Step::Degraded,
            &[
                "degraded (searxng_requests_total",
                "fallback called",
                "→ ok",
            ],
        ),
        (
            Step::BraveRateLimited,
            &[
                "200 premium_ok",
                "SearXNG answered 200 with 0 results (searxng_requests_total{result=\"ok\"})",
                "brave → rate_limited",
                "exa → ok",
                "tavily → ok",
                "tripped the key breaker of brave:",
                "(reason rate_limited), open for",
            ],
        ),
        (
            Step::Metrics,
            &[
                "searxng_gateway_requests_total: cache_hit=1",
                "key brave:d40a2817 (rate_limited)=1",
            ],
        ),
    ];
    for ((step, section), (expected_step, needles)) in sections(&text).into_iter().zip(expected) {
        assert_eq!(step, expected_step);
        for needle in needles {
            assert!(
                section.contains(needle),
                "{step:?} does not show {needle:?}:\n{section}"
            );
        }
    }
}

#[tokio::test]
async fn the_demo_serves_a_search_from_its_simulators_and_stops_when_told() {
    let (listener, options) = demo_options(None).await;
    let addr = options.listen;
    let narration = Captured::default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let demo = tokio::spawn(run(listener, options, narration.clone(), async {
        let _ = stopped.await;
    }));

    let response = reqwest::Client::new()
        .get(format!("http://{addr}/search?q=hello+world&format=json"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(!body["results"].as_array().unwrap().is_empty(), "{body}");
    // The page the banner points at is served, and lists that search.
    let page = reqwest::get(format!("http://{addr}/ui")).await.unwrap();
    assert_eq!(page.status(), 200);
    let overview: Value = reqwest::get(format!("http://{addr}/ui/api/overview"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        overview["searches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["query"] == "hello world"),
        "{overview}"
    );

    stop.send(()).unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(10), demo)
        .await
        .expect("the demo stops promptly");
    finished.unwrap().unwrap();
    let text = narration.text();
    assert!(text.contains(&format!("http://{addr}/status")), "{text}");
    assert!(
        text.contains(&format!("Watch it in a browser: http://{addr}/ui ")),
        "{text}"
    );
    assert!(
        text.ends_with("then the simulators stop.\nDemo stopped.\n"),
        "{text}"
    );
    let refused = reqwest::Client::new()
        .get(format!("http://{addr}/healthz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(refused.is_err(), "the gateway still answers: {refused:?}");
}

#[tokio::test]
async fn a_taken_port_is_reported_as_such() {
    let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();

    let err = bind(addr).await.unwrap_err();

    assert!(
        matches!(err, DemoError::AddressInUse(a) if a == addr),
        "{err:?}"
    );
    assert!(err.to_string().contains("already in use"), "{err}");
}

#[test]
fn the_readme_lists_the_steps_a_round_prints() {
    let readme = include_str!("../../../README.md");
    let demo = readme
        .split("\n## ")
        .find(|section| section.starts_with("Demo"))
        .expect("README.md has a Demo section");
    let listed: Vec<&str> = demo
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(". **")?;
            number.parse::<usize>().ok()?;
            rest.split_once("**").map(|(title, _)| title)
        })
        .collect();
    let printed: Vec<&str> = Step::ALL.iter().map(|step| step.title()).collect();

    assert_eq!(listed, printed);
}
