//! [`PageKey`]: the key a page is cached under, here and in the shared tier — none for a URL
//! that carries credentials (its page is theirs alone).

use url::Url;

use super::page::{Depth, ReadRequest, Render};
use crate::search::Premium;
use gateway_core::canonical_url::canonical_url;

/// The key a page is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct PageKey {
    /// Scheme, canonical URL, format, depth, scope — as text (what the shared tier hashes).
    pub(super) text: String,
}

impl PageKey {
    /// The key of `req`'s page; `None` when its URL carries credentials: that page is the
    /// credentials' alone, never cached.
    pub(super) fn new(req: &ReadRequest, premium: Premium) -> Option<Self> {
        if carries_credentials(&req.url) {
            return None;
        }
        let mut text = req.url.scheme().to_owned();
        text.push(':');
        text.push_str(&canonical_url(req.url.as_str()));
        text.push('\u{1f}');
        text.push_str(req.format.as_str());
        text.push_str(match req.depth {
            Depth::Basic => "\u{1f}basic",
            Depth::Advanced => "\u{1f}advanced",
        });
        text.push_str(match req.render {
            Render::Auto => "",
            Render::Always => "\u{1f}render",
            Render::Never => "\u{1f}no-render",
        });
        if let Some(wait) = req.wait_for {
            text.push_str(&format!("\u{1f}wait-{}", wait.as_millis()));
        }
        if premium == Premium::BudgetSpent {
            text.push_str("\u{1f}direct-only");
        }
        Some(Self { text })
    }
}

/// Whether `url` names a user or a password (`user:password@host`).
pub(super) fn carries_credentials(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}
