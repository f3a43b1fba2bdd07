//! `SEARXNG_BACKEND_URL`: one SearXNG base URL, or a comma-separated list of them (a pool). Each
//! entry is validated like any URL variable; a list with an empty entry or the same URL twice is
//! refused naming the variable. Each instance gets a name from this list, the closed set the
//! `searxng_instance` metric label and `/status` use:
//!
//! - `host:port` (the scheme's default port when the URL has none), when that is unique in the
//!   list;
//! - otherwise, for every instance, `searxng-<n>` by its 1-based position in the list (two
//!   instances behind one host and port, under different paths).
//!
//! A base URL may have a path: SearXNG behind a reverse proxy at `/searxng/` is
//! `https://host/searxng`, and the gateway calls `https://host/searxng/search`. The common mistake
//! of giving SearXNG's search URL instead is caught here: a path ending in `/search` is dropped
//! (the gateway adds it itself; the server warns at start, naming the variable and the URL used),
//! and an entry with a query string is refused naming the base URL to set instead.

use url::Url;

use gateway_core::env::{self, ConfigError, Env, Problem};

/// At most this many instances: the `searxng_instance` label stays a small closed set.
pub(crate) const MAX_INSTANCES: usize = 32;

/// One configured SearXNG instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearxngBackend {
    /// Its name: the `searxng_instance` label value and its `/status` entry.
    pub name: String,
    /// Its base URL, without a trailing slash in the path.
    pub url: Url,
    /// The URL as given, when it was SearXNG's search URL and `url` is that URL without its
    /// `/search` path: the server's start-up warning names both.
    pub corrected_from: Option<Url>,
}

/// The path segment the gateway adds to a base URL for a search.
const SEARCH_SEGMENT: &str = "/search";

/// Reads `SEARXNG_BACKEND_URL` (`name`) into one or more instances, in the order given.
pub(super) fn read(env: &Env<'_>, name: &str) -> Result<Vec<SearxngBackend>, ConfigError> {
    let raw = env.required(name)?;
    let mut urls: Vec<(Url, Option<Url>)> = Vec::new();
    for entry in raw.text.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(raw.error(Problem::EmptyEntry));
        }
        let given = match env::http_url(&raw, entry) {
            Err(err) if err.problem == Problem::UrlWithQuery => {
                return Err(raw.error(Problem::SearchUrlWithQuery {
                    entry: entry.to_owned(),
                    base: base_of(entry),
                }))
            }
            given => given?,
        };
        let (url, corrected_from) = without_search_path(given);
        if urls.iter().any(|(listed, _)| *listed == url) {
            return Err(raw.error(Problem::ListedTwice(url.to_string())));
        }
        urls.push((url, corrected_from));
    }
    if urls.len() > MAX_INSTANCES {
        return Err(raw.error(Problem::TooMany {
            count: urls.len(),
            max: MAX_INSTANCES,
        }));
    }
    Ok(name_instances(urls))
}

/// `given` without a trailing slash in its path, and without a last `/search` segment (the URL as
/// given beside it when one was dropped).
fn without_search_path(given: Url) -> (Url, Option<Url>) {
    let mut url = given.clone();
    let trimmed = given.path().trim_end_matches('/');
    match trimmed.strip_suffix(SEARCH_SEGMENT) {
        Some(base) => {
            url.set_path(base);
            (url, Some(given))
        }
        None => {
            url.set_path(trimmed);
            (url, None)
        }
    }
}

/// The base URL to set instead of `entry`, a URL with a query (or fragment): the same URL without
/// them and without a `/search` path; `entry` itself if it does not parse (never, past
/// [`env::http_url`]'s checks).
fn base_of(entry: &str) -> String {
    let Ok(mut url) = Url::parse(entry) else {
        return entry.to_owned();
    };
    url.set_query(None);
    url.set_fragment(None);
    let (base, _) = without_search_path(url);
    base.as_str().trim_end_matches('/').to_owned()
}

