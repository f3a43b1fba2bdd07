//! The real client libraries, unmodified, pointed at the gateway by nothing but their base URL: LangChain's
//! `SearxSearchWrapper` (`searx_host` = the gateway's origin), Open WebUI's `search_searxng`, its external
//! search, Perplexity search and external web loader, tavily-python's `TavilyClient(api_base_url=…)`,
//! firecrawl-py's v2 and v1 clients, the perplexityai SDK, exa-py, gpt-researcher's custom retriever, and the MCP
//! Python SDK's Streamable HTTP and stdio clients.
//!
//! Each library's tests are a pytest file in `crates/gateway/tests/clients/`, run from the virtualenv
//! `.ci/install-clients.sh` builds with pinned versions (`CLIENTS_VENV`, default
//! `/opt/searxng-gateway/clients-venv`; `scripts/test.sh` installs it), against gateways started here on
//! loopback in front of the simulators: a healthy one, one whose SearXNG answers 500, one whose SearXNG
//! answers 429 (neither with a premium provider to fall back to), one that requires inbound keys
//! (`API_KEYS_FILE` naming the key the Tavily tests use), and one that reads pages from a loopback
//! site (tavily-python's `extract` and `include_raw_content`, the MCP SDK's `web_fetch`). The
//! operator's page is tested the same way, in a real browser: headless Chromium driven by selenium
//! (`test_ui.py`), against a gateway of its own.

use crate::support::external::needs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use simulator::searxng::SearxngMode;

use simulator::readers::Reader;
use simulator::site::{Page, SimulatedSite};

use crate::support::process::BIN;
use crate::support::reading::{corpus, ReadStack};
use crate::support::stack::SimStack;

/// The key the Python tests give every client (`KEY` in each test file), client `python` of the keyed
/// gateway.
const CLIENT_KEY: &str = "tvly-searxng-gateway-test";

/// The keyed gateway's `ADMIN_TOKEN` (the Open WebUI tests read its `/admin/status`).
const ADMIN_TOKEN: &str = "real-clients-admin-token";

/// How long one library's tests may take (Open WebUI's import alone migrates a database).
const PYTEST_DEADLINE: Duration = Duration::from_secs(300);

/// The gateways the Python tests talk to.
struct Gateways {
    /// Reads pages: its SearXNG's results and every path of its site are a real article
    /// (Readability's `ars-1`), `/blocked` is a Cloudflare challenge read by the simulated Jina
    /// Reader instead.
    reading: ReadStack,
    /// A site answering every path with a Cloudflare challenge (a host of its own, so its breaker
    /// does not shut out `reading`'s site).
    walled: SimulatedSite,
    healthy: SimStack,
    failing: SimStack,
    rate_limited: SimStack,
    keyed: SimStack,
    /// The keyed gateway's `API_KEYS_FILE`, kept for its lifetime.
    _keys: tempfile::NamedTempFile,
}

