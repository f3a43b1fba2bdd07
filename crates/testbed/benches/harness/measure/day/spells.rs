//! The day's engine decisions attributed to each engine spell (#29): the simulated SearXNG's log
//! of every search (its time, probe or client, each engine queried or not, blocked or not at that
//! moment) read against the schedule's spells. Per spell: the client searches that called into
//! the engine while it was blocked, and how far into the spell the last of them came (how long the
//! gateway took to stop sending clients there); the probes that found it still blocked; and after
//! it lifted, until the engine's next spell or the day's end: the client searches that left it out
//! although it had recovered, and how long after it lifted clients first had it back. The phase
//! totals say how much; these say which spell, and so whether a count is detection (calls at a
//! spell's start), the price of probing (probes), or a slow return (exclusions after a recovery).

use std::time::Duration;

use simulator::searxng::EngineLogEntry;
use tokio::time::Instant;

use super::schedule::{Day, SpellWindow};

/// The simulated SearXNG's scripts start a moment before the replay's clock: an entry this close
/// before a spell's start still belongs to it.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

/// What one spell cost.
pub(super) struct SpellTally {
    pub(super) spell: SpellWindow,
    /// Client searches that called into the engine while it was blocked.
    pub(super) client_calls: u64,
    /// How far into the spell the last of them came.
    pub(super) last_client_call: Option<Duration>,
    /// Probes that found it blocked.
    pub(super) blocked_probes: u64,
    /// Client searches, after it lifted, that left it out although it was healthy.
    pub(super) exclusions_after: u64,
    /// How long after it lifted a client search first had it again (`None`: not before the next
    /// spell or the day's end).
    pub(super) back_after: Option<Duration>,
    /// From its end to the engine's next spell, or the day's end.
    pub(super) gap: Duration,
    /// The gap ends with another spell of the engine (not the day).
    pub(super) blocked_again: bool,
}

/// Attributes `log` (read after a replay that began at `start`) to `day`'s engine spells.
pub(super) fn attribute(day: Day, start: Instant, log: &[EngineLogEntry]) -> Vec<SpellTally> {
    let spells: Vec<SpellWindow> = day.schedule.engine_spells().collect();
    spells
        .iter()
        .enumerate()
        .map(|(i, spell)| {
            let from = start + day.at(spell.from);
            let until = start + day.at(spell.until);
            let later = spells[i + 1..]
                .iter()
                .find(|later| later.engine == spell.engine);
            let next = later.map_or(start + day.length, |later| start + day.at(later.from));
            let mut tally = SpellTally {
                spell: *spell,
                client_calls: 0,
                last_client_call: None,
                blocked_probes: 0,
                exclusions_after: 0,
                back_after: None,
                gap: next.saturating_duration_since(until),
                blocked_again: later.is_some(),
            };
            for entry in log {
                let Some(seen) = entry.engines.iter().find(|e| e.name == spell.engine) else {
                    continue;
                };
                let during = entry.at + CLOCK_SLACK >= from && entry.at < next;
                if !during {
                    continue;
                }
                if seen.queried && seen.blocked {
                    if entry.probe {
                        tally.blocked_probes += 1;
                    } else {
                        tally.client_calls += 1;
                        tally.last_client_call = Some(entry.at.saturating_duration_since(from));
                    }
                    continue;
                }
                if entry.probe || seen.blocked || entry.at < until {
                    continue;
                }
                if seen.queried {
                    tally
                        .back_after
                        .get_or_insert(entry.at.saturating_duration_since(until));
                } else if entry.explicit {
                    tally.exclusions_after += 1;
                }
            }
            tally
        })
        .collect()
}

/// One spell's line for the report.
pub(super) fn describe(tally: &SpellTally) -> String {
    let spell = tally.spell;
    let last = tally.last_client_call.map_or(String::new(), |at| {
        format!(", the last {:.2} s in", at.as_secs_f64())
    });
    let back = tally.back_after.map_or_else(
        || "clients did not have it back before".to_owned(),
        |after| {
            format!(
                "clients had it back {:.2} s after it lifted",
                after.as_secs_f64()
            )
        },
    );
    format!(
        "{} {} ({:.1}–{:.1} %): {} client calls into it{last}, {} probes found it blocked; in the \
         {:.1} s until {}: {} client searches left it out, {back}",
        spell.engine,
        spell.trouble,
        spell.from * 100.0,
        spell.until * 100.0,
        tally.client_calls,
        tally.blocked_probes,
        tally.gap.as_secs_f64(),
        if tally.blocked_again {
            "its next spell"
        } else {
            "the day's end"
        },
        tally.exclusions_after,
    )
}
