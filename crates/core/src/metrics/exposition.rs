//! The exposition in the format the scraper asked for. `prometheus-client` writes OpenMetrics
//! only; Prometheus asks for it by `Accept` header, but `curl`, `promtool check metrics` and older
//! scrapers read the Prometheus text format 0.0.4. The two differ, for what this gateway exposes,
//! only in three places, so the conversion is written here instead of a second metrics library:
//! a counter family's `HELP`/`TYPE` lines name it with its `_total` suffix, and the `# UNIT` and
//! `# EOF` lines do not exist.

use std::collections::HashSet;

/// `Content-Type` of the OpenMetrics exposition.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// `Content-Type` of the Prometheus text exposition.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether an `Accept` header asks for OpenMetrics (as Prometheus does when it scrapes).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| p.replace(' ', "") == "q=0");
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        })
    })
}

/// Rewrites an OpenMetrics exposition as Prometheus text format 0.0.4.
pub(crate) fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + counters.len() * 16);
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|directive| {
            let rest = line.strip_prefix(directive)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{directive}{name}_total {tail}"))
        });
        match renamed {
            Some(line) => out.push_str(&line),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_get_their_total_suffix_and_openmetrics_only_lines_go() {
        let om =
            "# HELP x_requests Requests.\n# TYPE x_requests counter\nx_requests_total{a=\"b\"} 1\n\
                  # HELP x_size Size.\n# TYPE x_size gauge\n# UNIT x_size bytes\nx_size 2\n# EOF\n";
        assert_eq!(
            to_prometheus_text(om),
            "# HELP x_requests_total Requests.\n# TYPE x_requests_total counter\nx_requests_total{a=\"b\"} 1\n\
             # HELP x_size Size.\n# TYPE x_size gauge\nx_size 2\n"
        );
    }

    #[test]
    fn openmetrics_is_served_only_to_scrapers_that_ask_for_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert!(wants_openmetrics(Some(prometheus)));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(Some("text/plain")));
        assert!(!wants_openmetrics(Some(
            "application/openmetrics-text; q=0"
        )));
        assert!(!wants_openmetrics(None));
    }
}
