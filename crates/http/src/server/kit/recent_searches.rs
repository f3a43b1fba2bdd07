//! The last [`KEPT`] searches, newest first, for the operator's page: who searched, through which
//! door, for what (unless `UI_SHOW_QUERIES=false`, when a query is never kept), how it was answered
//! and how long it took, and the search's `explain` record (the `gateway` object `explain=1`
//! would have added), found again by request ID.
//!
//! Fed by [`crate::server::kit::search_call`] for every search a surface asked the pipeline for (shed ones
//! too); read by [`crate::server::operator::ui`]. Bounded: the oldest search leaves when a new one comes. The record
//! is kept as an owned snapshot ([`Record`]), so what was kept cannot change, and rendered as JSON
//! only when the page asks for it: at thousands of searches a second, serializing every record
//! would cost each cache hit more than serving it. This module knows nothing of how it was made.
//!
//! Each reader sees what its [`Viewer`] allows: the operator every search, a client only the
//! searches made with its own key (its end users' too: `alice/u1` is `alice`'s).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::time::Instant;

use crate::clients::ClientName;
use crate::settings::ui::Queries;
use gateway_core::cache::CacheStatus;
use gateway_core::request::Surface;
use gateway_engine::search::Outcome;

/// Searches kept.
pub(crate) const KEPT: usize = 50;

/// How a search ended, as the list says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Answered, with this outcome, cache status and HTTP status.
    Answered {
        outcome: Outcome,
        cache: CacheStatus,
        status: StatusCode,
    },
    /// Shed: no fan-out slot in time (503), or the computation was lost (500).
    Unanswered { status: StatusCode },
}

/// Who reads the list, and so whose searches (and usage) it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Viewer {
    /// Every client's: the admin token, or anyone on an open gateway (no `API_KEYS_FILE`).
    Operator,
    /// Only this client's own: the searches made with its key.
    Client(ClientName),
}

impl Viewer {
    /// Whether this viewer sees what client `name` did: a client named in `API_KEYS_FILE`, or
    /// one of its end users, `client/user` (`crate::clients::end_users::parent_of`: a client's
    /// name never holds a `/`).
    pub(crate) fn sees(&self, name: &str) -> bool {
        match self {
            Self::Operator => true,
            Self::Client(own) => {
                let key_holder = name.split_once('/').map_or(name, |(client, _)| client);
                key_holder == own.as_str()
            }
        }
    }
}

/// One search, as it happened.
#[derive(Debug)]
pub(crate) struct Search {
    pub(crate) request_id: String,
    /// The caller's name: a client's, or an end user's (`client/user`).
    pub(crate) client: String,
    pub(crate) surface: Surface,
    /// `None` when queries are not kept.
    pub(crate) query: Option<String>,
    pub(crate) ended: Ended,
    pub(crate) latency: Duration,
    pub(crate) results: usize,
    pub(crate) premium_calls: u32,
    pub(crate) premium_usd: f64,
    /// Its `explain` record; `None` for a search that got no answer.
    pub(crate) explanation: Option<Box<dyn Record>>,
}

/// A search's `explain` record as it was when the search ended, rendered when asked.
pub(crate) trait Record: std::fmt::Debug + Send + Sync {
    /// The record as JSON; `None` when it cannot be rendered.
    fn to_json(&self) -> Option<Box<RawValue>>;
}

impl<T: Serialize + std::fmt::Debug + Send + Sync> Record for T {
    fn to_json(&self) -> Option<Box<RawValue>> {
        serde_json::value::to_raw_value(self).ok()
    }
}

/// A kept search and when it was kept.
#[derive(Debug)]
struct Kept {
    at: Instant,
    search: Search,
}

/// The list. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct RecentSearches {
    queries: Queries,
    kept: Arc<Mutex<VecDeque<Kept>>>,
}

