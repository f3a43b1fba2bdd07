//! A page's readable text: HTML → the readable article (Mozilla Readability's algorithm, through
//! `dom_smoothie`) → Markdown or plain text (its own renderers, `dom_query`'s), with the title,
//! language, published date and images the page declares. Every other kind the reader takes is
//! text already (plain, Markdown, JSON, XML) and is passed on as it is; PDF is [`super::pdf`]'s.
//!
//! Glue only. The extractor was chosen by measurement on the 130 pages of
//! `shared/corpus/readability` (each with the article a careful reader keeps), against
//! readabilityrs, libreadability, legible, lectito, readability-rust, the `readability` and
//! `readability-rs` ports, llm_readability, trafilatura, rs-trafilatura and readability.js under
//! QuickJS: word-level F1 of the article's text against the expected article, and time per page
//! on one core. dom_smoothie scored a mean F1 of 1.000 (median 1.000, every page ≥ 0.9, no
//! failure) at 6.6 ms p50 per page (2.8 ms of CPU), 4.4 ms per 100 kB, and was the only fast
//! candidate that also read every metadata field the corpus records (title 127/127, language
//! 73/73, published date 33/33); its Markdown renderer kept the F1 at 0.999 and was the fastest
//! converter measured (2.6 ms p50; htmd, html2md, fast_html2md and mdka measured beside it).
//! BENCHMARKS.md (k.) has the harness's own run of the chosen path.
//!
//! A page Readability finds no article in (a short page, a list) is read whole: its body's text.
//!
//! Bad pages are bounded before they are parsed. The measurement also fed every candidate
//! pathological markup: deep nesting makes HTML parsers recurse (10 000 nested elements overflow a
//! thread's stack in most crates; 100 000 take html5ever itself 43 s), and an unclosed soup of
//! `<p><table><tr><td><ul><li><a>` makes Readability's passes grow with the cube of the size. So a
//! page whose markup nests deeper than [`MAX_NESTING`] (counted by a linear scan of its tags, end
//! tags a page may omit and void elements left out, which is what such soups are made of) is not
//! parsed at all; only its first [`MAX_HTML_BYTES`] are parsed; the number of elements is bounded
//! ([`MAX_ELEMENTS`]); and a panic in the parser is caught, never the process.

use dom_query::Document as Dom;
use dom_smoothie::{Config, Readability, TextMode};
use url::Url;

use gateway_core::request::ReadFormat;

/// Elements parsed at most (a generated page of millions of nodes is refused, not parsed for
/// seconds).
const MAX_ELEMENTS: usize = 200_000;
/// Markup nested deeper than this is not parsed (real pages stay well under a hundred).
pub(crate) const MAX_NESTING: usize = 400;
/// HTML parsed at most (the article of any real page starts well before it).
const MAX_HTML_BYTES: usize = 2 * 1024 * 1024;
/// Images listed at most per page.
const MAX_IMAGES: usize = 50;
/// Links listed at most per page.
const MAX_LINKS: usize = 1000;

/// What extraction keeps of a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Extracted {
    pub(crate) title: Option<String>,
    pub(crate) content: String,
    pub(crate) published: Option<String>,
    pub(crate) language: Option<String>,
    pub(crate) author: Option<String>,
    pub(crate) site_name: Option<String>,
    pub(crate) images: Vec<String>,
    /// The links of the content kept (absolute http and https URLs, each once).
    pub(crate) links: Vec<String>,
    /// Words of its text (markup not counted, whatever the format), before what the page's
    /// structured data declares is added to it (`structured`).
    pub(crate) words: usize,
}

/// Fewer words than this and a page may hold its text where the article pass did not look.
pub(crate) const FEW_WORDS: usize = 20;

/// `html` with its `<noscript>` elements turned into `<div>`s — what a browser without scripts
/// shows — or `None` when it has none.
pub(crate) fn with_noscript_shown(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    if !lower.contains("<noscript") {
        return None;
    }
    // Same length, same boundaries: the ASCII-lower-cased copy indexes the original.
    let mut shown = String::with_capacity(html.len());
    let mut at = 0;
    for (start, _) in lower.match_indices("noscript") {
        let opens = lower[..start].ends_with('<');
        let closes = lower[..start].ends_with("</");
        let tag_name_ends = lower[start + 8..]
            .chars()
            .next()
            .is_some_and(|c| c == '>' || c == '/' || c.is_ascii_whitespace());
        if (opens || closes) && tag_name_ends {
            shown.push_str(&html[at..start]);
            shown.push_str("div");
            at = start + 8;
        }
    }
    shown.push_str(&html[at..]);
    Some(shown)
}

