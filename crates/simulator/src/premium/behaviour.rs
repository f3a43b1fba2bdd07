//! What tests script on a fake provider: a [`ProviderBehaviour`] (results as [`SimHit`]s, nothing, a
//! [`SimError`], slow, garbled, the wrong shape, a hang) and, for Brave, the [`BraveWindows`] its
//! `X-RateLimit-*` headers report. The reply module renders each in the provider's own form.

use std::time::Duration;

use crate::fault::Fault;

/// One result the fake serves, rendered in each provider's own field names.
#[derive(Debug, Clone, PartialEq)]
pub struct SimHit {
    /// Title.
    pub title: String,
    /// URL.
    pub url: String,
    /// Snippet (Brave `description`, Exa `highlights[0]`/`text`, Jina `description`, Tavily `content`).
    pub content: String,
    /// Publication date, served as Brave `page_age`, Exa `publishedDate`, Jina `date`, Tavily `published_date`.
    pub published_date: Option<String>,
}

/// A failure the fake serves, each in the provider's own status code and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimError {
    /// Bad key: Brave 422 `SUBSCRIPTION_TOKEN_INVALID`, Serper 403, the others 401 (Kagi: error code 2).
    Auth,
    /// Credits or monthly quota gone: Brave 429 `QUOTA_LIMITED` (month window at 0), Exa 402
    /// `NO_MORE_CREDITS`, Jina 402 `InsufficientBalanceError`, Kagi 402 code 101, Linkup 429
    /// `INSUFFICIENT_FUNDS_CREDITS`, Perplexity 429 `insufficient_quota`, SearchAPI 429 "run out of
    /// searches", Serper 400 "Not enough credits", Tavily 432.
    Quota,
    /// Too many requests: 429 everywhere. Brave reports the wait as its per-second window's
    /// `X-RateLimit-Reset`; the others send `Retry-After`.
    RateLimited {
        /// Seconds until the provider accepts calls again.
        retry_after_secs: u64,
    },
    /// Our request is wrong: Brave 422 `VALIDATION`, Perplexity 422, the others 400.
    BadRequest,
    /// A server failure: 500 (Exa: 503 `SERVICE_OVERLOADED`).
    Server,
}

/// What the fake does with the next requests that pass its method, path and auth checks.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderBehaviour {
    /// Answer these results (at most as many as the request asked for).
    Results(Vec<SimHit>),
    /// A healthy answer with zero results, in the provider's own form (Brave: no `web`; Jina: 422
    /// `AssertionFailureError`; others: an empty list).
    Empty,
    /// Fail as the provider fails.
    Error(SimError),
    /// Wait `delay` (on the tokio clock), then behave as `then`.
    Slow {
        /// How long to wait before answering.
        delay: Duration,
        /// What to do after the wait.
        then: Box<ProviderBehaviour>,
    },
    /// A 200 whose body is not JSON (cut off mid-document).
    Garbled,
    /// A 200 with valid JSON of the wrong shape (schema drift).
    WrongShape,
    /// A 200 with an HTML bot-challenge page instead of JSON, as a CDN in front of the API sends
    /// when it takes the caller for a bot.
    Challenge,
    /// Never answer (until the fake is dropped).
    Hang,
    /// A fault below the API ([`Fault`]): a block page, a reset, a hang, garbage, a huge or trickling body.
    Fault(Fault),
}

impl ProviderBehaviour {
    /// `n` results whose URLs are `url_prefix` followed by 1…n.
    pub fn results(n: usize, url_prefix: &str) -> Self {
        Self::Results(
            (1..=n)
                .map(|i| SimHit {
                    title: format!("Simulated result {i}"),
                    url: format!("{url_prefix}{i}"),
                    content: format!("Snippet of simulated result {i}."),
                    published_date: Some("2026-11-27T10:00:00".to_owned()),
                })
                .collect(),
        )
    }

    /// Waits `delay`, then behaves as `then`.
    pub fn slow(delay: Duration, then: ProviderBehaviour) -> Self {
        Self::Slow {
            delay,
            then: Box::new(then),
        }
    }

    /// A 429 telling the caller to come back in `retry_after_secs` (`Retry-After`, or Brave's
    /// per-second window reset).
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Error(SimError::RateLimited { retry_after_secs })
    }
}

/// Brave's two rate-limit windows as the fake reports them in `X-RateLimit-*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BraveWindows {
    /// Requests per second allowed.
    pub per_second_limit: u32,
    /// Requests left in the current second.
    pub per_second_remaining: u32,
    /// Requests per month allowed.
    pub month_limit: u32,
    /// Requests left this month.
    pub month_remaining: u32,
    /// Seconds until the monthly window resets.
    pub month_reset_secs: u64,
}

impl Default for BraveWindows {
    fn default() -> Self {
        Self {
            per_second_limit: 20,
            per_second_remaining: 19,
            month_limit: 15_000,
            month_remaining: 14_321,
            month_reset_secs: 1_419_704,
        }
    }
}
