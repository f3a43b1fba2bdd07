//! A web site on a loopback port, for the gateway's page reads: pages tests put at paths, each
//! served the way real sites misbehave — a redirect chain, a 403, a bot challenge, a trickle, a
//! body larger than any reader should hold, a page in a charset its header does not name — and a
//! count of the requests each path got, so a test can prove a page was (or was never) contacted.
//!
//! [`pdf_with_text`] makes a real PDF (a page of text in a standard font) for the PDF read.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::transport;

/// How a path answers.
#[derive(Debug, Clone)]
pub enum Page {
    /// This status, content type and body, plus these headers.
    Answer {
        /// The status.
        status: u16,
        /// `Content-Type` (`None`: no header).
        content_type: Option<String>,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// A redirect (301, 302, 307, 308) to `location` (absolute, or relative to the site).
    Redirect {
        /// The status.
        status: u16,
        /// `Location`.
        location: String,
    },
    /// 200 with `body` sent one chunk every `every`.
    Trickle {
        /// `Content-Type`.
        content_type: String,
        /// The body.
        body: Vec<u8>,
        /// Bytes per chunk.
        chunk: usize,
        /// The pause between chunks.
        every: Duration,
    },
    /// 200 with `len` bytes of HTML, streamed without a declared length.
    Huge {
        /// How many bytes.
        len: usize,
    },
    /// `page` to a request whose `Authorization` is exactly `authorization`; 401 to any other.
    BasicAuth {
        /// The whole header value expected (`Basic …`).
        authorization: String,
        /// What such a request gets.
        page: Box<Page>,
    },
}

impl Page {
    /// `page` behind HTTP basic authentication as `user` with `password`: a request without those
    /// credentials gets 401 with a login prompt.
    pub fn basic_auth(user: &str, password: &str, page: Page) -> Self {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        Self::BasicAuth {
            authorization: format!("Basic {token}"),
            page: Box::new(page),
        }
    }

    /// 200 with HTML (UTF-8).
    pub fn html(body: impl Into<String>) -> Self {
        Self::ok("text/html; charset=utf-8", body.into().into_bytes())
    }

    /// 200 with this content type and body.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::Answer {
            status: 200,
            content_type: Some(content_type.to_owned()),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// This status with an HTML body.
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Self::Answer {
            status,
            content_type: Some("text/html; charset=utf-8".to_owned()),
            headers: Vec::new(),
            body: body.into().into_bytes(),
        }
    }

    /// A 302 to `location`.
    pub fn redirect(location: impl Into<String>) -> Self {
        Self::Redirect {
            status: 302,
            location: location.into(),
        }
    }

    /// Cloudflare's managed challenge, as it answers a client it wants to check: 403, the
    /// `cf-mitigated: challenge` header, the "Just a moment…" page.
    pub fn cloudflare_challenge() -> Self {
        Self::Answer {
            status: 403,
            content_type: Some("text/html; charset=UTF-8".to_owned()),
            headers: vec![
                ("cf-mitigated".to_owned(), "challenge".to_owned()),
                ("server".to_owned(), "cloudflare".to_owned()),
            ],
            body: CLOUDFLARE_PAGE.as_bytes().to_vec(),
        }
    }

    /// A 200 page that is only a script shell (a single-page app without server rendering).
    pub fn javascript_shell() -> Self {
        Self::html(
            "<!DOCTYPE html><html><head><title>App</title><script src=\"/static/runtime.js\"></script>\
             <script src=\"/static/vendor.js\"></script><script src=\"/static/main.js\"></script></head>\
             <body><noscript>You need to enable JavaScript to run this app.</noscript><div id=\"root\"></div></body></html>",
        )
    }
}

/// Cloudflare's interstitial, as it serves it.
const CLOUDFLARE_PAGE: &str = "<!DOCTYPE html><html lang=\"en-US\"><head><title>Just a moment...</title>\
<meta http-equiv=\"refresh\" content=\"390\"></head><body><div class=\"main-wrapper\" role=\"main\">\
<div class=\"main-content\"><noscript><div class=\"h2\">Enable JavaScript and cookies to continue</div></noscript>\
</div></div><script>(function(){window._cf_chl_opt={cvId: '3',cZone: 'example.org'};\
var a=document.createElement('script');a.src='/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=8';\
document.getElementsByTagName('head')[0].appendChild(a);}());</script></body></html>";

