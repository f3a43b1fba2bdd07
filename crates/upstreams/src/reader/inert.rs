//! What the reader hands out runs nothing: a page's text may be rendered by whoever asked for it
//! (a chat window renders Markdown, a scraper's user opens Firecrawl's `html`), so the article's
//! markup and Markdown leave here without what a renderer would execute.
//!
//! - **Markdown**: a link or image whose target is a `javascript:`, `vbscript:` or `data:` URL
//!   becomes its label alone (`[Disable MathJax](javascript:setCookie())` → `Disable MathJax`).
//! - **HTML** (the article's own markup): `<script>`, `<style>`, `<base>`, `<meta>`, `<link>`,
//!   `<object>` and `<embed>` elements go, every `on…` event attribute and `srcdoc` goes, and a
//!   URL attribute holding one of those schemes goes. Embedded videos (`<iframe src="https://…">`)
//!   stay, as the article shows them.
//!
//! Readability keeps a page's `onclick` handlers and `javascript:` links inside the article, and
//! so does the second read; measured on WCXB's first 400 pages, 29 answers carried one.
//! Hand-written: the rules are a handful (an HTML sanitizer crate such as `ammonia` would bring a
//! fourth `html5ever` into the build for them); the HTML is parsed with the reader's own
//! `dom_query`, only for the HTML format, and only the article's markup, already cut from the page.

use dom_query::Document as Dom;

use gateway_core::request::ReadFormat;

/// URL schemes a renderer would execute or inline.
const ACTIVE_SCHEMES: &[&str] = &["javascript:", "vbscript:", "data:"];

/// Elements that never belong in an article handed out.
const ACTIVE_ELEMENTS: &str = "script, style, base, meta, link, object, embed";

/// Attributes that hold a URL.
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "xlink:href",
    "poster",
    "background",
    "data",
];

/// Whether `url` (an attribute's value or a Markdown target) uses an active scheme: compared as a
/// browser reads it, without the whitespace and control characters it skips and in any case.
fn active(url: &str) -> bool {
    let mut scheme = String::with_capacity(12);
    for c in url.chars() {
        if c.is_whitespace() || c.is_control() || c == '<' {
            continue;
        }
        scheme.extend(c.to_lowercase());
        if c == ':' || scheme.len() >= 12 {
            break;
        }
    }
    ACTIVE_SCHEMES
        .iter()
        .any(|active| scheme.starts_with(active))
}

/// `content` as the reader hands it out in `format`.
pub(super) fn content(content: String, format: ReadFormat) -> String {
    match format {
        ReadFormat::Markdown => markdown(&content),
        ReadFormat::Html => html(&content),
        ReadFormat::Text | ReadFormat::RawHtml => content,
    }
}

/// `markdown` with every link and image to an active URL replaced by its label.
pub(super) fn markdown(markdown: &str) -> String {
    if !markdown.contains("](") {
        return markdown.to_owned();
    }
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        let target_start = at + 2;
        let Some(target_len) = rest[target_start..].find(')') else {
            break;
        };
        let target = &rest[target_start..target_start + target_len];
        let label_start = rest[..at].rfind('[');
        match label_start {
            Some(open) if active(target) => {
                // `![label](…)` and `[label](…)` alike: the label's text stays.
                let open = if rest[..open].ends_with('!') {
                    open - 1
                } else {
                    open
                };
                out.push_str(&rest[..open]);
                out.push_str(rest[..at].rsplit_once('[').map_or("", |(_, label)| label));
            }
            _ => out.push_str(&rest[..target_start + target_len + 1]),
        }
        rest = &rest[target_start + target_len + 1..];
    }
    out.push_str(rest);
    out
}

/// `html` (an article's markup) without active elements, event attributes and active URLs.
pub(super) fn html(html: &str) -> String {
    let dom = Dom::fragment(html);
    dom.select(ACTIVE_ELEMENTS).remove();
    for element in dom.select("*").nodes() {
        for attribute in element.attrs() {
            let local: &str = &attribute.name.local;
            let name = local.to_ascii_lowercase();
            let drop = name.starts_with("on")
                || name == "srcdoc"
                || (URL_ATTRIBUTES.contains(&name.as_str()) && active(&attribute.value));
            if drop {
                element.remove_attr(local);
            }
        }
    }
    // A fragment is parsed under an `<html>` element of its own: its content is what goes out.
    dom.html_root().inner_html().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_markdown_link_to_script_keeps_only_its_label() {
        assert_eq!(
            markdown("See [Disable MathJax](javascript:setCookie%28%29) and [the docs](https://a.example/d)."),
            "See Disable MathJax and [the docs](https://a.example/d)."
        );
        assert_eq!(
            markdown("![pixel](data:image/png;base64,AAAA) [x]( JaVaScRiPt:alert%281%29)"),
            "pixel x"
        );
        assert_eq!(markdown("a [b] (c) d](e"), "a [b] (c) d](e");
        let plain = "No links at all, [brackets] and (parentheses).";
        assert_eq!(markdown(plain), plain);
    }

    #[test]
    fn article_markup_keeps_its_content_without_what_runs() {
        let article = r#"<p onclick="track()">Text <a href="javascript:void(0)" onmouseover="x()">share</a>
            <a href="https://a.example/more">more</a></p><script>alert(1)</script><style>p{}</style>
            <iframe src="https://video.example/embed/1" srcdoc="<script>x()</script>"></iframe>
            <img src=" java&#x09;script:alert(1)" alt="a"><form action="javascript:go()"><button formaction="vbscript:x">b</button></form>"#;
        let out = html(article);
        assert!(out.starts_with("<p>Text"), "the fragment as it was: {out}");
        for gone in [
            "onclick",
            "onmouseover",
            "javascript",
            "vbscript",
            "<script",
            "<style",
            "srcdoc",
            "alert",
        ] {
            assert!(!out.to_lowercase().contains(gone), "{gone} in {out}");
        }
        for kept in [
            "Text",
            "share",
            "https://a.example/more",
            "https://video.example/embed/1",
            "alt=\"a\"",
        ] {
            assert!(out.contains(kept), "{kept} not in {out}");
        }
    }
}
