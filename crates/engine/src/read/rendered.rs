//! The rendered read: the page in the local browser ([`Reader::render`]) — when it is asked for
//! first (`BROWSER=always`, `BROWSER_HOSTS`, a client's `render=always`) and when the direct read
//! calls for it (a script shell, no readable text, too little of it on an HTML page) — holding the
//! host's slot and breaker as the direct read does, within the request's budget.

use std::time::Duration;

use tokio::time::Instant;

use super::direct::{judge, Direct};
use super::hosts::HostName;
use super::page::{ReadRequest, Render};
use super::record::{ReadRecord, RenderWhy};
use super::state::ReadState;
use crate::breaker_signals;
use gateway_upstreams::reader::{ReadFailure, Reader, RenderOptions, Wall};

/// A render is not started with less of the budget left than this.
const MIN_RENDER: Duration = Duration::from_millis(250);

/// Why `req`'s page is rendered before any direct read, if it is.
pub(super) fn first(inner: &ReadState, req: &ReadRequest) -> Option<RenderWhy> {
    if !inner.reader.renders() {
        return None;
    }
    match req.render {
        Render::Never => None,
        Render::Always => Some(RenderWhy::Asked),
        Render::Auto => inner
            .reader
            .renders_first(&req.url)
            .then_some(RenderWhy::Configured),
    }
}

/// Why `req`'s page is rendered after the direct read came to `direct`, if it is.
pub(super) fn after(inner: &ReadState, req: &ReadRequest, direct: &Direct) -> Option<RenderWhy> {
    if !inner.reader.renders() || req.render == Render::Never {
        return None;
    }
    match direct {
        Direct::Thin(document) if document.content_type == "text/html" => Some(RenderWhy::Thin),
        Direct::Failed(ReadFailure::Blocked(Wall::JavascriptShell)) => {
            Some(RenderWhy::JavascriptShell)
        }
        Direct::Failed(ReadFailure::NoReadableText) => Some(RenderWhy::NoReadableText),
        _ => None,
    }
}

/// The rendered read, unless the host's breaker is open, its slots stay taken, or too little of
/// the budget is left.
pub(super) async fn rendered(
    inner: &ReadState,
    req: &ReadRequest,
    deadline: Instant,
    why: RenderWhy,
    record: &mut ReadRecord,
) -> Direct {
    let started_ms = record.offset();
    let host = HostName::of(&req.url);
    if Reader::admits(&req.url).is_err() {
        record.rendered(why, "invalid_url", None, started_ms);
        return Direct::Failed(ReadFailure::InvalidUrl);
    }
    let Some(permit) = inner.hosts.admit(&host) else {
        record.rendered(why, "host_breaker_open", None, started_ms);
        return Direct::Failed(ReadFailure::Blocked(Wall::Forbidden));
    };
    let Some(_slot) = inner.slots.acquire(&host, deadline).await else {
        record.rendered(why, "host_busy", None, started_ms);
        return Direct::Failed(ReadFailure::Upstream(
            gateway_core::upstream::ErrorClass::Timeout,
        ));
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left < MIN_RENDER {
        record.rendered(why, "deadline", None, started_ms);
        return Direct::Failed(ReadFailure::Upstream(
            gateway_core::upstream::ErrorClass::Timeout,
        ));
    }
    let options = RenderOptions {
        wait_for: req.wait_for,
    };
    let (result, outcome) = inner
        .reader
        .render(&req.url, req.format, options, left)
        .await;
    inner.hosts.record(
        permit,
        &host,
        req.url.path(),
        breaker_signals::for_read(&result),
    );
    let (read, direct) = judge(req, result);
    let read = (outcome == gateway_upstreams::reader::RenderOutcome::Ok).then_some(read);
    record.rendered(why, outcome.as_str(), read, started_ms);
    direct
}

/// The better of the direct read and the rendered one: a page read over a thin one, a thin one
/// over none, the more words between two thin ones; `true` when it is the rendered one.
pub(super) fn better(direct: Direct, rendered: Direct) -> (Direct, bool) {
    match (direct, rendered) {
        (_, rendered @ Direct::Read(_)) => (rendered, true),
        (Direct::Thin(direct), Direct::Thin(rendered)) => {
            if rendered.words() > direct.words() {
                (Direct::Thin(rendered), true)
            } else {
                (Direct::Thin(direct), false)
            }
        }
        (Direct::Failed(_), rendered @ Direct::Thin(_)) => (rendered, true),
        (direct, _) => (direct, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;
    use gateway_upstreams::reader::Document;

    fn page(words: usize) -> Document {
        Document {
            url: "https://a.example/".into(),
            final_url: "https://a.example/".into(),
            title: None,
            content: vec!["word"; words].join(" "),
            format: ReadFormat::Text,
            published: None,
            language: None,
            author: None,
            site_name: None,
            images: Vec::new(),
            links: Vec::new(),
            content_type: "text/html".into(),
            bytes_read: 0,
        }
    }

    #[test]
    fn the_rendered_page_wins_only_when_it_reads_more() {
        let shell = || Direct::Failed(ReadFailure::Blocked(Wall::JavascriptShell));
        assert!(better(shell(), Direct::Read(page(300))).1);
        assert!(better(shell(), Direct::Thin(page(5))).1);
        assert!(!better(shell(), Direct::Failed(ReadFailure::NoReadableText)).1);
        assert!(better(Direct::Thin(page(3)), Direct::Thin(page(9))).1);
        assert!(!better(Direct::Thin(page(9)), Direct::Thin(page(3))).1);
        let (kept, rendered) = better(
            Direct::Thin(page(9)),
            Direct::Failed(ReadFailure::Upstream(
                gateway_core::upstream::ErrorClass::Timeout,
            )),
        );
        assert!(!rendered && matches!(kept, Direct::Thin(_)));
    }
}
