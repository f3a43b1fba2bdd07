//! Pure merge of every source's results: canonical-URL deduplication, order-free attribution and
//! one ordering rule, so the order in which answers arrive never changes the output.
//!
//! Ordering:
//! - **One source keeps its own order.** When only one source has results (SearXNG alone, or one
//!   provider alone), they come back in that source's order, fields untouched — SearXNG's order is
//!   not pure score order (it groups results by category and template), and a fast path that
//!   forwards SearXNG's bytes must give the same answer as this merge.
//! - **Several sources are fused by rank** (reciprocal rank fusion): each source that returned a URL
//!   adds `1 / (RRF_K + rank)` for it, rank being the URL's 1-based position in that source's list.
//!   Raw scores are never compared across sources (SearXNG's `score` and a provider's relevance are
//!   on different scales), so no source's scale dominates. Ties go to the better best rank, then
//!   SearXNG before providers, then the canonical key.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::providers::{PremiumHit, ProviderKind};
use gateway_core::search_result::SearchResult;

/// Where a result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// The SearXNG instance (its own engines are listed in each result's `engines`).
    Searxng,
    /// A premium API.
    Provider(ProviderKind),
}

/// One source's results, in that source's rank order.
#[derive(Debug, Clone)]
pub struct SourceResults {
    /// Who returned them.
    pub source: Source,
    /// SearXNG-shaped results (every field SearXNG sent is kept).
    pub results: Vec<SearchResult>,
}

impl SourceResults {
    /// Turns a provider's hits into SearXNG result objects.
    pub fn from_premium(kind: ProviderKind, hits: &[PremiumHit]) -> Self {
        let engine = kind.engine_label();
        let results = hits
            .iter()
            .enumerate()
            .filter_map(|(i, hit)| {
                let rank = i + 1;
                let mut obj = Map::new();
                obj.insert("url".into(), Value::String(hit.url.clone()));
                obj.insert("title".into(), Value::String(hit.title.clone()));
                obj.insert("content".into(), Value::String(hit.content.clone()));
                obj.insert("engine".into(), Value::String(engine.into()));
                obj.insert(
                    "engines".into(),
                    Value::Array(vec![Value::String(engine.into())]),
                );
                obj.insert("positions".into(), Value::Array(vec![Value::from(rank)]));
                obj.insert("score".into(), Value::from(premium_score(rank)));
                obj.insert("category".into(), Value::String("general".into()));
                obj.insert("template".into(), Value::String("default.html".into()));
                if let Some(date) = &hit.published_date {
                    obj.insert("publishedDate".into(), Value::String(date.clone()));
                }
                SearchResult::from_built(obj)
            })
            .collect();
        Self {
            source: Source::Provider(kind),
            results,
        }
    }
}

/// The `score` a premium result at 1-based `rank` carries on its own (`1 / rank`).
pub(crate) fn premium_score(rank: usize) -> f64 {
    1.0 / rank.max(1) as f64
}

/// The rank-fusion constant: 60, as in the original RRF paper (Cormack et al., 2009). Large enough
/// that a URL two sources agree on beats one that a single source ranks first.
const RRF_K: f64 = 60.0;

/// What a result at 1-based `rank` of one source adds to its URL's fused score.
fn fused_contribution(rank: usize) -> f64 {
    1.0 / (RRF_K + rank.max(1) as f64)
}

/// The merged answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged {
    /// Deduplicated results, best first.
    pub results: Vec<SearchResult>,
    /// Every source with at least one result in `results`.
    pub contributors: BTreeSet<Source>,
    /// Every engine name (SearXNG engines and provider labels) in the results' `engines`.
    pub engines: BTreeSet<String>,
}

impl Merged {
    /// Whether SearXNG contributed a result.
    pub fn searxng_contributed(&self) -> bool {
        self.contributors.contains(&Source::Searxng)
    }

