//! Pages that are not articles — forum threads, product pages, category grids, listings, service
//! pages — read a second time, by `rs-trafilatura`, when Readability kept little of them.
//!
//! Readability (the first read, [`super::extract`]) looks for one block of prose. On a forum it
//! keeps the question and drops the answers (they sit in `.comment`-like blocks it takes for
//! chrome); on a product, a grid or a pricing page the text is in many short blocks and it keeps
//! one of them. `rs-trafilatura` classifies the page first (its URL, its structured data, a
//! random forest over the markup) and extracts with a profile per type: posts kept in sequence,
//! JSON-LD product descriptions, a grid's items. It is four to five times slower (p50 ≈ 21 ms
//! against ≈ 5 ms on WCXB's development split), so it runs only where the first read is thin: when
//! the article holds less than [`THIN`] of the words the page shows (its body without scripts,
//! styles and templates) on a page of at least [`MIN_PAGE_WORDS`]. Its text replaces the
//! article's unless it is less than half as long (a second read that lost the content).
//!
//! Measured on WCXB's development split (1,497 pages, word F1 as the benchmark scores; BENCHMARKS.md
//! k. has the run): Readability alone 0.788, rs-trafilatura alone 0.847 at four times the time,
//! this combination 0.855 with the second read on a third of the pages. Routing by
//! rs-trafilatura's own page type instead (every page read by both) scored 0.841; the share of the
//! page kept is the better signal and costs a walk over the parsed tree.
//!
//! Nothing here is bounded apart from the first read: the page was already cut to the parsed
//! part, checked for nesting, and counted in elements by the first read, and both reads run in
//! the same parse worker with the read's deadline ([`super::sandbox`]).

use dom_query::Document as Dom;
use url::Url;

use gateway_core::request::ReadFormat;

/// The first read is thin when it kept less than this share of the words the page shows.
pub(super) const THIN: f64 = 0.5;
/// Pages that show fewer words than this are not read twice (nothing much to lose).
pub(super) const MIN_PAGE_WORDS: usize = 50;

/// Elements whose text a reader never sees.
const UNSEEN: &[&str] = &["script", "style", "noscript", "template", "svg", "head"];

/// The words `dom`'s body shows: its text outside scripts, styles, templates and SVG.
pub(super) fn page_words(dom: &Dom) -> usize {
    let mut stack: Vec<_> = dom.select("body").nodes().to_vec();
    let mut count = 0;
    while let Some(node) = stack.pop() {
        if node.is_text() {
            count += node.text().split_whitespace().count();
        } else if node.is_element() {
            let unseen = node
                .node_name()
                .is_some_and(|name| UNSEEN.contains(&name.as_ref()));
            if !unseen {
                stack.extend(node.children_it(false));
            }
        }
    }
    count
}

/// Whether an article of `article_words` read from a page showing `page_words` is thin enough
/// to read the page a second time.
pub(super) fn thin(article_words: usize, page_words: usize) -> bool {
    page_words >= MIN_PAGE_WORDS && (article_words as f64) < THIN * page_words as f64
}

/// The second read: its content in `format` (rendered from its article's markup, made inert, by
/// the same Markdown writer as the first read's) and its plain text — `None` when it failed or
/// found no text.
pub(super) fn read(html: &str, url: &Url, format: ReadFormat) -> Option<SecondRead> {
    let markup = matches!(format, ReadFormat::Markdown | ReadFormat::Html);
    let options = rs_trafilatura::Options {
        url: Some(url.as_str().to_owned()),
        // The markup keeps the content's links and images, as the first read's does.
        include_links: markup,
        include_images: markup,
        ..rs_trafilatura::Options::default()
    };
    let result = rs_trafilatura::extract_with_options(html, &options).ok()?;
    if result.content_text.trim().is_empty() {
        return None;
    }
    let content = if markup {
        let article = super::inert::fragment(&result.content_html?);
        let root = article.html_root();
        match format {
            ReadFormat::Markdown => root.md(None).to_string(),
            _ => root.inner_html().to_string(),
        }
    } else {
        result.content_text.clone()
    };
    Some(SecondRead {
        content,
        text: result.content_text,
    })
}

/// What the second read kept.
pub(super) struct SecondRead {
    /// In the format asked for.
    pub(super) content: String,
    /// As plain text (what its words are counted on).
    pub(super) text: String,
}

/// Whether the second read (of `second` words) is kept over the first (of `first`).
pub(super) fn keeps_second(first: usize, second: usize) -> bool {
    second * 2 > first
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::reader::wall::corpus::word_f1;

    /// WCXB development pages of each kind Readability reads thin (its article scored F1 0.00 to
    /// 0.16 on each): a Stack Exchange thread, a product, a category grid, a listing and a
    /// service page. The reader reads each nearly whole.
    #[test]
    fn wcxb_pages_readability_reads_thin_are_read_whole() {
        for id in ["0531", "4024", "4021", "2911", "2844"] {
            let Some(page) = crate::reader::wall::corpus::wcxb_html(id) else {
                return;
            };
            let (url, main) = crate::reader::wall::corpus::wcxb_truth(id);
            let url = Url::parse(&url).unwrap();
            let first = dom_smoothie::Readability::new(page.as_ref(), Some(url.as_str()), None)
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                word_f1(&first.text_content, &main) < 0.5,
                "{id}: Readability alone reads it now"
            );
            let read = crate::reader::extract::html(&page, &url, ReadFormat::Text).unwrap();
            let f1 = word_f1(&read.content, &main);
            assert!(f1 >= 0.8, "{id}: F1 {f1:.2}: {}", read.content);
        }
    }

    #[test]
    fn the_words_a_page_shows_leave_out_scripts_styles_and_templates() {
        let dom = Dom::from(
            "<html><head><title>t w o</title></head><body><p>one two <b>three</b></p><script>var a = 'x y z';</script>\
             <style>p { color: red }</style><template><p>hidden words here</p></template><noscript>n s</noscript><svg><text>s v g</text></svg>four</body></html>",
        );
        assert_eq!(page_words(&dom), 4);
    }

    #[test]
    fn a_read_is_thin_below_half_the_page_and_only_on_pages_with_words() {
        assert!(thin(40, 100));
        assert!(!thin(50, 100));
        assert!(!thin(10, MIN_PAGE_WORDS - 1));
        assert!(keeps_second(100, 51));
        assert!(!keeps_second(100, 50));
    }
}
