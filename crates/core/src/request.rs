//! The one validated search request, and which front door it came through. Every surface builds it
//! here: `/search` from SearXNG-style strings ([`SearchRequest::parse`]), the MCP tool and the
//! Tavily API from their typed JSON ([`SearchRequest::new`]); both go through the same checks, so
//! nothing below a surface ever sees an unvalidated value.

use std::fmt::Write as _;

mod domains;

pub use domains::{Domain, DomainFilter, Side};

/// The front door a search came through: SearXNG's API (`/search`, `/`), the MCP tool (HTTP or
/// stdio), or one of the APIs other tools speak — Tavily's, Firecrawl's, Perplexity's, Open
/// WebUI's external search. The `surface` label of `surface_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// `/search` and the root path.
    Searxng,
    /// The MCP tool `web_search`.
    Mcp,
    /// `POST /tavily/search`.
    Tavily,
    /// `POST /firecrawl/v1/search`, `/firecrawl/v2/search` (and `/v2/search`).
    Firecrawl,
    /// `POST /perplexity/search`.
    Perplexity,
    /// `POST /openwebui/search`.
    OpenWebui,
    /// `GET /retriever` (gpt-researcher's custom retriever).
    Retriever,
    /// `POST /serper/search`.
    Serper,
    /// `GET /s/<query>` (Jina's search).
    Jina,
    /// `POST /exa/search`.
    Exa,
}

impl Surface {
    /// Every surface.
    pub const ALL: [Surface; 10] = [
        Self::Searxng,
        Self::Mcp,
        Self::Tavily,
        Self::Firecrawl,
        Self::Perplexity,
        Self::OpenWebui,
        Self::Retriever,
        Self::Serper,
        Self::Jina,
        Self::Exa,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Mcp => "mcp",
            Self::Tavily => "tavily",
            Self::Firecrawl => "firecrawl",
            Self::Perplexity => "perplexity",
            Self::OpenWebui => "openwebui",
            Self::Retriever => "retriever",
            Self::Serper => "serper",
            Self::Jina => "jina",
            Self::Exa => "exa",
        }
    }
}

/// Output formats the gateway can render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// SearXNG's JSON object (the default).
    #[default]
    Json,
    /// Comma-separated values rendered from the merged results.
    Csv,
    /// RSS 2.0 rendered from the merged results.
    Rss,
}

impl Format {
    fn parse(raw: &str) -> Result<Self, RequestError> {
        match raw {
            "" | "json" => Ok(Self::Json),
            "csv" => Ok(Self::Csv),
            "rss" => Ok(Self::Rss),
            _ => Err(RequestError::UnsupportedFormat),
        }
    }
}

/// What a page is read into: Markdown (headings, links, lists kept), plain text, the article's
/// HTML (the main content, cleaned), or the page's HTML as it came (for Firecrawl's `html` and
/// `rawHtml`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ReadFormat {
    /// Markdown (the default, as Tavily's).
    #[default]
    Markdown,
    /// Plain text.
    Text,
    /// The article's HTML: the main content as the extractor kept it.
    Html,
    /// The page's HTML as it came (decoded to UTF-8), nothing taken out.
    RawHtml,
}

impl ReadFormat {
    /// Every format.
    pub const ALL: [ReadFormat; 4] = [Self::Markdown, Self::Text, Self::Html, Self::RawHtml];

    /// The name (`markdown`, `text`, `html`, `raw_html`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Markdown => "markdown",
            Self::Text => "text",
            Self::Html => "html",
            Self::RawHtml => "raw_html",
        }
    }

    /// Whether its content is markup (words are counted outside the tags).
    pub fn is_html(self) -> bool {
        matches!(self, Self::Html | Self::RawHtml)
    }
}

/// SearXNG's `time_range` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeRange {
    /// Last 24 hours.
    Day,
    /// Last 7 days.
    Week,
    /// Last month.
    Month,
    /// Last year.
    Year,
}

