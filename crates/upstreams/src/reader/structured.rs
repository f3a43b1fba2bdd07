//! The main content a page declares in its structured data, added to a read that left it out: a
//! product's description (JSON-LD `Product`), a question with its answers (`Question`, the entries
//! of a `FAQPage` and a `QAPage`), a forum post with its replies (`DiscussionForumPosting`,
//! `SocialMediaPosting` and their `comment`s).
//!
//! Shops write a product's description into a tab or a script the reads do not keep; forums and
//! Q&A sites write the thread's posts into JSON-LD for search engines when the page shows them
//! in blocks Readability takes for comments. A declared text of at least [`MIN_WORDS`] words, more
//! than [`MISSING`] of whose words the read does not hold, is added after the read's content, in
//! the read's format (Markdown and HTML from the text, escaped as any text is). Measured on WCXB's
//! development split (BENCHMARKS.md k., the book's reading notes): 20 pages changed, 16 up, overall
//! 0.856 → 0.857, forum +0.008, product +0.005, no type lower; the same texts as the whole content
//! of a page instead scored far below the reads (a product's description is a part of its truth).
//!
//! The read's word count stays its own: an app shell whose JSON-LD declares its first post still
//! counts as the few words it shows, so the reader goes on to its `<noscript>` or the browser.
//!
//! Hand-written: the JSON is `serde_json`'s (parsed once, with the metadata, by
//! [`super::declared`]); what is here is which values are a page's content. Bounded: the walk
//! goes no deeper than [`MAX_DEPTH`] and stops after [`MAX_VALUES`] values, a text's markup is
//! parsed only when it holds at most [`MAX_TAGS`] tags and fits in the room left, and at most
//! [`MAX_BYTES`] of text are kept per page (the walk stops there).

use dom_query::Document as Dom;
use std::collections::HashMap;

use serde_json::{Map, Value};

use gateway_core::request::ReadFormat;

/// A declared text shorter than this is not added (a one-line description adds little).
const MIN_WORDS: usize = 10;
/// A declared text is added when more than this share of its words is not in the read.
const MISSING: f64 = 0.4;
/// How deep the walk goes into a script's values.
const MAX_DEPTH: usize = 12;
/// Values looked at per script at most.
const MAX_VALUES: usize = 5_000;
/// Tags a declared text may hold to be parsed (it then nests no deeper than a page may:
/// `extract`'s `MAX_NESTING`).
const MAX_TAGS: usize = 400;
/// Text kept per page at most (a store's catalogue in JSON-LD is not one page's content).
const MAX_BYTES: usize = 64 * 1024;

/// The texts a page's JSON-LD declares as its content, in the order met.
#[derive(Debug, Default)]
pub(super) struct DeclaredText {
    texts: Vec<String>,
    bytes: usize,
    /// A text did not fit: nothing more is read (the page declares more than its content).
    full: bool,
}

impl DeclaredText {
    /// Takes the declared content of one JSON-LD script's value.
    pub(super) fn take(&mut self, root: &Value) {
        if self.full {
            return;
        }
        objects(root, NOT_THE_PAGES, |object| {
            let room = MAX_BYTES.saturating_sub(self.bytes);
            match content_of(object, room) {
                Some(Found::Text(text)) => self.keep(text),
                Some(Found::TooLong) => {
                    self.full = true;
                    false
                }
                None => true,
            }
        });
    }

    /// Keeps `text` (once); whether there is room for more.
    fn keep(&mut self, text: String) -> bool {
        if !self.texts.contains(&text) {
            self.bytes += text.len();
            self.texts.push(text);
        }
        self.full = self.bytes >= MAX_BYTES;
        !self.full
    }

