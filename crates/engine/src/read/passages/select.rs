//! Which passages answer a query: the best-scored first, as many as asked and as the token budget
//! holds, given back in page order or score order, adjacent ones merged.

use std::ops::Range;
use std::sync::Arc;

use super::budget::{TokenBudget, TokenCounter};
use super::rank;
use super::split::{split, Passage};

/// The order chosen passages come back in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PassageOrder {
    /// As they stand on the page (Tavily's chunks).
    #[default]
    Page,
    /// The best first.
    Score,
}

/// What a door asks of a selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The longest passage, in characters (Tavily's chunks: 500).
    pub max_chars: usize,
    /// Passages chosen at most (before adjacent ones merge); `None`: as many as the budget holds.
    pub max_passages: Option<usize>,
    /// Tokens the chosen passages' texts hold at most, together; `None`: no budget.
    pub budget: Option<TokenBudget>,
    /// The order they come back in.
    pub order: PassageOrder,
    /// Only passages with a word of the query: none to fill the budget with when the best are in
    /// (several pages' passages for an agent's context); `false` gives the first passages of a
    /// page that has no word of the query (Tavily's chunks).
    pub relevant_only: bool,
    /// How adjacent chosen passages of one page join.
    pub merge: Merge,
}

/// How adjacent chosen passages of one page join into one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Merge {
    /// Into one run, however long (nothing between them was left out).
    #[default]
    Adjacent,
    /// Into one run only while it stays within the selection's `max_chars`: for a door whose
    /// every chunk has a length cap (Tavily's 500 characters).
    WithinMaxChars,
}

/// Passages chosen for a query: one passage, or several adjacent on the page merged into one.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// The text, adjacent passages joined by a line end (nothing between them was left out).
    pub text: String,
    /// The headings its first passage sits under, outermost first.
    pub heading_path: Arc<[String]>,
    /// The best BM25 score among its passages.
    pub score: f32,
    /// Which passages of the page's split it holds, in page order.
    pub passages: Range<usize>,
}

/// The order passages are taken in and what each is worth, from the lexical ranking alone or
/// with a reranker's order over its best candidates ([`Ranking::reranked`]): what [`choose`]
/// takes, whichever ranked.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ranking {
    /// Every passage's index once, the best first.
    order: Vec<usize>,
    /// Each passage's score, never higher than a passage before it in `order`: what a chosen
    /// run reports, what a budget drops the lowest of, what score order sorts by.
    scores: Vec<f32>,
    /// Whether each passage has a word of the query (`relevant_only`).
    relevant: Vec<bool>,
}

impl Ranking {
    /// The lexical ranking: BM25's `scores`, the best first, ties in page order.
    pub(super) fn lexical(scores: Vec<f32>) -> Self {
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        let relevant = scores.iter().map(|s| *s > 0.0).collect();
        Self {
            order,
            scores,
            relevant,
        }
    }

    /// The first `n` passages of this ranking, the best first: what a reranker is asked about.
    pub(super) fn best(&self, n: usize) -> &[usize] {
        &self.order[..n.min(self.order.len())]
    }

    /// This (lexical) ranking with its best `candidates` put in the order `reranked` gives —
    /// positions in `candidates`, the best first; a candidate it leaves out follows those it
    /// names, in the lexical order. The passages after the candidates keep their place and
    /// score; a candidate scores above every one of them, by its place in the new order.
    /// Relevance stays lexical (a word of the query): a reranker orders, it does not widen what
    /// `relevant_only` takes.
    pub(super) fn reranked(&self, candidates: &[usize], reranked: &[usize]) -> Self {
        let mut named = vec![false; candidates.len()];
        let mut head: Vec<usize> = Vec::with_capacity(candidates.len());
        for &at in reranked {
            if at < candidates.len() && !named[at] {
                named[at] = true;
                head.push(candidates[at]);
            }
        }
        head.extend(
            candidates
                .iter()
                .zip(&named)
                .filter(|(_, named)| !**named)
                .map(|(i, _)| *i),
        );
        let tail = &self.order[head.len()..];
        let floor = tail.first().map_or(0.0, |i| self.scores[*i].max(0.0));
        let mut scores = self.scores.clone();
        for (place, &i) in head.iter().enumerate() {
            scores[i] = floor + (head.len() - place) as f32;
        }
        let mut order = head;
        order.extend_from_slice(tail);
        Self {
            order,
            scores,
            relevant: self.relevant.clone(),
        }
    }
}

