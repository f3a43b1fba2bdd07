//! Domain filters: the domains a client wants its results from (`include`) and the ones it does
//! not (`exclude`), as every door spells them — Tavily's `include_domains` / `exclude_domains`,
//! Firecrawl's `includeDomains` / `excludeDomains`, Perplexity's `search_domain_filter` (a leading
//! `-` excludes). A surface reads its own field names and builds one [`DomainFilter`]; below the
//! surface the filter is part of the search: in its cache key, applied to every source's results
//! before they are merged and counted, and mapped onto each upstream that takes one (SearXNG and
//! Brave through `site:` when exactly one domain is included, Tavily and Exa through their own
//! fields).
//!
//! A domain matches itself and its subdomains: `example.com` keeps `docs.example.com` and not
//! `notexample.com`. Domains are compared as hosts: lower-case, in their ASCII (punycode) form,
//! without a scheme, path, port, `www.` or `*.` — what a client pastes (`https://www.Example.com/x`)
//! means the domain.

use url::Url;

/// Most domains a filter holds on either side (Tavily's own limit on `include_domains`).
pub(crate) const MAX_DOMAINS: usize = 300;

/// One domain, normalised: lower-case ASCII, no `www.` or `*.` prefix, no scheme, path or port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Domain(String);

impl Domain {
    /// `raw` as a domain, when it names one.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        let raw = raw.split_once("://").map_or(raw, |(_, rest)| rest);
        let host = raw.split(['/', '?', '#']).next().unwrap_or("");
        let host = host.trim_start_matches("*.");
        if host.is_empty() || host.contains('@') {
            return None;
        }
        // The URL parser does the IDNA mapping and rejects what is no host.
        let parsed = Url::parse(&format!("http://{host}/")).ok()?;
        let ascii = parsed.host_str()?.trim_end_matches('.').to_owned();
        let ascii = ascii.strip_prefix("www.").unwrap_or(&ascii).to_owned();
        (!ascii.is_empty()).then_some(Self(ascii))
    }

    /// The domain as given, lower-cased.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `host` (normalised as [`host_of`] does) is this domain or one of its subdomains.
    fn covers(&self, host: &str) -> bool {
        host == self.0
            || host
                .strip_suffix(self.0.as_str())
                .is_some_and(|sub| sub.ends_with('.'))
    }
}

/// Which side of a filter a domain that failed to parse was on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Only results from these domains are kept.
    Include,
    /// Results from these domains are dropped.
    Exclude,
}

/// Why a list of domains was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// An entry names no domain.
    #[error("not a domain")]
    NotADomain(Side),
    /// More than [`MAX_DOMAINS`] on one side.
    #[error("more than {MAX_DOMAINS} domains")]
    TooMany(Side),
}

impl DomainError {
    /// The side the bad entry was on.
    pub fn side(self) -> Side {
        match self {
            Self::NotADomain(side) | Self::TooMany(side) => side,
        }
    }
}

/// The domains a search keeps and drops. Empty: every result is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DomainFilter {
    include: Vec<Domain>,
    exclude: Vec<Domain>,
}

impl DomainFilter {
    /// The filter of `include` and `exclude` as a client listed them (blank entries skipped,
    /// repeats dropped, sorted: a list's order selects nothing).
    pub fn new<S: AsRef<str>>(include: &[S], exclude: &[S]) -> Result<Self, DomainError> {
        Ok(Self {
            include: domains(include, Side::Include)?,
            exclude: domains(exclude, Side::Exclude)?,
        })
    }

    /// Perplexity's one list, where a leading `-` excludes a domain.
    pub fn signed<S: AsRef<str>>(entries: &[S]) -> Result<Self, DomainError> {
        let (exclude, include): (Vec<&str>, Vec<&str>) = entries
            .iter()
            .map(|e| e.as_ref().trim())
            .partition(|e| e.starts_with('-'));
        let exclude: Vec<&str> = exclude.iter().map(|e| &e[1..]).collect();
        Self::new(&include, &exclude)
    }

    /// Whether it keeps everything.
    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    /// The included domains.
    pub fn include(&self) -> &[Domain] {
        &self.include
    }

    /// The excluded domains.
    pub fn exclude(&self) -> &[Domain] {
        &self.exclude
    }

