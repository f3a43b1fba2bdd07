//! The miss path's CPU work in-process, with criterion: no socket, no runtime, no other process,
//! so a CPU regression shows up without the network's noise (the harness measures the same path
//! end to end over loopback). Through the gateway's `bench` facade (`searxng_gateway::bench`),
//! which calls the production decoder, fan-out, merge and renderer:
//!
//! - `decode/searxng`: SearXNG's 16-result `/search` body through the answer decoder alone;
//! - `miss/searxng_only`: decode + merge + render of that answer (the keyless gateway's miss);
//! - `miss/searxng_and_two_premium`: the same with Brave's and Exa's answers (8 results each,
//!   some of them the same pages as SearXNG's) merged in by rank fusion.
//!
//! The inputs are real bodies: at start-up (not measured) the simulated SearXNG and the simulated
//! Brave and Exa answer one request each on loopback, and their bodies are what the benchmark
//! decodes. `cargo bench-pipeline` runs it (criterion's options after `--`, e.g.
//! `-- --quick`); it is a measuring tool run by hand, and `cargo test --all-targets` (CI's test
//! command) runs only the check that the inputs and answers are real.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput};
use searxng_gateway::bench::{decode_searxng, miss_answer, PremiumBody};
use simulator::premium::{ProviderBehaviour, SimulatedProvider, SIM_KEY};
use simulator::searxng::{EngineBehaviour, SimulatedSearxng};
use simulator::Provider;

/// The query every body answers.
const QUERY: &str = "rust async runtime";
/// The simulated SearXNG's engines and how many results each finds: 16 distinct URLs together.
const ENGINES: [(&str, usize); 4] = [
    ("bing", 7),
    ("duckduckgo", 5),
    ("google", 6),
    ("wikipedia", 3),
];
/// A typical SearXNG answer's size in results (SearXNG's first page is 10–20).
const SEARXNG_RESULTS: usize = 16;
/// Results per premium answer.
const PREMIUM_RESULTS: usize = 8;
/// `SUFFICIENT_MIN_RESULTS`' default.
const TARGET: usize = 8;

/// The bodies the benchmark decodes, each fetched once from a simulator.
struct Bodies {
    searxng: Bytes,
    brave: Vec<u8>,
    exa: Vec<u8>,
}

async fn fetch_bodies() -> Result<Bodies, Box<dyn std::error::Error>> {
    let names: Vec<&str> = ENGINES.iter().map(|(name, _)| *name).collect();
    let searxng = SimulatedSearxng::start(&names).await?;
    for (name, results) in ENGINES {
        searxng.set_engine(name, EngineBehaviour::Ok { results });
    }
    let http = reqwest::Client::new();
    let searxng_body = http
        .get(format!("{}/search", searxng.base_url()))
        .query(&[("q", QUERY), ("format", "json")])
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;

    // Half of each provider's pages are pages SearXNG found too, so the merge has duplicates to fold.
    let brave = SimulatedProvider::start(Provider::Brave).await?;
    brave.set_behaviour(ProviderBehaviour::results(
        PREMIUM_RESULTS,
        &first_url_prefix(&searxng_body)?,
    ));
    let brave_body = http
        .get(format!("{}/res/v1/web/search", brave.base_url()))
        .query(&[("q", QUERY), ("count", "10")])
        .header("x-subscription-token", SIM_KEY)
        .header("accept", "application/json")
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?
        .to_vec();
    let exa = SimulatedProvider::start(Provider::Exa).await?;
    exa.set_behaviour(ProviderBehaviour::results(
        PREMIUM_RESULTS,
        "https://exa.example.com/result/",
    ));
    let exa_body = http
        .post(format!("{}/search", exa.base_url()))
        .header("x-api-key", SIM_KEY)
        .json(&serde_json::json!({"query": QUERY, "numResults": 10}))
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?
        .to_vec();
    Ok(Bodies {
        searxng: searxng_body,
        brave: brave_body,
        exa: exa_body,
    })
}