/// A running site. Dropping it stops the server.
pub struct SimulatedSite {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

struct Shared {
    released: watch::Receiver<bool>,
    state: Mutex<SiteState>,
}

#[derive(Default)]
struct SiteState {
    pages: HashMap<String, Page>,
    /// What a path without a page of its own gets (`None`: 404).
    default: Option<Page>,
    hits: HashMap<String, usize>,
    user_agents: Vec<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SiteState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SimulatedSite {
    /// An empty site (every path 404) on 127.0.0.1, port chosen by the kernel.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// An empty site on `addr` (port 0: chosen by the kernel). Another loopback address
    /// (`127.0.0.2`, … — all of 127.0.0.0/8 is loopback on Linux) is another host to a reader,
    /// with its own host breaker.
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, released) = watch::channel(false);
        let shared = Arc::new(Shared {
            released: released.clone(),
            state: Mutex::new(SiteState::default()),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = transport::spawn(
            listener,
            app,
            || None,
            released,
            transport::Lifetimes::default(),
        );
        Ok(Self {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// `http://IP:PORT` (no trailing slash).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The site's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The absolute URL of `path` (`/a/b`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// Serves `page` at `path` (the path without its query string).
    pub fn set(&self, path: &str, page: Page) {
        self.shared.lock().pages.insert(path.to_owned(), page);
    }

    /// Serves `page` at every path that has none of its own (instead of 404).
    pub fn set_default(&self, page: Page) {
        self.shared.lock().default = Some(page);
    }

    /// Requests `path` got.
    pub fn hits(&self, path: &str) -> usize {
        self.shared.lock().hits.get(path).copied().unwrap_or(0)
    }

    /// Requests the site got in all.
    pub fn total_hits(&self) -> usize {
        self.shared.lock().hits.values().sum()
    }

    /// The `User-Agent` of every request, in order.
    pub fn user_agents(&self) -> Vec<String> {
        self.shared.lock().user_agents.clone()
    }
}

impl Drop for SimulatedSite {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path().to_owned();
    let page = {
        let mut state = shared.lock();
        *state.hits.entry(path.clone()).or_default() += 1;
        let agent = headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        state.user_agents.push(agent);
        state.pages.get(&path).or(state.default.as_ref()).cloned()
    };
    let Some(mut page) = page else {
        return (StatusCode::NOT_FOUND, "<html><body>Not found</body></html>").into_response();
    };
    if let Page::BasicAuth {
        authorization,
        page: inner,
    } = page
    {
        let given = headers.get("authorization").and_then(|v| v.to_str().ok());
        if given != Some(authorization.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                [("www-authenticate", "Basic realm=\"private\"")],
                "<html><body>Log in to read this page</body></html>",
            )
                .into_response();
        }
        page = *inner;
    }
    match page {
        Page::Answer {
            status,
            content_type,
            headers,
            body,
        } => {
            let mut response = Response::new(Body::from(body));
            *response.status_mut() =
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let map = response.headers_mut();
            if let Some(value) = content_type.and_then(|ct| HeaderValue::from_str(&ct).ok()) {
                map.insert("content-type", value);
            }
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&value),
                ) {
                    map.append(name, value);
                }
            }
            response
        }
        Page::Redirect { status, location } => {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::FOUND);
            if let Ok(value) = HeaderValue::from_str(&location) {
                response.headers_mut().insert("location", value);
            }
            response
        }
        Page::Trickle {
            content_type,
            body,
            chunk,
            every,
        } => {
            let released = shared.released.clone();
            let chunks: Vec<Bytes> = body
                .chunks(chunk.max(1))
                .map(Bytes::copy_from_slice)
                .collect();
            let stream = futures::stream::unfold(
                (chunks.into_iter(), released, true),
                move |(mut chunks, mut released, first)| async move {
                    if !first {
                        tokio::select! {
                            () = tokio::time::sleep(every) => {}
                            _ = released.wait_for(|r| *r) => return None,
                        }
                    }
                    let next = chunks.next()?;
                    Some((Ok::<_, std::io::Error>(next), (chunks, released, false)))
                },
            );
            let mut response = Response::new(Body::from_stream(stream));
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert("content-type", value);
            }
            response
        }
        Page::Huge { len } => {
            const CHUNK: usize = 64 * 1024;
            let block = Bytes::from(
                "<p>lorem ipsum dolor sit amet</p>"
                    .repeat(CHUNK / 33 + 1)
                    .into_bytes()
                    .into_iter()
                    .take(CHUNK)
                    .collect::<Vec<u8>>(),
            );
            let count = len.div_ceil(CHUNK);
            let stream = futures::stream::iter(
                (0..count).map(move |_| Ok::<_, std::io::Error>(block.clone())),
            );
            let mut response = Response::new(Body::from_stream(stream));
            response
                .headers_mut()
                .insert("content-type", HeaderValue::from_static("text/html"));
            response
        }
        // A login behind a login: the inner one is never reached.
        Page::BasicAuth { .. } => StatusCode::UNAUTHORIZED.into_response(),
    }
}

