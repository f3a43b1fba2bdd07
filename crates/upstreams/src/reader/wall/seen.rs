//! What a reader without a browser sees of a page, and which challenge elements it shows: one
//! linear pass over the tags, no tree, so any markup is scanned in time proportional to its size.
//!
//! The text seen is the body's text outside `script`, `style`, `template` and `svg`, the text of
//! `noscript` included (a reader runs no script, so it sees what a browser without JavaScript
//! would; forums such as Discourse and Flarum put a whole thread there). A vendor's name in a
//! script, a stylesheet or a JSON blob is no challenge: challenges are recognised by the elements
//! that draw them (a script's or a frame's source, an element's `id` or class, the title, the
//! text), and a CAPTCHA widget inside a form that also asks for something typed (a comment, an
//! e-mail address, a password) is part of that form, not a wall.

use memchr::memchr;

/// Words a `noscript` may have and still be a notice (a thread in one is content).
const NOTICE_MAX_WORDS: usize = 50;

/// The challenges a page shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Challenges {
    /// Cloudflare's challenge: its script, its options, its form, or its title.
    pub(super) cloudflare: bool,
    /// DataDome's captcha, served from `captcha-delivery.com`.
    pub(super) datadome: bool,
    /// PerimeterX's "Press & Hold".
    pub(super) perimeterx: bool,
    /// An hCaptcha, reCAPTCHA or Turnstile widget that is not part of a form asking for more.
    pub(super) captcha: bool,
}

/// What a page shows a reader that runs no script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Seen {
    /// Words of the text seen.
    pub(super) words: usize,
    /// Of them, words of `noscript` notices that ask for JavaScript.
    pub(super) notice_words: usize,
    /// Whether a `noscript` asks for JavaScript.
    pub(super) asks_for_script: bool,
    /// `script` elements, inline or not.
    pub(super) scripts: usize,
    /// The first `title`, lower-case.
    pub(super) title: String,
    /// Whether the text seen names Cloudflare ("Performance & security by Cloudflare").
    pub(super) names_cloudflare: bool,
    /// The challenges drawn.
    pub(super) challenges: Challenges,
}

/// Classes that mark a CAPTCHA widget's container.
const WIDGET_CLASSES: &[&str] = &["g-recaptcha", "h-captcha", "cf-turnstile"];
/// Frames a rendered CAPTCHA widget is drawn in.
const WIDGET_FRAMES: &[&str] = &[
    "google.com/recaptcha/api2/anchor",
    "google.com/recaptcha/api/fallback",
    "google.com/recaptcha/enterprise/anchor",
    "recaptcha.net/recaptcha/api2/anchor",
    "hcaptcha.com/captcha/",
    "challenges.cloudflare.com/",
];
/// Element ids of Cloudflare's challenge and block pages.
const CLOUDFLARE_IDS: &[&str] = &[
    "challenge-form",
    "challenge-stage",
    "challenge-running",
    "challenge-body-text",
    "cf-challenge-running",
    "cf-error-details",
];
/// Input types a visitor types into.
const TYPED_INPUTS: &[&str] = &[
    "", "text", "email", "password", "search", "tel", "url", "number",
];

/// A form being scanned: whether it asks for something typed, and whether it holds a widget.
#[derive(Debug, Default)]
struct Form {
    typed: bool,
    widget: bool,
}

/// A `noscript` being scanned.
#[derive(Debug, Default)]
struct Noscript {
    words: usize,
    mentions_script: bool,
}

/// The scan's state.
#[derive(Debug, Default)]
struct Scan {
    seen: Seen,
    /// Depth inside `template` and `svg`, whose text no reader sees.
    hidden: usize,
    noscript: Option<Noscript>,
    form: Option<Form>,
}

/// What `html` shows a reader that runs no script.
pub(super) fn look(html: &str) -> Seen {
    let page = html.to_ascii_lowercase();
    let mut scan = Scan::default();
    let mut at = 0;
    while at < page.len() {
        let Some(lt) = memchr(b'<', &page.as_bytes()[at..]).map(|off| at + off) else {
            scan.text(&page[at..]);
            break;
        };
        scan.text(&page[at..lt]);
        at = scan.markup(&page, lt);
    }
    if let Some(form) = scan.form.take() {
        scan.close_form(form);
    }
    if let Some(noscript) = scan.noscript.take() {
        scan.close_noscript(noscript);
    }
    scan.seen
}

