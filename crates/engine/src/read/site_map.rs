//! Mapping a site (issue #43, Firecrawl's `/map`): the URLs a site has, found without reading
//! them — its sitemaps (those `robots.txt` lists, else `/sitemap.xml`; sitemap indexes followed,
//! gzip or not) and the links of its start page (read as any page is: the cache, the address
//! fence, the host's breaker) — kept in scope (the start page's host; its subdomains by option),
//! allowed by `robots.txt` for `FETCH_USER_AGENT`, without fragments (and without query strings
//! unless asked), each once, those matching a search first, at most a limit. All within the
//! request's budget: what was found when time runs out is the answer.
//!
//! Bounded: at most [`MAX_SITEMAP_FILES`] sitemap files fetched, indexes followed
//! [`MAX_INDEX_DEPTH`] deep, each file parsed on the blocking pool within the parse limits of
//! `gateway_upstreams::reader::site`; robots.txt and sitemaps through the reader's fence, caps and
//! timeouts.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::page::{Depth, Freshness, ReadRequest, Render};
use super::reading::Reading;
use crate::search::Premium;
use gateway_core::request::ReadFormat;
use gateway_upstreams::reader::site::{parse_sitemap, Robots, Sitemap};
use gateway_upstreams::reader::ReadFailure;

/// Sitemap files fetched at most for one map.
pub const MAX_SITEMAP_FILES: usize = 25;
/// How deep sitemap indexes are followed.
pub const MAX_INDEX_DEPTH: usize = 3;
/// The most links a map returns (Firecrawl's v2 cap).
pub const MAX_LINKS: usize = 100_000;

/// Whether sitemaps are used (Firecrawl v2's `sitemap`; v1's `ignoreSitemap`/`sitemapOnly`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SitemapMode {
    /// Sitemaps and the start page's links.
    #[default]
    Include,
    /// The start page's links only.
    Skip,
    /// The sitemaps' URLs only.
    Only,
}

/// What a door asks to map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRequest {
    /// The start page, checked by the door (http or https).
    pub url: Url,
    /// Whether sitemaps are used.
    pub sitemap: SitemapMode,
    /// URLs on subdomains of the start page's host count as the site's.
    pub include_subdomains: bool,
    /// Query strings dropped (and the URLs that differ only by them folded into one).
    pub ignore_query: bool,
    /// URLs with these words come first (in the order of how many they have).
    pub search: Option<String>,
    /// The most URLs returned.
    pub limit: usize,
}

/// One URL of the map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapLink {
    /// The URL.
    pub url: String,
    /// Its title, when the map read it (the start page).
    pub title: Option<String>,
}

/// Where the links came from, for logs and `explain`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapSources {
    /// Whether a `robots.txt` was read.
    pub robots: bool,
    /// Sitemap files read.
    pub sitemaps: usize,
    /// URLs the sitemaps listed.
    pub sitemap_urls: usize,
    /// Links on the start page.
    pub page_links: usize,
    /// URLs dropped because `robots.txt` disallows them.
    pub disallowed: usize,
    /// Whether the budget ran out before everything was looked at.
    pub out_of_time: bool,
}

/// A site's map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteMap {
    /// The URLs, matches of the search first, then in the order found.
    pub links: Vec<MapLink>,
    /// Where they came from.
    pub sources: MapSources,
    /// Premium calls the start page's read made (charged to the client).
    pub premium_calls: u32,
}

impl Reading {
    /// The `robots.txt` of `url`'s origin for `FETCH_USER_AGENT`, fetched within `timeout`
    /// through the fence; none (everything allowed) when there is none or it cannot be read.
    pub(crate) async fn robots(&self, url: &Url, timeout: Duration) -> (Robots, bool) {
        let reader = &self.inner.reader;
        let Ok(robots_url) = url.join("/robots.txt") else {
            return (Robots::none(), false);
        };
        match reader.fetch_resource(&robots_url, timeout).await {
            Ok(file) => {
                let agent = reader.robots_agent().to_owned();
                let parsed = tokio::task::spawn_blocking(move || Robots::parse(&agent, &file.body))
                    .await
                    .unwrap_or_else(|_| Robots::none());
                (parsed, true)
            }
            Err(_) => (Robots::none(), false),
        }
    }

    /// Whether `url` may be contacted (its scheme, host and addresses, as for a read).
    pub(crate) async fn check_fence(&self, url: &Url) -> Result<(), ReadFailure> {
        self.inner.reader.check_fence(url).await
    }

