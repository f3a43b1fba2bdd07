//! One read: the shared tier, the direct read ([`super::direct`]) and the local browser
//! ([`super::rendered`]), the premium fallback in `READ_PROVIDERS` order, and what is kept of it.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::direct::{direct, Direct};
use super::page::{Computed, Freshness, ReadDone, ReadFailed, ReadRequest, ReadSource};
use super::page_key::{carries_credentials, PageKey};
use super::record::{FallbackReason, PremiumSkip, ReadRecord};
use super::rendered;
use super::state::ReadState;
use super::stored::{decode, encode};
use crate::breaker_signals;
use crate::search::Premium;
use gateway_core::cache::{Keep, Lifetime};
use gateway_core::request::ReadFormat;
use gateway_upstreams::providers::readers::{PageResult, PremiumPage, ReadCallResult};
use gateway_upstreams::reader::{Document, ReadFailure};

/// A premium call is not started with less of the budget left than this.
const MIN_CALL: Duration = Duration::from_millis(50);

/// One read: the shared tier, the direct read, the premium fallback. Without a `key` (a page
/// of the URL's credentials), the shared tier is neither asked nor told; a fresh read does not ask
/// it, and tells it the page read.
pub(super) async fn compute(
    inner: Arc<ReadState>,
    key: Option<PageKey>,
    req: ReadRequest,
    premium: Premium,
    budget: Duration,
) -> (Computed, Keep) {
    let deadline = Instant::now() + budget;
    let cached = req.freshness == Freshness::Cached;
    if let (Some(tier), Some(key), true) = (&inner.fleet, &key, cached) {
        if let Some(stored) = tier.read_page(&key.text).await {
            if let Some(done) = decode(&stored.blob) {
                return (Ok(done), Keep::Shared(Lifetime::Complete(stored.ttl)));
            }
        }
    }
    let mut record = ReadRecord::starting_now(budget);
    let (read, source) = local(&inner, &req, deadline, &mut record).await;
    let (thin, reason, failure) = match read {
        Direct::Read(document) => {
            return done(&inner, key.as_ref(), document, source, record, 0).await
        }
        // Never to a premium reader: a URL the policy refuses must not leave the gateway either.
        Direct::Failed(
            failure @ (ReadFailure::ForbiddenAddress
            | ReadFailure::InvalidUrl
            | ReadFailure::UnsupportedContentType),
        ) => return failed(failure, record, 0),
        Direct::Thin(document) => (
            Some(document),
            FallbackReason::Thin,
            ReadFailure::NoReadableText,
        ),
        Direct::Failed(failure @ (ReadFailure::Blocked(_) | ReadFailure::RateLimitedFor(_))) => {
            (None, FallbackReason::Blocked, failure)
        }
        Direct::Failed(ReadFailure::NoReadableText) => (
            None,
            FallbackReason::NoReadableText,
            ReadFailure::NoReadableText,
        ),
        Direct::Failed(failure) => (None, FallbackReason::Failed, failure),
    };
    if !inner.premium.is_empty() {
        record.fallback_reason = Some(reason);
    }
    let mut calls = 0;
    for reader in &inner.premium {
        let kind = reader.kind();
        if !reader.serves(req.format) {
            record.skipped(kind, PremiumSkip::Format);
            continue;
        }
        if premium == Premium::BudgetSpent {
            record.skipped(kind, PremiumSkip::BudgetSpent);
            continue;
        }
        if carries_credentials(&req.url) {
            // A password in the URL is for that site, never for a third party.
            record.skipped(kind, PremiumSkip::Credentials);
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left < MIN_CALL {
            record.skipped(kind, PremiumSkip::Deadline);
            continue;
        }
        let Some(permit) = inner.readers.get(&kind).admit() else {
            record.skipped(kind, PremiumSkip::BreakerOpen);
            continue;
        };
        calls += 1;
        let started_ms = record.offset();
        let result = reader.read(req.url.as_str(), req.format, left).await;
        let outcome = match &result {
            Ok(PageResult::Page(_)) => ReadCallResult::Ok,
            Ok(PageResult::Unreadable) => ReadCallResult::Unreadable,
            Err(err) => ReadCallResult::Failed(err.class),
        };
        record.premium(kind, outcome, started_ms);
        match result {
            Ok(PageResult::Page(page)) => {
                permit.record(gateway_core::breaker::Signal::Success);
                let document = premium_document(&req, page);
                return done(&inner, key.as_ref(), document, kind.into(), record, calls).await;
            }
            Ok(PageResult::Unreadable) => permit.record(gateway_core::breaker::Signal::Success),
            Err(err) => permit.record(breaker_signals::for_error(&err)),
        }
    }
    match thin {
        Some(document) => done(&inner, key.as_ref(), document, source, record, calls).await,
        None => failed(failure, record, calls),
    }
}

/// The gateway's own reads of the page: the local browser first when it is asked for first (and
/// the direct read when that render does not read the page), else the direct read and the
/// browser after it when the direct read calls for it — whichever read more, and who read it.
async fn local(
    inner: &ReadState,
    req: &ReadRequest,
    deadline: Instant,
    record: &mut ReadRecord,
) -> (Direct, ReadSource) {
    if let Some(why) = rendered::first(inner, req) {
        match rendered::rendered(inner, req, deadline, why, record).await {
            read @ Direct::Read(_) => return (read, ReadSource::Browser),
            refused @ Direct::Failed(ReadFailure::ForbiddenAddress | ReadFailure::InvalidUrl) => {
                return (refused, ReadSource::Browser)
            }
            rendered => {
                let read = direct(inner, req, deadline, record).await;
                return match rendered::better(read, rendered) {
                    (read, true) => (read, ReadSource::Browser),
                    (read, false) => (read, ReadSource::Direct),
                };
            }
        }
    }
    let read = direct(inner, req, deadline, record).await;
    let Some(why) = rendered::after(inner, req, &read) else {
        return (read, ReadSource::Direct);
    };
    let rendered = rendered::rendered(inner, req, deadline, why, record).await;
    match rendered::better(read, rendered) {
        (read, true) => (read, ReadSource::Browser),
        (read, false) => (read, ReadSource::Direct),
    }
}

/// A premium reader's page as the gateway's document.
fn premium_document(req: &ReadRequest, page: PremiumPage) -> Document {
    let content_type = match req.format {
        ReadFormat::Markdown => "text/markdown",
        ReadFormat::Text => "text/plain",
        ReadFormat::Html | ReadFormat::RawHtml => "text/html",
    };
    Document {
        url: req.url.to_string(),
        final_url: page.final_url.unwrap_or_else(|| req.url.to_string()),
        title: page.title,
        bytes_read: page.content.len() as u64,
        content: page.content,
        format: req.format,
        published: page.published,
        language: page.language,
        author: None,
        site_name: None,
        images: page.images,
        links: Vec::new(),
        content_type: content_type.to_owned(),
    }
}

/// A read that succeeded: kept for `FETCH_CACHE_TTL_SECONDS` here and in the shared tier (when
/// it has a key).
async fn done(
    inner: &ReadState,
    key: Option<&PageKey>,
    document: Document,
    source: ReadSource,
    mut record: ReadRecord,
    premium_calls: u32,
) -> (Computed, Keep) {
    record.close();
    let done = ReadDone {
        document: Arc::new(document),
        source,
        record: Arc::new(record),
        premium_calls,
    };
    let ttl = inner.settings.cache_ttl;
    if let (Some(tier), Some(key)) = (&inner.fleet, key) {
        if let Some(blob) = encode(&done) {
            tier.store_page(&key.text, blob, ttl).await;
        }
    }
    (Ok(done), Keep::Complete(ttl))
}

/// A read that failed: never cached (the last page read is served stale instead, if any).
fn failed(failure: ReadFailure, mut record: ReadRecord, premium_calls: u32) -> (Computed, Keep) {
    record.close();
    (
        Err(ReadFailed {
            failure,
            record: Arc::new(record),
            premium_calls,
        }),
        Keep::Never,
    )
}