/// The URL prefix of SearXNG's first result without its last path segment, so a provider's pages
/// under it overlap SearXNG's.
fn first_url_prefix(body: &[u8]) -> Result<String, Box<dyn std::error::Error>> {
    let doc: serde_json::Value = serde_json::from_slice(body)?;
    let url = doc["results"][0]["url"]
        .as_str()
        .ok_or("SearXNG's answer has no first result")?;
    let cut = url
        .trim_end_matches('/')
        .rfind('/')
        .ok_or("a URL without a path")?;
    Ok(url[..=cut].to_owned())
}

fn main() {
    let bodies = match tokio::runtime::Runtime::new()
        .map_err(Into::into)
        .and_then(|runtime| runtime.block_on(fetch_bodies()))
    {
        Ok(bodies) => bodies,
        Err(err) => {
            eprintln!("the simulators did not answer: {err}");
            std::process::exit(1);
        }
    };
    let premium = [
        PremiumBody {
            provider: "brave",
            body: &bodies.brave,
        },
        PremiumBody {
            provider: "exa",
            body: &bodies.exa,
        },
    ];
    check(&bodies, &premium);
    if !std::env::args().any(|arg| arg == "--bench") {
        // `cargo test --all-targets` runs benches without `--bench` (and with the test harness's
        // own options, which criterion refuses): the check above is the test.
        return;
    }

    let mut criterion = Criterion::default().configure_from_args();
    let mut decode = criterion.benchmark_group("decode");
    decode.throughput(Throughput::Bytes(bodies.searxng.len() as u64));
    decode.bench_function("searxng", |b| {
        b.iter(|| decode_searxng(black_box(&bodies.searxng)))
    });
    decode.finish();
    let mut miss = criterion.benchmark_group("miss");
    for (name, with) in [
        ("searxng_only", &premium[..0]),
        ("searxng_and_two_premium", &premium[..]),
    ] {
        miss.bench_with_input(BenchmarkId::from_parameter(name), &with, |b, with| {
            b.iter(|| miss_answer(QUERY, TARGET, Some(black_box(&bodies.searxng)), with))
        });
    }
    miss.finish();
    criterion.final_summary();
}

/// The benchmark measures real answers: SearXNG's has its 16 results, the merged one has SearXNG's
/// and the providers' pages once each, and a SearXNG-only answer keeps SearXNG's results as they
/// came.
fn check(bodies: &Bodies, premium: &[PremiumBody<'_>]) {
    let fail = |what: String| -> ! {
        eprintln!("pipeline benchmark: {what}");
        std::process::exit(1);
    };
    let results = |bytes: &[u8]| -> Vec<serde_json::Value> {
        serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|doc| doc["results"].as_array().cloned())
            .unwrap_or_default()
    };
    let decoded = decode_searxng(&bodies.searxng);
    if decoded != Some(SEARXNG_RESULTS) {
        fail(format!(
            "SearXNG's answer decoded to {decoded:?} results, not {SEARXNG_RESULTS}"
        ));
    }
    let Some(alone) = miss_answer(QUERY, TARGET, Some(&bodies.searxng), &[]) else {
        fail("no answer from SearXNG's body alone".into());
    };
    if results(&alone) != results(&bodies.searxng) {
        fail("a SearXNG-only answer changed SearXNG's results".into());
    }
    let Some(merged) = miss_answer(QUERY, TARGET, Some(&bodies.searxng), premium) else {
        fail("no answer from SearXNG's and the providers' bodies".into());
    };
    let merged = results(&merged).len();
    if merged <= SEARXNG_RESULTS || merged >= SEARXNG_RESULTS + 2 * PREMIUM_RESULTS {
        fail(format!(
            "{merged} merged results: the providers' pages should add some and fold some into SearXNG's"
        ));
    }
    println!(
        "pipeline benchmark inputs: SearXNG {} bytes ({SEARXNG_RESULTS} results), Brave {} bytes, Exa {} bytes; \
         {merged} results merged",
        bodies.searxng.len(),
        bodies.brave.len(),
        bodies.exa.len()
    );
}