    /// Whether any premium provider contributed a result.
    pub fn premium_contributed(&self) -> bool {
        self.contributors
            .iter()
            .any(|s| matches!(s, Source::Provider(_)))
    }
}

struct Group {
    score: f64,
    /// (rank, source) of the best single occurrence, and where it is.
    best: (usize, Source),
    at: (usize, usize),
    sources: BTreeSet<Source>,
    engines: BTreeSet<String>,
    positions: BTreeSet<u64>,
}

fn better(a: (usize, Source), b: (usize, Source)) -> bool {
    // The better rank wins; then SearXNG before providers. Total order, so the winner does not
    // depend on arrival order.
    a < b
}

/// The number of distinct canonical URLs seen so far: what the fallback compares with its target,
/// kept up to date as answers arrive instead of re-merging everything after each one.
#[derive(Debug, Default)]
pub struct DistinctUrls(KeySet<String>);

/// A set of canonical keys on the miss path: foldhash (hashbrown's default hasher, seeded per
/// process) instead of SipHash, which cost more than the set's work for these short keys.
type KeySet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

impl DistinctUrls {
    /// Counts one source's results in.
    pub fn add(&mut self, answer: &SourceResults) {
        self.0.reserve(answer.results.len());
        for obj in &answer.results {
            if !self.0.contains(obj.key()) {
                self.0.insert(obj.key().to_owned());
            }
        }
    }

