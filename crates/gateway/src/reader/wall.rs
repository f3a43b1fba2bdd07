//! Whether a page is a wall in front of the page: the site answered, but not with what a reader
//! asked for. A 403 or 429, a bot challenge (Cloudflare's "Just a moment…", DataDome, PerimeterX,
//! an hCaptcha or reCAPTCHA wall) or an empty JavaScript shell is `blocked`: asking again will not
//! help, so the host's breaker opens and a premium reader may try.
//!
//! Challenge markers count only on a page with little readable text, so an article that mentions
//! a CAPTCHA is still an article. The markers are the vendors' own script hosts, element names and
//! headers, matched on the decoded page, lower-case.

use reqwest::header::HeaderMap;
use serde::Serialize;

/// Why a page counts as blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Wall {
    /// 403 Forbidden.
    Forbidden,
    /// 429 Too Many Requests.
    RateLimited,
    /// Cloudflare's managed challenge or its "Just a moment…" interstitial.
    Cloudflare,
    /// DataDome's device check.
    Datadome,
    /// PerimeterX (HUMAN) "Press & Hold".
    Perimeterx,
    /// An hCaptcha or reCAPTCHA wall.
    Captcha,
    /// A page whose content only JavaScript would draw: no readable text without a browser.
    JavascriptShell,
}

impl Wall {
    /// The value `explain` shows.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::RateLimited => "rate_limited",
            Self::Cloudflare => "cloudflare",
            Self::Datadome => "datadome",
            Self::Perimeterx => "perimeterx",
            Self::Captcha => "captcha",
            Self::JavascriptShell => "javascript_shell",
        }
    }
}

/// A page with fewer readable words than this may be a wall; more is an article.
const WALL_MAX_WORDS: usize = 150;

/// What a reply tells about a wall, before its page is read: the status and the vendors' headers.
pub(crate) fn by_reply(status: u16, headers: &HeaderMap) -> Option<Wall> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("cf-mitigated").is_some_and(|v| v.eq_ignore_ascii_case("challenge")) {
        return Some(Wall::Cloudflare);
    }
    match status {
        403 if headers.contains_key("x-datadome") => Some(Wall::Datadome),
        403 => Some(Wall::Forbidden),
        429 => Some(Wall::RateLimited),
        _ => None,
    }
}

/// Whether an HTML page (decoded) whose readable text has `words` words is a wall.
pub(crate) fn by_page(html: &str, words: usize) -> Option<Wall> {
    if words >= WALL_MAX_WORDS {
        return None;
    }
    let page = html.to_ascii_lowercase();
    let has = |marker: &str| page.contains(marker);
    if (has("<title>just a moment") || has("cf-chl") || has("/cdn-cgi/challenge-platform/"))
        && (has("cloudflare") || has("cf-"))
    {
        return Some(Wall::Cloudflare);
    }
    if has("captcha-delivery.com") || has("geo.captcha-delivery") || has("datadome") {
        return Some(Wall::Datadome);
    }
    if has("px-captcha") || has("_pxcaptcha") || has("perimeterx") || has("press &amp; hold") {
        return Some(Wall::Perimeterx);
    }
    if has("hcaptcha.com/1/api.js")
        || has("h-captcha")
        || has("google.com/recaptcha")
        || has("g-recaptcha")
        || has("recaptcha/api.js")
    {
        return Some(Wall::Captcha);
    }
    let asks_for_script = has("<noscript")
        && (has("enable javascript") || has("javascript is required") || has("needs javascript"));
    let shell = words < 10 && (asks_for_script || page.matches("<script").count() >= 3);
    shell.then_some(Wall::JavascriptShell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn statuses_and_vendor_headers_say_blocked_before_the_page_is_read() {
        let mut headers = HeaderMap::new();
        assert_eq!(by_reply(200, &headers), None);
        assert_eq!(by_reply(403, &headers), Some(Wall::Forbidden));
        assert_eq!(by_reply(429, &headers), Some(Wall::RateLimited));
        assert_eq!(by_reply(404, &headers), None);
        headers.insert("x-datadome", HeaderValue::from_static("protected"));
        assert_eq!(by_reply(403, &headers), Some(Wall::Datadome));
        headers.insert("cf-mitigated", HeaderValue::from_static("challenge"));
        assert_eq!(by_reply(200, &headers), Some(Wall::Cloudflare));
    }

    #[test]
    fn challenge_pages_are_walls_and_articles_about_captchas_are_not() {
        let cloudflare = r#"<!DOCTYPE html><html><head><title>Just a moment...</title></head>
            <body><script src="/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1"></script>
            <noscript>Enable JavaScript and cookies to continue</noscript><span>Cloudflare</span></body></html>"#;
        assert_eq!(by_page(cloudflare, 6), Some(Wall::Cloudflare));
        let datadome = r#"<html><body><script src="https://ct.captcha-delivery.com/c.js"></script></body></html>"#;
        assert_eq!(by_page(datadome, 0), Some(Wall::Datadome));
        let px = r#"<html><body><div id="px-captcha"></div><p>Press &amp; Hold to confirm you are a human</p></body></html>"#;
        assert_eq!(by_page(px, 8), Some(Wall::Perimeterx));
        let hcaptcha = r#"<html><body><script src="https://hcaptcha.com/1/api.js"></script><div class="h-captcha"></div></body></html>"#;
        assert_eq!(by_page(hcaptcha, 0), Some(Wall::Captcha));
        let recaptcha = r#"<html><body><form><div class="g-recaptcha" data-sitekey="x"></div></form></body></html>"#;
        assert_eq!(by_page(recaptcha, 3), Some(Wall::Captcha));
        let article = recaptcha.replace("</form>", "</form><p>An article about CAPTCHAs.</p>");
        assert_eq!(by_page(&article, 900), None);
    }

    #[test]
    fn an_empty_javascript_shell_is_a_wall_and_a_short_page_is_not() {
        let shell = r#"<html><head><script src="/a.js"></script><script src="/b.js"></script>
            <script>window.__DATA__={}</script></head><body><div id="root"></div></body></html>"#;
        assert_eq!(by_page(shell, 0), Some(Wall::JavascriptShell));
        let noscript = r#"<html><body><noscript>You need to enable JavaScript to run this app.</noscript><div id="app"></div></body></html>"#;
        assert_eq!(by_page(noscript, 0), Some(Wall::JavascriptShell));
        let short =
            "<html><body><h1>Hello</h1><p>A short page with a few words on it.</p></body></html>";
        assert_eq!(by_page(short, 10), None);
    }
}
