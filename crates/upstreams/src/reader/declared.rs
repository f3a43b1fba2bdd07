//! What a page declares about itself beyond what Readability reads: its publication date, author
//! and site name from JSON-LD wherever it stands (an `@graph`, an array, a nested object — what
//! WordPress's SEO plugins and most news sites write, and what `dom_smoothie` skips unless the
//! top-level object is an article), from the `<meta>` names it does not know (`datePublished`,
//! `date`, `pubdate`, …), and from the first `<time datetime>` of the page's main content.
//! Only fields the first read left empty are filled.
//!
//! Hand-written: the reading of JSON-LD is `serde_json`'s; what is here is which keys to take.
//! Measured against WCXB's ground truth (BENCHMARKS.md k., the metadata row).
//!
//! Bounded: at most [`MAX_SCRIPTS`] scripts of at most [`MAX_SCRIPT_BYTES`] each are parsed, and
//! the walk over their values is `structured`'s (bounded in depth and in values looked at).

use dom_query::Document as Dom;
use serde_json::Value;

/// JSON-LD scripts parsed at most per page.
const MAX_SCRIPTS: usize = 16;
/// A JSON-LD script longer than this is not parsed.
const MAX_SCRIPT_BYTES: usize = 256 * 1024;

/// `<meta>` names and properties that give a publication date (those `dom_smoothie` reads are
/// left to it).
const DATE_METAS: &[&str] = &[
    "datepublished",
    "date",
    "pubdate",
    "publishdate",
    "publish-date",
    "publish_date",
    "og:published_time",
    "article:published",
    "sailthru.date",
    "dc.date",
    "dc.date.issued",
    "citation_publication_date",
];

/// What the page declares, as raw text (taken before Readability changes the tree).
#[derive(Debug, Default)]
pub(super) struct Declared {
    pub(super) published: Option<String>,
    pub(super) author: Option<String>,
    pub(super) site_name: Option<String>,
    /// The main content its JSON-LD declares (`structured`).
    pub(super) content: super::structured::DeclaredText,
}