    /// POSTs a JSON `body` to `url` through the fence (a crawl's webhook); the reply's status.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: Vec<u8>,
        headers: hyper::header::HeaderMap,
        timeout: Duration,
    ) -> Result<u16, ReadFailure> {
        self.inner
            .reader
            .post_json(url, body, headers, timeout)
            .await
    }

    /// How long one read may take (`FETCH_TIMEOUT_SECONDS`).
    pub(crate) fn read_timeout(&self) -> Duration {
        self.inner.settings.timeout
    }

    /// Maps the site of `request.url` within `budget`. A failure only when nothing at all was
    /// found and the start page could not be read (its failure).
    pub(crate) async fn map(
        &self,
        request: MapRequest,
        premium: Premium,
        budget: Duration,
    ) -> Result<SiteMap, ReadFailure> {
        let deadline = Instant::now() + budget;
        let scope = Scope::of(&request.url, request.include_subdomains);
        let mut sources = MapSources::default();
        let (robots, found_robots) = self.robots(&request.url, left(deadline)).await;
        sources.robots = found_robots;
        let mut found: Vec<MapLink> = Vec::new();
        let mut start_failure = None;
        let mut premium_calls = 0;
        if request.sitemap != SitemapMode::Only {
            let read = self
                .read(
                    ReadRequest {
                        url: request.url.clone(),
                        format: ReadFormat::Markdown,
                        depth: Depth::Basic,
                        freshness: Freshness::Cached,
                        render: Render::Auto,
                        wait_for: None,
                    },
                    premium,
                    left(deadline),
                )
                .await;
            premium_calls = read.premium_calls;
            match read.result {
                Ok(done) => {
                    let document = &done.document;
                    found.push(MapLink {
                        url: request.url.to_string(),
                        title: document.title.clone(),
                    });
                    sources.page_links = document.links.len();
                    found.extend(document.links.iter().map(|url| MapLink {
                        url: url.clone(),
                        title: None,
                    }));
                }
                Err(failed) => start_failure = Some(failed.failure),
            }
        }
        if request.sitemap != SitemapMode::Skip {
            let listed = robots.sitemaps();
            let first: Vec<String> = if listed.is_empty() {
                request
                    .url
                    .join("/sitemap.xml")
                    .map(|u| vec![u.to_string()])
                    .unwrap_or_default()
            } else {
                listed.to_vec()
            };
            let urls = self.sitemap_urls(first, deadline, &mut sources).await;
            sources.sitemap_urls = urls.len();
            found.extend(urls.into_iter().map(|url| MapLink { url, title: None }));
        }
        if Instant::now() >= deadline {
            sources.out_of_time = true;
        }
        let links = choose(found, &request, &scope, &robots, &mut sources);
        if links.is_empty() {
            if let Some(failure) = start_failure {
                return Err(failure);
            }
        }
        Ok(SiteMap {
            links,
            sources,
            premium_calls,
        })
    }

    /// The page URLs of the sitemaps `first` names, indexes followed, within the deadline.
    async fn sitemap_urls(
        &self,
        first: Vec<String>,
        deadline: Instant,
        sources: &mut MapSources,
    ) -> Vec<String> {
        let reader = &self.inner.reader;
        let mut queue: VecDeque<(String, usize)> = first.into_iter().map(|u| (u, 0)).collect();
        let mut seen = HashSet::new();
        let mut urls = Vec::new();
        while let Some((sitemap, depth)) = queue.pop_front() {
            if sources.sitemaps >= MAX_SITEMAP_FILES || Instant::now() >= deadline {
                sources.out_of_time |= Instant::now() >= deadline;
                break;
            }
            if !seen.insert(sitemap.clone()) {
                continue;
            }
            let Ok(url) = Url::parse(&sitemap) else {
                continue;
            };
            let Ok(file) = reader.fetch_resource(&url, left(deadline)).await else {
                continue;
            };
            sources.sitemaps += 1;
            let parsed = tokio::task::spawn_blocking(move || parse_sitemap(&file.body)).await;
            match parsed {
                Ok(Ok(Sitemap::Urls(found))) => urls.extend(found),
                Ok(Ok(Sitemap::Index(more))) if depth < MAX_INDEX_DEPTH => {
                    queue.extend(more.into_iter().map(|u| (u, depth + 1)));
                }
                _ => {}
            }
            if urls.len() >= MAX_LINKS {
                break;
            }
        }
        urls
    }
}

/// What is left of the budget.
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Which hosts are the site's.
#[derive(Debug, Clone)]
struct Scope {
    host: String,
    /// With subdomains: the start host without `www.`, whose subdomains count.
    domain: Option<String>,
}

