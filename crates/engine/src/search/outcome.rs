//! The one outcome label of each answered request, computed from what each kind of source did for
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

/// What one kind of source (SearXNG, or the premium providers together) did for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contribution {
    /// At least one of its results is in the merged answer.
    Results,
    /// It answered healthily, with nothing the answer kept ("nothing found").
    NothingFound,
    /// It did not answer healthily: failed, degraded, skipped or cut by the budget.
    NoAnswer,
}

impl Outcome {
    /// Every outcome, for metric initialisation.
    pub(crate) const ALL: [Outcome; 5] = [
        Self::CacheHit,
        Self::SearxngOk,
        Self::PremiumOk,
        Self::SearxngPlusPremiumOk,
        Self::FallbackFail,
    ];

    /// The outcome whose label value is `text` (as the shared tier stores it).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }

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

    /// The outcome of a fan-out from what SearXNG and the premium providers contributed.
    pub(crate) fn of_fan_out(searxng: Contribution, premium: Contribution) -> Self {
        use Contribution::*;
        match (searxng, premium) {
            (Results, Results) => Self::SearxngPlusPremiumOk,
            (Results, _) => Self::SearxngOk,
            (_, Results) => Self::PremiumOk,
            (NothingFound, _) => Self::SearxngOk,
            (_, NothingFound) => Self::PremiumOk,
            (NoAnswer, NoAnswer) => Self::FallbackFail,
        }
    }
}

/// As its label: the operator's page reads the same names as the metrics.
impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contribution_decides_the_label() {
        use Contribution::*;
        use Outcome::*;
        let table = [
            ((Results, Results), SearxngPlusPremiumOk),
            ((Results, NothingFound), SearxngOk),
            ((Results, NoAnswer), SearxngOk),
            ((NoAnswer, Results), PremiumOk),
            ((NothingFound, Results), PremiumOk),
            ((NothingFound, NoAnswer), SearxngOk),
            ((NothingFound, NothingFound), SearxngOk),
            ((NoAnswer, NothingFound), PremiumOk),
            ((NoAnswer, NoAnswer), FallbackFail),
        ];
        for ((searxng, premium), want) in table {
            assert_eq!(
                Outcome::of_fan_out(searxng, premium),
                want,
                "{searxng:?} {premium:?}"
            );
        }
    }
}
