//! A Perplexity search request read field by field into the searches it asks for ([`Ask`]), and
//! a query's hits in Perplexity's result shape with the date filters applied ([`Ask::results`]).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    PerplexityError, PerplexityOwn, DEFAULT_RESULTS, MAX_DOMAINS, MAX_QUERIES, MAX_RESULTS,
};
use crate::server::kit::document::Hit;
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use crate::server::kit::refusal::Refusal;
use gateway_core::request::{DomainFilter, SearchInput, SearchRequest, TimeRange};

/// `query`: one or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Queries {
    One(String),
    Many(Vec<String>),
}

/// `search_recency_filter`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Recency {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// A search request, read and checked (the queries not yet validated).
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub(crate) queries: Vec<String>,
    /// Whether `query` was a list (the answer is then one list per query).
    pub(crate) listed: bool,
    pub(crate) input: SearchInput,
    pub(crate) max_results: usize,
    pub(crate) after: Option<String>,
    pub(crate) before: Option<String>,
    pub(crate) tokens_per_page: Option<usize>,
    pub(crate) tokens: Option<usize>,
}

impl Ask {
    pub(crate) fn read(fields: &Map<String, Value>) -> Result<Self, PerplexityError> {
        const READS: [&str; 11] = [
            "query",
            "max_results",
            "search_domain_filter",
            "search_recency_filter",
            "search_after_date_filter",
            "search_before_date_filter",
            "search_language_filter",
            "country",
            "max_tokens_per_page",
            "max_tokens",
            "api_key",
        ];
        const HARMLESS: [&str; 2] = ["display_server_time", "search_context_size"];
        let harmless_at = |name: &str, value: &Value| {
            matches!(name, "search_mode" | "search_type") && value.as_str() == Some("web")
        };
        if let Some(named) = json_fields::unhonoured(fields, &READS, &HARMLESS, harmless_at) {
            return Err(Refusal::Own(PerplexityOwn::Unsupported(named)));
        }
        const QUERY: InvalidField = InvalidField {
            name: "query",
            expected: "a string or a list of 1 to 5 strings",
        };
        let (queries, listed) = match field::<Queries>(fields, "query", QUERY.expected)? {
            None => (vec![String::new()], false),
            Some(Queries::One(query)) => (vec![query], false),
            Some(Queries::Many(queries)) if (1..=MAX_QUERIES).contains(&queries.len()) => {
                (queries, true)
            }
            Some(Queries::Many(_)) => return Err(QUERY.into()),
        };
        let max_results = number_in(
            fields,
            "max_results",
            1..=MAX_RESULTS,
            "an integer from 1 to 20",
        )?
        .unwrap_or(DEFAULT_RESULTS) as usize;
        let domains = match field::<Vec<String>>(
            fields,
            "search_domain_filter",
            "a list of at most 20 domains",
        )? {
            None => DomainFilter::default(),
            Some(list) if list.len() > MAX_DOMAINS => {
                return Err(InvalidField {
                    name: "search_domain_filter",
                    expected: "a list of at most 20 domains",
                }
                .into())
            }
            Some(list) => DomainFilter::signed(&list).map_err(|_| InvalidField {
                name: "search_domain_filter",
                expected: "a list of at most 20 domains",
            })?,
        };
        let recency = field::<Recency>(
            fields,
            "search_recency_filter",
            "hour, day, week, month or year",
        )?
        .map(|r| match r {
            Recency::Hour | Recency::Day => TimeRange::Day,
            Recency::Week => TimeRange::Week,
            Recency::Month => TimeRange::Month,
            Recency::Year => TimeRange::Year,
        });
        let after = date_field(fields, "search_after_date_filter")?;
        let before = date_field(fields, "search_before_date_filter")?;
        let since_after = after.as_deref().and_then(days_since).map(|days| {
            (days <= TimeRange::Year.days()).then(|| TimeRange::covering_days(days.max(1)))
        });
        let time_range = recency.or(since_after.flatten());
        let languages: Vec<String> = field(
            fields,
            "search_language_filter",
            "a list of language codes such as en",
        )?
        .unwrap_or_default();
        let country: Option<String> = field(fields, "country", "a country code such as US")?;
        let language = match (languages.as_slice(), country) {
            ([one], Some(country)) if country.trim().len() == 2 => Some(format!(
                "{}-{}",
                one.trim().to_ascii_lowercase(),
                country.trim().to_ascii_uppercase()
            )),
            ([one], _) => Some(one.trim().to_ascii_lowercase()),
            ([], _) => None,
            _ => {
                return Err(Refusal::Own(PerplexityOwn::Unsupported(
                    "more than one language in search_language_filter".to_owned(),
                )))
            }
        };
        let tokens = |name: &'static str| {
            number_in(fields, name, 1..=1_000_000, "a positive integer")
                .map(|n| n.map(|n| n as usize))
        };
        Ok(Self {
            queries,
            listed,
            input: SearchInput {
                time_range,
                language,
                domains,
                ..SearchInput::default()
            },
            max_results,
            after,
            before,
            tokens_per_page: tokens("max_tokens_per_page")?,
            tokens: tokens("max_tokens")?,
        })
    }

    /// One validated search per query.
    pub(crate) fn requests(
        &self,
        max_query_bytes: usize,
    ) -> Result<Vec<SearchRequest>, PerplexityError> {
        let search = |query: &String| {
            let input = SearchInput {
                query: query.clone(),
                ..self.input.clone()
            };
            SearchRequest::new(input, max_query_bytes)
        };
        Ok(self.queries.iter().map(search).collect::<Result<_, _>>()?)
    }

    /// A query's results in Perplexity's shape, the date filters applied where dates are known.
    pub(crate) fn results(&self, hits: Vec<Hit>) -> Vec<Map<String, Value>> {
        hits.into_iter()
            .filter_map(|hit| {
                let day = hit.day();
                if let Some(day) = &day {
                    let outside = self.after.as_ref().is_some_and(|after| day < after)
                        || self.before.as_ref().is_some_and(|before| day > before);
                    if outside {
                        return None;
                    }
                }
                let mut result = Map::new();
                result.insert("title".into(), Value::from(hit.title));
                result.insert("url".into(), Value::from(hit.url));
                result.insert("snippet".into(), Value::from(hit.content));
                result.insert("date".into(), day.map_or(Value::Null, Value::from));
                result.insert("last_updated".into(), Value::Null);
                Some(result)
            })
            .take(self.max_results)
            .collect()
    }
}

