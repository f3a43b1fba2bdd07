//! A planned `/search` answer ([`Reply`]) and how it goes on the wire, dressed as whoever would send it:
//! SearXNG's JSON and HTML, Werkzeug's error pages, its limiter's plain-text 429, the reverse proxy's 502–504
//! pages, a `!!bang` redirect, and the broken bodies of the failure modes (garbage, over 8 MiB chunked, cut
//! off before the declared length).

use std::io;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{json, Value};

use super::HUGE_BODY_BYTES;

/// A rendered `/search` answer.
pub(super) enum Reply {
    /// A JSON body (SearXNG's answer or its `{"error": …}`), with `Server-Timing` for answers.
    Json {
        /// The status.
        status: StatusCode,
        /// The body.
        body: Value,
        /// The `Server-Timing` header, if any.
        server_timing: Option<String>,
    },
    /// An HTML page.
    Html {
        /// The status.
        status: StatusCode,
        /// The page.
        body: String,
    },
    /// A plain-text body (the limiter's 429).
    PlainText {
        /// The status.
        status: StatusCode,
        /// The text.
        body: &'static str,
    },
    /// 302 to an external bang's site.
    Redirect {
        /// Where to.
        location: String,
    },
    /// 200, `application/json`, not JSON.
    Garbage,
    /// This answer padded over [`HUGE_BODY_BYTES`] and sent chunked.
    Huge(Value),
    /// This answer cut off halfway, with the full length declared.
    Truncated(Value),
}

impl Reply {
    /// SearXNG's `{"error": message}`.
    pub(super) fn error(status: StatusCode, message: &str) -> Self {
        Reply::Json {
            status,
            body: json!({"error": message}),
            server_timing: None,
        }
    }

    /// What answers a whole-instance failure with this status, dressed as whoever would send it.
    pub(super) fn failure(status: u16) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        match status.as_u16() {
            500 => Reply::error(status, "search error"),
            429 => Reply::PlainText {
                status,
                body: "Too Many Requests",
            },
            502..=504 => {
                let reason = status.canonical_reason().unwrap_or("Error");
                Reply::Html {
                    status,
                    body: format!(
                        "<html>\r\n<head><title>{code} {reason}</title></head>\r\n<body>\r\n<center><h1>{code} \
                         {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
                        code = status.as_u16()
                    ),
                }
            }
            _ => Reply::error(
                status,
                &status.canonical_reason().unwrap_or("error").to_lowercase(),
            ),
        }
    }

    /// A 200 JSON answer padded over [`HUGE_BODY_BYTES`]; anything else unchanged.
    pub(super) fn into_huge(self) -> Self {
        match self {
            Reply::Json {
                status: StatusCode::OK,
                body,
                ..
            } => Reply::Huge(body),
            other => other,
        }
    }

    /// A 200 JSON answer cut off halfway; anything else unchanged.
    pub(super) fn into_truncated(self) -> Self {
        match self {
            Reply::Json {
                status: StatusCode::OK,
                body,
                ..
            } => Reply::Truncated(body),
            other => other,
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Json {
                status,
                body,
                server_timing,
            } => {
                let mut response = (status, json_headers(), body.to_string()).into_response();
                if let Some(timing) =
                    server_timing.and_then(|timing| HeaderValue::from_str(&timing).ok())
                {
                    response.headers_mut().insert("server-timing", timing);
                }
                response
            }
            Reply::Html { status, body } => html(status, body),
            Reply::PlainText { status, body } => (status, body).into_response(),
            Reply::Redirect { location } => {
                let escaped = escape_html(&location);
                let body = format!(
                    "<!doctype html>\n<html lang=en>\n<title>Redirecting...</title>\n<h1>Redirecting...</h1>\n<p>You \
                     should be redirected automatically to the target URL: <a href=\"{escaped}\">{escaped}</a>. If \
                     not, click the link.\n"
                );
                let mut response = html(StatusCode::FOUND, body);
                if let Ok(location) = HeaderValue::from_str(&location) {
                    response.headers_mut().insert(header::LOCATION, location);
                }
                response
            }
            Reply::Garbage => (
                StatusCode::OK,
                json_headers(),
                "<html><body>upstream sent something that is not JSON\u{0}\u{1}{{{",
            )
                .into_response(),
            Reply::Huge(mut body) => {
                if let Value::Object(object) = &mut body {
                    object.insert("sim_padding".into(), json!("x".repeat(HUGE_BODY_BYTES)));
                }
                let bytes = Bytes::from(body.to_string());
                let chunk = 64 * 1024;
                let chunks: Vec<Result<Bytes, io::Error>> = (0..bytes.len())
                    .step_by(chunk)
                    .map(|start| Ok(bytes.slice(start..(start + chunk).min(bytes.len()))))
                    .collect();
                (
                    StatusCode::OK,
                    json_headers(),
                    Body::from_stream(futures::stream::iter(chunks)),
                )
                    .into_response()
            }
            Reply::Truncated(body) => {
                let full = Bytes::from(body.to_string());
                let declared = full.len();
                let sent = full.slice(..declared / 2);
                let body = futures::stream::iter([Ok(sent)]).chain(futures::stream::once(async {
                    // Let the connection flush what was sent before the failure closes it.
                    tokio::task::yield_now().await;
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "simulated truncation",
                    ))
                }));
                let mut headers = json_headers();
                headers.insert(header::CONTENT_LENGTH, HeaderValue::from(declared));
                (StatusCode::OK, headers, Body::from_stream(body)).into_response()
            }
        }
    }
}

fn json_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers
}

/// An HTML response.
pub(super) fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

/// A minimal HTML document.
pub(super) fn html_page(title: &str, body: &str) -> String {
    format!("<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>{title}</title></head>\n<body>\n{body}</body>\n</html>\n")
}

/// Text made safe inside HTML elements and attribute values, as Jinja escapes it.
pub(super) fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&#34;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Werkzeug's page for `abort(403)`, which SearXNG sends when the format is not in `search.formats`.
pub(super) const FORBIDDEN_PAGE: &str = "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n<h1>Forbidden</h1>\n<p>You \
                              don&#39;t have the permission to access the requested resource. It is either \
                              read-protected or not readable by the server.</p>\n";

/// Werkzeug's 404 page.
pub(super) const NOT_FOUND_PAGE: &str = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The \
                              requested URL was not found on the server. If you entered the URL manually please \
                              check your spelling and try again.</p>\n";