/// The passages of `content` (a page titled `title`) that best answer `query`, within `selection`
/// (its budget counted by `counter`). Passages with no word of the query come after those that
/// have one, in page order, so a page always gives what was asked for when it has that much.
#[cfg(test)]
pub(super) fn select(
    content: &str,
    title: Option<&str>,
    query: &str,
    selection: &Selection,
    counter: TokenCounter,
) -> Vec<Chosen> {
    let passages = split(content, selection.max_chars);
    let ranking = Ranking::lexical(rank::scores(&passages, title, query));
    let page_of = vec![0; passages.len()];
    choose(&passages, &ranking, &page_of, selection, counter)
        .into_iter()
        .map(|(_, chosen)| chosen)
        .collect()
}

/// The passages of several pages (each its passages and title), scored for `query` as one
/// corpus: each passage with the index of its page, and where each page's passages start.
pub(super) fn score_split(
    pages: &[(&[Passage], Option<&str>)],
    query: &str,
) -> (Vec<Passage>, Vec<usize>, Vec<usize>, Vec<f32>) {
    let mut passages = Vec::with_capacity(pages.iter().map(|(split, _)| split.len()).sum());
    let mut page_of = Vec::with_capacity(passages.capacity());
    let mut first_of_page = Vec::with_capacity(pages.len());
    for (page, (split, _)) in pages.iter().enumerate() {
        first_of_page.push(passages.len());
        page_of.extend(std::iter::repeat_n(page, split.len()));
        passages.extend_from_slice(split);
    }
    let scores = rank::scores_titled(&passages, |i| pages[page_of[i]].1, query);
    (passages, page_of, first_of_page, scores)
}

/// The passages of several pages (each its content and title) that best answer `query`, scored
/// as one corpus, within `selection`: each chosen run with the index of its page, its `passages`
/// counted within that page. Page order is the pages' order, then each page's.
#[cfg(test)]
pub(super) fn select_across(
    pages: &[(&str, Option<&str>)],
    query: &str,
    selection: &Selection,
    counter: TokenCounter,
) -> Vec<(usize, Chosen)> {
    let splits: Vec<Vec<Passage>> = pages
        .iter()
        .map(|(content, _)| split(content, selection.max_chars))
        .collect();
    let split_pages: Vec<(&[Passage], Option<&str>)> = splits
        .iter()
        .zip(pages)
        .map(|(split, (_, title))| (split.as_slice(), *title))
        .collect();
    let (passages, page_of, first_of_page, scores) = score_split(&split_pages, query);
    let ranking = Ranking::lexical(scores);
    within_pages(
        choose(&passages, &ranking, &page_of, selection, counter),
        &first_of_page,
    )
}

/// Chosen runs with their `passages` counted within their own page.
pub(super) fn within_pages(
    chosen: Vec<(usize, Chosen)>,
    first_of_page: &[usize],
) -> Vec<(usize, Chosen)> {
    chosen
        .into_iter()
        .map(|(page, mut chosen)| {
            let first = first_of_page[page];
            chosen.passages = chosen.passages.start - first..chosen.passages.end - first;
            (page, chosen)
        })
        .collect()
}

