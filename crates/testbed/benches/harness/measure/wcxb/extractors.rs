//! The extractors the WCXB row scores, behind one call: the gateway's reader — the code a direct
//! read runs (`searxng_gateway::bench::read_document_as`), plain text, with its metadata — and the candidates of issue #40,
//! each with its own defaults and the page's URL, its plain-text output (`content_text`):
//! `rs-trafilatura` (the benchmark's best published extractor; it decodes the bytes itself) and
//! `trafilatura` (a port of go-trafilatura; given the bytes as UTF-8, which every page of the
//! split is). A candidate's panic is caught and counted as a page it did not read.
//!
//! The candidates are built only with the testbed's `candidates` feature (the full run: `cargo
//! harness --features candidates`, as BENCHMARKS.md says): CI's smoke and the tests score the
//! gateway's reader alone and never compile them.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::metadata::Declared;

/// The content type every page is served and read with (every page of the split is UTF-8).
pub(super) const CONTENT_TYPE: &str = "text/html; charset=utf-8";

/// Who reads the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extractor {
    /// The gateway's reader, in-process.
    Gateway,
    /// The `rs-trafilatura` crate.
    #[cfg(feature = "candidates")]
    RsTrafilatura,
    /// The `trafilatura` crate.
    #[cfg(feature = "candidates")]
    Trafilatura,
}

impl Extractor {
    /// Every extractor, the gateway's first.
    #[cfg(feature = "candidates")]
    pub(super) const ALL: &'static [Self] =
        &[Self::Gateway, Self::RsTrafilatura, Self::Trafilatura];
    /// Every extractor built: the gateway's alone without the `candidates` feature.
    #[cfg(not(feature = "candidates"))]
    pub(super) const ALL: &'static [Self] = &[Self::Gateway];

    /// The name in the report.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Gateway => "the gateway's reader",
            #[cfg(feature = "candidates")]
            Self::RsTrafilatura => "rs-trafilatura 0.2",
            #[cfg(feature = "candidates")]
            Self::Trafilatura => "trafilatura 0.6",
        }
    }

    /// The name of its predictions file.
    pub(super) fn file_stem(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            #[cfg(feature = "candidates")]
            Self::RsTrafilatura => "rs-trafilatura",
            #[cfg(feature = "candidates")]
            Self::Trafilatura => "trafilatura",
        }
    }

    /// The text of `html` (fetched from `url`), or why there is none; with the metadata the
    /// gateway's reader took from the page (`None` from the candidates and for a page not read).
    pub(super) fn read(self, html: &[u8], url: &str) -> (Result<String, String>, Option<Declared>) {
        let mut declared = None;
        let text = catch_unwind(AssertUnwindSafe(|| match self {
            Self::Gateway => {
                searxng_gateway::bench::read_document_as(html, CONTENT_TYPE, url, true)
                    .map(|document| {
                        declared = Some(Declared::of(&document));
                        document.content().to_owned()
                    })
                    .ok_or_else(|| "no readable text".to_owned())
            }
            #[cfg(feature = "candidates")]
            Self::RsTrafilatura => {
                let options = rs_trafilatura::Options {
                    url: Some(url.to_owned()),
                    ..rs_trafilatura::Options::default()
                };
                rs_trafilatura::extract_bytes_with_options(html, &options)
                    .map(|result| result.content_text)
                    .map_err(|err| err.to_string())
            }
            #[cfg(feature = "candidates")]
            Self::Trafilatura => {
                let mut options = trafilatura::Options::default();
                if let Ok(url) = url::Url::parse(url) {
                    options = options.with_url(url);
                }
                trafilatura::extract(&String::from_utf8_lossy(html), &options)
                    .map(|result| result.content_text)
                    .map_err(|err| err.to_string())
            }
        }))
        .unwrap_or_else(|_| Err("panicked".to_owned()));
        match text {
            Ok(text) if text.trim().is_empty() => (Err("no readable text".to_owned()), None),
            Ok(text) => (Ok(text), declared),
            Err(why) => (Err(why), None),
        }
    }
}