/// The first [`MAX_HTML_BYTES`] of `html`, cut at a character boundary: all that is parsed.
fn parsed_part(html: &str) -> &str {
    let mut end = html.len().min(MAX_HTML_BYTES);
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    &html[..end]
}

/// Whether the part of `html` that would be parsed nests deeper than [`MAX_NESTING`]: such a page
/// is refused unparsed (`too_complex`).
pub(crate) fn too_deep(html: &str) -> bool {
    nesting_depth(parsed_part(html), MAX_NESTING) > MAX_NESTING
}

/// The readable article of `html` (read from `url`), as `format`. `None` when the page could not
/// be parsed at all (or nests too deep to be parsed: see [`too_deep`]).
pub(crate) fn html(html: &str, url: &Url, format: ReadFormat) -> Option<Extracted> {
    let html = parsed_part(html);
    if nesting_depth(html, MAX_NESTING) > MAX_NESTING {
        return None;
    }
    std::panic::catch_unwind(|| article(html, url, format))
        .ok()
        .flatten()
}

/// Elements that never have content ([void elements]), and elements whose end tag a page may
/// leave out and which the parser closes by itself when a sibling starts: neither deepens the tree
/// the way a scan of tags can see.
///
/// [void elements]: https://html.spec.whatwg.org/multipage/syntax.html#void-elements
const FLAT: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "frame", "basefont", "bgsound", "image", "p", "li", "dt", "dd", "td",
    "th", "tr", "thead", "tbody", "tfoot", "option", "optgroup", "colgroup", "caption", "rb", "rp",
    "rt", "rtc", "html", "head", "body",
];

/// Elements whose text is raw: no tag inside them is one.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// Elements an end tag does not close past (the parser's "in scope" boundaries): an end tag whose
/// element is below one of these is ignored.
const SCOPE: &[&str] = &[
    "table", "template", "applet", "object", "marquee", "svg", "math",
];

/// The roots of foreign content (SVG, MathML), where `/>` closes an element.
const FOREIGN: &[&str] = &["svg", "math"];

/// Elements a parser never nests in themselves: a second start tag closes the first.
const NOT_IN_ITSELF: &[&str] = &["a", "button", "nobr", "form"];

fn is_one_of(list: &[&str], name: &[u8]) -> bool {
    list.iter()
        .any(|item| item.as_bytes().eq_ignore_ascii_case(name))
}

