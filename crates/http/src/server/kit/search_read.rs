//! Search, then read: what the doors that answer several searches at once (Perplexity's list of
//! queries, Firecrawl's sources) and read their hits (Tavily's `include_raw_content`, Firecrawl's
//! `scrapeOptions`, Perplexity's `max_tokens_per_page`) share — every search asked at once and
//! the first answer's headers kept, each hit read at once within what is left of the request's
//! budget. Written once here so every door charges, logs and bounds it the same way.

use std::time::Duration;

use futures::future::join_all;
use tokio::time::Instant;

use super::document::Found;
use super::read_call::{self, Asked};
use super::search_call::{self, Unanswered};
use crate::gateway::Gateway;
use crate::server::kit::gate::Admitted;
use gateway_core::request::{ReadFormat, SearchRequest, Surface};
use gateway_engine::read::{Depth, PageRead};
use gateway_engine::Served;

/// Several searches, answered.
#[derive(Debug)]
pub(crate) struct Searched {
    /// The first search's answer (its headers say how the reply was answered).
    pub(crate) first: Option<Served>,
    /// Each search's results, in the order asked.
    pub(crate) found: Vec<Found>,
}

/// Every search of `requests` at once, through `surface`; the first that gave nothing ends it.
pub(crate) async fn search_all(
    gateway: &Gateway,
    surface: Surface,
    requests: Vec<SearchRequest>,
    admitted: &Admitted,
) -> Result<Searched, Unanswered> {
    let answers = join_all(
        requests
            .into_iter()
            .map(|req| search_call::found(gateway, surface, req, admitted)),
    )
    .await;
    let mut searched = Searched {
        first: None,
        found: Vec::with_capacity(answers.len()),
    };
    for answer in answers {
        let (served, found) = answer?;
        searched.first.get_or_insert(served);
        searched.found.push(found);
    }
    Ok(searched)
}

/// What is left of the request's budget (`REQUEST_BUDGET_SECONDS`, or the client's own timeout
/// when it asked for a shorter one) since `started`.
pub(crate) fn budget_left(
    gateway: &Gateway,
    started: Instant,
    asked: Option<Duration>,
) -> Duration {
    let budget = gateway.settings().request_budget;
    asked
        .map_or(budget, |asked| asked.min(budget))
        .saturating_sub(started.elapsed())
}

/// Each hit at `urls` read as `format`, at once, within `budget`; `None` for one that is not a URL.
pub(crate) async fn read_hits<'a>(
    gateway: &Gateway,
    admitted: &Admitted,
    urls: impl IntoIterator<Item = &'a str>,
    format: ReadFormat,
    budget: Duration,
) -> Vec<Option<PageRead>> {
    let asked: Vec<Asked> = urls.into_iter().map(Asked::new).collect();
    read_call::many(gateway, admitted, &asked, format, Depth::Basic, budget).await
}

/// The text of each hit read as `format` (`None` where it could not be read), in order.
pub(crate) async fn read_texts<'a>(
    gateway: &Gateway,
    admitted: &Admitted,
    urls: impl IntoIterator<Item = &'a str>,
    format: ReadFormat,
    budget: Duration,
) -> Vec<Option<String>> {
    read_hits(gateway, admitted, urls, format, budget)
        .await
        .into_iter()
        .map(|read| {
            read.and_then(|read| read.result.ok())
                .map(|done| done.document.content.clone())
        })
        .collect()
}