/// The first passages of `content` in page order that fit `budget` together, as one run: the
/// page cut at a passage boundary (none when the first passage alone does not fit).
pub(super) fn leading(
    content: &str,
    max_chars: usize,
    budget: TokenBudget,
    counter: TokenCounter,
) -> Option<Chosen> {
    let passages = split(content, max_chars);
    let mut text = String::new();
    let mut taken = 0;
    for passage in &passages {
        let candidate = if taken == 0 {
            passage.text.clone()
        } else {
            format!("{text}\n{}", passage.text)
        };
        if counter.count(&candidate) > budget.tokens() {
            break;
        }
        text = candidate;
        taken += 1;
    }
    (taken > 0).then(|| Chosen {
        text,
        heading_path: Arc::clone(&passages[0].heading_path),
        score: 0.0,
        passages: 0..taken,
    })
}

/// The best of `passages` (in `ranking`'s order, each of page `page_of[i]`) within `selection`,
/// each run of adjacent chosen passages of one page merged, with its page.
pub(super) fn choose(
    passages: &[Passage],
    ranking: &Ranking,
    page_of: &[usize],
    selection: &Selection,
    counter: TokenCounter,
) -> Vec<(usize, Chosen)> {
    let scores = &ranking.scores;
    let cap = selection.max_passages.unwrap_or(usize::MAX);
    let mut taken: Vec<usize> = Vec::new();
    // Each passage's tokens, counted once.
    let mut tokens: Vec<Option<usize>> = vec![None; passages.len()];
    let mut spent = 0;
    for &i in &ranking.order {
        if taken.len() >= cap {
            break;
        }
        if selection.relevant_only && !ranking.relevant[i] {
            // A reranked order may hold one between relevant passages.
            continue;
        }
        if let Some(budget) = selection.budget {
            let count = counter.count(&passages[i].text);
            tokens[i] = Some(count);
            if spent + count > budget.tokens() {
                continue;
            }
            spent += count;
        }
        taken.push(i);
    }
    let limit = match selection.merge {
        Merge::Adjacent => None,
        Merge::WithinMaxChars => Some(selection.max_chars),
    };
    let mut chosen = merged(passages, scores, page_of, &taken, limit);
    if let Some(budget) = selection.budget {
        // Tokens of a merged text are not always the sum of its parts' (a join can change how
        // the tokenizer cuts): the lowest-scored passage goes until the texts fit.
        let count = |c: &(usize, Chosen)| match tokens[c.1.passages.start] {
            Some(count) if c.1.passages.len() == 1 => count,
            _ => counter.count(&c.1.text),
        };
        while chosen.iter().map(count).sum::<usize>() > budget.tokens() {
            let Some(worst) = taken
                .iter()
                .enumerate()
                .min_by(|a, b| scores[*a.1].total_cmp(&scores[*b.1]).then(b.1.cmp(a.1)))
                .map(|(at, _)| at)
            else {
                break;
            };
            taken.remove(worst);
            chosen = merged(passages, scores, page_of, &taken, limit);
        }
    }
    if selection.order == PassageOrder::Score {
        chosen.sort_by(|(_, a), (_, b)| {
            b.score
                .total_cmp(&a.score)
                .then(a.passages.start.cmp(&b.passages.start))
        });
    }
    chosen
}

