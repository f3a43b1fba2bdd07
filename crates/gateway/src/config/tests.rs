//! The configuration contract: defaults, one error per bad value naming its variable, and one
//! table that the parser, `--help` and the book's configuration reference all agree on.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};

use super::variables::{help_table, markdown_table, VARIABLES};
use std::time::Duration;

use super::*;
use gateway_engine::settings::{ProviderPolicy, SlowThreshold, TokenizerEncoding};
use gateway_upstreams::providers::ProviderKind;

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_lookup(&lookup(vars))
}

fn timeout(c: &Config, kind: ProviderKind) -> Duration {
    c.gateway.engine.provider(kind).unwrap().timeout
}

#[test]
fn defaults_match_the_contract() {
    let c = config(&[]).unwrap();
    assert_eq!(c.listen_addr, "0.0.0.0:8080".parse().unwrap());
    assert_eq!(c.gateway.engine.searxng.len(), 1);
    assert_eq!(
        c.gateway.engine.searxng[0].url.as_str(),
        "http://127.0.0.1:8888/"
    );
    assert_eq!(
        c.gateway.engine.searxng_max_cooldown,
        Duration::from_secs(1800)
    );
    assert_eq!(c.gateway.engine.fallback_providers, [ProviderKind::Brave]);
    assert_eq!(c.gateway.engine.t1_premium_count, 0);
    assert_eq!(c.gateway.engine.sufficient_min_results, 1);
    assert_eq!(c.gateway.engine.request_budget, Duration::from_secs(30));
    assert_eq!(c.gateway.engine.searxng_timeout, Duration::from_secs(25));
    assert_eq!(c.gateway.engine.searxng_fail_threshold, 6);
    assert_eq!(
        c.gateway.engine.searxng_fail_cooldown,
        Duration::from_secs(180)
    );
    assert_eq!(c.gateway.engine.searxng_slow, SlowThreshold::Auto);
    assert_eq!(
        (c.gateway.engine.cache_size, c.gateway.engine.cache_ttl),
        (1000, Duration::from_secs(3600))
    );
    assert_eq!(c.log_level, LogLevel::Info);
    assert_eq!(c.gateway.server.metrics_path, "/metrics");
    assert_eq!(c.gateway.server.max_query_bytes, 2048);
    for kind in ProviderKind::ALL {
        assert_eq!(timeout(&c, kind), Duration::from_secs(15), "{kind:?}");
        let origin = c
            .gateway
            .engine
            .provider(kind)
            .unwrap()
            .base_url
            .as_str()
            .trim_end_matches('/')
            .to_owned();
        assert!(
            origin.starts_with("https://") && origin.contains(kind.as_str()),
            "{origin}"
        );
    }
    assert_eq!(c.gateway.engine.breaker_open, Duration::from_secs(300));
    assert_eq!(c.gateway.engine.breaker_max_open, Duration::from_secs(3600));
    assert_eq!(c.gateway.engine.breaker_failure_threshold, 5);
    assert_eq!(c.gateway.engine.shedding.max_concurrent_misses, 64);
    assert_eq!(
        c.gateway.engine.shedding.max_wait,
        Duration::from_millis(250)
    );
    let limits = c.gateway.server.server_limits;
    assert_eq!(limits.max_connections, 1024);
    assert_eq!(limits.read_timeout, Duration::from_secs(10));
    assert_eq!(limits.keepalive_idle, Duration::from_secs(60));
    assert_eq!(
        (
            limits.max_url_bytes,
            limits.max_header_bytes,
            limits.max_body_bytes
        ),
        (8192, 16384, 65536)
    );
    assert!(
        c.gateway.engine.active_providers().is_empty(),
        "no key, no active provider"
    );
}

#[test]
fn the_parser_reads_exactly_the_variables_of_the_table() {
    let env = Env::new(&|_: &str| None);
    Config::read(&env).unwrap();
    let read: BTreeSet<String> = env.read.into_inner().into_iter().collect();
    let table: BTreeSet<String> = VARIABLES.iter().map(|v| v.name.to_owned()).collect();
    assert_eq!(
        read, table,
        "every variable read is in the table, and every table row is read"
    );
    assert_eq!(table.len(), VARIABLES.len(), "no variable is listed twice");
}