/// One search as the page lists it.
#[derive(Debug, Serialize)]
pub(crate) struct Row<'a> {
    pub(crate) request_id: &'a str,
    /// Seconds since it ended.
    pub(crate) age_seconds: f64,
    pub(crate) client: &'a str,
    pub(crate) surface: &'static str,
    /// `null` when queries are not kept (`UI_SHOW_QUERIES=false`).
    pub(crate) query: Option<&'a str>,
    /// The outcome label, or `shed`.
    pub(crate) outcome: &'static str,
    /// `hit`, `miss` or `stale`; `null` when unanswered.
    pub(crate) cache: Option<&'static str>,
    pub(crate) status: u16,
    pub(crate) latency_ms: f64,
    pub(crate) results: usize,
    pub(crate) premium_calls: u32,
    pub(crate) premium_usd: f64,
    /// Whether [`RecentSearches::explanation`] has its record.
    pub(crate) explained: bool,
}

impl RecentSearches {
    /// An empty list that keeps queries as `queries` says.
    pub(crate) fn new(queries: Queries) -> Self {
        Self {
            queries,
            kept: Arc::new(Mutex::new(VecDeque::with_capacity(KEPT))),
        }
    }

    /// Whether a search's query is to be kept ([`Search::query`] is dropped otherwise).
    pub(crate) fn keeps_queries(&self) -> bool {
        self.queries == Queries::Shown
    }

    /// Keeps `search` (without its query unless queries are kept), dropping the oldest past
    /// [`KEPT`].
    pub(crate) fn push(&self, mut search: Search) {
        if !self.keeps_queries() {
            search.query = None;
        }
        let at = Instant::now();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let oldest = if kept.len() == KEPT {
            kept.pop_back()
        } else {
            None
        };
        kept.push_front(Kept { at, search });
        drop(kept);
        // Freed after the lock: every search of every thread passes through it.
        drop(oldest);
    }

    /// The kept searches `viewer` sees, newest first, rendered by `render` (the lock is held
    /// meanwhile).
    pub(crate) fn rows<T>(
        &self,
        viewer: &Viewer,
        render: impl FnOnce(&mut dyn Iterator<Item = Row<'_>>) -> T,
    ) -> T {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let mut rows = kept
            .iter()
            .filter(|k| viewer.sees(&k.search.client))
            .map(|k| row(k, now));
        render(&mut rows)
    }

    /// The newest kept search with `request_id` that `viewer` sees, and its record, rendered by
    /// `render`. Another client's search is not found, as if it had never been kept (request IDs
    /// are the clients' own, so two clients may have used the same one).
    pub(crate) fn explanation<T>(
        &self,
        viewer: &Viewer,
        request_id: &str,
        render: impl FnOnce(Row<'_>, Option<&RawValue>) -> T,
    ) -> Option<T> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let found = kept
            .iter()
            .find(|k| k.search.request_id == request_id && viewer.sees(&k.search.client))?;
        let record = found.search.explanation.as_ref().and_then(|r| r.to_json());
        Some(render(row(found, Instant::now()), record.as_deref()))
    }
}

fn row(kept: &Kept, now: Instant) -> Row<'_> {
    let search = &kept.search;
    let (outcome, cache, status) = match search.ended {
        Ended::Answered {
            outcome,
            cache,
            status,
        } => (outcome.as_str(), Some(cache.as_str()), status),
        Ended::Unanswered { status } => ("shed", None, status),
    };
    Row {
        request_id: &search.request_id,
        age_seconds: millis(now.duration_since(kept.at)) / 1000.0,
        client: &search.client,
        surface: search.surface.as_str(),
        query: search.query.as_deref(),
        outcome,
        cache,
        status: status.as_u16(),
        latency_ms: millis(search.latency),
        results: search.results,
        premium_calls: search.premium_calls,
        premium_usd: search.premium_usd,
        explained: search.explanation.is_some(),
    }
}