impl TimeRange {
    /// Every range, shortest first.
    pub(crate) const ALL: [TimeRange; 4] = [Self::Day, Self::Week, Self::Month, Self::Year];

    /// From the SearXNG spelling.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|range| range.as_str() == raw)
    }

    /// The shortest range reaching back at least `days` days (a year at most).
    pub fn covering_days(days: u32) -> Self {
        Self::ALL
            .into_iter()
            .find(|range| range.days() >= days)
            .unwrap_or(Self::Year)
    }

    /// The SearXNG spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }

    /// How far back the range reaches, in days (for providers that take a start date).
    pub fn days(self) -> u32 {
        match self {
            Self::Day => 1,
            Self::Week => 7,
            Self::Month => 31,
            Self::Year => 365,
        }
    }
}

/// SearXNG's `safesearch` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SafeSearch {
    /// 0: no filtering.
    Off,
    /// 1: moderate.
    Moderate,
    /// 2: strict.
    Strict,
}

impl SafeSearch {
    /// From the level 0, 1 or 2.
    pub fn from_level(level: u64) -> Option<Self> {
        match level {
            0 => Some(Self::Off),
            1 => Some(Self::Moderate),
            2 => Some(Self::Strict),
            _ => None,
        }
    }

    /// The SearXNG wire value (0, 1, 2).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "0",
            Self::Moderate => "1",
            Self::Strict => "2",
        }
    }
}

/// Why a request was refused at the edge. Each variant becomes a 400 with a stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// `q` absent, empty or whitespace only.
    #[error("parameter q is required and must not be blank")]
    MissingQuery,
    /// `q` longer than `MAX_QUERY_BYTES`.
    #[error("parameter q is longer than {max} bytes")]
    QueryTooLong {
        /// The configured limit.
        max: usize,
    },
    /// `format` other than json, csv or rss.
    #[error("parameter format must be one of: json, csv, rss")]
    UnsupportedFormat,
    /// A parameter with a value outside its domain.
    #[error("parameter {name} has an invalid value (expected {expected})")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// What would have been accepted.
        expected: &'static str,
    },
}

impl RequestError {
    const INVALID_PAGENO: Self = Self::InvalidParameter {
        name: "pageno",
        expected: "an integer from 1 to 1000",
    };
    const INVALID_TIME_RANGE: Self = Self::InvalidParameter {
        name: "time_range",
        expected: "day, week, month or year",
    };
    const INVALID_SAFESEARCH: Self = Self::InvalidParameter {
        name: "safesearch",
        expected: "0, 1 or 2",
    };

    /// The message, calling the query `query_name`: `q` on `/search`, `query` in the JSON
    /// surfaces.
    pub fn message_naming_query(&self, query_name: &str) -> String {
        match self {
            Self::MissingQuery => format!("{query_name} is required and must not be blank"),
            Self::QueryTooLong { max } => format!("{query_name} is longer than {max} bytes"),
            other => other.to_string(),
        }
    }

    /// The stable machine-readable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingQuery => "missing_query",
            Self::QueryTooLong { .. } => "query_too_long",
            Self::UnsupportedFormat => "unsupported_format",
            Self::InvalidParameter { .. } => "invalid_parameter",
        }
    }
}

/// A validated search request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchRequest {
    /// The query exactly as the client sent it, trimmed (case kept: upstreams see this).
    pub query: String,
    /// Requested output format.
    pub format: Format,
    /// Result page, 1-based.
    pub pageno: u32,
    /// SearXNG categories requested by the client (empty: SearXNG's default).
    pub categories: Vec<String>,
    /// SearXNG engines requested by the client (empty: SearXNG's default).
    pub engines: Vec<String>,
    /// Language code (`en`, `de-DE`, `all`…), if given.
    pub language: Option<String>,
    /// Time range, if given.
    pub time_range: Option<TimeRange>,
    /// Safe-search level, if given.
    pub safesearch: Option<SafeSearch>,
    /// The domains results must (not) come from.
    pub domains: DomainFilter,
}

