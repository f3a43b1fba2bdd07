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
//! stops at [`MAX_DEPTH`] and after [`MAX_VALUES`] values, and at most [`MAX_BYTES`] of text are
//! kept per page.

use dom_query::Document as Dom;
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
}

impl DeclaredText {
    /// Takes the declared content of one JSON-LD script's value.
    pub(super) fn take(&mut self, root: &Value) {
        objects(root, &[], |object| {
            if let Some(text) = content_of(object) {
                self.keep(text);
            }
            self.bytes < MAX_BYTES
        });
    }

    fn keep(&mut self, text: String) {
        let room = MAX_BYTES.saturating_sub(self.bytes);
        if text.len() > room || self.texts.contains(&text) {
            return;
        }
        self.bytes += text.len();
        self.texts.push(text);
    }

    /// `content` (a read in `format`) with every declared text it leaves out added after it;
    /// `None` when it leaves none out. The read's word count stays its own: what tells a page
    /// read from an app shell or a wall (whose text is in `<noscript>`, in the browser's render or
    /// nowhere) is what the page shows.
    pub(super) fn complete(&self, content: &str, format: ReadFormat) -> Option<String> {
        if self.texts.is_empty() {
            return None;
        }
        let read = Bag::of(content);
        let missing: Vec<&String> = self
            .texts
            .iter()
            .filter(|text| read.leaves_out(text))
            .collect();
        if missing.is_empty() {
            return None;
        }
        let mut completed = content.trim_end().to_owned();
        for text in missing {
            if !completed.is_empty() {
                completed.push_str("\n\n");
            }
            completed.push_str(&written(text, format));
        }
        Some(completed)
    }
}

/// Calls `visit` on each object of a JSON-LD value, depth first in document order, not looking
/// into the values of the keys in `skip`; stops when `visit` says so, at [`MAX_DEPTH`] and after
/// [`MAX_VALUES`] values (the walk `declared` takes for the metadata too).
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

/// The text an object declares as a page's content, by its `@type`.
fn content_of(object: &Map<String, Value>) -> Option<String> {
    let kinds = types(object);
    let is = |wanted: &[&str]| kinds.iter().any(|kind| wanted.contains(kind));
    let mut parts: Vec<String> = Vec::new();
    if is(&["Product", "ProductGroup"]) {
        parts.extend(object.get("description").and_then(text));
    } else if is(&["Question"]) {
        parts.extend(object.get("name").and_then(text));
        parts.extend(object.get("text").and_then(text));
        for key in ["acceptedAnswer", "suggestedAnswer"] {
            parts.extend(
                each(object.get(key)).filter_map(|answer| answer.get("text").and_then(text)),
            );
        }
    } else if is(&["DiscussionForumPosting", "SocialMediaPosting"]) {
        parts.extend(
            object
                .get("text")
                .or_else(|| object.get("articleBody"))
                .and_then(text),
        );
        parts.extend(
            each(object.get("comment")).filter_map(|comment| comment.get("text").and_then(text)),
        );
    }
    let joined = parts.join("\n\n");
    (joined.split_whitespace().count() >= MIN_WORDS).then_some(joined)
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
/// it, whitespace collapsed within lines; `None` when empty or nested too deep to parse.
fn text(value: &Value) -> Option<String> {
    let raw = value.as_str()?;
    let shown = if raw.contains('<') || raw.contains('&') {
        // Markup of more tags than this cannot nest deeper than the page's own bound.
        if raw.matches('<').count() > MAX_TAGS {
            return None;
        }
        Dom::fragment(format!("<div>{}</div>", raw.replace("<br", "\n<br")))
            .select("div")
            .text()
            .to_string()
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
struct Bag(std::collections::HashMap<String, usize>);

impl Bag {
    fn of(text: &str) -> Self {
        let mut bag = std::collections::HashMap::new();
        for word in word_list(text) {
            *bag.entry(word).or_insert(0) += 1;
        }
        Self(bag)
    }

    /// Whether more than [`MISSING`] of `text`'s words (each as often as it occurs) are not here.
    fn leaves_out(&self, text: &str) -> bool {
        let mut wanted = std::collections::HashMap::new();
        for word in word_list(text) {
            *wanted.entry(word).or_insert(0usize) += 1;
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
        // Under ten words is not added.
        let short = declared(r#"{"@type":"Product","description":"A lamp of steel."}"#);
        assert_eq!(short.complete("Lamp", ReadFormat::Text), None);
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
        let deep = format!(
            r#"{}{{"@type":"Product","description":"{}"}}{}"#,
            "[".repeat(MAX_DEPTH + 2),
            "deep ".repeat(20),
            "]".repeat(MAX_DEPTH + 2)
        );
        assert!(declared(&deep).texts.is_empty());
        let nested = format!(
            r#"{{"@type":"Product","description":"{}{}{}"}}"#,
            "<div>".repeat(100_000),
            "words ".repeat(20),
            "</div>".repeat(100_000)
        );
        assert!(declared(&nested).texts.is_empty());
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
