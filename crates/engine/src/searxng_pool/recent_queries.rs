//! The queries clients searched SearXNG with lately, for the engine probes' query: the most
//! frequent of the last [`KEPT`] (the most recent among equals), so a probe asks what users ask —
//! an engine's block often depends on the query, and a realistic one tells more than a constant.
//! Bounded: a fixed ring of the last queries, nothing else; never logged or shown.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// Queries kept.
const KEPT: usize = 32;
/// Longest query kept, in bytes (a probe is small; a long query is not a popular one anyway).
const LONGEST: usize = 200;

/// The last client queries sent to SearXNG.
#[derive(Debug, Default)]
pub(crate) struct RecentQueries {
    ring: Mutex<VecDeque<String>>,
}

impl RecentQueries {
    /// A client's search asked SearXNG for `query`.
    pub(crate) fn note(&self, query: &str) {
        if query.is_empty() || query.len() > LONGEST {
            return;
        }
        let mut ring = self.lock();
        if ring.len() == KEPT {
            ring.pop_front();
        }
        ring.push_back(query.to_owned());
    }

    /// The most frequent recent query (the most recent of those tied), if any was noted.
    pub(crate) fn popular(&self) -> Option<String> {
        let ring = self.lock();
        let mut best: Option<(&str, usize)> = None;
        // Newest first, so among equals the most recent wins (a later one must count strictly more).
        for query in ring.iter().rev() {
            let count = ring.iter().filter(|q| *q == query).count();
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((query, count));
            }
        }
        best.map(|(query, _)| query.to_owned())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        // A ring of strings: a poisoned lock still holds a consistent one.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_frequent_recent_query_wins_and_the_newest_breaks_ties() {
        let recent = RecentQueries::default();
        assert_eq!(recent.popular(), None);
        recent.note("rust");
        recent.note("tokio");
        assert_eq!(recent.popular().as_deref(), Some("tokio"), "a tie: newest");
        recent.note("rust");
        assert_eq!(recent.popular().as_deref(), Some("rust"));
    }

    #[test]
    fn only_the_last_queries_count_and_long_ones_are_not_kept() {
        let recent = RecentQueries::default();
        recent.note("old favourite");
        recent.note("old favourite");
        for i in 0..KEPT {
            recent.note(&format!("q{i}"));
        }
        assert_eq!(recent.popular().as_deref(), Some("q31"), "pushed out");
        recent.note(&"x".repeat(LONGEST + 1));
        assert_eq!(recent.popular().as_deref(), Some("q31"));
    }
}
