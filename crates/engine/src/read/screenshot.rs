//! A page's screenshot (Firecrawl's `screenshot` and `screenshot@fullPage` formats): the local
//! browser's capture ([`Reader::screenshot`]), holding the host's slot and breaker as a read
//! does, within the request's budget.
//!
//! Never cached, in this process or the shared tier: a screenshot is an image of the page at the
//! moment it was asked for, a few hundred kilobytes to ten megabytes that would crowd out the
//! pages' text in a cache weighed in bytes, and nothing in the read path reuses it. Every one is
//! a render of its own, so no client is ever handed an image another client's render made.

use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::hosts::HostName;
use super::reading::Reading;
use crate::breaker_signals::{self, HostSignal};
use gateway_core::breaker::Signal;
use gateway_core::upstream::ErrorClass;
use gateway_upstreams::reader::{ReadFailure, Reader, RenderOptions, Screenshot, Shot, Wall};

impl Reading {
    /// The screenshot of `url` (`shot`), given `wait_for` after its load, within `budget`; the
    /// read's failure when there is no browser, the host's breaker is open, its slots stay taken,
    /// or the render fails.
    pub(crate) async fn screenshot(
        &self,
        url: &Url,
        shot: Shot,
        wait_for: Option<Duration>,
        budget: Duration,
    ) -> Result<Screenshot, ReadFailure> {
        let inner = &self.inner;
        let deadline = Instant::now() + budget;
        Reader::admits(url)?;
        let host = HostName::of(url);
        let permit = inner
            .hosts
            .admit(&host)
            .ok_or(ReadFailure::Blocked(Wall::Forbidden))?;
        let _slot = inner
            .slots
            .acquire(&host, deadline)
            .await
            .ok_or(ReadFailure::Upstream(ErrorClass::Timeout))?;
        let left = deadline.saturating_duration_since(Instant::now());
        let (result, _) = inner
            .reader
            .screenshot(url, shot, RenderOptions { wait_for }, left)
            .await;
        let signal = match &result {
            Ok(_) => HostSignal::Breaker(Signal::Success),
            Err(failure) => breaker_signals::for_read(&Err(*failure)),
        };
        inner.hosts.record(permit, &host, url.path(), signal);
        result
    }
}
