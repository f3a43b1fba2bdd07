//! A site's own files, read as facts for mapping it: `robots.txt` ([`Robots`]: whether a path may
//! be read by `FETCH_USER_AGENT`, the sitemaps it lists, its crawl delay) and sitemaps
//! ([`Sitemap`]: a `urlset`'s pages or a `sitemapindex`'s sitemaps, gzip or not).
//!
//! Crates, not hand-written: `texting_robots` (Google's matching rules, tested against its test
//! suite) and `quick-xml` (a streaming reader: no tree is built, so nesting costs nothing and a
//! sitemap costs at most its bytes). Bounded: the fetch's own cap (`FETCH_MAX_BYTES`), a gzip
//! sitemap inflated to at most [`MAX_SITEMAP_BYTES`], at most [`MAX_SITEMAP_URLS`] URLs a file (the
//! sitemaps protocol's own limit), URLs over 2,048 bytes dropped.

use std::io::Read;

use quick_xml::events::Event;
use texting_robots::Robot;

/// The most bytes of a sitemap read, inflated (the protocol allows 50 MB; sitemaps that large are
/// rare, and this is memory held per file).
pub const MAX_SITEMAP_BYTES: usize = 16 * 1024 * 1024;
/// The most URLs taken from one sitemap file (the protocol's limit).
pub const MAX_SITEMAP_URLS: usize = 50_000;
/// The longest URL kept (the protocol's limit).
const MAX_URL_BYTES: usize = 2_048;

/// A site's `robots.txt`, as it concerns the gateway's user agent.
#[derive(Debug)]
pub struct Robots {
    robot: Option<Robot>,
}

impl Robots {
    /// `body` read for `agent`; a file that does not parse allows everything (as Google does).
    pub fn parse(agent: &str, body: &[u8]) -> Self {
        Self {
            robot: Robot::new(agent, body).ok(),
        }
    }

    /// No `robots.txt` (404): everything is allowed, no sitemap is listed.
    pub fn none() -> Self {
        Self { robot: None }
    }

    /// Whether `url` may be read.
    pub fn allows(&self, url: &str) -> bool {
        self.robot.as_ref().is_none_or(|robot| robot.allowed(url))
    }

    /// The sitemaps it lists.
    pub fn sitemaps(&self) -> &[String] {
        self.robot.as_ref().map_or(&[], |robot| &robot.sitemaps)
    }

    /// The crawl delay it asks of the agent, in seconds.
    pub fn crawl_delay(&self) -> Option<f32> {
        self.robot.as_ref().and_then(|robot| robot.delay)
    }
}

/// What a sitemap file lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sitemap {
    /// A `urlset`: pages.
    Urls(Vec<String>),
    /// A `sitemapindex`: more sitemaps.
    Index(Vec<String>),
}

/// Why a sitemap could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SitemapError {
    /// Gzip that does not inflate, or inflates past [`MAX_SITEMAP_BYTES`].
    #[error("the gzip sitemap does not inflate within the limit")]
    Gzip,
    /// Not XML, or neither a `urlset` nor a `sitemapindex`.
    #[error("not a sitemap")]
    NotASitemap,
}

/// Reads a sitemap file (gzip when it starts with gzip's magic bytes). A text sitemap (one URL a
/// line, which the protocol also allows) is read as a `urlset`.
pub fn parse_sitemap(body: &[u8]) -> Result<Sitemap, SitemapError> {
    let inflated;
    let body = if body.starts_with(&[0x1f, 0x8b]) {
        inflated = inflate(body)?;
        inflated.as_slice()
    } else {
        body
    };
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if !trimmed.starts_with('<') {
        let urls: Vec<String> = trimmed
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("http://") || l.starts_with("https://"))
            .filter(|l| l.len() <= MAX_URL_BYTES)
            .take(MAX_SITEMAP_URLS)
            .map(str::to_owned)
            .collect();
        return if urls.is_empty() {
            Err(SitemapError::NotASitemap)
        } else {
            Ok(Sitemap::Urls(urls))
        };
    }
    parse_xml(trimmed)
}

fn inflate(body: &[u8]) -> Result<Vec<u8>, SitemapError> {
    let mut out = Vec::new();
    let limit = u64::try_from(MAX_SITEMAP_BYTES).unwrap_or(u64::MAX) + 1;
    flate2::read::MultiGzDecoder::new(body)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|_| SitemapError::Gzip)?;
    if out.len() > MAX_SITEMAP_BYTES {
        return Err(SitemapError::Gzip);
    }
    Ok(out)
}