impl Scan {
    /// Text between tags.
    fn text(&mut self, text: &str) {
        if self.hidden > 0 {
            return;
        }
        let words = text.split_whitespace().count();
        self.seen.words += words;
        if let Some(noscript) = &mut self.noscript {
            noscript.words += words;
            noscript.mentions_script |= text.contains("javascript");
        }
        self.seen.names_cloudflare |= text.contains("cloudflare");
        if text.contains("press &amp; hold") || text.contains("press & hold") {
            self.seen.challenges.perimeterx = true;
        }
    }

    /// The markup at `lt` (a `<`): handled, and where the scan goes on.
    fn markup(&mut self, page: &str, lt: usize) -> usize {
        let rest = &page[lt..];
        if rest.starts_with("<!--") {
            return rest.find("-->").map_or(page.len(), |end| lt + end + 3);
        }
        let after = rest.as_bytes().get(1).copied();
        match after {
            Some(b'/') => {
                let (name, _, end) = tag(page, lt + 2);
                self.end_tag(name);
                end
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let (name, attrs, end) = tag(page, lt + 1);
                self.start_tag(page, name, attrs, end)
            }
            Some(b'!' | b'?') => rest.find('>').map_or(page.len(), |end| lt + end + 1),
            _ => {
                self.text("<");
                lt + 1
            }
        }
    }

    /// A start tag whose markup ends at `end`: handled, and where the scan goes on.
    fn start_tag(&mut self, page: &str, name: &str, attrs: &str, end: usize) -> usize {
        let attr = |key: &str| attribute(attrs, key).unwrap_or_default();
        if attr("id") == "px-captcha" {
            self.seen.challenges.perimeterx = true;
        }
        if CLOUDFLARE_IDS.contains(&attr("id")) {
            self.seen.challenges.cloudflare = true;
        }
        if attr("class")
            .split_ascii_whitespace()
            .any(|class| WIDGET_CLASSES.contains(&class))
        {
            self.widget();
        }
        let self_closing = attrs.trim_end().ends_with('/');
        match name {
            "script" | "style" | "title" | "textarea" => {
                let close = format!("</{name}");
                let body_end = page[end..].find(&close).map_or(page.len(), |at| end + at);
                let body = &page[end..body_end];
                match name {
                    "script" => self.script(attr("src"), body),
                    "title" if self.seen.title.is_empty() => {
                        self.seen.title = body.trim().to_owned();
                    }
                    "textarea" => {
                        if !attr("name").ends_with("-response") {
                            self.typed();
                        }
                        self.text(body);
                    }
                    _ => {}
                }
                return page[body_end..]
                    .find('>')
                    .map_or(page.len(), |at| body_end + at + 1);
            }
            "template" | "svg" if !self_closing => self.hidden += 1,
            "noscript" if self.noscript.is_none() => self.noscript = Some(Noscript::default()),
            "form" if self.form.is_none() => self.form = Some(Form::default()),
            "input" if TYPED_INPUTS.contains(&attr("type")) => self.typed(),
            "select" => self.typed(),
            "iframe" if vendor_frame(attr("src")) => self.seen.challenges.datadome = true,
            "iframe"
                if WIDGET_FRAMES
                    .iter()
                    .any(|frame| attr("src").contains(frame)) =>
            {
                self.widget();
            }
            _ => {}
        }
        end
    }

    fn end_tag(&mut self, name: &str) {
        match name {
            "template" | "svg" => self.hidden = self.hidden.saturating_sub(1),
            "noscript" => {
                if let Some(noscript) = self.noscript.take() {
                    self.close_noscript(noscript);
                }
            }
            "form" => {
                if let Some(form) = self.form.take() {
                    self.close_form(form);
                }
            }
            _ => {}
        }
    }

    /// A script: counted, and its source or (inline) its text checked for a challenge.
    fn script(&mut self, src: &str, body: &str) {
        self.seen.scripts += 1;
        let challenges = &mut self.seen.challenges;
        let orchestrated =
            src.contains("/cdn-cgi/challenge-platform/") && src.contains("/orchestrate/");
        if orchestrated || (src.is_empty() && body.contains("_cf_chl_opt")) {
            challenges.cloudflare = true;
        }
        if vendor_frame(src) {
            challenges.datadome = true;
        }
        if src.contains("captcha.px-cdn.net") || src.contains("captcha.px-cloud.net") {
            challenges.perimeterx = true;
        }
    }