/// The `taken` passages in page order, each run of adjacent ones of one page merged into one.
fn merged(
    passages: &[Passage],
    scores: &[f32],
    page_of: &[usize],
    taken: &[usize],
    limit: Option<usize>,
) -> Vec<(usize, Chosen)> {
    let mut in_page_order = taken.to_vec();
    in_page_order.sort_unstable();
    let mut chosen: Vec<(usize, Chosen)> = Vec::new();
    // The characters of the last run, for `limit`.
    let mut last_chars = 0;
    for i in in_page_order {
        let chars = passages[i].text.chars().count();
        match chosen.last_mut() {
            Some((page, last))
                if last.passages.end == i
                    && *page == page_of[i]
                    && limit.is_none_or(|limit| last_chars + 1 + chars <= limit) =>
            {
                last_chars += 1 + chars;
                last.text.push('\n');
                last.text.push_str(&passages[i].text);
                last.score = last.score.max(scores[i]);
                last.passages.end = i + 1;
            }
            _ => {
                last_chars = chars;
                chosen.push((
                    page_of[i],
                    Chosen {
                        text: passages[i].text.clone(),
                        heading_path: Arc::clone(&passages[i].heading_path),
                        score: scores[i],
                        passages: i..i + 1,
                    },
                ));
            }
        }
    }
    chosen
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::settings::TokenizerEncoding;

    const COUNTER: TokenCounter = TokenCounter::new(TokenizerEncoding::O200kBase);

    /// Eight sections of one paragraph each; the fourth and the seventh speak of lighthouses.
    fn page() -> String {
        let mut page = String::from("# Coast guide\n\n");
        for (i, topic) in [
            "harbours",
            "beaches",
            "cliffs",
            "lighthouses",
            "villages",
            "markets",
            "lighthouses",
            "ferries",
        ]
        .iter()
        .enumerate()
        {
            page.push_str(&format!(
                "## Part {i}\n\nThis part describes the {topic} of the coast in plain words, \
                 with enough text around them to make a paragraph.\n\n"
            ));
        }
        page
    }

    fn ask(query: &str, selection: Selection) -> Vec<Chosen> {
        select(&page(), Some("Coast"), query, &selection, COUNTER)
    }

    const TAVILY: Selection = Selection {
        max_chars: 500,
        max_passages: Some(2),
        budget: None,
        order: PassageOrder::Page,
        relevant_only: false,
        merge: Merge::Adjacent,
    };

    #[test]
    fn the_best_passages_come_back_in_page_order_or_score_order() {
        let chosen = ask("lighthouses", TAVILY);
        let paths: Vec<&str> = chosen.iter().map(|c| c.heading_path[1].as_str()).collect();
        assert_eq!(paths, ["Part 3", "Part 6"]);
        assert!(chosen.iter().all(|c| c.text.contains("lighthouses")));
        let by_score = ask(
            "lighthouses harbours harbours",
            Selection {
                max_passages: Some(3),
                order: PassageOrder::Score,
                ..TAVILY
            },
        );
        assert_eq!(by_score.len(), 3);
        assert!(by_score.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn adjacent_chosen_passages_merge_into_one() {
        let chosen = ask(
            "beaches cliffs",
            Selection {
                max_passages: Some(2),
                ..TAVILY
            },
        );
        assert_eq!(chosen.len(), 1, "{chosen:?}");
        assert_eq!(chosen[0].passages, 1..3);
        assert!(chosen[0].text.contains("beaches") && chosen[0].text.contains("cliffs"));
        assert!(chosen[0].text.contains("\n## Part 2\n"));
    }

    #[test]
    fn within_max_chars_adjacent_passages_merge_only_while_the_run_fits() {
        let capped = Selection {
            max_passages: Some(2),
            merge: Merge::WithinMaxChars,
            ..TAVILY
        };
        // Each section is a passage of about 130 characters: two together overrun 200.
        let apart = ask(
            "beaches cliffs",
            Selection {
                max_chars: 200,
                ..capped
            },
        );
        assert_eq!(apart.len(), 2, "{apart:?}");
        assert_eq!(
            (apart[0].passages.clone(), apart[1].passages.clone()),
            (1..2, 2..3)
        );
        assert!(apart.iter().all(|c| c.text.chars().count() <= 200));
        // Within 500 they fit together and merge as before.
        let together = ask("beaches cliffs", capped);
        assert_eq!(together.len(), 1, "{together:?}");
        assert!(together[0].text.chars().count() <= 500);
    }

    #[test]
    fn a_query_nothing_matches_still_gives_the_first_passages() {
        let chosen = ask("zeppelins", TAVILY);
        assert_eq!(chosen.len(), 1, "the first two, merged");
        assert_eq!(chosen[0].passages, 0..2);
        assert_eq!(chosen[0].score, 0.0);
    }

    #[test]
    fn relevant_only_leaves_out_passages_without_a_word_of_the_query() {
        let relevant = Selection {
            max_passages: None,
            relevant_only: true,
            merge: Merge::Adjacent,
            ..TAVILY
        };
        assert!(ask("zeppelins", relevant).is_empty());
        let chosen = ask("lighthouses", relevant);
        assert_eq!(chosen.len(), 2, "{chosen:?}");
        assert!(chosen.iter().all(|c| c.text.contains("lighthouses")));
    }

    #[test]
    fn a_budget_takes_the_best_passages_that_fit() {
        let one = COUNTER.count(&split(&page(), 500)[3].text);
        let chosen = ask(
            "lighthouses",
            Selection {
                max_passages: None,
                budget: Some(TokenBudget::new(one + 1)),
                ..TAVILY
            },
        );
        assert_eq!(chosen.len(), 1);
        assert!(chosen[0].text.contains("lighthouses"));
        let none = ask(
            "lighthouses",
            Selection {
                budget: Some(TokenBudget::new(3)),
                ..TAVILY
            },
        );
        assert!(none.is_empty(), "no passage fits three tokens");
    }

    #[test]
    fn passages_of_several_pages_are_scored_as_one_corpus_and_keep_their_page() {
        let other =
            "# Ferry timetable\n\n## Winter\n\nThe winter ferry leaves the harbour at seven \
                     and the lighthouses are lit by then.\n\n## Summer\n\nIn summer the boats \
                     run every hour.";
        let pages = [(page(), Some("Coast")), (other.to_owned(), Some("Ferries"))];
        let borrowed: Vec<(&str, Option<&str>)> =
            pages.iter().map(|(c, t)| (c.as_str(), *t)).collect();
        let chosen = select_across(
            &borrowed,
            "winter ferry lighthouses",
            &Selection {
                max_passages: Some(3),
                order: PassageOrder::Score,
                ..TAVILY
            },
            COUNTER,
        );
        assert_eq!(chosen.len(), 3, "{chosen:?}");
        assert_eq!(
            chosen[0].0, 1,
            "the winter ferry passage is best: {chosen:?}"
        );
        assert!(chosen[0].1.text.contains("winter ferry"));
        assert_eq!(&chosen[0].1.heading_path[..], ["Ferry timetable", "Winter"]);
        assert_eq!(chosen[0].1.passages, 0..1, "counted within its own page");
        assert!(chosen[1..]
            .iter()
            .all(|(page, c)| *page == 0 && c.text.contains("lighthouses")));
    }

    #[test]
    fn adjacent_passages_of_two_pages_never_merge() {
        let pages = [("alpha words here", None), ("alpha words there", None)];
        let chosen = select_across(&pages, "alpha", &TAVILY, COUNTER);
        assert_eq!(chosen.len(), 2);
        assert_eq!((chosen[0].0, chosen[1].0), (0, 1));
    }

    #[test]
    fn a_reranked_order_puts_its_candidates_first_and_keeps_the_rest_after() {
        let lexical = Ranking::lexical(vec![0.0, 3.0, 1.0, 2.0, 0.5]);
        assert_eq!(lexical.order, [1, 3, 2, 4, 0]);
        let candidates = lexical.best(3).to_vec();
        assert_eq!(candidates, [1, 3, 2]);
        // The reranker names the third candidate, then the first; it leaves the second out.
        let reranked = lexical.reranked(&candidates, &[2, 0]);
        assert_eq!(reranked.order, [2, 1, 3, 4, 0]);
        assert!(
            reranked
                .order
                .windows(2)
                .all(|w| reranked.scores[w[0]] >= reranked.scores[w[1]]),
            "{reranked:?}"
        );
        assert_eq!(reranked.scores[4], 0.5, "the rest keep their score");
        assert_eq!(
            reranked.relevant, lexical.relevant,
            "relevance stays lexical"
        );
        let one = Selection {
            max_passages: Some(1),
            ..TAVILY
        };
        let passages: Vec<Passage> = (0..5)
            .map(|i| Passage {
                text: format!("passage {i}"),
                heading_path: Arc::from([]),
            })
            .collect();
        let page_of = [0; 5];
        let chosen = choose(&passages, &reranked, &page_of, &one, COUNTER);
        assert_eq!(chosen[0].1.passages, 2..3, "the reranker's best");
        let relevant = Selection {
            max_passages: None,
            relevant_only: true,
            ..TAVILY
        };
        let with_zero_first = lexical.reranked(&[1, 3, 2, 4, 0], &[4, 0]);
        let chosen = choose(&passages, &with_zero_first, &page_of, &relevant, COUNTER);
        let taken: usize = chosen.iter().map(|c| c.1.passages.len()).sum();
        assert_eq!(
            taken, 4,
            "the passage without a word of the query stays out: {chosen:?}"
        );
    }

    #[test]
    fn a_leading_cut_is_the_first_passages_that_fit_whole() {
        let all = split(&page(), 500);
        let two = COUNTER.count(&format!("{}\n{}", all[0].text, all[1].text));
        let cut = leading(&page(), 500, TokenBudget::new(two + 2), COUNTER).unwrap();
        assert_eq!(cut.passages, 0..2);
        assert_eq!(cut.text, format!("{}\n{}", all[0].text, all[1].text));
        assert!(leading(&page(), 500, TokenBudget::new(2), COUNTER).is_none());
    }

    /// A random page: headings, paragraphs of random words (some very long), lists and code.
    fn document() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            "[a-zA-Zéü]{1,12}",
            "[a-z]{40,300}",
            Just("lighthouse".to_owned()),
            Just("東京".to_owned()),
            Just("<|endoftext|>".to_owned()),
        ];
        let line = prop::collection::vec(word, 1..60).prop_map(|w| w.join(" ") + ".");
        let block = prop_oneof![
            line.clone(),
            line.clone().prop_map(|l| format!("## {l}")),
            line.clone().prop_map(|l| format!("- {l}")),
            line.clone().prop_map(|l| format!("| {l} | x |")),
            line.prop_map(|l| format!("```\n{l}\n```")),
        ];
        prop::collection::vec(block, 0..40).prop_map(|b| b.join("\n\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn a_budget_is_never_exceeded_and_no_passage_or_capped_run_is_too_long(
            doc in document(),
            tokens in 0usize..400,
            max_chars in 20usize..600,
            cap in prop::option::of(1usize..6),
            by_score in any::<bool>(),
            capped in any::<bool>(),
        ) {
            let selection = Selection {
                max_chars,
                max_passages: cap,
                budget: Some(TokenBudget::new(tokens)),
                order: if by_score { PassageOrder::Score } else { PassageOrder::Page },
                relevant_only: false,
                merge: if capped { Merge::WithinMaxChars } else { Merge::Adjacent },
            };
            let chosen = select(&doc, Some("Title"), "lighthouse words", &selection, COUNTER);
            if capped {
                prop_assert!(chosen.iter().all(|c| c.text.chars().count() <= max_chars));
            }
            let spent: usize = chosen.iter().map(|c| COUNTER.count(&c.text)).sum();
            prop_assert!(spent <= tokens, "{spent} tokens > {tokens}");
            let passages: usize = chosen.iter().map(|c| c.passages.len()).sum();
            prop_assert!(cap.is_none_or(|cap| passages <= cap));
            for passage in split(&doc, max_chars) {
                prop_assert!(passage.text.chars().count() <= max_chars);
            }
        }
    }
}
