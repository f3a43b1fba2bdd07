//! The demo's printing: the banner, round and step headings, and the indented lines under a step — what was
//! scripted, the request, what the client got, what the gateway decided. Plain text only (no colour), one
//! flush per line, and best effort: a closed stdout must not stop the gateway.

use std::io::Write;
use std::time::Duration;

use crate::gateway_client::Observed;

/// Writes the narration to `out`.
pub(crate) struct Narrator<W> {
    out: W,
}

impl<W: Write> Narrator<W> {
    /// Narrates to `out`.
    pub(crate) fn new(out: W) -> Self {
        Self { out }
    }

    /// One line (or several, separated by `\n`) as it is.
    pub(crate) fn say(&mut self, line: &str) {
        let _ = writeln!(self.out, "{line}");
        let _ = self.out.flush();
    }

    /// `=== Round N ===`.
    pub(crate) fn round(&mut self, round: u32) {
        self.say(&format!("\n=== Round {round} ==="));
    }

    /// `[N] title`.
    pub(crate) fn step(&mut self, number: usize, title: &str) {
        self.say(&format!("\n[{number}] {title}"));
    }

    /// What the step scripted on the simulators, in parentheses.
    pub(crate) fn scripted(&mut self, what: &str) {
        self.say(&format!("    (scripted: {what})"));
    }

    /// A wait the step makes before its search.
    pub(crate) fn waiting(&mut self, how_long: Duration, what: &str) {
        self.say(&format!(
            "    … waiting {:.1} s for {what}",
            how_long.as_secs_f64()
        ));
    }

    /// The search the step sends.
    pub(crate) fn request(&mut self, query: &str) {
        let query: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
        self.say(&format!("    GET /search?q={query}"));
    }

    /// What the client got.
    pub(crate) fn observed(&mut self, observed: &Observed) {
        let sources = if observed.sources.is_empty() {
            String::new()
        } else {
            format!(" from {}", observed.sources.join(", "))
        };
        self.say(&format!(
            "    → {} {} · cache {} · {} results{sources} · {:.1} ms",
            observed.status,
            observed.outcome,
            observed.cache,
            observed.results,
            observed.elapsed.as_secs_f64() * 1e3,
        ));
    }

    /// The search got no HTTP answer at all.
    pub(crate) fn no_answer(&mut self, why: &str) {
        self.say(&format!("    → the gateway did not answer: {why}"));
    }

    /// One thing the gateway decided.
    pub(crate) fn decided(&mut self, line: &str) {
        self.say(&format!("    gateway: {line}"));
    }

    /// An indented line under a step.
    pub(crate) fn detail(&mut self, line: &str) {
        self.say(&format!("    {line}"));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn prints_a_step_as_heading_request_answer_and_decisions() {
        let mut narrator = Narrator::new(Vec::new());

        narrator.step(2, "The same search again");
        narrator.request("rust async");
        narrator.observed(&Observed {
            status: 200,
            outcome: "cache_hit".into(),
            cache: "hit".into(),
            results: 17,
            sources: vec!["bing".into(), "google".into()],
            elapsed: Duration::from_micros(1_240),
        });
        narrator.decided("answered from the cache; no upstream was called");

        assert_eq!(
            String::from_utf8(narrator.out).unwrap(),
            "\n[2] The same search again\n    GET /search?q=rust+async\n    \
             → 200 cache_hit · cache hit · 17 results from bing, google · 1.2 ms\n    \
             gateway: answered from the cache; no upstream was called\n"
        );
    }
}
