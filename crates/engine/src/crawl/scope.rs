//! Which URLs a crawl follows: the start page's host (its subdomains, or any host, by option),
//! paths matching the include patterns and none of the exclude patterns (regular expressions, as
//! Firecrawl's; on the path, or the whole URL by option), at most so many links away from the
//! start, and the trap guards — fragments dropped, query strings dropped by option, session-id
//! and calendar-like parameters always dropped, at most [`MAX_PER_PATTERN`] URLs per path shape
//! (the path with its dates as placeholders: a calendar's endless pages are one shape, a forum's
//! numbered topics are not).
//!
//! Bounded: patterns are compiled by the `regex` crate (linear time, no backtracking) with a size
//! limit, at most [`MAX_PATTERNS`] of at most [`MAX_PATTERN_CHARS`] characters each.

use std::collections::HashMap;

use regex::{Regex, RegexBuilder};
use url::Url;

/// Patterns taken at most, each way.
pub const MAX_PATTERNS: usize = 50;
/// The longest pattern taken.
pub const MAX_PATTERN_CHARS: usize = 500;
/// URLs taken at most per path shape (the path with its dates replaced, [`shape`]): a calendar's
/// endless pages stop there.
pub const MAX_PER_PATTERN: usize = 200;

/// Query parameters that name a session or a tracking campaign, never a page: always dropped.
const NOISE_PARAMETERS: &[&str] = &[
    "sid",
    "sessionid",
    "session_id",
    "phpsessid",
    "jsessionid",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "fbclid",
    "gclid",
];

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// More than [`MAX_PATTERNS`].
    #[error("at most {MAX_PATTERNS} patterns")]
    TooMany,
    /// Longer than [`MAX_PATTERN_CHARS`], or not a regular expression the crate takes.
    #[error("{0:?} is not a usable regular expression")]
    Invalid(String),
}

/// Compiles `patterns`.
pub fn patterns(raw: &[String]) -> Result<Vec<Regex>, PatternError> {
    if raw.len() > MAX_PATTERNS {
        return Err(PatternError::TooMany);
    }
    raw.iter()
        .map(|pattern| {
            let shown = || pattern.chars().take(60).collect::<String>();
            if pattern.len() > MAX_PATTERN_CHARS {
                return Err(PatternError::Invalid(shown()));
            }
            RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .dfa_size_limit(1 << 20)
                .build()
                .map_err(|_| PatternError::Invalid(shown()))
        })
        .collect()
}

/// What a crawl follows.
#[derive(Debug, Clone)]
pub struct CrawlScope {
    /// Other hosts' pages too.
    pub allow_external: bool,
    /// Subdomains of the start page's host.
    pub allow_subdomains: bool,
    /// Paths (or URLs) one of which must match, when any.
    pub include: Vec<Regex>,
    /// Paths (or URLs) none of which may match.
    pub exclude: Vec<Regex>,
    /// Patterns match the whole URL, not the path.
    pub on_full_url: bool,
    /// Links away from the start page followed at most.
    pub max_depth: usize,
    /// Query strings dropped.
    pub ignore_query: bool,
    /// New links followed at most per page read (Tavily's `max_breadth`); `None`: all.
    pub max_breadth: Option<usize>,
    /// Hosts one of which must match, when any (Tavily's `select_domains`).
    pub include_hosts: Vec<Regex>,
    /// Hosts none of which may match (Tavily's `exclude_domains`).
    pub exclude_hosts: Vec<Regex>,
}

impl CrawlScope {
    /// `url` as the crawl keeps it: without fragment, session and tracking parameters, and its
    /// query when the scope drops queries.
    pub fn normalise(&self, url: &Url) -> Url {
        let mut url = url.clone();
        url.set_fragment(None);
        if self.ignore_query {
            url.set_query(None);
        } else if url.query().is_some() {
            let kept: Vec<(String, String)> = url
                .query_pairs()
                .filter(|(name, _)| !NOISE_PARAMETERS.contains(&name.to_ascii_lowercase().as_str()))
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect();
            if kept.is_empty() {
                url.set_query(None);
            } else {
                url.query_pairs_mut().clear().extend_pairs(kept);
            }
        }
        url
    }

    /// Whether a link to `url` found at `depth` links from `start` is followed.
    pub fn follows(&self, start: &Url, url: &Url, depth: usize) -> bool {
        if depth > self.max_depth || !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        if !self.allow_external && !same_site(start, url, self.allow_subdomains) {
            return false;
        }
        let host = url.host_str().unwrap_or_default();
        if self.exclude_hosts.iter().any(|p| p.is_match(host))
            || !(self.include_hosts.is_empty()
                || self.include_hosts.iter().any(|p| p.is_match(host)))
        {
            return false;
        }
        self.matches(url)
    }

    /// Whether `url` passes the include and exclude patterns.
    pub fn matches(&self, url: &Url) -> bool {
        let target = if self.on_full_url {
            url.as_str()
        } else {
            url.path()
        };
        if self.exclude.iter().any(|p| p.is_match(target)) {
            return false;
        }
        self.include.is_empty() || self.include.iter().any(|p| p.is_match(target))
    }
}