/// A search as a surface with typed input states it, before validation: the query as the client
/// sent it and the SearXNG parameters it asked for. [`SearchRequest::new`] checks it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SearchInput {
    /// The query, untrimmed.
    pub query: String,
    /// Requested output format.
    pub format: Format,
    /// Result page, 1-based (`None`: the first).
    pub pageno: Option<u32>,
    /// SearXNG categories.
    pub categories: Vec<String>,
    /// SearXNG engines.
    pub engines: Vec<String>,
    /// Language code.
    pub language: Option<String>,
    /// Time range.
    pub time_range: Option<TimeRange>,
    /// Safe-search level.
    pub safesearch: Option<SafeSearch>,
    /// Domain filter (built and checked by the surface, which knows its field names).
    pub domains: DomainFilter,
}

/// Raw parameters as they arrive in a query string or form body. Anything else is dropped here —
/// notably `api_key` (an inbound key, checked by the server before parsing): it is never forwarded,
/// never part of the cache key, never logged.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct RawParams {
    /// `q`
    pub(crate) q: Option<String>,
    /// `format`
    pub(crate) format: Option<String>,
    /// `pageno`
    pub(crate) pageno: Option<String>,
    /// `categories`
    pub(crate) categories: Option<String>,
    /// `engines`
    pub(crate) engines: Option<String>,
    /// `language`
    pub(crate) language: Option<String>,
    /// `time_range`
    pub(crate) time_range: Option<String>,
    /// `safesearch`
    pub(crate) safesearch: Option<String>,
    /// `explain` (the gateway's own: read by the server, never forwarded nor in the cache key)
    pub explain: Option<String>,
}

