//! What the reader hands out runs nothing: a page's text may be rendered by whoever asked for it
//! (a chat window renders Markdown, a scraper's user opens Firecrawl's `html`), so the article's
//! markup and Markdown leave here without what a renderer would execute.
//!
//! The work is done on the parsed tree, before any Markdown or HTML is written from it, so no
//! Markdown has to be parsed back (escapes, nested brackets and parentheses in targets would each
//! be a way past a text scan):
//!
//! - [`page`], on the whole page before the first read: every `on…` event attribute and `srcdoc`
//!   goes; a URL attribute (`href`, `src`, `srcset`, `action`, `formaction`, `poster`, …) holding
//!   a `javascript:`, `vbscript:` or `data:` URL goes (a lazy image's `data:` placeholder too:
//!   Readability then takes its `data-src`, the real image), and `<template>` (its content is out of the tree's reach and written back verbatim),
//!   `<object>`, `<embed>` and SVG's animation elements (`<set>`, `<animate…>`, which can write a
//!   `javascript:` URL into a link) go. A link without its target is its text: the Markdown of
//!   `<a href="javascript:…">Share</a>` is `Share`.
//! - [`fragment`], on an article's markup from the second read: the same, and `<script>`,
//!   `<style>`, `<base>`, `<meta>` and `<link>` too (the first read's article never has them:
//!   Readability drops them, and the page keeps them until then for its metadata).
//!
//! Embedded videos (`<iframe src="https://…">`) stay, as the article shows them. Readability kept
//! a page's `onclick` handlers and `javascript:` links in the article (29 of WCXB's first 400
//! answers carried one). Hand-written: the rules are a handful over the reader's own `dom_query`
//! tree (an HTML sanitizer crate such as `ammonia` would bring a fourth `html5ever` into the build
//! and a second parse of every page).

use dom_query::Document as Dom;

/// URL schemes a renderer would execute or inline.
const ACTIVE_SCHEMES: &[&str] = &["javascript:", "vbscript:", "data:"];

/// Elements removed from a page before it is read.
const PAGE_ELEMENTS: &str =
    "template, object, embed, set, animate, animateMotion, animateTransform, \
     animatemotion, animatetransform";

/// Elements removed from an article's markup as well.
const FRAGMENT_ELEMENTS: &str = "script, style, base, meta, link";

/// Attributes that hold a URL (`xlink:href` is `href` to the parser).
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "poster",
    "background",
    "data",
    "cite",
];

/// Whether `url` uses an active scheme, compared as a browser reads it: without the whitespace
/// and control characters it skips, in any case.
fn active(url: &str) -> bool {
    let mut scheme = String::with_capacity(12);
    for c in url.chars() {
        if c.is_whitespace() || c.is_control() {
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

/// Whether a `srcset` has an active candidate.
fn active_srcset(srcset: &str) -> bool {
    srcset.split(',').any(active)
}

/// Makes a whole page inert before it is read (see the module's doc).
pub(super) fn page(dom: &Dom) {
    dom.select(PAGE_ELEMENTS).remove();
    attributes(dom);
}

/// An article's markup, parsed and made inert: render it with `html_root()`.
pub(super) fn fragment(html: &str) -> Dom {
    let dom = Dom::fragment(html);
    dom.select(FRAGMENT_ELEMENTS).remove();
    page(&dom);
    dom
}

/// Drops event attributes, `srcdoc` and active URLs from every element of `dom`.
fn attributes(dom: &Dom) {
    for element in dom.select("*").nodes() {
        for attribute in element.attrs() {
            let local: &str = &attribute.name.local;
            let lower = local.to_ascii_lowercase();
            let url = URL_ATTRIBUTES.contains(&lower.as_str());
            let drop = lower.starts_with("on")
                || lower == "srcdoc"
                || (url && active(&attribute.value))
                || (lower == "srcset" && active_srcset(&attribute.value));
            if drop {
                element.remove_attr(local);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn article_markup_keeps_its_content_without_what_runs() {
        let article = r#"<p onclick="track()">Text <a href="javascript:void(0)" onmouseover="x()">share</a>
            <a href="https://a.example/more">more</a></p><script>alert(1)</script><style>p{}</style>
            <iframe src="https://video.example/embed/1" srcdoc="<script>x()</script>"></iframe>
            <img src=" java&#x09;script:alert(1)" alt="a"><img src="/ok.png" srcset="data:image/png;base64,AA 2x" alt="b">
            <form action="javascript:go()"><button formaction="vbscript:x">b</button></form>
            <template shadowrootmode="open"><img src=x onerror=alert(1)></template>
            <svg><a href="/s"><set attributeName="href" to="javascript:alert(1)"/><text>svg link</text></a></svg>"#;
        let out = fragment(article).html_root().inner_html().to_string();
        assert!(out.starts_with("<p>Text"), "the fragment as it was: {out}");
        for gone in [
            "onclick",
            "onmouseover",
            "onerror",
            "javascript",
            "vbscript",
            "data:",
            "<script",
            "<style",
            "srcdoc",
            "alert",
            "template",
            "<set",
        ] {
            assert!(!out.to_lowercase().contains(gone), "{gone} in {out}");
        }
        for kept in [
            "Text",
            "share",
            "https://a.example/more",
            "https://video.example/embed/1",
            "/ok.png",
            "svg link",
        ] {
            assert!(out.contains(kept), "{kept} not in {out}");
        }
    }

    #[test]
    fn schemes_are_read_as_a_browser_reads_them() {
        for url in [
            "javascript:x",
            " JaVaScRiPt:x",
            "java\tscript:x",
            "\u{1}data:text/html,x",
            "vbscript:x",
        ] {
            assert!(active(url), "{url:?}");
        }
        for url in [
            "https://a.example/javascript:",
            "/data:x",
            "mailto:a@b.example",
            "#top",
        ] {
            assert!(!active(url), "{url:?}");
        }
        assert!(active_srcset("/a.png 1x, data:image/png;base64,AA 2x"));
        assert!(!active_srcset("/a.png 1x, /b.png 2x"));
    }
}