impl Gateways {
    async fn start() -> Self {
        // A high threshold keeps SearXNG out of its cooldown, so each failure is its own error class.
        let never_cool_down = [("SEARXNG_FAIL_THRESHOLD", "1000")];
        let healthy = SimStack::start(&[], &[]).await;
        let failing = SimStack::start(&[], &never_cool_down).await;
        failing.searxng.set_mode(SearxngMode::Status(500));
        let rate_limited = SimStack::start(&[], &never_cool_down).await;
        rate_limited.searxng.set_mode(SearxngMode::Status(429));
        let mut keys = tempfile::NamedTempFile::new().expect("temp file");
        let line = searxng_gateway::clients::keys_file::hash_line("python", CLIENT_KEY)
            .expect("a valid keys-file line");
        writeln!(keys, "{line}").expect("write the keys file");
        let path = keys.path().to_str().expect("utf-8 path").to_owned();
        let keyed = SimStack::start(
            &[],
            &[
                ("API_KEYS_FILE", &path),
                ("TEST_CLIENT_KEY", CLIENT_KEY),
                ("ADMIN_TOKEN", ADMIN_TOKEN),
                ("OPENWEBUI_USER_HEADER_TRUST", "true"),
            ],
        )
        .await;
        let reading = ReadStack::start(&[Reader::Jina], &[]).await;
        reading.site.set_default(Page::html(corpus("ars-1").0));
        // What firecrawl-py's map finds: a robots.txt listing a sitemap, and a path it disallows.
        let origin = reading.site.origin();
        reading.site.set(
            "/robots.txt",
            Page::ok(
                "text/plain",
                format!("User-agent: *\nDisallow: /private\nSitemap: {origin}/sitemap.xml\n"),
            ),
        );
        // What tavily-python's crawl and map find: a page linking to two others.
        reading.site.set(
            "/tour/",
            Page::html(format!(
                "<html><head><title>Tour</title></head><body><article><h1>Tour</h1><p>{}\
                 <a href=\"/tour/a\">first stop</a> and <a href=\"/tour/b\">second stop</a>.</p>\
                 </article></body></html>",
                "The tour of the observatory starts at the gate and climbs the hill. ".repeat(8)
            )),
        );
        reading.site.set(
            "/sitemap.xml",
            Page::ok(
                "application/xml",
                format!(
                    "<urlset><url><loc>{origin}/guide/mapping</loc></url>\
                     <url><loc>{origin}/guide/crawling</loc></url>\
                     <url><loc>{origin}/private/notes</loc></url></urlset>"
                ),
            ),
        );
        let walled = SimulatedSite::start().await.expect("site starts");
        walled.set_default(Page::cloudflare_challenge());
        Self {
            reading,
            walled,
            healthy,
            failing,
            rate_limited,
            keyed,
            _keys: keys,
        }
    }
}

fn venv_python() -> PathBuf {
    let venv = crate::support::external::clients_venv();
    let python = venv.join("bin").join("python");
    assert!(
        python.is_file(),
        "no client virtualenv at {}: run `bash .ci/install-clients.sh` (scripts/test.sh does)",
        venv.display()
    );
    python
}

/// Runs one pytest file of `tests/clients/` against `gateways`; fails with pytest's output.
async fn pytest(file: &str, gateways: &Gateways) {
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    let mut command = tokio::process::Command::new(venv_python());
    command
        .env("GATEWAY_URL", &gateways.healthy.gateway.url)
        .env("FAILING_GATEWAY_URL", &gateways.failing.gateway.url)
        .env(
            "RATE_LIMITED_GATEWAY_URL",
            &gateways.rate_limited.gateway.url,
        )
        .env("KEYED_GATEWAY_URL", &gateways.keyed.gateway.url)
        .env("ADMIN_TOKEN", ADMIN_TOKEN)
        .env("READING_GATEWAY_URL", &gateways.reading.gateway.url)
        .env("SITE_URL", gateways.reading.site.origin())
        .env("WALLED_SITE_URL", gateways.walled.origin())
        .env("GATEWAY_BIN", BIN)
        .env("SEARXNG_URL", gateways.healthy.searxng.base_url());
    run_pytest(file, &clients, command).await;
}

/// Runs one pytest file in `clients` with `command` (the venv's Python, its environment set);
/// fails with pytest's output.
async fn run_pytest(file: &str, clients: &Path, mut command: tokio::process::Command) {
    command
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", file])
        .current_dir(clients)
        // Loopback only, whatever proxy the machine is configured with; nothing written to the tree.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("TAVILY_API_KEY")
        .env_remove("SEARX_HOST")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(PYTEST_DEADLINE, command.output())
        .await
        .unwrap_or_else(|_| panic!("pytest {file} did not finish within {PYTEST_DEADLINE:?}"))
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "pytest {file} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let summary = stdout.lines().last().unwrap_or("").trim();
    assert!(
        summary.contains(" passed") && !summary.contains("skipped"),
        "pytest {file}: {summary}"
    );
    eprintln!("{file}: {summary}");
}