/// A one-page PDF whose page shows `text` (ASCII) in Helvetica: what a real PDF writer produces,
/// with a cross-reference table the parser can follow.
pub fn pdf_with_text(text: &str) -> Vec<u8> {
    pdf_with_pages(&[vec![text.to_owned()]])
}

/// A PDF of `pages`, each page showing its lines (ASCII) in Helvetica, one under the other.
pub fn pdf_with_pages(pages: &[Vec<String>]) -> Vec<u8> {
    let escape = |text: &str| -> String {
        text.chars()
            .filter(char::is_ascii)
            .flat_map(|c| match c {
                '(' | ')' | '\\' => vec!['\\', c],
                _ => vec![c],
            })
            .collect()
    };
    // Objects: 1 catalog, 2 page tree, 3 font, then a page and its content per page.
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", 4 + 2 * i))
        .collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_owned(),
    ];
    for (i, lines) in pages.iter().enumerate() {
        let mut content = String::from("BT /F1 12 Tf 72 720 Td 14 TL");
        for line in lines {
            content.push_str(&format!(" ({}) Tj T*", escape(line)));
        }
        content.push_str(" ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pages_answer_as_set_and_every_request_is_counted() {
        let site = SimulatedSite::start().await.unwrap();
        site.set("/a", Page::html("<p>hello</p>"));
        site.set("/r", Page::redirect("/a"));
        site.set("/blocked", Page::cloudflare_challenge());
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let a = client.get(site.url("/a?x=1")).send().await.unwrap();
        assert_eq!(a.status(), 200);
        assert_eq!(a.text().await.unwrap(), "<p>hello</p>");
        let r = client.get(site.url("/r")).send().await.unwrap();
        assert_eq!(
            (
                r.status().as_u16(),
                r.headers()["location"].to_str().unwrap()
            ),
            (302, "/a")
        );
        let b = client.get(site.url("/blocked")).send().await.unwrap();
        assert_eq!(b.status(), 403);
        assert_eq!(b.headers()["cf-mitigated"], "challenge");
        assert_eq!(
            client.get(site.url("/none")).send().await.unwrap().status(),
            404
        );
        assert_eq!(
            (site.hits("/a"), site.hits("/r"), site.total_hits()),
            (1, 1, 4)
        );
    }

    #[test]
    fn the_pdf_has_a_cross_reference_table_pointing_at_its_objects() {
        let pdf = pdf_with_text("Hello (PDF)");
        let text = String::from_utf8_lossy(&pdf);
        assert!(text.starts_with("%PDF-1.4"));
        assert!(text.contains("(Hello \\(PDF\\)) Tj"));
        let xref: usize = text
            .rsplit("startxref\n")
            .next()
            .and_then(|rest| rest.lines().next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(text[xref..].starts_with("xref"));
    }
}
