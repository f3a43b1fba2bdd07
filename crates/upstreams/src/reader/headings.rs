//! A heading is never a page's header: before Readability reads a page, the word `header` in the
//! class names of its `<h1>`…`<h6>` becomes `heading`.
//!
//! Readability drops any element whose class or id matches its "unlikely candidate" words —
//! `header` among them, meant for a site's masthead — before it scores the page, headings
//! included. Sites whose styles are CSS modules or BEM name their headings' classes after the
//! component (`styles_header3__fw_Of`, `post__header-title`), so every heading of such an article
//! went, and the sections under them read as one run of paragraphs (WCXB 0453 lost all four).
//! A site's real masthead is the element around its title (`<header>`, `<div class="header">`),
//! which keeps its class and goes as before. Only that word changes, and only in classes: the other
//! words of a name (`comment`, `share`, `meta`, …) weigh as they did, and an id that says
//! `header` (an anchor a link may name) still drops its heading.

use dom_query::Document as Dom;

/// The class-name word Readability reads as a masthead, and what it becomes on a heading.
const MASTHEAD: &str = "header";
const HEADING: &str = "heading";

/// Renames [`MASTHEAD`] to [`HEADING`] in the class names of the page's headings.
pub(super) fn keep(dom: &Dom) {
    for heading in dom.select("h1, h2, h3, h4, h5, h6").nodes() {
        let Some(class) = heading.attr("class") else {
            continue;
        };
        let lower = class.to_ascii_lowercase();
        if !lower.contains(MASTHEAD) {
            continue;
        }
        // ASCII lower-casing keeps every byte where it was.
        let mut renamed = String::with_capacity(class.len());
        let mut from = 0;
        for (at, _) in lower.match_indices(MASTHEAD) {
            renamed.push_str(&class[from..at]);
            renamed.push_str(HEADING);
            from = at + MASTHEAD.len();
        }
        renamed.push_str(&class[from..]);
        heading.set_attr("class", &renamed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;
    use url::Url;

    /// WCXB 0453 (a blog on Next.js with CSS modules: `<h2 class="styles_all__… styles_header2__…">`)
    /// is read with its section headings.
    #[test]
    fn a_css_module_articles_headings_are_read() {
        let Some(page) = crate::reader::wall::corpus::wcxb_html("0453") else {
            return;
        };
        let url = Url::parse("https://wcxb.example/0453").unwrap();
        let read = crate::reader::extract::html(&page, &url, ReadFormat::Markdown).unwrap();
        for heading in [
            "What is attestation",
            "Hardware attestation",
            "Nix",
            "Conclusion",
        ] {
            assert!(
                read.content
                    .lines()
                    .any(|line| line.starts_with("## ") && line.contains(heading)),
                "{heading}: {}",
                read.content
            );
        }
    }

    #[test]
    fn a_headings_header_class_names_become_heading_and_the_rest_stay() {
        let dom = Dom::from(
            r#"<header class="site-header"><h1 class="site-header__title">Site</h1></header>
            <h2 class="styles_all__x styles_header2__5l">Attestation</h2>
            <h3 class="Header">Nix</h3><h4 class="post-header entry-meta">By me</h4>"#,
        );
        keep(&dom);
        assert_eq!(
            dom.select("header").attr("class").as_deref(),
            Some("site-header"),
            "a masthead keeps its class"
        );
        let class = |tag: &str| dom.select(tag).attr("class").map(|c| c.to_string());
        assert_eq!(class("h1").as_deref(), Some("site-heading__title"));
        assert_eq!(
            class("h2").as_deref(),
            Some("styles_all__x styles_heading2__5l")
        );
        assert_eq!(class("h3").as_deref(), Some("heading"));
        assert_eq!(class("h4").as_deref(), Some("post-heading entry-meta"));
    }

    /// Without the corpus too: an article whose section headings are named after a CSS module
    /// reads with them.
    #[test]
    fn an_articles_css_module_headings_are_read() {
        let mut page = String::from("<html><body><article><h1>Building trust</h1>");
        for (i, section) in ["Attestation", "Hardware", "Builds"].iter().enumerate() {
            page.push_str(&format!(
                r#"<h2 class="styles_all__a styles_header2__b{i}">{section}</h2>"#
            ));
            for _ in 0..3 {
                page.push_str(&format!(
                    "<p>This paragraph about {section} holds enough words, commas, and \
                     sentences of prose that Readability scores it as the article's own text, \
                     not as navigation or a caption.</p>"
                ));
            }
        }
        page.push_str("</article></body></html>");
        let url = Url::parse("https://example.com/post").unwrap();
        let read = crate::reader::extract::html(&page, &url, ReadFormat::Markdown).unwrap();
        for section in ["Attestation", "Hardware", "Builds"] {
            assert!(
                read.content
                    .lines()
                    .any(|line| line.trim() == format!("## {section}")),
                "{section}: {}",
                read.content
            );
        }
    }
}
