//! The HTTP mechanics every upstream call shares, written once: the process-wide client (pooled
//! keep-alive, no redirects, no proxies from the environment), a body read with a size cap,
//! transport errors classified without reading their text, and `Retry-After` in both of its forms.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use super::ErrorClass;

/// The largest upstream body the gateway reads (SearXNG and premium APIs alike).
pub(crate) const BODY_CAP: usize = 8 * 1024 * 1024;

/// The HTTP client shared by every upstream: pooled keep-alive connections, TCP_NODELAY, redirects
/// never followed (SearXNG's `!!bang` redirect is reported, not followed).
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(64)
        .tcp_nodelay(true)
        .user_agent(concat!("searxng-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// Classifies a transport error from the HTTP client without looking at its text.
pub(crate) fn classify_transport(err: &reqwest::Error) -> ErrorClass {
    if err.is_timeout() {
        ErrorClass::Timeout
    } else if err.is_body() || err.is_decode() {
        ErrorClass::Truncated
    } else {
        ErrorClass::Connect
    }
}

/// Reads a response body up to `cap` bytes: a longer body is [`ErrorClass::TooLarge`] (read no
/// further), a connection that drops mid-body is [`ErrorClass::Truncated`].
pub(crate) async fn read_body_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<bytes::Bytes, ErrorClass> {
    if response
        .content_length()
        .is_some_and(|len| len > cap as u64)
    {
        return Err(ErrorClass::TooLarge);
    }
    let mut body = bytes::BytesMut::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return Err(ErrorClass::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body.freeze()),
            Err(err) if err.is_timeout() => return Err(ErrorClass::Timeout),
            Err(_) => return Err(ErrorClass::Truncated),
        }
    }
}

/// The response's `Retry-After` (delta-seconds or HTTP-date), if it has a readable one.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, SystemTime::now())
}

/// Parses `Retry-After` as delta-seconds or an HTTP-date (relative to `now`).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
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
    fn retry_after_is_read_from_the_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    }
}
