//! h. Decision quality over a day of upstream trouble: scripted, seeded days ([`schedule`]), each
//! replayed against the release gateway by four clients with a Zipf query mix ([`replay`]). The
//! first day (seed 15): engine CAPTCHA and 429 spells, a slow-blocked engine, an engine that
//! recovers while still excluded, SearXNG slow and failing, a Brave 429 burst, Exa behind a CDN's
//! HTML bot challenge, a Tavily plan limit that runs out. The second (seed 29, #29): the same kinds
//! of trouble, mixed otherwise — blocks that come back soon after a recovery, a longer healthy
//! evening — so the rules are not tuned to one script.
//! Per day, per phase and overall: answered with at least the target, partial, failed, p50/p95,
//! premium calls per 100 searches, calls into blocked engines and SearXNG requests that left out a
//! healthy engine (both scored by the simulated SearXNG against each engine's scripted state at
//! the time), distinct URLs per answer; and the engine counts attributed to each spell
//! ([`spells`]). Each day runs with `T1_PREMIUM_COUNT=0` (the targets) and
//! `=1` (the smoke run: the second day with `=0` alone).

mod replay;
mod schedule;
mod spells;

use std::time::Duration;

use simulator::premium::SimulatedProvider;
use simulator::searxng::SimulatedSearxng;
use simulator::Provider;

use crate::loadgen::BoxError;
use crate::report::Row;
use crate::{ms, Bench};
use replay::{replay, DayResult, Tally, CLIENTS};
use schedule::{Day, DAYS, ENGINES, PROVIDERS, TARGET};

/// Targets for the keyless-fallback configuration (`T1_PREMIUM_COUNT=0`), the same for every day.
const FULL_PERCENT_TARGET: f64 = 99.5;
const P95_TARGET: Duration = Duration::from_millis(600);
const PREMIUM_PER_100_TARGET: f64 = 12.0;
const BLOCKED_CALLS_TARGET: u64 = 20;
const HEALTHY_EXCLUSIONS_TARGET: u64 = 30;

/// Runs the schedules' own checks (pure, no socket) and prints each; returns how many failed.
/// `cargo test` starts the harness without `--bench`, and it runs these.
pub(crate) fn check_schedules() -> usize {
    let mut failed = 0;
    for (name, check) in schedule::CHECKS {
        match check() {
            Ok(()) => println!("day schedule check {name} ... ok"),
            Err(why) => {
                println!("day schedule check {name} ... FAILED: {why}");
                failed += 1;
            }
        }
    }
    failed
}

/// The `T1_PREMIUM_COUNT` values a day is replayed with: 0 and 1, or those `HARNESS_DAY_T1`
/// lists (`HARNESS_DAY_T1=0 cargo harness --day`: the targets' configuration alone, half the time,
/// for before/after runs of a decision rule). The smoke run replays `T1=1` on the first day only
/// (its checks — no call into a parked provider — run once; CI's 20 minutes are kept so).
fn day_t1_values(first_day: bool, smoke: bool) -> Vec<usize> {
    std::env::var("HARNESS_DAY_T1")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|t1| t1.trim().parse().ok())
                .collect::<Vec<_>>()
        })
        .filter(|values| !values.is_empty())
        .unwrap_or_else(|| {
            if smoke && !first_day {
                vec![0]
            } else {
                vec![0, 1]
            }
        })
}

impl Bench {
    /// h. Every day, each with T1 = 0 (scored against the targets) and T1 = 1 (reported beside it;
    /// the smoke run: the first day only).
    pub(crate) async fn decision_day(&mut self) -> Result<(), BoxError> {
        for (n, schedule) in DAYS.into_iter().enumerate() {
            let day = Day {
                schedule,
                length: self.plan.day_length,
            };
            for t1 in day_t1_values(n == 0, self.plan.smoke) {
                let result = self.replay_day(day, t1).await?;
                self.report_day(day, t1, &result);
            }
        }
        Ok(())
    }