/// Milliseconds, to the microsecond.
fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn search(id: &str, query: &str) -> Search {
        search_by("alice", id, query)
    }

    fn search_by(client: &str, id: &str, query: &str) -> Search {
        Search {
            request_id: id.to_owned(),
            client: client.to_owned(),
            surface: Surface::Searxng,
            query: Some(query.to_owned()),
            ended: Ended::Answered {
                outcome: Outcome::SearxngOk,
                cache: CacheStatus::Miss,
                status: StatusCode::OK,
            },
            latency: Duration::from_micros(12_345),
            results: 3,
            premium_calls: 0,
            premium_usd: 0.0,
            explanation: Some(Box::new(serde_json::json!({"id": id}))),
        }
    }

    fn ids(recent: &RecentSearches) -> Vec<String> {
        recent.rows(&Viewer::Operator, |rows| {
            rows.map(|r| r.request_id.to_owned()).collect()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_newest_come_first_and_only_the_last_50_are_kept() {
        let recent = RecentSearches::new(Queries::Shown);
        for n in 0..KEPT + 5 {
            recent.push(search(&n.to_string(), "q"));
        }
        let ids = ids(&recent);
        assert_eq!(ids.len(), KEPT);
        assert_eq!(ids.first().map(String::as_str), Some("54"));
        assert_eq!(ids.last().map(String::as_str), Some("5"));
        assert!(
            recent
                .explanation(&Viewer::Operator, "4", |_, _| ())
                .is_none(),
            "left the list"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_search_is_found_by_request_id_with_its_record_and_age() {
        let recent = RecentSearches::new(Queries::Shown);
        recent.push(search("r-1", "rust <b>"));
        tokio::time::advance(Duration::from_millis(1500)).await;
        let (row, record) = recent
            .explanation(&Viewer::Operator, "r-1", |row, record| {
                (
                    serde_json::to_value(&row).unwrap(),
                    record.map(|r| r.get().to_owned()),
                )
            })
            .unwrap();
        assert_eq!(row["query"], "rust <b>");
        assert_eq!(row["age_seconds"], 1.5);
        assert_eq!(row["latency_ms"], 12.345);
        assert_eq!(row["surface"], "searxng");
        assert_eq!(record.as_deref(), Some(r#"{"id":"r-1"}"#));
    }

    #[test]
    fn without_ui_show_queries_no_query_is_kept() {
        let recent = RecentSearches::new(Queries::Hidden);
        assert!(!recent.keeps_queries());
        recent.push(search("r-1", "secret"));
        let queries: Vec<Option<String>> = recent.rows(&Viewer::Operator, |rows| {
            rows.map(|r| r.query.map(str::to_owned)).collect()
        });
        assert_eq!(queries, vec![None]);
    }

    #[test]
    fn a_client_sees_only_its_own_searches_and_its_end_users_and_the_operator_sees_all() {
        let recent = RecentSearches::new(Queries::Shown);
        recent.push(search_by("alice", "a-1", "alice private medical question"));
        recent.push(search_by("alice/u-7f3a", "a-2", "asked through open webui"));
        recent.push(search_by("bob", "b-1", "bob's own"));
        recent.push(search_by("alicia", "c-1", "a name alice is a prefix of"));
        // Bob reused alice's request ID: each finds its own.
        recent.push(search_by("bob", "a-1", "bob chose the same ID"));
        let alice = Viewer::Client(ClientName::new("alice"));
        let bob = Viewer::Client(ClientName::new("bob"));
        let seen = |viewer: &Viewer| -> Vec<String> {
            recent.rows(viewer, |rows| {
                rows.map(|r| format!("{}:{}", r.client, r.request_id))
                    .collect()
            })
        };
        assert_eq!(seen(&alice), ["alice/u-7f3a:a-2", "alice:a-1"]);
        assert_eq!(seen(&bob), ["bob:a-1", "bob:b-1"]);
        assert_eq!(seen(&Viewer::Operator).len(), 5);
        let query_of = |viewer: &Viewer, id: &str| {
            recent.explanation(viewer, id, |row, _| row.query.map(str::to_owned))
        };
        assert_eq!(
            query_of(&alice, "a-1"),
            Some(Some("alice private medical question".to_owned()))
        );
        assert_eq!(
            query_of(&bob, "a-1"),
            Some(Some("bob chose the same ID".to_owned()))
        );
        assert_eq!(query_of(&bob, "a-2"), None, "not bob's");
        assert_eq!(query_of(&alice, "c-1"), None, "alicia is not alice");
    }
}