#[test]
fn each_bad_value_names_its_variable() {
    let cases = [
        ("LISTEN_ADDR", "8080"),
        ("SEARXNG_BACKEND_URL", "ftp://x"),
        ("FALLBACK_PROVIDERS", "brave,google"),
        ("FALLBACK_PROVIDERS", "brave,brave"),
        ("T1_PREMIUM_COUNT", "two"),
        ("T1_PREMIUM_COUNT", "-1"),
        ("SUFFICIENT_MIN_RESULTS", "1.5"),
        ("FALLBACK_TIMEOUT_SECONDS", "0"),
        ("SEARXNG_TIMEOUT_SECONDS", "abc"),
        ("SEARXNG_FAIL_THRESHOLD", "0"),
        ("SEARXNG_FAIL_COOLDOWN_SECONDS", "-5"),
        ("SEARXNG_SLOW_SECONDS", "fast"),
        ("CACHE_SIZE", "1e3"),
        ("CACHE_TTL_SECONDS", "NaN"),
        ("LOG_LEVEL", "verbose"),
        ("METRICS_PATH", "/search"),
        ("METRICS_PATH", "metrics"),
        ("METRICS_PATH", "/mcp"),
        ("METRICS_PATH", "/tavily/search/"),
        ("METRICS_PATH", "/admin/status"),
        ("METRICS_PATH", "/admin"),
        ("METRICS_PATH", "/ui"),
        ("METRICS_PATH", "/ui/metrics"),
        ("UI_ENABLED", "maybe"),
        ("UI_SHOW_QUERIES", "sometimes"),
        ("MAX_QUERY_BYTES", "0"),
        ("PROVIDER_TIMEOUT_SECONDS", "inf"),
        ("BRAVE_TIMEOUT_SECONDS", "x"),
        ("EXA_BASE_URL", "https://proxy.local/path"),
        ("BREAKER_OPEN_SECONDS", "0"),
        ("BREAKER_FAILURE_THRESHOLD", "many"),
        ("MAX_CONCURRENT_MISSES", "0"),
        ("MAX_MISS_WAIT_MS", "0.5"),
        ("MAX_CONNECTIONS", "-3"),
        ("REQUEST_READ_TIMEOUT_SECONDS", "0"),
        ("KEEPALIVE_IDLE_SECONDS", "soon"),
        ("MAX_URL_BYTES", "10"),
        ("MAX_HEADER_BYTES", "1k"),
        ("MAX_BODY_BYTES", "99999999999"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ];
    for (name, value) in cases {
        let err = config(&[(name, value)]).unwrap_err();
        assert_eq!(err.variable, name, "{name}={value}");
        assert!(err.to_string().contains(name));
    }
    let err = config(&[
        ("BREAKER_OPEN_SECONDS", "600"),
        ("BREAKER_MAX_OPEN_SECONDS", "60"),
    ])
    .unwrap_err();
    assert_eq!(err.variable, "BREAKER_MAX_OPEN_SECONDS");
}

#[test]
fn a_provider_timeout_that_defaults_names_the_variable_it_came_from() {
    let err = config(&[("PROVIDER_TIMEOUT_SECONDS", "-1")]).unwrap_err();
    assert_eq!(err.variable, "PROVIDER_TIMEOUT_SECONDS");
}

#[test]
fn more_t1_calls_than_active_providers_takes_the_active_ones() {
    // Keyless: the compose file asks for a T1 call whose key comes later; the gateway starts.
    let keyless = config(&[
        ("T1_PREMIUM_COUNT", "1"),
        ("FALLBACK_PROVIDERS", "brave,exa"),
    ])
    .unwrap();
    assert_eq!(
        (
            keyless.gateway.engine.t1_premium_count,
            keyless.gateway.engine.t1_requested
        ),
        (0, 1)
    );
    assert!(keyless.gateway.engine.t1_cut());
    let one_key = config(&[
        ("T1_PREMIUM_COUNT", "2"),
        ("FALLBACK_PROVIDERS", "brave,exa"),
        ("EXA_API_KEY", "e"),
    ])
    .unwrap();
    assert_eq!(one_key.gateway.engine.t1_premium_count, 1);
    assert!(one_key.gateway.engine.t1_cut());
    let ok = config(&[
        ("T1_PREMIUM_COUNT", "1"),
        ("FALLBACK_PROVIDERS", "brave,exa"),
        ("EXA_API_KEY", "e"),
    ])
    .unwrap();
    assert_eq!(ok.gateway.engine.t1_premium_count, 1);
    assert!(!ok.gateway.engine.t1_cut());
}

#[test]
fn provider_order_and_keys_decide_the_active_list() {
    let c = config(&[
        ("FALLBACK_PROVIDERS", " tavily, Exa ,brave"),
        ("EXA_API_KEY", "e"),
        ("TAVILY_API_KEY", "t"),
    ])
    .unwrap();
    assert_eq!(
        c.gateway.engine.fallback_providers,
        [ProviderKind::Tavily, ProviderKind::Exa, ProviderKind::Brave]
    );
    assert_eq!(
        c.gateway.engine.active_providers(),
        [ProviderKind::Tavily, ProviderKind::Exa]
    );
}

#[test]
fn every_provider_timeout_follows_provider_timeout_seconds_unless_set() {
    let c = config(&[
        ("PROVIDER_TIMEOUT_SECONDS", "4"),
        ("JINA_TIMEOUT_SECONDS", "2.5"),
        ("TAVILY_BASE_URL", "http://127.0.0.1:9000/"),
    ])
    .unwrap();
    assert_eq!(timeout(&c, ProviderKind::Brave), Duration::from_secs(4));
    assert_eq!(timeout(&c, ProviderKind::Exa), Duration::from_secs(4));
    assert_eq!(timeout(&c, ProviderKind::Jina), Duration::from_millis(2500));
    assert_eq!(
        c.gateway
            .engine
            .provider(ProviderKind::Tavily)
            .unwrap()
            .base_url
            .as_str(),
        "http://127.0.0.1:9000/"
    );
}

#[test]
fn searxng_url_tolerates_a_trailing_slash() {
    let c = config(&[("SEARXNG_BACKEND_URL", "http://h:1/searx/")]).unwrap();
    assert_eq!(c.gateway.engine.searxng[0].url.as_str(), "http://h:1/searx");
}

#[test]
fn keys_never_show_in_debug_or_errors() {
    let c = config(&[("BRAVE_API_KEY", "sekrit-123")]).unwrap();
    assert!(!format!("{c:?}").contains("sekrit-123"));
    let err = config(&[("BRAVE_API_KEY", "sekrit-123"), ("CACHE_SIZE", "x")]).unwrap_err();
    assert!(!err.to_string().contains("sekrit-123"));
}

#[test]
fn the_books_configuration_table_matches_the_code() {
    let page = include_str!("../../../../docs/src/configuration.md");
    let start = page
        .find("<!-- config-table:start -->")
        .expect("the page has the config-table start marker");
    let end = page
        .find("<!-- config-table:end -->")
        .expect("the page has the config-table end marker");
    let table = page[start..end]
        .trim_start_matches("<!-- config-table:start -->")
        .trim();
    assert_eq!(
        table,
        markdown_table().trim(),
        "docs/src/configuration.md's table is out of date: run scripts/update-config-table.sh"
    );
}

#[test]
fn help_shows_each_variable_with_the_default_the_parser_uses() {
    let help = help_table();
    let defaults = config(&[]).unwrap();
    for v in VARIABLES {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(v.name))
            .unwrap_or_else(|| panic!("{} missing from --help", v.name));
        assert!(
            line.ends_with(&format!("(default: {})", v.default_shown())),
            "{line}"
        );
    }
    // The defaults the help shows are the ones in force: a default that names another variable
    // resolves to that variable's value.
    assert!(
        help.contains("BRAVE_TIMEOUT_SECONDS")
            && help.contains("(default: PROVIDER_TIMEOUT_SECONDS)")
    );
    assert_eq!(
        timeout(&defaults, ProviderKind::Brave),
        defaults
            .gateway
            .engine
            .provider(ProviderKind::Exa)
            .unwrap()
            .timeout
    );
}