fn non_blank(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The items of a SearXNG comma list (`general, news`), blanks dropped.
fn comma_items(value: Option<String>) -> Vec<String> {
    non_blank(value)
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Names (categories, engines), trimmed, blanks and repeats dropped, each a plain name.
fn names(items: Vec<String>, name: &'static str) -> Result<Vec<String>, RequestError> {
    let mut valid = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let plain = item.len() <= 64
            && item
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.'));
        if !plain {
            return Err(RequestError::InvalidParameter {
                name,
                expected: "a comma list of names",
            });
        }
        if !valid.iter().any(|v: &String| v == item) {
            valid.push(item.to_owned());
        }
    }
    Ok(valid)
}

impl SearchRequest {
    /// Validates raw SearXNG-style parameters into a request. `max_query_bytes` is
    /// `MAX_QUERY_BYTES`.
    pub fn parse(raw: RawParams, max_query_bytes: usize) -> Result<Self, RequestError> {
        let query = raw.q.unwrap_or_default();
        if query.trim().is_empty() {
            return Err(RequestError::MissingQuery);
        }
        let format = Format::parse(raw.format.as_deref().map(str::trim).unwrap_or(""))?;
        let pageno = match non_blank(raw.pageno) {
            None => None,
            Some(p) => Some(p.parse::<u32>().map_err(|_| RequestError::INVALID_PAGENO)?),
        };
        let time_range = match non_blank(raw.time_range) {
            None => None,
            Some(t) => Some(TimeRange::parse(&t).ok_or(RequestError::INVALID_TIME_RANGE)?),
        };
        let safesearch = match non_blank(raw.safesearch) {
            None => None,
            Some(s) => Some(
                s.parse()
                    .ok()
                    .and_then(SafeSearch::from_level)
                    .ok_or(RequestError::INVALID_SAFESEARCH)?,
            ),
        };
        Self::new(
            SearchInput {
                query,
                format,
                pageno,
                categories: comma_items(raw.categories),
                engines: comma_items(raw.engines),
                language: raw.language,
                time_range,
                safesearch,
                domains: DomainFilter::default(),
            },
            max_query_bytes,
        )
    }

    /// Validates a typed search into a request: the query must not be blank and is trimmed (its
    /// case kept), at most `max_query_bytes`; `pageno` from 1 to 1000; names and the language code
    /// plain. The one set of checks every surface goes through.
    pub fn new(input: SearchInput, max_query_bytes: usize) -> Result<Self, RequestError> {
        let query = input.query.trim();
        if query.is_empty() {
            return Err(RequestError::MissingQuery);
        }
        if query.len() > max_query_bytes {
            return Err(RequestError::QueryTooLong {
                max: max_query_bytes,
            });
        }
        let pageno = match input.pageno {
            None => 1,
            Some(p) if (1..=1000).contains(&p) => p,
            Some(_) => return Err(RequestError::INVALID_PAGENO),
        };
        let language = match non_blank(input.language) {
            None => None,
            Some(lang) => {
                let valid = lang.len() <= 16
                    && lang
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                if !valid {
                    return Err(RequestError::InvalidParameter {
                        name: "language",
                        expected: "a language code such as en, de-DE or all",
                    });
                }
                Some(lang)
            }
        };
        Ok(Self {
            query: query.to_owned(),
            format: input.format,
            pageno,
            categories: names(input.categories, "categories")?,
            engines: names(input.engines, "engines")?,
            language,
            time_range: input.time_range,
            safesearch: input.safesearch,
            domains: input.domains,
        })
    }

    /// A request for `query` with every other parameter at its default (tests, benchmarks, probes).
    pub fn simple(query: &str) -> Self {
        Self {
            query: query.to_owned(),
            format: Format::Json,
            pageno: 1,
            categories: Vec::new(),
            engines: Vec::new(),
            language: None,
            time_range: None,
            safesearch: None,
            domains: DomainFilter::default(),
        }
    }

    /// The query as an upstream that narrows results with a `site:` operator and takes no domain
    /// list (SearXNG, Brave) is sent it: with ` site:<domain>` when exactly one domain is
    /// included (several would need `OR`, which SearXNG's engines do not all take alike).
    pub fn query_with_site(&self) -> std::borrow::Cow<'_, str> {
        match self.domains.single_include() {
            Some(domain) => format!("{} site:{}", self.query, domain.as_str()).into(),
            None => self.query.as_str().into(),
        }
    }

    /// The key its answer is cached and shared under, for answers of `scope`.
    pub fn cache_key(&self, scope: AnswerScope) -> CacheKey {
        CacheKey::new(self, scope)
    }
}

/// Which answers a cached entry holds: the whole fan-out's, or SearXNG's alone — a client whose
/// premium budget is spent gets a fan-out of its own, so it never shares (and never spends or
/// worsens) one that makes premium calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnswerScope {
    /// SearXNG and the premium providers, as the pipeline decides.
    WithPremium,
    /// SearXNG and the cache only.
    SearxngOnly,
}

/// The key an answer is cached and shared under: the query lower-cased with whitespace collapsed,
/// every forwarded parameter, and the answer's [`AnswerScope`]. The output format is not part of
/// it: csv and rss are rendered from the same merged answer. Its text (what the shared tier
/// hashes into Redis keys) spells the fields apart with `\u{1f}`, which cannot appear in a
/// validated parameter; its parts are read back by structure ([`CacheKey::query`],
/// [`CacheKey::scope`]), never by parsing the text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    text: String,
    query_len: usize,
    scope: AnswerScope,
}

/// Ends the text of a [`AnswerScope::SearxngOnly`] key (so it never equals a full one's).
const SEARXNG_ONLY: &str = "\u{1f}searxng-only";

