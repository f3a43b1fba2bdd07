//! The record of one read, kept with its result (and so in the cache) for `explain=1`: the direct
//! read (how it ended, or why it was skipped), why the premium fallback started, each premium
//! reader called (how it ended, how long it took) or skipped and why, the budget and the time
//! used. Names and outcomes come from closed sets — never a page's text or an upstream's body.

use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use gateway_upstreams::providers::readers::{ReadCallResult, ReaderKind};
use gateway_upstreams::reader::{ReadFailure, Wall};

/// How the direct read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirectOutcome {
    /// It read the page.
    Ok,
    /// It read the page, but too little of it for an advanced read.
    Thin,
    /// It failed.
    Failed(ReadFailure),
    /// It was not tried: the host's breaker is open.
    HostBreakerOpen,
    /// It was not tried: the host's slots stayed taken for the whole budget.
    HostBusy,
}

impl DirectOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Thin => "thin",
            Self::Failed(failure) => failure.code(),
            Self::HostBreakerOpen => "host_breaker_open",
            Self::HostBusy => "host_busy",
        }
    }
}

impl Serialize for DirectOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The direct read.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DirectRecord {
    pub(crate) outcome: DirectOutcome,
    /// The wall in front of a blocked page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) wall: Option<Wall>,
    pub(crate) elapsed_ms: u64,
}

/// Why the page was rendered in the local browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RenderWhy {
    /// `BROWSER=always`, or the host is one of `BROWSER_HOSTS`: rendered first.
    Configured,
    /// The client asked for it (`render=always`): rendered first.
    Asked,
    /// The direct read was a script shell.
    JavascriptShell,
    /// The direct read found no readable text.
    NoReadableText,
    /// The direct read found too little text.
    Thin,
}

/// The rendered read.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BrowserRecord {
    pub(crate) why: RenderWhy,
    /// The render's outcome (`ok`, `timeout`, `crashed`, …), or the host's breaker or slots.
    pub(crate) outcome: &'static str,
    /// The read of the rendered page, when it was rendered: `ok`, `thin`, or why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) read: Option<DirectOutcome>,
    pub(crate) elapsed_ms: u64,
}

/// Why the premium fallback started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FallbackReason {
    /// The direct read was blocked (or its host's breaker is open).
    Blocked,
    /// The direct read failed.
    Failed,
    /// The page had no readable text.
    NoReadableText,
    /// An advanced read found too little text.
    Thin,
}

/// One premium reader call.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PremiumRecord {
    pub(crate) reader: ReaderKind,
    /// `ok`, `unreadable`, or an error class.
    #[serde(serialize_with = "call_result_label")]
    pub(crate) outcome: ReadCallResult,
    pub(crate) elapsed_ms: u64,
}

/// A premium call's result as `explain` shows it: its label.
fn call_result_label<S: serde::Serializer>(
    result: &ReadCallResult,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(result.as_str())
}

/// Why a premium reader was not called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PremiumSkip {
    /// Its breaker is open (or its quota parked).
    BreakerOpen,
    /// The client's premium budget is spent.
    BudgetSpent,
    /// The request's budget ended.
    Deadline,
    /// It gives no pages in the format asked for.
    Format,
    /// The URL carries credentials: they go to that site only, never to a premium reader.
    Credentials,
}

/// A premium reader not called.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SkippedRecord {
    pub(crate) reader: ReaderKind,
    pub(crate) why: PremiumSkip,
}

/// One read's record.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReadRecord {
    pub(crate) direct: Option<DirectRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) browser: Option<BrowserRecord>,
    pub(crate) fallback_reason: Option<FallbackReason>,
    pub(crate) premium: Vec<PremiumRecord>,
    pub(crate) skipped: Vec<SkippedRecord>,
    pub(crate) budget_ms: u64,
    pub(crate) elapsed_ms: u64,
    #[serde(skip)]
    origin: Option<Instant>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl ReadRecord {
    /// A record whose times count from now, for a read with `budget`.
    pub(crate) fn starting_now(budget: Duration) -> Self {
        Self {
            budget_ms: ms(budget),
            origin: Some(Instant::now()),
            ..Self::default()
        }
    }

    /// Milliseconds since the read started.
    pub(crate) fn offset(&self) -> u64 {
        self.origin.map_or(0, |o| ms(o.elapsed()))
    }

    /// The direct read ended (or was skipped) `outcome`, having started at `started_ms`.
    pub(crate) fn direct(&mut self, outcome: DirectOutcome, started_ms: u64) {
        let wall = match outcome {
            DirectOutcome::Failed(ReadFailure::Blocked(wall)) => Some(wall),
            DirectOutcome::Failed(ReadFailure::RateLimitedFor(_)) => Some(Wall::RateLimited),
            _ => None,
        };
        self.direct = Some(DirectRecord {
            outcome,
            wall,
            elapsed_ms: self.offset().saturating_sub(started_ms),
        });
    }

    /// The rendered read, asked for `why`, ended `outcome` (its page read as `read`), having
    /// started at `started_ms`.
    pub(crate) fn rendered(
        &mut self,
        why: RenderWhy,
        outcome: &'static str,
        read: Option<DirectOutcome>,
        started_ms: u64,
    ) {
        self.browser = Some(BrowserRecord {
            why,
            outcome,
            read,
            elapsed_ms: self.offset().saturating_sub(started_ms),
        });
    }

    /// A premium reader ended `outcome`, having started at `started_ms`.
    pub(crate) fn premium(&mut self, reader: ReaderKind, outcome: ReadCallResult, started_ms: u64) {
        self.premium.push(PremiumRecord {
            reader,
            outcome,
            elapsed_ms: self.offset().saturating_sub(started_ms),
        });
    }

    /// A premium reader was not called.
    pub(crate) fn skipped(&mut self, reader: ReaderKind, why: PremiumSkip) {
        self.skipped.push(SkippedRecord { reader, why });
    }

    /// Whether a premium reader that could have read the page was left out only because the
    /// client's premium budget is spent (Firecrawl's 402).
    pub fn premium_refused_for_budget(&self) -> bool {
        self.premium.is_empty()
            && self
                .skipped
                .iter()
                .any(|s| matches!(s.why, PremiumSkip::BudgetSpent))
    }

    /// The read is over.
    pub(crate) fn close(&mut self) {
        self.elapsed_ms = self.offset();
    }
}