#[test]
fn tracing_is_off_unless_an_otlp_endpoint_is_set() {
    assert_eq!(config(&[]).unwrap().otlp, None);
    let base = config(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
        ("OTEL_SERVICE_NAME", "gw-eu"),
    ])
    .unwrap()
    .otlp
    .unwrap();
    assert_eq!(base.traces_url.as_str(), "http://collector:4318/v1/traces");
    assert_eq!(base.service_name, "gw-eu");
    let traces = config(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://other:9999/custom",
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    ])
    .unwrap()
    .otlp
    .unwrap();
    assert_eq!(traces.traces_url.as_str(), "http://other:9999/custom");
    assert_eq!(traces.service_name, "searxng-gateway");
    for (name, value) in [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "https://collector:4318/v1/traces",
        ),
    ] {
        let err = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (name, value),
        ])
        .unwrap_err();
        assert_eq!(err.variable, name, "{value}");
    }
}

#[test]
fn provider_policy_and_stale_window_are_read_and_checked() {
    let c = config(&[]).unwrap();
    assert_eq!(c.gateway.engine.provider_policy, ProviderPolicy::Rotate);
    assert_eq!(c.gateway.engine.cache_stale, Duration::from_secs(86_400));
    let c = config(&[("PROVIDER_POLICY", "Ordered"), ("CACHE_STALE_SECONDS", "0")]).unwrap();
    assert_eq!(c.gateway.engine.provider_policy, ProviderPolicy::Ordered);
    assert_eq!(c.gateway.engine.cache_stale, Duration::ZERO);
    let c = config(&[("PROVIDER_POLICY", "cheapest")]).unwrap();
    assert_eq!(c.gateway.engine.provider_policy, ProviderPolicy::Cheapest);
    let err = config(&[("PROVIDER_POLICY", "cheap")]).unwrap_err();
    assert_eq!(err.variable, "PROVIDER_POLICY");
    let err = config(&[("PREMIUM_USD_PER_DAY", "lots")]).unwrap_err();
    assert_eq!(err.variable, "PREMIUM_USD_PER_DAY");
    let err = config(&[("CACHE_STALE_SECONDS", "-1")]).unwrap_err();
    assert_eq!(err.variable, "CACHE_STALE_SECONDS");
}