impl CacheKey {
    fn new(req: &SearchRequest, scope: AnswerScope) -> Self {
        let mut text = String::with_capacity(req.query.len() + 32);
        push_normalised(&mut text, &req.query);
        let query_len = text.len();
        text.push_str("\u{1f}p=");
        let _ = write!(text, "{}", req.pageno);
        text.push_str("\u{1f}c=");
        push_sorted(&mut text, &req.categories);
        text.push_str("\u{1f}e=");
        push_sorted(&mut text, &req.engines);
        text.push_str("\u{1f}l=");
        text.push_str(req.language.as_deref().unwrap_or(""));
        text.push_str("\u{1f}t=");
        text.push_str(req.time_range.map_or("", TimeRange::as_str));
        text.push_str("\u{1f}s=");
        text.push_str(req.safesearch.map_or("", SafeSearch::as_str));
        req.domains.push_key(&mut text);
        if scope == AnswerScope::SearxngOnly {
            text.push_str(SEARXNG_ONLY);
        }
        Self {
            text,
            query_len,
            scope,
        }
    }

    /// The normalised query.
    pub fn query(&self) -> &str {
        &self.text[..self.query_len]
    }

    /// Which answers it holds.
    pub fn scope(&self) -> AnswerScope {
        self.scope
    }

    /// Whether it is a key of `query` (as a client spells it), whatever its other parameters.
    pub fn is_of_query(&self, query: &str) -> bool {
        let mut normalised = String::with_capacity(query.len());
        push_normalised(&mut normalised, query);
        self.query() == normalised
    }