fn same_site(start: &Url, url: &Url, subdomains: bool) -> bool {
    let (Some(home), Some(host)) = (start.host_str(), url.host_str()) else {
        return false;
    };
    let (home, host) = (home.to_ascii_lowercase(), host.to_ascii_lowercase());
    if home == host {
        return true;
    }
    if !subdomains {
        return false;
    }
    let base = home.strip_prefix("www.").unwrap_or(&home);
    host == base
        || host
            .strip_suffix(base)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Counts URLs per path shape ([`shape`]): `/events/2026/12/05` and `/events/2031/01/17` are one
/// shape, so a calendar's endless days stop at [`MAX_PER_PATTERN`].
#[derive(Debug, Default)]
pub struct Shapes {
    seen: HashMap<String, usize>,
}

impl Shapes {
    /// Whether one more URL of `url`'s shape may be taken (and counts it).
    pub fn admit(&mut self, url: &Url) -> bool {
        let count = self.seen.entry(shape(url)).or_insert(0);
        *count += 1;
        *count <= MAX_PER_PATTERN
    }
}

/// `url`'s path shape: its host and path, each date-like segment as `#` — a year (`2026`), a
/// month or a day right after one (`/2026/12/05`), a whole date (`2026-12`, `2026-12-05`,
/// `20261205`, `2026-12-05.html`) — what a calendar's endless pages differ in. What [`Shapes`]
/// counts; a job the fleet shares counts it in Redis.
///
/// Other numbers stay as they are: `/t/48213` and `/t/48214` are two topics of a forum, two
/// products of a shop, not one trap, and a crawl of such a site is held by its page limit and its
/// depth, not by a calendar's cap.
pub fn shape(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    let mut shape = String::with_capacity(host.len() + url.path().len() + 1);
    shape.push_str(host);
    let mut after_date = false;
    for segment in url.path_segments().into_iter().flatten() {
        shape.push('/');
        // After a year, a month; after a month, a day (`is_day` takes both).
        let dated = is_date(segment) || (after_date && is_day(segment));
        shape.push_str(if dated { "#" } else { segment });
        after_date = dated;
    }
    shape
}

/// A year (1900–2099), a year and month, or a whole date: digits alone (`2026`, `202612`,
/// `20261205`) or joined by `-` or `_`, with or without a file extension after them.
fn is_date(segment: &str) -> bool {
    let stem = match segment.rsplit_once('.') {
        Some((stem, ext)) if !ext.is_empty() && ext.bytes().all(|b| b.is_ascii_alphabetic()) => {
            stem
        }
        _ => segment,
    };
    let mut parts = stem.split(['-', '_']);
    let (Some(first), second, third, None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    match (second, third) {
        (None, None) => match first.len() {
            4 => is_year(first),
            6 => is_year(&first[..4]) && is_month(&first[4..]),
            8 => is_year(&first[..4]) && is_month(&first[4..6]) && is_day(&first[6..]),
            _ => false,
        },
        (Some(month), None) => is_year(first) && is_month(month),
        (Some(month), Some(day)) => is_year(first) && is_month(month) && is_day(day),
        (None, Some(_)) => false,
    }
}

/// The number `segment` spells with one or two digits, if it is one.
fn small_number(segment: &str) -> Option<u8> {
    if (1..=2).contains(&segment.len()) && segment.bytes().all(|b| b.is_ascii_digit()) {
        segment.parse().ok()
    } else {
        None
    }
}

fn is_year(segment: &str) -> bool {
    segment.len() == 4
        && segment.bytes().all(|b| b.is_ascii_digit())
        && segment
            .parse::<u16>()
            .is_ok_and(|year| (1900..=2099).contains(&year))
}

fn is_month(segment: &str) -> bool {
    small_number(segment).is_some_and(|month| (1..=12).contains(&month))
}

fn is_day(segment: &str) -> bool {
    small_number(segment).is_some_and(|day| (1..=31).contains(&day))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn scope(include: &[&str], exclude: &[&str]) -> CrawlScope {
        let own = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        CrawlScope {
            allow_external: false,
            allow_subdomains: false,
            include: patterns(&own(include)).unwrap(),
            exclude: patterns(&own(exclude)).unwrap(),
            on_full_url: false,
            max_depth: 2,
            ignore_query: false,
            max_breadth: None,
            include_hosts: Vec::new(),
            exclude_hosts: Vec::new(),
        }
    }

    #[test]
    fn the_site_the_depth_and_the_patterns_decide() {
        let start = Url::parse("https://www.a.example/docs/").unwrap();
        let s = scope(&["^/docs/"], &["/docs/old/"]);
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(s.follows(&start, &url("https://www.a.example/docs/intro"), 1));
        assert!(!s.follows(&start, &url("https://www.a.example/docs/intro"), 3));
        assert!(!s.follows(&start, &url("https://www.a.example/blog/x"), 1));
        assert!(!s.follows(&start, &url("https://www.a.example/docs/old/x"), 1));
        assert!(!s.follows(&start, &url("https://blog.a.example/docs/x"), 1));
        let mut wide = s.clone();
        wide.allow_subdomains = true;
        assert!(wide.follows(&start, &url("https://blog.a.example/docs/x"), 1));
        assert!(!wide.follows(&start, &url("https://b.example/docs/x"), 1));
        wide.allow_external = true;
        assert!(wide.follows(&start, &url("https://b.example/docs/x"), 1));
        wide.exclude_hosts = patterns(&["^b\\.example$".to_owned()]).unwrap();
        assert!(!wide.follows(&start, &url("https://b.example/docs/x"), 1));
        wide.include_hosts = patterns(&["a\\.example$".to_owned()]).unwrap();
        assert!(!wide.follows(&start, &url("https://c.example/docs/x"), 1));
        assert!(wide.follows(&start, &url("https://blog.a.example/docs/x"), 1));
        assert!(!wide.follows(&start, &url("mailto:x@a.example"), 1));
    }

    #[test]
    fn sessions_tracking_and_fragments_are_dropped() {
        let s = scope(&[], &[]);
        let url = Url::parse("https://a.example/p?id=3&PHPSESSID=abc&utm_source=x#top").unwrap();
        assert_eq!(s.normalise(&url).as_str(), "https://a.example/p?id=3");
        let only_noise = Url::parse("https://a.example/p?sid=1").unwrap();
        assert_eq!(s.normalise(&only_noise).as_str(), "https://a.example/p");
    }

    #[test]
    fn a_calendar_stops_at_the_shape_limit() {
        let mut shapes = Shapes::default();
        let taken = (0..1000)
            .filter(|month| {
                let (year, month) = (2000 + month / 12, month % 12 + 1);
                let url = format!("https://a.example/events/{year}/{month:02}/");
                shapes.admit(&Url::parse(&url).unwrap())
            })
            .count();
        assert_eq!(taken, MAX_PER_PATTERN);
        assert!(shapes.admit(&Url::parse("https://a.example/about").unwrap()));
        // A calendar of whole dates in one segment, with an extension: one shape too.
        let days = (0..400)
            .filter(|day| {
                let url = format!(
                    "https://a.example/archive/20{:02}-{:02}-{:02}.html",
                    10 + day / 336,
                    day / 28 % 12 + 1,
                    day % 28 + 1
                );
                shapes.admit(&Url::parse(&url).unwrap())
            })
            .count();
        assert_eq!(days, MAX_PER_PATTERN);
    }

    #[test]
    fn numbered_pages_that_are_not_dates_are_each_their_own_shape() {
        let mut shapes = Shapes::default();
        let topics = (0..1000)
            .filter(|id| {
                let url = format!("https://forum.example/t/{}", 48_000 + id);
                shapes.admit(&Url::parse(&url).unwrap())
            })
            .count();
        assert_eq!(topics, 1000, "a forum's topics are not a trap");
        let products = (0..500)
            .filter(|id| {
                shapes.admit(&Url::parse(&format!("https://shop.example/p/sku-{id}")).unwrap())
            })
            .count();
        assert_eq!(products, 500);
    }

    #[test]
    fn a_shape_replaces_dates_and_keeps_everything_else() {
        let shape_of = |u: &str| shape(&Url::parse(u).unwrap());
        assert_eq!(
            shape_of("https://a.example/events/2026/12/05/"),
            "a.example/events/#/#/#/"
        );
        assert_eq!(
            shape_of("https://a.example/blog/2026/12/a-post"),
            "a.example/blog/#/#/a-post"
        );
        assert_eq!(shape_of("https://a.example/d/202612"), "a.example/d/#");
        assert_eq!(shape_of("https://a.example/d/2026_12_05"), "a.example/d/#");
        // Not dates: an ID, a version, a number after a word, a year out of range, a month 13.
        assert_eq!(shape_of("https://a.example/t/48213"), "a.example/t/48213");
        assert_eq!(
            shape_of("https://a.example/docs/v2/page/3"),
            "a.example/docs/v2/page/3"
        );
        assert_eq!(
            shape_of("https://a.example/x/1850/12"),
            "a.example/x/1850/12"
        );
        assert_eq!(
            shape_of("https://a.example/x/2026-13"),
            "a.example/x/2026-13"
        );
        assert_eq!(shape_of("https://a.example/"), "a.example/");
    }

    #[test]
    fn bad_or_too_many_patterns_are_refused() {
        assert!(matches!(
            patterns(&["(".into()]),
            Err(PatternError::Invalid(_))
        ));
        assert_eq!(
            patterns(&vec!["a".to_owned(); MAX_PATTERNS + 1]).unwrap_err(),
            PatternError::TooMany
        );
        assert!(patterns(&["x".repeat(MAX_PATTERN_CHARS + 1)]).is_err());
    }
}
