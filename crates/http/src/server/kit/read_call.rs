//! Page reads on behalf of a surface: each read asked of the pipeline ([`run`], or [`many`] at
//! once), the client charged for the premium calls a read it led made, and one log line per read.
//! Every surface that reads pages reads through here, so every read is charged and logged the same
//! way. The line names the outcome, never the URL (a client's URL may carry its own secrets).
//! A read that failed is told to the client the same way by every surface ([`unread_reason`]): a
//! sentence a person reads, with the stable code a program matches on.

use std::time::Duration;

use futures::future::join_all;
use tokio::time::Instant;
use url::Url;

use crate::gateway::Gateway;
use crate::server::kit::gate::Admitted;
use gateway_core::request::ReadFormat;
use gateway_engine::read::{Depth, Freshness, PageRead, ReadRequest, Render};
use gateway_upstreams::reader::ReadFailure;

/// One page a client asked for, as it sent it.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// The URL exactly as the client sent it (replies echo it).
    pub(crate) as_sent: String,
    /// The URL, when it is one.
    pub(crate) url: Option<Url>,
}

impl Asked {
    /// `raw` as the client sent it, parsed when it is an absolute URL.
    pub(crate) fn new(raw: &str) -> Self {
        Self {
            as_sent: raw.to_owned(),
            url: Url::parse(raw.trim()).ok(),
        }
    }
}

/// Reads `url` as `format` at `depth` for `admitted`, within `budget`.
pub(crate) async fn run(
    gateway: &Gateway,
    admitted: &Admitted,
    url: Url,
    format: ReadFormat,
    depth: Depth,
    budget: Duration,
) -> PageRead {
    run_fresh(
        gateway,
        admitted,
        url,
        format,
        depth,
        Freshness::Cached,
        budget,
    )
    .await
}

/// Reads `url` as [`run`] does, from the cache or afresh as `freshness` says.
pub(crate) async fn run_fresh(
    gateway: &Gateway,
    admitted: &Admitted,
    url: Url,
    format: ReadFormat,
    depth: Depth,
    freshness: Freshness,
    budget: Duration,
) -> PageRead {
    let asked = Asking {
        depth,
        freshness,
        ..Asking::default()
    };
    run_asking(gateway, admitted, url, format, asked, budget).await
}

/// How hard a read tries, beyond its format: what the surfaces that say more than a depth ask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Asking {
    pub(crate) depth: Depth,
    pub(crate) freshness: Freshness,
    /// Whether the local browser may render the page (MCP's `render`, Jina's `X-Engine`).
    pub(crate) render: Render,
    /// Firecrawl's `waitFor`.
    pub(crate) wait_for: Option<Duration>,
}

/// Reads `url` as [`run`] does, as `asked` says.
pub(crate) async fn run_asking(
    gateway: &Gateway,
    admitted: &Admitted,
    url: Url,
    format: ReadFormat,
    asked: Asking,
    budget: Duration,
) -> PageRead {
    let Asking {
        depth,
        freshness,
        render,
        wait_for,
    } = asked;
    let started = Instant::now();
    let read = gateway
        .read(
            ReadRequest {
                url,
                format,
                depth,
                freshness,
                render,
                wait_for,
            },
            admitted.premium,
            budget,
        )
        .await;
    admitted
        .clients
        .charge(&admitted.caller, read.premium_calls, 0.0)
        .await;
    let (outcome, source) = match &read.result {
        Ok(done) => ("ok", done.source.as_str()),
        Err(failed) => (failed.failure.code(), "-"),
    };
    tracing::info!(
        client = admitted.caller.name.as_str(),
        outcome,
        source,
        cache = read.cache.as_str(),
        premium_calls = read.premium_calls,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "read"
    );
    read
}

/// Reads every page of `asked` at once (each within `budget`), in order; `None` for one that is
/// not a URL at all.
pub(crate) async fn many(
    gateway: &Gateway,
    admitted: &Admitted,
    asked: &[Asked],
    format: ReadFormat,
    depth: Depth,
    budget: Duration,
) -> Vec<Option<PageRead>> {
    join_all(asked.iter().map(|asked| async move {
        let url = asked.url.clone()?;
        Some(run(gateway, admitted, url, format, depth, budget).await)
    }))
    .await
}

/// Why a page was not read, as the surfaces tell their clients: a sentence ending with the stable
/// code in parentheses (the one logs, metrics and `explain` use), e.g. "the answer is larger than
/// the gateway reads (too_large)".
pub(crate) fn unread_reason(failure: ReadFailure) -> String {
    match failure {
        ReadFailure::Upstream(class) => format!("{} ({})", class.sentence(), failure.code()),
        ReadFailure::Blocked(wall) => format!(
            "the site blocked the read ({}: {})",
            failure.code(),
            wall.as_str()
        ),
        other => format!("{other} ({})", other.code()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_core::upstream::ErrorClass;
    use gateway_upstreams::reader::Wall;

    #[test]
    fn a_failed_read_is_told_as_a_sentence_ending_with_its_code() {
        for (failure, told) in [
            (
                ReadFailure::Upstream(ErrorClass::TooLarge),
                "the answer is larger than the gateway reads (too_large)",
            ),
            (
                ReadFailure::Upstream(ErrorClass::Timeout),
                "the upstream did not answer in time (timeout)",
            ),
            (
                ReadFailure::Blocked(Wall::Cloudflare),
                "the site blocked the read (blocked: cloudflare)",
            ),
            (
                ReadFailure::HttpStatus(404),
                "the page answered HTTP 404 (http_status)",
            ),
            (
                ReadFailure::ForbiddenAddress,
                "the address is not one the gateway reads (forbidden_address)",
            ),
        ] {
            assert_eq!(unread_reason(failure), told);
        }
    }
}