    /// A CAPTCHA widget: a wall on its own, part of the form when the form asks for more.
    fn widget(&mut self) {
        match &mut self.form {
            Some(form) => form.widget = true,
            None => self.seen.challenges.captcha = true,
        }
    }

    /// A field a visitor types into.
    fn typed(&mut self) {
        if let Some(form) = &mut self.form {
            form.typed = true;
        }
    }

    fn close_form(&mut self, form: Form) {
        if form.widget && !form.typed {
            self.seen.challenges.captcha = true;
        }
    }

    fn close_noscript(&mut self, noscript: Noscript) {
        if noscript.mentions_script && noscript.words <= NOTICE_MAX_WORDS {
            self.seen.asks_for_script = true;
            self.seen.notice_words += noscript.words;
        }
    }
}

/// DataDome's captcha, in a frame or a script.
fn vendor_frame(src: &str) -> bool {
    src.contains("captcha-delivery.com")
}

/// The tag whose name starts at `from`: its name, its attributes' text, and where it ends (after
/// its `>`, quotes respected).
fn tag(page: &str, from: usize) -> (&str, &str, usize) {
    let bytes = page.as_bytes();
    let name_end = bytes[from..]
        .iter()
        .position(|&c| c.is_ascii_whitespace() || c == b'>' || c == b'/')
        .map_or(page.len(), |at| from + at);
    let mut quote = None;
    let mut at = name_end;
    while at < bytes.len() {
        match (quote, bytes[at]) {
            (None, b'>') => break,
            (None, q @ (b'"' | b'\'')) => quote = Some(q),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        at += 1;
    }
    let attrs_end = at.min(page.len());
    (
        &page[from..name_end],
        &page[name_end..attrs_end],
        (at + 1).min(page.len()),
    )
}

/// The value of attribute `key` in a tag's attribute text (lower-case already).
fn attribute<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let bytes = attrs.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let from = at;
        while at < bytes.len() && (bytes[at].is_ascii_whitespace() || bytes[at] == b'/') {
            at += 1;
        }
        let name_start = at;
        while at < bytes.len() && !matches!(bytes[at], b'=' | b'>' | b'/') {
            if bytes[at].is_ascii_whitespace() {
                break;
            }
            at += 1;
        }
        let name = &attrs[name_start..at];
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        let mut value = "";
        if bytes.get(at) == Some(&b'=') {
            at += 1;
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            match bytes.get(at) {
                Some(&q @ (b'"' | b'\'')) => {
                    let start = at + 1;
                    let end = memchr(q, &bytes[start..]).map_or(bytes.len(), |off| start + off);
                    value = &attrs[start..end];
                    at = end + 1;
                }
                _ => {
                    let start = at;
                    while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
                        at += 1;
                    }
                    value = &attrs[start..at];
                }
            }
        }
        if name == key {
            return Some(value.trim());
        }
        if at == from {
            // A stray `>` or `=`: one ASCII byte, stepped over.
            at += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_text_seen_leaves_out_scripts_styles_and_drawings_and_keeps_noscript() {
        let page = r#"<html><head><title> Ten Words </title><style>p { color: red }</style></head>
            <body><p>one two three</p><script>var four = "five six";</script><svg><text>seven</text></svg>
            <template><p>eight</p></template><noscript><p>four five</p></noscript><!-- six --></body></html>"#;
        let seen = look(page);
        assert_eq!(seen.words, 5);
        assert_eq!(seen.title, "ten words");
        assert_eq!(seen.scripts, 1);
        assert!(!seen.asks_for_script);
    }

    #[test]
    fn a_short_noscript_asking_for_javascript_is_a_notice_and_a_long_one_is_content() {
        let notice = look("<noscript>You need to enable JavaScript to run this app.</noscript>");
        assert!(notice.asks_for_script);
        assert_eq!((notice.words, notice.notice_words), (9, 9));
        let thread = format!(
            "<noscript><p>JavaScript questions.</p>{}</noscript>",
            "<p>A post of a thread.</p>".repeat(20)
        );
        let seen = look(&thread);
        assert!(!seen.asks_for_script);
        assert_eq!((seen.words, seen.notice_words), (102, 0));
    }

    #[test]
    fn vendor_names_in_scripts_styles_attributes_and_data_are_no_challenge() {
        let page = r#"<html><head>
            <style>.ifh-captcha { color: red } .g-recaptcha { display: none }</style>
            <script src="https://js.datadome.co/tags.js"></script>
            <script>window._pxAppId = 'PX1'; var f = ['g-recaptcha-response', 'h-captcha-response'];
              var el = '<div id="px-captcha"></div>'; var s = '/cdn-cgi/challenge-platform/h/g/orchestrate/x';</script>
            <script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>
            <script src="https://www.google.com/recaptcha/api.js?render=6Lc"></script>
            <meta http-equiv="Content-Security-Policy" content="script-src *.perimeterx.net *.captcha-delivery.com">
            </head><body><div class="g-recaptcha-etsy"></div><p data-x="px-captcha">datadome</p></body></html>"#;
        assert_eq!(look(page).challenges, Challenges::default());
    }

    #[test]
    fn vendor_challenges_are_told_by_the_elements_that_draw_them() {
        let cloudflare = look(r#"<script>window._cf_chl_opt={cType:'managed'};</script>"#);
        assert!(cloudflare.challenges.cloudflare);
        let orchestrated = look(
            r#"<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=1"></script>"#,
        );
        assert!(orchestrated.challenges.cloudflare);
        assert!(
            look(r#"<form id="challenge-form" action="/"></form>"#)
                .challenges
                .cloudflare
        );
        let datadome =
            look(r#"<iframe src="https://geo.captcha-delivery.com/captcha/?cid=1"></iframe>"#);
        assert!(datadome.challenges.datadome);
        assert!(look(r#"<div id=PX-CAPTCHA></div>"#).challenges.perimeterx);
        assert!(
            look("<p>Press &amp; Hold to confirm</p>")
                .challenges
                .perimeterx
        );
    }

    #[test]
    fn a_captcha_widget_in_a_form_that_asks_for_something_typed_is_part_of_the_form() {
        let comment = r#"<form action="/comment"><textarea name="comment"></textarea>
            <div class="g-recaptcha" data-sitekey="k"></div><button>Post</button></form>"#;
        assert!(!look(comment).challenges.captcha);
        let signup = r#"<form><div class='h-captcha'></div><input type=email name=e></form>"#;
        assert!(!look(signup).challenges.captcha);
        let wall = r#"<form action="/verify"><input type="hidden" name="r" value="/">
            <textarea name="g-recaptcha-response"></textarea><div class="x g-recaptcha"></div>
            <input type="submit" value="Continue"></form>"#;
        assert!(look(wall).challenges.captcha);
        assert!(
            look(r#"<div class="cf-turnstile"></div>"#)
                .challenges
                .captcha
        );
        let unclosed = r#"<form><div class="g-recaptcha"></div>"#;
        assert!(look(unclosed).challenges.captcha);
    }

    #[test]
    fn attributes_are_read_quoted_unquoted_and_bare() {
        let attrs = r#" hidden id=main class = "a b" data-x='1 > 2' src=/x.js"#;
        assert_eq!(attribute(attrs, "id"), Some("main"));
        assert_eq!(attribute(attrs, "class"), Some("a b"));
        assert_eq!(attribute(attrs, "data-x"), Some("1 > 2"));
        assert_eq!(attribute(attrs, "src"), Some("/x.js"));
        assert_eq!(attribute(attrs, "hidden"), Some(""));
        assert_eq!(attribute(attrs, "type"), None);
        let (name, attrs, end) = tag(r#"<a title="x>y" href=/>after"#, 1);
        assert_eq!(
            (name, attribute(attrs, "title"), end),
            ("a", Some("x>y"), 22)
        );
    }

    proptest! {
        #[test]
        fn any_markup_is_scanned_to_its_end_without_a_panic(
            page in r#"[<>/="'!\-a-z é€\n]{0,300}"#,
        ) {
            let seen = look(&page);
            prop_assert!(seen.notice_words <= seen.words);
        }

        #[test]
        fn tags_made_of_any_text_are_scanned_without_a_panic(
            name in "(script|style|title|textarea|form|input|noscript|svg|iframe|div)",
            attrs in r#"[ a-z="'=/é-]{0,60}"#,
            text in r#"[<>/a-z é]{0,60}"#,
        ) {
            let page = format!("<{name}{attrs}>{text}</{name}><{name}{attrs}>{text}");
            look(&page);
        }
    }
}
