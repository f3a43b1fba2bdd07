//! When an open period's probe is due: the square-root rule that prices a probe into a
//! still-blocked engine against a recovered engine left out (the derivation is in
//! [`super`]'s module doc), pure arithmetic.

use std::time::Duration;

/// How long after an open period of length `period` began its probe is due, given what leaving
/// the engine out costs per second in probes' worth (`loss`, already divided by the probe's
/// weight; `None`: unknown, the period decides): `√(2 P / L)` between `floor` and `max` (see
/// [`super`]'s module doc).
pub(super) fn probe_delay(
    period: Duration,
    loss: Option<f64>,
    floor: Duration,
    max: Duration,
) -> Duration {
    let Some(loss) = loss else {
        return period;
    };
    let max = max.max(floor);
    if loss.is_nan() || loss <= 0.0 {
        return max;
    }
    let best = (2.0 * period.as_secs_f64() / loss).sqrt();
    Duration::try_from_secs_f64(best).map_or(max, |best| best.clamp(floor, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn the_probe_delay_is_the_square_root_rule_between_its_bounds() {
        let (floor, max) = (secs(2.5), secs(100.0));
        assert_eq!(
            probe_delay(secs(10.0), None, floor, max),
            secs(10.0),
            "unknown: the backoff"
        );
        assert_eq!(
            probe_delay(secs(10.0), Some(0.8), floor, max),
            secs(5.0),
            "√(2·10/0.8)"
        );
        assert_eq!(
            probe_delay(secs(40.0), Some(0.8), floor, max),
            secs(10.0),
            "a repeating block: later"
        );
        assert_eq!(
            probe_delay(secs(10.0), Some(0.2), floor, max),
            secs(10.0),
            "L × P = 2: the backoff"
        );
        assert_eq!(
            probe_delay(secs(10.0), Some(1000.0), floor, max),
            floor,
            "never sooner than the floor"
        );
        assert_eq!(
            probe_delay(secs(10.0), Some(0.001), floor, max),
            max,
            "idle: later, up to the cap"
        );
        assert_eq!(probe_delay(secs(10.0), Some(0.0), floor, max), max);
    }
}