/// How deep `html`'s elements nest as an HTML parser builds them, counted by one pass over its
/// tags with the stack of open elements a parser keeps, stopping once past `limit`:
///
/// - a start tag opens an element unless it is void or one whose end tag may be omitted
///   ([`FLAT`]); `<div/>` opens a `div` like `<div>` (an HTML parser ignores the slash outside
///   SVG and MathML, where it does close the element);
/// - an end tag closes its element and every element opened after it — only when that element
///   is open and no scope boundary ([`SCOPE`]) lies between; any other end tag is ignored, as a
///   parser ignores it;
/// - comments, the doctype and the raw text of `script`, `style` and the like are skipped.
///
/// Linear in the length of `html` (an end tag looks at most `limit` open elements back).
pub(crate) fn nesting_depth(html: &str, limit: usize) -> usize {
    let bytes = html.as_bytes();
    // Open elements, as ranges of `bytes` holding their names.
    let mut open: Vec<std::ops::Range<usize>> = Vec::new();
    let mut foreign = 0usize;
    let (mut deepest, mut at) = (0usize, 0usize);
    while let Some(offset) = memchr::memchr(b'<', &bytes[at..]) {
        at += offset + 1;
        let rest = &bytes[at..];
        if rest.starts_with(b"!--") {
            at += memchr::memmem::find(rest, b"-->").map_or(rest.len(), |end| end + 3);
            continue;
        }
        let closing = rest.first() == Some(&b'/');
        let name_start = usize::from(closing);
        let name_len = rest[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-' || **b == b':')
            .count();
        if name_len == 0 || !rest[name_start].is_ascii_alphabetic() {
            continue;
        }
        let name_at = at + name_start;
        let name = name_at..name_at + name_len;
        let tag_end = memchr::memchr(b'>', rest).unwrap_or(rest.len());
        let self_closing = tag_end > 0 && rest[tag_end - 1] == b'/';
        at += tag_end;
        let name_bytes = &bytes[name.clone()];
        if foreign == 0 && is_one_of(FLAT, name_bytes) {
            continue;
        }
        if closing {
            let found = open.iter().rposition(|element| {
                let element = &bytes[element.clone()];
                element.eq_ignore_ascii_case(name_bytes) || is_one_of(SCOPE, element)
            });
            if let Some(index) = found {
                if bytes[open[index].clone()].eq_ignore_ascii_case(name_bytes) {
                    open.truncate(index);
                    foreign = open
                        .iter()
                        .filter(|e| is_one_of(FOREIGN, &bytes[(*e).clone()]))
                        .count();
                }
            }
            continue;
        }
        if foreign == 0 && is_one_of(RAW_TEXT, name_bytes) {
            at += raw_text_end(&bytes[at.min(bytes.len())..], name_bytes);
            continue;
        }
        if foreign > 0 && self_closing {
            continue;
        }
        if foreign == 0 && is_one_of(NOT_IN_ITSELF, name_bytes) {
            let again = open.iter().rposition(|element| {
                let element = &bytes[element.clone()];
                element.eq_ignore_ascii_case(name_bytes) || is_one_of(SCOPE, element)
            });
            if let Some(index) = again {
                if bytes[open[index].clone()].eq_ignore_ascii_case(name_bytes) {
                    open.truncate(index);
                }
            }
        }
        if is_one_of(FOREIGN, name_bytes) {
            foreign += 1;
        }
        open.push(name);
        deepest = deepest.max(open.len());
        if deepest > limit {
            return deepest;
        }
    }
    deepest
}

/// Where the raw text at the start of `rest` ends: its first `</name` (any case), or its end.
fn raw_text_end(rest: &[u8], name: &[u8]) -> usize {
    let mut from = 0;
    while let Some(found) = memchr::memmem::find(&rest[from..], b"</") {
        let tag = from + found + 2;
        if rest
            .get(tag..tag + name.len())
            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name))
        {
            return from + found;
        }
        from = tag;
    }
    rest.len()
}

fn article(html: &str, url: &Url, format: ReadFormat) -> Option<Extracted> {
    let config = Config {
        max_elements_to_parse: MAX_ELEMENTS,
        text_mode: match format {
            ReadFormat::Markdown => TextMode::Markdown,
            ReadFormat::Text | ReadFormat::Html | ReadFormat::RawHtml => TextMode::Formatted,
        },
        ..Config::default()
    };
    let mut readability = Readability::new(html, Some(url.as_str()), Some(config)).ok()?;
    // Nothing the page would run reaches either read's output (`inert`).
    super::inert::page(&readability.doc);
    // Its headings are not taken for its masthead (`headings`).
    super::headings::keep(&readability.doc);
    // The page's links, navigation included (a crawl follows them, Firecrawl's `links` lists
    // them): taken from the whole page before the article is cut out of it.
    let page_links = links(&readability.doc, url);
    let page_words = super::second_read::page_words(&readability.doc);
    let declared = super::declared::Declared::of(&readability.doc);
    match readability.parse() {
        Ok(article) => {
            let mut images = Absolute::new(url, MAX_IMAGES);
            if let Some(lead) = article.image.as_deref() {
                images.keep(lead);
            }
            let content = Dom::from(article.content.as_ref());
            for img in content.select("img").iter() {
                if let Some(src) = img.attr("src") {
                    images.keep(&src);
                }
            }
            let text = tidy(article.text_content.as_ref());
            let mut extracted = Extracted {
                title: non_empty(article.title.as_ref()),
                words: words(&text),
                content: match format {
                    ReadFormat::Html => article.content.to_string(),
                    _ => text,
                },
                published: article
                    .published_time
                    .as_deref()
                    .and_then(non_empty)
                    .or(declared.published),
                language: article.lang.as_deref().and_then(non_empty),
                author: article
                    .byline
                    .as_deref()
                    .and_then(non_empty)
                    .or(declared.author),
                site_name: article
                    .site_name
                    .as_deref()
                    .and_then(non_empty)
                    .or(declared.site_name),
                images: images.list,
                links: page_links,
            };
            if super::second_read::thin(extracted.words, page_words) {
                if let Some(second) = super::second_read::read(html, url, format) {
                    let second_words = words(&second.text);
                    if super::second_read::keeps_second(extracted.words, second_words) {
                        extracted.content = match format {
                            ReadFormat::Html => second.content,
                            _ => tidy(&second.content),
                        };
                        extracted.words = second_words;
                    }
                }
            }
            // What its structured data declares and neither read kept (`structured`).
            if let Some(completed) = declared.content.complete(&extracted.content, format) {
                extracted.content = completed;
            }
            Some(extracted)
        }
        Err(dom_smoothie::ReadabilityError::TooManyElements(..)) => None,
        Err(_) => {
            let mut page = whole(html, url, format);
            page.published = declared.published;
            page.author = declared.author;
            page.site_name = declared.site_name;
            if let Some(completed) = declared.content.complete(&page.content, format) {
                page.content = completed;
            }
            Some(page)
        }
    }
}