    /// Distinct URLs so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no URL was seen yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Merges every source's results. The output depends only on the set of inputs, not their order.
#[cfg(test)]
pub(crate) fn merge(answers: &[SourceResults]) -> Merged {
    merge_owned(answers.to_vec())
}

/// [`merge`], taking the answers so the kept result objects move instead of being copied.
pub fn merge_owned(mut answers: Vec<SourceResults>) -> Merged {
    answers.retain(|answer| !answer.results.is_empty());
    // Several answers from the same source are not several sources (the order rule's question).
    let sources: BTreeSet<Source> = answers.iter().map(|a| a.source).collect();
    if sources.len() == 1 && answers.len() == 1 {
        return single_source(answers.remove(0));
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for (a, answer) in answers.iter().enumerate() {
        let mut seen_in_source = BTreeSet::new();
        for (i, obj) in answer.results.iter().enumerate() {
            let key = obj.key();
            if !seen_in_source.insert(key) {
                // A source listing the same URL twice is not two votes.
                continue;
            }
            let rank = seen_in_source.len();
            let contribution = fused_contribution(rank);
            let entry = groups.entry(key.to_owned()).or_insert_with(|| Group {
                score: 0.0,
                best: (rank, answer.source),
                at: (a, i),
                sources: BTreeSet::new(),
                engines: BTreeSet::new(),
                positions: BTreeSet::new(),
            });
            entry.score += contribution;
            if better((rank, answer.source), entry.best) {
                entry.best = (rank, answer.source);
                entry.at = (a, i);
            }
            entry.sources.insert(answer.source);
            entry.engines.extend(obj.engines().iter().cloned());
            entry.engines.extend(obj.engine().map(str::to_owned));
            entry.positions.extend(obj.positions().iter().copied());
        }
    }

    let mut merged = Merged::default();
    let mut ordered: Vec<(String, Group)> = groups.into_iter().collect();
    // Sum of f64 in different orders can differ in the last bit: compare rounded scores.
    let rounded = |s: f64| (s * 1e9).round();
    ordered.sort_by(|(ka, a), (kb, b)| {
        rounded(b.score)
            .total_cmp(&rounded(a.score))
            .then_with(|| a.best.cmp(&b.best))
            .then_with(|| ka.cmp(kb))
    });
    for (_, group) in ordered {
        // Each (answer, result) is the best of exactly one group: taking it leaves nothing behind
        // that another group needs.
        let (a, i) = group.at;
        let mut obj = std::mem::take(&mut answers[a].results[i]);
        let positions =
            (!group.positions.is_empty()).then(|| group.positions.iter().copied().collect());
        obj.set_merged(
            group.engines.iter().cloned().collect(),
            positions,
            rounded(group.score) / 1e9,
        );
        merged.contributors.extend(group.sources.iter().copied());
        merged.engines.extend(group.engines);
        merged.results.push(obj);
    }
    merged
}

/// One source's answer as it came, minus repeated URLs (the first occurrence stays).
fn single_source(answer: SourceResults) -> Merged {
    let mut merged = Merged::default();
    let first: Vec<bool> = {
        let mut seen = KeySet::with_capacity_and_hasher(answer.results.len(), Default::default());
        answer
            .results
            .iter()
            .map(|obj| seen.insert(obj.key()))
            .collect()
    };
    merged.results.reserve(answer.results.len());
    for (obj, first) in answer.results.into_iter().zip(first) {
        if !first {
            continue;
        }
        merged.engines.extend(obj.engines().iter().cloned());
        if let Some(engine) = obj.engine() {
            merged.engines.insert(engine.to_owned());
        }
        merged.results.push(obj);
    }
    if !merged.results.is_empty() {
        merged.contributors.insert(answer.source);
    }
    merged
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn searxng(items: &[(&str, f64, &[&str])]) -> SourceResults {
        SourceResults {
            source: Source::Searxng,
            results: items
                .iter()
                .map(|(url, score, engines)| {
                    SearchResult::from_json(&json!({"url": url, "title": url, "score": score, "engines": engines,
                           "engine": engines.first().copied().unwrap_or("x"), "parsed_url": ["https"]}))
                    .unwrap()
                })
                .collect(),
        }
    }

    fn premium(kind: ProviderKind, urls: &[&str]) -> SourceResults {
        let hits: Vec<PremiumHit> = urls
            .iter()
            .map(|u| PremiumHit {
                url: (*u).to_owned(),
                title: "t".into(),
                content: "c".into(),
                published_date: None,
            })
            .collect();
        SourceResults::from_premium(kind, &hits)
    }

    #[test]
    fn duplicates_list_every_source_and_every_source_contributes() {
        let merged = merge(&[
            premium(ProviderKind::Brave, &["https://example.org/a"]),
            searxng(&[("https://www.example.org/a/", 2.0, &["alpha", "beta"])]),
        ]);
        assert_eq!(merged.results.len(), 1);
        let r = &merged.results[0].to_object();
        assert_eq!(
            r["url"], "https://www.example.org/a/",
            "same rank: SearXNG's occurrence is the one shown"
        );
        assert_eq!(r["engines"], json!(["alpha", "beta", "brave_api"]));
        assert_eq!(r["score"], json!((2.0 / 61.0 * 1e9_f64).round() / 1e9));
        assert_eq!(
            r["parsed_url"],
            json!(["https"]),
            "SearXNG's own fields are kept"
        );
        assert!(merged.searxng_contributed() && merged.premium_contributed());
    }

    #[test]
    fn distinct_urls_count_what_the_merge_keeps() {
        let answers = [
            premium(
                ProviderKind::Brave,
                &["https://example.org/a", "https://example.org/b"],
            ),
            searxng(&[("https://www.example.org/a/", 2.0, &["alpha"])]),
        ];
        let mut distinct = DistinctUrls::default();
        for a in &answers {
            distinct.add(a);
        }
        assert_eq!(distinct.len(), merge(&answers).results.len());
    }

    fn urls(merged: &Merged) -> Vec<String> {
        merged
            .results
            .iter()
            .map(|r| r.to_object()["url"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn searxng_alone_keeps_searxngs_own_order_and_fields() {
        // SearXNG groups by category and template: its order is not score order.
        let answer = searxng(&[
            ("https://a.example/", 0.5, &["alpha"]),
            ("https://b.example/", 3.0, &["alpha", "beta"]),
            ("https://c.example/", 1.0, &["beta"]),
        ]);
        let merged = merge(std::slice::from_ref(&answer));
        assert_eq!(
            urls(&merged),
            [
                "https://a.example/",
                "https://b.example/",
                "https://c.example/"
            ]
        );
        assert_eq!(merged.results, answer.results, "forwarded untouched");
        assert!(merged.searxng_contributed() && !merged.premium_contributed());
        // A provider that answered nothing does not make it a fusion.
        let with_empty = merge(&[answer, premium(ProviderKind::Exa, &[])]);
        assert_eq!(with_empty, merged);
    }

    #[test]
    fn one_provider_alone_keeps_its_order() {
        let merged = merge(&[premium(
            ProviderKind::Brave,
            &["https://z.example/", "https://a.example/"],
        )]);
        assert_eq!(urls(&merged), ["https://z.example/", "https://a.example/"]);
    }

    #[test]
    fn several_sources_are_fused_by_rank_never_by_raw_score() {
        // SearXNG's scores (9, 8) dwarf 1/rank: summed, they would put a first. By rank, b — found
        // by both — leads, then each source's first result (SearXNG's before the provider's).
        let merged = merge(&[
            searxng(&[
                ("https://a.example/", 9.0, &["alpha"]),
                ("https://b.example/", 8.0, &["alpha"]),
            ]),
            premium(
                ProviderKind::Exa,
                &["https://c.example/", "https://b.example/"],
            ),
        ]);
        assert_eq!(
            urls(&merged),
            [
                "https://b.example/",
                "https://a.example/",
                "https://c.example/"
            ]
        );
    }

    #[test]
    fn premium_results_carry_the_searxng_fields() {
        let hits = [PremiumHit {
            url: "https://x.example/".into(),
            title: "X".into(),
            content: "about x".into(),
            published_date: Some("2026-11-27T10:00:00".into()),
        }];
        let r = &SourceResults::from_premium(ProviderKind::Tavily, &hits).results[0].to_object();
        for field in [
            "url",
            "title",
            "content",
            "engine",
            "engines",
            "score",
            "category",
            "positions",
            "publishedDate",
        ] {
            assert!(r.contains_key(field), "{field}");
        }
        assert_eq!(r["engine"], "tavily_api");
    }

    fn arb_answers() -> impl Strategy<Value = Vec<SourceResults>> {
        let url = prop::sample::select(vec![
            "https://a.example/",
            "https://www.a.example",
            "https://b.example/x?utm_source=1",
            "http://b.example/x",
            "https://c.example/",
            "https://d.example/p?z=1&y=2",
            "https://d.example/p?y=2&z=1",
            "https://e.example/",
        ]);
        let sx = prop::collection::vec((url.clone(), 0u32..40), 0..6).prop_map(|items| {
            let owned: Vec<(String, f64)> = items
                .into_iter()
                .map(|(u, s)| (u.to_owned(), f64::from(s) / 8.0))
                .collect();
            let refs: Vec<(&str, f64, &[&str])> = owned
                .iter()
                .map(|(u, s)| (u.as_str(), *s, &["alpha"][..]))
                .collect();
            searxng(&refs)
        });
        let prem = |kind| {
            prop::collection::vec(url.clone(), 0..6).prop_map(move |urls| premium(kind, &urls))
        };
        (
            sx,
            prem(ProviderKind::Brave),
            prem(ProviderKind::Exa),
            prem(ProviderKind::Jina),
        )
            .prop_map(|(a, b, c, d)| vec![a, b, c, d])
    }

    proptest! {
        #[test]
        fn arrival_order_never_changes_the_output(answers in arb_answers(), perm in Just(()).prop_perturb(|_, mut rng| {
            let mut idx: Vec<usize> = (0..4).collect();
            for i in (1..idx.len()).rev() { idx.swap(i, (rng.next_u32() as usize) % (i + 1)); }
            idx
        })) {
            let reference = merge(&answers);
            let permuted: Vec<SourceResults> = perm.iter().map(|&i| answers[i].clone()).collect();
            prop_assert_eq!(merge(&permuted), reference);
        }
    }
}