#[test]
fn the_tokenizer_encoding_is_o200k_unless_told_and_a_bad_one_is_named() {
    let c = config(&[]).unwrap();
    assert_eq!(c.gateway.engine.tokenizer, TokenizerEncoding::O200kBase);
    let c = config(&[("TOKENIZER_ENCODING", "CL100K_BASE")]).unwrap();
    assert_eq!(c.gateway.engine.tokenizer, TokenizerEncoding::Cl100kBase);
    let err = config(&[("TOKENIZER_ENCODING", "gpt2")]).unwrap_err();
    assert_eq!(err.variable, "TOKENIZER_ENCODING");
    assert!(err.to_string().contains("o200k_base, cl100k_base"), "{err}");
}

#[test]
fn a_reranker_is_configured_by_its_url_and_a_bad_value_is_named() {
    assert!(config(&[]).unwrap().gateway.engine.reranker.is_none());
    let c = config(&[
        ("RERANK_URL", "http://infinity:7997/rerank"),
        ("RERANK_TIMEOUT_SECONDS", "0.5"),
        ("RERANK_API_KEY", "rk-config-secret"),
    ])
    .unwrap();
    let reranker = c.gateway.engine.reranker.as_ref().unwrap();
    assert_eq!(reranker.timeout, Duration::from_millis(500));
    assert!(!format!("{c:?}").contains("rk-config-secret"));
    for (variable, value) in [
        ("RERANK_URL", "infinity:7997"),
        ("RERANK_URL", "http://infinity:7997/rerank?key=1"),
        ("RERANK_TIMEOUT_SECONDS", "-1"),
    ] {
        let mut vars = vec![("RERANK_URL", "http://infinity:7997/rerank")];
        vars.retain(|(k, _)| *k != variable);
        vars.push((variable, value));
        let err = config(&vars).unwrap_err();
        assert_eq!(err.variable, variable, "{value}");
    }
}

#[test]
fn the_engine_probe_weight_is_a_quarter_unless_told_and_bounded() {
    let c = config(&[]).unwrap();
    assert!((c.gateway.engine.engine_probe_weight - 0.25).abs() < f64::EPSILON);
    let c = config(&[("ENGINE_PROBE_WEIGHT", "2")]).unwrap();
    assert!((c.gateway.engine.engine_probe_weight - 2.0).abs() < f64::EPSILON);
    for bad in ["0", "-1", "1000", "lots"] {
        let err = config(&[("ENGINE_PROBE_WEIGHT", bad)]).unwrap_err();
        assert_eq!(err.variable, "ENGINE_PROBE_WEIGHT", "{bad}");
    }
}

#[test]
fn the_page_is_served_unless_ui_enabled_is_false_and_keeps_queries_unless_told_not_to() {
    use gateway_http::settings::ui::{Queries, UiSettings};
    assert_eq!(
        config(&[]).unwrap().gateway.server.ui,
        Some(UiSettings {
            queries: Queries::Shown
        })
    );
    assert_eq!(
        config(&[("UI_SHOW_QUERIES", "false")])
            .unwrap()
            .gateway
            .server
            .ui,
        Some(UiSettings {
            queries: Queries::Hidden
        })
    );
    assert_eq!(
        config(&[("UI_ENABLED", "false")])
            .unwrap()
            .gateway
            .server
            .ui,
        None
    );
    // A path that only starts with the page's letters is free.
    assert_eq!(
        config(&[("METRICS_PATH", "/uix")])
            .unwrap()
            .gateway
            .server
            .metrics_path,
        "/uix"
    );
}
