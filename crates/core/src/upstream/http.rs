//! The HTTP mechanics every upstream call shares, written once: the clients (pooled keep-alive, no
//! redirects, no proxies from the environment; one set per worker under thread-per-core), a body
//! read with a size cap, transport errors classified without reading their text, and `Retry-After`
//! in both of its forms.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::sync::{Semaphore, SemaphorePermit};

use super::lean::LeanHttp;
use super::ErrorClass;

/// The largest upstream body the gateway reads (SearXNG and premium APIs alike).
pub const BODY_CAP: usize = 8 * 1024 * 1024;

/// What one body may take without asking the shared budget: every normal answer fits (SearXNG's
/// are tens of kB, the providers' a few kB).
const BODY_ALLOWANCE: usize = 256 * 1024;

/// Bytes beyond their allowance that all bodies being read may hold together. Without it, every
/// fan-out slot reading a huge body at once would hold [`BODY_CAP`] each (64 × 8 MiB); with it, a
/// body that finds the budget spent is `too_large` at once, and memory stays flat whatever the
/// upstreams send (the soak with faults, BENCHMARKS.md, measures it).
const SHARED_BODY_BUDGET: usize = 16 * 1024 * 1024;

static SHARED_BODIES: Semaphore = Semaphore::const_new(SHARED_BODY_BUDGET);

/// The bytes one body holds beyond its allowance, given back when the read ends.
struct BodyBudget<'a> {
    shared: &'a Semaphore,
    held: Option<SemaphorePermit<'a>>,
}

impl<'a> BodyBudget<'a> {
    fn new(shared: &'a Semaphore) -> Self {
        Self { shared, held: None }
    }

    /// Grows the body from `before` to `after` bytes: free within the allowance, from the shared
    /// budget beyond it; `Err` when the budget cannot cover it now.
    fn grow(&mut self, before: usize, after: usize) -> Result<(), ErrorClass> {
        let needed = after.saturating_sub(before.max(BODY_ALLOWANCE));
        if needed == 0 {
            return Ok(());
        }
        let needed = u32::try_from(needed).map_err(|_| ErrorClass::TooLarge)?;
        let permit = self
            .shared
            .try_acquire_many(needed)
            .map_err(|_| ErrorClass::TooLarge)?;
        match &mut self.held {
            Some(held) => held.merge(permit),
            None => self.held = Some(permit),
        }
        Ok(())
    }
}

/// The HTTP clients of every upstream call: SearXNG's ([`LeanHttp`]) and the one of premium APIs and
/// page reads (reqwest: pooled keep-alive connections, TCP_NODELAY, redirects never followed —
/// a page read follows them itself, checking each hop). Neither takes a proxy from
/// `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`: a proxy variable meant for something else in the
/// container must not receive the gateway's calls and their keys (an egress proxy is configured by
/// each upstream's `*_BASE_URL`). One pair per worker under `RUNTIME=thread-per-core`, so that a
/// worker's upstream connections are its own and driven by its own thread (a connection's task runs
/// on the runtime that opened it); one pair otherwise. Cheap to clone.
#[derive(Debug, Clone)]
pub struct UpstreamHttp {
    per_worker: Arc<[Clients]>,
}

/// One worker's clients.
#[derive(Debug)]
struct Clients {
    api: reqwest::Client,
    searxng: LeanHttp,
}

/// Why the upstream clients could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// reqwest's builder failed (its TLS set-up).
    #[error("the HTTP client of premium APIs and page reads could not be built: {0}")]
    Api(reqwest::Error),
    /// rustls refused the TLS set-up of SearXNG's client.
    #[error("the HTTP client of SearXNG could not be built: {0}")]
    Searxng(rustls::Error),
}

impl UpstreamHttp {
    /// `pools` pairs of clients (at least one), each with its own connection pools.
    pub fn new(pools: usize) -> Result<Self, SetupError> {
        let per_worker = (0..pools.max(1))
            .map(|_| {
                Ok(Clients {
                    api: api_client().map_err(SetupError::Api)?,
                    searxng: LeanHttp::new().map_err(SetupError::Searxng)?,
                })
            })
            .collect::<Result<Vec<_>, SetupError>>()?;
        Ok(Self {
            per_worker: per_worker.into(),
        })
    }

    fn here(&self) -> &Clients {
        &self.per_worker[crate::runtime::current_worker() % self.per_worker.len()]
    }

    /// The premium APIs' and page reads' client of the worker this runs on.
    pub fn get(&self) -> &reqwest::Client {
        &self.here().api
    }

    /// SearXNG's client of the worker this runs on.
    pub fn searxng(&self) -> &LeanHttp {
        &self.here().searxng
    }
}

