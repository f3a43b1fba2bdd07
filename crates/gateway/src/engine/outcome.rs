//! The one outcome label of each answered request, computed from which sources contributed to
//! the merged answer — not from the order answers arrived in.

/// `requests_total{outcome}` values. Exactly one per answered request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Served from the cache; no upstream touched.
    CacheHit,
    /// Only SearXNG contributed (or SearXNG answered a healthy "nothing found").
    SearxngOk,
    /// Only premium providers contributed.
    PremiumOk,
    /// SearXNG and at least one premium provider contributed.
    SearxngPlusPremiumOk,
    /// Every upstream failed: a 502.
    FallbackFail,
}

impl Outcome {
    /// Every outcome, for metric initialisation.
    pub const ALL: [Outcome; 5] = [
        Self::CacheHit,
        Self::SearxngOk,
        Self::PremiumOk,
        Self::SearxngPlusPremiumOk,
        Self::FallbackFail,
    ];

    /// The label value (kept from the Go implementation so dashboards keep working).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CacheHit => "cache_hit",
            Self::SearxngOk => "searxng_ok",
            Self::PremiumOk => "premium_ok",
            Self::SearxngPlusPremiumOk => "searxng_plus_premium_ok",
            Self::FallbackFail => "fallback_fail",
        }
    }

    /// The outcome of a fan-out: who contributed, and whether anyone answered healthily at all.
    pub fn from_contribution(
        searxng_contributed: bool,
        premium_contributed: bool,
        searxng_healthy: bool,
        premium_answered: bool,
    ) -> Self {
        match (searxng_contributed, premium_contributed) {
            (true, true) => Self::SearxngPlusPremiumOk,
            (true, false) => Self::SearxngOk,
            (false, true) => Self::PremiumOk,
            (false, false) if searxng_healthy => Self::SearxngOk,
            (false, false) if premium_answered => Self::PremiumOk,
            (false, false) => Self::FallbackFail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contribution_decides_the_label() {
        use Outcome::*;
        let table = [
            ((true, true, true, true), SearxngPlusPremiumOk),
            ((true, false, true, false), SearxngOk),
            ((false, true, false, true), PremiumOk),
            ((false, false, true, false), SearxngOk),
            ((false, false, false, true), PremiumOk),
            ((false, false, false, false), FallbackFail),
        ];
        for ((s, p, sh, pa), want) in table {
            assert_eq!(Outcome::from_contribution(s, p, sh, pa), want);
        }
    }
}
