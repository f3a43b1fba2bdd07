//! What the reader hands out runs nothing: a page's text may be rendered by whoever asked for it
//! (a chat window renders Markdown, a scraper's user opens Firecrawl's `html`), so the article's
//! markup and Markdown leave here without what a renderer would execute.
//!
//! The work is done on the parsed tree, before any Markdown or HTML is written from it, so no
//! Markdown has to be parsed back (escapes, nested brackets and parentheses in targets would each
//! be a way past a text scan):
//!
//! - [`page`], on the whole page before the first read: every `on…` event attribute and `srcdoc`
//!   goes; any attribute whose value is a `javascript:`, `vbscript:` or `data:` URL (or a
//!   `srcset`-like list holding one) goes, whatever its name — `href`, `src`, `action`, and the
//!   `data-src`/`data-original` a lazy image keeps, which Readability and the Markdown writer
//!   promote to its `src` —, and `<template>` (its content is out of the tree's reach and written back verbatim),
//!   `<object>`, `<embed>` and SVG's animation elements (`<set>`, `<animate…>`, which can write a
//!   `javascript:` URL into a link) go. A link without its target is its text: the Markdown of
//!   `<a href="javascript:…">Share</a>` is `Share`.
//! - [`fragment`], on an article's markup from the second read: the same, and `<script>`,
//!   `<style>`, `<base>`, `<meta>`, `<link>` and `<noscript>` too (the page keeps its scripts and
//!   metas until the first read has taken its metadata; Readability drops scripts, styles and
//!   links from its article, and [`page`] takes the acting `<meta http-equiv>` and a body's
//!   `<base>`).
//!
//! Embedded videos (`<iframe src="https://…">`) stay, as the article shows them. Readability kept
//! a page's `onclick` handlers and `javascript:` links in the article (29 of WCXB's first 400
//! answers carried one). Hand-written: the rules are a handful over the reader's own `dom_query`
//! tree (an HTML sanitizer crate such as `ammonia` would bring a fourth `html5ever` into the build
//! and a second parse of every page).

use dom_query::Document as Dom;

/// Appends `text` to `html` as text: `<`, `>`, `&` and `"` escaped.
pub(super) fn escape_into(html: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '&' => html.push_str("&amp;"),
            '"' => html.push_str("&quot;"),
            c => html.push(c),
        }
    }
}

/// URL schemes a renderer would execute or inline.
const ACTIVE_SCHEMES: &[&str] = &["javascript:", "vbscript:", "data:"];

/// Elements removed from a page before it is read.
const PAGE_ELEMENTS: &str =
    "template, object, embed, set, animate, animateMotion, animateTransform, \
     animatemotion, animatetransform";

/// Elements removed from an article's markup as well.
const FRAGMENT_ELEMENTS: &str = "script, style, base, meta, link, noscript";

/// Whether `url` uses an active scheme, compared as a browser reads it: without the whitespace
/// and control characters it skips, in any case (no allocation: attributes are many).
fn active(url: &str) -> bool {
    let mut scheme = [0u8; 12];
    let mut len = 0;
    for c in url.chars() {
        if c.is_whitespace() || c.is_control() {
            continue;
        }
        if !c.is_ascii() || len == scheme.len() {
            break;
        }
        scheme[len] = c.to_ascii_lowercase() as u8;
        len += 1;
        if c == ':' {
            break;
        }
    }
    ACTIVE_SCHEMES
        .iter()
        .any(|active| scheme[..len].starts_with(active.as_bytes()))
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

/// Drops event attributes, `srcdoc`, and every attribute whose value is an active URL or a list
/// holding one, whatever its name: Readability copies a lazy image's `data-src`, `data-original` or
/// any attribute that looks like an image path into `src`, and the Markdown writer prints a
/// `data-src` when an image has no `src`. Only `alt` and `title` (text, never followed) are kept
/// as they are.
fn attributes(dom: &Dom) {
    for element in dom.select("*").nodes() {
        for attribute in element.attrs() {
            let local: &str = &attribute.name.local;
            let lower = local.to_ascii_lowercase();
            let value: &str = &attribute.value;
            let text = matches!(lower.as_str(), "alt" | "title");
            let drop = lower.starts_with("on")
                || lower == "srcdoc"
                || (!text && value.contains(':') && (active(value) || active_srcset(value)));
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
            <svg><a href="/s"><set attributeName="href" to="javascript:alert(1)"/><text>svg link</text></a></svg>
            <img data-src="javascript:alert(1)" data-original="javascript:alert(2)//.png" alt="lazy">
            <figure data-x="data:text/html,x.png"></figure><meta http-equiv="refresh" content="0;url=javascript:x">"#;
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