    /// `content` (a read in `format`) with every declared text it leaves out added after it;
    /// `None` when it leaves none out. The read's word count stays its own: what tells a page
    /// read from an app shell or a wall (whose text is in `<noscript>`, in the browser's render or
    /// nowhere) is what the page shows.
    pub(super) fn complete(&self, content: &str, format: ReadFormat) -> Option<String> {
        if self.texts.is_empty() || format == ReadFormat::RawHtml {
            return None;
        }
        let mut read = Bag::of(content, format);
        let mut completed: Option<String> = None;
        for text in &self.texts {
            if !read.leaves_out(text) {
                continue;
            }
            // What is added counts as read for the texts after it (a reply declared twice).
            read.add(text);
            let out = completed.get_or_insert_with(|| content.trim_end().to_owned());
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&written(text, format));
        }
        completed
    }
}

/// JSON-LD keys whose objects are about something else than the page's own content (a product's
/// reviews, related products, a list's items), or which the object holding them reads itself (a
/// post's replies).
const NOT_THE_PAGES: &[&str] = &[
    "comment",
    "review",
    "reviews",
    "itemReviewed",
    "isRelatedTo",
    "isSimilarTo",
    "itemListElement",
    "subjectOf",
    "mentions",
    "citation",
];

/// What an object declares.
enum Found {
    Text(String),
    /// A text longer than the room left for the page's.
    TooLong,
}

/// Calls `visit` on each object of a JSON-LD value, depth first in document order, not looking
/// into the values of the keys in `skip` nor deeper than [`MAX_DEPTH`]; stops when `visit` says
/// so and after [`MAX_VALUES`] values (the walk `declared` takes for the metadata too).
pub(super) fn objects<'a>(
    root: &'a Value,
    skip: &[&str],
    mut visit: impl FnMut(&'a Map<String, Value>) -> bool,
) {
    let mut stack = vec![(root, 0usize)];
    let mut seen = 0;
    while let Some((value, depth)) = stack.pop() {
        seen += 1;
        if seen > MAX_VALUES {
            break;
        }
        if depth > MAX_DEPTH {
            continue;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().rev().map(|v| (v, depth + 1))),
            Value::Object(object) => {
                if !visit(object) {
                    break;
                }
                stack.extend(
                    object
                        .iter()
                        .rev()
                        .filter(|(key, _)| !skip.contains(&key.as_str()))
                        .map(|(_, v)| (v, depth + 1)),
                );
            }
            _ => {}
        }
    }
}

/// The text an object declares as a page's content, by its `@type`, if it fits in `room` bytes.
fn content_of(object: &Map<String, Value>, room: usize) -> Option<Found> {
    let kinds = types(object);
    let is = |wanted: &[&str]| kinds.iter().any(|kind| wanted.contains(kind));
    let mut parts = Parts {
        list: Vec::new(),
        room,
        used: 0,
        too_long: false,
    };
    if is(&["Product", "ProductGroup"]) {
        parts.add(object.get("description"));
    } else if is(&["Question"]) {
        parts.add(object.get("name"));
        parts.add(object.get("text"));
        for key in ["acceptedAnswer", "suggestedAnswer"] {
            for answer in each(object.get(key)) {
                parts.add(answer.get("text"));
            }
        }
    } else if is(&["DiscussionForumPosting", "SocialMediaPosting"]) {
        parts.add(object.get("text").or_else(|| object.get("articleBody")));
        parts.replies(object.get("comment"), 0);
    } else {
        return None;
    }
    if parts.too_long {
        return Some(Found::TooLong);
    }
    let joined = parts.list.join("\n\n");
    (joined.split_whitespace().count() >= MIN_WORDS).then_some(Found::Text(joined))
}

/// The texts of one object, within the room left.
struct Parts {
    list: Vec<String>,
    /// Bytes the object may take.
    room: usize,
    /// Bytes its texts and the blank lines between them take.
    used: usize,
    /// A text did not fit.
    too_long: bool,
}

