//! What one instance's engines are worth to clients now (#29): the rate of client searches reaching
//! the instance and each engine's usual share of their results. Their product is what leaving a
//! recovered engine out costs per second — the searches' worth of results lost — which the engine
//! probes weigh against the cost of a probe into a still-blocked engine.
//!
//! The rate decays exponentially with [`RATE_WINDOW`] (an idle instance's rate falls to zero); a
//! share is a weighted mean over the answers that asked that engine, so an engine left out while
//! blocked keeps the share it usually has.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use gateway_upstreams::searxng::SearxngAnswer;

/// The search rate's time constant.
const RATE_WINDOW: Duration = Duration::from_secs(30);
/// Weight of the newest answer in an engine's share.
const SHARE_WEIGHT: f64 = 0.1;

/// One instance's search rate and engine shares.
#[derive(Debug, Default)]
pub(crate) struct EngineValue {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Searches, each decaying with [`RATE_WINDOW`], as of `at`.
    searches: f64,
    at: Option<Instant>,
    /// Engine → its share of an answer's results.
    shares: HashMap<String, f64>,
}

impl State {
    fn searches_at(&self, now: Instant) -> f64 {
        self.at.map_or(0.0, |at| {
            let idle = now.saturating_duration_since(at).as_secs_f64();
            self.searches * (-idle / RATE_WINDOW.as_secs_f64()).exp()
        })
    }
}

impl EngineValue {
    /// A client's search asked the engines `asked` (the plan's) and got `answer`: one more search,
    /// and a share sample of every engine asked that did not fail.
    pub(crate) fn note(&self, asked: &[&str], answer: &SearxngAnswer) {
        let now = Instant::now();
        let mut state = self.lock();
        state.searches = state.searches_at(now) + 1.0;
        state.at = Some(now);
        let total = answer.results.len();
        if total == 0 {
            return;
        }
        let per_engine = answer.results_per_engine();
        // An engine that failed brought nothing this time, which says nothing of its usual share.
        let answered = asked
            .iter()
            .filter(|engine| !answer.unresponsive.iter().any(|u| u.engine == **engine));
        for engine in answered {
            let found = per_engine
                .iter()
                .find(|(name, _)| name == engine)
                .map_or(0, |(_, n)| *n);
            let sample = found as f64 / total as f64;
            let share = state
                .shares
                .get(*engine)
                .map_or(sample, |share| share + SHARE_WEIGHT * (sample - share));
            state.shares.insert((*engine).to_owned(), share);
        }
    }

    /// What leaving `engine` out costs per second now: searches per second × its usual share of
    /// their results (an engine never seen answering: the mean share of those seen). `None`
    /// before any client search: nothing is known yet.
    pub(crate) fn loss_per_second(&self, engine: &str) -> Option<f64> {
        let state = self.lock();
        state.at?;
        let rate = state.searches_at(Instant::now()) / RATE_WINDOW.as_secs_f64();
        let share = state.shares.get(engine).copied().unwrap_or_else(|| {
            let known = state.shares.len().max(1) as f64;
            state.shares.values().sum::<f64>() / known
        });
        Some(rate * share)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain numbers: a poisoned lock still holds consistent ones.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::search_result::SearchResult;

    fn answer(engines: &[&str]) -> SearxngAnswer {
        SearxngAnswer {
            results: engines
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    SearchResult::from_json(&serde_json::json!({
                        "url": format!("https://{e}.example/{i}"), "title": "t", "engines": [e]
                    }))
                    .unwrap()
                })
                .collect(),
            ..SearxngAnswer::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[tokio::test(start_paused = true)]
    async fn the_loss_is_the_search_rate_times_the_engines_usual_share_and_fades_when_idle() {
        let value = EngineValue::default();
        assert_eq!(value.loss_per_second("alpha"), None, "nothing known yet");
        // Alpha brings a quarter of the results, beta three quarters; then alpha is left out
        // (blocked) and its share stays what it was.
        value.note(
            &["alpha", "beta"],
            &answer(&["alpha", "beta", "beta", "beta"]),
        );
        value.note(&["beta"], &answer(&["beta", "beta"]));
        // A failing engine's empty hand is no sample of its share.
        let mut failed = answer(&["beta", "beta"]);
        failed
            .unresponsive
            .push(gateway_upstreams::searxng::Unresponsive {
                engine: "alpha".into(),
                reason: gateway_upstreams::searxng::EngineReason::Captcha,
                suspended: false,
            });
        value.note(&["alpha", "beta"], &failed);
        let searches = 3.0 / RATE_WINDOW.as_secs_f64();
        assert!(close(
            value.loss_per_second("alpha").unwrap(),
            searches * 0.25
        ));
        let beta = 0.75 + SHARE_WEIGHT * (1.0 - 0.75);
        let beta = beta + SHARE_WEIGHT * (1.0 - beta);
        assert!(close(
            value.loss_per_second("beta").unwrap(),
            searches * beta
        ));
        let never = value.loss_per_second("gamma").unwrap();
        assert!(
            close(never, searches * (0.25 + beta) / 2.0),
            "the mean share"
        );
        tokio::time::advance(RATE_WINDOW).await;
        let faded = value.loss_per_second("alpha").unwrap();
        assert!(
            close(faded, searches * 0.25 / std::f64::consts::E),
            "{faded}"
        );
    }
}