fn api_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(64)
        .tcp_nodelay(true)
        .user_agent(concat!("searxng-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Classifies a transport error from the HTTP client without looking at its text.
pub fn classify_transport(err: &reqwest::Error) -> ErrorClass {
    if err.is_timeout() {
        ErrorClass::Timeout
    } else if err.is_body() || err.is_decode() {
        ErrorClass::Truncated
    } else {
        ErrorClass::Connect
    }
}

/// A response body read chunk by chunk: reqwest's (premium APIs, page reads) and hyper's
/// (SearXNG's, [`LeanHttp`]).
pub trait Chunks {
    /// The length the response declares, if it does.
    fn declared(&self) -> Option<u64>;
    /// The next chunk, `None` at the end; a timeout is [`ErrorClass::Timeout`], any other failure
    /// [`ErrorClass::Truncated`].
    // Implemented and awaited only inside the gateway's crates, on their own runtime: no caller
    // needs to name the future's `Send` bound.
    #[allow(async_fn_in_trait)]
    async fn next(&mut self) -> Result<Option<bytes::Bytes>, ErrorClass>;
}

impl Chunks for reqwest::Response {
    fn declared(&self) -> Option<u64> {
        self.content_length()
    }

    async fn next(&mut self) -> Result<Option<bytes::Bytes>, ErrorClass> {
        self.chunk().await.map_err(|err| {
            if err.is_timeout() {
                ErrorClass::Timeout
            } else {
                ErrorClass::Truncated
            }
        })
    }
}

impl<B> Chunks for hyper::Response<B>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
{
    fn declared(&self) -> Option<u64> {
        hyper::body::Body::size_hint(self.body()).exact()
    }

    async fn next(&mut self) -> Result<Option<bytes::Bytes>, ErrorClass> {
        use http_body_util::BodyExt;
        loop {
            match self.body_mut().frame().await {
                None => return Ok(None),
                Some(Err(_)) => return Err(ErrorClass::Truncated),
                // Trailers carry no bytes of the body.
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }
}

/// Reads a response body up to `cap` bytes: a longer body is [`ErrorClass::TooLarge`] (read no
/// further, and not at all when its declared length is over), and so is one whose buffer outgrows
/// its allowance while the shared budget is spent; a connection that drops mid-body is
/// [`ErrorClass::Truncated`].
///
/// The budget pays for the buffer's capacity, not its length: a declared length is reserved
/// exactly, and a body of unknown length grows by doubling (amortised copying) but never past the
/// cap, so what the budget counts is what the allocator holds.
pub async fn read_body_capped(
    response: impl Chunks,
    cap: usize,
) -> Result<bytes::Bytes, ErrorClass> {
    read_body(response, cap, &SHARED_BODIES).await
}

/// [`read_body_capped`] against a given shared budget.
async fn read_body(
    mut response: impl Chunks,
    cap: usize,
    shared: &Semaphore,
) -> Result<bytes::Bytes, ErrorClass> {
    let declared = response.declared();
    if declared.is_some_and(|len| len > cap as u64) {
        return Err(ErrorClass::TooLarge);
    }
    let mut budget = BodyBudget::new(shared);
    let mut body: Vec<u8> = Vec::new();
    if let Some(len) = declared.and_then(|len| usize::try_from(len).ok()) {
        budget.grow(0, len)?;
        body.reserve_exact(len);
    }
    while let Some(chunk) = response.next().await? {
        let len = body.len() + chunk.len();
        if len > cap {
            return Err(ErrorClass::TooLarge);
        }
        if len > body.capacity() {
            let grown = grown_capacity(body.capacity(), len, cap);
            budget.grow(body.capacity(), grown)?;
            body.reserve_exact(grown - body.len());
        }
        body.extend_from_slice(&chunk);
    }
    // What is kept (a cached answer may share these bytes) holds no doubling slack.
    if body.capacity() - body.len() > body.len() / 4 {
        body.shrink_to_fit();
    }
    Ok(bytes::Bytes::from(body))
}

/// The capacity a body buffer of `capacity` grows to when it must hold `needed` bytes: double
/// (so a long body is copied a bounded number of times), at least `needed`, at most `cap`.
fn grown_capacity(capacity: usize, needed: usize, cap: usize) -> usize {
    capacity.saturating_mul(2).clamp(needed, cap.max(needed))
}

/// The response's `Retry-After` (delta-seconds or HTTP-date), if it has a readable one.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, SystemTime::now())
}

/// Parses `Retry-After` as delta-seconds or an HTTP-date (relative to `now`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use std::time::UNIX_EPOCH;

    /// Each worker has a client of its own (a pool of its own); one client serves every thread
    /// when there is one pool.
    #[test]
    fn each_worker_gets_its_own_client() {
        let per_worker = UpstreamHttp::new(2).unwrap();
        let on = |http: UpstreamHttp, worker: usize| {
            std::thread::spawn(move || {
                crate::runtime::become_worker(worker);
                std::ptr::from_ref(http.get()) as usize
            })
            .join()
            .unwrap()
        };
        let (zero, one) = (on(per_worker.clone(), 0), on(per_worker.clone(), 1));
        assert_ne!(zero, one);
        assert_eq!(zero, std::ptr::from_ref(per_worker.get()) as usize);
        let single = UpstreamHttp::new(1).unwrap();
        assert_eq!(on(single.clone(), 0), on(single, 1));
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", SystemTime::now()), None);
        assert_eq!(parse_retry_after("-3", SystemTime::now()), None);
    }

    #[test]
    fn bodies_share_one_budget_beyond_their_allowance() {
        let shared = Semaphore::new(1024 * 1024);
        let mut small = BodyBudget::new(&shared);
        assert_eq!(small.grow(0, BODY_ALLOWANCE), Ok(()));
        assert_eq!(
            shared.available_permits(),
            1024 * 1024,
            "the allowance is free"
        );
        let mut large = BodyBudget::new(&shared);
        assert_eq!(large.grow(0, BODY_ALLOWANCE + 600 * 1024), Ok(()));
        let mut second = BodyBudget::new(&shared);
        assert_eq!(
            second.grow(BODY_ALLOWANCE, BODY_ALLOWANCE + 600 * 1024),
            Err(ErrorClass::TooLarge),
            "the budget is spent: too large at once"
        );
        drop(large);
        assert_eq!(
            shared.available_permits(),
            1024 * 1024,
            "given back when the read ends"
        );
        assert_eq!(
            second.grow(BODY_ALLOWANCE, BODY_ALLOWANCE + 600 * 1024),
            Ok(())
        );
    }

    #[test]
    fn body_buffers_double_within_the_cap() {
        assert_eq!(grown_capacity(0, 8_192, BODY_CAP), 8_192);
        assert_eq!(grown_capacity(8_192, 9_000, BODY_CAP), 16_384);
        assert_eq!(grown_capacity(8_192, 40_000, BODY_CAP), 40_000);
        assert_eq!(
            grown_capacity(6 * 1024 * 1024, 6 * 1024 * 1024 + 1, BODY_CAP),
            BODY_CAP,
            "never past the cap"
        );
    }

    fn response(body: Vec<u8>) -> reqwest::Response {
        reqwest::Response::from(axum::http::Response::new(body))
    }

    /// A body that declares `0` bytes and fails when read: reading it gives `Truncated`.
    struct Unreadable(u64);

    impl hyper::body::Body for Unreadable {
        type Data = bytes::Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, std::io::Error>>>
        {
            std::task::Poll::Ready(Some(Err(std::io::Error::other("read"))))
        }

        fn size_hint(&self) -> hyper::body::SizeHint {
            hyper::body::SizeHint::with_exact(self.0)
        }
    }

    #[tokio::test]
    async fn a_declared_length_the_budget_cannot_cover_is_refused_before_reading() {
        let declared = (BODY_ALLOWANCE + 64 * 1024) as u64;
        let unreadable = || {
            reqwest::Response::from(axum::http::Response::new(reqwest::Body::wrap(Unreadable(
                declared,
            ))))
        };
        assert_eq!(unreadable().content_length(), Some(declared));
        let short = Semaphore::new(1024);
        assert_eq!(
            read_body(unreadable(), BODY_CAP, &short).await,
            Err(ErrorClass::TooLarge),
            "refused without reading"
        );
        let enough = Semaphore::new(1024 * 1024);
        assert_eq!(
            read_body(unreadable(), BODY_CAP, &enough).await,
            Err(ErrorClass::Truncated),
            "the control: read when the budget covers it"
        );
        let body = vec![b'x'; BODY_ALLOWANCE + 64 * 1024];
        assert_eq!(
            read_body(response(body.clone()), BODY_CAP, &short).await,
            Err(ErrorClass::TooLarge)
        );
        assert_eq!(short.available_permits(), 1024, "nothing held after");
        let enough = Semaphore::new(1024 * 1024);
        let read = read_body(response(body.clone()), BODY_CAP, &enough).await;
        assert_eq!(read.as_deref(), Ok(&body[..]));
        assert_eq!(
            enough.available_permits(),
            1024 * 1024,
            "given back when the read ends"
        );
        assert_eq!(
            read_body(response(body), BODY_ALLOWANCE, &enough).await,
            Err(ErrorClass::TooLarge),
            "over the cap"
        );
    }

    /// SearXNG's responses (hyper's bodies) are read by the same rules.
    #[tokio::test]
    async fn hyper_bodies_are_read_by_the_same_rules() {
        let declared = (BODY_ALLOWANCE + 64 * 1024) as u64;
        let unreadable = || axum::http::Response::new(Unreadable(declared));
        let short = Semaphore::new(1024);
        assert_eq!(
            read_body(unreadable(), BODY_CAP, &short).await,
            Err(ErrorClass::TooLarge),
            "refused without reading"
        );
        let enough = Semaphore::new(1024 * 1024);
        assert_eq!(
            read_body(unreadable(), BODY_CAP, &enough).await,
            Err(ErrorClass::Truncated)
        );
        let body = bytes::Bytes::from(vec![b'x'; 4096]);
        let full = || axum::http::Response::new(http_body_util::Full::new(body.clone()));
        assert_eq!(read_body(full(), BODY_CAP, &enough).await, Ok(body.clone()));
        assert_eq!(
            read_body(full(), 4095, &enough).await,
            Err(ErrorClass::TooLarge),
            "over the cap"
        );
        assert_eq!(enough.available_permits(), 1024 * 1024);
    }

    #[test]
    fn retry_after_is_read_from_the_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    }
}