/// A `M/D/YYYY` date field, as `YYYY-MM-DD` (which orders as text).
fn date_field(
    fields: &Map<String, Value>,
    name: &'static str,
) -> Result<Option<String>, InvalidField> {
    let invalid = InvalidField {
        name,
        expected: "a date as M/D/YYYY",
    };
    let Some(raw) = field::<String>(fields, name, invalid.expected)? else {
        return Ok(None);
    };
    let mut parts = raw.trim().split('/').map(|p| p.trim().parse::<u32>().ok());
    let (Some(Some(month)), Some(Some(day)), Some(Some(year)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid);
    };
    let iso = format!("{year:04}-{month:02}-{day:02}");
    humantime::parse_rfc3339(&format!("{iso}T00:00:00Z")).map_err(|_| invalid)?;
    Ok(Some(iso))
}

/// Days from `YYYY-MM-DD` to today.
fn days_since(iso: &str) -> Option<u32> {
    let start = humantime::parse_rfc3339(&format!("{iso}T00:00:00Z")).ok()?;
    let elapsed = std::time::SystemTime::now()
        .duration_since(start)
        .unwrap_or_default();
    u32::try_from(elapsed.as_secs() / 86_400).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn hit(url: &str, date: Option<&str>) -> Hit {
        Hit {
            url: url.into(),
            title: "t".into(),
            content: "c".into(),
            engines: vec![],
            published_date: date.map(str::to_owned),
        }
    }

    #[test]
    fn reads_what_the_sdk_and_open_webui_send() {
        let ask = Ask::read(&fields(json!({"query": "rust", "max_results": 3}))).unwrap();
        assert_eq!(ask.queries, ["rust"]);
        assert!(!ask.listed);
        assert_eq!(ask.max_results, 3);
        let many = Ask::read(&fields(json!({"query": ["a", "b"],
            "search_domain_filter": ["docs.rs", "-pinterest.com"],
            "search_recency_filter": "hour", "search_language_filter": ["de"], "country": "ch",
            "max_tokens_per_page": 512, "search_mode": "web"})))
        .unwrap();
        assert!(many.listed);
        assert_eq!(many.queries, ["a", "b"]);
        assert_eq!(many.input.time_range, Some(TimeRange::Day));
        assert_eq!(many.input.language.as_deref(), Some("de-CH"));
        assert_eq!(
            many.input.domains,
            DomainFilter::new(&["docs.rs"], &["pinterest.com"]).unwrap()
        );
        assert_eq!(many.tokens_per_page, Some(512));
        assert_eq!(
            Ask::read(&fields(json!({"query": "q"})))
                .unwrap()
                .max_results,
            10
        );
    }

    #[test]
    fn a_bad_field_is_named() {
        for (body, name) in [
            (json!({"query": ["a", "b", "c", "d", "e", "f"]}), "query"),
            (json!({"query": []}), "query"),
            (json!({"query": 3}), "query"),
            (json!({"query": "q", "max_results": 21}), "max_results"),
            (
                json!({"query": "q", "search_recency_filter": "decade"}),
                "search_recency_filter",
            ),
            (
                json!({"query": "q", "search_after_date_filter": "2026-01-01"}),
                "search_after_date_filter",
            ),
            (
                json!({"query": "q", "search_before_date_filter": "13/45/2026"}),
                "search_before_date_filter",
            ),
            (
                json!({"query": "q", "search_domain_filter": ["a b"]}),
                "search_domain_filter",
            ),
            (
                json!({"query": "q", "max_tokens_per_page": 0}),
                "max_tokens_per_page",
            ),
        ] {
            match Ask::read(&fields(body.clone())) {
                Err(Refusal::InvalidField(InvalidField { name: got, .. })) => {
                    assert_eq!(got, name, "{body}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn dates_filter_results_whose_day_is_known_and_map_to_a_range() {
        let ask = Ask::read(&fields(json!({"query": "q",
            "search_after_date_filter": "3/1/2026", "search_before_date_filter": "3/31/2026"})))
        .unwrap();
        assert_eq!(ask.after.as_deref(), Some("2026-03-01"));
        let results = ask.results(vec![
            hit("https://a.example/", Some("2026-02-27T10:00:00")),
            hit("https://b.example/", Some("2026-03-15 08:00")),
            hit("https://c.example/", None),
            hit("https://d.example/", Some("2026-04-02")),
        ]);
        let urls: Vec<&str> = results.iter().map(|r| r["url"].as_str().unwrap()).collect();
        assert_eq!(urls, ["https://b.example/", "https://c.example/"]);
        assert_eq!(results[0]["date"], "2026-03-15");
        assert_eq!(results[1]["date"], Value::Null);
        let recent = std::time::SystemTime::now() - Duration::from_secs(3 * 86_400);
        let iso = humantime::format_rfc3339(recent).to_string();
        let date = format!("{}/{}/{}", &iso[5..7], &iso[8..10], &iso[0..4]);
        let ask = Ask::read(&fields(
            json!({"query": "q", "search_after_date_filter": date}),
        ))
        .unwrap();
        assert_eq!(ask.input.time_range, Some(TimeRange::Week));
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name_and_the_harmless_is_taken() {
        let taken = Ask::read(&fields(json!({"query": "q", "search_mode": "web",
            "search_context_size": "high", "display_server_time": true})));
        assert!(taken.is_ok(), "{taken:?}");
        for (body, named) in [
            (
                json!({"query": "q", "search_mode": "academic"}),
                "search_mode: \"academic\"",
            ),
            (
                json!({"query": "q", "search_type": "people"}),
                "search_type",
            ),
            (
                json!({"query": "q", "last_updated_after_filter": "1/1/2026"}),
                "last_updated_after_filter",
            ),
            (
                json!({"query": "q", "search_language_filter": ["en", "de"]}),
                "more than one language",
            ),
            (
                json!({"query": "q", "return_images": true}),
                "return_images: true",
            ),
        ] {
            let err = Ask::read(&fields(body.clone())).unwrap_err();
            assert_eq!(err.code(), "unsupported_option", "{body}");
            assert!(err.message().contains(named), "{body}: {}", err.message());
        }
    }
}
