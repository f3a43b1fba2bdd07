//! A heading is never a page's header: before Readability reads a page, the class names of its
//! `<h1>`…`<h6>` that say `header` go.
//!
//! Readability drops any element whose class or id matches its "unlikely candidate" words —
//! `header` among them, meant for a site's masthead — before it scores the page, headings
//! included. Sites whose styles are CSS modules or BEM name their headings' classes after the
//! component (`styles_header3__fw_Of`, `post__header-title`), so every heading of such an article
//! went, and the sections under them read as one run of paragraphs (WCXB 0453 lost all four).
//! A site's real masthead is the element around its title (`<header>`, `<div class="header">`),
//! which keeps its class and goes as before. Only `header` is taken off a heading: the other
//! words (`comment`, `share`, `sidebar`, …) still drop a heading that carries them, as
//! Readability means them to.

use dom_query::Document as Dom;

/// The class-name word Readability reads as a masthead.
const MASTHEAD: &str = "header";

/// Takes [`MASTHEAD`] class names off the page's headings.
pub(super) fn keep(dom: &Dom) {
    for heading in dom.select("h1, h2, h3, h4, h5, h6").nodes() {
        let Some(class) = heading.attr("class") else {
            continue;
        };
        if !class.to_ascii_lowercase().contains(MASTHEAD) {
            continue;
        }
        let kept: Vec<&str> = class
            .split_ascii_whitespace()
            .filter(|name| !name.to_ascii_lowercase().contains(MASTHEAD))
            .collect();
        if kept.is_empty() {
            heading.remove_attr("class");
        } else {
            heading.set_attr("class", &kept.join(" "));
        }
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
    fn a_headings_header_class_names_go_and_the_rest_stay() {
        let dom = Dom::from(
            r#"<header class="site-header"><h1 class="site-header__title">Site</h1></header>
            <h2 class="styles_all__x styles_header2__5l">Attestation</h2>
            <h3 class="Header">Nix</h3><h4 class="comments-title">3 comments</h4>"#,
        );
        keep(&dom);
        assert_eq!(
            dom.select("header").attr("class").as_deref(),
            Some("site-header"),
            "a masthead keeps its class"
        );
        assert_eq!(dom.select("h1").attr("class"), None);
        assert_eq!(
            dom.select("h2").attr("class").as_deref(),
            Some("styles_all__x")
        );
        assert_eq!(dom.select("h3").attr("class"), None);
        assert_eq!(
            dom.select("h4").attr("class").as_deref(),
            Some("comments-title")
        );
    }
}
