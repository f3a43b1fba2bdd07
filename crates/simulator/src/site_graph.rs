//! A generated site for crawl tests and the crawl benchmark: a known link graph on a
//! [`SimulatedSite`] and the traps a crawler meets on real sites.
//!
//! The graph: a home page linking to `sections` section pages (`/s/<k>/`), each linking to its
//! `per_section` articles (`/s/<k>/page-<letters>`: named by words, as a site's slugs are;
//! [`article_path`]); an
//! article links to its section, the next article of its
//! section, the same article of the next section, and itself with a session id (`?sid=…`, one
//! page under two URLs). A page only the sitemap lists (`/hidden`). Every page is found within
//! three links of the home page or through the sitemap.
//!
//! The traps: `robots.txt` disallowing `/private/` (every article links there) with a crawl delay
//! and its `Sitemap:` line; a sitemap index naming two sitemaps; a calendar (`/events/<y>/<m>/`,
//! [`CALENDAR_MONTHS`] months, each page linking to the twelve months either side) far larger
//! than a crawler should take; a page that answers 500 (`/s/0/broken`); a redirect to another
//! host (`/s/0/away`, to [`SiteGraph::landing`]) whose page links on within that host.

use std::time::Duration;

use crate::site::{Page, SimulatedSite};

/// Months the calendar trap has (from January 2000): more than any crawl should read of it.
pub const CALENDAR_MONTHS: usize = 480;
/// The path every article links to and `robots.txt` disallows.
pub const DISALLOWED_PREFIX: &str = "/private/";
/// The calendar's pages start with this.
pub const CALENDAR_PREFIX: &str = "/events/";
/// The page that answers 500.
pub const BROKEN_PATH: &str = "/s/0/broken";
/// The page that redirects to the other host.
pub const AWAY_PATH: &str = "/s/0/away";
/// The page only the sitemap lists.
pub const HIDDEN_PATH: &str = "/hidden";

/// What to generate.
#[derive(Debug, Clone)]
pub struct GraphSpec {
    /// Section pages under the home page.
    pub sections: usize,
    /// Articles per section.
    pub per_section: usize,
    /// About this many bytes of text per article.
    pub article_bytes: usize,
    /// Each article sent in four chunks this far apart (`None`: at once).
    pub pace: Option<Duration>,
    /// `Crawl-delay` in `robots.txt`, in seconds.
    pub crawl_delay: f32,
}

impl Default for GraphSpec {
    fn default() -> Self {
        Self {
            sections: 6,
            per_section: 20,
            article_bytes: 2_000,
            pace: None,
            crawl_delay: 0.01,
        }
    }
}

/// The generated site: what a whole crawl of it should read.
#[derive(Debug, Clone)]
pub struct SiteGraph {
    origin: String,
    paths: Vec<String>,
}