    async fn replay_day(&mut self, day: Day, t1: usize) -> Result<DayResult, BoxError> {
        let searxng = SimulatedSearxng::start(&ENGINES).await?;
        let mut providers = Vec::new();
        for kind in PROVIDERS {
            providers.push(SimulatedProvider::start(kind).await?);
        }
        let env = day.gateway_env(&searxng, &providers, t1);
        let log_name = format!("gateway-{}-t1-{t1}", day.schedule.name.replace(' ', "-"));
        let gateway = self.gateway(&env, &log_name).await?;
        // The gateway reads /config at start; give it that moment before the day begins.
        tokio::time::sleep(Duration::from_millis(300)).await;
        day.install(&searxng, &providers);
        let result = replay(
            day,
            gateway.addr,
            self.plan.day_searches,
            &searxng,
            &providers,
        )
        .await;
        let refusals_heard = refusals_heard(gateway.addr, Provider::Tavily).await?;
        gateway.stop();
        Ok(DayResult {
            refusals_heard,
            ..result
        })
    }

    fn report_day(&mut self, day: Day, t1: usize, result: &DayResult) {
        let all = &result.overall;
        let schedule = day.schedule;
        let which = schedule.name;
        let tavily = PROVIDERS
            .iter()
            .position(|p| *p == Provider::Tavily)
            .and_then(|i| all.calls_by_provider.get(i).copied())
            .unwrap_or(0);
        // Tavily's plan allows `TAVILY_PLAN_CALLS`; every call after them is refused. The first
        // refusal the gateway hears parks Tavily, so every refusal it hears after that one is a call
        // it made (or had in flight) while it knew Tavily was spent. Counting refusals sent instead
        // would count a call the gateway cancelled before its refusal arrived (another upstream had
        // met the target): it never learned from that one, and its next call is its first refusal.
        let into_parked = result.refusals_heard.saturating_sub(1);
        let refused_unheard = tavily
            .saturating_sub(schedule::TAVILY_PLAN_CALLS)
            .saturating_sub(result.refusals_heard);
        println!(
            "   {which} T1={t1}: {} searches, {:.2} % ≥ {TARGET}, {} failed, p95 {}, {:.1} premium/100, \
             {} blocked-engine calls, {} healthy exclusions, {into_parked} calls into parked Tavily \
             ({refused_unheard} refusals cancelled before the gateway heard them)",
            all.searches,
            all.full_percent(),
            all.failed,
            ms(all.latency.quantile(0.95)),
            all.premium_per_100(),
            all.engines.calls_into_blocked,
            all.engines.searches_excluding_healthy,
        );
        if all.searches == 0 {
            self.failures
                .push(format!("h. {which} T1={t1}: no search was made"));
        }
        // A call already in flight when the refusal arrived is not a decision to call a parked
        // provider; more than the other clients could have had in flight is.
        if into_parked >= CLIENTS as u64 {
            self.failures.push(format!(
                "h. {which} T1={t1}: {into_parked} calls into Tavily after its plan limit refused"
            ));
        }
        let name = |what: &str| format!("h. {which} T1={t1}: {what}");
        let targeted = t1 == 0;
        let met = |ok: bool| targeted.then_some(ok);
        let target = |text: String| if targeted { text } else { "report".to_owned() };
        self.rows.push(Row {
            name: name(&format!("answered with ≥ {TARGET} results")),
            result: format!(
                "{:.2} % ({} partial, {} failed, {} stale) of {} searches",
                all.full_percent(),
                all.partial,
                all.failed,
                all.stale,
                all.searches
            ),
            target: target(format!("≥ {FULL_PERCENT_TARGET} %, 0 failed")),
            met: met(all.full_percent() >= FULL_PERCENT_TARGET && all.failed == 0),
        });
        let p95 = all.latency.quantile(0.95);
        self.rows.push(Row {
            name: name("latency"),
            result: format!("p50 {} / p95 {}", ms(all.latency.quantile(0.5)), ms(p95)),
            target: target(format!("p95 ≤ {}", ms(P95_TARGET))),
            met: met(p95 <= P95_TARGET),
        });
        self.rows.push(Row {
            name: name("premium calls per 100 searches"),
            result: format!(
                "{:.1} ({} calls: {}); {into_parked} into the parked provider ({refused_unheard} \
                 refusals cancelled before they were heard)",
                all.premium_per_100(),
                all.premium_calls,
                by_provider(all)
            ),
            target: target(format!(
                "≤ {PREMIUM_PER_100_TARGET:.0}, 0 into a parked provider"
            )),
            met: met(all.premium_per_100() <= PREMIUM_PER_100_TARGET && into_parked == 0),
        });
        self.rows.push(Row {
            name: name("engine decisions"),
            result: format!(
                "{} calls into blocked engines, probes included ({} engine probes in all); {} SearXNG \
                 requests left out a healthy engine",
                all.engines.calls_into_blocked,
                all.engines.probes,
                all.engines.searches_excluding_healthy
            ),
            target: target(format!(
                "≤ {BLOCKED_CALLS_TARGET} and ≤ {HEALTHY_EXCLUSIONS_TARGET}"
            )),
            met: met(all.engines.calls_into_blocked <= BLOCKED_CALLS_TARGET
                && all.engines.searches_excluding_healthy <= HEALTHY_EXCLUSIONS_TARGET),
        });
        self.rows.push(Row {
            name: name("distinct URLs per answer"),
            result: format!("{:.1}", all.urls_per_answer()),
            target: "report".to_owned(),
            met: None,
        });
        if t1 == 0 {
            self.details.push(format!(
                "h. {which} ({}): one day compressed into {:.0} s ({} searches by {CLIENTS} clients at a \
                 steady pace, Zipf mix over 400 queries, seed {}); SearXNG engines {}; providers brave, \
                 exa, tavily (FALLBACK_PROVIDERS order, PROVIDER_POLICY default); \
                 SUFFICIENT_MIN_RESULTS={TARGET}; the gateway's periods scaled to the day: {}. Phases: {}.",
                schedule.about,
                day.length.as_secs_f64(),
                all.searches,
                schedule.seed,
                ENGINES.join(", "),
                day.scaled_periods(),
                schedule
                    .phases
                    .iter()
                    .map(|p| format!("{} (until {:.0} %)", p.name, p.until * 100.0))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        for (phase, tally) in schedule.phases.iter().zip(&result.phases) {
            self.details.push(format!(
                "h. {which} T1={t1}, {}: {}",
                phase.name,
                summary(tally)
            ));
        }
        for spell in &result.spells {
            self.details.push(format!(
                "h. {which} T1={t1}, spell {}",
                spells::describe(spell)
            ));
        }
    }
}

/// How many of `provider`'s quota refusals the gateway at `addr` heard
/// (`provider_calls_total{outcome="quota"}`).
async fn refusals_heard(addr: std::net::SocketAddr, provider: Provider) -> Result<u64, BoxError> {
    let text = String::from_utf8(crate::loadgen::get(addr, "/metrics").await?.body.to_vec())?;
    let labels = format!("provider=\"{}\"", provider.as_str());
    Ok(text
        .lines()
        .filter(|l| l.starts_with("searxng_gateway_provider_calls_total{"))
        .filter(|l| l.contains(&labels) && l.contains("outcome=\"quota\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

fn by_provider(tally: &Tally) -> String {
    PROVIDERS
        .iter()
        .zip(&tally.calls_by_provider)
        .map(|(p, calls)| format!("{} {calls}", p.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn summary(tally: &Tally) -> String {
    format!(
        "{} searches, {:.1} % ≥ {TARGET} ({} partial, {} failed, {} stale), p50 {} / p95 {}, \
         {:.1} premium/100 ({}), {} calls into blocked engines ({} engine probes in all), {} requests \
         leaving out a healthy engine (of {} with an explicit list), {:.1} URLs per answer",
        tally.searches,
        tally.full_percent(),
        tally.partial,
        tally.failed,
        tally.stale,
        ms(tally.latency.quantile(0.5)),
        ms(tally.latency.quantile(0.95)),
        tally.premium_per_100(),
        by_provider(tally),
        tally.engines.calls_into_blocked,
        tally.engines.probes,
        tally.engines.searches_excluding_healthy,
        tally.engines.explicit_searches,
        tally.urls_per_answer(),
    )
}