impl Parts {
    fn add(&mut self, value: Option<&Value>) {
        let Some(raw) = value.and_then(Value::as_str) else {
            return;
        };
        let left = self.room.saturating_sub(self.used);
        // A text longer than the room as it stands is not parsed (markup and entities make it
        // about as long or shorter).
        if self.too_long || raw.len() > left {
            self.too_long = true;
            return;
        }
        if let Some(text) = text(raw) {
            let separator = if self.list.is_empty() { 0 } else { 2 };
            if separator + text.len() > left {
                self.too_long = true;
                return;
            }
            self.used += separator + text.len();
            self.list.push(text);
        }
    }

    /// A post's replies, and theirs, in order, no deeper than the walk goes.
    fn replies(&mut self, comments: Option<&Value>, depth: usize) {
        if depth > MAX_DEPTH || self.too_long {
            return;
        }
        for comment in each(comments) {
            self.add(comment.get("text").or_else(|| comment.get("articleBody")));
            self.replies(comment.get("comment"), depth + 1);
        }
    }
}

/// A value's items when it is a list, the value itself otherwise.
fn each(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    let items: &[Value] = match value {
        Some(Value::Array(items)) => items,
        Some(one) => std::slice::from_ref(one),
        None => &[],
    };
    items.iter()
}

