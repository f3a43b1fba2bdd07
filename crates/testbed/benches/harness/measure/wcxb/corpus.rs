//! WCXB's development split as the corpus's `evaluate.py` reads it: every `dev/ground-truth/*.json`
//! in name order whose `ground_truth` is an object, its page type from `_internal.page_type`
//! (`primary` of an object, or the string itself; `article` when absent; `category` read as
//! `collection`), its `main_content`, `with` and `without` snippets (missing or null read as
//! empty), and the page's original `url`; the page itself is `dev/html/<id>.html.gz`.
//!
//! The corpus: `WCXB_CORPUS`, else `wcxb-dev` in `SHARED_CORPUS` or in `../shared/corpus` next to
//! the repository.

use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use serde_json::Value;

use crate::loadgen::BoxError;

/// The structural type of a page, in `evaluate.py`'s `TYPE_ORDER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::measure) enum PageType {
    Article,
    Forum,
    Product,
    Collection,
    Listing,
    Documentation,
    Service,
}

impl PageType {
    /// Every type, in the order the scorer prints them.
    pub(in crate::measure) const ALL: [Self; 7] = [
        Self::Article,
        Self::Forum,
        Self::Product,
        Self::Collection,
        Self::Listing,
        Self::Documentation,
        Self::Service,
    ];

    /// The name the corpus and the scorer use.
    pub(in crate::measure) fn name(self) -> &'static str {
        match self {
            Self::Article => "article",
            Self::Forum => "forum",
            Self::Product => "product",
            Self::Collection => "collection",
            Self::Listing => "listing",
            Self::Documentation => "documentation",
            Self::Service => "service",
        }
    }

    /// `evaluate.py`'s `get_page_type`, for a whole ground-truth file.
    fn of(file: &Value) -> Result<Self, String> {
        let declared = match file.get("_internal").and_then(|i| i.get("page_type")) {
            Some(Value::Object(object)) => object
                .get("primary")
                .and_then(Value::as_str)
                .unwrap_or("article"),
            Some(Value::String(name)) => name,
            _ => "article",
        };
        let name = if declared == "category" {
            "collection"
        } else {
            declared
        };
        Self::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| format!("unknown page type {name:?}"))
    }
}

/// One page's ground truth.
pub(in crate::measure) struct Truth {
    /// The file's stem (`0001`): `evaluate.py`'s file id.
    pub(in crate::measure) id: String,
    /// Where the page was fetched from.
    pub(in crate::measure) url: String,
    pub(in crate::measure) page_type: PageType,
    /// The hand-reviewed main content, plain text.
    pub(in crate::measure) main_content: String,
    /// Snippets a correct extraction contains.
    pub(in crate::measure) with: Vec<String>,
    /// Boilerplate snippets it must not contain.
    pub(in crate::measure) without: Vec<String>,
    /// The page's title, author and publication date (`YYYY-MM-DD`), empty when unknown.
    pub(in crate::measure) title: String,
    pub(in crate::measure) author: String,
    pub(in crate::measure) date: String,
}

/// The split's ground truth (all of it, or every `every`-th page in name order), and where its
/// pages are.
pub(in crate::measure) struct Corpus {
    pub(in crate::measure) dir: PathBuf,
    pub(in crate::measure) truths: Vec<Truth>,
}

impl Corpus {
    /// Where the corpus is.
    pub(in crate::measure) fn locate(repo: &Path) -> PathBuf {
        if let Some(dir) = std::env::var_os("WCXB_CORPUS") {
            return PathBuf::from(dir);
        }
        std::env::var_os("SHARED_CORPUS")
            .map_or_else(|| repo.join("../shared/corpus"), PathBuf::from)
            .join("wcxb-dev")
    }

    /// Reads the ground truth of every `every`-th page (1: all of them).
    pub(in crate::measure) fn load(dir: &Path, every: usize) -> Result<Self, BoxError> {
        let truth_dir = dir.join("dev/ground-truth");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&truth_dir)
            .map_err(|err| format!("{}: {err}", truth_dir.display()))?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        let mut truths = Vec::new();
        for path in files.into_iter().step_by(every.max(1)) {
            let file: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
            let Some(truth) = file.get("ground_truth").filter(|gt| gt.is_object()) else {
                continue;
            };
            let text = |name: &str| truth.get(name).and_then(Value::as_str).unwrap_or("");
            let snippets = |name: &str| -> Vec<String> {
                truth
                    .get(name)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            };
            let id = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            truths.push(Truth {
                page_type: PageType::of(&file).map_err(|err| format!("{id}: {err}"))?,
                // Four pages have an empty `url`: read as from a neutral address.
                url: file
                    .get("url")
                    .and_then(Value::as_str)
                    .filter(|url| !url.is_empty())
                    .unwrap_or("https://wcxb.example/")
                    .to_owned(),
                main_content: text("main_content").to_owned(),
                with: snippets("with"),
                without: snippets("without"),
                title: text("title").to_owned(),
                author: text("author").to_owned(),
                date: text("publish_date").to_owned(),
                id,
            });
        }
        if truths.is_empty() {
            return Err(format!("no ground truth in {}", truth_dir.display()).into());
        }
        Ok(Self {
            dir: dir.to_owned(),
            truths,
        })
    }

    /// The page of `truth`, as fetched (gunzipped).
    pub(in crate::measure) fn html(&self, truth: &Truth) -> Result<Vec<u8>, BoxError> {
        let path = self.dir.join(format!("dev/html/{}.html.gz", truth.id));
        let file =
            std::fs::File::open(&path).map_err(|err| format!("{}: {err}", path.display()))?;
        let mut html = Vec::new();
        GzDecoder::new(file).read_to_end(&mut html)?;
        Ok(html)
    }
}
