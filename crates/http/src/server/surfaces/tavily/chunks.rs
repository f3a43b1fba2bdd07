//! Tavily's query-relevant chunks, shared by its extract and its advanced search: the
//! `per_source` passages of a page (each at most 500 characters) that best answer a query, chosen
//! by [`gateway_engine::read::passages`] from the page as read or cached, in page order, joined by
//! ` [...] ` as Tavily joins them. Two chosen passages that stand side by side on the page become
//! one chunk only while it stays within the 500 characters ([`Merge::WithinMaxChars`]). With a
//! reranker (`RERANK_URL`), the lexical ranking's best candidates are put in its order first
//! ([`gateway_engine::Engine::rank_passages`]; the lexical order when it cannot be used).

use std::sync::Arc;
use std::time::Duration;

use crate::gateway::Gateway;
use gateway_engine::read::passages::{
    Merge, PassageOrder, RankedBy, Selection, TAVILY_CHUNK_CHARS,
};
use gateway_upstreams::reader::Document;

/// `chunks_per_source` when a query comes without it (Tavily's default).
pub(super) const DEFAULT_CHUNKS: usize = 3;

/// How Tavily joins the chunks of one page.
const CHUNK_JOIN: &str = " [...] ";

/// The `per_source` passages of each page that best answer `query`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Chunks {
    pub(super) query: String,
    pub(super) per_source: usize,
}

impl Chunks {
    /// The page's best chunks for the query, in page order, joined as Tavily joins them, and
    /// which ranking chose them; ranked on the blocking pool (a few milliseconds of CPU for a
    /// long page, which a request's worker should not spend while other connections wait), then
    /// by the reranker when one is configured, within `limit` (what is left of the request's
    /// budget).
    pub(super) async fn of(
        &self,
        gateway: &Gateway,
        document: Arc<Document>,
        limit: Duration,
    ) -> (String, RankedBy) {
        let selection = Selection {
            max_chars: TAVILY_CHUNK_CHARS,
            max_passages: Some(self.per_source),
            budget: None,
            order: PassageOrder::Page,
            relevant_only: false,
            merge: Merge::WithinMaxChars,
        };
        let ranked = gateway
            .rank_passages(
                vec![document],
                self.query.clone(),
                TAVILY_CHUNK_CHARS,
                limit,
            )
            .await;
        let chosen = ranked.choose(&selection);
        let texts: Vec<&str> = chosen.iter().map(|c| c.text.as_str()).collect();
        (texts.join(CHUNK_JOIN), ranked.ranked_by())
    }
}