/// The `@type` names of an object.
fn types(object: &Map<String, Value>) -> Vec<&str> {
    match object.get("@type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A JSON string as text: markup in it (descriptions often hold some) read as a browser shows
/// it — blocks on lines of their own, whitespace collapsed within lines; `None` when empty or
/// holding more tags than [`MAX_TAGS`].
fn text(raw: &str) -> Option<String> {
    let shown = if raw.contains('<') || raw.contains('&') {
        // Markup of more tags than this cannot nest deeper than the page's own bound.
        if raw.matches('<').count() > MAX_TAGS {
            return None;
        }
        let fragment = Dom::fragment(raw);
        // What a browser does not show as text.
        fragment
            .select("script, style, template, noscript")
            .remove();
        fragment.formatted_text().to_string()
    } else {
        raw.to_owned()
    };
    let lines: Vec<String> = shown
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// `text` in `format`: as it is, or as paragraphs of escaped text written by the reader's
/// Markdown writer or as HTML.
fn written(text: &str, format: ReadFormat) -> String {
    if matches!(format, ReadFormat::Text) {
        return text.to_owned();
    }
    let mut html = String::with_capacity(text.len() + 16);
    for line in text.lines() {
        html.push_str("<p>");
        super::inert::escape_into(&mut html, line);
        html.push_str("</p>");
    }
    match format {
        ReadFormat::Markdown => Dom::fragment(html).html_root().md(None).to_string(),
        _ => html,
    }
}

/// A text's words as WCXB's scorer counts them: lower-cased runs of letters, digits and `_`.
struct Bag(HashMap<String, usize>);

impl Bag {
    /// The words of a read in `format` (an HTML read's tags left out).
    fn of(content: &str, format: ReadFormat) -> Self {
        let mut bag = Self(HashMap::new());
        if format == ReadFormat::Html {
            let mut rest = content;
            while let Some(open) = rest.find('<') {
                bag.add(&rest[..open]);
                rest = rest[open..]
                    .find('>')
                    .map_or("", |close| &rest[open + close + 1..]);
            }
            bag.add(rest);
        } else {
            bag.add(content);
        }
        bag
    }

    fn add(&mut self, text: &str) {
        for word in word_list(text) {
            *self.0.entry(word).or_insert(0) += 1;
        }
    }

    /// Whether more than [`MISSING`] of `text`'s words (each as often as it occurs) are not here.
    fn leaves_out(&self, text: &str) -> bool {
        let mut wanted: HashMap<String, usize> = HashMap::new();
        for word in word_list(text) {
            *wanted.entry(word).or_insert(0) += 1;
        }
        let total: usize = wanted.values().sum();
        let held: usize = wanted
            .iter()
            .map(|(word, n)| (*n).min(self.0.get(word).copied().unwrap_or(0)))
            .sum();
        total > 0 && (total - held) as f64 > MISSING * total as f64
    }
}

fn word_list(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::reader::wall::corpus::{wcxb_html, wcxb_truth, word_f1};
    use url::Url;

    fn declared(json: &str) -> DeclaredText {
        let mut declared = DeclaredText::default();
        declared.take(&serde_json::from_str(json).unwrap());
        declared
    }

    const LAMP: &str = r#"{"@context":"https://schema.org","@type":"Product","name":"Desk lamp",
        "description":"<p>A desk lamp of brushed steel &amp; oak.<br>Its arm bends in three places and its warm light dims.</p>",
        "review":[{"@type":"Review","reviewBody":"Bought two, love them both, they light my desk well."}]}"#;

    #[test]
    fn a_products_description_is_added_to_a_read_that_left_it_out_and_its_reviews_are_not() {
        let lamp = declared(LAMP);
        let read = "Desk lamp\n\n$49 Add to cart";
        let completed = lamp.complete(read, ReadFormat::Text).unwrap();
        assert_eq!(
            completed,
            "Desk lamp\n\n$49 Add to cart\n\nA desk lamp of brushed steel & oak.\nIts arm bends in three places and its warm light dims."
        );
        // A read that holds most of it gets nothing.
        let held =
            "A desk lamp of brushed steel and oak. Its arm bends in three places, warm light.";
        assert_eq!(lamp.complete(held, ReadFormat::Text), None);
        // Under ten words is not added; ten are.
        let nine = declared(
            r#"{"@type":"Product","description":"one two three four five six seven eight nine"}"#,
        );
        assert!(nine.texts.is_empty());
        let ten = declared(
            r#"{"@type":"Product","description":"one two three four five six seven eight nine ten"}"#,
        );
        // Added when more than 40 % of its words are missing: four of ten is not enough, five is.
        assert_eq!(
            ten.complete("one two three four five six", ReadFormat::Text),
            None
        );
        assert!(ten
            .complete("one two three four five", ReadFormat::Text)
            .is_some());
        // Markup in a description is read as a browser shows it: each block once, on a line.
        let blocks = declared(
            r#"{"@type":"Product","description":"<style>.lamp { color: red }</style><div><p>Great lamp for reading</p><ul><li>steel arm</li><li>oak foot</li></ul><div>dims warm light at night</div></div><script>track()</script>"}"#,
        );
        assert_eq!(
            blocks.complete("", ReadFormat::Text).unwrap(),
            "Great lamp for reading\nsteel arm\noak foot\ndims warm light at night"
        );
        // A related product's description is not the page's.
        let related = declared(
            r#"{"@type":"WebPage","isRelatedTo":{"@type":"Product","description":"another lamp entirely, sold on another page of the shop"}}"#,
        );
        assert!(related.texts.is_empty());
    }

    #[test]
    fn a_question_with_its_answers_and_a_post_with_its_replies_are_declared_content() {
        let qa = declared(
            r#"{"@type":"QAPage","mainEntity":{"@type":"Question","name":"Why does my sourdough not rise?",
            "text":"It stays flat after twelve hours at room temperature.",
            "acceptedAnswer":{"@type":"Answer","text":"Your starter is too young: feed it twice a day for a week."},
            "suggestedAnswer":[{"@type":"Answer","text":"A colder kitchen needs longer proofing."}]}}"#,
        );
        let text = qa.complete("", ReadFormat::Text).unwrap();
        for part in [
            "Why does my sourdough",
            "twelve hours",
            "Your starter",
            "colder kitchen",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        let thread = declared(
            r#"[{"@type":"DiscussionForumPosting","headline":"x","text":"Has anyone sailed the fjords in winter on a small ship?",
            "comment":[{"@type":"Comment","text":"Yes, in January: the light is short but the views are worth it."}]}]"#,
        );
        let text = thread.complete("Forum home", ReadFormat::Text).unwrap();
        assert!(
            text.contains("sailed the fjords") && text.contains("in January"),
            "{text}"
        );
        // Replies to replies are read in order; a reply that is a post itself is read once.
        let nested = declared(
            r#"{"@type":"DiscussionForumPosting","text":"Which tent survives a storm on the ridge in autumn?",
            "comment":[{"@type":"DiscussionForumPosting","articleBody":"Mine did, a tunnel tent pitched with every guy line out.",
              "comment":[{"@type":"Comment","text":"Which tunnel tent was it, and how much does it weigh?"}]}]}"#,
        );
        // One text: the thread (its reply not taken again as a post of its own).
        assert_eq!(nested.texts.len(), 1, "{:?}", nested.texts);
        let text = nested.complete("", ReadFormat::Text).unwrap();
        assert_eq!(text.matches("tunnel tent pitched").count(), 1, "{text}");
        assert!(text.find("pitched") < text.find("how much"), "{text}");
        // The same post declared in two scripts is added once.
        let mut twice = declared(
            r#"{"@type":"SocialMediaPosting","text":"The river rose two metres overnight and closed the old bridge."}"#,
        );
        twice.take(&serde_json::from_str(r#"{"@type":"SocialMediaPosting","text":"The river rose two metres overnight and closed the old bridge."}"#).unwrap());
        assert_eq!(twice.texts.len(), 1);
        assert_eq!(
            twice
                .complete("", ReadFormat::Text)
                .unwrap()
                .matches("river")
                .count(),
            1
        );
    }

    #[test]
    fn declared_text_is_written_as_text_in_markdown_and_html() {
        let page = declared(
            r#"{"@type":"Product","description":"Bold claims: &lt;script&gt;alert(1)&lt;/script&gt; and **stars** and [a link](javascript:alert(1)) for you today"}"#,
        );
        let html = page.complete("", ReadFormat::Html).unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        let markdown = page.complete("", ReadFormat::Markdown).unwrap();
        // Every `<` escaped, as the Markdown writer escapes any text's.
        assert!(markdown.contains(r"\<script>"), "{markdown}");
        assert!(!markdown.replace(r"\<", "").contains('<'), "{markdown}");
        assert!(markdown.contains(r"\*\*stars\*\*"), "{markdown}");
        assert!(markdown.contains(r"\[a link\]"), "{markdown}");
        // Block markers at a line's start are text too.
        let lines = declared(
            r##"{"@type":"Product","description":"# Not a heading<br>> not a quote<br>1. not a list, and ``` not a fence either"}"##,
        );
        let markdown = lines.complete("", ReadFormat::Markdown).unwrap();
        for line in markdown.lines().filter(|line| !line.is_empty()) {
            assert!(
                line.starts_with('\\') || line.starts_with("1\\."),
                "{line:?} in {markdown}"
            );
        }
        // An HTML read's tags are not words of the read: the description is still missing.
        let lamp = declared(LAMP);
        let html = "<p class=\"desk lamp brushed steel oak arm bends three places warm light dims\">Lamp</p>";
        assert!(lamp.complete(html, ReadFormat::Html).is_some());
        assert_eq!(lamp.complete(html, ReadFormat::RawHtml), None);
    }

    #[test]
    fn the_walk_and_the_text_kept_are_bounded() {
        let many: Vec<String> = (0..400)
            .map(|n| {
                format!(
                    r#"{{"@type":"Product","description":"Item {n}: {}"}}"#,
                    "word ".repeat(60)
                )
            })
            .collect();
        let catalogue = declared(&format!("[{}]", many.join(",")));
        assert!(catalogue.bytes <= MAX_BYTES, "{}", catalogue.bytes);
        assert!(catalogue.texts.len() < 400);
        // Once a text did not fit the walk stops, and no later script is read.
        let full = catalogue.texts.len();
        let mut more = catalogue;
        more.take(
            &serde_json::from_str(r#"{"@type":"Product","description":"a b c d e f g h i j"}"#)
                .unwrap(),
        );
        assert_eq!(more.texts.len(), full);
        let deep = format!(
            r#"{}{{"@type":"Product","description":"{}"}}{}"#,
            "[".repeat(MAX_DEPTH + 2),
            "deep ".repeat(20),
            "]".repeat(MAX_DEPTH + 2)
        );
        assert!(declared(&deep).texts.is_empty());
        // More tags than a page may nest: not parsed.
        let nested = format!(
            r#"{{"@type":"Product","description":"{}{}{}"}}"#,
            "<div>".repeat(MAX_TAGS),
            "words ".repeat(20),
            "</div>".repeat(MAX_TAGS)
        );
        assert!(declared(&nested).texts.is_empty());
        // Under the bound, nested blocks are read once (not once per block around them).
        let under = format!(
            r#"{{"@type":"Product","description":"{}{}{}"}}"#,
            "<div>".repeat(100),
            "words ".repeat(20),
            "</div>".repeat(100)
        );
        assert_eq!(
            declared(&under).texts,
            vec!["words ".repeat(20).trim_end().to_owned()]
        );
    }

    /// Through the reader, in each format: the description after the read, the read's word count
    /// its own.
    #[test]
    fn the_reader_adds_a_declared_description_in_the_format_asked() {
        let page = format!(
            r#"<html><head><title>Desk lamp</title><script type="application/ld+json">{LAMP}</script></head>
            <body><main><h1>Desk lamp</h1><p>Forty-nine dollars, in stock, ships tomorrow.</p></main></body></html>"#
        );
        let url = Url::parse("https://shop.example/lamp").unwrap();
        for format in [ReadFormat::Text, ReadFormat::Markdown, ReadFormat::Html] {
            let read = crate::reader::extract::html(&page, &url, format).unwrap();
            assert!(
                read.content.contains("brushed steel"),
                "{format:?}: {}",
                read.content
            );
            assert!(
                read.content.find("Forty-nine") < read.content.find("brushed steel"),
                "{format:?}: {}",
                read.content
            );
            assert!(!read.content.contains("Bought two"), "{format:?}: a review");
            assert!(read.words < 12, "{format:?}: {} words", read.words);
        }
    }

    /// WCXB pages whose content is in their JSON-LD and in neither read: a Cruise Critic thread
    /// (its posts as `DiscussionForumPosting` comments) and a product whose description sits in
    /// a tab. A Discourse thread's declared first post does not count as the words the page shows:
    /// its read stays one of under `FEW_WORDS`, so the reader still reads its `<noscript>`.
    #[test]
    fn wcxb_pages_are_read_with_what_their_structured_data_declares() {
        for (id, before, after) in [("0579", 0.25, 0.6), ("0581", 0.25, 0.6)] {
            let Some(page) = wcxb_html(id) else {
                return;
            };
            let (url, main) = wcxb_truth(id);
            let url = Url::parse(&url).unwrap();
            let read = crate::reader::extract::html(&page, &url, ReadFormat::Text).unwrap();
            // The same page with its JSON-LD made another kind of script.
            let undeclared = page.replace("application/ld+json", "application/x-undeclared");
            let own = crate::reader::extract::html(&undeclared, &url, ReadFormat::Text).unwrap();
            let (without, f1) = (word_f1(&own.content, &main), word_f1(&read.content, &main));
            assert!(
                without < before && f1 >= after,
                "{id}: F1 {without:.2} -> {f1:.2}"
            );
        }
        let Some(page) = wcxb_html("0502") else {
            return;
        };
        let url = Url::parse("https://forums.docker.com/t/x/1").unwrap();
        let read = crate::reader::extract::html(&page, &url, ReadFormat::Text).unwrap();
        assert!(
            read.words < crate::reader::extract::FEW_WORDS,
            "{}",
            read.words
        );
        assert!(read.content.contains("Confusing resolver structure"));
    }
}