/// Absolute http(s) URLs resolved against a page, each once, up to a bound.
struct Absolute<'a> {
    base: &'a Url,
    max: usize,
    list: Vec<String>,
}

impl<'a> Absolute<'a> {
    fn new(base: &'a Url, max: usize) -> Self {
        Self {
            base,
            max,
            list: Vec::new(),
        }
    }

    fn keep(&mut self, href: &str) {
        if self.list.len() >= self.max {
            return;
        }
        if let Ok(abs) = self.base.join(href.trim()) {
            if matches!(abs.scheme(), "http" | "https") {
                let abs = String::from(abs);
                if !self.list.contains(&abs) {
                    self.list.push(abs);
                }
            }
        }
    }
}

/// The links in `dom`, absolute.
fn links(dom: &Dom, base: &Url) -> Vec<String> {
    let mut links = Absolute::new(base, MAX_LINKS);
    for a in dom.select("a[href]").iter() {
        if let Some(href) = a.attr("href") {
            links.keep(&href);
        }
    }
    links.list
}

/// A page without an article: its title and its body's text.
fn whole(html: &str, url: &Url, format: ReadFormat) -> Extracted {
    let dom = Dom::from(html);
    super::inert::page(&dom);
    let title = non_empty(dom.select("title").text().as_ref());
    let language = dom
        .select("html")
        .attr("lang")
        .as_deref()
        .and_then(non_empty);
    for noise in ["script", "style", "noscript", "template", "svg"] {
        dom.select(noise).remove();
    }
    let body = dom.select("body");
    let text = tidy(body.formatted_text().as_ref());
    let content = match (format, body.nodes().first()) {
        (ReadFormat::Markdown, Some(node)) => tidy(node.md(None).as_ref()),
        (ReadFormat::Markdown, None) => tidy(dom.md(None).as_ref()),
        (ReadFormat::Html, Some(_)) => body.inner_html().to_string(),
        (ReadFormat::Html, None) => dom.html().to_string(),
        (ReadFormat::Text | ReadFormat::RawHtml, _) => text.clone(),
    };
    Extracted {
        title,
        words: words(&text),
        content,
        published: None,
        language,
        author: None,
        site_name: None,
        images: Vec::new(),
        links: links(&dom, url),
    }
}

/// Plain text, Markdown, JSON or XML: the text itself.
pub(crate) fn passthrough(text: String) -> Extracted {
    let content = tidy(&text);
    Extracted {
        words: words(&content),
        content,
        ..Extracted::default()
    }
}

/// Words of `markup`'s text: what is outside its tags (how a read in an HTML format is judged
/// thin).
pub(crate) fn words_outside_tags(markup: &str) -> usize {
    let mut count = 0;
    let mut in_tag = false;
    let mut in_word = false;
    for c in markup.chars() {
        match c {
            '<' => {
                in_tag = true;
                in_word = false;
            }
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() => in_word = false,
            _ => {
                if !in_word {
                    count += 1;
                }
                in_word = true;
            }
        }
    }
    count
}

/// `text` as HTML: escaped, in a `<pre>` (a page that is no HTML asked for as HTML).
pub(crate) fn preformatted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str("<pre>");
    super::inert::escape_into(&mut out, text);
    out.push_str("</pre>");
    out
}