    /// The whole key as text (what the shared tier hashes).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// `list` sorted, comma-separated (a list's order does not select other results).
fn push_sorted(key: &mut String, list: &[String]) {
    let mut sorted: Vec<&str> = list.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    for (i, item) in sorted.into_iter().enumerate() {
        if i > 0 {
            key.push(',');
        }
        key.push_str(item);
    }
}

/// The query as the cache key starts: lower-cased, whitespace collapsed.
fn push_normalised(key: &mut String, query: &str) {
    for (i, word) in query.split_whitespace().enumerate() {
        if i > 0 {
            key.push(' ');
        }
        if word.is_ascii() {
            key.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            key.extend(word.chars().flat_map(char::to_lowercase));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn raw(q: &str) -> RawParams {
        RawParams {
            q: Some(q.to_owned()),
            ..RawParams::default()
        }
    }

    #[test]
    fn blank_or_missing_query_is_refused() {
        assert_eq!(
            SearchRequest::parse(raw("   \t"), 2048),
            Err(RequestError::MissingQuery)
        );
        assert_eq!(
            SearchRequest::parse(RawParams::default(), 2048),
            Err(RequestError::MissingQuery)
        );
    }

    #[test]
    fn query_is_trimmed_but_keeps_its_case() {
        let req = SearchRequest::parse(raw("  Rust Async  "), 2048).unwrap();
        assert_eq!(req.query, "Rust Async");
    }

    #[test]
    fn overlong_query_is_refused() {
        let long = "x".repeat(2049);
        assert_eq!(
            SearchRequest::parse(raw(&long), 2048),
            Err(RequestError::QueryTooLong { max: 2048 })
        );
        assert!(SearchRequest::parse(raw(&"x".repeat(2048)), 2048).is_ok());
    }

    #[test]
    fn unknown_format_is_refused_and_known_ones_parse() {
        let mut r = raw("a");
        r.format = Some("html".into());
        assert_eq!(
            SearchRequest::parse(r.clone(), 10),
            Err(RequestError::UnsupportedFormat)
        );
        for (f, want) in [
            ("json", Format::Json),
            ("csv", Format::Csv),
            ("rss", Format::Rss),
        ] {
            r.format = Some(f.into());
            assert_eq!(SearchRequest::parse(r.clone(), 10).unwrap().format, want);
        }
    }

    #[test]
    fn junk_parameters_are_refused_by_name() {
        type Setter = fn(&mut RawParams, &str);
        let cases: [(&str, Setter); 4] = [
            ("pageno", |r, v| r.pageno = Some(v.into())),
            ("safesearch", |r, v| r.safesearch = Some(v.into())),
            ("time_range", |r, v| r.time_range = Some(v.into())),
            ("language", |r, v| r.language = Some(v.into())),
        ];
        for (name, set) in cases {
            for junk in ["0x", "-1", "3", "fortnight", "en;drop", "0"] {
                let mut r = raw("a");
                set(&mut r, junk);
                if let Err(RequestError::InvalidParameter { name: got, .. }) =
                    SearchRequest::parse(r, 100)
                {
                    assert_eq!(got, name);
                }
            }
        }
        let mut r = raw("a");
        r.pageno = Some("0".into());
        assert!(matches!(
            SearchRequest::parse(r, 100),
            Err(RequestError::InvalidParameter { name: "pageno", .. })
        ));
        let mut r = raw("a");
        r.safesearch = Some("3".into());
        assert!(SearchRequest::parse(r, 100).is_err());
    }

    #[test]
    fn forwarded_parameters_parse() {
        let r = RawParams {
            q: Some("q".into()),
            pageno: Some("2".into()),
            categories: Some("general, news".into()),
            engines: Some("alpha,beta,alpha".into()),
            language: Some("de-DE".into()),
            time_range: Some("week".into()),
            safesearch: Some("2".into()),
            format: None,
            explain: None,
        };
        let req = SearchRequest::parse(r, 100).unwrap();
        assert_eq!(req.pageno, 2);
        assert_eq!(req.categories, ["general", "news"]);
        assert_eq!(req.engines, ["alpha", "beta"]);
        assert_eq!(req.language.as_deref(), Some("de-DE"));
        assert_eq!(req.time_range, Some(TimeRange::Week));
        assert_eq!(req.safesearch, Some(SafeSearch::Strict));
    }

    #[test]
    fn cache_key_normalises_the_query_only() {
        let a = SearchRequest::simple("Rust   ASYNC\tbook");
        let b = SearchRequest::simple("rust async book");
        assert_eq!(
            a.cache_key(AnswerScope::WithPremium),
            b.cache_key(AnswerScope::WithPremium)
        );
    }

    #[test]
    fn cache_key_includes_every_forwarded_parameter() {
        let base = SearchRequest::simple("rust");
        let variants: Vec<SearchRequest> = vec![
            SearchRequest {
                pageno: 2,
                ..base.clone()
            },
            SearchRequest {
                categories: vec!["news".into()],
                ..base.clone()
            },
            SearchRequest {
                engines: vec!["alpha".into()],
                ..base.clone()
            },
            SearchRequest {
                language: Some("de".into()),
                ..base.clone()
            },
            SearchRequest {
                time_range: Some(TimeRange::Day),
                ..base.clone()
            },
            SearchRequest {
                safesearch: Some(SafeSearch::Off),
                ..base.clone()
            },
        ];
        let mut keys: Vec<CacheKey> = variants
            .iter()
            .map(|v| v.cache_key(AnswerScope::WithPremium))
            .collect();
        keys.push(base.cache_key(AnswerScope::WithPremium));
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len());
    }

    #[test]
    fn cache_key_spells_every_field() {
        let req = SearchRequest {
            categories: vec!["news".into(), "it".into()],
            engines: vec!["b".into(), "a".into()],
            language: Some("de".into()),
            time_range: Some(TimeRange::Day),
            pageno: 3,
            ..SearchRequest::simple("Grüße  AUS Köln")
        };
        let key = req.cache_key(AnswerScope::WithPremium);
        assert_eq!(
            key.as_str(),
            "grüße aus köln\u{1f}p=3\u{1f}c=it,news\u{1f}e=a,b\u{1f}l=de\u{1f}t=day\u{1f}s="
        );
        assert_eq!(key.query(), "grüße aus köln");
        assert!(!key.is_of_query("  GRÜSSE aus Köln "));
        assert!(key.is_of_query(" Grüße   aus KÖLN "));
        assert_eq!(key.scope(), AnswerScope::WithPremium);
    }

    #[test]
    fn a_searxng_only_answer_has_a_key_of_its_own_of_the_same_query() {
        let req = SearchRequest::simple("Rust");
        let full = req.cache_key(AnswerScope::WithPremium);
        let alone = req.cache_key(AnswerScope::SearxngOnly);
        assert_ne!(full, alone);
        assert_ne!(full.as_str(), alone.as_str());
        assert_eq!(alone.scope(), AnswerScope::SearxngOnly);
        assert!(alone.is_of_query("rust") && full.is_of_query("RUST"));
    }

    #[test]
    fn cache_key_ignores_list_order_and_format() {
        let a = SearchRequest {
            engines: vec!["a".into(), "b".into()],
            ..SearchRequest::simple("x")
        };
        let b = SearchRequest {
            engines: vec!["b".into(), "a".into()],
            format: Format::Csv,
            ..SearchRequest::simple("x")
        };
        assert_eq!(
            a.cache_key(AnswerScope::WithPremium),
            b.cache_key(AnswerScope::WithPremium)
        );
    }

    #[test]
    fn typed_input_goes_through_the_same_checks_as_parameters() {
        let input = |query: &str| SearchInput {
            query: query.to_owned(),
            ..SearchInput::default()
        };
        assert_eq!(
            SearchRequest::new(input(" \n"), 100),
            Err(RequestError::MissingQuery)
        );
        assert_eq!(
            SearchRequest::new(input(&"x".repeat(101)), 100),
            Err(RequestError::QueryTooLong { max: 100 })
        );
        for (field, bad) in [
            (
                "pageno",
                SearchInput {
                    pageno: Some(0),
                    ..input("a")
                },
            ),
            (
                "categories",
                SearchInput {
                    categories: vec!["news;drop".into()],
                    ..input("a")
                },
            ),
            (
                "language",
                SearchInput {
                    language: Some("en&x=1".into()),
                    ..input("a")
                },
            ),
        ] {
            assert!(
                matches!(
                    SearchRequest::new(bad, 100),
                    Err(RequestError::InvalidParameter { name, .. }) if name == field
                ),
                "{field}"
            );
        }
        let typed = SearchRequest::new(
            SearchInput {
                categories: vec![" news ".into(), "news".into(), "".into()],
                time_range: Some(TimeRange::Week),
                ..input("  Rust  ")
            },
            100,
        )
        .unwrap();
        assert_eq!(typed.query, "Rust");
        assert_eq!(typed.categories, ["news"]);
        assert_eq!(typed.pageno, 1);
        let mut raw = raw("Rust");
        raw.categories = Some("news".into());
        raw.time_range = Some("week".into());
        assert_eq!(SearchRequest::parse(raw, 100).unwrap(), typed);
    }

    #[test]
    fn a_number_of_days_maps_to_the_shortest_range_covering_it() {
        let ranges: Vec<TimeRange> = [0, 1, 2, 7, 8, 31, 32, 365, 10_000]
            .into_iter()
            .map(TimeRange::covering_days)
            .collect();
        use TimeRange::*;
        assert_eq!(
            ranges,
            [Day, Day, Week, Week, Month, Month, Year, Year, Year]
        );
    }

    #[test]
    fn refusals_name_the_query_as_the_surface_calls_it() {
        assert_eq!(
            RequestError::MissingQuery.message_naming_query("query"),
            "query is required and must not be blank"
        );
        assert_eq!(
            RequestError::QueryTooLong { max: 9 }.message_naming_query("q"),
            "q is longer than 9 bytes"
        );
        assert_eq!(
            RequestError::INVALID_SAFESEARCH.message_naming_query("query"),
            RequestError::INVALID_SAFESEARCH.to_string()
        );
    }
}

// Which door a search came through is a label of the search metrics.
crate::label_value_as_str!(Surface);
