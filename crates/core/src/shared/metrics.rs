//! The shared tier's families: Redis operations by kind and result, whether Redis is reachable,
//! and what the shared answer tier found.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::metrics::{label_value_as_str, Registry};

label_value_as_str!(Operation, OpResult, SharedLookup);

/// What a Redis round trip was for: the `operation` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Operation {
    /// The miss path's first read: the answer, the breaker boards, the rotation counter.
    Read,
    /// Claiming the lease of a computation.
    LeaseClaim,
    /// Renewing a held lease.
    LeaseRenew,
    /// A follower looking for the leader's answer.
    FlightPoll,
    /// Storing an answer (and releasing the lease).
    AnswerWrite,
    /// Releasing a lease without an answer.
    LeaseRelease,
    /// Publishing breaker transitions.
    BreakerWrite,
    /// Claiming the one probe of a shared open period.
    ProbeClaim,
    /// The background reachability check.
    Ping,
    /// Reading a page another replica read.
    PageRead,
    /// Storing a page read here.
    PageWrite,
    /// Taking a client's request from its shared rate.
    RateCheck,
    /// Reading a client's premium calls and spend of the last 24 h.
    BudgetRead,
    /// Charging a client's premium calls and spend.
    BudgetCharge,
    /// Reading (or taking) an MCP authorization record: a registration, a code, a token.
    GrantRead,
    /// Storing or deleting an MCP authorization record.
    GrantWrite,
    /// Reading a crawl job: its record, its pages, its errors, the jobs running.
    JobRead,
    /// Writing a crawl job: creating it, its status, a page or a failure handed in.
    JobWrite,
    /// A crawl job's frontier: URLs taken (new or claimed from a silent replica) or added.
    Frontier,
}

impl Operation {
    /// Every operation, for metric initialisation.
    pub(crate) const ALL: [Operation; 19] = [
        Self::Read,
        Self::LeaseClaim,
        Self::LeaseRenew,
        Self::FlightPoll,
        Self::AnswerWrite,
        Self::LeaseRelease,
        Self::BreakerWrite,
        Self::ProbeClaim,
        Self::Ping,
        Self::PageRead,
        Self::PageWrite,
        Self::RateCheck,
        Self::BudgetRead,
        Self::BudgetCharge,
        Self::GrantRead,
        Self::GrantWrite,
        Self::JobRead,
        Self::JobWrite,
        Self::Frontier,
    ];

    /// The label value and span attribute.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::LeaseClaim => "lease_claim",
            Self::LeaseRenew => "lease_renew",
            Self::FlightPoll => "flight_poll",
            Self::AnswerWrite => "answer_write",
            Self::LeaseRelease => "lease_release",
            Self::BreakerWrite => "breaker_write",
            Self::ProbeClaim => "probe_claim",
            Self::PageRead => "page_read",
            Self::PageWrite => "page_write",
            Self::Ping => "ping",
            Self::RateCheck => "rate_check",
            Self::BudgetRead => "budget_read",
            Self::BudgetCharge => "budget_charge",
            Self::GrantRead => "grant_read",
            Self::GrantWrite => "grant_write",
            Self::JobRead => "job_read",
            Self::JobWrite => "job_write",
            Self::Frontier => "frontier",
        }
    }
}

/// How a Redis operation ended: the `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum OpResult {
    /// Redis answered.
    Ok,
    /// No answer within `REDIS_TIMEOUT_MS`.
    Timeout,
    /// Refused, disconnected, or an unexpected reply.
    Error,
    /// Not attempted: Redis was found unavailable moments ago (local tiers only until the retry).
    Skipped,
}

impl OpResult {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Timeout => "timeout",
            Self::Error => "error",
            Self::Skipped => "skipped",
        }
    }

    /// Every result, for metric initialisation.
    pub(crate) const ALL: [OpResult; 4] = [Self::Ok, Self::Timeout, Self::Error, Self::Skipped];
}

/// What the shared answer tier found for a local miss: the `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SharedLookup {
    /// An answer another replica (or this one) stored.
    Hit,
    /// Nothing stored.
    Miss,
    /// A value this version cannot read (another version's, or damaged): treated as a miss.
    Unreadable,
}

impl SharedLookup {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Hit => "hit",
            Self::Miss => "miss",
            Self::Unreadable => "unreadable",
        }
    }

    /// Every result, for metric initialisation.
    pub(crate) const ALL: [SharedLookup; 3] = [Self::Hit, Self::Miss, Self::Unreadable];
}

/// `{operation, result}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct OperationLabels {
    pub(crate) operation: Operation,
    pub(crate) result: OpResult,
}

/// `{result}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct LookupLabels {
    pub(crate) result: SharedLookup,
}

/// Every shared-tier family. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SharedMetrics {
    /// `redis_operations_total{operation,result}`.
    pub(crate) operations: Family<OperationLabels, Counter>,
    /// `redis_connected`: 1 while the last operation reached Redis.
    pub(crate) connected: Gauge,
    /// `shared_cache_requests_total{result}`: local misses looked up in the shared tier.
    pub(crate) lookups: Family<LookupLabels, Counter>,
    /// `shared_coalesced_total`: misses answered by another replica's computation.
    pub(crate) coalesced: Counter,
}

impl SharedMetrics {
    /// The families, registered on `r`; every series exists from the first scrape.
    pub fn new(r: &mut Registry) -> Self {
        let m = Self {
            operations: r.registered(
                "redis_operations",
                "Round trips to the shared Redis tier by operation and result",
                Family::default(),
            ),
            connected: r.registered(
                "redis_connected",
                "1 while the shared Redis tier is reachable (0 when unset or unreachable)",
                Gauge::default(),
            ),
            lookups: r.registered(
                "shared_cache_requests",
                "Local cache misses looked up in the shared Redis tier, by result",
                Family::default(),
            ),
            coalesced: r.registered(
                "shared_coalesced",
                "Misses answered by an identical computation on another replica",
                Counter::default(),
            ),
        };
        for operation in Operation::ALL {
            for result in OpResult::ALL {
                let _ = m
                    .operations
                    .get_or_create(&OperationLabels { operation, result });
            }
        }
        for result in SharedLookup::ALL {
            let _ = m.lookups.get_or_create(&LookupLabels { result });
        }
        m
    }
}
