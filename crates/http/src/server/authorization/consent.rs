//! The consent page: which application asks, where it will be sent back, and a form where the
//! person signs in with their gateway API key and allows or declines. Every text the page shows
//! comes from the client (its name, its redirect URI) or the request, so every one is escaped;
//! the page runs no script, cannot be framed, is never cached, and sends no referrer.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

use crate::oauth::Consent;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}\
h1{font-size:1.3rem}code{background:#f2f2f2;padding:0 .2rem;word-break:break-all}\
label{display:block;margin:1rem 0 .3rem}input[type=password]{width:100%;padding:.4rem;font-size:1rem}\
.buttons{margin-top:1rem;display:flex;gap:.5rem}button{padding:.4rem 1rem;font-size:1rem}\
.error{color:#a00;font-weight:600}";

/// `text` as HTML text or an attribute value.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page asking the person to allow `consent`, with `error` said above the form.
pub(crate) fn page(consent: &Consent, error: Option<&str>, status: StatusCode) -> Response {
    let request = &consent.request;
    let name = consent
        .client
        .client_name
        .as_deref()
        .unwrap_or("An application");
    let mut hidden = String::new();
    let fields = [
        ("response_type", Some(request.response_type.as_str())),
        ("client_id", Some(request.client_id.as_str())),
        ("redirect_uri", Some(consent.redirect_uri.as_str())),
        ("state", request.state.as_deref()),
        ("code_challenge", request.code_challenge.as_deref()),
        (
            "code_challenge_method",
            request.code_challenge_method.as_deref(),
        ),
        ("scope", request.scope.as_deref()),
        ("resource", request.resource.as_deref()),
    ];
    for (field, value) in fields {
        if let Some(value) = value {
            hidden.push_str(&format!(
                "<input type=\"hidden\" name=\"{field}\" value=\"{}\">",
                escape(value)
            ));
        }
    }
    let error = error.map_or_else(String::new, |e| {
        format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e))
    });
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>Allow access to searxng-gateway</title><style>{STYLE}</style></head><body>\
<h1>Allow <span id=\"client-name\">{name}</span> to use this gateway?</h1>\
<p>It will call the gateway's MCP tools (web search, reading pages) as you, within your key's limits and budget. \
You will be sent back to <code id=\"redirect\">{redirect}</code>.</p>\
{error}<form method=\"post\" action=\"authorize\">{hidden}\
<label for=\"api_key\">Your gateway API key</label>\
<input type=\"password\" id=\"api_key\" name=\"api_key\" autocomplete=\"current-password\" autofocus>\
<div class=\"buttons\"><button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\">Decline</button></div></form>\
<p><small>The key is checked and never shown to the application; removing it from the gateway's keys file signs the application out.</small></p>\
</body></html>",
        name = escape(name),
        redirect = escape(&consent.redirect_uri),
    );
    guarded(status, body)
}

/// A page saying what is wrong with the request, sent to nobody else.
pub(crate) fn problem(why: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Cannot authorize</title>\
<style>{STYLE}</style></head><body><h1>This request cannot be authorized</h1><p class=\"error\">{}</p></body></html>",
        escape(why)
    );
    guarded(StatusCode::BAD_REQUEST, body)
}

fn guarded(status: StatusCode, body: String) -> Response {
    let mut response = (status, Html(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_a_client_name_is_text() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"co\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;co&quot;"
        );
    }
}
