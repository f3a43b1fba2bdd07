//! The page's files, embedded in the binary at build time (`include_bytes!`): nothing is fetched
//! from elsewhere and nothing needs building. `index.html` (the page, which loads the rest),
//! `app.css`, `app.js` (all of the page's behaviour: no inline script or handler anywhere, so the
//! Content-Security-Policy can forbid them), and uPlot 1.6.32 (`vendor/`, the charts, MIT, its
//! licence served beside it).

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asset {
    pub(crate) content_type: &'static str,
    pub(crate) bytes: &'static [u8],
}

/// The page itself.
pub(crate) const PAGE: Asset = Asset {
    content_type: "text/html; charset=utf-8",
    bytes: include_bytes!("assets/index.html"),
};

/// The files the page loads, by the name it loads them with (`/ui/{name}`).
const FILES: &[(&str, Asset)] = &[
    (
        "app.js",
        Asset {
            content_type: "text/javascript; charset=utf-8",
            bytes: include_bytes!("assets/app.js"),
        },
    ),
    (
        "app.css",
        Asset {
            content_type: "text/css; charset=utf-8",
            bytes: include_bytes!("assets/app.css"),
        },
    ),
    (
        "uPlot.iife.min.js",
        Asset {
            content_type: "text/javascript; charset=utf-8",
            bytes: include_bytes!("assets/vendor/uPlot.iife.min.js"),
        },
    ),
    (
        "uPlot.min.css",
        Asset {
            content_type: "text/css; charset=utf-8",
            bytes: include_bytes!("assets/vendor/uPlot.min.css"),
        },
    ),
    (
        "uPlot.LICENSE",
        Asset {
            content_type: "text/plain; charset=utf-8",
            bytes: include_bytes!("assets/vendor/uPlot.LICENSE"),
        },
    ),
];

/// The file the page loads as `name`.
pub(crate) fn find(name: &str) -> Option<Asset> {
    FILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, asset)| *asset)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn page() -> &'static str {
        std::str::from_utf8(PAGE.bytes).unwrap()
    }

    /// The policy forbids inline scripts and handlers: the page must not need any.
    #[test]
    fn the_page_has_no_inline_script_style_or_handler() {
        let page = page().to_ascii_lowercase();
        for (at, _) in page.match_indices("<script") {
            let tag = &page[at..at + page[at..].find('>').unwrap()];
            assert!(tag.contains(" src=\"/ui/"), "an inline script: {tag}");
        }
        assert!(!page.contains("<style"), "an inline stylesheet");
        assert!(!page.contains(" style=\""), "an inline style attribute");
        for attribute in [
            " onclick=",
            " onload=",
            " onerror=",
            " onsubmit=",
            " onchange=",
            " oninput=",
        ] {
            assert!(!page.contains(attribute), "an inline handler: {attribute}");
        }
        assert!(!page.contains("javascript:"));
    }

    /// Everything the page loads is embedded, and nothing comes from another origin.
    #[test]
    fn every_file_the_page_loads_is_embedded() {
        let page = page();
        let mut loaded = 0;
        for attribute in ["src=\"/ui/", "href=\"/ui/"] {
            for (at, _) in page.match_indices(attribute) {
                let rest = &page[at + attribute.len()..];
                let name = &rest[..rest.find('"').unwrap()];
                assert!(find(name).is_some(), "{name} is not embedded");
                loaded += 1;
            }
        }
        assert!(
            loaded >= 5,
            "the page loads its script, styles, uPlot and its licence"
        );
        assert!(!page.contains("http://") && !page.contains("https://"));
        let script = std::str::from_utf8(find("app.js").unwrap().bytes).unwrap();
        assert!(!script.contains("innerHTML"), "values go in as text");
        assert!(!script.contains("insertAdjacentHTML") && !script.contains("document.write"));
    }
}
