//! The in-process benchmarks' door to the CPU work of the request path
//! (`crates/pipeline-bench/benches/pipeline.rs`, and the harness's extraction and passage rows): decoding
//! SearXNG's body and the providers' bodies, the merge and the rendering of the answer, a page's
//! extraction, and the passages of a read page that answer a query (Tavily's chunks), each through
//! the production code exactly as the
//! request path calls it, with no socket and no runtime. Public only with the `bench` feature,
//! which the testbed's and pipeline-bench's dev-dependencies enable (and the harness's build of the
//! binary it measures, so that both share one build of this crate); the Docker image and a plain
//! `cargo build` never do. The functions behind it stay crate-private, and the crates below have
//! no such feature.
//!
//! Every function returns `None` for a body the request path would refuse, so the benchmark can
//! check that it measures real answers.

use bytes::Bytes;
use reqwest::header::HeaderMap;

use gateway_engine::read::passages::{
    Merge, PassageOrder, PassageSelector, Selection, TAVILY_CHUNK_CHARS,
};
use gateway_engine::settings::TokenizerEncoding;
use gateway_upstreams::providers::{ProviderAnswer, ProviderKind};
use gateway_upstreams::reader::Document;

/// One premium provider's 200 body, as the provider sent it.
#[derive(Debug, Clone, Copy)]
pub struct PremiumBody<'a> {
    /// The provider's name as `FALLBACK_PROVIDERS` spells it (`brave`, `exa`, `jina`, `tavily`).
    pub provider: &'a str,
    /// The JSON body.
    pub body: &'a [u8],
}

/// SearXNG's `/search` body through the answer decoder: the number of results kept.
pub fn decode_searxng(body: &[u8]) -> Option<usize> {
    gateway_upstreams::searxng::parse_answer(body).map(|answer| answer.results.len())
}

/// The whole CPU part of a miss: SearXNG's body and each premium body decoded, the fan-out fed
/// with them as its calls' answers, merged, and the answer rendered to the bytes the cache keeps
/// and the client gets. `target` is `SUFFICIENT_MIN_RESULTS`.
/// SearXNG's body is `Bytes`, as the HTTP client hands it over (cloning it is not a copy).
pub fn miss_answer(
    query: &str,
    target: usize,
    searxng: Option<&Bytes>,
    premium: &[PremiumBody<'_>],
) -> Option<Bytes> {
    let searxng = match searxng {
        Some(body) => Some(gateway_upstreams::searxng::decode_answer(body.clone())?),
        None => None,
    };
    let mut answers = Vec::with_capacity(premium.len());
    for one in premium {
        answers.push(premium_answer(one)?);
    }
    let answer = gateway_engine::search::finish_answered(query, target, searxng, answers);
    answer.status.is_success().then(|| answer.json.clone())
}

/// A page's body (read from `url`, declared as `content_type`) through the reader's extraction,
/// as a direct read takes it: its text as Markdown (`text = false`) or plain text, `None` when the
/// read would fail.
pub fn read_page(body: &[u8], content_type: &str, url: &str, text: bool) -> Option<String> {
    read_document_as(body, content_type, url, text).map(|document| document.0.content)
}

/// A page as the reader read it, in Markdown (Tavily's extract's default format): what a query's
/// passages are chosen from.
pub struct ReadDocument(Document);

impl ReadDocument {
    /// Its readable text.
    pub fn content(&self) -> &str {
        &self.0.content
    }

    /// Its title, when it has one.
    pub fn title(&self) -> Option<&str> {
        self.0.title.as_deref()
    }

    /// Who it says wrote it.
    pub fn author(&self) -> Option<&str> {
        self.0.author.as_deref()
    }

    /// When it says it was published.
    pub fn published(&self) -> Option<&str> {
        self.0.published.as_deref()
    }

    /// The language it says it is in.
    pub fn language(&self) -> Option<&str> {
        self.0.language.as_deref()
    }

    /// The site it says it is part of.
    pub fn site_name(&self) -> Option<&str> {
        self.0.site_name.as_deref()
    }
}

/// A page's body (read from `url`, declared as `content_type`) read as Tavily's extract reads it
/// (Markdown), `None` when the read would fail.
pub fn read_document(body: &[u8], content_type: &str, url: &str) -> Option<ReadDocument> {
    read_document_as(body, content_type, url, false)
}

/// A page's body read as [`read_page`] reads it — plain text (`text`) or Markdown — with the
/// metadata the page declares.
pub fn read_document_as(
    body: &[u8],
    content_type: &str,
    url: &str,
    text: bool,
) -> Option<ReadDocument> {
    let format = if text {
        gateway_core::request::ReadFormat::Text
    } else {
        gateway_core::request::ReadFormat::Markdown
    };
    gateway_upstreams::reader::extract_body(body, Some(content_type), url, url, format)
        .ok()
        .map(ReadDocument)
}

/// Tavily's query-relevant chunks of a page's `content` (titled `title`), as its extract chooses
/// them: the `chunks` passages of at most 500 characters that best answer `query`, in page order.
pub fn tavily_chunks(
    content: &str,
    title: Option<&str>,
    query: &str,
    chunks: usize,
) -> Vec<String> {
    const SELECTOR: PassageSelector = PassageSelector::new(TokenizerEncoding::O200kBase);
    let selection = Selection {
        max_chars: TAVILY_CHUNK_CHARS,
        max_passages: Some(chunks),
        budget: None,
        order: PassageOrder::Page,
        relevant_only: false,
        merge: Merge::WithinMaxChars,
    };
    SELECTOR
        .select_text(content, title, query, &selection)
        .into_iter()
        .map(|chosen| chosen.text)
        .collect()
}

fn premium_answer(one: &PremiumBody<'_>) -> Option<(ProviderKind, ProviderAnswer)> {
    let kind = ProviderKind::from_name(one.provider)?;
    let answer = kind
        .adapter()
        .interpret(200, &HeaderMap::new(), one.body)
        .ok()?;
    Some((kind, answer))
}