impl SiteGraph {
    /// Generates the site on `site`; `off_site` is the other host's site, whose `/landing` the
    /// redirect points at (it links to `/onward`, which a crawl of `site` must never read).
    pub fn build(site: &SimulatedSite, off_site: &SimulatedSite, spec: &GraphSpec) -> Self {
        let origin = site.origin();
        let mut paths = vec!["/".to_owned()];
        let sections: Vec<String> = (0..spec.sections).map(|k| format!("/s/{k}/")).collect();
        site.set("/", Page::html(html("Home", &sections, 200)));
        for (k, section) in sections.iter().enumerate() {
            let articles: Vec<String> = (0..spec.per_section).map(|j| article_path(k, j)).collect();
            site.set(
                section,
                Page::html(html(&format!("Section {k}"), &articles, 200)),
            );
            paths.push(section.clone());
            for j in 0..spec.per_section {
                let path = article_path(k, j);
                let mut links = vec![
                    section.clone(),
                    article_path(k, (j + 1) % spec.per_section),
                    article_path((k + 1) % spec.sections, j),
                    session_path(k, j),
                    format!("{DISALLOWED_PREFIX}{k}-{j}"),
                ];
                match (k, j) {
                    (0, 0) => links.push(month_path(300)),
                    (0, 1) => links.push(BROKEN_PATH.to_owned()),
                    (0, 2) => links.push(AWAY_PATH.to_owned()),
                    _ => {}
                }
                let body = html(&format!("Article {k}.{j}"), &links, spec.article_bytes);
                site.set(&path, paced(body, spec.pace));
                paths.push(path);
            }
        }
        site.set(
            HIDDEN_PATH,
            Page::html(html("Hidden", &["/".to_owned()], 200)),
        );
        paths.push(HIDDEN_PATH.to_owned());
        for month in 0..CALENDAR_MONTHS {
            let around: Vec<String> = (month.saturating_sub(12)..(month + 13).min(CALENDAR_MONTHS))
                .filter(|&other| other != month)
                .map(month_path)
                .collect();
            site.set(
                &month_path(month),
                Page::html(html(&format!("Events {}", month_path(month)), &around, 200)),
            );
        }
        site.set(BROKEN_PATH, Page::status(500, "broken"));
        site.set(AWAY_PATH, Page::redirect(Self::landing(off_site)));
        off_site.set(
            "/landing",
            Page::html(html("Elsewhere", &["/onward".to_owned()], 200)),
        );
        off_site.set("/onward", Page::html(html("Further", &[], 200)));
        site.set(
            "/robots.txt",
            Page::ok(
                "text/plain",
                format!(
                    "User-agent: *\nDisallow: {DISALLOWED_PREFIX}\nCrawl-delay: {}\n\nSitemap: {origin}/sitemap.xml\n",
                    spec.crawl_delay
                ),
            ),
        );
        site.set(
            "/sitemap.xml",
            Page::ok(
                "application/xml",
                format!(
                    "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                     <sitemap><loc>{origin}/sitemap-articles.xml</loc></sitemap>\
                     <sitemap><loc>{origin}/sitemap-more.xml</loc></sitemap></sitemapindex>"
                ),
            ),
        );
        let articles: Vec<&String> = paths
            .iter()
            .filter(|p| p.starts_with("/s/") && !p.ends_with('/'))
            .collect();
        site.set(
            "/sitemap-articles.xml",
            Page::ok(
                "application/xml",
                urlset(&origin, articles.iter().map(|p| p.as_str())),
            ),
        );
        site.set(
            "/sitemap-more.xml",
            Page::ok("application/xml", urlset(&origin, [HIDDEN_PATH])),
        );
        Self { origin, paths }
    }

    /// Where the redirect off the site lands: `off_site` named `localhost`, another host to a
    /// crawler whose start is on `127.0.0.1`.
    pub fn landing(off_site: &SimulatedSite) -> String {
        format!("http://localhost:{}/landing", off_site.addr().port())
    }

    /// The URLs a whole crawl reads (the calendar aside): home, sections, articles, the hidden page.
    pub fn urls(&self) -> Vec<String> {
        self.paths
            .iter()
            .map(|path| format!("{}{path}", self.origin))
            .collect()
    }

    /// Whether `url` is one of the calendar's pages.
    pub fn is_calendar(&self, url: &str) -> bool {
        url.strip_prefix(&self.origin)
            .is_some_and(|path| path.starts_with(CALENDAR_PREFIX))
    }
}

/// The path of article `article` of section `section`: `/s/<section>/page-<letters>`, the letters
/// `article` in base 26 (`a`, …, `z`, `ba`, …).
pub fn article_path(section: usize, article: usize) -> String {
    let mut letters = Vec::new();
    let mut n = article;
    loop {
        letters.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            break;
        }
    }
    letters.reverse();
    format!(
        "/s/{section}/page-{}",
        letters.into_iter().collect::<String>()
    )
}

