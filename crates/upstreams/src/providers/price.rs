//! What a premium search call costs, in US dollars: `PREMIUM_PRICE_<NAME>`, US dollars per 1000
//! calls, whose defaults (in `env::variables`, with their sources) are each provider's list price
//! as read on [`PRICES_READ_ON`]. A call that answered (results or none) costs the
//! price — or, when the provider reports the cost of the call itself (Exa's `costDollars`), what it
//! reported; a call that failed costs nothing (providers bill successful requests).
//!
//! The defaults are the entry price of each provider's pay-as-you-go or first paid plan; free
//! tiers are not modelled (the gateway does not know which tier a key is on): an operator whose
//! key is on a free tier sets its price to 0.

use super::ProviderKind;
use gateway_core::env::{ConfigError, Env};

/// When the default prices (`PREMIUM_PRICE_<NAME>`'s defaults in `env::variables`, each with its
/// source) were read.
pub const PRICES_READ_ON: &str = "2026-12-02";

/// The variable that overrides `kind`'s price.
pub(crate) fn variable(kind: ProviderKind) -> String {
    format!("PREMIUM_PRICE_{}", kind.env_prefix())
}

/// `kind`'s price per call, in US dollars (`PREMIUM_PRICE_<NAME>` is per 1000 calls).
pub(crate) fn read(env: &Env<'_>, kind: ProviderKind) -> Result<f64, ConfigError> {
    Ok(env.number(&variable(kind), 0.0, 1_000_000.0)? / 1000.0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_price_is_the_default_or_the_operators_per_thousand_calls() {
        let none = |_: &str| None;
        assert_eq!(read(&Env::new(&none), ProviderKind::Brave).unwrap(), 0.005);
        let set = |name: &str| (name == "PREMIUM_PRICE_EXA").then(|| "0".to_owned());
        assert_eq!(read(&Env::new(&set), ProviderKind::Exa).unwrap(), 0.0);
        let bad = |name: &str| (name == "PREMIUM_PRICE_EXA").then(|| "-1".to_owned());
        let err = read(&Env::new(&bad), ProviderKind::Exa).unwrap_err();
        assert!(err.to_string().contains("PREMIUM_PRICE_EXA"), "{err}");
        for kind in ProviderKind::ALL {
            assert!(
                read(&Env::new(&none), kind).unwrap() > 0.0,
                "{kind:?} has a list price"
            );
        }
    }
}