    /// The one included domain, when exactly one is: what `site:` can say to an upstream that
    /// takes a query operator and no list.
    pub(crate) fn single_include(&self) -> Option<&Domain> {
        match self.include.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// Whether a result at `url` is kept (its host read as the merge reads it: lower-case
    /// ASCII, `www.` dropped).
    #[cfg(test)]
    fn admits(&self, url: &str) -> bool {
        let parsed = Url::parse(url).ok();
        let host = parsed.as_ref().and_then(Url::host_str);
        self.admits_host(host.map(|h| h.strip_prefix("www.").unwrap_or(h)))
    }

    /// Whether a result on `host` (lower-case ASCII, `www.` dropped; `None`: no host) is kept.
    pub fn admits_host(&self, host: Option<&str>) -> bool {
        if self.is_empty() {
            return true;
        }
        let Some(host) = host else {
            return false;
        };
        (self.include.is_empty() || self.include.iter().any(|d| d.covers(host)))
            && !self.exclude.iter().any(|d| d.covers(host))
    }

    /// The filter as it ends a cache key: nothing when empty (so an unfiltered key is as before).
    pub(super) fn push_key(&self, key: &mut String) {
        if self.is_empty() {
            return;
        }
        key.push_str("\u{1f}d=");
        push_list(key, &self.include);
        key.push('|');
        push_list(key, &self.exclude);
    }
}

fn push_list(key: &mut String, list: &[Domain]) {
    for (i, domain) in list.iter().enumerate() {
        if i > 0 {
            key.push(',');
        }
        key.push_str(domain.as_str());
    }
}

fn domains<S: AsRef<str>>(raw: &[S], side: Side) -> Result<Vec<Domain>, DomainError> {
    let mut parsed = Vec::new();
    for entry in raw
        .iter()
        .map(AsRef::as_ref)
        .filter(|e| !e.trim().is_empty())
    {
        parsed.push(Domain::parse(entry).ok_or(DomainError::NotADomain(side))?);
    }
    parsed.sort_unstable();
    parsed.dedup();
    if parsed.len() > MAX_DOMAINS {
        return Err(DomainError::TooMany(side));
    }
    Ok(parsed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn what_a_client_pastes_means_the_domain() {
        for (raw, domain) in [
            ("example.com", "example.com"),
            (" https://www.Example.com/path?q#f ", "example.com"),
            ("*.rs", "rs"),
            ("EXAMPLE.org:8080", "example.org"),
            ("bücher.de", "xn--bcher-kva.de"),
            ("docs.python.org.", "docs.python.org"),
        ] {
            assert_eq!(Domain::parse(raw).unwrap().as_str(), domain, "{raw}");
        }
        for raw in ["", "   ", "https://", "user@evil.example", "a b.com", "*."] {
            assert_eq!(Domain::parse(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn a_domain_keeps_itself_and_its_subdomains_only() {
        let filter = DomainFilter::new(
            &["https://www.Example.com/path", "*.rs"],
            &["ads.example.com"],
        )
        .unwrap();
        let kept: Vec<bool> = [
            "https://example.com/a",
            "https://www.example.com/b",
            "https://docs.example.com/c",
            "https://ads.example.com/d",
            "https://x.ads.example.com/d",
            "https://notexample.com/e",
            "https://docs.rs/f",
            "https://BÜCHER.example.com/g",
            "not a url",
        ]
        .iter()
        .map(|u| filter.admits(u))
        .collect();
        assert_eq!(
            kept,
            [true, true, true, false, false, false, true, true, false]
        );
        assert!(DomainFilter::default().admits("not a url"));
    }

    #[test]
    fn perplexitys_minus_excludes_and_the_rest_includes() {
        let filter =
            DomainFilter::signed(&["nature.com", "-pinterest.com", " -www.reddit.com "]).unwrap();
        assert_eq!(
            filter
                .include()
                .iter()
                .map(Domain::as_str)
                .collect::<Vec<_>>(),
            ["nature.com"]
        );
        assert_eq!(
            filter
                .exclude()
                .iter()
                .map(Domain::as_str)
                .collect::<Vec<_>>(),
            ["pinterest.com", "reddit.com"]
        );
        assert_eq!(filter.single_include().unwrap().as_str(), "nature.com");
        let only_excluded = DomainFilter::signed(&["-a.com"]).unwrap();
        assert!(only_excluded.include().is_empty());
        assert!(only_excluded.admits("https://b.com/"));
        assert!(!only_excluded.admits("https://a.com/"));
    }

    #[test]
    fn bad_entries_and_long_lists_are_refused_naming_their_side() {
        assert_eq!(
            DomainFilter::new(&["ok.com"], &["not a domain"]),
            Err(DomainError::NotADomain(Side::Exclude))
        );
        let many: Vec<String> = (0..=MAX_DOMAINS).map(|i| format!("d{i}.com")).collect();
        assert_eq!(
            DomainFilter::new(&many, &[]),
            Err(DomainError::TooMany(Side::Include))
        );
        assert_eq!(
            DomainFilter::new(&["", " "], &[]).unwrap(),
            DomainFilter::default()
        );
    }

    #[test]
    fn the_key_is_the_same_whatever_the_order_and_spelling() {
        let key = |f: &DomainFilter| {
            let mut k = String::new();
            f.push_key(&mut k);
            k
        };
        let a = DomainFilter::new(&["b.com", "A.com"], &["x.org"]).unwrap();
        let b = DomainFilter::new(&["www.a.com", "b.com", "a.com"], &["https://x.org/"]).unwrap();
        assert_eq!(key(&a), key(&b));
        assert_eq!(key(&a), "\u{1f}d=a.com,b.com|x.org");
        assert_eq!(key(&DomainFilter::default()), "");
        let swapped = DomainFilter::new(&["x.org"], &["a.com", "b.com"]).unwrap();
        assert_ne!(key(&a), key(&swapped));
    }
}