/// Article `article` of section `section` as its links name it once more, with a session id:
/// the same page under another URL.
pub fn session_path(section: usize, article: usize) -> String {
    format!(
        "{}?sid=s{section}x{article}",
        article_path(section, article)
    )
}

/// The calendar page of month `n` after January 2000.
fn month_path(n: usize) -> String {
    format!("{CALENDAR_PREFIX}{}/{:02}/", 2000 + n / 12, n % 12 + 1)
}

fn urlset<'a>(origin: &str, paths: impl IntoIterator<Item = &'a str>) -> String {
    let locs: String = paths
        .into_iter()
        .map(|path| format!("<url><loc>{origin}{path}</loc></url>"))
        .collect();
    format!(
        "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{locs}</urlset>"
    )
}

/// An HTML page titled `title` with about `bytes` of prose and links to `links`.
fn html(title: &str, links: &[String], bytes: usize) -> String {
    const SENTENCE: &str = "The river keeps its own calendar: the water rises, the birds return \
        to the banks, and the boats carry what the towns upstream could spare this season. ";
    let paragraphs: String = (0..bytes.div_ceil(SENTENCE.len() * 4).max(1))
        .map(|i| format!("<p>{title}, part {i}. {}</p>", SENTENCE.repeat(4)))
        .collect();
    let anchors: String = links
        .iter()
        .map(|href| format!("<li><a href=\"{href}\">{href}</a></li>"))
        .collect();
    format!(
        "<!doctype html><html><head><title>{title}</title></head><body><article><h1>{title}</h1>\
         {paragraphs}</article><nav><ul>{anchors}</ul></nav></body></html>"
    )
}

fn paced(body: String, pace: Option<Duration>) -> Page {
    match pace {
        None => Page::html(body),
        Some(every) => {
            let body = body.into_bytes();
            Page::Trickle {
                content_type: "text/html; charset=utf-8".into(),
                chunk: body.len() / 4 + 1,
                body,
                every,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_graph_is_reachable_and_its_traps_are_where_it_says() {
        let site = SimulatedSite::start().await.expect("site");
        let other = SimulatedSite::start().await.expect("site");
        let spec = GraphSpec {
            sections: 3,
            per_section: 4,
            ..GraphSpec::default()
        };
        let graph = SiteGraph::build(&site, &other, &spec);
        // Home, 3 sections, 12 articles, the hidden page.
        assert_eq!(graph.urls().len(), 1 + 3 + 12 + 1);
        let http = reqwest::Client::new();
        let text = |path: &str| {
            let url = site.url(path);
            let http = http.clone();
            async move {
                let answer = http.get(url).send().await.expect("answers");
                (answer.status().as_u16(), answer.text().await.expect("text"))
            }
        };
        let (status, robots) = text("/robots.txt").await;
        assert_eq!(status, 200);
        assert!(robots.contains("Disallow: /private/") && robots.contains("Crawl-delay: 0.01"));
        let (_, article) = text(&article_path(0, 0)).await;
        assert_eq!(article_path(0, 0), "/s/0/page-a");
        assert_eq!(article_path(2, 27), "/s/2/page-bb");
        for link in [
            "/s/0/".to_owned(),
            article_path(0, 1),
            article_path(1, 0),
            session_path(0, 0),
            "/private/0-0".to_owned(),
            "/events/2025/01/".to_owned(),
        ] {
            assert!(
                article.contains(&format!("href=\"{link}\"")),
                "{link}: {article}"
            );
        }
        assert_eq!(text(BROKEN_PATH).await.0, 500);
        let (_, more) = text("/sitemap-more.xml").await;
        assert!(more.contains(&format!("{}{HIDDEN_PATH}", site.origin())));
        let (_, month) = text("/events/2025/01/").await;
        assert_eq!(
            month.matches("<li>").count(),
            24,
            "twelve months either side"
        );
        assert!(graph.is_calendar(&site.url("/events/2000/01/")));
        assert!(!graph.is_calendar(&site.url(&article_path(0, 0))));
    }
}