/// The number of words in `text` (what decides whether a page has readable text).
pub(crate) fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn non_empty(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// Line ends trimmed, at most one blank line in a row, no blank lines around the text.
pub(super) fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn url() -> Url {
        Url::parse("https://news.example/2026/story").unwrap()
    }

    const ARTICLE: &str = r#"<!DOCTYPE html><html lang="en"><head><title>A story | News</title>
        <meta property="article:published_time" content="2026-11-30T08:00:00Z">
        <meta property="og:image" content="/lead.jpg"></head>
        <body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
        <article><h1>A story</h1>
        <p>The first paragraph of a long enough article, with <a href="/more">a link</a> and words
        enough that Readability takes it for the content of the page and not for its chrome.</p>
        <p>A second paragraph goes on in the same way, so that the article has a body of text worth
        reading, and an image: <img src="/figure.png" alt="figure"></p>
        <p>A third paragraph closes the story with a few more sentences of plain and simple text,
        the kind of writing every news site has on every page.</p></article>
        <footer>Copyright and cookie notices</footer></body></html>"#;

    #[test]
    fn an_article_is_kept_without_its_chrome_with_its_metadata() {
        let md = html(ARTICLE, &url(), ReadFormat::Markdown).unwrap();
        assert!(md.content.contains("first paragraph"), "{}", md.content);
        assert!(md.content.contains("third paragraph"));
        assert!(!md.content.contains("Copyright"), "{}", md.content);
        assert!(
            md.content.contains("[a link](https://news.example/more)"),
            "{}",
            md.content
        );
        assert_eq!(md.language.as_deref(), Some("en"));
        assert_eq!(md.published.as_deref(), Some("2026-11-30T08:00:00Z"));
        assert!(md.title.as_deref().unwrap().starts_with("A story"));
        assert_eq!(
            md.images,
            [
                "https://news.example/lead.jpg",
                "https://news.example/figure.png"
            ]
        );
        let text = html(ARTICLE, &url(), ReadFormat::Text).unwrap();
        assert!(
            text.content.contains("a link and words"),
            "{}",
            text.content
        );
        assert!(!text.content.contains("]("));
    }

    #[test]
    fn what_the_page_would_run_is_in_neither_markdown_nor_html() {
        let para = "A paragraph of the article, long enough that Readability keeps it as content \
            and not as chrome, with plain words about the town library and its reading rooms.";
        let page = format!(
            r#"<html><head><title>Library</title></head><body><article><h1>Library</h1>
            <p>{para} <a href="javascript:void(0)"><img src="https://x.example/a.png" alt="A"></a></p>
            <p>{para} <a href="javascript:alert(1)">a](b</a> and <a href=" java&#x09;script:x()">c</a></p>
            <p onclick="x()">{para} <a href="https://x.example/more">more</a></p>
            <p>{para} <img data-src="javascript:alert(2)" alt="lazy"> <img class="lazy" data-original="javascript:alert(3)//.png"></p>
            <figure data-x="data:text/html,x.png"></figure><meta http-equiv="refresh" content="0;url=https://x.example/away">
            <template shadowrootmode="open"><img src=x onerror=alert(1)></template></article></body></html>"#
        );
        for format in [ReadFormat::Markdown, ReadFormat::Html] {
            let read = html(&page, &url(), format).unwrap().content;
            assert!(read.contains("reading rooms"), "{format:?}: {read}");
            assert!(
                read.contains("https://x.example/more"),
                "{format:?}: {read}"
            );
            assert!(
                read.contains("https://x.example/a.png"),
                "{format:?}: {read}"
            );
            for gone in ["javascript", "onclick", "onerror", "alert"] {
                assert!(
                    !read.to_lowercase().contains(gone),
                    "{format:?} carries {gone}: {read}"
                );
            }
        }
    }

    #[test]
    fn a_page_without_an_article_is_read_whole_and_garbage_never_panics() {
        let short = "<html><head><title>Tiny</title></head><body><p>Just one line.</p><script>x()</script></body></html>";
        let whole = html(short, &url(), ReadFormat::Text).unwrap();
        assert_eq!(whole.content, "Just one line.");
        assert_eq!(whole.title.as_deref(), Some("Tiny"));
        for garbage in [
            "",
            "<",
            "<<<>>>",
            "\u{0}\u{fffd}<p",
            &"<div>".repeat(20_000),
            &"<span>a".repeat(50_000),
            "<html><body><table><tr><td><table><tr><td>x",
        ] {
            let _ = html(garbage, &url(), ReadFormat::Markdown);
        }
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing_and_real_markup_is_not() {
        let deep = "<div>".repeat(MAX_NESTING + 1);
        assert_eq!(nesting_depth(&deep, MAX_NESTING), MAX_NESTING + 1);
        assert!(too_deep(&deep));
        assert!(html(&deep, &url(), ReadFormat::Text).is_none());
        let soup = "<p><table><tr><td><ul><li><a>x".repeat(200);
        assert!(nesting_depth(&soup, MAX_NESTING) > MAX_NESTING);
        assert!(html(&soup, &url(), ReadFormat::Text).is_none());
        // Omitted end tags, void elements, comments and script text do not deepen anything.
        let list = format!(
            "<ul>{}</ul><!-- <div><div> --><script>var s = '<div><div><div>';</script>",
            "<li><p>item<br><img src=x>".repeat(2000)
        );
        assert_eq!(nesting_depth(&list, MAX_NESTING), 1);
        assert_eq!(nesting_depth(ARTICLE, MAX_NESTING), 2);
    }

    #[test]
    fn a_self_closing_div_opens_a_div_as_a_parser_builds_it() {
        // 20 000 of them took Readability a minute of CPU; the old guard counted them as closed.
        let divs = format!("<body><p>words</p>{}</body>", "<div/>".repeat(20_000));
        assert!(too_deep(&divs));
        assert!(html(&divs, &url(), ReadFormat::Text).is_none());
        // In SVG and MathML the slash does close the element.
        let svg = format!("<svg>{}</svg>", "<path d='M0 0'/>".repeat(20_000));
        assert_eq!(nesting_depth(&svg, MAX_NESTING), 1);
        // Void elements with a slash are void as ever.
        assert_eq!(
            nesting_depth(&"<br/><img src=x />".repeat(5000), MAX_NESTING),
            0
        );
    }

    #[test]
    fn an_end_tag_closes_only_an_open_element_within_its_scope() {
        // An end tag whose element is not open lowers nothing.
        let stray = "<div></span>".repeat(MAX_NESTING + 1);
        assert!(too_deep(&stray));
        // An end tag closes its element and everything opened after it.
        assert_eq!(
            nesting_depth("<div><span><b>x</div><div>y</div>", MAX_NESTING),
            3
        );
        // It does not close past a table: the parser ignores such a `</div>`.
        let past_table = "<div><table></div>".repeat(MAX_NESTING);
        assert!(too_deep(&past_table));
        // A second `<a>` closes the first, as the parser does.
        assert_eq!(
            nesting_depth(&"<a href=x>link ".repeat(5000), MAX_NESTING),
            1
        );
    }

    #[test]
    fn no_page_of_the_corpora_is_refused_as_too_deep() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut pages = Vec::new();
        let readability = root.join("crates/testbed/corpus/readability/pages");
        for entry in std::fs::read_dir(&readability).unwrap() {
            let path = entry.unwrap().path().join("source.html");
            pages.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
        let wcxb = crate::reader::wall::corpus::corpus_root().join("wcxb-dev/dev/html");
        if let Ok(entries) = std::fs::read_dir(&wcxb) {
            for entry in entries {
                let path = entry.unwrap().path();
                let mut html = Vec::new();
                std::io::Read::read_to_end(
                    &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()),
                    &mut html,
                )
                .unwrap();
                pages.push((path.display().to_string(), html));
            }
        } else {
            eprintln!(
                "{} is not here: the Readability corpus only",
                wcxb.display()
            );
        }
        assert!(pages.len() >= 130, "{}", pages.len());
        let mut deepest = 0;
        for (name, bytes) in &pages {
            let text = String::from_utf8_lossy(bytes);
            let depth = nesting_depth(parsed_part(&text), MAX_NESTING);
            assert!(depth <= MAX_NESTING, "{name} nests {depth} deep");
            deepest = deepest.max(depth);
        }
        eprintln!("{} pages, the deepest nests {deepest}", pages.len());
    }

    #[test]
    fn noscript_elements_are_shown_as_a_browser_without_scripts_shows_them() {
        let page = "<html><body><NOSCRIPT class=x><p>Thread</p></NoScript><noscripts>no</noscripts></body></html>";
        assert_eq!(
            with_noscript_shown(page).unwrap(),
            "<html><body><div class=x><p>Thread</p></div><noscripts>no</noscripts></body></html>"
        );
        assert_eq!(with_noscript_shown("<p>none</p>"), None);
    }

    #[test]
    fn blank_lines_collapse() {
        assert_eq!(tidy("\n\n a \n\n\n\nb  \nc\n\n"), " a\n\nb\nc");
    }

    #[test]
    fn words_are_counted_on_whitespace() {
        assert_eq!(words(" one  two\nthree "), 3);
        assert_eq!(words(""), 0);
    }
}
