//! One scrape of the gateway's `/metrics` (Prometheus text format), read as series → value, so a step can
//! say which counters grew while it ran: that growth is what the gateway decided.

use std::collections::BTreeMap;

/// Every series of one scrape: `name{labels}` → value.
#[derive(Debug, Default)]
pub(crate) struct Scrape(BTreeMap<String, f64>);

/// The labels of one series.
pub(crate) type Labels = BTreeMap<String, String>;

/// The prefix of every gateway metric.
const PREFIX: &str = "searxng_gateway_";

impl Scrape {
    /// Reads the text exposition; comment lines and unparsable lines are skipped.
    pub(crate) fn parse(text: &str) -> Self {
        let series = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                Some((series.to_owned(), value.parse().ok()?))
            })
            .collect();
        Self(series)
    }

    /// Series of `family` (without the `searxng_gateway_` prefix) that grew since `before`, in label order,
    /// with their labels and the increase.
    pub(crate) fn grown(&self, before: &Scrape, family: &str) -> Vec<(Labels, f64)> {
        self.family(family)
            .filter_map(|(series, value)| {
                let increase = value - before.0.get(series).copied().unwrap_or(0.0);
                (increase > 0.0).then(|| (labels(series), increase))
            })
            .collect()
    }

    /// The sum of `family` over series whose labels include `label=value`.
    pub(crate) fn total(&self, family: &str, label: &str, value: &str) -> f64 {
        self.family(family)
            .filter(|(series, _)| labels(series).get(label).is_some_and(|v| v == value))
            .map(|(_, v)| v)
            .sum()
    }

    /// Every series of `family` with its labels and value, in label order.
    pub(crate) fn series(&self, family: &str) -> Vec<(Labels, f64)> {
        self.family(family)
            .map(|(series, value)| (labels(series), *value))
            .collect()
    }

    fn family<'a>(&'a self, family: &str) -> impl Iterator<Item = (&'a String, &'a f64)> {
        let name = format!("{PREFIX}{family}{{");
        self.0
            .iter()
            .filter(move |(series, _)| series.starts_with(&name))
    }
}

/// `name{a="x",b="y"}` → {a: x, b: y}. Label values come from closed sets: no quotes or commas.
fn labels(series: &str) -> Labels {
    let inner = series
        .split_once('{')
        .and_then(|(_, rest)| rest.strip_suffix('}'))
        .unwrap_or("");
    inner
        .split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((key.to_owned(), value.trim_matches('"').to_owned()))
        })
        .collect()
}

/// The value of label `name`, or an empty string.
pub(crate) fn label(labels: &Labels, name: &str) -> String {
    labels.get(name).cloned().unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reports_which_series_grew_and_by_how_much() {
        let before = Scrape::parse(
            "# HELP x\nsearxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"exa\"} 1\n\
             searxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"tavily\"} 4\n",
        );
        let after = Scrape::parse(
            "searxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"exa\"} 3\n\
             searxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"tavily\"} 4\n\
             searxng_gateway_provider_calls_total{outcome=\"rate_limited\",provider=\"brave\"} 1\n\
             searxng_gateway_provider_calls_totally_different{provider=\"brave\"} 9\n",
        );

        let grown: Vec<(String, String, f64)> = after
            .grown(&before, "provider_calls_total")
            .into_iter()
            .map(|(labels, by)| (label(&labels, "provider"), label(&labels, "outcome"), by))
            .collect();

        assert_eq!(
            grown,
            [
                ("exa".to_owned(), "ok".to_owned(), 2.0),
                ("brave".to_owned(), "rate_limited".to_owned(), 1.0),
            ]
        );
    }

    #[test]
    fn totals_a_family_over_one_label_value() {
        let scrape = Scrape::parse(
            "searxng_gateway_requests_total{outcome=\"cache_hit\"} 2\n\
             searxng_gateway_requests_total{outcome=\"searxng_ok\"} 5\n\
             searxng_gateway_request_duration_seconds_count{outcome=\"searxng_ok\"} 5\n",
        );

        assert_eq!(scrape.total("requests_total", "outcome", "searxng_ok"), 5.0);
        assert_eq!(scrape.total("requests_total", "outcome", "premium_ok"), 0.0);
        assert_eq!(scrape.series("requests_total").len(), 2);
    }
}