impl Scope {
    fn of(start: &Url, subdomains: bool) -> Self {
        let host = start.host_str().unwrap_or_default().to_ascii_lowercase();
        let domain = subdomains.then(|| host.strip_prefix("www.").unwrap_or(&host).to_owned());
        Self { host, domain }
    }

    fn holds(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        if host == self.host {
            return true;
        }
        self.domain.as_ref().is_some_and(|domain| {
            host == *domain
                || host
                    .strip_suffix(domain.as_str())
                    .is_some_and(|rest| rest.ends_with('.'))
        })
    }
}

/// The links kept: in scope, allowed, normalised, each once, matches of the search first, at
/// most the limit.
fn choose(
    found: Vec<MapLink>,
    request: &MapRequest,
    scope: &Scope,
    robots: &Robots,
    sources: &mut MapSources,
) -> Vec<MapLink> {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for link in found {
        let Ok(mut url) = Url::parse(&link.url) else {
            continue;
        };
        if !matches!(url.scheme(), "http" | "https") || !scope.holds(&url) {
            continue;
        }
        url.set_fragment(None);
        if request.ignore_query {
            url.set_query(None);
        }
        if !robots.allows(url.as_str()) {
            sources.disallowed += 1;
            continue;
        }
        let key = url.as_str().trim_end_matches('/').to_owned();
        if seen.insert(key) {
            kept.push(MapLink {
                url: url.to_string(),
                title: link.title,
            });
        }
    }
    if let Some(search) = &request.search {
        let words: Vec<String> = search
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        if !words.is_empty() {
            let score = |link: &MapLink| {
                let url = link.url.to_lowercase();
                let title = link.title.as_deref().unwrap_or("").to_lowercase();
                words
                    .iter()
                    .filter(|w| url.contains(w.as_str()) || title.contains(w.as_str()))
                    .count()
            };
            // Stable: among equals, the order found.
            kept.sort_by_key(|link| std::cmp::Reverse(score(link)));
        }
    }
    kept.truncate(request.limit.min(MAX_LINKS));
    kept
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request(search: Option<&str>, subdomains: bool, ignore_query: bool) -> MapRequest {
        MapRequest {
            url: Url::parse("https://www.site.example/").unwrap(),
            sitemap: SitemapMode::Include,
            include_subdomains: subdomains,
            ignore_query,
            search: search.map(str::to_owned),
            limit: 100,
        }
    }

    fn links(urls: &[&str]) -> Vec<MapLink> {
        urls.iter()
            .map(|u| MapLink {
                url: (*u).to_owned(),
                title: None,
            })
            .collect()
    }

    fn urls(chosen: &[MapLink]) -> Vec<&str> {
        chosen.iter().map(|l| l.url.as_str()).collect()
    }

    #[test]
    fn only_the_sites_allowed_urls_each_once() {
        let robots = Robots::parse("searxng-gateway", b"User-agent: *\nDisallow: /admin\n");
        let found = links(&[
            "https://www.site.example/docs#intro",
            "https://www.site.example/docs",
            "https://www.site.example/docs?page=2",
            "https://blog.site.example/post",
            "https://other.example/x",
            "https://www.site.example/admin/panel",
            "mailto:a@site.example",
        ]);
        let mut sources = MapSources::default();
        let req = request(None, false, true);
        let chosen = choose(
            found.clone(),
            &req,
            &Scope::of(&req.url, false),
            &robots,
            &mut sources,
        );
        assert_eq!(urls(&chosen), ["https://www.site.example/docs"]);
        assert_eq!(sources.disallowed, 1);
        let req = request(None, true, false);
        let chosen = choose(
            found,
            &req,
            &Scope::of(&req.url, true),
            &robots,
            &mut sources,
        );
        assert_eq!(
            urls(&chosen),
            [
                "https://www.site.example/docs",
                "https://www.site.example/docs?page=2",
                "https://blog.site.example/post",
            ]
        );
    }

    #[test]
    fn matches_of_the_search_come_first_and_the_limit_holds() {
        let found = links(&[
            "https://www.site.example/about",
            "https://www.site.example/blog/rust-async",
            "https://www.site.example/blog/",
            "https://www.site.example/pricing",
        ]);
        let mut req = request(Some("Rust blog"), false, true);
        req.limit = 3;
        let chosen = choose(
            found,
            &req,
            &Scope::of(&req.url, false),
            &Robots::none(),
            &mut MapSources::default(),
        );
        assert_eq!(
            urls(&chosen),
            [
                "https://www.site.example/blog/rust-async",
                "https://www.site.example/blog/",
                "https://www.site.example/about",
            ]
        );
    }
}
