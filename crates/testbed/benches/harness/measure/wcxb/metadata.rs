//! #40 point 5: the metadata the reader takes from a page's own markup (JSON-LD, OpenGraph,
//! `<meta>`, `<time>`, the byline) against the ground truth's title, author and publication date,
//! on the pages whose ground truth has each. The rules, as a reader of the answer would judge:
//!
//! - **title**: the same words (lower-cased runs of letters and digits, as the F1 counts them),
//!   or the truth's words in a row inside the reader's (a title with the site's name after it);
//! - **author**: one's words in a row inside the other's (`By Ada Lovelace` and `Ada Lovelace`);
//! - **date**: the reader's date, its first `YYYY-MM-DD` (or `YYYY-MM`), starts with the truth's.
//!
//! Language and site name have no ground truth: the share of pages that declare one is reported.

use searxng_gateway::bench::ReadDocument;

use super::corpus::Truth;

/// What the reader took from one page.
pub(super) struct Declared {
    title: Option<String>,
    author: Option<String>,
    published: Option<String>,
    language: bool,
    site_name: bool,
}

impl Declared {
    pub(super) fn of(document: &ReadDocument) -> Self {
        Self {
            title: document.title().map(str::to_owned),
            author: document.author().map(str::to_owned),
            published: document.published().map(str::to_owned),
            language: document.language().is_some(),
            site_name: document.site_name().is_some(),
        }
    }
}

/// One field over the pages whose truth has it.
#[derive(Default)]
struct Tally {
    /// Pages whose ground truth has the field.
    asked: usize,
    /// Of those, pages the reader gave one for.
    found: usize,
    /// Of those, pages where it agrees.
    agreed: usize,
}

impl Tally {
    fn add(&mut self, found: bool, agreed: bool) {
        self.asked += 1;
        self.found += usize::from(found);
        self.agreed += usize::from(agreed);
    }

    fn summary(&self, name: &str) -> String {
        let share = |n: usize| 100.0 * n as f64 / self.asked.max(1) as f64;
        format!(
            "{name} {:.1} % agree ({:.1} % given) of {}",
            share(self.agreed),
            share(self.found),
            self.asked
        )
    }
}

/// The agreement over the corpus.
#[derive(Default)]
pub(super) struct Agreement {
    title: Tally,
    title_same: usize,
    author: Tally,
    date: Tally,
    pages: usize,
    language: usize,
    site_name: usize,
}

impl Agreement {
    /// One page: what the reader declared (`None` when it read nothing) against its truth.
    pub(super) fn add(&mut self, truth: &Truth, declared: Option<&Declared>) {
        self.pages += 1;
        self.language += usize::from(declared.is_some_and(|d| d.language));
        self.site_name += usize::from(declared.is_some_and(|d| d.site_name));
        let field = |pick: fn(&Declared) -> Option<&String>| declared.and_then(pick);
        if !truth.title.trim().is_empty() {
            let ours = field(|d| d.title.as_ref());
            let (truth_words, our_words) = (words(&truth.title), words(ours.map_or("", |t| t)));
            self.title_same += usize::from(!our_words.is_empty() && our_words == truth_words);
            self.title
                .add(ours.is_some(), within(&truth_words, &our_words));
        }
        if !truth.author.trim().is_empty() {
            let ours = field(|d| d.author.as_ref());
            let (truth_words, our_words) = (words(&truth.author), words(ours.map_or("", |t| t)));
            self.author.add(
                ours.is_some(),
                within(&truth_words, &our_words) || within(&our_words, &truth_words),
            );
        }
        if !truth.date.trim().is_empty() {
            let ours = field(|d| d.published.as_ref());
            let agreed = ours
                .and_then(|date| first_date(date))
                .is_some_and(|date| date.starts_with(truth.date.trim()));
            self.date.add(ours.is_some(), agreed);
        }
    }

    pub(super) fn summary(&self) -> String {
        let share = |n: usize| 100.0 * n as f64 / self.pages.max(1) as f64;
        format!(
            "{} ({:.1} % the same words); {}; {}; language given {:.1} %, site name {:.1} % of {} pages",
            self.title.summary("title"),
            100.0 * self.title_same as f64 / self.title.asked.max(1) as f64,
            self.author.summary("author"),
            self.date.summary("date"),
            share(self.language),
            share(self.site_name),
            self.pages,
        )
    }
}

/// Lower-cased runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether `part` (not empty) stands in a row inside `whole`.
fn within(part: &[String], whole: &[String]) -> bool {
    !part.is_empty() && whole.windows(part.len()).any(|window| window == part)
}

/// The first `YYYY-MM-DD` (or `YYYY-MM`) in `text`.
fn first_date(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let digits = |at: usize, n: usize| {
        bytes
            .get(at..at + n)
            .is_some_and(|run| run.iter().all(u8::is_ascii_digit))
    };
    (0..bytes.len()).find_map(|at| {
        if !(digits(at, 4) && bytes.get(at + 4) == Some(&b'-') && digits(at + 5, 2)) {
            return None;
        }
        let day = bytes.get(at + 7) == Some(&b'-') && digits(at + 8, 2);
        text.get(at..at + if day { 10 } else { 7 })
    })
}