#[tokio::test(flavor = "multi_thread")]
async fn langchains_searx_search_wrapper_works_with_the_gateways_origin_as_searx_host() {
    needs!(ClientLibraries);
    pytest("test_langchain.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn open_webuis_search_searxng_works_with_the_gateway_as_its_query_url() {
    needs!(ClientLibraries);
    pytest("test_open_webui.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tavily_python_works_with_the_gateway_as_its_api_base_url() {
    needs!(ClientLibraries);
    pytest("test_tavily.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawl_py_works_with_the_gateway_as_its_api_url() {
    needs!(ClientLibraries);
    pytest("test_firecrawl.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_perplexity_sdk_works_with_the_gateway_as_its_base_url() {
    needs!(ClientLibraries);
    pytest("test_perplexity.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gpt_researchers_custom_retriever_works_with_the_gateway_as_its_endpoint() {
    needs!(ClientLibraries);
    pytest("test_gpt_researcher.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exa_py_works_with_the_gateway_as_its_base_url() {
    needs!(ClientLibraries);
    pytest("test_exa.py", &Gateways::start().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_python_sdk_works_over_streamable_http_and_stdio() {
    needs!(ClientLibraries);
    pytest("test_mcp.py", &Gateways::start().await).await;
}

/// The MCP Python SDK's OAuth client provider against the gateway binary as its own authorization
/// server (`PUBLIC_URL` its loopback address, `API_KEYS_FILE` with the person's key): registration,
/// the consent page, PKCE, tokens, a tool call, a refresh, and refusal after the key is removed and
/// the binary gets SIGHUP.
#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_python_sdks_oauth_client_signs_in_with_a_gateway_key() {
    needs!(ClientLibraries);
    let stack = SimStack::start(&[], &[]).await;
    let mut keys = tempfile::NamedTempFile::new().expect("temp file");
    let line = searxng_gateway::clients::keys_file::hash_line("person", CLIENT_KEY)
        .expect("a valid keys-file line");
    writeln!(keys, "{line}").expect("write the keys file");
    let other = searxng_gateway::clients::keys_file::hash_line("other", "another-key-0123456789")
        .expect("a valid keys-file line");
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let port = crate::support::ports::unused_loopback_port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{listen}");
    let searxng = stack.searxng.base_url();
    let mut gateway = crate::support::process::GatewayProcess::start(&[
        ("LISTEN_ADDR", listen.as_str()),
        ("PUBLIC_URL", url.as_str()),
        ("SEARXNG_BACKEND_URL", searxng.as_str()),
        ("API_KEYS_FILE", path.as_str()),
        ("FALLBACK_PROVIDERS", ""),
        ("PARSE_WORKER_PROGRAM", BIN),
    ]);
    gateway.wait_for_line("searxng-gateway listening").await;
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    let mut command = tokio::process::Command::new(venv_python());
    command
        .env("OAUTH_GATEWAY_URL", &url)
        .env("OAUTH_KEY", CLIENT_KEY)
        .env("OAUTH_KEYS_FILE", &path)
        .env("OAUTH_OTHER_KEYS_LINE", &other)
        .env("OAUTH_GATEWAY_PID", gateway.pid().to_string());
    run_pytest("test_mcp_oauth.py", &clients, command).await;
    gateway.terminate().await;
}

/// The operator's page in Debian's headless Chromium (selenium, from the same virtualenv; the
/// browser and its driver from `chromium` and `chromium-driver`, which `scripts/test.sh` installs),
/// against a gateway that requires a key and has an admin token, in front of a SearXNG whose
/// engine `gamma` answers "too many requests".
#[tokio::test(flavor = "multi_thread")]
async fn the_operator_page_works_in_headless_chromium() {
    needs!(ClientLibraries, Chromium);
    let mut keys = tempfile::NamedTempFile::new().expect("temp file");
    let line = searxng_gateway::clients::keys_file::hash_line("operator", CLIENT_KEY)
        .expect("a valid keys-file line");
    writeln!(keys, "{line}").expect("write the keys file");
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let stack = SimStack::start(
        &[simulator::Provider::Brave],
        &[
            ("API_KEYS_FILE", &path),
            ("TEST_CLIENT_KEY", CLIENT_KEY),
            ("ADMIN_TOKEN", ADMIN_TOKEN),
        ],
    )
    .await;
    stack.searxng.set_engine(
        "gamma",
        simulator::searxng::EngineBehaviour::Fails(
            simulator::searxng::EngineFailure::TooManyRequests,
        ),
    );
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    let mut command = tokio::process::Command::new(venv_python());
    command
        .env("UI_GATEWAY_URL", &stack.gateway.url)
        .env("UI_KEY", CLIENT_KEY)
        .env("ADMIN_TOKEN", ADMIN_TOKEN);
    run_pytest("test_ui.py", &clients, command).await;
}
