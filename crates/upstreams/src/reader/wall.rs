//! Whether a page is a wall in front of the page: the site answered, but not with what a reader
//! asked for. A 403 or 429, a bot challenge (Cloudflare's "Just a moment…", DataDome, PerimeterX,
//! an hCaptcha or reCAPTCHA wall) or an empty JavaScript shell is `blocked`: asking again will not
//! help, so the host's breaker opens and a premium reader may try.
//!
//! A page is judged on what a reader sees of it ([`seen`]): the text of its body a reader that
//! runs no script sees (`noscript` included, scripts, styles and drawings not), and the challenge
//! elements it shows. A page with a readable text is read, whatever it embeds or names: a page
//! whose extracted text or whose text seen has [`WALL_MAX_WORDS`] words or more is never a wall.
//! On a shorter page a vendor counts only by the elements that draw its challenge (Cloudflare's
//! challenge script, options or form; DataDome's captcha frame or script; PerimeterX's
//! `#px-captcha` or "Press & Hold"; a CAPTCHA widget on its own or in a form that asks for nothing
//! typed), never by its name in a script, a stylesheet, page data or a widget in a comment,
//! sign-up or log-in form. A page is a JavaScript shell when it shows fewer than
//! [`SHELL_MAX_WORDS`] words, a notice asking for JavaScript aside, and asks for or loads scripts.
//!
//! Measured on the two corpora beside the repository, where no page is a wall (`wall::corpus`):
//! judged on the extracted word count and on the page's raw text, 46 of the 1,497 pages of
//! `wcxb-dev` were refused (22 forums, 12 products, 6 collections, 5 listings, 1 article: 21
//! JavaScript shells, mostly Discourse threads served in `noscript`; 14 CAPTCHAs, 6 Cloudflare, 3
//! PerimeterX, 2 DataDome, all of them sensors, widgets in forms or names in scripts), and none of
//! the 130 of `readability`. Judged on what a reader sees, none is a wall on either corpus, even
//! with no extracted text at all; 2 pages of `wcxb-dev` are JavaScript shells, and rightly: the
//! corpus records them as drawn by script alone, with no main text.

mod seen;

use reqwest::header::HeaderMap;
use serde::Serialize;

/// Why a page counts as blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wall {
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
    pub fn as_str(self) -> &'static str {
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

/// A page with fewer readable words than this (extracted, or seen) may be a wall; more is read.
const WALL_MAX_WORDS: usize = 150;
/// A page that shows fewer words than this (a notice asking for JavaScript aside) and loads
/// scripts is an empty shell.
const SHELL_MAX_WORDS: usize = 10;
/// Scripts that make a page without text a shell, when it does not say it needs JavaScript.
const SHELL_MIN_SCRIPTS: usize = 3;

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

/// Whether an HTML page (decoded) whose extracted text has `words` words is a wall: judged on
/// what a reader sees of it, challenges counting only on a page that shows little else.
pub(crate) fn by_page(html: &str, words: usize) -> Option<Wall> {
    if words >= WALL_MAX_WORDS {
        return None;
    }
    let seen = seen::look(html);
    if seen.words >= WALL_MAX_WORDS {
        return None;
    }
    let challenges = seen.challenges;
    let cloudflare_title = (seen.title.starts_with("just a moment") && seen.names_cloudflare)
        || seen.title.starts_with("attention required! | cloudflare");
    if challenges.cloudflare || cloudflare_title {
        return Some(Wall::Cloudflare);
    }
    if challenges.datadome {
        return Some(Wall::Datadome);
    }
    if challenges.perimeterx {
        return Some(Wall::Perimeterx);
    }
    if challenges.captcha {
        return Some(Wall::Captcha);
    }
    let content_words = words.max(seen.words.saturating_sub(seen.notice_words));
    let shell = content_words < SHELL_MAX_WORDS
        && (seen.asks_for_script || seen.scripts >= SHELL_MIN_SCRIPTS);
    shell.then_some(Wall::JavascriptShell)
}

#[cfg(test)]
pub(super) mod corpus;
#[cfg(test)]
mod tests;