fn host_port(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn name_instances(urls: Vec<(Url, Option<Url>)>) -> Vec<SearxngBackend> {
    let names: Vec<String> = urls.iter().map(|(url, _)| host_port(url)).collect();
    let unique = names
        .iter()
        .enumerate()
        .all(|(i, name)| !names[..i].contains(name));
    urls.into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, ((url, corrected_from), name))| SearxngBackend {
            name: if unique {
                name
            } else {
                format!("searxng-{}", i + 1)
            },
            url,
            corrected_from,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read_value(value: &str) -> Result<Vec<SearxngBackend>, ConfigError> {
        let value = value.to_owned();
        let lookup = move |name: &str| (name == "SEARXNG_BACKEND_URL").then(|| value.clone());
        read(&Env::new(&lookup), "SEARXNG_BACKEND_URL")
    }

    fn names(backends: &[SearxngBackend]) -> Vec<&str> {
        backends.iter().map(|b| b.name.as_str()).collect()
    }

    #[test]
    fn one_url_is_one_instance_named_by_host_and_port() {
        let one = read_value("http://127.0.0.1:8888/").unwrap();
        assert_eq!(names(&one), ["127.0.0.1:8888"]);
        assert_eq!(one[0].url.as_str(), "http://127.0.0.1:8888/");
        let default_port = read_value("https://search.example/searx/").unwrap();
        assert_eq!(names(&default_port), ["search.example:443"]);
        assert_eq!(default_port[0].url.as_str(), "https://search.example/searx");
    }

    #[test]
    fn a_list_is_a_pool_in_the_order_given() {
        let pool = read_value(" http://a:1 , http://b:2/,http://a:3").unwrap();
        assert_eq!(names(&pool), ["a:1", "b:2", "a:3"]);
    }

    #[test]
    fn instances_sharing_a_host_and_port_are_named_by_position() {
        let pool = read_value("http://h:1/one,http://h:1/two,http://other:2").unwrap();
        assert_eq!(names(&pool), ["searxng-1", "searxng-2", "searxng-3"]);
    }

    /// `…/search` (SearXNG's search URL, where the gateway wants its base) is corrected to the
    /// base, remembered for the start-up warning; a prefix a reverse proxy serves SearXNG under is
    /// kept.
    #[test]
    fn a_search_path_is_dropped_and_remembered_and_a_prefix_is_kept() {
        for (given, base) in [
            ("http://127.0.0.1:8888/search", "http://127.0.0.1:8888/"),
            ("http://127.0.0.1:8888/search/", "http://127.0.0.1:8888/"),
            ("https://host/searxng/search", "https://host/searxng"),
        ] {
            let backends = read_value(given).unwrap();
            assert_eq!(backends[0].url.as_str(), base, "{given}");
            assert_eq!(
                backends[0].corrected_from.as_ref().map(Url::as_str),
                Some(given),
                "{given}"
            );
        }
        for prefix in [
            "https://host/searxng/",
            "https://host/searching",
            "http://h:1",
        ] {
            let backends = read_value(prefix).unwrap();
            assert_eq!(backends[0].corrected_from, None, "{prefix}");
            assert_eq!(
                backends[0].url.as_str().trim_end_matches('/'),
                prefix.trim_end_matches('/'),
                "{prefix}"
            );
        }
        let err = read_value("http://a:1/search,http://a:1").unwrap_err();
        assert_eq!(err.problem, Problem::ListedTwice("http://a:1/".into()));
    }

    /// A search URL with its query (copied from a browser) is refused naming the base URL to set.
    #[test]
    fn a_url_with_a_query_is_refused_naming_the_base_url_to_set() {
        for (given, base) in [
            (
                "http://127.0.0.1:8888/search?q=x&format=json",
                "http://127.0.0.1:8888",
            ),
            (
                "http://127.0.0.1:8888/?format=json",
                "http://127.0.0.1:8888",
            ),
            ("https://host/searxng/search?q=x", "https://host/searxng"),
        ] {
            let err = read_value(&format!("http://other:1,{given}")).unwrap_err();
            assert_eq!(err.variable, "SEARXNG_BACKEND_URL");
            assert_eq!(
                err.problem,
                Problem::SearchUrlWithQuery {
                    entry: given.into(),
                    base: base.into()
                },
                "{given}"
            );
            assert!(err.to_string().contains(base), "{err}");
        }
    }

    #[test]
    fn a_bad_list_names_the_variable_and_the_problem() {
        for (value, problem) in [
            ("http://a:1,,http://b:2", Problem::EmptyEntry),
            ("http://a:1,", Problem::EmptyEntry),
            (
                "http://a:1,http://a:1/",
                Problem::ListedTwice("http://a:1/".into()),
            ),
            ("http://a:1,ftp://b", Problem::NotHttpUrl),
        ] {
            let err = read_value(value).unwrap_err();
            assert_eq!(err.variable, "SEARXNG_BACKEND_URL", "{value}");
            assert_eq!(err.problem, problem, "{value}");
        }
        let err = read_value("http://a:1,not a url").unwrap_err();
        assert!(
            matches!(err.problem, Problem::NotAUrl { ref entry, .. } if entry == "not a url"),
            "{err}"
        );
        let many: Vec<String> = (0..=MAX_INSTANCES)
            .map(|i| format!("http://h{i}:1"))
            .collect();
        let err = read_value(&many.join(",")).unwrap_err();
        assert_eq!(
            err.problem,
            Problem::TooMany {
                count: MAX_INSTANCES + 1,
                max: MAX_INSTANCES
            }
        );
    }
}