impl Declared {
    /// Reads `dom`.
    pub(super) fn of(dom: &Dom) -> Self {
        let mut found = JsonLd::default();
        let mut content = super::structured::DeclaredText::default();
        for script in dom
            .select(r#"script[type="application/ld+json" i]"#)
            .iter()
            .take(MAX_SCRIPTS)
        {
            let text = script.text();
            if text.len() > MAX_SCRIPT_BYTES {
                continue;
            }
            if let Ok(value) = serde_json::from_str::<Value>(text.trim()) {
                found.take(&value);
                content.take(&value);
            }
        }
        let mut declared = Self {
            published: found.article_date.or(found.other_date),
            author: found.article_author.or(found.other_author),
            site_name: found.site_name,
            content,
        };
        if declared.published.is_none() {
            declared.published = meta_date(dom);
        }
        if declared.published.is_none() {
            declared.published = [
                "article time[datetime]",
                "main time[datetime]",
                "time[datetime]",
            ]
            .iter()
            .find_map(|selector| {
                dom.select(selector)
                    .iter()
                    .find_map(|time| time.attr("datetime").as_deref().and_then(non_empty))
            });
        }
        declared
    }
}

/// What a page's JSON-LD scripts say, over all of them: an article-like object's date and author
/// win over any other object's, whichever script comes first.
#[derive(Default)]
struct JsonLd {
    article_date: Option<String>,
    article_author: Option<String>,
    other_date: Option<String>,
    other_author: Option<String>,
    site_name: Option<String>,
}

impl JsonLd {
    /// Takes from one script the date and author of the first article-like object (`…Article`,
    /// `…Posting`) and of the first other object with them, and the publisher's or the
    /// `WebSite`'s name. What a page says about other things — a product's reviews, comments,
    /// citations — is not looked into.
    fn take(&mut self, root: &Value) {
        super::structured::objects(root, ABOUT_OTHERS, |object| {
            let (date, author) = (
                object.get("datePublished").and_then(string),
                object.get("author").and_then(names),
            );
            if article_like(object.get("@type")) {
                self.article_date = self.article_date.take().or(date);
                self.article_author = self.article_author.take().or(author);
            } else {
                self.other_date = self.other_date.take().or(date);
                self.other_author = self.other_author.take().or(author);
            }
            if self.site_name.is_none() {
                self.site_name = site_name(object);
            }
            true
        });
    }
}

/// JSON-LD keys whose objects are about something else than the page.
const ABOUT_OTHERS: &[&str] = &[
    "review",
    "reviews",
    "comment",
    "citation",
    "mentions",
    "itemReviewed",
    "subjectOf",
];

/// Whether a JSON-LD `@type` (a string or a list) names an article or a post.
fn article_like(kind: Option<&Value>) -> bool {
    let like = |kind: &str| kind.ends_with("Article") || kind.ends_with("Posting");
    match kind {
        Some(Value::String(kind)) => like(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).any(like),
        _ => false,
    }
}

/// The publisher's name, or a `WebSite`'s own.
fn site_name(object: &serde_json::Map<String, Value>) -> Option<String> {
    object
        .get("publisher")
        .and_then(|publisher| publisher.get("name"))
        .and_then(string)
        .or_else(|| {
            let website = object.get("@type").and_then(Value::as_str) == Some("WebSite");
            website
                .then(|| object.get("name").and_then(string))
                .flatten()
        })
}

/// A date from a `<meta>` `name`, `property` or `itemprop` of [`DATE_METAS`].
fn meta_date(dom: &Dom) -> Option<String> {
    dom.select("meta[content]").iter().find_map(|meta| {
        let named = ["name", "property", "itemprop"].iter().any(|attr| {
            meta.attr(attr)
                .is_some_and(|name| DATE_METAS.contains(&name.to_ascii_lowercase().as_str()))
        });
        named
            .then(|| meta.attr("content").as_deref().and_then(non_empty))
            .flatten()
    })
}

/// A JSON string, trimmed, when not empty.
fn string(value: &Value) -> Option<String> {
    value.as_str().and_then(non_empty)
}

/// An author's name: a string, an object's `name`, or the names of a list, joined.
fn names(value: &Value) -> Option<String> {
    match value {
        Value::String(name) => non_empty(name),
        Value::Object(object) => object.get("name").and_then(string),
        Value::Array(items) => {
            let names: Vec<String> = items.iter().filter_map(names).take(10).collect();
            (!names.is_empty()).then(|| names.join(", "))
        }
        _ => None,
    }
}

fn non_empty(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_yoast_graph_gives_the_date_the_author_and_the_site() {
        let page = r#"<html><head><script type="application/ld+json">{"@context":"https://schema.org","@graph":[
            {"@type":"WebSite","name":"Garden Notes","url":"https://garden.example/"},
            {"@type":"Article","headline":"Tomatoes","datePublished":"2024-05-02T08:00:00+00:00",
             "author":[{"@type":"Person","name":"Ada Lovelace"},{"@type":"Person","name":"Grace Hopper"}]}]}</script>
            </head><body><p>Text</p></body></html>"#;
        let declared = Declared::of(&Dom::from(page));
        assert_eq!(
            declared.published.as_deref(),
            Some("2024-05-02T08:00:00+00:00")
        );
        assert_eq!(
            declared.author.as_deref(),
            Some("Ada Lovelace, Grace Hopper")
        );
        assert_eq!(declared.site_name.as_deref(), Some("Garden Notes"));
    }

    #[test]
    fn an_article_wins_over_a_page_and_reviews_are_not_the_pages() {
        // Rank Math writes the page's date on the WebPage and the author on the Article after it.
        let graph = r#"<html><head><script type="application/ld+json">{"@graph":[
            {"@type":"WebPage","datePublished":"2024-01-01"},
            {"@type":["Article","BlogPosting"],"datePublished":"2024-01-02","author":{"name":"Ada"}}]}</script></head><body></body></html>"#;
        let declared = Declared::of(&Dom::from(graph));
        assert_eq!(declared.published.as_deref(), Some("2024-01-02"));
        assert_eq!(declared.author.as_deref(), Some("Ada"));
        // The same across two scripts: the article's date, though the page's script comes first.
        let two = r#"<html><head><script type="application/ld+json">{"@type":"WebPage","datePublished":"2020-01-01"}</script>
            <script type="application/ld+json">{"@type":"NewsArticle","datePublished":"2024-05-05","author":"Grace"}</script></head><body></body></html>"#;
        let declared = Declared::of(&Dom::from(two));
        assert_eq!(declared.published.as_deref(), Some("2024-05-05"));
        assert_eq!(declared.author.as_deref(), Some("Grace"));
        let product = r#"<html><head><script type="application/ld+json">{"@type":"Product","name":"Lamp",
            "review":[{"@type":"Review","datePublished":"2023-05-05","author":{"name":"A buyer"}}]}</script></head><body></body></html>"#;
        let declared = Declared::of(&Dom::from(product));
        assert!(
            declared.published.is_none() && declared.author.is_none(),
            "{declared:?}"
        );
        // A branch deeper than the walk goes does not end the walk: the next object is read.
        let deep = format!(
            r#"<script type="application/ld+json">[{}1{}, {{"@type":"NewsArticle","datePublished":"2022-02-02"}}]</script>"#,
            "[".repeat(20),
            "]".repeat(20)
        );
        assert_eq!(
            Declared::of(&Dom::from(deep.as_str())).published.as_deref(),
            Some("2022-02-02")
        );
    }

    #[test]
    fn without_json_ld_a_meta_then_a_time_element_gives_the_date() {
        let meta = r#"<html><head><meta itemprop="datePublished" content="2023-01-09"></head><body><time datetime="2020-01-01">x</time></body></html>"#;
        assert_eq!(
            Declared::of(&Dom::from(meta)).published.as_deref(),
            Some("2023-01-09")
        );
        let time = r#"<html><body><aside><time datetime="2019-03-03">old</time></aside><article><p>t</p><time datetime="2021-07-04T10:00">July</time></article></body></html>"#;
        assert_eq!(
            Declared::of(&Dom::from(time)).published.as_deref(),
            Some("2021-07-04T10:00")
        );
        let none = "<html><body><script type='application/ld+json'>{not json</script><p>t</p></body></html>";
        let declared = Declared::of(&Dom::from(none));
        assert!(
            declared.published.is_none()
                && declared.author.is_none()
                && declared.site_name.is_none()
        );
    }
}
