//! The direct read of a page, unless its host's breaker is open or its slots stay taken; a page
//! with too little text is [`Direct::Thin`], a reason to ask a premium reader.

use tokio::time::Instant;

use super::hosts::HostName;
use super::page::{Depth, ReadRequest};
use super::record::{DirectOutcome, ReadRecord};
use super::state::ReadState;
use crate::breaker_signals;
use gateway_upstreams::reader::{Document, ReadFailure, Reader};

/// Words an HTML page should have; fewer is thin (a premium reader may find more — a page that
/// draws its text with scripts).
const MIN_WORDS: usize = 20;
/// Words an advanced read wants; fewer is thin.
const THIN_WORDS: usize = 150;

/// What the direct read came to.
pub(super) enum Direct {
    Read(Document),
    Thin(Document),
    Failed(ReadFailure),
}

/// The direct read, unless the host's breaker is open or its slots stay taken.
pub(super) async fn direct(
    inner: &ReadState,
    req: &ReadRequest,
    deadline: Instant,
    record: &mut ReadRecord,
) -> Direct {
    let started_ms = record.offset();
    let host = HostName::of(&req.url);
    if Reader::admits(&req.url).is_err() {
        record.direct(DirectOutcome::Failed(ReadFailure::InvalidUrl), started_ms);
        return Direct::Failed(ReadFailure::InvalidUrl);
    }
    let Some(permit) = inner.hosts.admit(&host) else {
        record.direct(DirectOutcome::HostBreakerOpen, started_ms);
        return Direct::Failed(ReadFailure::Blocked(
            gateway_upstreams::reader::Wall::Forbidden,
        ));
    };
    let Some(_slot) = inner.slots.acquire(&host, deadline).await else {
        record.direct(DirectOutcome::HostBusy, started_ms);
        return Direct::Failed(ReadFailure::Upstream(
            gateway_core::upstream::ErrorClass::Timeout,
        ));
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let result = inner
        .reader
        .read(&req.url, req.format, inner.settings.timeout.min(left))
        .await;
    inner.hosts.record(
        permit,
        &host,
        req.url.path(),
        breaker_signals::for_read(&result),
    );
    let (outcome, direct) = judge(req, result);
    record.direct(outcome, started_ms);
    direct
}

/// What a read of the page (direct or rendered) came to.
pub(super) fn judge(
    req: &ReadRequest,
    result: Result<Document, ReadFailure>,
) -> (DirectOutcome, Direct) {
    match result {
        // Too little text for an HTML page (or for an advanced read) is a reason to render it or
        // ask a premium reader; when none reads it, the little there is is the answer.
        Ok(document)
            if (document.words() < MIN_WORDS && document.content_type == "text/html")
                || (req.depth == Depth::Advanced && document.words() < THIN_WORDS) =>
        {
            (DirectOutcome::Thin, Direct::Thin(document))
        }
        Ok(document) => (DirectOutcome::Ok, Direct::Read(document)),
        Err(failure) => (DirectOutcome::Failed(failure), Direct::Failed(failure)),
    }
}
