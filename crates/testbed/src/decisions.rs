//! What the gateway decided for one search, in words: read from which of its own counters grew while the
//! search ran (`/metrics` before and after), what the simulated SearXNG saw (was it asked, for which
//! engines, how many results it answered) and how long each breaker that tripped stays open (`/status`).

use std::time::Duration;

use crate::scrape::{label, Scrape};
use crate::upstreams::{ENGINES, SUFFICIENT_MIN_RESULTS};

/// What the simulated SearXNG saw of one search.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SearxngSeen {
    /// Whether the search reached it at all.
    pub(crate) asked: bool,
    /// The `engines=` the gateway sent, if any.
    pub(crate) engines: Option<String>,
    /// How many results it answered with, if it answered with results JSON.
    pub(crate) results: Option<usize>,
}

/// The lines for one search. `open_for(kind, name)` is how long a breaker that tripped stays open.
pub(crate) fn describe(
    before: &Scrape,
    after: &Scrape,
    searxng: &SearxngSeen,
    open_for: &dyn Fn(&str, &str) -> Option<Duration>,
) -> Vec<String> {
    let outcome_grew = |outcome: &str| {
        after.total("requests_total", "outcome", outcome)
            > before.total("requests_total", "outcome", outcome)
    };
    if outcome_grew("cache_hit") {
        return vec!["answered from the cache; no upstream was called".to_owned()];
    }
    let mut lines = Vec::new();
    for (labels, _) in after.grown(before, "searxng_requests_total") {
        lines.push(searxng_answer(&label(&labels, "result"), searxng.results));
    }
    if searxng.asked {
        lines.push(engines_asked(searxng.engines.as_deref()));
    }
    let unresponsive: Vec<String> = after
        .grown(before, "engine_unresponsive_total")
        .into_iter()
        .map(|(labels, _)| {
            format!(
                "{} ({})",
                label(&labels, "engine"),
                label(&labels, "reason")
            )
        })
        .collect();
    if !unresponsive.is_empty() {
        lines.push(format!(
            "SearXNG reported unresponsive: {}",
            unresponsive.join(", ")
        ));
    }
    let calls: Vec<String> = after
        .grown(before, "provider_calls_total")
        .into_iter()
        .map(|(labels, _)| {
            format!(
                "{} → {}",
                label(&labels, "provider"),
                label(&labels, "outcome")
            )
        })
        .collect();
    if !calls.is_empty() {
        lines.push(format!("fallback called {}", calls.join(", ")));
    }
    for (labels, _) in after.grown(before, "circuit_breaker_rejections_total") {
        if label(&labels, "kind") == "provider" {
            lines.push(format!(
                "skipped {} without calling it: its breaker is open",
                label(&labels, "engine")
            ));
        }
    }
    for (labels, _) in after.grown(before, "circuit_breaker_trips_total") {
        let (kind, name) = (label(&labels, "kind"), label(&labels, "engine"));
        let open = match open_for(&kind, &name) {
            Some(period) => format!(", open for {:.1} s", period.as_secs_f64()),
            None => String::new(),
        };
        lines.push(format!(
            "tripped the {kind} breaker of {name} (reason {}){open}",
            label(&labels, "reason")
        ));
    }
    for (labels, _) in after.grown(before, "engine_probes_total") {
        let engine = label(&labels, "engine");
        lines.push(format!(
            "probed {engine} itself, outside any client's search (engines={engine}): {}",
            label(&labels, "outcome")
        ));
    }
    for (labels, _) in after.grown(before, "circuit_breaker_recovery_total") {
        lines.push(format!(
            "the half-open probe of {} {} succeeded: breaker closed (recovery)",
            label(&labels, "kind"),
            label(&labels, "engine")
        ));
    }
    if lines.is_empty() {
        lines.push("nothing notable".to_owned());
    }
    lines
}

/// SearXNG's answer as the gateway classified it (`searxng_requests_total{result}`), with what it held.
fn searxng_answer(result: &str, results: Option<usize>) -> String {
    let metric = format!("searxng_requests_total{{result=\"{result}\"}}");
    match (result, results) {
        ("ok", Some(found)) if found < SUFFICIENT_MIN_RESULTS => format!(
            "SearXNG answered 200 with {found} result{} ({metric}): fewer than \
             SUFFICIENT_MIN_RESULTS={SUFFICIENT_MIN_RESULTS}, so the fallback runs",
            if found == 1 { "" } else { "s" }
        ),
        ("ok", Some(found)) => format!("SearXNG answered with {found} results ({metric})"),
        ("ok", None) => format!("SearXNG answered ({metric})"),
        ("degraded", _) => format!(
            "SearXNG answered 200 with no results while its engines failed: degraded ({metric}), so the \
             fallback runs"
        ),
        (failure, _) => format!("SearXNG failed: {failure} ({metric})"),
    }
}