fn parse_xml(text: &str) -> Result<Sitemap, SitemapError> {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut kind: Option<bool> = None; // Some(true): an index.
    let mut in_loc = false;
    let mut loc = String::new();
    let mut urls = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(start)) => match start.local_name().as_ref() {
                b"urlset" if kind.is_none() => kind = Some(false),
                b"sitemapindex" if kind.is_none() => kind = Some(true),
                b"loc" => {
                    in_loc = true;
                    loc.clear();
                }
                _ => {}
            },
            Ok(Event::Text(part)) if in_loc => {
                if let Ok(part) = part.decode() {
                    loc.push_str(&part);
                }
            }
            Ok(Event::CData(part)) if in_loc => {
                if let Ok(part) = part.decode() {
                    loc.push_str(&part);
                }
            }
            Ok(Event::GeneralRef(reference)) if in_loc => {
                if let Ok(Some(c)) = reference.resolve_char_ref() {
                    loc.push(c);
                } else if let Ok(name) = reference.decode() {
                    if let Some(entity) = quick_xml::escape::resolve_xml_entity(&name) {
                        loc.push_str(entity);
                    }
                }
            }
            Ok(Event::End(end)) if end.local_name().as_ref() == b"loc" => {
                in_loc = false;
                let url = loc.trim();
                if (url.starts_with("http://") || url.starts_with("https://"))
                    && url.len() <= MAX_URL_BYTES
                {
                    urls.push(url.to_owned());
                    if urls.len() >= MAX_SITEMAP_URLS {
                        break;
                    }
                }
            }
            Ok(Event::Eof) => break,
            // A broken file keeps what it listed before the break.
            Err(_) => break,
            Ok(_) => {}
        }
    }
    match kind {
        Some(true) => Ok(Sitemap::Index(urls)),
        Some(false) => Ok(Sitemap::Urls(urls)),
        None => Err(SitemapError::NotASitemap),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_urlset_and_an_index_are_read_entities_and_all() {
        let urlset = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://a.example/one?x=1&amp;y=2</loc><lastmod>2026-01-01</lastmod></url>
  <url><loc> https://a.example/two </loc></url>
  <url><loc>javascript:alert(1)</loc></url>
  <url><loc><![CDATA[https://a.example/three]]></loc></url>
</urlset>"#;
        assert_eq!(
            parse_sitemap(urlset.as_bytes()).unwrap(),
            Sitemap::Urls(vec![
                "https://a.example/one?x=1&y=2".into(),
                "https://a.example/two".into(),
                "https://a.example/three".into(),
            ])
        );
        let index = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://a.example/s1.xml.gz</loc></sitemap></sitemapindex>"#;
        assert_eq!(
            parse_sitemap(index.as_bytes()).unwrap(),
            Sitemap::Index(vec!["https://a.example/s1.xml.gz".into()])
        );
        assert_eq!(
            parse_sitemap(b"<html><body>no</body></html>"),
            Err(SitemapError::NotASitemap)
        );
    }

    #[test]
    fn gzip_is_inflated_and_text_sitemaps_are_read() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"<urlset><url><loc>https://a.example/z</loc></url></urlset>")
            .unwrap();
        let body = gz.finish().unwrap();
        assert_eq!(
            parse_sitemap(&body).unwrap(),
            Sitemap::Urls(vec!["https://a.example/z".into()])
        );
        assert_eq!(
            parse_sitemap(b"https://a.example/a\nnot a url\nhttps://a.example/b\n").unwrap(),
            Sitemap::Urls(vec![
                "https://a.example/a".into(),
                "https://a.example/b".into()
            ])
        );
        assert_eq!(
            parse_sitemap(&[0x1f, 0x8b, 1, 2, 3]),
            Err(SitemapError::Gzip)
        );
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1024 * 1024];
        for _ in 0..60 {
            gz.write_all(&zeros).unwrap();
        }
        let body = gz.finish().unwrap();
        assert!(body.len() < 200_000);
        assert_eq!(parse_sitemap(&body), Err(SitemapError::Gzip));
    }

    #[test]
    fn robots_rules_sitemaps_and_delay_for_our_agent() {
        let robots = Robots::parse(
            "searxng-gateway",
            b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: https://a.example/sitemap_index.xml\n",
        );
        assert!(robots.allows("https://a.example/docs"));
        assert!(!robots.allows("https://a.example/private/x"));
        assert_eq!(robots.sitemaps(), ["https://a.example/sitemap_index.xml"]);
        assert_eq!(robots.crawl_delay(), Some(2.0));
        assert!(Robots::none().allows("https://a.example/private"));
    }
}
