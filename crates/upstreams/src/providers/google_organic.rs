//! Google's organic result as the Google-results APIs relay it ([`super::searchapi`],
//! [`super::serper`]): both send Google's own four fields under the same names, `link`, `title`,
//! `snippet` and `date`, so the shape is written once.

use serde::Deserialize;

use super::PremiumHit;

/// One organic result, only the parts we read.
#[derive(Deserialize)]
pub(crate) struct Organic {
    link: Option<String>,
    title: Option<String>,
    snippet: Option<String>,
    date: Option<String>,
}

impl Organic {
    /// A hit, or `None` for an entry without a link.
    pub(crate) fn into_hit(self) -> Option<PremiumHit> {
        PremiumHit::from_fields(self.link, self.title, self.snippet, self.date)
    }
}