fn engines_asked(sent: Option<&str>) -> String {
    let Some(engines) = sent else {
        return "asked SearXNG for every engine".to_owned();
    };
    let left_out: Vec<&str> = ENGINES
        .iter()
        .copied()
        .filter(|engine| !engines.split(',').any(|sent| sent == *engine))
        .collect();
    if left_out.is_empty() {
        format!("asked SearXNG for engines={engines}")
    } else {
        format!(
            "asked SearXNG for engines={engines} ({} left out: breaker open)",
            left_out.join(", ")
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn no_breaker(_: &str, _: &str) -> Option<Duration> {
        None
    }

    fn seen(engines: Option<&str>, results: Option<usize>) -> SearxngSeen {
        SearxngSeen {
            asked: true,
            engines: engines.map(str::to_owned),
            results,
        }
    }

    #[test]
    fn a_cache_hit_is_all_there_is_to_say() {
        let before = Scrape::parse("searxng_gateway_requests_total{outcome=\"cache_hit\"} 1\n");
        let after = Scrape::parse(
            "searxng_gateway_requests_total{outcome=\"cache_hit\"} 2\n\
             searxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"exa\"} 1\n",
        );

        let lines = describe(&before, &after, &SearxngSeen::default(), &no_breaker);

        assert_eq!(lines, ["answered from the cache; no upstream was called"]);
    }

    #[test]
    fn searxng_finding_nothing_is_shown_as_zero_results_not_just_ok() {
        let before = Scrape::default();
        let after = Scrape::parse(
            "searxng_gateway_searxng_requests_total{result=\"ok\"} 1\n\
             searxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"exa\"} 1\n\
             searxng_gateway_provider_calls_total{outcome=\"rate_limited\",provider=\"brave\"} 1\n\
             searxng_gateway_circuit_breaker_trips_total{engine=\"brave\",kind=\"provider\",reason=\"rate_limited\"} 1\n",
        );
        let open_for = |kind: &str, name: &str| {
            (kind == "provider" && name == "brave").then_some(Duration::from_millis(5_400))
        };

        let lines = describe(&before, &after, &seen(None, Some(0)), &open_for);

        assert_eq!(
            lines,
            [
                "SearXNG answered 200 with 0 results (searxng_requests_total{result=\"ok\"}): fewer than \
                 SUFFICIENT_MIN_RESULTS=3, so the fallback runs",
                "asked SearXNG for every engine",
                "fallback called exa → ok, brave → rate_limited",
                "tripped the provider breaker of brave (reason rate_limited), open for 5.4 s",
            ]
        );
    }

    #[test]
    fn names_the_engines_an_open_breaker_left_out() {
        let after = Scrape::parse("searxng_gateway_searxng_requests_total{result=\"ok\"} 1\n");

        let lines = describe(
            &Scrape::default(),
            &after,
            &seen(Some("bing,duckduckgo,wikipedia"), Some(13)),
            &no_breaker,
        );

        assert_eq!(
            lines,
            [
                "SearXNG answered with 13 results (searxng_requests_total{result=\"ok\"})",
                "asked SearXNG for engines=bing,duckduckgo,wikipedia (google left out: breaker open)",
            ]
        );
    }

    #[test]
    fn a_degraded_answer_and_its_unresponsive_engines_are_named() {
        let after = Scrape::parse(
            "searxng_gateway_searxng_requests_total{result=\"degraded\"} 1\n\
             searxng_gateway_engine_unresponsive_total{engine=\"bing\",reason=\"timeout\"} 1\n\
             searxng_gateway_engine_unresponsive_total{engine=\"google\",reason=\"timeout\"} 1\n",
        );

        let lines = describe(
            &Scrape::default(),
            &after,
            &seen(None, Some(0)),
            &no_breaker,
        );

        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("degraded"), "{}", lines[0]);
        assert_eq!(
            lines[2],
            "SearXNG reported unresponsive: bing (timeout), google (timeout)"
        );
    }
}
