//! Who may administer (`ADMIN_TOKEN`): the token for the operator's routes, checked for length at
//! start-up and never shown.

use std::fmt;

use gateway_core::env::{ConfigError, Env, Problem};

/// Shortest accepted `ADMIN_TOKEN`: a guessable token would open the breakers to anyone.
const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// `ADMIN_TOKEN`: its value never appears in a log line or an error.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl AdminToken {
    /// The token's bytes, for the constant-time comparison.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// `ADMIN_TOKEN`, or `None` when it is unset (the admin routes do not exist).
    pub(super) fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        // Checked for length only: the value never reaches an error message.
        match env.value("ADMIN_TOKEN") {
            Some(raw) if raw.text.len() < MIN_ADMIN_TOKEN_LEN => Err(ConfigError::new(
                "ADMIN_TOKEN",
                "<redacted>",
                Problem::TooShort(MIN_ADMIN_TOKEN_LEN),
            )),
            Some(raw) => Ok(Some(Self(raw.text))),
            None => Ok(None),
        }
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}
